// Block-space kernels: one thin kernel templated on metric × d × block map ×
// epilogue (a type: store the values in packed order, bin them, or select
// the pairs that pass a test) × periodic box.
//
// One thread block (256 threads) takes one ρ×ρ tile at a time, in 128×128
// sub-tiles: lane t of a warp owns columns t, t+32, t+64, t+96 and the 8
// warps take every 8th row, so each row segment of a sub-tile (128
// consecutive values of the packed output) is written by one warp as four
// fully coalesced 128-byte stores. Packed rows start at any element offset;
// realigning through shuffles for 16-byte vector stores was measured slower
// (more instructions than the saved store transactions; docs/performance.md),
// as were wider tiles (less contiguous writes across concurrent blocks).
// Sub-tiles on the diagonal or the domain's edge go through a mask.
//
// Stores at d <= 8 take another schedule, strips (mapping/strips.hpp): a
// block takes h rows × 4 KiB of each and writes them with 16-byte stores, in
// one of two kernels: each warp computes whole row pieces into shared memory
// from column points staged there (strip_store, d <= 2, where memory is not
// fast), or each thread keeps the column points of its 16-byte piece in
// registers and computes and stores that piece of every row
// (strip_lanes_store, "lanes", d <= 8). The host plan (kernel_plan.hpp)
// says which kernel a problem runs.
//
// Features: for d <= 8 (compile time) each lane keeps its 4 column points in
// registers and reads row points from shared memory (a broadcast: all lanes
// read the same row); for larger d, row and column strips of 64 bytes of
// each point (d up to 16 floats or 8 doubles: one stage serves the whole
// sub-tile) or 128 bytes (larger d) are staged in shared memory, the column
// strip transposed lane-major (seed 004's transposed strip, arranged for
// 16-byte loads), while each thread accumulates an 8×4 register block of
// values, two passes a sub-tile, taking 16 bytes of features a load.
//
// Domains: pairs i < j of one point set (rows = cols = n, packed rows of the
// triangle) or the rectangle of two (row-major M × K); the domain decides the
// mask and where a row segment is stored. Maps (mapping/block_map.hpp) turn
// (blockIdx.x, blockIdx.y) into a tile; the kernel strides over the map's
// grid in both directions, so any grid size launches.
//
// Epilogues (detail::Epilogue<T, Map, E>, E one of the tags in epi::) take a
// row segment's accumulators and do the per-value work:
// - Store: the values at their packed index.
// - Histogram: a histogram launch has a fixed number of blocks that stride
//   over the tiles; each counts in shared memory (one 32-bit slot per bin,
//   plus under- and overflow; one such histogram per warp when they fit, so
//   that warps do not contend) and adds the non-zero slots to the chunk's
//   64-bit global counts once, at its end; with more bins than fit in shared
//   memory it adds straight to the global counts.
// - Select<Test>: the pairs that pass Test (solver/select.hpp: within a
//   radius, spheres that overlap) are appended to a list in global memory,
//   one atomic a warp for the values of a row segment that pass (ballot,
//   popcount); the backend sorts the list by packed index afterwards. Tests
//   decide on the accumulator where that is exact, so rejected pairs never
//   pay for the metric's finalize (a square root).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "solver/cuda/kernel_params.cuh"

