// Fixture: the driver including a concrete backend must fail the layer check.
#include "solver/cuda/cuda_backend.hpp"
