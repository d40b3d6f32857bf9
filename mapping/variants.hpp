// The map laboratory (issue 14): every block-space strategy of the papers for
// a triangular domain of m block rows, as a map type usable on host and device.
//
// The domain is the upper block triangle {(i, j) : i <= j < m} (tdsolve's
// Tile{row, col}, col >= row), or the strict one {i < j < m} for the maps the
// papers define without the diagonal (kDiagonal = false). Every map type has
//     static Launch launch(index_t m)     the passes it launches, in order:
//                                         each an x × y grid of blocks
//     TDS_HD static bool map(m, pass, bx, by, &i, &j)
//                                         block (bx, by) of that pass -> tile
//                                         (i, j), or false: a discarded block
//     kExact, kDiagonal, kMaxM            exact for every m <= kMaxM?
// A kernel runs one launch per pass, passing it the Pass by value; only REC
// has more than one. Passes with no blocks are left out (m = 0 has none).
//
// The papers' BB, λ, RB and REC cover the lower triangle (row R >= column
// C); here their result is transposed, (i, j) = (C, R) (the packed-order
// reversal of lambda2.hpp is not applied: these maps are for comparing
// strategies; ShippedLambda2, the product's own λ2, applies it). UTM covers
// the upper triangle itself.
//
//   map                         launched blocks             discarded
//   BbMap                       m²                          T(m-1)
//   LtmMap<S, F, true>          x·y, x = ceil(sqrt(T(m))),  x·y - T(m) < x
//                               y = ceil(T(m)/x)
//   LtmMap<S, F, false>         the same over T(m-1)        < x
//   ShippedLambda2              as LtmMap<·, ·, true>       < x
//   RbMap                       m·(⌊m/2⌋ + 1)               0 (m odd), m/2 (m even)
//   RecMap                      T(m) in 1 + ⌈log2 m⌉ passes  0
//   UtmMap<F, D>                as LtmMap<·, ·, D>          < x
// with T(r) = r(r+1)/2: T(m) tiles with the diagonal, T(m-1) without.
//
// Float arithmetic is float32 as the papers' kernels did it, the same on the
// host as on the device: no contraction into FMAs (the device uses the _rn
// intrinsics), a correctly rounded sqrt (__fsqrt_rn, immune to
// --use_fast_math) for λ_X. The one exception is rsqrtf (λ_R), which the
// host emulates as 1/sqrtf: the device's rsqrtf is within 2 ulp, not
// correctly rounded, so λ_R's failure points may move on a GPU.
// (ShippedLambda2 keeps the product's arithmetic, float32 or float64 by ω
// on the device and float64 on the host: exact either way, so the same
// tiles.)
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "mapping/block_map.hpp"
#include "mapping/simplex.hpp"

namespace tdsolve::mapping::variants {

// One launch: an x × y grid of blocks.
struct Pass {
  index_t x = 0, y = 0;
  index_t level = 0;  // RecMap: 0 the diagonal pass, l >= 1 squares of side 2^(l-1); else 0
  TDS_HD index_t blocks() const { return x * y; }
};

// The passes of one strategy for one m, in launch order.
struct Launch {
  static constexpr int kMaxPasses = 34;  // RecMap for m < 2^32: diagonal + 32 levels
  int count = 0;
  Pass pass[kMaxPasses];

