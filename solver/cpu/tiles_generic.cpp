// Baseline x86-64 / any-architecture build of the CPU tile loops.
#include "solver/cpu/tiles.hpp"
#define TDS_CPU_VARIANT generic
#include "solver/cpu/tiles.inc"
// After the tile loops, whose per-feature step it uses:
#include "solver/cpu/knn.inc"