namespace tdsolve::cuda {

namespace detail {

constexpr int kCols = BlockPolicy::kCols;
constexpr int kWarpSize = 32;

// Values of T in one 16-byte access, and that access's vector type.
template <typename T>
constexpr int kVec16 = 16 / static_cast<int>(sizeof(T));
template <typename T>
using Vec16 = std::conditional_t<sizeof(T) == 4, float4, double2>;

template <typename Map>
constexpr bool is_pairs = std::is_same_v<typename Map::Domain, mapping::PairDomain>;

// Where a warp's rows go. Pairs: row i of the sub-tile at column j0 starts
// at buffer index base(i) = row_start(i) - out_offset + j0 - i - 1, and a
// warp steps 8 rows at a time: base(i + 8) = base(i) + 8 (n - i) - 44.
// Rectangles: base(i) = i K + j0 - out_offset, stepping 8 K. One 64-bit
// product per warp and sub-tile instead of one per row.
struct RowCursor {
  std::int64_t base;
  index_t i;
};

template <typename Map, typename T>
__device__ __forceinline__ RowCursor first_row(const KernelParams<T>& p, index_t i, index_t j0) {
  if constexpr (is_pairs<Map>) {
    return RowCursor{static_cast<std::int64_t>(mapping::row_start(p.rows, i) - p.out_offset) +
                         static_cast<std::int64_t>(j0) - static_cast<std::int64_t>(i) - 1,
                     i};
  } else {
    return RowCursor{
        static_cast<std::int64_t>(i * p.cols + j0) - static_cast<std::int64_t>(p.out_offset), i};
  }
}

template <typename Map, typename T>
__device__ __forceinline__ void next_row(RowCursor& c, const KernelParams<T>& p) {
  static_assert(BlockPolicy::kWarps == 8, "the cursor step assumes 8 rows per step");
  if constexpr (is_pairs<Map>) {
    c.base += 8 * static_cast<std::int64_t>(p.rows - c.i) - 44;
  } else {
    c.base += 8 * static_cast<std::int64_t>(p.cols);
  }
  c.i += 8;
}

// Columns [lo, hi) of the sub-tile at j0 hold domain elements of row i.
template <typename Map, typename T>
__device__ __forceinline__ void column_range(const KernelParams<T>& p, index_t i, index_t j0,
                                             std::int64_t* lo, std::int64_t* hi) {
  *lo = is_pairs<Map> ? static_cast<std::int64_t>(i) + 1 - static_cast<std::int64_t>(j0) : 0;
  *hi = static_cast<std::int64_t>(p.cols) - static_cast<std::int64_t>(j0);
}

// A row segment: lane t's accumulators acc[s] belong to columns t + 32 s of
// row c.i's segment; nr and nc[s] are the row's and columns' norms (1 where
// the metric needs none). Each epilogue's row() finalizes what it needs.
template <typename T, typename Map, typename E>
struct Epilogue;

template <typename T, typename M, int N>
__device__ __forceinline__ void finalize_all(const M& m, const typename M::acc_t (&acc)[N],
                                             double nr, const double (&nc)[N], T (&v)[N]) {
#pragma unroll
  for (int s = 0; s < N; ++s)
    v[s] = m.finalize(acc[s], nr, nc[s]);
}

// Store at buffer index c.base + column; the masked path keeps the columns
// that are domain elements. c.base may lie "before" the buffer for diagonal
// rows, so indices stay signed until they are known to be valid.
template <typename T, typename Map>
struct Epilogue<T, Map, epi::Store> {
  __device__ __forceinline__ static void begin_block(const KernelParams<T>&) {}
  __device__ __forceinline__ static void end_block(const KernelParams<T>&) {}
  template <bool kFast, typename M>
  __device__ __forceinline__ static void row(const KernelParams<T>& p, const RowCursor& c,
                                             index_t j0, const M& m,
                                             const typename M::acc_t (&acc)[kCols], double nr,
                                             const double (&nc)[kCols], int lane) {
    T v[kCols];
    finalize_all(m, acc, nr, nc, v);
    if constexpr (kFast) {
#pragma unroll
      for (int s = 0; s < kCols; ++s)
        p.out[c.base + lane + kWarpSize * s] = v[s];
      return;
    }
    std::int64_t lo, hi;
    column_range<Map>(p, c.i, j0, &lo, &hi);
#pragma unroll
    for (int s = 0; s < kCols; ++s) {
      const int col = lane + kWarpSize * s;
      if (col >= lo && col < hi) p.out[c.base + col] = v[s];
    }
  }
};

extern __shared__ unsigned int histogram_smem[];

template <typename T, typename Map>
struct Epilogue<T, Map, epi::Histogram> {
  __device__ __forceinline__ static bool shared(const KernelParams<T>& p) {
    return p.hist_copies > 0;
  }
  __device__ __forceinline__ static void begin_block(const KernelParams<T>& p) {
    if (!shared(p)) return;
    for (index_t s = threadIdx.x; s < p.hist_copies * p.hist_stride; s += BlockPolicy::kThreads)
      histogram_smem[s] = 0;
    __syncthreads();
  }
  __device__ __forceinline__ static void end_block(const KernelParams<T>& p) {
    if (!shared(p)) return;
    __syncthreads();
    const index_t slots = p.hist_stride;
    for (index_t s = threadIdx.x; s < slots; s += BlockPolicy::kThreads) {
      unsigned int c = 0;
      for (index_t k = 0; k < p.hist_copies; ++k)
        c += histogram_smem[k * slots + s];
      if (c) atomicAdd(&p.counts[s], static_cast<unsigned long long>(c));
    }
    __syncthreads();
  }
  // Partial histograms: pair (i, j)'s row of slots, or -1 for none.
  __device__ __forceinline__ static std::int64_t group_base(const KernelParams<T>& p, index_t i,
                                                            index_t j) {
    if (p.molecule && p.molecule[i] == p.molecule[j]) return -1;
    const std::int32_t h = p.table ? p.table[p.type[i] * p.types + p.type[j]] : 0;
    return h < 0 ? -1 : static_cast<std::int64_t>(h) * static_cast<std::int64_t>(p.bins + 2);
  }
  __device__ __forceinline__ static void count(const KernelParams<T>& p, T value, index_t i,
                                               index_t j) {
    index_t slot;
    if constexpr (sizeof(T) == 4) {
      slot =
          epilogue::histogram_slot(value, p.fast32, p.lo, p.hi, p.norm, p.bins, p.edges, p.margin);
    } else {
      slot = epilogue::histogram_slot(value, p.lo, p.hi, p.norm, p.bins, p.edges, p.margin);
    }
    if (p.groups) {
      // A grouped run's overflow is each histogram's pairs less what it
      // binned (HistogramSink::settle_overflow): a pair beyond the range
      // leaves before its labels are looked up, as on the CPU.
      if (slot == p.bins + 1) return;
      const std::int64_t base = group_base(p, i, j);
      if (base < 0) return;
      slot += static_cast<index_t>(base);
    }
    if (shared(p)) {
      // Each warp counts into its own copy when they fit: no contention
      // between warps, only between the lanes of one.
      const unsigned int copy = (threadIdx.x / kWarpSize) & (p.hist_copies - 1);
      atomicAdd(&histogram_smem[copy * p.hist_stride + static_cast<unsigned int>(slot)], 1u);
    } else {
      atomicAdd(&p.counts[slot], 1ull);
    }
  }
  template <bool kFast, typename M>
  __device__ __forceinline__ static void row(const KernelParams<T>& p, const RowCursor& c,
                                             index_t j0, const M& m,
                                             const typename M::acc_t (&acc)[kCols], double nr,
                                             const double (&nc)[kCols], int lane) {
    T v[kCols];
    finalize_all(m, acc, nr, nc, v);
    if constexpr (kFast) {
#pragma unroll
      for (int s = 0; s < kCols; ++s)
        count(p, v[s], c.i, j0 + lane + kWarpSize * s);
      return;
    }
    std::int64_t lo, hi;
    column_range<Map>(p, c.i, j0, &lo, &hi);
#pragma unroll
    for (int s = 0; s < kCols; ++s) {
      const int col = lane + kWarpSize * s;
      if (col >= lo && col < hi) count(p, v[s], c.i, j0 + col);
    }
  }
};

// Select: the columns whose test passes are appended to the chunk's list:
// per value column of the segment one ballot, and one atomicAdd by the
// first passing lane for all the warp's passing values (their order within
// the list is the backend's to fix: it sorts by key). Rows and columns past
// the domain are masked out before the test. Every lane of the warp calls
// row() (the row loops are warp-uniform), as __ballot_sync needs.
template <typename T, typename Map, typename Test>
struct Epilogue<T, Map, epi::Select<Test>> {
  __device__ __forceinline__ static void begin_block(const KernelParams<T>&) {}
  __device__ __forceinline__ static void end_block(const KernelParams<T>&) {}
  __device__ __forceinline__ static void append(const KernelParams<T>& p, bool keep, long long key,
                                                T value, int lane) {
    const unsigned int mask = __ballot_sync(0xffffffffu, keep);
    if (mask == 0) return;
    const int first = __ffs(mask) - 1;
    unsigned long long base = 0;
    if (lane == first) base = atomicAdd(p.sel_count, static_cast<unsigned long long>(__popc(mask)));
    base = __shfl_sync(0xffffffffu, base, first);
    if (keep) {
      const unsigned long long at = base + __popc(mask & ((1u << lane) - 1u));
      if (at < p.sel_capacity) {
        p.sel_keys[at] = static_cast<unsigned long long>(key);
        p.sel_values[at] = value;
      }
    }
  }
  template <bool kFast, typename M>
  __device__ __forceinline__ static void row(const KernelParams<T>& p, const RowCursor& c,
                                             index_t j0, const M& m,
                                             const typename M::acc_t (&acc)[kCols], double nr,
                                             const double (&nc)[kCols], int lane) {
    std::int64_t lo = 0, hi = BlockPolicy::kTile;
    if constexpr (!kFast) column_range<Map>(p, c.i, j0, &lo, &hi);
#pragma unroll
    for (int s = 0; s < kCols; ++s) {
      const int col = lane + kWarpSize * s;
      T value = T(0);
      bool keep = false;
      if (kFast || (col >= lo && col < hi)) {
        keep = Test::template test<T>(p.select, m, acc[s], c.i, j0 + col, nr, nc[s], &value);
      }
      append(p, keep, c.base + col, value, lane);
    }
  }
};

// One feature into the accumulator: the metric of (x, y), or with a box the
// metric of the minimum-image difference (the functors see (delta, 0)), as
// in the CPU loops.
template <typename M, typename T, bool kPeriodic>
__device__ __forceinline__ typename M::acc_t step(const KernelParams<T>& p, const M& m,
                                                  typename M::acc_t a, T x, T y, int k) {
  if constexpr (kPeriodic) {
    return m.accumulate(a, epilogue::minimum_image(static_cast<T>(x - y), p.box[k]), T(0),
                        static_cast<index_t>(k));
  } else {
    return m.accumulate(a, x, y, static_cast<index_t>(k));
  }
}

// Shared memory of one block, for either feature path.
template <typename T>
struct SmallDShared {
  T rows[BlockPolicy::kTile * BlockPolicy::kMaxSmallD];
  double row_norms[BlockPolicy::kTile];
};
// The general path's strips. Row r's features k at rows[r][k], so that one
// 16-byte load (a broadcast: every lane reads the same row) gives a thread
// 16 / sizeof(T) consecutive features. The column strip is lane-major:
// feature k of column lane + 32 s at cols[k][lane * 4 + s], so that one
// 16-byte load (float; two for double) gives a lane its 4 columns, and the
// warp's 32 loads are consecutive (no bank conflicts).
template <typename T, int kStageBytes>
struct GeneralShared {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "float or double points");
  static constexpr int kStep = kStageBytes / sizeof(T);  // features per stage
  static constexpr int kVec = kVec16<T>;                 // features in one 16-byte load
  alignas(16) T rows[BlockPolicy::kTile][kStep];
  alignas(16) T cols[kStep][BlockPolicy::kTile + BlockPolicy::kPad];
  double row_norms[BlockPolicy::kTile];
};

// 16-byte shared-memory loads of the general path (addresses 16-aligned).
template <int N, typename T>
__device__ __forceinline__ void load_vec(const T* s, T (&v)[N]) {
  static_assert(N * sizeof(T) % 16 == 0, "whole 16-byte loads");
  if constexpr (sizeof(T) == 4) {
#pragma unroll
    for (int h = 0; h < N; h += 4) {
      const float4 x = *reinterpret_cast<const float4*>(s + h);
      v[h] = x.x;
      v[h + 1] = x.y;
      v[h + 2] = x.z;
      v[h + 3] = x.w;
    }
  } else {
#pragma unroll
    for (int h = 0; h < N; h += 2) {
      const double2 x = *reinterpret_cast<const double2*>(s + h);
      v[h] = x.x;
      v[h + 1] = x.y;
    }
  }
}

// d known at compile time (1..8): column points in registers. kFast: every
// value of the sub-tile is a domain element (no mask); a template parameter
// so that each case is its own branch-free loop (measured: the runtime
// branch cost 5-25 % depending on d, docs/performance.md).
template <typename T, typename M, int D, typename Map, typename E, bool kPeriodic, bool kFast>
__device__ __forceinline__ void subtile_small_d(const KernelParams<T>& p, index_t i0, index_t j0,
                                                SmallDShared<T>& sh) {
  using A = typename M::acc_t;
  static_assert(metric::traits<M>::small_d, "d-specialised kernels for the older metrics only");
  const M m(p.mp);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  // Stage the row points (and norms) once per sub-tile.
  for (int e = threadIdx.x; e < BlockPolicy::kTile * D; e += BlockPolicy::kThreads) {
    const index_t i = i0 + e / D;
    sh.rows[e] = i < p.rows ? p.a[i * D + e % D] : T(0);
  }
  if (M::needs_norms) {
    for (int r = threadIdx.x; r < BlockPolicy::kTile; r += BlockPolicy::kThreads)
      sh.row_norms[r] = i0 + r < p.rows ? p.norms_a[i0 + r] : 1.0;
  }
  T xc[kCols][D];
  double nc[kCols];
#pragma unroll
  for (int s = 0; s < kCols; ++s) {
    const index_t j = j0 + lane + kWarpSize * s;
#pragma unroll
    for (int k = 0; k < D; ++k)
      xc[s][k] = j < p.cols ? p.b[j * D + k] : T(0);
    nc[s] = (M::needs_norms && j < p.cols) ? p.norms_b[j] : 1.0;
  }
  __syncthreads();
  RowCursor cur = first_row<Map>(p, i0 + warp, j0);
#pragma unroll BlockPolicy::kRowUnroll
  for (int q = 0; q < BlockPolicy::kRowsPerWarp; ++q, next_row<Map>(cur, p)) {
    const int r = q * BlockPolicy::kWarps + warp;
    if (cur.i >= p.rows) break;  // warp-uniform
    T xr[D];
#pragma unroll
    for (int k = 0; k < D; ++k)
      xr[k] = sh.rows[r * D + k];
    A acc[kCols];
    const auto plain = [&] {
#pragma unroll
      for (int s = 0; s < kCols; ++s) {
        acc[s] = A(0);
#pragma unroll
        for (int k = 0; k < D; ++k)
          acc[s] = step<M, T, kPeriodic>(p, m, acc[s], xr[k], xc[s][k], k);
      }
    };
    if constexpr (kPeriodic && D == 3) {
      // A triclinic cell (uniform): the difference's coordinates reduced
      // together, then accumulated in order (the CPU loops' bits).
      if (p.triclinic) {
#pragma unroll
        for (int s = 0; s < kCols; ++s) {
          T d[3] = {T(xr[0] - xc[s][0]), T(xr[1] - xc[s][1]), T(xr[2] - xc[s][2])};
          epilogue::triclinic_image(d[0], d[1], d[2], p.box, p.tilt);
          acc[s] = A(0);
#pragma unroll
          for (int k = 0; k < 3; ++k)
            acc[s] = m.accumulate(acc[s], d[k], T(0), static_cast<index_t>(k));
        }
      } else {
        plain();
      }
    } else {
      plain();
    }
    const double nr = M::needs_norms ? sh.row_norms[r] : 1.0;
    Epilogue<T, Map, E>::template row<kFast>(p, cur, j0, m, acc, nr, nc, lane);
  }
  __syncthreads();  // before the next sub-tile overwrites the rows
}

// The strip schedule's shared memory: the strip's column points (padded to
// 1, 2 or 4 features, in planes of 16 bytes or less so that a warp's loads
// are consecutive), their norms where the metric needs them, and a
// row buffer a warp, shifted so that the row's first 16-byte boundary in
// the output buffer falls on a 16-byte boundary here.
template <typename T, int D, bool kNorms>
struct StripShared {
  static constexpr int kW = BlockPolicy::strip_cols<T>();  // columns of a strip
  static constexpr int kV = kVec16<T>;                     // values a 16-byte store
  static_assert(D >= 1 && D <= BlockPolicy::kStripMaxD, "strips are for d <= 4");
  static constexpr int kPadded = D <= 2 ? D : 4;
  static constexpr int kPlane = kPadded < kV ? kPadded : kV;  // features a load
  static constexpr int kPlanes = kPadded / kPlane;
  alignas(16) T vals[BlockPolicy::kWarps][kW + kV];
  alignas(16) T cols[kPlanes][kW][kPlane];
  double col_norms[kNorms ? kW : 1];
  mapping::Strip strip;  // λ2: the block's strip, unranked once
};

// Where the buffer index `index` falls within its 16 bytes, in values.
template <typename T>
__device__ __forceinline__ int vec_phase(const KernelParams<T>& p, std::int64_t index) {
  constexpr int kV = kVec16<T>;
  const auto first =
      static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p.out) / sizeof(T));
  return static_cast<int>((first + static_cast<std::uint64_t>(index)) & (kV - 1));
}

