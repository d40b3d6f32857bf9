// What the host and the pair kernels share: the launch policy, the epilogue
// tags, the parameters of a launch and the launcher's declaration. No kernel
// is defined here: the launchers are instantiated in the generated files
// (kernels.cu.in), so a file that includes only this header (the backend)
// cannot instantiate a kernel by accident.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "mapping/block_map.hpp"
#include "mapping/strips.hpp"
#include "solver/cuda/kernel_plan.hpp"
#include "solver/epi.hpp"
#include "solver/epilogue.hpp"
#include "solver/metrics.hpp"
#include "solver/problem.hpp"
#include "solver/select.hpp"

namespace tdsolve::cuda {

// Build-time overrides exist only to time variants against each other.
#ifndef TDS_EDM_MIN_BLOCKS_SMALL  // d <= 4
#define TDS_EDM_MIN_BLOCKS_SMALL 2
#endif
#ifndef TDS_EDM_MIN_BLOCKS
#define TDS_EDM_MIN_BLOCKS 3
#endif
#ifndef TDS_EDM_MIN_BLOCKS_GENERAL  // d > 8, the older metrics, 32-bit accumulators
#define TDS_EDM_MIN_BLOCKS_GENERAL 3
#endif

#ifndef TDS_HIST_MIN_BLOCKS
#define TDS_HIST_MIN_BLOCKS 4
#endif

// Strips (the store schedule of d <= 4): bytes of a row a block.
#ifndef TDS_STRIP_BYTES
#define TDS_STRIP_BYTES 4096
#endif
#ifndef TDS_STRIP_MIN_BLOCKS
#define TDS_STRIP_MIN_BLOCKS 3
#endif

#ifndef TDS_EDM_ROW_UNROLL
#define TDS_EDM_ROW_UNROLL 2
#endif

// Launch shape: tuning lives here, not in literals at the launch sites.
struct BlockPolicy {
  static constexpr int kTile = 128;                    // sub-tile side
  static constexpr int kThreads = 256;                 // per block
  static constexpr int kWarps = kThreads / 32;         // 8
  static constexpr int kCols = kTile / 32;             // columns per lane: 4, 32 apart
  static constexpr int kRowsPerWarp = kTile / kWarps;  // 16
  static constexpr int kMaxSmallD = plan::kMaxSmallD;  // d handled with points in registers
  static constexpr int kPad = 4;                       // column-strip padding (elements)
  // Histogram slots a block keeps in shared memory (24 KiB); more bins count
  // in global memory directly.
  static constexpr int kSharedHistSlots = 6144;
  // Blocks of a histogram launch (they stride over the tiles): a few waves of
  // an H100/H200 at 4 blocks per SM.
  static constexpr index_t kHistBlocks = 2048;
  // Blocks per SM the register allocator must leave room for. Uncapped, the
  // small-d kernels unroll into 110-128 registers (2 blocks, 16 warps per
  // SM). On an H100, capping d = 5..8 at 3 blocks took d = 8 from 65 % to
  // 72 % of the write ceiling; for d <= 4 caps of 1, 2 or 3 measured the same
  // (docs/performance.md). The general path (d <= 0 here) of the older
  // metrics: 3 blocks (80 registers) with 32-bit accumulators, which took
  // d = 16 and 32 from 18.3 and 27.5 ms to 11.3 and 18.0 (H100, n = 1e5),
  // and 2 for float64 points (their 32 accumulators take 64 registers).
  // float32 points with float64 accumulators (cosine) and the newer
  // metrics' longer per-feature code keep the whole register file: capped,
  // they spill.
  static constexpr int min_blocks(int d, bool older, int acc_bytes, int point_bytes) {
    if (d <= 0) {
      if (!older) return 1;
      return acc_bytes == 4 ? TDS_EDM_MIN_BLOCKS_GENERAL : (point_bytes == 8 ? 2 : 1);
    }
    return d <= 4 ? TDS_EDM_MIN_BLOCKS_SMALL : TDS_EDM_MIN_BLOCKS;
  }
  // Binning and selecting write (almost) nothing to memory: they are bound
  // by instructions and their latency, so they ask for more resident warps
  // than the stores need.
  static constexpr int min_blocks_compute(int d, bool older, int acc_bytes, int point_bytes) {
    return d <= 0 ? min_blocks(d, older, acc_bytes, point_bytes) : TDS_HIST_MIN_BLOCKS;
  }
  static constexpr int kNarrowStageBytes = plan::kNarrowStageBytes;
  static constexpr int kWideStageBytes = plan::kWideStageBytes;
  static constexpr int kRowUnroll = TDS_EDM_ROW_UNROLL;  // rows in flight per warp (small d)
  // The strip schedules (mapping/strips.hpp; which runs where: kernel_plan.hpp):
  // a block takes h rows × 4 KiB of each (1024 floats or 512 doubles) and
  // writes them with 16-byte stores. Against ρ×ρ tiles (128-value pieces of
  // 128 rows, 4-byte stores) a pure store kernel of d = 1 went from 73 to
  // 93-97 % of cudaMemset on the H100 (n = 1e5; tiles of 128 columns with
  // the same staging: 53 %): the long pieces and the wide stores need each
  // other.
  static constexpr int kStripMaxD = plan::kStripMaxD;
  static constexpr int kStripBytes = TDS_STRIP_BYTES;
  static constexpr int kStripMinBlocks = TDS_STRIP_MIN_BLOCKS;
  // lanes: 64 registers for 4 blocks an SM (more spilled and ran slower).
  static constexpr int kLaneMinBlocks = 4;
  static constexpr int kLaneMaxD = plan::kLaneMaxD;
  static constexpr bool lane_shuffles(int d) { return plan::lane_shuffles(d); }
  template <typename T>
  static constexpr int strip_cols() {
    return kStripBytes / static_cast<int>(sizeof(T));
  }
};

// The epilogues are types (solver/epi.hpp); the pair kernels' per-value
// work for each is its detail::Epilogue specialisation (block_kernels.cuh).

template <typename T>
struct KernelParams {
  const T* __restrict__ a;             // row points, rows × d
  const T* __restrict__ b;             // column points, cols × d (= a for pairs)
  const double* __restrict__ norms_a;  // metrics that need them
  const double* __restrict__ norms_b;
  index_t rows, cols, d, rho;
  index_t m, mc;       // block rows and columns (no 64-bit division per block)
  mapping::Grid grid;  // the chunk's launch grid (Map::grid)
  // A culled domain's tile list on the device (mapping::PairDomain::tiles);
  // null: dense.
  const std::uint32_t* tiles;
  // store: element e of the domain at out[e - out_offset]
  T* __restrict__ out;
  index_t out_offset;
  // histogram: counts[0 .. bins+1] = underflow, bins, overflow
  unsigned long long* __restrict__ counts;
  const double* __restrict__ edges;
  index_t bins;
  double lo, hi, norm, margin;
  epilogue::HistFast32 fast32;  // float32 runs
  index_t flush_tiles;          // tiles a block counts before it merges (32-bit slots)
  unsigned int hist_copies;     // histograms in shared memory: 1, 2, 4, 8 (one a warp), 0 (global)
  unsigned int hist_stride;     // slots of one copy: (bins + 2) × histograms
  // Partial histograms (HistGroups, device memory; groups 0: none): pair
  // (i, j) in row table[type[i] * types + type[j]] of bins + 2 slots (none
  // where -1), not counted where molecule[i] == molecule[j].
  index_t groups;
  int types;
  const std::int32_t* __restrict__ type;
  const std::int32_t* __restrict__ table;
  const std::int32_t* __restrict__ molecule;
  // select: the pairs that pass, (e - out_offset, value) at index
  // atomicAdd(sel_count) of sel_keys / sel_values while below sel_capacity
  // (the count goes on, so the backend knows how much room to make).
  SelectParams select;
  unsigned long long* __restrict__ sel_count;
  unsigned long long* __restrict__ sel_keys;
  T* __restrict__ sel_values;
  unsigned long long sel_capacity;
  T box[kMaxBoxDims];
  bool triclinic;  // d = 3: box[0..2] and tilt (epilogue::triclinic_image)
  T tilt[3];
  MetricParams mp;   // the metric and its parameters (mp.weights: device memory)
  bool masked_only;  // test hook: every sub-tile on the masked path
  KernelPlan plan;   // the kernel to run (kernel_plan.hpp)
  // Stores in strips (mapping/strips.hpp): the layout, the launch grid
  // (λ2: x strips from strip `base`; boxes: x column chunks × y bands from
  // row `base`).
  mapping::StripLayout strip_layout;
  mapping::Grid strip_grid;
};

// Host launcher of the kernel of p.plan for metric M, instantiated per
// metric × precision × epilogue in generated files (kernels.cu.in); the
// backend picks M (cuda_backend.cu, launch_family).
template <typename T, typename M, typename Map, typename E, bool kPeriodic>
void launch_metric(const KernelParams<T>& p, cudaStream_t stream);

}  // namespace tdsolve::cuda
