// The k-nearest-neighbour kernel (solver/knn.hpp): each thread keeps the
// lists of two query rows (t and t + 128 of its block's 256) and walks every
// column point in order, 32 at a time (16 in float64); a culled run's
// thread keeps one row and walks its block row's tiles (KnnParams::tiles).
// A tile's columns and the block's rows are staged in shared memory 32
// features (16) at a time; each thread accumulates a 2 × 32 (2 × 16) block
// of values in registers, feature by feature in order, with the metric
// functors: the bits of the CPU backend and of `tdsolve cross` (this file
// is built with --fmad=false, as the other pair kernels). Then each value
// is screened against its row's worst entry; the few that pass are
// recomputed (same order, same bits), finalised and, if better, inserted
// into the row's sorted list, which lives in local memory (K up to
// kMaxGpuNeighbors).
#include <cuda_runtime.h>

#include <limits>
#include <stdexcept>
#include <type_traits>

#include "solver/cuda/knn_kernels.cuh"
#include "solver/cull_bound.hpp"
#include "solver/epi.hpp"
#include "solver/epilogue.hpp"
#include "solver/knn.hpp"
#include "solver/knn_cull.hpp"

namespace tdsolve::cuda {

namespace {

constexpr int kThreads = 128;  // per block
constexpr int kRows = 2;       // query rows per thread: t and t + kThreads
constexpr int kBlockRows = kThreads * kRows;

// Columns per tile: the kRows × kCols accumulators stay in registers.
template <typename T>
constexpr int kColsOf = sizeof(T) == 4 ? 32 : 16;
// Features staged at once (rows and columns); the rows' strip is padded by
// one so that thread t reading row t hits bank (t + f) mod 32.
template <typename T>
constexpr int kStageOf = sizeof(T) == 4 ? 32 : 16;

template <typename T>
__device__ __forceinline__ T infinity_of() {
  return std::numeric_limits<T>::infinity();
}

// The rare path, out of line and not unrolled: 64 inlined copies of the
// insertion loop made the kernel too large for the instruction cache.
template <typename T, typename A>
__device__ __noinline__ void insert_out_of_line(T* dist, int* idx, A* accs, int k, T value, int j,
                                                A a, int n) {
  epi::TopK::insert<T, A, int>(dist, idx, accs, k, value, j, a, n);
}

// The rare path of a culled run: candidates come block by block, so the
// list compares (value, input index) whole (epi::TopK::offer_any).
template <typename T, typename A>
__device__ __noinline__ bool offer_out_of_line(T* dist, int* idx, A* accs, int k, T value, int j,
                                               A a, int n) {
  return epi::TopK::offer_any<T, A, int>(dist, idx, accs, k, value, j, a, n);
}

// kCulled: the block rows of a culled run (KnnParams::tiles), one thread a
// row (rho = 128 is the default block: 128 rows a CUDA block; a larger rho
// takes rho / 128 CUDA blocks a block row); dense: two rows a thread.
template <typename T, typename M, bool kCulled>
__global__ void __launch_bounds__(kThreads) knn_kernel(const KnnParams<T> p) {
  using A = typename M::acc_t;
  constexpr bool kScreen = KnnScreen<M>::value;
  constexpr int kCols = kColsOf<T>, kStage = kStageOf<T>;
  constexpr int kR = kCulled ? 1 : kRows, kBR = kThreads * kR;
  const M m(p.mp);
  __shared__ T rows_s[kBR][kStage + 1];
  __shared__ T cols_s[kCols][kStage];
  __shared__ double col_norms[kCols];

  const index_t n = p.n, d = p.d;
  const int k = p.k;
  index_t base, block_rows, I = 0;
  if constexpr (kCulled) {
    // CUDA block b: block row I0 + b / parts, its rows from (b % parts) * 128.
    const index_t parts = (p.rho + kBR - 1) / kBR;
    I = p.r0 / p.rho + blockIdx.x / parts;
    base = I * p.rho + (blockIdx.x % parts) * kBR;
    const index_t end = (I + 1) * p.rho < p.r0 + p.rows ? (I + 1) * p.rho : p.r0 + p.rows;
    if (base >= end) return;  // the whole CUDA block: no row of it exists
    block_rows = end - base < kBR ? end - base : kBR;
  } else {
    base = p.r0 + static_cast<index_t>(blockIdx.x) * kBR;
    block_rows = p.r0 + p.rows - base < kBR ? p.r0 + p.rows - base : kBR;
  }
  index_t row[kR];
  bool valid[kR];
  double row_norm[kR];
  for (int q = 0; q < kR; ++q) {
    const index_t local = threadIdx.x + q * kThreads;
    row[q] = base + local;
    valid[q] = local < block_rows;
    row_norm[q] = (M::needs_norms && valid[q]) ? p.norms[row[q]] : 0.0;
  }

  T dist[kR][kMaxGpuNeighbors];
  int idx[kR][kMaxGpuNeighbors];
  A accs[kScreen ? kR : 1][kScreen ? kMaxGpuNeighbors : 1];
  T worst[kR];
  A worst_acc[kR];
  bool free_slot[kR];  // the list's last slot is free (index n): solver/knn.hpp
  for (int q = 0; q < kR; ++q) {
    for (int t = 0; t < k; ++t) {
      dist[q][t] = infinity_of<T>();
      idx[q][t] = static_cast<int>(n);
      if constexpr (kScreen) accs[q][t] = infinity_of<A>();
    }
    worst[q] = infinity_of<T>();
    free_slot[q] = true;
    if constexpr (kScreen) worst_acc[q] = infinity_of<A>();  // A is a number there
  }

  // The block's rows, features [f0, f0 + dw), into rows_s (a warp reads
  // kStage consecutive features of kThreads / kStage rows: coalesced).
  const auto stage_rows = [&](index_t f0, int dw) {
    const int f = threadIdx.x % kStage;
    for (int r = threadIdx.x / kStage; r < kBR; r += kThreads / kStage)
      if (f < dw) rows_s[r][f] = r < block_rows ? p.a[(base + r) * d + f0 + f] : T(0);
  };
  const bool one_stage = d <= kStage;
  if (one_stage) stage_rows(0, static_cast<int>(d));

  // Columns [col0, col0 + width) against the block's rows (a row with
  // skip[q] takes none of them).
  const auto columns = [&](index_t col0, int width, const bool* skip) {
    A acc[kR][kCols];
    for (int q = 0; q < kR; ++q)
      for (int c = 0; c < kCols; ++c)
        acc[q][c] = 0;
    for (index_t f0 = 0; f0 < d; f0 += kStage) {
      const int dw = static_cast<int>(d - f0 < kStage ? d - f0 : kStage);
      __syncthreads();  // the previous tile (or stage) is read
      if (!one_stage) stage_rows(f0, dw);
      {
        const int f = threadIdx.x % kStage;
        for (int c = threadIdx.x / kStage; c < width; c += kThreads / kStage)
          if (f < dw) cols_s[c][f] = p.a[(col0 + c) * d + f0 + f];
      }
      if (M::needs_norms && f0 == 0 && threadIdx.x < width)
        col_norms[threadIdx.x] = p.norms[col0 + threadIdx.x];
      __syncthreads();
      // Features in order, each fused as the CPU fuses it: the same bits
      // (in a --box, of the minimum-image difference, as the CPU's step).
      for (int f = 0; f < dw; ++f) {
        T x[kR];
#pragma unroll
        for (int q = 0; q < kR; ++q)
          x[q] = rows_s[threadIdx.x + q * kThreads][f];
        if (p.box_dims > 0) {  // uniform
          const T L = p.box[f0 + f];
#pragma unroll
          for (int c = 0; c < kCols; ++c) {
            const T y = cols_s[c][f];
#pragma unroll
            for (int q = 0; q < kR; ++q)
              acc[q][c] = m.accumulate(
                  acc[q][c], epilogue::minimum_image(static_cast<T>(x[q] - y), L), T(0), f0 + f);
          }
          continue;
        }
#pragma unroll
        for (int c = 0; c < kCols; ++c) {
          const T y = cols_s[c][f];
#pragma unroll
          for (int q = 0; q < kR; ++q)
            acc[q][c] = m.accumulate(acc[q][c], x[q], y, f0 + f);
        }
      }
    }
    // Which values may enter a list: below the worst entry's accumulator
    // (screened metrics) or value. Then the few that may, one by one, the
    // distance recomputed from global memory in the same order (the same
    // bits) and admitted exactly. Culled, columns come in no order of j:
    // a tie with the worst may still enter (by its index), so "not above".
#pragma unroll
    for (int q = 0; q < kR; ++q) {
      unsigned mask = 0;
      // A number below the worst; for the metrics that can give nan, also
      // any number when the worst entry is nan (epi::TopK::admits).
      const bool worst_nan = !kScreen && worst[q] != worst[q];
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
        bool may;
        if constexpr (kScreen) {
          may = kCulled ? !(acc[q][c] > worst_acc[q]) : acc[q][c] < worst_acc[q];
        } else {
          const T v = m.finalize(acc[q][c], row_norm[q], M::needs_norms ? col_norms[c] : 0.0);
          may = kCulled ? !(v > worst[q]) : v < worst[q] || (worst_nan && v == v);
        }
        if (may && c < width) mask |= 1u << c;
      }
      // A list not yet full takes any value (nan and +inf too, which the
      // test above misses): every column. Only a row's first columns.
      if (free_slot[q]) mask = width == 32 ? ~0u : (1u << width) - 1;
      if (!valid[q] || skip[q]) mask = 0;
      while (mask) {
        const int c = __ffs(mask) - 1;
        mask &= mask - 1;
        const index_t j = col0 + c;
        if (j == row[q]) continue;
        A a = 0;
        if (p.box_dims > 0) {
          for (index_t f = 0; f < d; ++f)
            a = m.accumulate(a,
                             epilogue::minimum_image(
                                 static_cast<T>(p.a[row[q] * d + f] - p.a[j * d + f]), p.box[f]),
                             T(0), f);
        } else {
          for (index_t f = 0; f < d; ++f)
            a = m.accumulate(a, p.a[row[q] * d + f], p.a[j * d + f], f);
        }
        const T v = m.finalize(a, row_norm[q], M::needs_norms ? p.norms[j] : 0.0);
        A* list_acc = nullptr;
        if constexpr (kScreen) list_acc = accs[q];
        if constexpr (kCulled) {
          if (!offer_out_of_line<T, A>(dist[q], idx[q], list_acc, k, v,
                                       static_cast<int>(p.order[j]), a, static_cast<int>(n)))
            continue;
        } else {
          if (!epi::TopK::admits<T>(v, worst[q], free_slot[q])) continue;
          insert_out_of_line<T, A>(dist[q], idx[q], list_acc, k, v, static_cast<int>(j), a,
                                   static_cast<int>(n));
        }
        worst[q] = dist[q][k - 1];
        free_slot[q] = idx[q][k - 1] == static_cast<int>(n);
        if constexpr (kScreen) worst_acc[q] = accs[q][k - 1];
      }
    }
  };

