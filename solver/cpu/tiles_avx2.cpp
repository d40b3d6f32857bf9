// AVX2 + FMA build of the CPU tile loops (compiled with -mavx2 -mfma, chosen
// at run time only on CPUs that have both). Without hardware FMA every
// std::fma is a slow library call, so this variant is what makes the exact
// fused arithmetic cheap.
#include "solver/cpu/tiles.hpp"
#define TDS_CPU_VARIANT avx2
#include "solver/cpu/tiles.inc"
#include "solver/cpu/knn.inc"
