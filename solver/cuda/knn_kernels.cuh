// The k-nearest-neighbour kernel's launch (knn_kernels.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "solver/metrics.hpp"

namespace tdsolve::cuda {

template <typename T>
struct KnnParams {
  const T* __restrict__ a;           // the n points, n × d
  const double* __restrict__ norms;  // metrics that need them
  index_t n, d;
  index_t r0, rows;                  // query rows [r0, r0 + rows)
  int k;                             // <= kMaxGpuNeighbors
  MetricParams mp;                   // the metric and its parameters (mp.weights: device memory)
  T* __restrict__ out_d;             // rows × k
  std::int64_t* __restrict__ out_i;  // rows × k
  int box_dims;                      // an orthorhombic --box (0: none): minimum image
  T box[8];                          // its lengths (d of them)
  // A culled run (solver/cull.hpp: build_culled_knn; null tiles: dense).
  // Rows [r0, r0 + rows) are block rows of rho points of the run's order
  // (p.a is in it), each walking its tiles (I, J), nearest box first, until
  // every row's list is full and J's box is beyond its worst entry; indices
  // out are the input's (order).
  const std::uint32_t* __restrict__ tiles = nullptr;  // (I, J) at 2t, 2t + 1
  const index_t* __restrict__ tile_start = nullptr;   // block row I: [tile_start[I], [I + 1])
  const double* __restrict__ box_lo = nullptr;        // each block's box, m × d
  const double* __restrict__ box_hi = nullptr;
  const index_t* __restrict__ order = nullptr;  // position in the run -> input index
  index_t rho = 0;
  // The bound (cull::bound, point_bound, limit): its norm, margin and scale;
  // squared: the list's values are squares of the norm (sqeuclidean).
  double bound_p = 2, rel_tol = 0, scale = 0;
  bool squared = false;
  int cull_box_dims = 0;  // --box: the gaps minimum-image
  double cull_box[8] = {};
};

template <typename T>
void launch_knn(const KnnParams<T>& p, cudaStream_t stream);

}  // namespace tdsolve::cuda
