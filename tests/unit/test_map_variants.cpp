// The map laboratory's strategies (mapping/variants.hpp) against brute-force
// enumeration: every launched block of every pass lands on a tile of the
// triangle or is discarded, each tile exactly once; the exact maps stay exact
// at large sizes; the laboratory's `ltm` is the product's λ2, tile for tile;
// the papers' float variants are exact in their claimed range and the tests
// record where they first fail. Built only with -DTDSOLVE_LAB=ON.
#include <gtest/gtest.h>

#include <cstdio>
#include <initializer_list>
#include <random>
#include <vector>

#include "mapping/block_map.hpp"
#include "mapping/lambda2.hpp"
#include "mapping/variants.hpp"
#include "solver/lab/lab.hpp"

using namespace tdsolve;
using namespace tdsolve::mapping;
using namespace tdsolve::mapping::variants;

namespace {

using u128 = unsigned __int128;

// floor(sqrt(x)) by bisection on 128-bit integers (no floating point).
u128 isqrt(u128 x) {
  u128 lo = 0, hi = (u128(1) << 64) - 1;
  if (hi * hi <= x) return hi;
  while (hi - lo > 1) {
    const u128 mid = lo + (hi - lo) / 2;
    (mid * mid <= x ? lo : hi) = mid;
  }
  return lo;
}

// Largest r with T(r) <= w: (2r+1)² <= 8w+1.
index_t tri_root_ref(index_t w) {
  return static_cast<index_t>((isqrt(u128(8) * w + 1) - 1) / 2);
}

struct Ij {
  index_t i, j;
  bool operator==(const Ij& o) const { return i == o.i && j == o.j; }
};

// The tile of linear index ω in the row-by-row lower-triangle order the λ
// and (reversed) UTM maps use, transposed: (C, R).
Ij lambda_ref(index_t w, bool diagonal) {
  const index_t r = tri_root_ref(w);
  return diagonal ? Ij{w - tri(r), r} : Ij{w - tri(r), r + 1};
}

// UTM's order: the strict upper triangle of n objects row by row; with the
// diagonal (n = m + 1) shifted one column left.
Ij utm_ref(index_t m, index_t k, bool diagonal) {
  const index_t n = diagonal ? m + 1 : m;
  // Row a: the largest a with row_start(n, a) <= k (bisection, no float).
  index_t lo = 0, hi = n - 1;  // row_start(n, n-1) = C(n,2) > k
  while (hi - lo > 1) {
    const index_t mid = lo + (hi - lo) / 2;
    (row_start(n, mid) <= k ? lo : hi) = mid;
  }
  const index_t b = lo + 1 + (k - row_start(n, lo));
  return Ij{lo, diagonal ? b - 1 : b};
}

template <typename Map>
Ij map_linear(index_t m, const Pass& p, index_t w, bool* kept) {
  Ij t{~index_t(0), ~index_t(0)};
  *kept = Map::map(m, p, w % p.x, w / p.x, &t.i, &t.j);
  return t;
}

// Runs every block of every pass of Map for m; counts visits per tile.
struct Coverage {
  index_t launched = 0, discarded = 0, out_of_range = 0, wrong_side = 0;
  std::vector<int> seen;  // m × m
};

template <typename Map>
Coverage cover(index_t m) {
  Coverage c;
  c.seen.assign(m * m, 0);
  const Launch l = Map::launch(m);
  for (int p = 0; p < l.count; ++p) {
    const Pass& pass = l.pass[p];
    for (index_t by = 0; by < pass.y; ++by)
      for (index_t bx = 0; bx < pass.x; ++bx) {
        ++c.launched;
        index_t i = ~index_t(0), j = ~index_t(0);
        if (!Map::map(m, pass, bx, by, &i, &j)) {
          ++c.discarded;
          continue;
        }
        if (i >= m || j >= m) {
          ++c.out_of_range;
          continue;
        }
        if (Map::kDiagonal ? i > j : i >= j) ++c.wrong_side;
        ++c.seen[i * m + j];
      }
  }
  return c;
}

// The launched blocks map onto the triangle exactly once each.
template <typename Map>
void expect_bijection(index_t m) {
  const Coverage c = cover<Map>(m);
  ASSERT_EQ(c.out_of_range, 0u) << "m=" << m;
  ASSERT_EQ(c.wrong_side, 0u) << "m=" << m;
  index_t bad = 0;
  for (index_t i = 0; i < m; ++i)
    for (index_t j = 0; j < m; ++j) {
      const int want = (j > i || (Map::kDiagonal && i == j)) ? 1 : 0;
      bad += c.seen[i * m + j] != want;
    }
  ASSERT_EQ(bad, 0u) << "m=" << m;
  ASSERT_EQ(c.launched - c.discarded, triangle_blocks(m, Map::kDiagonal)) << "m=" << m;
  ASSERT_EQ(c.launched, Map::launch(m).blocks()) << "m=" << m;
}

}  // namespace