// N values of type T as one access of N × sizeof(T) bytes (<= 16).
template <typename T, int N>
struct PlaneVec {
  static_assert(N * sizeof(T) <= 16, "at most 16 bytes");
  using type =
      std::conditional_t<N * sizeof(T) == 16, Vec16<T>,
                         std::conditional_t<N * sizeof(T) == 8 && sizeof(T) == 4, float2, T>>;
};
template <int N, typename T>
__device__ __forceinline__ void load_plane(const T* s, T* v) {
  const auto x = *reinterpret_cast<const typename PlaneVec<T, N>::type*>(s);
  std::memcpy(v, &x, N * sizeof(T));
}

// The value of the pair (row point xr, column point y[0 .. D)) in both strip
// kernels: the same steps in the same order as subtile_small_d.
template <typename T, typename M, int D>
__device__ __forceinline__ T point_value(const KernelParams<T>& p, const M& m, const T (&xr)[D],
                                         const T* y, double nr, double nc) {
  using A = typename M::acc_t;
  A acc = A(0);
#pragma unroll
  for (int k = 0; k < D; ++k)
    acc = step<M, T, false>(p, m, acc, xr[k], y[k], k);
  return m.finalize(acc, nr, nc);
}

// One strip, rows [i0, i0 + h) × columns [j0, j0 + W), of the d <= 4 store
// kernels. The block stages the strip's column points; then each warp takes
// whole rows on its own: the row's values (the same steps as
// subtile_small_d, in the same order: the same bits) into its buffer, then
// the row piece out in 16-byte stores, single values at its two ends and the
// domain's mask. No barrier between rows, so that some warps store while
// others compute.
template <typename T, typename M, int D, typename Map, typename S>
__device__ __forceinline__ void strip_store(const KernelParams<T>& p, index_t i0, index_t j0,
                                            S& sh) {
  using V = Vec16<T>;
  constexpr int kW = S::kW, kV = S::kV, kPlane = S::kPlane;
  static_assert(metric::traits<M>::small_d, "d-specialised kernels for the older metrics only");
  const M m(p.mp);
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  if constexpr (D == S::kPadded && kPlane * sizeof(T) <= 8) {
    // Whole planes: one load of 8 bytes or less each (points are D values
    // apart from a cudaMalloc'd start, so each plane is aligned to its size).
    // 16-byte loads measured slower at d = 4 (H100, n = 1e5: 7.69 against
    // 7.26 ms with these element loads).
    using P = typename PlaneVec<T, kPlane>::type;
    for (int e = threadIdx.x; e < kW * S::kPlanes; e += BlockPolicy::kThreads) {
      const int c = e / S::kPlanes, g = e % S::kPlanes;
      const index_t j = j0 + c;
      P x{};
      if (j < p.cols) x = *reinterpret_cast<const P*>(p.b + j * D + g * kPlane);
      *reinterpret_cast<P*>(&sh.cols[g][c][0]) = x;
    }
  } else {
    for (int e = threadIdx.x; e < kW * S::kPadded; e += BlockPolicy::kThreads) {
      const int c = e / S::kPadded, k = e % S::kPadded;
      const index_t j = j0 + c;
      sh.cols[k / kPlane][c][k % kPlane] = (k < D && j < p.cols) ? p.b[j * D + k] : T(0);
    }
  }
  if constexpr (M::needs_norms) {
    for (int c = threadIdx.x; c < kW; c += BlockPolicy::kThreads)
      sh.col_norms[c] = j0 + c < p.cols ? p.norms_b[j0 + c] : 1.0;
  }
  __syncthreads();  // the strip's columns staged
  T* const buf = sh.vals[warp];
  const index_t h = p.strip_layout.h;
  for (index_t r = warp; r < h; r += BlockPolicy::kWarps) {
    const index_t i = i0 + r;
    if (i >= p.rows) break;  // warp-uniform
    std::int64_t lo, hi;
    column_range<Map>(p, i, j0, &lo, &hi);
    if (lo < 0) lo = 0;
    if (hi > kW) hi = kW;
    if (lo >= hi) continue;
    const std::int64_t base = first_row<Map>(p, i, j0).base;  // column j0 of row i
    const int shift = vec_phase(p, base);
    T xr[D];
#pragma unroll
    for (int k = 0; k < D; ++k)
      xr[k] = p.a[i * D + k];
    const double nr = M::needs_norms ? p.norms_a[i] : 1.0;
#pragma unroll 4
    for (int c = static_cast<int>(lo & ~std::int64_t(kWarpSize - 1)) + lane; c < hi;
         c += kWarpSize) {
      T y[S::kPadded];
#pragma unroll
      for (int g = 0; g < S::kPlanes; ++g)
        load_plane<kPlane>(sh.cols[g][c], y + g * kPlane);
      buf[shift + c] =
          point_value<T, M, D>(p, m, xr, y, nr, M::needs_norms ? sh.col_norms[c] : 1.0);
    }
    __syncwarp();
    // Vector q covers columns [q kV - shift, (q + 1) kV - shift).
    const int vecs = static_cast<int>((hi + shift + kV - 1) / kV);
    for (int q = static_cast<int>((lo + shift) / kV) + lane; q < vecs; q += kWarpSize) {
      const std::int64_t c = static_cast<std::int64_t>(q) * kV - shift;
      const T* v = buf + q * kV;
      if (c >= lo && c + kV <= hi) {
        *reinterpret_cast<V*>(p.out + (base + c)) = *reinterpret_cast<const V*>(v);
      } else {
#pragma unroll
        for (int e = 0; e < kV; ++e)
          if (c + e >= lo && c + e < hi) p.out[base + c + e] = v[e];
      }
    }
    __syncwarp();  // the buffer read before the next row overwrites it
  }
  __syncthreads();  // every warp done with the columns before the next strip's
}

