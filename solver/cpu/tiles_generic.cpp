// Baseline x86-64 / any-architecture build of the CPU tile loops.
#include "solver/cpu/tiles.hpp"
#define TDS_CPU_VARIANT generic
#include "solver/cpu/tiles.inc"
#include "solver/cpu/knn.inc"