// ---------------------------------------------------------------------------
// Every strategy, every m = 1..300 (and a few larger m whose REC levels and
// RB halves are uneven), by brute force. The papers' float variants are
// included: ω < T(300) is well inside their range.
template <typename Map>
class MapBijection : public ::testing::Test {};

using AllMaps =
    ::testing::Types<BbMap, RbMap, RecMap,  //
                     LtmMap<Sqrt::X, Fix::Exact, true>, LtmMap<Sqrt::N, Fix::Exact, true>,
                     LtmMap<Sqrt::R, Fix::Exact, true>, LtmMap<Sqrt::X, Fix::Exact, false>,
                     LtmMap<Sqrt::N, Fix::Exact, false>, LtmMap<Sqrt::R, Fix::Exact, false>,
                     LtmMap<Sqrt::X, Fix::Epsilon, true>, LtmMap<Sqrt::N, Fix::Epsilon, true>,
                     LtmMap<Sqrt::R, Fix::Epsilon, true>, LtmMap<Sqrt::X, Fix::Epsilon, false>,
                     LtmMap<Sqrt::N, Fix::Epsilon, false>, LtmMap<Sqrt::R, Fix::Epsilon, false>,
                     UtmMap<UtmFix::Exact, true>, UtmMap<UtmFix::Exact, false>,
                     UtmMap<UtmFix::Published, true>, UtmMap<UtmFix::Published, false>,
                     ShippedLambda2>;
TYPED_TEST_SUITE(MapBijection, AllMaps);

TYPED_TEST(MapBijection, OntoTheTriangleOnceEach) {
  EXPECT_EQ(TypeParam::launch(0).count, 0);
  for (index_t m = 1; m <= 300; ++m)
    expect_bijection<TypeParam>(m);
  for (index_t m : {511, 512, 513, 1000, 1025})
    expect_bijection<TypeParam>(m);
}