  void add(index_t x, index_t y, index_t level = 0) {
    if (x > 0 && y > 0) pass[count++] = Pass{x, y, level};
  }
  index_t blocks() const {
    index_t b = 0;
    for (int p = 0; p < count; ++p)
      b += pass[p].blocks();
    return b;
  }
};

// Tiles of the block triangle of m block rows, with or without the diagonal.
TDS_HD constexpr index_t triangle_blocks(index_t m, bool diagonal) {
  return diagonal ? tri(m) : pair_count(m);
}

// Smallest x with x² >= v (v < 2^64 - 2^33).
inline index_t ceil_sqrt(index_t v) {
  index_t x = static_cast<index_t>(std::sqrt(static_cast<double>(v)));
  while (x > 0 && (x - 1) * (x - 1) >= v)
    --x;
  while (x * x < v)
    ++x;
  return x;
}

// The papers' balanced 2-D grid for a 1-D enumeration of `blocks` tiles
// (seed 002 §3.1, P_Δ): square-ish, so neither side is as long as a 1-D grid.
// The paper launches m' × m', m' = ceil(sqrt(blocks)); y = ceil(blocks/x)
// drops its empty last rows (fewer than x blocks left over either way).
inline Launch balanced_launch(index_t blocks) {
  Launch l;
  if (blocks == 0) return l;
  const index_t x = ceil_sqrt(blocks);
  l.add(x, (blocks + x - 1) / x);
  return l;
}

// ---------------------------------------------------------------------------
// Float32 arithmetic, identical on host and device (see the top comment).
namespace fp {

TDS_HD float mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

TDS_HD float add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

TDS_HD float sub(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}

// sqrtf, correctly rounded (the float overload on the host: no promotion).
TDS_HD float sqrt_rn(float v) {
#if defined(__CUDA_ARCH__)
  return __fsqrt_rn(v);
#else
  return std::sqrt(v);
#endif
}

// rsqrtf on the device; on the host emulated as 1.0f/sqrtf(v).
TDS_HD float rsqrt(float v) {
#if defined(__CUDA_ARCH__)
  return rsqrtf(v);
#else
  return 1.0f / std::sqrt(v);
#endif
}

// 1/v, correctly rounded (also under --use_fast_math).
TDS_HD float rcp(float v) {
#if defined(__CUDA_ARCH__)
  return __frcp_rn(v);
#else
  return 1.0f / v;
#endif
}

// The fast inverse square root (Carmack; Lomont's analysis): the bit-level
// guess 0x5f3759df - bits(v)/2, then Newton steps y <- y (3/2 - v/2 · y²).
TDS_HD float fast_rsqrt(float v, int newton_steps) {
#if defined(__CUDA_ARCH__)
  float y = __int_as_float(0x5f3759df - (__float_as_int(v) >> 1));
#else
  std::int32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  bits = 0x5f3759df - (bits >> 1);
  float y;
  std::memcpy(&y, &bits, sizeof y);
#endif
  const float half = mul(0.5f, v);
  for (int s = 0; s < newton_steps; ++s)
    y = mul(y, sub(1.5f, mul(mul(half, y), y)));
  return y;
}

// floor(v) as a signed integer (v may be slightly negative; |v| < 2^62).
TDS_HD std::int64_t floor_int(float v) {
  const std::int64_t t = static_cast<std::int64_t>(v);  // truncates toward 0
  return static_cast<float>(t) > v ? t - 1 : t;
}

}  // namespace fp

// ---------------------------------------------------------------------------
// BB, the bounding box (seed 000 §III.B, seed 002 §4.2): the m × m grid,
// block (bx, by) -> (i, j) = (by, bx), blocks below the diagonal (bx < by)
// discarded at block level before any thread computes a coordinate (the
// papers' "fair" BB). Launched m², useful T(m).
struct BbMap {
  static constexpr bool kExact = true, kDiagonal = true;
  static constexpr index_t kMaxM = (index_t(1) << 32) - 1;

