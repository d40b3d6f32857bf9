// Fixture: the output lifecycle including a command must fail the layer check.
#include "solver/commands/pairs.hpp"