// The strip schedule with the columns in registers ("lanes"): thread t owns
// the kV columns [t kV, (t + 1) kV) of the strip (kV values a 16-byte store,
// so 256 threads cover its 4 KiB) and for each row stores the row's t-th
// aligned 16-byte piece: a row whose first column sits s values past a
// 16-byte boundary stores columns [t kV - s, (t + 1) kV - s). No value goes
// through shared memory. Two ways to have the s values of the columns
// before t kV:
// - d <= 6: the thread keeps the points of the 2 kV - 1 columns around its
//   own in registers for the whole strip and computes the kV values of its
//   piece itself (lane_piece). Thread 0's piece would start before the
//   strip; it takes the strip's last s columns instead (its registers hold
//   those points in place of the ones before the strip).
// - d = 7, 8 (kShuffle): the thread keeps only its own kV columns, computes
//   their values and takes the first s values of its piece from the
//   previous lane by shuffle (shuffle_piece). Lane 0 has no previous lane:
//   it stores its own first kV - s values one by one, and lane 31 its last
//   s, which the next warp's lane 0 (or the next strip) does not cover.
struct LaneRow {
  std::int64_t base;  // buffer index of the strip's column 0 in this row
  int lo, hi;         // the row's columns in the strip, within [0, kW]
};

// The values w of columns [c0, c0 + kV) of row `row`: one 16-byte store
// where the piece is whole, else those in the row's range one by one; with
// kWrap a column before the strip is the strip's end (thread 0 of
// lane_piece).
template <bool kWrap, typename T>
__device__ __forceinline__ void store_piece(const KernelParams<T>& p, const LaneRow& row, int c0,
                                            const T (&w)[kVec16<T>]) {
  constexpr int kV = kVec16<T>;
  constexpr int kW = BlockPolicy::kThreads * kV;
  using V = Vec16<T>;
  if (c0 >= row.lo && c0 + kV <= row.hi) {
    V q;
    std::memcpy(&q, w, sizeof(V));
    *reinterpret_cast<V*>(p.out + (row.base + c0)) = q;
  } else {
#pragma unroll
    for (int e = 0; e < kV; ++e) {
      const int c = kWrap && c0 + e < 0 ? c0 + e + kW : c0 + e;
      if (c >= row.lo && c < row.hi) p.out[row.base + c] = w[e];
    }
  }
}

// Row `row`'s piece of thread t, for a row S values past a 16-byte boundary.
template <int S, typename T, typename M, int D, int kN>
__device__ __forceinline__ void lane_piece(const KernelParams<T>& p, const M& m, const LaneRow& row,
                                           const T (&xr)[D], double nr, const T (&y)[kN][D],
                                           const double (&nc)[kN]) {
  constexpr int kV = kVec16<T>;
  static_assert(kN == 2 * kV - 1, "the columns around the thread's own");
  T v[kV];
#pragma unroll
  for (int e = 0; e < kV; ++e)
    v[e] = point_value<T, M, D>(p, m, xr, y[kV - 1 - S + e], nr, nc[kV - 1 - S + e]);
  // Thread 0: the strip's last S in place of the columns before it.
  store_piece<true>(p, row, static_cast<int>(threadIdx.x) * kV - S, v);
}