  if constexpr (!kCulled) {
    const bool none[kR] = {};
    for (index_t col0 = 0; col0 < n; col0 += kCols)
      columns(col0, static_cast<int>(n - col0 < kCols ? n - col0 : kCols), none);
  } else {
    // The row's point, for its bound against a box (d <= 4 is culled).
    constexpr int kMaxD = 4;
    T xr[kR][kMaxD] = {};
    for (int q = 0; q < kR; ++q)
      for (index_t f = 0; f < d && f < kMaxD; ++f)
        xr[q][f] = valid[q] ? p.a[row[q] * d + f] : T(0);
    const double* ilo = p.box_lo + I * d;
    const double* ihi = p.box_hi + I * d;
    for (index_t t = p.tile_start[I]; t < p.tile_start[I + 1]; ++t) {
      const index_t J = p.tiles[2 * t + 1];
      const double* jlo = p.box_lo + J * d;
      const double* jhi = p.box_hi + J * d;
      // The tiles come nearest box first (build_culled_knn): once every
      // row's list is full of numbers and this box is beyond the worst of
      // each, so is every later one. A row whose point is beyond this box
      // skips it; the block skips a box all its rows skip.
      const double bb = cull::bound(ilo, ihi, jlo, jhi, d, p.bound_p, p.cull_box_dims, p.cull_box);
      bool past = true, skip[kR];
      bool all_skip = true;
      for (int q = 0; q < kR; ++q) {
        skip[q] = !valid[q];
        if (!valid[q]) continue;
        const double lim = knn_cull_limit(worst[q], free_slot[q], p.squared, p.rel_tol, p.scale);
        if (!(bb > lim)) past = false;
        skip[q] = lim < INFINITY && cull::point_bound(xr[q], jlo, jhi, d, p.bound_p,
                                                      p.cull_box_dims, p.cull_box) > lim;
        if (!skip[q]) all_skip = false;
      }
      if (__syncthreads_and(past)) break;
      if (__syncthreads_and(all_skip)) continue;
      const index_t j0 = J * p.rho, j1 = j0 + p.rho < n ? j0 + p.rho : n;
      for (index_t col0 = j0; col0 < j1; col0 += kCols)
        columns(col0, static_cast<int>(j1 - col0 < kCols ? j1 - col0 : kCols), skip);
    }
  }
  for (int q = 0; q < kR; ++q) {
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
void launch_knn(const KnnParams<T>& p, cudaStream_t stream) {
  if (p.rows == 0) return;
  dispatch_metric<T>(p.mp, [&](auto m) {
    using M = decltype(m);
    if (p.tiles) {
      // The metrics of a box bound (cull_metric, solver/problem.cpp).
      if constexpr (metric::traits<M>::box || std::is_same_v<M, metric::Minkowski<T>>) {
        // CUDA blocks of kThreads rows, rho / kThreads (rounded up) a block row.
        const index_t parts = (p.rho + kThreads - 1) / kThreads;
        const index_t blocks = (p.rows + p.rho - 1) / p.rho * parts;
        knn_kernel<T, M, true><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(p);
        return;
      } else {
        throw std::logic_error("knn --k culled with a metric that has no box bound");
      }
    }
    const index_t blocks = (p.rows + kBlockRows - 1) / kBlockRows;
    knn_kernel<T, M, false><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(p);
  });
}

template void launch_knn<float>(const KnnParams<float>&, cudaStream_t);
template void launch_knn<double>(const KnnParams<double>&, cudaStream_t);

}  // namespace tdsolve::cuda
