// The select epilogue's tests: which pairs of a chunk are kept (knn
// --radius: the distance is at most R; collide: the spheres overlap), decided
// inside the CPU tile loops and the CUDA kernels, so that only the pairs that
// pass leave them. Host and device; no I/O.
//
// A test sees a pair's accumulator and decides on it where that is exact, so
// that a rejected pair never pays for the metric's finalize (euclidean: a
// correctly rounded square root):
// - Within (value <= R): for a metric whose value is a non-decreasing
//   function of its accumulator alone (euclidean, sqeuclidean, cityblock,
//   chebyshev: KnnScreen), {acc : finalize(acc) <= R} is the interval
//   acc <= A*, A* the largest accumulator whose value is <= R, found on the
//   host with the same finalize (within_acc_max). acc <= A* is then exactly
//   value <= R. Other metrics finalize every pair and compare the value.
// - Overlap (euclidean in float64, value < r_i + r_j = s): with s² the
//   rounded square, acc < s²(1 − 1e-12) proves sqrt(acc) < s and acc >
//   s²(1 + 1e-12) proves sqrt(acc) > s, whatever the roundings (each is
//   within 2^-53 relative, far inside the 1e-12 margin); pairs between, and
//   any s whose square is not a normal double well away from underflow, take
//   the square root and compare as the definition says.
// Either way the kept pairs, and their values, are those of the test applied
// to the finalized value: the same pairs as the store path followed by a scan.
#pragma once

#include <cmath>
#include <limits>

#include "core/types.hpp"
#include "solver/knn.hpp"
#include "solver/metrics.hpp"

namespace tdsolve {

enum class SelectKind : int { within, overlap };

// The run-time parameters of a selection (a trivially copyable POD: it
// travels in KernelParams and CpuView).
struct SelectParams {
  SelectKind kind = SelectKind::within;
  double radius = 0;              // within: keep value <= radius (a value of the run's T)
  double acc_max = 0;             // within, monotone metrics: keep acc <= acc_max (the same pairs)
  const double* radii = nullptr;  // overlap: one radius a point (host or device memory)
};

namespace selection {

// Whether the metric M's value is a non-decreasing function of its
// accumulator alone, so that Within decides on the accumulator.
template <typename M>
constexpr bool kOnAccumulator = KnnScreen<M>::value;

// The largest accumulator whose value (m.finalize) is <= radius, for a
// metric with kOnAccumulator. radius is a value of T (not nan).
template <typename M, typename T>
double within_acc_max(const M& m, T radius) {
  using A = typename M::acc_t;
  const A inf = std::numeric_limits<A>::infinity();
  if (!(radius < std::numeric_limits<T>::infinity())) return static_cast<double>(inf);
  if (radius < T(0)) return -static_cast<double>(inf);  // no value is below 0
  // Start near the answer (R² or R), then step: values are non-decreasing
  // in the accumulator, so up while the next one still passes, down while
  // this one fails.
  A a = static_cast<A>(radius);
  if (!(m.finalize(static_cast<A>(radius), 0, 0) == radius)) {
    a = static_cast<A>(radius) * static_cast<A>(radius);
    if (!(a < inf)) a = std::numeric_limits<A>::max();
  }
  while (a > A(0) && !(m.finalize(a, 0, 0) <= radius))
    a = std::nextafter(a, A(0));
  while (a < std::numeric_limits<A>::max() && m.finalize(std::nextafter(a, inf), 0, 0) <= radius)
    a = std::nextafter(a, inf);
  if (!(m.finalize(a, 0, 0) <= radius)) return -static_cast<double>(inf);  // not even 0 passes
  return static_cast<double>(a);
}

// Within: value <= radius. Sets *value when the pair is kept.
template <typename T, typename M, typename A>
TDS_HD bool within(const SelectParams& sp, const M& m, A acc, double na, double nb, T* value) {
  if constexpr (kOnAccumulator<M>) {
    // acc_max is a value of A, so the comparison in A is exact.
    if (!(acc <= static_cast<A>(sp.acc_max))) return false;
    *value = m.finalize(acc, na, nb);
    return true;
  } else {
    *value = m.finalize(acc, na, nb);
    return static_cast<double>(*value) <= sp.radius;
  }
}

// Overlap of spheres i and j: the euclidean distance of the centres (the
// value of acc, a squared distance in float64) < r_i + r_j.
template <typename M>
TDS_HD bool overlap(const SelectParams& sp, const M& m, double acc, index_t i, index_t j,
                    double* value) {
  const double s = sp.radii[i] + sp.radii[j];
  const double s2 = s * s;
  if (s2 > 1e-280 && s2 < 1e300) {
    if (acc < s2 * (1 - 1e-12)) {
      *value = m.finalize(acc, 0, 0);
      return true;
    }
    if (acc > s2 * (1 + 1e-12)) return false;
  }
  *value = m.finalize(acc, 0, 0);
  return *value < s;
}

}  // namespace selection
}  // namespace tdsolve
