// Which pair kernel a problem runs on a GPU: one host-only function of the
// device's properties, d, the metric, the precision and the epilogue. It has
// no CUDA types, so it is unit-tested on machines without a GPU
// (tests/unit/test_kernel_plan.cpp); the launchers (block_kernels.cuh)
// dispatch on what it returns and instantiate nothing else, so every pair
// kernel the build compiles is one this plan can choose.
//
// The figures behind each choice are in docs/performance.md (H100 and H200,
// n = 1e5, float32 unless said).
#pragma once

#include <string>

#include "core/types.hpp"
#include "solver/problem.hpp"

namespace tdsolve::cuda {

enum class Schedule {
  strips,  // stores, d <= 2: a warp a row piece through shared memory (strip_store)
  lanes,   // stores, d <= 8: a thread a 16-byte piece of every row (strip_lanes_store)
  tiles,   // histograms and selections, d <= 8: 128×128 sub-tiles, column points in registers
  general  // any d: sub-tiles with features staged in shared memory (narrow or wide stages)
};
const char* schedule_name(Schedule s);

// What the plan needs to know of the device.
struct DeviceTraits {
  // Memory clock × bus width at least 4 TB/s (the H200's 4.8, not the
  // H100's 3.35): the d <= 8 choices below were measured on both sides.
  bool fast_memory = false;
};

// The tuning of the strip schedules, with the measurements behind it.
namespace plan {
constexpr int kMaxSmallD = 8;  // d with the points in registers (compile-time d)
// strip_store writes d = 1 6 % and d = 2 2 % faster than lanes where memory
// is not fast (the H100); lanes win everywhere else, so strip_store exists
// only for d <= 2.
constexpr int kStripMaxD = 2;
constexpr int kLaneMaxD = 8;
// Rows of a strip (a multiple of 8 dividing 128): more rows share one
// staging of the strip's columns, fewer keep the rows written at once
// closer together. strip_store: 16 (H100, λ2, 16 / 32 / 64 rows: d = 1
// 6.41 / 6.75 / 7.16 ms, d = 2 6.57 / 6.68 / 6.95). lanes: the H200 ran
// d = 1..8 fastest with 16, 16, 32, then 64 rows, the H100 with 16, 16, 16,
// 32, 16, 32, 64, 64 (d = 4 with 16 rows took 7.1-7.9 ms on the H200
// against 5.7-5.9 with 64).
constexpr int strip_rows(int /*d*/) {
  return 16;
}
constexpr int lane_rows(int d, bool fast_memory) {
  if (d <= 2) return 16;
  if (fast_memory) return d == 3 ? 32 : 64;
  return d == 3 || d == 5 ? 16 : (d == 4 || d == 6 ? 32 : 64);
}
// Past d = 6 the 7 column points a lane keeps (3 for doubles) spill at 64
// registers, so at d = 7, 8 a lane keeps only its own and takes a row's
// first values from the previous lane by shuffle. λ2, H100 (H200): d = 7
// 7.56 (7.56) ms against 7.83 (7.60), d = 8 7.93 (8.16) against 8.65
// (8.31); at d = 5, 6 the shuffles were 2-5 % slower.
constexpr bool lane_shuffles(int d) {
  return d > 6;
}
// The general path's feature stages: 64 bytes of each point while d fits,
// 128 bytes beyond (d = 16 measured 7 % faster with the narrow stage,
// d = 32 10 % faster with the wide one; H100).
constexpr int kNarrowStageBytes = 64;
constexpr int kWideStageBytes = 128;
}  // namespace plan

struct PlanRequest {
  index_t d = 0;
  int value_bytes = 4;         // sizeof(T)
  bool small_d_metric = true;  // metric::traits<M>::small_d
  EpilogueKind epilogue = EpilogueKind::store;
  // Test hooks (solver/knobs.hpp): a store schedule to force (strips at
  // d <= 2 or lanes, where both exist) and the rows of a strip (8, 16, 32,
  // 64 or 128); 0: the plan's own.
  int forced_rows = 0;
  bool force = false;
  Schedule forced = Schedule::lanes;
};

struct KernelPlan {
  Schedule schedule = Schedule::general;
  int d = 0;                     // strips, lanes, tiles: the compile-time d (1..8)
  bool wide = false;             // general: 128-byte feature stages
  int strip_rows = 0;            // strips, lanes
  bool shuffle = false;          // lanes at d = 7, 8
  std::string describe() const;  // "lanes d=3 h=32", for logs and tests
};

// The kernel for pairs or rectangles (stores, histograms, selections; not
// knn --k or triplets, which have kernels of their own). UsageError when a
// forced schedule does not exist for this problem.
KernelPlan plan_pair_kernel(const DeviceTraits& device, const PlanRequest& request);

}  // namespace tdsolve::cuda