// ---------------------------------------------------------------------------
// What each strategy launches: blocks launched against the T(m) useful ones.
TEST(MapVariants, LaunchedBlocks) {
  for (index_t m = 1; m <= 300; ++m) {
    const index_t t = tri(m);
    EXPECT_EQ(BbMap::launch(m).blocks(), m * m);
    EXPECT_EQ(RbMap::launch(m).blocks(), m * (m / 2 + 1));
    EXPECT_EQ(RbMap::launch(m).blocks() - t, m % 2 == 0 ? m / 2 : 0);
    const Launch rec = RecMap::launch(m);
    EXPECT_EQ(rec.blocks(), t);
    int levels = 0;
    while ((index_t(1) << levels) < m)
      ++levels;
    EXPECT_EQ(rec.count, 1 + levels) << m;  // 1 + ceil(log2 m)
    const Launch lam = LtmExact::launch(m);
    ASSERT_EQ(lam.count, 1);
    EXPECT_EQ(lam.pass[0].x, ceil_sqrt(t));
    EXPECT_GE(lam.blocks(), t);
    EXPECT_LT(lam.blocks() - t, lam.pass[0].x);
    EXPECT_LE(lam.pass[0].y, lam.pass[0].x);
    EXPECT_EQ(UtmExact::launch(m).blocks(), lam.blocks());
    EXPECT_EQ(ShippedLambda2::launch(m).blocks(), lam.blocks());
    EXPECT_EQ((LtmMap<Sqrt::X, Fix::Exact, false>::launch(m).blocks()),
              balanced_launch(pair_count(m)).blocks());
  }
  // Large m: the launch arithmetic itself (nothing enumerated).
  for (index_t m :
       {index_t(1) << 21, (index_t(1) << 21) + 1, (index_t(1) << 31) - 1, (index_t(1) << 32) - 1}) {
    const Launch rec = RecMap::launch(m);
    EXPECT_EQ(rec.blocks(), tri(m)) << m;
    EXPECT_LE(rec.count, Launch::kMaxPasses);
    EXPECT_EQ(RbMap::launch(m).blocks() - tri(m), m % 2 == 0 ? m / 2 : 0);
    const Launch lam = LtmExact::launch(m);
    EXPECT_GE(lam.blocks(), tri(m));
    EXPECT_LT(lam.blocks() - tri(m), lam.pass[0].x);
  }
  for (index_t v : {index_t(0), index_t(1), index_t(2), index_t(4), index_t(5), tri(65535),
                    tri((index_t(1) << 32) - 1)}) {
    const index_t x = ceil_sqrt(v);
    EXPECT_GE(u128(x) * x, u128(v));
    if (x > 0) EXPECT_LT(u128(x - 1) * (x - 1), u128(v));
  }
}

// The exact λ_R (its float estimate, the product's correction) is tdsolve's
// shipped λ2 up to the label reversal: lambda2_tile = (m-1-R, m-1-C).
TEST(MapVariants, ExactLtmIsTheShippedLambda2) {
  const index_t m = 301;
  for (index_t w = 0; w < tri(m); ++w) {
    index_t i, j;
    LtmMap<Sqrt::R, Fix::Exact, true>::tile(w, &i, &j);
    const Tile t = lambda2_tile(m, w);
    ASSERT_EQ(t.row, m - 1 - j);
    ASSERT_EQ(t.col, m - 1 - i);
  }
}

// The laboratory's `ltm` is the product's λ2 as the CUDA backend launches it
// for a whole triangle (Lambda2Map's grid, reversed: the default "long"
// order): laboratory block ω of the balanced grid gets the tile the product's
// block ω gets, so the laboratory times the product's own map.
TEST(MapVariants, LaboratoryLtmIsTheProductsLambda2) {
  using tdsolve::lab::MapId;
  for (const index_t n : {index_t(1), index_t(16), index_t(17), index_t(1000), index_t(4097)}) {
    const PairDomain d(n, 16);
    Grid product = Lambda2Map::grid(d, 0, d.m);
    product.reversed = true;
    const Launch l = tdsolve::lab::dispatch_lab_map(
        MapId::ltm, [&](auto M) { return tdsolve::lab::lab_launch<decltype(M)>(d.m); });
    ASSERT_EQ(l.count, 1);
    ASSERT_EQ(product.x, tri(d.m));
    index_t tiles = 0;
    for (index_t by = 0; by < l.pass[0].y; ++by)
      for (index_t bx = 0; bx < l.pass[0].x; ++bx) {
        const index_t w = by * l.pass[0].x + bx;
        index_t i = 0, j = 0;
        const bool kept = tdsolve::lab::dispatch_lab_map(MapId::ltm, [&](auto M) {
          return tdsolve::lab::lab_tile<decltype(M)>(d.m, l.pass[0], bx, by, &i, &j);
        });
        ASSERT_EQ(kept, w < product.x) << w;
        if (!kept) continue;
        ++tiles;
        Tile t;
        ASSERT_TRUE(Lambda2Map::tile(d, product, w, 0, &t));
        ASSERT_EQ(i, t.row) << "n=" << n << " ω=" << w;
        ASSERT_EQ(j, t.col) << "n=" << n << " ω=" << w;
      }
    EXPECT_EQ(tiles, tri(d.m));
  }
}