  static Launch launch(index_t m) {
    Launch l;
    l.add(m, m);
    return l;
  }
  TDS_HD static bool map(index_t, const Pass&, index_t bx, index_t by, index_t* i, index_t* j) {
    *i = by;
    *j = bx;
    return bx >= by;
  }
};

// ---------------------------------------------------------------------------
// λ(ω), the lower-triangular block map (LTM; seed 000/001 §II, seed 002 §3-4,
// eq. 4 and 5), in the papers' three square roots and three fixes.
//
// With the diagonal, ω enumerates the lower triangle row by row (row R holds
// R+1 tiles, its first at T(R)):
//     R = floor(sqrt(1/4 + 2ω) - 1/2),   C = ω - R(R+1)/2,
// the largest R with T(R) <= ω. Without it, the strict lower triangle (row
// R >= 1 holds R tiles, its first at T(R-1)):
//     R = floor(sqrt(1/4 + 2ω) + 1/2),   C = ω - R(R-1)/2.
// (The extracts print eq. 5 with the 1/2 inside the root and C = ω - i(i+1)/2;
// the column must subtract T(R-1) = R(R-1)/2, or C would be negative.)
// Result (i, j) = (C, R). ω = bx + by·x over the balanced grid; blocks with
// ω >= the tile count are discarded.
//
// The square root sqrt(v) of v = 1/4 + 2ω (float32):
//     X  sqrtf(v)                                      (λ_X, LTM-X)
//     N  1 / fast_rsqrt(v) with 3 Newton steps          (λ_N, LTM-N)
//     R  v · rsqrtf(v)                                  (λ_R, LTM-R; eq. 9)
// and the row fixed by
//     None     nothing: the formula as written
//     Epsilon  + ε = 1e-4 before the floor, the papers' repair, claimed
//              exact for N <= 30720 with 16×16 blocks (m <= 1920, ω < 1.84e6)
//     Exact    the unrepaired row as an estimate, corrected by the exact
//              64-bit integer steps the product's λ2 uses (T(R) <= ω <
//              T(R+1), mapping::tri_root_correct): exact for every ω of
//              every m <= kMaxM. The estimate is within one row for
//              ω < 2^42 (m <= 2^21, tested), so the correction costs a
//              step or two; it drifts to a few rows by ω ~ 2^48 and a few
//              hundred near 2^63, where the (still exact) correction loops.
// The shipped λ2 itself, estimate included, is ShippedLambda2 below.
// The papers do not say how λ_N turns the inverse root into the root: the
// reciprocal is the reading under which λ_N + ε is exact in their claimed
// range; v · fast_rsqrt(v) (λ_R's form) fails inside it (test_map_variants).
// Past their range the None and Epsilon variants return wrong tiles (a row
// off by one; the column then falls outside 0..R, possibly wrapping to a huge
// value): a kernel running them there must bound-check (i <= j < m) before
// touching memory. The unit tests record where each first fails.
enum class Sqrt { X, N, R };
enum class Fix { None, Epsilon, Exact };
inline constexpr float kLtmEpsilon = 1e-4f;
inline constexpr int kLtmNewtonSteps = 3;

template <Sqrt S>
TDS_HD float ltm_root(float v) {
  if constexpr (S == Sqrt::X)
    return fp::sqrt_rn(v);
  else if constexpr (S == Sqrt::N)
    return fp::rcp(fp::fast_rsqrt(v, kLtmNewtonSteps));
  else
    return fp::mul(v, fp::rsqrt(v));
}

template <Sqrt S, Fix F, bool kDiag>
struct LtmMap {
  static constexpr bool kExact = F == Fix::Exact, kDiagonal = kDiag;
  static constexpr index_t kMaxM = (index_t(1) << 32) - 1;

  static Launch launch(index_t m) { return balanced_launch(triangle_blocks(m, kDiag)); }

  // The row from the float formula with the variant's fix (none for Exact).
  TDS_HD static index_t row_estimate(index_t w) {
    const float v = fp::add(0.25f, fp::mul(2.0f, static_cast<float>(w)));
    const float root = ltm_root<S>(v);
    float x = kDiag ? fp::sub(root, 0.5f) : fp::add(root, 0.5f);
    if constexpr (F == Fix::Epsilon) x = fp::add(x, kLtmEpsilon);
    const std::int64_t r = fp::floor_int(x);
    return r > 0 ? static_cast<index_t>(r) : 0;
  }

