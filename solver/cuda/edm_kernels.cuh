// λ2 block-space kernels for the packed distance matrix.
//
// One thread block (256 threads) takes one ρ×ρ tile of pairs at a time, in
// 128×128 sub-tiles: lane t of a warp owns columns t, t+32, t+64, t+96 and
// the 8 warps take every 8th row, so each row segment of a sub-tile (128
// consecutive values of the packed output) is written by one warp as four
// fully coalesced 128-byte stores. Packed rows start at any element offset;
// realigning through shuffles for 16-byte vector stores was measured slower
// (more instructions than the saved store transactions; docs/performance.md),
// as were wider tiles (less contiguous writes across concurrent blocks).
// Sub-tiles on the diagonal or the domain's edge store through a mask.
//
// Features: for d <= 8 (compile time) each lane keeps its 4 column points in
// registers and reads row points from shared memory (a broadcast: all lanes
// read the same row); for larger d, row and column strips of 16 (float) or 8
// (double) features are staged in shared memory, the column strip transposed
// and padded so that neither the staging writes nor the reads conflict on
// banks (seed 004), while each thread accumulates a 16×4 (8×4 for double
// accumulators) block of pairs.
//
// Grids: the λ2 kernel is a 1-D grid of exactly the chunk's tiles, each block
// unranking ω once (rsqrtf estimate + exact integer correction); the BB
// kernel, for comparison, is the (m × rows) bounding box whose blocks below
// the diagonal return at once.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "mapping/lambda2.hpp"
#include "solver/metrics.hpp"

