#include "solver/cuda/kernel_plan.hpp"

#include "core/error.hpp"

namespace tdsolve::cuda {

const char* schedule_name(Schedule s) {
  switch (s) {
    case Schedule::strips:
      return "strips";
    case Schedule::lanes:
      return "lanes";
    case Schedule::tiles:
      return "tiles";
    case Schedule::general:
      return "general";
  }
  return "?";
}

std::string KernelPlan::describe() const {
  std::string s = schedule_name(schedule);
  if (schedule == Schedule::general) return s + (wide ? " wide" : " narrow");
  s += " d=" + std::to_string(d);
  if (schedule == Schedule::strips || schedule == Schedule::lanes)
    s += " h=" + std::to_string(strip_rows);
  if (shuffle) s += " shuffle";
  return s;
}

KernelPlan plan_pair_kernel(const DeviceTraits& device, const PlanRequest& r) {
  KernelPlan k;
  const bool small = r.small_d_metric && r.d >= 1 && r.d <= plan::kMaxSmallD;
  const int d = small ? static_cast<int>(r.d) : 0;
  const bool store = r.epilogue == EpilogueKind::store;
  if (r.force && !store)
    throw UsageError("a forced store schedule applies to stores only (edm, cross)");
  if (!small) {
    if (r.force)
      throw UsageError(std::string("no ") + schedule_name(r.forced) + " kernel for d = " +
                       std::to_string(r.d) + (r.small_d_metric ? "" : " with this metric") +
                       " (strips: d <= 2, lanes: d <= 8, the older metrics)");
    k.schedule = Schedule::general;
    // The newer metrics run the narrow stages only (fewer kernels).
    k.wide = r.small_d_metric && r.d * r.value_bytes > plan::kNarrowStageBytes;
    return k;
  }
  k.d = d;
  if (!store) {
    k.schedule = Schedule::tiles;
    return k;
  }
  Schedule s = (d <= plan::kStripMaxD && !device.fast_memory) ? Schedule::strips : Schedule::lanes;
  if (r.force) {
    if (r.forced == Schedule::strips && d > plan::kStripMaxD)
      throw UsageError("no strips kernel for d = " + std::to_string(d) +
                       " (strips: d <= " + std::to_string(plan::kStripMaxD) + "; lanes: d <= 8)");
    if (r.forced != Schedule::strips && r.forced != Schedule::lanes)
      throw UsageError(std::string("stores at d <= 8 run strips or lanes, not ") +
                       schedule_name(r.forced));
    s = r.forced;
  }
  k.schedule = s;
  k.strip_rows =
      s == Schedule::strips ? plan::strip_rows(d) : plan::lane_rows(d, device.fast_memory);
  if (r.forced_rows > 0) k.strip_rows = r.forced_rows;
  k.shuffle = s == Schedule::lanes && plan::lane_shuffles(d);
  return k;
}

}  // namespace tdsolve::cuda