  // Tile of linear block index ω (independent of m).
  TDS_HD static void tile(index_t w, index_t* i, index_t* j) {
    index_t r = row_estimate(w);
    if constexpr (kDiag) {
      if constexpr (F == Fix::Exact) r = tri_root_correct(w, r);
      *i = w - tri(r);
    } else {
      if constexpr (F == Fix::Exact) r = tri_root_correct(w, r > 0 ? r - 1 : 0) + 1;
      *i = w - tri(r - 1);  // r = 0 only from a broken estimate: wraps, no UB
    }
    *j = r;
  }

  TDS_HD static bool map(index_t m, const Pass& p, index_t bx, index_t by, index_t* i, index_t* j) {
    const index_t w = by * p.x + bx;
    if (w >= triangle_blocks(m, kDiag)) return false;
    tile(w, i, j);
    return true;
  }
};

// The papers' variants (with the diagonal, ε-repaired) and λ_R made exact.
using LtmX = LtmMap<Sqrt::X, Fix::Epsilon, true>;
using LtmN = LtmMap<Sqrt::N, Fix::Epsilon, true>;
using LtmR = LtmMap<Sqrt::R, Fix::Epsilon, true>;
using LtmExact = LtmMap<Sqrt::R, Fix::Exact, true>;

// tdsolve's λ2 as the product evaluates it: the tile of ω = bx + by·x over
// the balanced grid is mapping::Lambda2Map::tile's (block_map.hpp), with the
// grid the CUDA backend gives it by default (Grid::reversed, the "long"
// order: ω taken from the end). So the row is tri_root's (a float32 rsqrtf
// estimate of 8ω+1 on the device while ω < 2^24, float64 sqrt otherwise and
// on the host, then tri_root_correct) and the labels are reversed:
// (i, j) = (m-1-C, m-1-R). The same tiles as LtmExact, in another order and
// at another cost; only the grid's shape (2-D, as every map here) is the
// laboratory's: the product launches one row of T(m) blocks.
struct ShippedLambda2 {
  static constexpr bool kExact = true, kDiagonal = true;
  // tri_root is exact for ω < 2^62: T(m) < 2^62.
  static constexpr index_t kMaxM = index_t(1) << 31;

  static Launch launch(index_t m) { return balanced_launch(tri(m)); }

  TDS_HD static bool map(index_t m, const Pass& p, index_t bx, index_t by, index_t* i, index_t* j) {
    const index_t w = by * p.x + bx;
    if (w >= tri(m)) return false;
    PairDomain d;
    d.m = m;
    Grid g;
    g.x = tri(m);
    g.y = 1;
    g.reversed = true;
    Tile t;
    Lambda2Map::tile(d, g, w, 0, &t);
    *i = t.row;
    *j = t.col;
    return true;
  }
};

// ---------------------------------------------------------------------------
// RB, the rectangular box (Jung & O'Leary; seed 000 §III.B, seed 002 §4.2).
// In the papers' lower-triangle picture, an m-wide box of h+1 rows,
// h = ⌊m/2⌋: the blocks strictly below the box's diagonal keep the top of
// the triangle, shifted down one row, and the blocks on or above it hold the
// bottom rows rotated by 180° into the box's empty upper half:
//     by > bx:   (R, C) = (by - 1, bx)                rows 0 .. h-1
//     by <= bx:  (R, C) = (m-1 - by, m-1 - bx)        rows m-1 down to m-1-h
// (The extracts read "j = N - i - 1" for the second case; the 180° rotation
// needs C = m-1 - bx.) For odd m the two parts tile the box exactly,
// (h+1)·m = T(m). For even m the box's last row (by = h) on or above the
// diagonal repeats row h-1 of the first part: those m/2 blocks are discarded.
// Result (i, j) = (C, R).
struct RbMap {
  static constexpr bool kExact = true, kDiagonal = true;
  static constexpr index_t kMaxM = (index_t(1) << 32) - 1;