namespace tdsolve::cuda {

// Build-time overrides exist only to time variants against each other.
#ifndef TDS_EDM_MIN_BLOCKS_SMALL  // d <= 4
#define TDS_EDM_MIN_BLOCKS_SMALL 2
#endif
#ifndef TDS_EDM_MIN_BLOCKS
#define TDS_EDM_MIN_BLOCKS 3
#endif

#ifndef TDS_EDM_ROW_UNROLL
#define TDS_EDM_ROW_UNROLL 2
#endif

// Launch shape: tuning lives here, not in literals at the launch sites.
struct EdmPolicy {
  static constexpr int kTile = 128;                    // sub-tile side
  static constexpr int kThreads = 256;                 // per block
  static constexpr int kWarps = kThreads / 32;         // 8
  static constexpr int kCols = kTile / 32;             // columns per lane: 4, 32 apart
  static constexpr int kRowsPerWarp = kTile / kWarps;  // 16
  static constexpr int kMaxSmallD = 8;                 // d handled with points in registers
  static constexpr int kPad = 4;                       // column-strip padding (elements)
  // Blocks per SM the register allocator must leave room for. Uncapped, the
  // small-d kernels unroll into 110-128 registers (2 blocks, 16 warps per
  // SM). On an H100, capping d = 5..8 at 3 blocks took d = 8 from 65 % to
  // 72 % of the write ceiling; for d <= 4 caps of 1, 2 or 3 measured the same
  // (docs/performance.md). The general path needs its accumulators.
  static constexpr int min_blocks(int d) {
    return d == 0 ? 1 : (d <= 4 ? TDS_EDM_MIN_BLOCKS_SMALL : TDS_EDM_MIN_BLOCKS);
  }
  static constexpr int kRowUnroll = TDS_EDM_ROW_UNROLL;  // rows in flight per warp (small d)
};

template <typename T>
struct EdmParams {
  const T* __restrict__ points;      // n × d, row-major, on the device
  const double* __restrict__ norms;  // n (metrics that need them)
  T* __restrict__ out;               // chunk buffer: out[p - out_offset]
  index_t n, d, rho, m;
  index_t row_begin, row_end;  // the chunk's block rows
  index_t out_offset;
  index_t block_begin, block_end;  // λ2: the chunk's ω range
  bool bounding_box;
  bool masked_only;  // benchmark/test: every sub-tile on the masked path
};

// Host launcher: dispatches metric and d; instantiated for float and double.
template <typename T>
void launch_edm(const EdmParams<T>& p, Metric metric, cudaStream_t stream);

namespace detail {

constexpr int kCols = EdmPolicy::kCols;
constexpr int kWarpSize = 32;

// Where a warp's rows go: row i of the sub-tile at column j0 starts at
// buffer index base(i) = row_start(i) - out_offset + j0 - i - 1, and a warp
// steps 8 rows at a time: base(i + 8) = base(i) + 8 (n - i) - 44. One 64-bit
// product per warp and sub-tile instead of one per row.
struct RowCursor {
  std::int64_t base;
  index_t i;
};

template <typename T>
__device__ __forceinline__ RowCursor first_row(const EdmParams<T>& p, index_t i, index_t j0) {
  return RowCursor{static_cast<std::int64_t>(mapping::row_start(p.n, i) - p.out_offset) +
                       static_cast<std::int64_t>(j0) - static_cast<std::int64_t>(i) - 1,
                   i};
}

__device__ __forceinline__ void next_row(RowCursor& c, index_t n) {
  static_assert(EdmPolicy::kWarps == 8, "the cursor step assumes 8 rows per step");
  c.base += 8 * static_cast<std::int64_t>(n - c.i) - 44;
  c.i += 8;
}

// Lane t's values v[s] belong to columns t + 32 s of the row segment at
// buffer index c.base; the masked path keeps the columns that are pairs
// (j > i, j < n). c.base may lie "before" the buffer for diagonal rows, so
// indices stay signed until they are known to be valid.
template <typename T>
__device__ __forceinline__ void store_row(const EdmParams<T>& p, const RowCursor& c, index_t j0,
                                          const T (&v)[kCols], int lane, bool fast) {
  if (fast) {
#pragma unroll
    for (int s = 0; s < kCols; ++s)
      p.out[c.base + lane + kWarpSize * s] = v[s];
    return;
  }
  const std::int64_t lo = static_cast<std::int64_t>(c.i) + 1 - static_cast<std::int64_t>(j0);
  const std::int64_t hi = static_cast<std::int64_t>(p.n) - static_cast<std::int64_t>(j0);
#pragma unroll
  for (int s = 0; s < kCols; ++s) {
    const int col = lane + kWarpSize * s;
    if (col >= lo && col < hi) p.out[c.base + col] = v[s];
  }
}

// Shared memory of one block, for either feature path.
template <typename T>
struct SmallDShared {
  T rows[EdmPolicy::kTile * EdmPolicy::kMaxSmallD];
  double row_norms[EdmPolicy::kTile];
};
template <typename T>
struct GeneralShared {
  static constexpr int kStep = sizeof(T) == 4 ? 16 : 8;  // features per stage
  T rows[EdmPolicy::kTile][kStep];
  T cols[kStep][EdmPolicy::kTile + EdmPolicy::kPad];
  double row_norms[EdmPolicy::kTile];
};

// d known at compile time (1..8): column points in registers.
template <typename T, typename M, int D>
__device__ __forceinline__ void subtile_small_d(const EdmParams<T>& p, index_t i0, index_t j0,
                                                bool fast, SmallDShared<T>& sh) {
  using A = typename M::acc_t;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  // Stage the row points (and norms) once per sub-tile.
  for (int e = threadIdx.x; e < EdmPolicy::kTile * D; e += EdmPolicy::kThreads) {
    const index_t i = i0 + e / D;
    sh.rows[e] = i < p.n ? p.points[i * D + e % D] : T(0);
  }
  if (M::needs_norms) {
    for (int r = threadIdx.x; r < EdmPolicy::kTile; r += EdmPolicy::kThreads)
      sh.row_norms[r] = i0 + r < p.n ? p.norms[i0 + r] : 1.0;
  }
  T xc[kCols][D];
  double nc[kCols];
#pragma unroll
  for (int s = 0; s < kCols; ++s) {
    const index_t j = j0 + lane + kWarpSize * s;
#pragma unroll
    for (int k = 0; k < D; ++k)
      xc[s][k] = j < p.n ? p.points[j * D + k] : T(0);
    nc[s] = (M::needs_norms && j < p.n) ? p.norms[j] : 1.0;
  }
  __syncthreads();
  RowCursor cur = first_row(p, i0 + warp, j0);
#pragma unroll EdmPolicy::kRowUnroll
  for (int q = 0; q < EdmPolicy::kRowsPerWarp; ++q, next_row(cur, p.n)) {
    const int r = q * EdmPolicy::kWarps + warp;
    if (cur.i >= p.n) break;  // warp-uniform
    T xr[D];
#pragma unroll
    for (int k = 0; k < D; ++k)
      xr[k] = sh.rows[r * D + k];
    A acc[kCols];
#pragma unroll
    for (int s = 0; s < kCols; ++s) {
      acc[s] = A(0);
#pragma unroll
      for (int k = 0; k < D; ++k)
        acc[s] = M::accumulate(acc[s], xr[k], xc[s][k]);
    }
    T v[kCols];
    const double nr = M::needs_norms ? sh.row_norms[r] : 1.0;
#pragma unroll
    for (int s = 0; s < kCols; ++s)
      v[s] = M::finalize(acc[s], nr, nc[s]);
    store_row(p, cur, j0, v, lane, fast);
  }
  __syncthreads();  // before the next sub-tile overwrites the rows
}

// Any d: strips of features through shared memory.
template <typename T, typename M>
__device__ __forceinline__ void subtile_general(const EdmParams<T>& p, index_t i0, index_t j0,
                                                bool fast, GeneralShared<T>& sh) {
  using A = typename M::acc_t;
  constexpr int kStep = GeneralShared<T>::kStep;
  constexpr int kRowsPerPass = sizeof(A) == 4 ? 16 : 8;
  constexpr int kPasses = EdmPolicy::kRowsPerWarp / kRowsPerPass;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (M::needs_norms) {
    for (int r = threadIdx.x; r < EdmPolicy::kTile; r += EdmPolicy::kThreads)
      sh.row_norms[r] = i0 + r < p.n ? p.norms[i0 + r] : 1.0;
  }
  double nc[kCols];
#pragma unroll
  for (int s = 0; s < kCols; ++s) {
    const index_t j = j0 + lane + kWarpSize * s;
    nc[s] = (M::needs_norms && j < p.n) ? p.norms[j] : 1.0;
  }
  for (int pass = 0; pass < kPasses; ++pass) {
    A acc[kRowsPerPass][kCols];
#pragma unroll
    for (int q = 0; q < kRowsPerPass; ++q)
#pragma unroll
      for (int s = 0; s < kCols; ++s)
        acc[q][s] = A(0);
    for (index_t kb = 0; kb < p.d; kb += kStep) {
      __syncthreads();
      for (int e = threadIdx.x; e < EdmPolicy::kTile * kStep; e += EdmPolicy::kThreads) {
        const int r = e / kStep, k = e % kStep;
        const index_t f = kb + k, i = i0 + r, j = j0 + r;
        // Zero padding past d or n leaves every accumulator's value unchanged.
        sh.rows[r][k] = (i < p.n && f < p.d) ? p.points[i * p.d + f] : T(0);
        sh.cols[k][r] = (j < p.n && f < p.d) ? p.points[j * p.d + f] : T(0);
      }
      __syncthreads();
#pragma unroll 4
      for (int k = 0; k < kStep; ++k) {
        T c[kCols];
#pragma unroll
        for (int s = 0; s < kCols; ++s)
          c[s] = sh.cols[k][lane + kWarpSize * s];
#pragma unroll
        for (int q = 0; q < kRowsPerPass; ++q) {
          const T xr = sh.rows[(pass * kRowsPerPass + q) * EdmPolicy::kWarps + warp][k];
#pragma unroll
          for (int s = 0; s < kCols; ++s)
            acc[q][s] = M::accumulate(acc[q][s], xr, c[s]);
        }
      }
    }
    __syncthreads();  // row norms staged before any finalize
    RowCursor cur = first_row(p, i0 + pass * kRowsPerPass * EdmPolicy::kWarps + warp, j0);
#pragma unroll
    for (int q = 0; q < kRowsPerPass; ++q, next_row(cur, p.n)) {
      const int r = (pass * kRowsPerPass + q) * EdmPolicy::kWarps + warp;
      if (cur.i >= p.n) break;
      const double nr = M::needs_norms ? sh.row_norms[r] : 1.0;
      T v[kCols];
#pragma unroll
      for (int s = 0; s < kCols; ++s)
        v[s] = M::finalize(acc[q][s], nr, nc[s]);
      store_row(p, cur, j0, v, lane, fast);
    }
  }
  __syncthreads();
}

template <typename T, typename M, int D>
struct TileShared {
  using type = SmallDShared<T>;
};
template <typename T, typename M>
struct TileShared<T, M, 0> {
  using type = GeneralShared<T>;
};

// One ρ×ρ tile (I, J) = (t.row, t.col): its 128×128 sub-tiles that hold pairs.
template <typename T, typename M, int D>
__device__ __forceinline__ void process_tile(const EdmParams<T>& p, mapping::Tile t,
                                             typename TileShared<T, M, D>::type& sh) {
  constexpr index_t kTile = EdmPolicy::kTile;
  const index_t subs = p.rho / kTile;
  for (index_t a = 0; a < subs; ++a) {
    const index_t i0 = t.row * p.rho + a * kTile;
    if (i0 >= p.n) break;
    for (index_t b = 0; b < subs; ++b) {
      const index_t j0 = t.col * p.rho + b * kTile;
      if (j0 >= p.n) break;
      if (j0 + kTile - 1 <= i0) continue;  // no j > i in this sub-tile
      const bool fast =
          !p.masked_only && i0 + kTile <= p.n && j0 + kTile <= p.n && j0 >= i0 + kTile;
      if constexpr (D > 0) {
        subtile_small_d<T, M, D>(p, i0, j0, fast, sh);
      } else {
        subtile_general<T, M>(p, i0, j0, fast, sh);
      }
    }
  }
}

}  // namespace detail

// λ2: a 1-D grid over the chunk's ω range (grid-stride if it is longer).
template <typename T, typename M, int D>
__global__ void __launch_bounds__(EdmPolicy::kThreads, EdmPolicy::min_blocks(D))
    edm_lambda_kernel(const EdmParams<T> p) {
  __shared__ typename detail::TileShared<T, M, D>::type sh;
  for (index_t w = p.block_begin + blockIdx.x; w < p.block_end; w += gridDim.x) {
    detail::process_tile<T, M, D>(p, mapping::lambda2_tile(p.m, w), sh);
  }
}

// BB: grid (block column J, block row I - row_begin); J < I leave at once.
template <typename T, typename M, int D>
__global__ void __launch_bounds__(EdmPolicy::kThreads, EdmPolicy::min_blocks(D))
    edm_bb_kernel(const EdmParams<T> p, index_t grid_row_begin) {
  __shared__ typename detail::TileShared<T, M, D>::type sh;
  mapping::Tile t;
  if (!mapping::bb_tile(grid_row_begin, blockIdx.x, blockIdx.y, &t)) return;
  detail::process_tile<T, M, D>(p, t, sh);
}

template <typename T, typename M, int D>
void launch_edm_for(const EdmParams<T>& p, cudaStream_t stream) {
  constexpr int kThreads = EdmPolicy::kThreads;
  if (p.bounding_box) {
    constexpr index_t kMaxY = 65535;
    for (index_t y0 = p.row_begin; y0 < p.row_end; y0 += kMaxY) {
      const index_t rows = p.row_end - y0 < kMaxY ? p.row_end - y0 : kMaxY;
      const dim3 grid(static_cast<unsigned>(p.m), static_cast<unsigned>(rows));
      edm_bb_kernel<T, M, D><<<grid, kThreads, 0, stream>>>(p, y0);
    }
  } else {
    const index_t blocks = p.block_end - p.block_begin;
    const index_t max_grid = 0x7fffffff;
    if (blocks == 0) return;
    edm_lambda_kernel<T, M, D>
        <<<static_cast<unsigned>(blocks < max_grid ? blocks : max_grid), kThreads, 0, stream>>>(p);
  }
}

template <typename T>
void launch_edm(const EdmParams<T>& p, Metric metric, cudaStream_t stream) {
  dispatch_metric<T>(metric, [&](auto m) {
    using M = decltype(m);
    switch (p.d) {
      case 1:
        return launch_edm_for<T, M, 1>(p, stream);
      case 2:
        return launch_edm_for<T, M, 2>(p, stream);
      case 3:
        return launch_edm_for<T, M, 3>(p, stream);
      case 4:
        return launch_edm_for<T, M, 4>(p, stream);
      case 5:
        return launch_edm_for<T, M, 5>(p, stream);
      case 6:
        return launch_edm_for<T, M, 6>(p, stream);
      case 7:
        return launch_edm_for<T, M, 7>(p, stream);
      case 8:
        return launch_edm_for<T, M, 8>(p, stream);
      default:
        return launch_edm_for<T, M, 0>(p, stream);
    }
  });
}

}  // namespace tdsolve::cuda