// ...and, against the integer reference, up to its largest m (ω near 2^61):
// block ω holds the reversed labels of λ's tile of T(m) - 1 - ω.
TEST(MapVariants, ShippedLambda2MatchesTheReferenceAtLargeSizes) {
  for (const index_t m : {index_t(1) << 21, (index_t(1) << 21) + 1, (index_t(1) << 30) + 12345,
                          ShippedLambda2::kMaxM}) {
    const index_t total = tri(m);
    const Pass p = ShippedLambda2::launch(m).pass[0];
    std::vector<index_t> ws;
    for (index_t d = 0; d < 64; ++d) {
      ws.push_back(d);
      ws.push_back(total - 1 - d);
    }
    for (int k = 0; k < 32; ++k)  // row boundaries of the reversed ω
      for (const index_t r : {(index_t(1) << k) - 1, index_t(1) << k, (index_t(1) << k) + 1}) {
        if (tri(r) >= total) continue;
        for (const index_t t : {tri(r) - (r > 0), tri(r), tri(r) + 1})
          if (t < total) ws.push_back(total - 1 - t);
      }
    std::mt19937_64 rng(m);
    for (int k = 0; k < 20000; ++k)
      ws.push_back((rng() >> (rng() % 63)) % total);
    for (const index_t w : ws) {
      bool kept = false;
      const Ij got = map_linear<ShippedLambda2>(m, p, w, &kept);
      const Ij ref = lambda_ref(total - 1 - w, true);  // (C, R)
      ASSERT_TRUE(kept) << w;
      ASSERT_TRUE((got == Ij{m - 1 - ref.j, m - 1 - ref.i})) << "m=" << m << " ω=" << w;
    }
    // The discarded tail (fewer than x blocks): its ends.
    for (index_t d = 0; d < 64 && total + d < p.blocks(); ++d)
      for (const index_t w : {total + d, p.blocks() - 1 - d}) {
        bool kept = true;
        map_linear<ShippedLambda2>(m, p, w, &kept);
        ASSERT_FALSE(kept) << w;
      }
  }
}

// ---------------------------------------------------------------------------
// Exact λ at large sizes: every row boundary (T(r)-1, T(r), T(r)+1) of every
// row of m = 2^21 through the map and its balanced grid, the last tiles and
// the discarded tail; and the float estimate within one row of the truth,
// so the integer correction costs at most one step each way there.
template <Sqrt S, bool kDiag>
void expect_exact_ltm_large() {
  using M = LtmMap<S, Fix::Exact, kDiag>;
  const index_t m = index_t(1) << 21;
  const Pass p = M::launch(m).pass[0];
  const index_t total = triangle_blocks(m, kDiag);
  index_t bad = 0, far = 0;
  const auto check = [&](index_t w, Ij want) {
    bool kept = false;
    const Ij got = map_linear<M>(m, p, w, &kept);
    bad += !kept || !(got == want);
    const index_t est = M::row_estimate(w);
    far += (est > want.j ? est - want.j : want.j - est) > 1;
  };
  // Row r of the λ order starts at T(r) (diagonal) or T(r-1) (strict).
  for (index_t r = 1; r < m; ++r) {
    const index_t start = kDiag ? tri(r) : tri(r - 1);
    const index_t prev_len = kDiag ? r : r - 1;  // tiles in the row before
    if (prev_len > 0) check(start - 1, Ij{prev_len - 1, r - 1});
    check(start, Ij{0, r});
    if (start + 1 < total && (kDiag || r > 1)) check(start + 1, Ij{1, r});
  }
  EXPECT_EQ(bad, 0u);
  EXPECT_EQ(far, 0u);
  bool kept = false;
  EXPECT_TRUE((map_linear<M>(m, p, total - 1, &kept) == Ij{m - 2 + kDiag, m - 1}));
  EXPECT_TRUE(kept);
  for (index_t w = total; w < p.blocks(); ++w) {
    map_linear<M>(m, p, w, &kept);
    ASSERT_FALSE(kept) << w;
  }
}