  static Launch launch(index_t m) {
    Launch l;
    l.add(m, m / 2 + 1);
    return l;
  }
  TDS_HD static bool map(index_t m, const Pass&, index_t bx, index_t by, index_t* i, index_t* j) {
    if (by > bx) {
      *i = bx;
      *j = by - 1;
      return true;
    }
    if (2 * by == m) return false;  // even m: the duplicate half row
    *i = m - 1 - bx;
    *j = m - 1 - by;
    return true;
  }
};

// ---------------------------------------------------------------------------
// REC, the recursive partition (Ries et al.; seed 000 §III.B, seed 002 §4.2),
// mapped at run time instead of through a lookup table, for any m.
//
// For m a power of two the strict lower triangle splits into two half-size
// triangles and the square between them, recursively; bottom-up, level l >= 1
// holds the squares of side s = 2^(l-1)
//     rows [2qs + s, 2qs + 2s) × columns [2qs, 2qs + s),  q = 0, 1, ...
// and level 0, the extra diagonal pass, the m diagonal tiles. For any m,
// take that partition of the next power of two and keep the rows below m:
// a square is cut only at its bottom, so level l's squares stacked
// vertically are an s-wide grid of exactly the rows that remain:
//     pass 0:  x = m, y = 1:   (bx, 0) -> (R, C) = (bx, bx)
//     pass l:  x = s, y = Σ_q min(s, m - (2qs + s)) over squares with 2qs + s < m:
//              q = by / s,  R = 2qs + s + by mod s,  C = 2qs + bx
// for every l with s < m. T(m) blocks in 1 + ⌈log2 m⌉ passes, none
// discarded. Result (i, j) = (C, R).
struct RecMap {
  static constexpr bool kExact = true, kDiagonal = true;
  static constexpr index_t kMaxM = (index_t(1) << 32) - 1;

  // Rows of level l's stacked squares (side s = 2^(l-1) < m).
  static index_t level_rows(index_t m, index_t s) {
    const index_t squares = (m - s + 2 * s - 1) / (2 * s);  // those with 2qs + s < m
    const index_t last_start = (squares - 1) * 2 * s + s;
    const index_t last_rows = m - last_start < s ? m - last_start : s;
    return (squares - 1) * s + last_rows;
  }

  static Launch launch(index_t m) {
    Launch l;
    l.add(m, 1, 0);
    index_t level = 1;
    for (index_t s = 1; s < m; s *= 2, ++level)
      l.add(s, level_rows(m, s), level);
    return l;
  }
  TDS_HD static bool map(index_t, const Pass& p, index_t bx, index_t by, index_t* i, index_t* j) {
    if (p.level == 0) {
      *i = *j = bx;
      return true;
    }
    const index_t shift = p.level - 1, s = index_t(1) << shift;
    const index_t base = (by >> shift) << (shift + 1);  // 2qs
    *i = base + bx;
    *j = base + s + (by & (s - 1));
    return true;
  }
};

// ---------------------------------------------------------------------------
// UTM, the upper-triangular map (Avril et al., EGPGV 2012; as quoted in
// seed 000 §III.B and seed 002 §4.2), applied to blocks. It enumerates the
// strict upper triangle of n objects row by row, k < n(n-1)/2, with 1-based
// rows a < b:
//     a = floor((-(2n+1) + sqrt(4n² - 4n - 8k + 1)) / -2)
//     b = (a + 1) + k - (a - 1)(2n - a)/2
// Here 0-based: row a0 = a - 1 starts at K(a0) = a0(2n - a0 - 1)/2, column
// b0 = a0 + 1 + k - K(a0). Without the diagonal n = m and (i, j) = (a0, b0);
// with it, the strict triangle of n = m + 1 is shifted one column left,
// (i, j) = (a0, b0 - 1). k = bx + by·x over the balanced grid.
//
//     Published  the formula in float32 as written (every term of the root's
//                argument in float), the root as λ_N's (the fast inverse
//                square root, 3 Newton steps: Avril et al. use Carmack's and
//                Lomont's), then their two conditionals: row down one if
//                K(a0) > k, else up one if K(a0 + 1) <= k. Exact while the
//                float error stays within one row; the unit tests record
//                where it first fails.
//     Exact      the argument (2n-1)² - 8k in exact 64-bit integers, the same
//                float root, then integer steps until K(a0) <= k < K(a0 + 1):
//                exact for every n <= 2^31 (kMaxM: (2n-1)² fits 64 bits).
// (Avril et al.'s exact conditionals are not in the seed papers; the two
// above are the ones a ±1 error needs.)
enum class UtmFix { Published, Exact };

template <UtmFix F, bool kDiag>
struct UtmMap {
  static constexpr bool kExact = F == UtmFix::Exact, kDiagonal = kDiag;
  // n = m (+1) objects; (2n-1)² must fit 64 bits.
  static constexpr index_t kMaxM = (index_t(1) << 31) - (kDiag ? 1 : 0);

