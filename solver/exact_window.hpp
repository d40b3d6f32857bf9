// /progress/sums kept compactly (issue 29: (4n + 1) × 69 int64 was 2.2 GB
// at n = 10^6). The normalised limbs of every sum of a triplet run lie in a
// narrow window: below the lowest limb any added double reached they are
// zero, above the highest they only repeat the sign (0, or 2^32 − 1 and
// −1 at the top). The file keeps the window [first, first + width) of every
// row: limbs first .. first + width − 2 as they are (in [0, 2^32)), and the
// last one signed, standing for itself and every limb above it. Unpacked
// and normalised, a row is the sum's canonical limbs again, bit for bit.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/types.hpp"
#include "solver/exact_sum.hpp"

namespace tdsolve {

struct LimbWindow {
  int first = 0, width = kExactLimbs;
};

namespace exact_window_detail {

constexpr std::int64_t kAllOnes = (std::int64_t(1) << kExactLimbBits) - 1;

// The lowest nonzero limb of normalised limbs c (kExactLimbs of them), and
// the lowest index t with every limb above t the sign's repetition: c[t]
// then stands for itself and them, as c[t] − 2^32 when negative (below the
// top). {-1, -1} for a zero sum.
inline void extent(const std::int64_t* c, int* low, int* top) {
  *low = -1;
  for (int k = 0; k < kExactLimbs; ++k)
    if (c[k] != 0) {
      *low = k;
      break;
    }
  if (*low < 0) {
    *top = -1;
    return;
  }
  const bool negative = c[kExactLimbs - 1] < 0;
  const std::int64_t fill = negative ? kAllOnes : 0;
  int t = kExactLimbs - 1;
  if (c[t] == (negative ? -1 : 0)) {
    --t;
    while (t > 0 && c[t] == fill)
      --t;
  }
  *top = t;
}

}  // namespace exact_window_detail

// The narrowest window, at least `at_least` limbs wide, that holds every one
// of `slots` normalised sums (slots × kExactLimbs limbs).
inline LimbWindow limb_window(const std::int64_t* limbs, index_t slots, int at_least) {
  int lo = kExactLimbs, hi = 0;  // [lo, hi): every nonzero sum's limbs
  for (index_t s = 0; s < slots; ++s) {
    int low, top;
    exact_window_detail::extent(&limbs[s * kExactLimbs], &low, &top);
    if (low < 0) continue;
    lo = std::min(lo, low);
    hi = std::max(hi, top + 1);
  }
  if (hi == 0) lo = hi = 0;  // every sum zero
  LimbWindow w;
  w.width = std::min(kExactLimbs, std::max({hi - lo, at_least, 1}));
  w.first = std::min(lo, kExactLimbs - w.width);
  return w;
}

// slots × w.width values of normalised sums (slots × kExactLimbs) in w.
inline void pack_limbs(const std::int64_t* limbs, index_t slots, LimbWindow w, std::int64_t* out) {
  const int last = w.first + w.width - 1;
  for (index_t s = 0; s < slots; ++s) {
    const std::int64_t* c = &limbs[s * kExactLimbs];
    std::int64_t* o = &out[s * w.width];
    for (int j = 0; j + 1 < w.width; ++j)
      o[j] = c[w.first + j];
    const bool negative = c[kExactLimbs - 1] < 0;
    o[w.width - 1] = last == kExactLimbs - 1 || !negative
                         ? c[last]
                         : c[last] - (exact_window_detail::kAllOnes + 1);
  }
}

// The inverse: slots × kExactLimbs normalised limbs from slots × w.width
// values. False when a value other than a row's last is outside [0, 2^32)
// (a damaged file).
inline bool unpack_limbs(const std::int64_t* in, index_t slots, LimbWindow w, std::int64_t* limbs) {
  for (index_t s = 0; s < slots; ++s) {
    std::int64_t* c = &limbs[s * kExactLimbs];
    std::fill(c, c + kExactLimbs, 0);
    for (int j = 0; j < w.width; ++j) {
      const std::int64_t v = in[s * w.width + j];
      if (j + 1 < w.width && (v < 0 || v > exact_window_detail::kAllOnes)) return false;
      c[w.first + j] = v;
    }
    exact_normalise(c);
  }
  return true;
}

}  // namespace tdsolve