// Row `row`'s piece of thread t from the values v of its own columns, for a
// row S values past a 16-byte boundary (kShuffle lanes).
template <int S, typename T>
__device__ __forceinline__ void shuffle_piece(const KernelParams<T>& p, const LaneRow& row,
                                              const T (&v)[kVec16<T>]) {
  constexpr int kV = kVec16<T>;
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int c = static_cast<int>(threadIdx.x) * kV;  // the thread's first column
  T w[kV];                                           // columns [c - S, c + kV - S)
#pragma unroll
  for (int e = 0; e < kV; ++e)
    w[e] = e < S ? __shfl_up_sync(0xffffffffu, v[kV - S + e], 1) : v[e - S];
  if (S == 0 || lane > 0) store_piece<false>(p, row, c - S, w);  // c - S >= 0 here
  if constexpr (S > 0) {
    if (lane == 0 || lane == kWarpSize - 1) {  // lane 0: its first kV - S; lane 31: its last S
#pragma unroll
      for (int e = 0; e < kV; ++e)
        if ((lane == 0) == (e < kV - S) && c + e >= row.lo && c + e < row.hi)
          p.out[row.base + c + e] = v[e];
    }
  }
}

// Thread t's kN columns t kV - (kN - kV) .. t kV + kV - 1 of the strip at
// j0, zero past the domain: its own kV in D 16-byte loads where they are
// whole; with kN = 2 kV - 1 also the kV - 1 before them, from the previous
// lane (lane 0: from memory; thread 0: the strip's last kV - 1).
template <typename T, typename M, int D, int kN>
__device__ __forceinline__ void lane_columns(const KernelParams<T>& p, index_t j0, T (&y)[kN][D],
                                             double (&nc)[kN]) {
  constexpr int kV = kVec16<T>;
  constexpr int kW = BlockPolicy::kThreads * kV;
  constexpr int kBefore = kN - kV;  // 0 or kV - 1
  static_assert(kBefore == 0 || kBefore == kV - 1, "own columns, or those and kV - 1 before");
  using V = Vec16<T>;
  const int t = static_cast<int>(threadIdx.x);
  const index_t jt = j0 + static_cast<index_t>(t) * kV;
  if (jt + kV <= p.cols && (reinterpret_cast<std::uintptr_t>(p.b) & 15) == 0) {
    T own[kV * D];
#pragma unroll
    for (int g = 0; g < D; ++g) {
      const V w = reinterpret_cast<const V*>(p.b + jt * D)[g];
      std::memcpy(own + g * kV, &w, sizeof(V));
    }
#pragma unroll
    for (int e = 0; e < kV; ++e)
#pragma unroll
      for (int k = 0; k < D; ++k)
        y[kBefore + e][k] = own[e * D + k];
  } else {
#pragma unroll
    for (int e = 0; e < kV; ++e)
#pragma unroll
      for (int k = 0; k < D; ++k)
        y[kBefore + e][k] = jt + e < p.cols ? p.b[(jt + e) * D + k] : T(0);
  }
  // Column y[e] of this thread (the strip's end in place of the columns
  // before the strip).
  const auto column = [&](int e) {
    const int c = t * kV - kBefore + e;
    return j0 + static_cast<index_t>(c < 0 ? c + kW : c);
  };
  if constexpr (kBefore > 0) {
#pragma unroll
    for (int e = 0; e < kBefore; ++e)
#pragma unroll
      for (int k = 0; k < D; ++k)
        y[e][k] = __shfl_up_sync(0xffffffffu, y[kV + e][k], 1);
    if (t % kWarpSize == 0) {  // the previous warp's, or (t = 0) the strip's end
#pragma unroll
      for (int e = 0; e < kBefore; ++e) {
        const index_t j = column(e);
#pragma unroll
        for (int k = 0; k < D; ++k)
          y[e][k] = j < p.cols ? p.b[j * D + k] : T(0);
      }
    }
  }
#pragma unroll
  for (int e = 0; e < kN; ++e) {
    if constexpr (M::needs_norms) {
      const index_t j = column(e);
      nc[e] = j < p.cols ? p.norms_b[j] : 1.0;
    } else {
      nc[e] = 1.0;
    }
  }
}

// The rows a lanes strip stages once: their bases and ranges, their points
// (padded to 1, 2, 4 or 8 features) and norms, and (λ2) the block's strip.
template <typename T, int D, bool kNorms>
struct StripLaneShared {
  static constexpr int kW = BlockPolicy::strip_cols<T>();  // columns of a strip
  static constexpr int kMaxRows = 128;                     // TDSOLVE_STRIP_ROWS takes at most 128
  static constexpr int kPadded = D <= 2 ? D : (D <= 4 ? 4 : 8);
  static_assert(D >= 1 && D <= BlockPolicy::kLaneMaxD, "lanes are for d <= 8");
  LaneRow rows[kMaxRows];
  alignas(16) T x[kMaxRows][kPadded];
  double norms[kNorms ? kMaxRows : 1];
  mapping::Strip strip;
};

// One strip of the lanes schedule. The rows' bases, ranges and points are
// staged once a strip by h threads (one barrier: measured faster than
// every thread walking the rows itself, docs/performance.md).
template <typename T, typename M, int D, typename Map, bool kShuffle, typename S>
__device__ __forceinline__ void strip_lanes_store(const KernelParams<T>& p, index_t i0, index_t j0,
                                                  S& sh) {
  constexpr int kV = kVec16<T>;
  constexpr int kN = kShuffle ? kV : 2 * kV - 1;  // columns a thread keeps
  constexpr int kW = BlockPolicy::kThreads * kV;
  static_assert(kW == S::kW, "a strip is 16 bytes a thread wide");
  static_assert(metric::traits<M>::small_d, "d-specialised kernels for the older metrics only");
  const M m(p.mp);
  const index_t h = p.strip_layout.h;
  for (index_t r = threadIdx.x; r < h; r += BlockPolicy::kThreads) {
    const index_t i = i0 + r;
    if (i >= p.rows) break;
    std::int64_t lo, hi;
    column_range<Map>(p, i, j0, &lo, &hi);
    sh.rows[r] =
        LaneRow{first_row<Map>(p, i, j0).base, static_cast<int>(lo < 0 ? 0 : (lo > kW ? kW : lo)),
                static_cast<int>(hi > kW ? kW : (hi < 0 ? 0 : hi))};
#pragma unroll
    for (int k = 0; k < S::kPadded; ++k)
      sh.x[r][k] = k < D ? p.a[i * D + k] : T(0);
    if constexpr (M::needs_norms) sh.norms[r] = p.norms_a[i];
  }
  T y[kN][D];
  double nc[kN];
  lane_columns<T, M, D>(p, j0, y, nc);
  __syncthreads();  // the rows staged
  for (index_t r = 0; r < h; ++r) {
    if (i0 + r >= p.rows) break;  // block-uniform
    const LaneRow row = sh.rows[r];
    if (row.lo >= row.hi) continue;  // block-uniform
    T xr[D];
#pragma unroll
    for (int k = 0; k < D; ++k)
      xr[k] = sh.x[r][k];
    const double nr = M::needs_norms ? sh.norms[r] : 1.0;
    T v[kV];  // kShuffle: the values of the thread's own columns, before the row's case
    if constexpr (kShuffle) {
#pragma unroll
      for (int e = 0; e < kV; ++e)
        v[e] = point_value<T, M, D>(p, m, xr, y[e], nr, nc[e]);
    }
    // The row's case, one compiled copy each (block-uniform).
    const auto piece = [&](auto phase) {
      constexpr int kS = decltype(phase)::value;
      if constexpr (kS >= kV) {
        return;  // no such phase for doubles
      } else if constexpr (kShuffle) {
        shuffle_piece<kS>(p, row, v);
      } else {
        lane_piece<kS>(p, m, row, xr, nr, y, nc);
      }
    };
    switch (vec_phase(p, row.base)) {
      case 0:
        piece(std::integral_constant<int, 0>{});
        break;
      case 1:
        piece(std::integral_constant<int, 1>{});
        break;
      case 2:
        piece(std::integral_constant<int, 2>{});
        break;
      default:
        piece(std::integral_constant<int, 3>{});
        break;
    }
  }
  __syncthreads();  // every thread done with the rows before the next strip's
}

