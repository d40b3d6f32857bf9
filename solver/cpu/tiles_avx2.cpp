// AVX2 + FMA build of the CPU tile loops (compiled with -mavx2 -mfma, chosen
// at run time only on CPUs that have both). Without hardware FMA every
// std::fma is a slow library call, so this variant is what makes the exact
// fused arithmetic cheap.
#include "solver/cpu/tiles.hpp"
#define TDS_CPU_VARIANT avx2
#include "solver/cpu/tiles.inc"
// After the tile loops, whose per-feature step it uses:
#include "solver/cpu/knn.inc"
