// Fixture: a command may include the interface, the shared options and another piece
// of the command layer.
#include "solver/cli/options.hpp"
#include "solver/commands/pairs.hpp"
