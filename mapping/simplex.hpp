// Counts and element ranks of the pair and triplet domains.
//
// Packed order is the order of itertools.combinations(range(n), k). For k = 2
// that is SciPy's condensed distance vector: pair (i, j), i < j, sits at
//     p(i, j) = n*i - i*(i+1)/2 + (j - i - 1),
// and row i (all j > i) is the contiguous range [row_start(i), row_start(i+1)).
//
// Internally the maps enumerate the strict lower triangle in colex order:
// (a, b), b < a, at q = a*(a-1)/2 + b. Reversing the labels (a = n-1-i,
// b = n-1-j) reverses the order: p = C(n,2) - 1 - q. So a contiguous range of
// colex rows is a contiguous range of the packed output, read backwards.
#pragma once

#include <cmath>

#include "core/types.hpp"

namespace tdsolve::mapping {

// T(r) = r(r+1)/2, the r-th triangular number. Exact for r < 2^32.
TDS_HD constexpr index_t tri(index_t r) {
  return (r % 2 == 0) ? (r / 2) * (r + 1) : r * ((r + 1) / 2);
}

// C(n,2) = n(n-1)/2 without an intermediate overflow for n < 2^32.
TDS_HD constexpr index_t pair_count(index_t n) {
  return n < 2 ? 0 : tri(n - 1);
}

// C(n,3) = n(n-1)(n-2)/6, divided before multiplying so that the only
// overflow is the result's own (n < ~4.8e6 keeps it below 2^64).
TDS_HD constexpr index_t triplet_count(index_t n) {
  if (n < 3) return 0;
  index_t a = n, b = n - 1, c = n - 2;
  // One of three consecutive numbers is divisible by 3, one of the first two by 2.
  if (a % 3 == 0)
    a /= 3;
  else if (b % 3 == 0)
    b /= 3;
  else
    c /= 3;
  if (a % 2 == 0)
    a /= 2;
  else
    b /= 2;
  return a * b * c;
}

// Overflow-checked counts for validating user input (host only).
inline bool checked_pair_count(index_t n, index_t* out) {
  if (n < 2) {
    *out = 0;
    return true;
  }
  const index_t a = (n % 2 == 0) ? n / 2 : n, b = (n % 2 == 0) ? n - 1 : (n - 1) / 2;
  return !__builtin_mul_overflow(a, b, out);
}

// Packed rank of the first pair of row i: i*(2n - i - 1)/2.
TDS_HD constexpr index_t row_start(index_t n, index_t i) {
  return pair_count(n) - pair_count(n - i);
}

// Packed rank of pair (i, j), i < j < n.
TDS_HD constexpr index_t pair_rank(index_t n, index_t i, index_t j) {
  return row_start(n, i) + (j - i - 1);
}

// Largest r with T(r) <= w: r = floor((sqrt(8w+1) - 1)/2), exactly.
//
// A rounded square root is only an estimate: in float32 it is already wrong
// at w ~ 1.06e7 (T(r) near the float grid spacing), in float64 past ~2^50.
// The estimate is therefore followed by an integer correction that checks
// T(r) <= w < T(r+1) with exact 64-bit arithmetic. On the device the estimate
// is a float32 rsqrt while 8w+1 fits a float's mantissa range well enough to be
// off by at most one, float64 beyond; either way the loops below run at most
// a step or two. Exact for every w < 2^62 (T(r+1) stays below 2^64).
TDS_HD index_t tri_root_estimate(index_t w) {
#if defined(__CUDA_ARCH__)
  if (w < (index_t(1) << 24)) {
    const float x = 8.0f * static_cast<float>(w) + 1.0f;
    return static_cast<index_t>((x * rsqrtf(x) - 1.0f) * 0.5f);
  }
#endif
  return static_cast<index_t>((sqrt(8.0 * static_cast<double>(w) + 1.0) - 1.0) * 0.5);
}

TDS_HD index_t tri_root_correct(index_t w, index_t r) {
  while (r > 0 && tri(r) > w)
    --r;
  while (tri(r + 1) <= w)
    ++r;
  return r;
}

TDS_HD index_t tri_root(index_t w) {
  return tri_root_correct(w, tri_root_estimate(w));
}

struct Pair {
  index_t i, j;
};

// Inverse of pair_rank: the pair at packed rank p < C(n,2), via the colex
// reversal q = C(n,2) - 1 - p, a = tri_root(q) + 1, b = q - T(a-1).
TDS_HD Pair pair_unrank(index_t n, index_t p) {
  const index_t q = pair_count(n) - 1 - p;
  const index_t a = tri_root(q) + 1;
  const index_t b = q - tri(a - 1);
  return Pair{n - 1 - a, n - 1 - b};
}

}  // namespace tdsolve::mapping
