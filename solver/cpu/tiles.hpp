// CPU tile loops: OpenMP over the same block maps a GPU launch uses, one ρ×ρ
// tile per block, so the CPU tests exercise the maps, and the same functors
// and epilogues, so both backends give the same bits.
#pragma once

#include <cstdint>
#include <vector>

#include "solver/problem.hpp"

namespace tdsolve::cpu {

// The tile loops' view of a problem (borrowed pointers: p must outlive it).
template <typename T>
struct CpuView {
  const T *a = nullptr, *b = nullptr;                   // row points, column points
  const double *norms_a = nullptr, *norms_b = nullptr;  // metrics that need them
  index_t rows = 0, cols = 0, d = 0, rho = 1;
  DomainKind domain = DomainKind::pairs;
  MapKind map = MapKind::lambda;
  EpilogueKind epilogue = EpilogueKind::store;
  MetricParams mp;  // the metric and its parameters (mp.weights: host memory)
  int box_dims = 0;
  T box[kMaxBoxDims] = {};
  bool triclinic = false;  // d = 3: box[0..2] and the tilts (epilogue::triclinic_image)
  T tilt[3] = {};
  index_t bins = 0;
  double lo = 0, hi = 0, norm = 0, margin = 1;
  epilogue::HistFast32 fast32;
  const double* edges = nullptr;
  // Partial histograms (HistGroups): null labels where there are none.
  index_t groups = 0;
  std::int32_t types = 1;
  const std::int32_t *type = nullptr, *table = nullptr, *molecule = nullptr;
  SelectParams select;  // select (select.radii: host memory)
  // A culled domain (its tile list, and its block boxes for the row test of
  // tiles.inc); null: dense.
  const Culled* cull = nullptr;
};

// A chunk's selected pairs, in packed order: (i, j) at pairs[2q], pairs[2q
// + 1], their values at values[q].
template <typename T>
struct SelectOut {
  std::vector<std::int64_t> pairs;
  std::vector<T> values;
};

template <typename T>
CpuView<T> view_of(const Problem<T>& p);

// Instruction-set variants of the tile loops; `best` picks AVX2+FMA where
// the CPU has both. Every variant gives the same bits.
enum class CpuVariant { best, generic, avx2 };

// Computes block rows [row_begin, row_end) with `threads` OpenMP threads.
// store: element e of the domain lands at out[e - elements_before(row_begin)].
// histogram: counts[0..bins+1] (underflow, bins, overflow; a row of bins + 2
// per histogram of a grouped run) are set to the chunk's counts. select: *sel is set to the chunk's
// pairs that pass.
template <typename T>
void compute_chunk(const CpuView<T>& v, index_t row_begin, index_t row_end, T* out,
                   std::uint64_t* counts, int threads, CpuVariant variant = CpuVariant::best,
                   SelectOut<T>* sel = nullptr);

// k nearest neighbours (solver/knn.hpp) of points [r0, r1) among all
// v.cols column points (v.b; for knn the same set, the point itself
// excluded): rows of k distances and indices at out_d/out_i[(i - r0) * k].
template <typename T>
void compute_knn_chunk(const CpuView<T>& v, index_t k, index_t r0, index_t r1, T* out_d,
                       std::int64_t* out_i, int threads, CpuVariant variant = CpuVariant::best);

// Which variant `best` is on this CPU, and whether `v` can run here.
const char* cpu_variant();
bool cpu_variant_available(CpuVariant v);

}  // namespace tdsolve::cpu
