// Exactness of the index maths: every row boundary ±1, not random samples.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <utility>
#include <vector>

#include "mapping/block_map.hpp"
#include "mapping/simplex.hpp"
#include "mapping/strips.hpp"

using namespace tdsolve;
using namespace tdsolve::mapping;

namespace {

using u128 = unsigned __int128;

// floor(sqrt(x)) by bisection on 128-bit integers: no floating point at all.
u128 isqrt(u128 x) {
  u128 lo = 0, hi = (u128(1) << 64) - 1;  // hi*hi > x for every x < 2^126
  if (hi * hi <= x) return hi;
  while (hi - lo > 1) {  // invariant: lo*lo <= x < hi*hi
    const u128 mid = lo + (hi - lo) / 2;
    if (mid * mid <= x)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

// Independent tri_root: T(r) <= w  <=>  (2r+1)^2 <= 8w+1, so
// r = floor((isqrt(8w+1) - 1) / 2), exact in 128-bit integers.
index_t tri_root_ref(index_t w) {
  return static_cast<index_t>((isqrt(u128(8) * w + 1) - 1) / 2);
}

// Block-row ranges [I0, I1) to try: all of them for small m, else those at
// either end and every single block row.
std::vector<std::pair<index_t, index_t>> chunk_ranges(index_t m, index_t all_up_to = 12) {
  std::vector<std::pair<index_t, index_t>> r;
  for (index_t I0 = 0; I0 <= m; ++I0)
    for (index_t I1 = I0; I1 <= m; ++I1)
      if (m <= all_up_to || I0 < 3 || I1 + 3 > m || I1 == I0 + 1) r.emplace_back(I0, I1);
  return r;
}

}  // namespace

// The reference itself on values worked out by hand.
TEST(TriRoot, ReferenceOnHandValues) {
  EXPECT_EQ(isqrt(0), u128(0));
  EXPECT_EQ(isqrt(15), u128(3));
  EXPECT_EQ(isqrt(16), u128(4));
  EXPECT_EQ(isqrt(u128(1) << 124), u128(1) << 62);
  EXPECT_EQ(isqrt((u128(1) << 124) - 1), (u128(1) << 62) - 1);
  // T: 0 1 3 6 10 15 ...
  const index_t want[16] = {0, 1, 1, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 4, 5};
  for (index_t w = 0; w < 16; ++w)
    EXPECT_EQ(tri_root_ref(w), want[w]) << w;
  // T(2^31) = 2^61 + 2^30.
  const index_t t31 = (index_t(1) << 61) + (index_t(1) << 30);
  EXPECT_EQ(tri_root_ref(t31), index_t(1) << 31);
  EXPECT_EQ(tri_root_ref(t31 - 1), (index_t(1) << 31) - 1);
}

TEST(Simplex, CountsMatchBinomials) {
  for (index_t n = 0; n < 2000; ++n) {
    EXPECT_EQ(pair_count(n), n < 2 ? 0 : n * (n - 1) / 2) << n;
    EXPECT_EQ(triplet_count(n), n < 3 ? 0 : n * (n - 1) * (n - 2) / 6) << n;
  }
  // Near the top of the 64-bit range, checked with 128-bit arithmetic.
  for (index_t n :
       {index_t(92682), index_t(1) << 32, (index_t(1) << 32) + 7, index_t(6074001000)}) {
    const unsigned __int128 exact = (unsigned __int128)n * (n - 1) / 2;
    index_t got = 0;
    ASSERT_TRUE(checked_pair_count(n, &got));
    EXPECT_EQ((unsigned __int128)got, exact);
    EXPECT_EQ(pair_count(n), got);
  }
  index_t out = 0;
  EXPECT_FALSE(checked_pair_count(index_t(6074001001) * 2, &out));
  const index_t n3 = 2642245;  // C(n,3) just below 2^63
  EXPECT_EQ((unsigned __int128)triplet_count(n3), (unsigned __int128)n3 * (n3 - 1) * (n3 - 2) / 6);
}

TEST(Simplex, PairRankIsCombinationsOrder) {
  for (index_t n : {2, 3, 4, 5, 17, 128, 129}) {
    index_t p = 0;
    for (index_t i = 0; i < n; ++i) {
      EXPECT_EQ(row_start(n, i), p);
      for (index_t j = i + 1; j < n; ++j, ++p) {
        ASSERT_EQ(pair_rank(n, i, j), p);
        const Pair q = pair_unrank(n, p);
        ASSERT_EQ(q.i, i);
        ASSERT_EQ(q.j, j);
      }
    }
    EXPECT_EQ(p, pair_count(n));
    EXPECT_EQ(row_start(n, n), pair_count(n));
  }
}

// tri_root(w) is the r with T(r) <= w < T(r+1): check T(r)-1, T(r), T(r)+1
// for every row r of the first 10^6 rows...
TEST(TriRoot, EveryRowBoundaryOfTheFirstMillionRows) {
  for (index_t r = 1; r <= 1000000; ++r) {
    const index_t t = tri(r);
    ASSERT_EQ(tri_root(t - 1), r - 1) << r;
    ASSERT_EQ(tri_root(t), r) << r;
    ASSERT_EQ(tri_root(t + 1), r) << r;
  }
  EXPECT_EQ(tri_root(0), 0u);
}

// ...and of every row whose boundary lies below 2^53 (r < 1.34e8): dense
// means all of them, which the integer correction makes cheap to check.
TEST(TriRoot, EveryRowBoundaryUpTo2Pow53) {
  const index_t last = tri_root(index_t(1) << 53) + 1;
  index_t failures = 0;
#pragma omp parallel for reduction(+ : failures) schedule(static)
  for (index_t r = 1000000; r <= last; ++r) {
    const index_t t = tri(r);
    failures += tri_root(t - 1) != r - 1;
    failures += tri_root(t) != r;
    failures += tri_root(t + 1) != r;
  }
  EXPECT_EQ(failures, 0u);
}

// Beyond 2^53 the double estimate itself is off; the correction still holds.
TEST(TriRoot, MatchesTheIntegerReferenceUpTo2Pow62) {
  for (index_t w = index_t(1) << 53; w < (index_t(1) << 62); w += w / 977 + 12345)
    ASSERT_EQ(tri_root(w), tri_root_ref(w)) << w;
  // Random w over every magnitude (fixed seed), and the boundaries of the
  // rows near the top of the range, where T(r+1) approaches 2^63.
  std::mt19937_64 rng(20261122);
  for (int k = 0; k < 200000; ++k) {
    const index_t w = rng() >> (2 + rng() % 62);
    ASSERT_EQ(tri_root(w), tri_root_ref(w)) << w;
  }
  const index_t top = tri_root_ref((index_t(1) << 62) - 1);
  for (index_t r = top - 1000; r <= top; ++r) {
    const index_t t = tri(r);
    for (index_t w : {t - 2, t - 1, t, t + 1, t + 2})
      ASSERT_EQ(tri_root(w), tri_root_ref(w)) << w;
  }
  EXPECT_EQ(tri_root((index_t(1) << 62) - 1), tri_root_ref((index_t(1) << 62) - 1));
}

// The correction repairs any estimate that is off by a few.
TEST(TriRoot, CorrectionRepairsBadEstimates) {
  for (index_t w : {index_t(0), index_t(5), index_t(10586491), index_t(1) << 40,
                    (index_t(1) << 53) + 1, (index_t(1) << 62) - 1}) {
    const index_t r = tri_root_ref(w);
    for (index_t off = 0; off < 4; ++off) {
      EXPECT_EQ(tri_root_correct(w, r + off), r) << w;
      if (r >= off) EXPECT_EQ(tri_root_correct(w, r - off), r) << w;
    }
  }
}

// The papers' float formula floor(sqrt(1/4 + 2ω) - 1/2) in float32 is wrong
// from about ω = 1.06e7; ours is not. (Documents why the correction exists.)
TEST(TriRoot, NaiveFloatFormulaBreaksNear1e7) {
  index_t first_wrong = 0;
  for (index_t r = 1; r < 20000 && !first_wrong; ++r) {
    for (index_t w : {tri(r) - 1, tri(r)}) {
      const float x = std::sqrt(0.25f + 2.0f * static_cast<float>(w)) - 0.5f;
      if (static_cast<index_t>(x) != tri_root_ref(w)) {
        first_wrong = w;
        break;
      }
    }
  }
  ASSERT_GT(first_wrong, 0u);
  EXPECT_GT(first_wrong, 5000000u);
  EXPECT_LT(first_wrong, 20000000u);
  std::printf("naive float32 λ2 first wrong at ω = %llu\n", (unsigned long long)first_wrong);
}

// λ2 over the whole block triangle visits every tile (I <= J) exactly once,
// and a block-row range is exactly its ω range.
TEST(Lambda2, CoversEveryTileOnceInBlockRowOrder) {
  for (index_t m : {1, 2, 3, 7, 64, 301}) {
    std::vector<int> seen(m * m, 0);
    for (index_t w = 0; w < tri(m); ++w) {
      const Tile t = lambda2_tile(m, w);
      ASSERT_LE(t.row, t.col);
      ASSERT_LT(t.col, m);
      ++seen[t.row * m + t.col];
    }
    for (index_t I = 0; I < m; ++I)
      for (index_t J = 0; J < m; ++J)
        EXPECT_EQ(seen[I * m + J], J >= I ? 1 : 0);
    for (const auto& [I0, I1] : chunk_ranges(m, 64)) {
      const BlockRange r = lambda2_blocks(m, I0, I1);
      index_t count = 0;
      for (index_t w = r.begin; w < r.end; ++w) {
        const Tile t = lambda2_tile(m, w);
        ASSERT_GE(t.row, I0);
        ASSERT_LT(t.row, I1);
        ++count;
      }
      index_t expect = 0;
      for (index_t I = I0; I < I1; ++I)
        expect += m - I;
      ASSERT_EQ(count, expect);
    }
  }
}

// The strip layout (the small-d store schedule) against plain enumeration:
// band by band, the chunks from the diagonal one to the last, every pair in
// exactly one strip and no strip without a pair but the last row's.
TEST(Strips, UnrankEnumeratesTheNonEmptyStripsBandByBand) {
  for (const auto& [h, w] : std::vector<std::pair<index_t, index_t>>{
           {16, 1024}, {16, 512}, {8, 32}, {4, 4}, {2, 8}, {16, 16}}) {
    for (index_t n = 1; n <= 300; n += (n < 40 ? 1 : 7)) {
      const StripLayout l(n, h, w);
      std::vector<Strip> list;
      std::vector<index_t> first;  // first strip of each band
      const index_t bands = (n + h - 1) / h;
      for (index_t b = 0; b < bands; ++b) {
        first.push_back(static_cast<index_t>(list.size()));
        for (index_t c = (b * h) / w; c < l.mc; ++c)
          list.push_back(Strip{b * h, c * w});
      }
      ASSERT_EQ(l.before(bands * h), static_cast<index_t>(list.size()))
          << n << " " << h << " " << w;
      for (index_t b = 0; b < bands; ++b)
        ASSERT_EQ(l.before(b * h), first[b]) << n << " band " << b;
      std::vector<int> covered(n * n, 0);
      for (index_t o = 0; o < static_cast<index_t>(list.size()); ++o) {
        const Strip s = l.unrank(o);
        ASSERT_EQ(s.row, list[o].row) << n << " ω " << o;
        ASSERT_EQ(s.col, list[o].col) << n << " ω " << o;
        int pairs = 0;
        for (index_t i = s.row; i < std::min(s.row + h, n); ++i)
          for (index_t j = std::max(s.col, i + 1); j < std::min(s.col + w, n); ++j, ++pairs)
            ++covered[i * n + j];
        // Only a band of the last row alone (it pairs with nothing) is empty.
        if (s.row < n - 1) ASSERT_GT(pairs, 0) << "an empty strip: n " << n << " ω " << o;
      }
      for (index_t i = 0; i < n; ++i)
        for (index_t j = 0; j < n; ++j)
          ASSERT_EQ(covered[i * n + j], j > i ? 1 : 0) << n << " (" << i << ", " << j << ")";
    }
  }
}

// At sizes no enumeration reaches: the first and last strips of bands
// around random rows, up to n = 3e9 (λ2's root near 2^48 strips).
TEST(Strips, UnrankIsExactAtBandBoundariesOfHugeDomains) {
  std::mt19937_64 rng(7);
  for (index_t n : {index_t(100000), index_t(123457), index_t(3000000001)}) {
    const StripLayout l(n, 16, 1024);
    const index_t bands = (n + 15) / 16;
    for (int t = 0; t < 2000; ++t) {
      const index_t b = 1 + static_cast<index_t>(rng() % static_cast<std::uint64_t>(bands - 1));
      const index_t s = b * 16 / 1024, at = l.before(b * 16);
      const Strip a = l.unrank(at), z = l.unrank(at + (l.mc - s) - 1), p = l.unrank(at - 1);
      ASSERT_EQ(a.row, b * 16);
      ASSERT_EQ(a.col, s * 1024);
      ASSERT_EQ(z.row, b * 16);
      ASSERT_EQ(z.col, (l.mc - 1) * 1024);
      ASSERT_EQ(p.row, (b - 1) * 16);
      ASSERT_EQ(p.col, (l.mc - 1) * 1024);
    }
    EXPECT_EQ(l.unrank(l.before(bands * 16) - 1).row, (bands - 1) * 16);
  }
}

namespace {

// How often each tile (I, J) of an m × mc block matrix is visited by the
// blocks of Map's grid for block rows [I0, I1); also the number of blocks.
template <typename Map, typename Domain>
std::vector<int> visits(const Domain& d, index_t m, index_t mc, index_t I0, index_t I1,
                        index_t* blocks) {
  std::vector<int> seen(m * mc, 0);
  const Grid g = Map::grid(d, I0, I1);
  *blocks = g.blocks();
  for (index_t by = 0; by < g.y; ++by)
    for (index_t bx = 0; bx < g.x; ++bx) {
      Tile t{~index_t(0), ~index_t(0)};
      if (!Map::tile(d, g, bx, by, &t)) continue;
      EXPECT_LT(t.row, m);
      EXPECT_LT(t.col, mc);
      if (t.row < m && t.col < mc) ++seen[t.row * mc + t.col];
    }
  return seen;
}

}  // namespace

// For every chunk [I0, I1): λ2 visits exactly the tiles I0 <= I < I1, I <= J
// once each with no idle block, and the bounding box visits the same set.
TEST(BlockMaps, PairMapsVisitEachTileOfAChunkOnce) {
  for (index_t rho : {1, 3, 16}) {
    for (index_t n : {index_t(1), index_t(2), rho - 1, rho, rho + 1, index_t(37), index_t(101)}) {
      if (n < 1) continue;
      const PairDomain d(n, rho);
      const index_t m = d.m;
      for (const auto& [I0, I1] : chunk_ranges(m)) {
        index_t lambda_blocks = 0, box_blocks = 0, want_tiles = 0;
        const std::vector<int> l = visits<Lambda2Map>(d, m, m, I0, I1, &lambda_blocks);
        const std::vector<int> b = visits<BoundingBoxMap>(d, m, m, I0, I1, &box_blocks);
        for (index_t I = 0; I < m; ++I)
          for (index_t J = 0; J < m; ++J) {
            const int want = (I >= I0 && I < I1 && J >= I) ? 1 : 0;
            want_tiles += want;
            ASSERT_EQ(l[I * m + J], want) << "λ2 n=" << n << " ρ=" << rho << " rows [" << I0 << ","
                                          << I1 << ") tile " << I << "," << J;
            ASSERT_EQ(b[I * m + J], want) << "bb n=" << n << " ρ=" << rho << " rows [" << I0 << ","
                                          << I1 << ") tile " << I << "," << J;
          }
        EXPECT_EQ(lambda_blocks, want_tiles);
        EXPECT_EQ(box_blocks, m * (I1 - I0));
      }
    }
  }
}

// RectMap: every block is a tile, (I1 - I0) × mc of them.
TEST(BlockMaps, RectMapVisitsEachTileOfABandOnce) {
  for (index_t rho : {1, 3, 16}) {
    for (index_t rows : {index_t(1), rho - 1, rho, rho + 1, index_t(37)}) {
      for (index_t cols : {index_t(1), index_t(2), rho + 1, index_t(41)}) {
        if (rows < 1) continue;
        const RectDomain d(rows, cols, rho);
        ASSERT_EQ(d.m, (rows + rho - 1) / rho);
        ASSERT_EQ(d.mc, (cols + rho - 1) / rho);
        for (const auto& [I0, I1] : chunk_ranges(d.m)) {
          index_t blocks = 0;
          const std::vector<int> v = visits<RectMap>(d, d.m, d.mc, I0, I1, &blocks);
          EXPECT_EQ(blocks, (I1 - I0) * d.mc);
          for (index_t I = 0; I < d.m; ++I)
            for (index_t J = 0; J < d.mc; ++J)
              ASSERT_EQ(v[I * d.mc + J], (I >= I0 && I < I1) ? 1 : 0)
                  << rows << "×" << cols << " ρ=" << rho << " rows [" << I0 << "," << I1
                  << ") tile " << I << "," << J;
        }
      }
    }
  }
}

// The elements of the tiles a chunk visits are exactly the chunk's elements:
// pairs counted tile by tile equal elements_in_rows.
TEST(BlockMaps, TilesOfAChunkHoldItsElements) {
  for (index_t rho : {1, 4, 16}) {
    for (index_t n : {index_t(2), rho + 1, index_t(53)}) {
      const PairDomain d(n, rho);
      for (const auto& [I0, I1] : chunk_ranges(d.m)) {
        const Grid g = Lambda2Map::grid(d, I0, I1);
        index_t pairs = 0;
        for (index_t bx = 0; bx < g.x; ++bx) {
          Tile t;
          Lambda2Map::tile(d, g, bx, 0, &t);
          for (index_t i = t.row * rho; i < std::min(n, (t.row + 1) * rho); ++i)
            for (index_t j = t.col * rho; j < std::min(n, (t.col + 1) * rho); ++j)
              pairs += j > i;
        }
        EXPECT_EQ(pairs, d.elements_in_rows(I0, I1)) << n << " " << rho << " " << I0 << " " << I1;
      }
    }
  }
}

TEST(PairDomain, ElementCounts) {
  for (index_t n : {2, 3, 127, 128, 129, 1000}) {
    for (index_t rho : {1, 2, 16, 128}) {
      const PairDomain t(n, rho);
      EXPECT_EQ(t.m, (n + rho - 1) / rho);
      EXPECT_EQ(t.elements_before(0), 0u);
      EXPECT_EQ(t.elements_before(t.m), pair_count(n));
      index_t sum = 0;
      for (index_t I = 0; I < t.m; ++I)
        sum += t.elements_in_rows(I, I + 1);
      EXPECT_EQ(sum, pair_count(n));
    }
  }
}
