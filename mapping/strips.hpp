// Strips: the store schedule of the small-d kernels (solver/cuda).
//
// A strip is H consecutive rows × W consecutive columns (H divides 128, so
// every chunk's first row is a band boundary; W is a multiple of H). A block
// takes one strip, so each of its rows leaves as one piece of W values: the
// packed output then receives a few long runs where ρ×ρ tiles gave 128-value
// runs in 128 rows (docs/performance.md measures why that matters).
//
// Pairs (i < j): band b holds rows [bH, bH + H); column chunk c holds
// columns [cW, cW + W). Every band of super-row s = ⌊bH / W⌋ has the chunks
// c = s .. mc-1 (mc = ⌈n/W⌉; chunk s is the diagonal one, empty only for a
// band holding nothing but the last row), so the
// strips in the order band by band, left to right, are λ2's block triangle
// of W×W super-tiles with each super-tile's row cut into K = W/H bands:
//     strips before band b:  S(b) = K (T(mc) - T(mc - s)) + (b - K s)(mc - s)
// and strip ω unranks through λ2's exact triangular root of ⌊ω/K⌋ and one
// integer division (StripLayout::unrank; unit-tested against enumeration).
//
// The bounding box of the strips is (mc × bands) blocks; blocks left of the
// diagonal chunk leave at once. Rectangles use the same box, all of it.
#pragma once

#include "mapping/lambda2.hpp"

namespace tdsolve::mapping {

struct Strip {
  index_t row, col;  // first row and first column
};

struct StripLayout {
  index_t cols = 0;  // n for pairs (columns = rows), K for rectangles
  index_t h = 1, w = 1, k = 1, mc = 0;

  StripLayout() = default;
  TDS_HD StripLayout(index_t cols_, index_t h_, index_t w_)
      : cols(cols_), h(h_), w(w_), k(w_ / h_), mc((cols_ + w_ - 1) / w_) {}

  // Pairs: strips in the bands that start before row r (r a multiple of h).
  TDS_HD index_t before(index_t r) const {
    index_t s = r / w;
    if (s > mc) s = mc;
    const index_t band = r / h - k * s;
    return k * (tri(mc) - tri(mc - s)) + (s < mc ? band * (mc - s) : 0);
  }
  // Pairs: strip ω (< before(bands × h)), band by band, left to right.
  TDS_HD Strip unrank(index_t omega) const {
    const index_t q = omega / k;
    const index_t s = lambda2_tile(mc, tri(mc) - 1 - q).row;  // super-row of q
    const index_t t = omega - k * (tri(mc) - tri(mc - s));
    const index_t len = mc - s;
    const index_t band = t / len;
    return Strip{s * w + band * h, (s + (t - band * len)) * w};
  }
};

}  // namespace tdsolve::mapping