// Where column c of a sub-tile sits in a column-strip row: lane-major, the
// 4 columns of lane c % 32 side by side.
__device__ __forceinline__ int lane_major(int c) {
  return (c % kWarpSize) * kCols + c / kWarpSize;
}

// Features [kb, kb + kStep) of the sub-tile's 128 rows and 128 columns into
// the strips; zero past d or n, which leaves every accumulator unchanged.
// When d is a multiple of 16 bytes' worth of features every point's strip is
// whole 16-byte loads (cudaMalloc'd points: 16-byte aligned rows).
template <typename T, typename S>
__device__ __forceinline__ void stage_strips(const KernelParams<T>& p, index_t i0, index_t j0,
                                             index_t kb, S& sh) {
  constexpr int kStep = S::kStep, kVec = S::kVec;
  using V = Vec16<T>;
  // Only the features the compute reads: up to d, rounded up to whole
  // groups of kVec (the group past d is zero-padded).
  const index_t left = p.d - kb;
  const int width = left < kStep ? static_cast<int>((left + kVec - 1) / kVec * kVec) : kStep;
  if (p.d % kVec == 0) {
    constexpr int kPerRow = kStep / kVec;  // 16-byte pieces of a row's strip
    for (int e = threadIdx.x; e < BlockPolicy::kTile * kPerRow; e += BlockPolicy::kThreads) {
      const int r = e / kPerRow, k = (e % kPerRow) * kVec;
      if (k >= width) continue;
      const index_t f = kb + k, i = i0 + r, j = j0 + r;
      V x{}, y{};
      if (i < p.rows && f < p.d) x = *reinterpret_cast<const V*>(p.a + i * p.d + f);
      if (j < p.cols && f < p.d) y = *reinterpret_cast<const V*>(p.b + j * p.d + f);
      *reinterpret_cast<V*>(&sh.rows[r][k]) = x;
      T ys[kVec];
      std::memcpy(ys, &y, sizeof y);
      const int at = lane_major(r);
#pragma unroll
      for (int h = 0; h < kVec; ++h)
        sh.cols[k + h][at] = ys[h];
    }
    return;
  }
  for (int e = threadIdx.x; e < BlockPolicy::kTile * kStep; e += BlockPolicy::kThreads) {
    const int r = e / kStep, k = e % kStep;
    if (k >= width) continue;
    const index_t f = kb + k, i = i0 + r, j = j0 + r;
    sh.rows[r][k] = (i < p.rows && f < p.d) ? p.a[i * p.d + f] : T(0);
    sh.cols[k][lane_major(r)] = (j < p.cols && f < p.d) ? p.b[j * p.d + f] : T(0);
  }
}

// Any d: strips of features through shared memory. Each thread keeps a
// register block of kRowsPerPass rows × 4 columns of accumulators (GEMM's
// register tile) and, for the older metrics, takes the features 16 bytes at
// a time: per group of kVec features a lane loads its 4 columns once per
// feature (one 16-byte load each) and each row's kVec features in one
// broadcast load, then runs kRowsPerPass × 4 × kVec steps from registers.
// Every accumulator still visits its features in order k = 0..d-1, so the
// bits are the CPU's.
template <typename T, typename M, typename Map, typename E, bool kPeriodic, bool kFast, typename S>
__device__ __forceinline__ void subtile_general(const KernelParams<T>& p, index_t i0, index_t j0,
                                                S& sh) {
  using A = typename M::acc_t;
  const M m(p.mp);
  constexpr int kStep = S::kStep;
  // 8 rows a pass: 16 (one pass) needs 128 registers for its 64
  // accumulators and measured slower (2 blocks an SM) for d <= 32.
  constexpr int kRowsPerPass = 8;
  constexpr int kPasses = BlockPolicy::kRowsPerWarp / kRowsPerPass;
  // Features grouped 16 bytes deep for the older metrics; the newer ones
  // (longer per-feature code, general d only) one at a time, to keep
  // compile time down.
  constexpr bool kWide = metric::traits<M>::small_d;
  constexpr int kVec = kWide ? S::kVec : 1;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (M::needs_norms) {
    for (int r = threadIdx.x; r < BlockPolicy::kTile; r += BlockPolicy::kThreads)
      sh.row_norms[r] = i0 + r < p.rows ? p.norms_a[i0 + r] : 1.0;
  }
  double nc[kCols];
#pragma unroll
  for (int s = 0; s < kCols; ++s) {
    const index_t j = j0 + lane + kWarpSize * s;
    nc[s] = (M::needs_norms && j < p.cols) ? p.norms_b[j] : 1.0;
  }
  for (int pass = 0; pass < kPasses; ++pass) {
    A acc[kRowsPerPass][kCols];
#pragma unroll
    for (int q = 0; q < kRowsPerPass; ++q)
#pragma unroll
      for (int s = 0; s < kCols; ++s)
        acc[q][s] = A(0);
    for (index_t kb = 0; kb < p.d; kb += kStep) {
      // With d <= kStep one staging serves every pass.
      if (pass == 0 || p.d > kStep) {
        __syncthreads();
        stage_strips(p, i0, j0, kb, sh);
        __syncthreads();
      }
      const int kmax = p.d - kb < kStep ? static_cast<int>(p.d - kb) : kStep;
      // Not unrolled: unrolled, the compiler hoists every group's loads and
      // needs 255 registers.
#pragma unroll 1
      for (int kg = 0; kg < kStep; kg += kVec) {
        // Zero padding past d is harmless to every metric but a box's
        // (whose length there is 0): with a box it is skipped. Groups
        // wholly past d are skipped by every metric.
        if (kg >= kmax) break;
        T c[kVec][kCols];
#pragma unroll
        for (int kk = 0; kk < kVec; ++kk)
          load_vec<kCols>(&sh.cols[kg + kk][lane * kCols], c[kk]);
#pragma unroll
        for (int q = 0; q < kRowsPerPass; ++q) {
          const int r = (pass * kRowsPerPass + q) * BlockPolicy::kWarps + warp;
          T xr[kVec];
          if constexpr (kVec > 1) {
            load_vec<kVec>(&sh.rows[r][kg], xr);
          } else {
            xr[0] = sh.rows[r][kg];
          }
#pragma unroll
          for (int kk = 0; kk < kVec; ++kk) {
            if (kPeriodic && kg + kk >= kmax) break;
#pragma unroll
            for (int s = 0; s < kCols; ++s)
              acc[q][s] = step<M, T, kPeriodic>(p, m, acc[q][s], xr[kk], c[kk][s],
                                                static_cast<int>(kb) + kg + kk);
          }
        }
      }
    }
    __syncthreads();  // row norms staged before any finalize
    RowCursor cur = first_row<Map>(p, i0 + pass * kRowsPerPass * BlockPolicy::kWarps + warp, j0);
#pragma unroll
    for (int q = 0; q < kRowsPerPass; ++q, next_row<Map>(cur, p)) {
      const int r = (pass * kRowsPerPass + q) * BlockPolicy::kWarps + warp;
      if (cur.i >= p.rows) break;
      const double nr = M::needs_norms ? sh.row_norms[r] : 1.0;
      Epilogue<T, Map, E>::template row<kFast>(p, cur, j0, m, acc[q], nr, nc, lane);
    }
  }
  __syncthreads();
}