  static Launch launch(index_t m) { return balanced_launch(triangle_blocks(m, kDiag)); }

  // K(r) = r(2n - r - 1)/2 in signed arithmetic (r may be off the triangle).
  TDS_HD static std::int64_t utm_start(index_t n, std::int64_t r) {
    return r * (2 * static_cast<std::int64_t>(n) - r - 1) / 2;
  }

  // Row of the tiles of linear index k in the strict triangle of n objects.
  TDS_HD static index_t row(index_t n, index_t k) {
    if constexpr (F == UtmFix::Published) {
      const float nf = static_cast<float>(n), kf = static_cast<float>(k);
      float d = fp::add(
          fp::sub(fp::sub(fp::mul(fp::mul(4.0f, nf), nf), fp::mul(4.0f, nf)), fp::mul(8.0f, kf)),
          1.0f);
      if (!(d >= 1.0f)) d = 1.0f;  // float error past the range (the exact value is >= 9)
      const float root = ltm_root<Sqrt::N>(d);
      const float a = fp::mul(fp::sub(static_cast<float>(2 * n + 1), root), 0.5f);
      std::int64_t a0 = fp::floor_int(a) - 1;
      const std::int64_t sk = static_cast<std::int64_t>(k);
      if (utm_start(n, a0) > sk)
        --a0;
      else if (utm_start(n, a0 + 1) <= sk)
        ++a0;
      return static_cast<index_t>(a0);  // wraps if the fix was not enough
    } else {
      const index_t d = (2 * n - 1) * (2 * n - 1) - 8 * k;
      const float root = ltm_root<Sqrt::N>(static_cast<float>(d));
      const std::int64_t a =
          fp::floor_int(fp::mul(fp::sub(static_cast<float>(2 * n - 1), root), 0.5f));
      index_t r = a > 0 ? static_cast<index_t>(a) : 0;
      while (r > 0 && row_start(n, r) > k)
        --r;
      while (row_start(n, r + 1) <= k)
        ++r;
      return r;
    }
  }

  TDS_HD static void tile(index_t m, index_t k, index_t* i, index_t* j) {
    const index_t n = kDiag ? m + 1 : m;
    const index_t a0 = row(n, k);
    const index_t b0 = a0 + 1 + (k - row_start(n, a0));
    *i = a0;
    *j = kDiag ? b0 - 1 : b0;
  }

  TDS_HD static bool map(index_t m, const Pass& p, index_t bx, index_t by, index_t* i, index_t* j) {
    const index_t k = by * p.x + bx;
    if (k >= triangle_blocks(m, kDiag)) return false;
    tile(m, k, i, j);
    return true;
  }
};

using UtmPublished = UtmMap<UtmFix::Published, true>;
using UtmExact = UtmMap<UtmFix::Exact, true>;

}  // namespace tdsolve::mapping::variants
