// The k-nearest-neighbour kernel (solver/knn.hpp): each thread keeps the
// lists of two query rows (t and t + 128 of its block's 256) and walks every
// column point in order, 32 at a time (16 in float64). A tile's columns are staged in shared
// memory (all lanes read the same column: a broadcast), the rows' features
// come from global memory 8 at a time into registers, and each thread
// accumulates a 2 × 32 (2 × 16) block of values, feature by feature in order, with
// the metric functors: the bits of the CPU backend and of `tdsolve cross`
// (this file is built with --fmad=false, as the other pair kernels).
// Then every value is screened against its row's worst entry and, rarely,
// inserted into the row's sorted list, which lives in local memory (K up to
// kMaxGpuNeighbors).
#include <cuda_runtime.h>

#include <limits>

#include "solver/cuda/knn_kernels.cuh"
#include "solver/knn.hpp"

namespace tdsolve::cuda {

namespace {

constexpr int kThreads = 128;  // per block
constexpr int kRows = 2;       // query rows per thread
// Columns per tile: the 2 × kCols accumulators stay in registers (float32:
// 125 registers, no spills; float64 at 32 columns would spill).
template <typename T>
constexpr int kColsOf = sizeof(T) == 4 ? 32 : 16;
constexpr int kStageD = 64;  // features of a tile staged at once
constexpr int kChunkD = 8;   // row features held in registers at once

template <typename T>
__device__ __forceinline__ T infinity_of() {
  return std::numeric_limits<T>::infinity();
}

template <typename T, typename M>
__global__ void __launch_bounds__(kThreads) knn_kernel(const KnnParams<T> p) {
  using A = typename M::acc_t;
  constexpr bool kScreen = KnnScreen<M>::value;
  constexpr int kCols = kColsOf<T>;
  __shared__ T cols[kCols * kStageD];
  __shared__ double col_norms[kCols];

  const index_t n = p.n, d = p.d;
  const int k = p.k;
  index_t row[kRows];
  bool valid[kRows];
  double row_norm[kRows];
  for (int q = 0; q < kRows; ++q) {
    const index_t local =
        static_cast<index_t>(blockIdx.x) * (kThreads * kRows) + threadIdx.x + q * kThreads;
    row[q] = p.r0 + local;
    valid[q] = local < p.rows;
    row_norm[q] = (M::needs_norms && valid[q]) ? p.norms[row[q]] : 0.0;
  }

  T dist[kRows][kMaxGpuNeighbors];
  int idx[kRows][kMaxGpuNeighbors];
  A accs[kScreen ? kRows : 1][kScreen ? kMaxGpuNeighbors : 1];
  T worst[kRows];
  A worst_acc[kRows];
  for (int q = 0; q < kRows; ++q) {
    for (int t = 0; t < k; ++t) {
      dist[q][t] = infinity_of<T>();
      idx[q][t] = static_cast<int>(n);
      if constexpr (kScreen) accs[q][t] = infinity_of<A>();
    }
    worst[q] = infinity_of<T>();
    worst_acc[q] = infinity_of<A>();
  }

  for (index_t col0 = 0; col0 < n; col0 += kCols) {
    const int width = static_cast<int>(n - col0 < kCols ? n - col0 : kCols);
    A acc[kRows][kCols];
    for (int q = 0; q < kRows; ++q)
      for (int c = 0; c < kCols; ++c)
        acc[q][c] = 0;
    for (index_t f_stage = 0; f_stage < d; f_stage += kStageD) {
      const int dw = static_cast<int>(d - f_stage < kStageD ? d - f_stage : kStageD);
      __syncthreads();  // the previous tile is read
      for (int e = threadIdx.x; e < width * dw; e += kThreads) {
        const int c = e / dw, f = e - c * dw;
        cols[c * dw + f] = p.a[(col0 + c) * d + f_stage + f];
      }
      if (M::needs_norms && f_stage == 0 && threadIdx.x < width)
        col_norms[threadIdx.x] = p.norms[col0 + threadIdx.x];
      __syncthreads();
      for (int f0 = 0; f0 < dw; f0 += kChunkD) {
        T x[kRows][kChunkD];
        for (int q = 0; q < kRows; ++q)
#pragma unroll
          for (int ff = 0; ff < kChunkD; ++ff)
            x[q][ff] = (valid[q] && f0 + ff < dw) ? p.a[row[q] * d + f_stage + f0 + ff] : T(0);
#pragma unroll
        for (int ff = 0; ff < kChunkD; ++ff) {
          if (f0 + ff >= dw) break;  // the same for every thread
#pragma unroll
          for (int c = 0; c < kCols; ++c) {
            const T y = cols[c * dw + f0 + ff];
#pragma unroll
            for (int q = 0; q < kRows; ++q)
              acc[q][c] = M::accumulate(acc[q][c], x[q][ff], y);
          }
        }
      }
    }
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      if (c >= width) break;
      const index_t j = col0 + c;
#pragma unroll
      for (int q = 0; q < kRows; ++q) {
        if (!valid[q]) continue;
        if constexpr (kScreen) {
          if (!(acc[q][c] < worst_acc[q])) continue;
        }
        if (j == row[q]) continue;
        const T v = M::finalize(acc[q][c], row_norm[q], M::needs_norms ? col_norms[c] : 0.0);
        if (!(v < worst[q])) continue;
        A* list_acc = nullptr;
        if constexpr (kScreen) list_acc = accs[q];
        knn_insert<T, A, int>(dist[q], idx[q], list_acc, k, v, static_cast<int>(j), acc[q][c]);
        worst[q] = dist[q][k - 1];
        if constexpr (kScreen) worst_acc[q] = accs[q][k - 1];
      }
    }
  }
  for (int q = 0; q < kRows; ++q) {
    if (!valid[q]) continue;
    const index_t at = (row[q] - p.r0) * static_cast<index_t>(k);
    for (int t = 0; t < k; ++t) {
      p.out_d[at + t] = dist[q][t];
      p.out_i[at + t] = idx[q][t];
    }
  }
}

}  // namespace

template <typename T>
void launch_knn(const KnnParams<T>& p, Metric metric, cudaStream_t stream) {
  if (p.rows == 0) return;
  const index_t blocks = (p.rows + kThreads * kRows - 1) / (kThreads * kRows);
  dispatch_metric<T>(metric, [&](auto m) {
    using M = decltype(m);
    knn_kernel<T, M><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(p);
  });
}

template void launch_knn<float>(const KnnParams<float>&, Metric, cudaStream_t);
template void launch_knn<double>(const KnnParams<double>&, Metric, cudaStream_t);

}  // namespace tdsolve::cuda