template <typename T, int D>
struct TileShared {
  using type = SmallDShared<T>;
};
// The general path: D = 0 with narrow stages, D = kGeneralWide with wide ones.
constexpr int kGeneralWide = -1;
template <typename T>
struct TileShared<T, 0> {
  using type = GeneralShared<T, BlockPolicy::kNarrowStageBytes>;
};
template <typename T>
struct TileShared<T, kGeneralWide> {
  using type = GeneralShared<T, BlockPolicy::kWideStageBytes>;
};

// One ρ×ρ tile (I, J) = (t.row, t.col): its 128×128 sub-tiles that hold
// domain elements.
template <typename T, typename M, int D, typename Map, typename E, bool kPeriodic>
__device__ __forceinline__ void process_tile(const KernelParams<T>& p, mapping::Tile t,
                                             typename TileShared<T, D>::type& sh) {
  constexpr index_t kTile = BlockPolicy::kTile;
  const index_t subs = p.rho / kTile;
  for (index_t a = 0; a < subs; ++a) {
    const index_t i0 = t.row * p.rho + a * kTile;
    if (i0 >= p.rows) break;
    for (index_t b = 0; b < subs; ++b) {
      const index_t j0 = t.col * p.rho + b * kTile;
      if (j0 >= p.cols) break;
      bool fast;
      if constexpr (is_pairs<Map>) {
        if (j0 + kTile - 1 <= i0) continue;  // no j > i in this sub-tile
        fast = i0 + kTile <= p.rows && j0 + kTile <= p.cols && j0 >= i0 + kTile;
      } else {
        fast = i0 + kTile <= p.rows && j0 + kTile <= p.cols;
      }
      fast = fast && !p.masked_only;
      if constexpr (D > 0) {
        if (fast) {
          subtile_small_d<T, M, D, Map, E, kPeriodic, true>(p, i0, j0, sh);
        } else {
          subtile_small_d<T, M, D, Map, E, kPeriodic, false>(p, i0, j0, sh);
        }
      } else {
        if (fast) {
          subtile_general<T, M, Map, E, kPeriodic, true>(p, i0, j0, sh);
        } else {
          subtile_general<T, M, Map, E, kPeriodic, false>(p, i0, j0, sh);
        }
      }
    }
  }
}

template <typename Map, typename T>
__device__ __forceinline__ typename Map::Domain domain_of(const KernelParams<T>& p) {
  typename Map::Domain d;
  if constexpr (is_pairs<Map>) {
    d.n = p.rows;
    d.tiles = p.tiles;  // culled: Lambda2Map reads its tiles from the list
  } else {
    d.rows = p.rows;
    d.cols = p.cols;
    d.mc = p.mc;
  }
  d.rho = p.rho;
  d.m = p.m;
  return d;
}

}  // namespace detail

// Strides over the map's grid in both directions; blocks without a tile
// (a bounding box's discards) leave at block level.
template <typename T, typename M, int D, typename Map, typename E, bool kPeriodic>
__global__ void __launch_bounds__(
    BlockPolicy::kThreads,
    epi::traits<E>::kStores ? BlockPolicy::min_blocks(D, metric::traits<M>::small_d,
                                                      sizeof(typename M::acc_t), sizeof(T))
                            : BlockPolicy::min_blocks_compute(D, metric::traits<M>::small_d,
                                                              sizeof(typename M::acc_t), sizeof(T)))
    block_kernel(const KernelParams<T> p) {
  using Epi = detail::Epilogue<T, Map, E>;
  constexpr bool kHist = std::is_same_v<E, epi::Histogram>;
  __shared__ typename detail::TileShared<T, D>::type sh;
  // The domain is rebuilt from the parameters where it is used (they live in
  // the constant bank), so it holds no registers across the tile. A
  // histogram block counts in shared memory from its first tile to its last
  // and adds to the global counts once (or every flush_tiles tiles, so that
  // no 32-bit slot can overflow).
  Epi::begin_block(p);
  index_t tiles = 0;
  const auto one = [&](const mapping::Tile& t) {
    detail::process_tile<T, M, D, Map, E, kPeriodic>(p, t, sh);
    if (kHist && ++tiles == p.flush_tiles) {
      Epi::end_block(p);
      Epi::begin_block(p);
      tiles = 0;
    }
  };
  if constexpr (Map::kOneDimensional) {
    // λ2 unranks ω with a float root and 64-bit corrections. For d >= 5
    // (and the general path) one thread does it and hands the tile over
    // through shared memory, so that the block's other 7 warps do not
    // repeat it: on the H100 that took d = 8 from 11.1 to 9.5 ms and
    // d = 16, 32 down 3 % (n = 1e5), but cost d = 2, 3 4-7 % (the two
    // barriers a tile), so d <= 4 keeps every warp's own evaluation
    // (docs/performance.md; the map laboratory's --map-once measures the
    // same trade).
    constexpr bool kShareTile = D <= 0 || D >= 5;
    __shared__ mapping::Tile next;
    for (index_t bx = blockIdx.x; bx < p.grid.x; bx += gridDim.x) {
      mapping::Tile t;
      if constexpr (kShareTile) {
        if (threadIdx.x == 0) Map::tile(detail::domain_of<Map>(p), p.grid, bx, 0, &next);
        __syncthreads();
        t = next;
        __syncthreads();  // every thread has it before thread 0 writes the next
      } else {
        Map::tile(detail::domain_of<Map>(p), p.grid, bx, 0, &t);
      }
      one(t);
    }
  } else {
    for (index_t by = blockIdx.y; by < p.grid.y; by += gridDim.y) {
      for (index_t bx = blockIdx.x; bx < p.grid.x; bx += gridDim.x) {
        mapping::Tile t;
        if (Map::tile(detail::domain_of<Map>(p), p.grid, bx, by, &t)) one(t);
      }
    }
  }
  Epi::end_block(p);
}

namespace detail {
// The shared memory of a strip kernel: lanes (d <= 8) or the strips of
// strip_store (d <= 4).
template <typename T, typename M, int D, bool kLanes>
using StripSharedOf = std::conditional_t<kLanes, StripLaneShared<T, D, M::needs_norms>,
                                         StripShared<T, D, M::needs_norms>>;
}  // namespace detail

// The strip schedule's kernel (stores; kLanes: strip_lanes_store at d <= 8,
// its values from the previous lane where kShuffle, else strip_store at
// d <= 4): λ2 unranks strip ω (mapping::StripLayout; one thread a block,
// handed over through shared memory), the boxes take column chunk x of band
// y, and on pairs a box's blocks left of the diagonal chunk leave at once.
template <typename T, typename M, int D, typename Map, bool kLanes,
          bool kShuffle = BlockPolicy::lane_shuffles(D)>
