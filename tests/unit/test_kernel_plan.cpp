// The host plan that picks a pair kernel on a GPU (solver/cuda/kernel_plan.hpp),
// checked without a GPU: the choice for every d, epilogue and kind of
// memory, and the test hooks' refusals.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "solver/cuda/kernel_plan.hpp"

using namespace tdsolve;
using namespace tdsolve::cuda;

namespace {
KernelPlan choose(index_t d, EpilogueKind e, bool fast, int bytes = 4, bool small = true) {
  PlanRequest r;
  r.d = d;
  r.value_bytes = bytes;
  r.small_d_metric = small;
  r.epilogue = e;
  return plan_pair_kernel(DeviceTraits{fast}, r);
}
}  // namespace

TEST(KernelPlan, StoresAtSmallDRunStripsOrLanes) {
  // d <= 2 where memory is not fast (the H100): strip_store; else lanes.
  for (int d = 1; d <= 8; ++d)
    for (bool fast : {false, true}) {
      const KernelPlan k = choose(d, EpilogueKind::store, fast);
      EXPECT_EQ(k.d, d);
      EXPECT_EQ(k.schedule, d <= 2 && !fast ? Schedule::strips : Schedule::lanes) << d << fast;
      EXPECT_EQ(k.shuffle, k.schedule == Schedule::lanes && d > 6);
      EXPECT_EQ(k.strip_rows,
                k.schedule == Schedule::strips ? plan::strip_rows(d) : plan::lane_rows(d, fast));
      EXPECT_TRUE(k.strip_rows % 8 == 0 && 128 % k.strip_rows == 0) << k.describe();
    }
  EXPECT_EQ(choose(3, EpilogueKind::store, false).describe(), "lanes d=3 h=16");
  EXPECT_EQ(choose(8, EpilogueKind::store, true).describe(), "lanes d=8 h=64 shuffle");
  EXPECT_EQ(choose(1, EpilogueKind::store, false).describe(), "strips d=1 h=16");
}

TEST(KernelPlan, BinningAndSelectingRunTilesThenTheGeneralPath) {
  for (EpilogueKind e : {EpilogueKind::histogram, EpilogueKind::select})
    for (int d = 1; d <= 8; ++d) {
      const KernelPlan k = choose(d, e, d % 2 == 0);
      EXPECT_EQ(k.schedule, Schedule::tiles);
      EXPECT_EQ(k.d, d);
    }
  EXPECT_EQ(choose(9, EpilogueKind::histogram, false).schedule, Schedule::general);
}

TEST(KernelPlan, GeneralPathStagesByBytes) {
  // 64-byte stages while a point fits, 128 beyond; the newer metrics narrow.
  EXPECT_FALSE(choose(16, EpilogueKind::store, false, 4).wide);
  EXPECT_TRUE(choose(17, EpilogueKind::store, false, 4).wide);
  EXPECT_FALSE(choose(8, EpilogueKind::store, false, 8, false).wide);
  EXPECT_TRUE(choose(9, EpilogueKind::store, false, 8).wide);
  EXPECT_FALSE(choose(100, EpilogueKind::store, false, 8, false).wide);
  // Newer metrics run the general path at every d.
  EXPECT_EQ(choose(2, EpilogueKind::store, true, 4, false).schedule, Schedule::general);
  EXPECT_EQ(choose(2, EpilogueKind::select, true, 4, false).schedule, Schedule::general);
}

TEST(KernelPlan, ForcedSchedulesOnlyWhereTheKernelExists) {
  PlanRequest r;
  r.epilogue = EpilogueKind::store;
  r.force = true;
  r.forced = Schedule::lanes;
  r.d = 2;
  EXPECT_EQ(plan_pair_kernel(DeviceTraits{false}, r).schedule, Schedule::lanes);
  r.forced = Schedule::strips;
  EXPECT_EQ(plan_pair_kernel(DeviceTraits{true}, r).schedule, Schedule::strips);
  r.d = 3;
  EXPECT_THROW(plan_pair_kernel(DeviceTraits{false}, r), UsageError);
  r.d = 20;
  r.forced = Schedule::lanes;
  EXPECT_THROW(plan_pair_kernel(DeviceTraits{false}, r), UsageError);
  r.d = 4;
  r.forced = Schedule::tiles;
  EXPECT_THROW(plan_pair_kernel(DeviceTraits{false}, r), UsageError);
  r.forced = Schedule::lanes;
  r.epilogue = EpilogueKind::histogram;
  EXPECT_THROW(plan_pair_kernel(DeviceTraits{false}, r), UsageError);
  // Forced rows.
  PlanRequest q;
  q.d = 5;
  q.forced_rows = 128;
  EXPECT_EQ(plan_pair_kernel(DeviceTraits{true}, q).strip_rows, 128);
}