TEST(MapVariants, ExactLtmEveryRowBoundaryOf2Pow21Rows) {
  expect_exact_ltm_large<Sqrt::X, true>();
  expect_exact_ltm_large<Sqrt::N, true>();
  expect_exact_ltm_large<Sqrt::R, true>();
  expect_exact_ltm_large<Sqrt::X, false>();
  expect_exact_ltm_large<Sqrt::N, false>();
  expect_exact_ltm_large<Sqrt::R, false>();
}

// ...and against the integer reference near every power of two, at random
// over every magnitude and at the very end of the 64-bit range (the last
// tiles of m = 2^32 - 1, ω near 2^63).
template <Sqrt S, bool kDiag>
void expect_exact_ltm_64bit() {
  using M = LtmMap<S, Fix::Exact, kDiag>;
  const index_t top = triangle_blocks(M::kMaxM, kDiag);
  std::vector<index_t> ws;
  for (int k = 0; k < 63; ++k)
    for (index_t d = 0; d < 4; ++d) {
      ws.push_back((index_t(1) << k) + d);
      if ((index_t(1) << k) > d) ws.push_back((index_t(1) << k) - 1 - d);
    }
  for (index_t d = 1; d <= 64; ++d)
    ws.push_back(top - d);
  std::mt19937_64 rng(20261122);
  for (int k = 0; k < 20000; ++k)
    ws.push_back((rng() >> (1 + rng() % 63)) % top);
  for (const index_t w : ws) {
    Ij got;
    M::tile(w, &got.i, &got.j);
    ASSERT_TRUE(got == lambda_ref(w, kDiag)) << "ω=" << w;
  }
}

TEST(MapVariants, ExactLtmMatchesTheReferenceTo2Pow63) {
  expect_exact_ltm_64bit<Sqrt::X, true>();
  expect_exact_ltm_64bit<Sqrt::N, true>();
  expect_exact_ltm_64bit<Sqrt::R, true>();
  expect_exact_ltm_64bit<Sqrt::X, false>();
  expect_exact_ltm_64bit<Sqrt::N, false>();
  expect_exact_ltm_64bit<Sqrt::R, false>();
}

// ---------------------------------------------------------------------------
// Where the papers' float λ variants first return a wrong tile: ω scanned
// one by one from 0 (no sampling: N's and R's roots need not be monotone),
// against a reference row carried along (no square root involved).
template <typename M>
index_t first_wrong_omega(index_t limit) {
  index_t r = M::kDiagonal ? 0 : 1, start = 0;  // current row and its first ω
  for (index_t w = 0; w < limit; ++w) {
    const index_t len = M::kDiagonal ? r + 1 : r;
    if (w == start + len) {
      start += len;
      ++r;
    }
    index_t i, j;
    M::tile(w, &i, &j);
    if (j != r || i != w - start) return w;
  }
  return limit;
}

