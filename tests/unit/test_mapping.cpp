// Exactness of the index maths: every row boundary ±1, not random samples.
#include <gtest/gtest.h>

#include <cmath>

#include "mapping/block_map.hpp"
#include "mapping/simplex.hpp"

using namespace tdsolve;
using namespace tdsolve::mapping;

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
TEST(TriRoot, HoldsUpTo2Pow62) {
  for (index_t w = index_t(1) << 53; w < (index_t(1) << 62); w += w / 977 + 12345) {
    const index_t r = tri_root(w);
    ASSERT_LE(tri(r), w);
    ASSERT_GT(tri(r + 1), w);
  }
  const index_t top = tri_root((index_t(1) << 62) - 1);
  EXPECT_LE(tri(top), (index_t(1) << 62) - 1);
  EXPECT_GT(tri(top + 1), (index_t(1) << 62) - 1);
}

// The correction repairs any estimate that is off by a few.
TEST(TriRoot, CorrectionRepairsBadEstimates) {
  for (index_t w :
       {index_t(0), index_t(5), index_t(10586491), index_t(1) << 40, (index_t(1) << 53) + 1}) {
    const index_t r = tri_root(w);
    for (index_t off = 0; off < 4; ++off) {
      EXPECT_EQ(tri_root_correct(w, r + off), r);
      if (r >= off) EXPECT_EQ(tri_root_correct(w, r - off), r);
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
      if (static_cast<index_t>(x) != tri_root(w)) {
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
    for (index_t I0 = 0; I0 <= m; ++I0) {
      for (index_t I1 = I0; I1 <= m; ++I1) {
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
}

TEST(Lambda2, BoundingBoxKeepsTheSameTiles) {
  const index_t m = 9;
  for (index_t I0 = 0; I0 < m; ++I0) {
    index_t kept = 0;
    for (index_t y = 0; y < m - I0; ++y)
      for (index_t x = 0; x < m; ++x) {
        Tile t;
        const PairDomain dom(m * 4, 4);
        if (BoundingBoxMap::tile(dom, BoundingBoxMap::grid(dom, I0, m), x, y, &t)) {
          ++kept;
          EXPECT_LE(t.row, t.col);
        }
      }
    EXPECT_EQ(kept, lambda2_blocks(m, I0, m).size());
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
