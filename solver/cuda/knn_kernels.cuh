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
};

template <typename T>
void launch_knn(const KnnParams<T>& p, cudaStream_t stream);

}  // namespace tdsolve::cuda