// The papers (seed 000 §III.A, §V; seed 002 §4.1) add ε = 1e-4 to the row
// and claim it exact for N <= 30720 threads with 16×16 blocks: m <= 1920
// block rows, ω < T(1920) = 1,844,160. Found on the host (bit-identical on
// the device except λ_R, whose device rsqrtf is not 1/sqrtf):
//   variant       first wrong ω   true row of ω     first m hit   first n at ρ = 16
//   λ_X + ε       10,619,135      4607 (T(4608)-1)  4608          73,713
//   λ_N + ε        1,910,035      1954 (T(1954))    1955          31,265
//   λ_R + ε        2,110,485      2054 (T(2054))    2055          32,865
//   λ_X, no ε     10,619,135      as with ε (sqrtf rounds T(r)-1 up to row r)
//   λ_N, no ε              6      3 (T(3))          (why the papers add ε)
//   λ_R, no ε            465      30 (T(30))
// The strict variants (no diagonal) fail at the same ω: their rows are the
// same float expression shifted by one. So only λ_X reaches the ~1.06e7 often
// quoted; λ_N and λ_R hold the claimed range only just (m up to 1954 and
// 2054 against 1920). At a row's first ω = T(r) the exact root is r + 1/2,
// and ε must cover the float root's shortfall; but the ulp of the root is
// 1.2e-4 past 1024 and 2.4e-4 past 2048: λ_N's root of T(1954) is 2 ulps
// low, λ_R's of T(2054) 1 ulp (and past ω = 2^21, v = 1/4 + 2ω no longer
// holds its 1/4). λ_X fails the other way: at T(4608) - 1 the exact root
// lies 2.4e-4 below 4608.5, under half its ulp (4.9e-4), and rounds up to
// it, a row too far. λ_N here takes sqrt = 1/fast_rsqrt(v); as
// v·fast_rsqrt(v) (λ_R's eq. 9 form) it fails at ω = 1,316,253 (m = 1623),
// inside the claimed range.
TEST(MapVariants, EpsilonVariantsFirstFailures) {
  const index_t claimed = tri(1920), limit = index_t(1) << 25;
  struct Row {
    const char* name;
    index_t found, recorded;
    bool eps;
  };
  const Row rows[] = {
      {"X+eps", first_wrong_omega<LtmMap<Sqrt::X, Fix::Epsilon, true>>(limit), 10619135, true},
      {"N+eps", first_wrong_omega<LtmMap<Sqrt::N, Fix::Epsilon, true>>(limit), 1910035, true},
      {"R+eps", first_wrong_omega<LtmMap<Sqrt::R, Fix::Epsilon, true>>(limit), 2110485, true},
      {"X+eps strict", first_wrong_omega<LtmMap<Sqrt::X, Fix::Epsilon, false>>(limit), 10619135,
       true},
      {"N+eps strict", first_wrong_omega<LtmMap<Sqrt::N, Fix::Epsilon, false>>(limit), 1910035,
       true},
      {"R+eps strict", first_wrong_omega<LtmMap<Sqrt::R, Fix::Epsilon, false>>(limit), 2110485,
       true},
      {"X", first_wrong_omega<LtmMap<Sqrt::X, Fix::None, true>>(limit), 10619135, false},
      {"N", first_wrong_omega<LtmMap<Sqrt::N, Fix::None, true>>(limit), 6, false},
      {"R", first_wrong_omega<LtmMap<Sqrt::R, Fix::None, true>>(limit), 465, false},
  };
  for (const Row& r : rows) {
    std::printf("λ_%-13s first wrong at ω = %llu (block row %llu)\n", r.name,
                (unsigned long long)r.found, (unsigned long long)tri_root_ref(r.found));
    EXPECT_LT(r.found, limit) << r.name << " never failed";
    EXPECT_EQ(r.found, r.recorded) << r.name;
    if (r.eps) EXPECT_GT(r.found, claimed) << r.name << " fails inside the papers' range";
  }
  // The exact flavours of the same roots do not fail there.
  EXPECT_EQ((first_wrong_omega<LtmMap<Sqrt::N, Fix::Exact, true>>(limit)), limit);
  EXPECT_EQ((first_wrong_omega<LtmMap<Sqrt::R, Fix::Exact, false>>(limit)), limit);
}

// ---------------------------------------------------------------------------
// UTM. The published float formula with its two conditionals is exact while
// its error stays within a row; scanning m = 2, 3, ... at every row boundary
// (k = K(a) - 1, K(a), K(a) + 1) it first fails at
//   strict (n = m objects):        m = 5794, k = 16,782,319
//   with the diagonal (n = m + 1): m = 5793, the same k
// (k past 2^24, where float(k) and 8k stop being exact). Avril et al. claim
// n <= 3000 (seed 002 §2, §5); as a block map that is m <= 3000 blocks.
template <typename M>
index_t utm_first_wrong_m(index_t m_limit) {
  for (index_t m = 1; m < m_limit; ++m) {
    const index_t n = M::kDiagonal ? m + 1 : m;
    for (index_t a = 0; a + 1 < n; ++a) {
      const index_t start = row_start(n, a), end = row_start(n, a + 1);
      for (const index_t k : {start, start + 1, end - 1}) {
        if (k >= end) continue;
        Ij got;
        M::tile(m, k, &got.i, &got.j);
        const index_t b = a + 1 + (k - start);
        if (!(got == Ij{a, M::kDiagonal ? b - 1 : b})) return m;
      }
    }
  }
  return m_limit;
}

