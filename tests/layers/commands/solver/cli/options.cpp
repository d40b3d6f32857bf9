// Fixture: the shared options including a command (not the interface) must fail the layer
// check.
#include "solver/commands/command.hpp"
#include "solver/commands/pairs.hpp"
