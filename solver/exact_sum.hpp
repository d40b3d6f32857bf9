// An exact accumulator for doubles: the sum of any multiset of finite
// doubles, independent of the order they come in, so reductions give the
// same bits on any rank count, chunk size or thread schedule (issue 12's
// energies, per-point energies and forces).
//
// Every finite double is an integer multiple of 2^-1074 below 2^1024, so the
// exact sum is a (long) integer in units of 2^-1074. It is kept in 32-bit
// limbs held in int64 words: limb i weighs 2^(32 i - 1074). Adding a double
// adds its 53-bit mantissa, shifted into place, to at most three limbs; the
// 31 spare bits of each word absorb 2^30 additions before carries must be
// propagated (normalise). Two accumulators add limb by limb — also as an
// MPI_SUM over int64 arrays of normalised limbs, for up to 2^30 ranks. The
// result is read out once, rounded deterministically (from the canonical
// limbs), within a few ulps of the exact sum.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/types.hpp"

namespace tdsolve {

constexpr int kExactLimbBits = 32;
// 2^-1074 .. 2^1024, 53 mantissa bits, and room for carries above.
constexpr int kExactLimbs = (1074 + 1024 + 64) / kExactLimbBits + 2;

// Where a finite double lands in the limbs: its magnitude in units of
// 2^-1074 is (pieces[2] pieces[1] pieces[0]) << 32·at, in 32-bit pieces.
// Read from the bits (host and device alike, no __int128).
struct ExactPieces {
  int at;
  bool negative;
  std::uint32_t piece[3];
};

TDS_HD ExactPieces exact_pieces(double v) {
  std::uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  const int e = static_cast<int>((bits >> 52) & 0x7ff);
  std::uint64_t mag = bits & ((std::uint64_t(1) << 52) - 1);
  int offset = 0;  // exponent of the lowest mantissa bit, + 1074
  if (e != 0) {
    mag |= std::uint64_t(1) << 52;
    offset = e - 1;  // e - 1075 + 1074
  }
  ExactPieces p;
  p.negative = (bits >> 63) != 0;
  p.at = offset / kExactLimbBits;
  const int shift = offset % kExactLimbBits;
  const std::uint64_t lo = mag << shift;
  const std::uint64_t hi = shift ? mag >> (64 - shift) : 0;
  p.piece[0] = static_cast<std::uint32_t>(lo);
  p.piece[1] = static_cast<std::uint32_t>(lo >> 32);
  p.piece[2] = static_cast<std::uint32_t>(hi);
  return p;
}

// Adds a finite double to kExactLimbs limbs (not atomically). Each limb
// takes 2^30 additions before carries must be propagated.
TDS_HD void exact_add(std::int64_t* limbs, double v) {
  if (v == 0) return;
  const ExactPieces p = exact_pieces(v);
  for (int k = 0; k < 3; ++k) {
    const std::int64_t x = static_cast<std::int64_t>(p.piece[k]);
    limbs[p.at + k] += p.negative ? -x : x;
  }
}

// The same, safe against other threads adding to the same limbs (relaxed
// atomics: integer sums do not depend on the order).
inline void exact_add_atomic(std::int64_t* limbs, double v) {
  if (v == 0) return;
  const ExactPieces p = exact_pieces(v);
  for (int k = 0; k < 3; ++k) {
    if (p.piece[k] == 0) continue;
    const std::int64_t x = static_cast<std::int64_t>(p.piece[k]);
    __atomic_fetch_add(&limbs[p.at + k], p.negative ? -x : x, __ATOMIC_RELAXED);
  }
}

// Propagates carries: limbs 0..kExactLimbs-2 in [0, 2^32), the top one
// signed. The canonical form of the exact sum (what MPI reductions add).
TDS_HD void exact_normalise(std::int64_t* limbs) {
  for (int i = 0; i + 1 < kExactLimbs; ++i) {
    const std::int64_t carry = limbs[i] >> kExactLimbBits;  // floor division
    limbs[i] -= carry * (std::int64_t(1) << kExactLimbBits);
    limbs[i + 1] += carry;
  }
}

// The sum as a double, rounded the same way for equal sums.
inline double exact_value(const std::int64_t* limbs);

class ExactSum {
 public:
  static constexpr int kLimbBits = kExactLimbBits;
  static constexpr int kLimbs = kExactLimbs;

  ExactSum() { std::memset(limb_, 0, sizeof limb_); }

  // Adds a finite double (NaN and infinities are the caller's to refuse).
  void add(double v) {
    exact_add(limb_, v);
    if (++pending_ >= (1u << 30)) normalise();
  }

  void add(const ExactSum& o) {
    ExactSum b = o;
    b.normalise();
    normalise();
    for (int i = 0; i < kLimbs; ++i)
      limb_[i] += b.limb_[i];
    pending_ = 1;
  }

  // Carries propagated: limbs 0..kLimbs-2 in [0, 2^32), the top one signed.
  // The canonical form of the exact sum (what value() and MPI reductions use).
  void normalise() {
    exact_normalise(limb_);
    pending_ = 0;
  }

  // The sum as a double: the magnitude's canonical limbs added from the top
  // in double (each limb exact), so equal sums give equal bits.
  double value() const { return exact_value(limb_); }

  // The limbs, for an MPI_SUM (normalise first) or a test.
  std::int64_t* limbs() { return limb_; }
  const std::int64_t* limbs() const { return limb_; }

 private:
  std::int64_t limb_[kLimbs];
  std::uint32_t pending_ = 0;  // additions since the last normalise()
};

inline double exact_value(const std::int64_t* limbs) {
  std::int64_t a[kExactLimbs];
  std::memcpy(a, limbs, sizeof a);
  exact_normalise(a);
  const bool negative = a[kExactLimbs - 1] < 0;
  if (negative) {
    for (int i = 0; i < kExactLimbs; ++i)
      a[i] = -a[i];
    exact_normalise(a);
  }
  // The magnitude's canonical limbs added from the top (each limb exact).
  double s = 0;
  int used = 0;
  for (int i = kExactLimbs - 1; i >= 0 && used < 4; --i) {
    if (a[i] == 0 && used == 0) continue;
    s += std::ldexp(static_cast<double>(a[i]), kExactLimbBits * i - 1074);
    ++used;
  }
  return negative ? -s : s;
}

}  // namespace tdsolve