TEST(MapVariants, PublishedUtmFirstFailure) {
  const index_t strict = utm_first_wrong_m<UtmMap<UtmFix::Published, false>>(8000);
  const index_t diag = utm_first_wrong_m<UtmMap<UtmFix::Published, true>>(8000);
  std::printf("UTM published first wrong at m = %llu (strict), %llu (with the diagonal)\n",
              (unsigned long long)strict, (unsigned long long)diag);
  EXPECT_EQ(strict, 5794u);
  EXPECT_EQ(diag, 5793u);
  EXPECT_GT(diag, 3000u);
}

// The exact UTM at large m: rows near both ends, near powers of two and at
// random, each at its first, second and last tile, up to its largest m.
template <bool kDiag>
void expect_exact_utm_large(index_t m) {
  using M = UtmMap<UtmFix::Exact, kDiag>;
  const index_t n = kDiag ? m + 1 : m;
  std::vector<index_t> rows;
  for (index_t a = 0; a < 8; ++a) {
    rows.push_back(a);
    rows.push_back(n - 2 - a);
  }
  for (int k = 1; (index_t(1) << k) < n - 2; ++k)
    for (index_t d : {index_t(0), index_t(1)}) {
      rows.push_back((index_t(1) << k) - d);
      rows.push_back(n - 2 - (index_t(1) << k) + d);
    }
  std::mt19937_64 rng(m);
  for (int k = 0; k < 2000; ++k)
    rows.push_back(rng() % (n - 1));
  for (const index_t a : rows) {
    const index_t start = row_start(n, a), end = row_start(n, a + 1);
    for (const index_t k : {start, start + 1, end - 1}) {
      if (k >= end) continue;
      Ij got;
      M::tile(m, k, &got.i, &got.j);
      const index_t b = a + 1 + (k - start);
      ASSERT_TRUE((got == Ij{a, kDiag ? b - 1 : b})) << "m=" << m << " row " << a << " k=" << k;
    }
  }
  // Through the balanced grid: the last tile, the discarded tail.
  const Pass p = M::launch(m).pass[0];
  bool kept = false;
  EXPECT_TRUE((map_linear<M>(m, p, triangle_blocks(m, kDiag) - 1, &kept) ==
               utm_ref(m, triangle_blocks(m, kDiag) - 1, kDiag)));
  EXPECT_TRUE(kept);
  map_linear<M>(m, p, p.blocks() - 1, &kept);
  EXPECT_EQ(kept, p.blocks() == triangle_blocks(m, kDiag));
}

TEST(MapVariants, ExactUtmAtLargeSizes) {
  for (index_t m : {index_t(6000), index_t(1) << 21, (index_t(1) << 21) + 1, index_t(1) << 30}) {
    expect_exact_utm_large<true>(m);
    expect_exact_utm_large<false>(m);
  }
  expect_exact_utm_large<true>(UtmMap<UtmFix::Exact, true>::kMaxM);
  expect_exact_utm_large<false>(UtmMap<UtmFix::Exact, false>::kMaxM);
  // The reference itself against the map's order at small m.
  for (index_t m = 1; m < 40; ++m)
    for (index_t k = 0; k < tri(m); ++k) {
      Ij got;
      UtmMap<UtmFix::Exact, true>::tile(m, k, &got.i, &got.j);
      ASSERT_TRUE(got == utm_ref(m, k, true));
    }
}