__global__ void __launch_bounds__(BlockPolicy::kThreads, kLanes ? BlockPolicy::kLaneMinBlocks
                                                                : BlockPolicy::kStripMinBlocks)
    strip_kernel(const KernelParams<T> p) {
  using S = detail::StripSharedOf<T, M, D, kLanes>;
  extern __shared__ __align__(16) unsigned char strip_smem[];
  S& sh = *reinterpret_cast<S*>(strip_smem);
  constexpr index_t kW = S::kW;
  const mapping::Grid& g = p.strip_grid;
  const auto store = [&](index_t i0, index_t j0) {  // ends with a barrier
    if constexpr (kLanes)
      detail::strip_lanes_store<T, M, D, Map, kShuffle>(p, i0, j0, sh);
    else
      detail::strip_store<T, M, D, Map>(p, i0, j0, sh);
  };
  if constexpr (Map::kOneDimensional) {
    for (index_t bx = blockIdx.x; bx < g.x; bx += gridDim.x) {
      if (threadIdx.x == 0) sh.strip = p.strip_layout.unrank(g.base + bx);
      __syncthreads();
      const mapping::Strip s = sh.strip;
      store(s.row, s.col);
    }
  } else {
    for (index_t by = blockIdx.y; by < g.y; by += gridDim.y) {
      const index_t i0 = g.base + by * p.strip_layout.h;
      for (index_t bx = blockIdx.x; bx < g.x; bx += gridDim.x) {
        if (detail::is_pairs<Map> && bx < i0 / kW) continue;  // left of the diagonal chunk
        store(i0, bx * kW);
      }
    }
  }
}

// Runs work(device) when the calling thread's current device is not *seen
// (the device it last ran for), then records it: launch settings that are
// the same for every launch of a kernel on a device, worked out once a
// device (a thread keeps to one device at a time). *seen is the caller's
// thread_local, one per kernel instantiation.
template <typename F>
void once_per_device(int* seen, F&& work) {
  int dev = -1;
  if (cudaGetDevice(&dev) != cudaSuccess) cudaGetLastError();
  if (dev != *seen) {
    work(dev);
    *seen = dev;
  }
}

template <typename T, typename M, int D, typename Map, bool kLanes,
          bool kShuffle = BlockPolicy::lane_shuffles(D)>
void launch_strips(const KernelParams<T>& p, cudaStream_t stream) {
  using S = detail::StripSharedOf<T, M, D, kLanes>;
  const mapping::Grid& g = p.strip_grid;
  if (g.blocks() == 0) return;
  constexpr size_t kBytes = sizeof(S);  // past 48 KiB: opt in
  thread_local int opted_device = -1;
  once_per_device(&opted_device, [](int) {
    // A failure here shows as the launch's error.
    cudaFuncSetAttribute(strip_kernel<T, M, D, Map, kLanes, kShuffle>,
                         cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kBytes));
  });
  const dim3 grid(static_cast<unsigned>(g.x < 0x7fffffff ? g.x : 0x7fffffff),
                  static_cast<unsigned>(g.y < 65535 ? g.y : 65535));
  strip_kernel<T, M, D, Map, kLanes, kShuffle><<<grid, BlockPolicy::kThreads, kBytes, stream>>>(p);
}

template <typename T, typename M, int D, typename Map, typename E, bool kPeriodic>
void launch_kernel(const KernelParams<T>& p, cudaStream_t stream) {
  if (p.grid.blocks() == 0) return;
  // Stores and selections: a block per tile (up to the grid limits).
  // Histograms: a fixed number of blocks striding over the tiles, so that
  // each merges its counts into global memory once, not once per tile.
  constexpr bool kFixed = epi::traits<E>::kFixedGrid;
  const index_t max_x = kFixed ? BlockPolicy::kHistBlocks : 0x7fffffff;
  const index_t x = p.grid.x < max_x ? p.grid.x : max_x;
  const index_t max_y =
      kFixed ? (BlockPolicy::kHistBlocks / x > 0 ? BlockPolicy::kHistBlocks / x : 1) : 65535;
  const dim3 grid(static_cast<unsigned>(x),
                  static_cast<unsigned>(p.grid.y < max_y ? p.grid.y : max_y));
  size_t smem = 0;
  // A histogram's shared copies come on top of the strips: past 48 KiB
  // together a kernel must opt in (the general path's wide strips take 34).
  if constexpr (std::is_same_v<E, epi::Histogram>) {
    smem = p.hist_copies * p.hist_stride * sizeof(unsigned int);
    if (smem > 0)
      cudaFuncSetAttribute(block_kernel<T, M, D, Map, E, kPeriodic>,
                           cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  }
  block_kernel<T, M, D, Map, E, kPeriodic><<<grid, BlockPolicy::kThreads, smem, stream>>>(p);
}

// The kernel of p.plan for metric M: the strips or lanes of a store at
// d <= 8, tiles with d in registers for histograms and selections, or the
// general path. Only what the plan can choose is instantiated: no tiles for
// stores at d <= 8, no strip_store past d = 2, no periodic box for a metric
// without one, overlaps only for euclidean float64 points in 1-D or 3-D.
template <typename T, typename M, typename Map, typename E, bool kPeriodic>
void launch_metric(const KernelParams<T>& p, cudaStream_t stream) {
  constexpr bool kSmallD = metric::traits<M>::small_d;
  constexpr bool kStore = std::is_same_v<E, epi::Store>;
  if constexpr (kPeriodic && !metric::traits<M>::box) {
    throw std::logic_error("no periodic box with this metric");
  } else if constexpr (std::is_same_v<E, epi::Select<epi::Overlap>>) {
    if constexpr (!std::is_same_v<M, metric::Euclidean<double>>) {
      throw std::logic_error("overlaps are euclidean, in float64");
    } else {
      if (p.plan.schedule == Schedule::tiles && p.plan.d == 1)
        return launch_kernel<T, M, 1, Map, E, kPeriodic>(p, stream);
      if (p.plan.schedule == Schedule::tiles && p.plan.d == 3)
        return launch_kernel<T, M, 3, Map, E, kPeriodic>(p, stream);
      throw std::logic_error("overlaps are of spheres in 1-D or 3-D");
    }
  } else {
    const KernelPlan& k = p.plan;
    if (k.schedule == Schedule::general || !kSmallD) {
      if constexpr (kSmallD) {
        if (k.wide) return launch_kernel<T, M, detail::kGeneralWide, Map, E, kPeriodic>(p, stream);
      }
      return launch_kernel<T, M, 0, Map, E, kPeriodic>(p, stream);
    }
    if constexpr (kSmallD) {
      switch (k.d) {
#define TDS_CASE(D)                                                                               \
  case D:                                                                                         \
    if constexpr (kStore) {                                                                       \
      if constexpr (D <= BlockPolicy::kStripMaxD) {                                               \
        if (k.schedule == Schedule::strips) return launch_strips<T, M, D, Map, false>(p, stream); \
      }                                                                                           \
      return launch_strips<T, M, D, Map, true>(p, stream);                                        \
    } else {                                                                                      \
      return launch_kernel<T, M, D, Map, E, kPeriodic>(p, stream);                                \
    }
        TDS_CASE(1)
        TDS_CASE(2)
        TDS_CASE(3)
        TDS_CASE(4)
        TDS_CASE(5)
        TDS_CASE(6)
        TDS_CASE(7)
        TDS_CASE(8)
#undef TDS_CASE
        default:
          break;
      }
    }
    throw std::logic_error("no kernel for plan " + k.describe());
  }
}

}  // namespace tdsolve::cuda
