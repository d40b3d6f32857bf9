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

namespace tdsolve {

class ExactSum {
 public:
  static constexpr int kLimbBits = 32;
  // 2^-1074 .. 2^1024, 53 mantissa bits, and room for carries above.
  static constexpr int kLimbs = (1074 + 1024 + 64) / kLimbBits + 2;

  ExactSum() { std::memset(limb_, 0, sizeof limb_); }

  // Adds a finite double (NaN and infinities are the caller's to refuse).
  void add(double v) {
    if (v == 0) return;
    int e = 0;
    const double m = std::frexp(v, &e);  // v = m 2^e, 0.5 <= |m| < 1
    const std::int64_t mant = static_cast<std::int64_t>(std::ldexp(m, 53));  // exact
    int exp2 = e - 53;                                                       // v = mant 2^exp2
    std::int64_t mag = mant < 0 ? -mant : mant;
    // Subnormals: frexp normalises them; shift the extra zero bits out.
    while (exp2 < -1074) {
      mag >>= 1;  // only zero bits leave (v is a multiple of 2^-1074)
      ++exp2;
    }
    const int offset = exp2 + 1074;
    const int at = offset / kLimbBits, shift = offset % kLimbBits;
    const unsigned __int128 u = static_cast<unsigned __int128>(mag) << shift;
    const std::int64_t sign = mant < 0 ? -1 : 1;
    for (int k = 0; k < 3; ++k) {
      const std::uint64_t piece = static_cast<std::uint64_t>(u >> (kLimbBits * k)) & 0xffffffffu;
      limb_[at + k] += sign * static_cast<std::int64_t>(piece);
    }
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
    for (int i = 0; i + 1 < kLimbs; ++i) {
      const std::int64_t carry = limb_[i] >> kLimbBits;  // floor division (arithmetic shift)
      limb_[i] -= carry * (std::int64_t(1) << kLimbBits);
      limb_[i + 1] += carry;
    }
    pending_ = 0;
  }

  // The sum as a double: the magnitude's canonical limbs added from the top
  // in double (each limb exact), so equal sums give equal bits.
  double value() const {
    ExactSum a = *this;
    a.normalise();
    bool negative = a.limb_[kLimbs - 1] < 0;
    if (negative) {
      for (int i = 0; i < kLimbs; ++i)
        a.limb_[i] = -a.limb_[i];
      a.normalise();
    }
    double s = 0;
    int used = 0;
    for (int i = kLimbs - 1; i >= 0 && used < 4; --i) {
      if (a.limb_[i] == 0 && used == 0) continue;
      s += std::ldexp(static_cast<double>(a.limb_[i]), kLimbBits * i - 1074);
      ++used;
    }
    return negative ? -s : s;
  }

  // The limbs, for an MPI_SUM (normalise first) or a test.
  std::int64_t* limbs() { return limb_; }
  const std::int64_t* limbs() const { return limb_; }

 private:
  std::int64_t limb_[kLimbs];
  std::uint32_t pending_ = 0;  // additions since the last normalise()
};

}  // namespace tdsolve