// ---------------------------------------------------------------------------
// RB and REC at large m, where enumeration is out of reach: each is checked
// against its inverse (written here from the geometry, not from the map):
// sampled blocks of every pass map to tiles of the triangle whose inverse is
// that block, and sampled tiles' inverse blocks map back to them. With the
// block counts of LaunchedBlocks that makes each a bijection on the samples.
struct BlockAt {
  int pass;
  index_t bx, by;
  bool operator==(const BlockAt& o) const { return pass == o.pass && bx == o.bx && by == o.by; }
};

// RB: rows R < ⌊m/2⌋ of the lower triangle sit below the box's diagonal one
// row down; the rest rotated by 180°.
BlockAt rb_inverse(index_t m, index_t i, index_t j) {
  const index_t R = j, C = i;
  if (R < m / 2) return BlockAt{0, C, R + 1};
  return BlockAt{0, m - 1 - C, m - 1 - R};
}

// REC: the diagonal pass; otherwise the level is the highest bit where R and
// C differ (+1): both lie in the same 2s-aligned band q, R in its lower half.
BlockAt rec_inverse(index_t, index_t i, index_t j) {
  if (i == j) return BlockAt{0, i, 0};
  const index_t R = j, C = i;
  int level = 0;
  while ((R ^ C) >> level)
    ++level;
  const index_t s = index_t(1) << (level - 1), q = R >> level;
  return BlockAt{level, C - 2 * q * s, q * s + (R & (s - 1))};
}

template <typename Map, typename Inverse>
void expect_round_trips(index_t m, Inverse inverse) {
  const Launch l = Map::launch(m);
  std::mt19937_64 rng(m * 31 + 7);
  const auto picks = [&](index_t len) {
    std::vector<index_t> v;
    for (index_t d = 0; d < 3 && d < len; ++d) {
      v.push_back(d);
      v.push_back(len - 1 - d);
    }
    v.push_back(len / 2);
    for (int k = 0; k < 40; ++k)
      v.push_back(rng() % len);
    return v;
  };
  index_t kept_blocks = 0;
  for (int p = 0; p < l.count; ++p) {
    const Pass& pass = l.pass[p];
    for (const index_t by : picks(pass.y))
      for (const index_t bx : picks(pass.x)) {
        index_t i, j;
        if (!Map::map(m, pass, bx, by, &i, &j)) {
          // Only RB discards: the repeated half row of an even m.
          ASSERT_TRUE(m % 2 == 0 && 2 * by == m && bx >= by) << m;
          continue;
        }
        ++kept_blocks;
        ASSERT_LE(i, j) << m;
        ASSERT_LT(j, m) << m;
        ASSERT_TRUE((inverse(m, i, j) == BlockAt{p, bx, by}))
            << "m=" << m << " pass " << p << " block " << bx << "," << by;
      }
  }
  EXPECT_GT(kept_blocks, 0u);
  for (const index_t j : picks(m))
    for (const index_t i : picks(j + 1)) {
      const BlockAt b = inverse(m, i, j);
      ASSERT_LT(b.pass, l.count);
      ASSERT_LT(b.bx, l.pass[b.pass].x);
      ASSERT_LT(b.by, l.pass[b.pass].y);
      index_t gi, gj;
      ASSERT_TRUE(Map::map(m, l.pass[b.pass], b.bx, b.by, &gi, &gj));
      ASSERT_EQ(gi, i);
      ASSERT_EQ(gj, j);
    }
}

TEST(MapVariants, RbAndRecRoundTripAtLargeSizes) {
  // Small m first, where MapBijection has enumerated both maps, so a wrong
  // inverse shows up here rather than as a false failure at large m.
  for (index_t m : {1, 2, 3, 8, 37, 64, 100}) {
    expect_round_trips<RbMap>(m, rb_inverse);
    expect_round_trips<RecMap>(m, rec_inverse);
  }
  for (index_t m : {index_t(1) << 21, (index_t(1) << 21) + 1, (index_t(1) << 21) + 12345,
                    (index_t(1) << 31) + 7, (index_t(1) << 32) - 1, (index_t(1) << 32) - 2}) {
    expect_round_trips<RbMap>(m, rb_inverse);
    expect_round_trips<RecMap>(m, rec_inverse);
  }
}
