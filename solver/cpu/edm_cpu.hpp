// CPU backend for the packed EDM: OpenMP over the same λ2 block grid a GPU
// launch uses, one ρ×ρ tile per block, so the CPU tests exercise the maps.
#pragma once

#include "mapping/lambda2.hpp"
#include "solver/metrics.hpp"

namespace tdsolve::cpu {

template <typename T>
struct EdmView {
  const T* points = nullptr;      // n × d, row-major
  const double* norms = nullptr;  // n, only for metrics that need them
  index_t d = 0;
  mapping::PairTiling tiling;
  Metric metric = Metric::euclidean;
};

// Instruction-set variants of the tile loops; `best` picks AVX2+FMA where
// the CPU has both. Every variant gives the same bits.
enum class CpuVariant { best, generic, avx2 };

// Computes block rows [row_begin, row_end) into out, where pair p lands at
// out[p - tiling.elements_before(row_begin)]. Uses `threads` OpenMP threads.
template <typename T>
void compute_block_rows(const EdmView<T>& v, index_t row_begin, index_t row_end, T* out,
                        int threads, CpuVariant variant = CpuVariant::best);

// Which variant `best` is on this CPU, and whether `v` can run here.
const char* cpu_variant();
bool cpu_variant_available(CpuVariant v);

}  // namespace tdsolve::cpu
