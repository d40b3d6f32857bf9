// The triplet domain and λ3 (mapping/tetra.hpp) against brute force.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "mapping/block_map.hpp"
#include "mapping/partition.hpp"
#include "mapping/tetra.hpp"

using namespace tdsolve;
using namespace tdsolve::mapping;

namespace {

// Largest r with Te(r) <= w by bisection on exact 128-bit products.
index_t tet_root_ref(index_t w) {
  index_t lo = 0, hi = 4000000;  // Te(4e6) > 2^63
  while (lo < hi) {
    const index_t mid = lo + (hi - lo + 1) / 2;
    const unsigned __int128 t = (unsigned __int128)mid * (mid + 1) * (mid + 2) / 6;
    if (t <= w)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

}  // namespace

TEST(TetRoot, EveryLayerBoundaryUpTo2Pow53) {
  EXPECT_EQ(tet_root(0), 0u);
  const index_t last = tet_root_ref(index_t(1) << 53) + 1;
  index_t failures = 0;
  for (index_t r = 1; r <= last; ++r) {
    const index_t t = tet(r);
    failures += tet_root(t - 1) != r - 1;
    failures += tet_root(t) != r;
    failures += tet_root(t + 1) != r;
  }
  EXPECT_EQ(failures, 0u) << "layers checked: " << last;
}

TEST(TetRoot, MatchesTheIntegerReferenceUpTo2Pow62) {
  std::mt19937_64 rng(20261122);
  for (int k = 0; k < 300000; ++k) {
    const index_t w = rng() >> (2 + rng() % 62);
    ASSERT_EQ(tet_root(w), tet_root_ref(w)) << w;
  }
  const index_t top = tet_root_ref((index_t(1) << 62) - 1);
  for (index_t r = top - 2000; r <= top; ++r) {
    const index_t t = tet(r);
    for (index_t w : {t - 2, t - 1, t, t + 1, t + 2})
      ASSERT_EQ(tet_root(w), tet_root_ref(w)) << w;
  }
  // The correction repairs estimates that are off by a few.
  for (index_t w : {index_t(0), index_t(7), index_t(1) << 40, (index_t(1) << 62) - 1}) {
    const index_t r = tet_root_ref(w);
    for (index_t off = 0; off < 4; ++off) {
      EXPECT_EQ(tet_root_correct(w, r + off), r) << w;
      if (r >= off) EXPECT_EQ(tet_root_correct(w, r - off), r) << w;
    }
  }
}

// Packed order is itertools.combinations(range(n), 3).
TEST(Triplets, RankIsCombinationsOrderAndUnrankInvertsIt) {
  for (index_t n = 3; n <= 45; ++n) {
    index_t p = 0;
    for (index_t i = 0; i < n; ++i)
      for (index_t j = i + 1; j < n; ++j)
        for (index_t k = j + 1; k < n; ++k, ++p) {
          ASSERT_EQ(triplet_rank(n, i, j, k), p) << n << " " << i << " " << j << " " << k;
          const Triplet t = triplet_unrank(n, p);
          ASSERT_TRUE(t.i == i && t.j == j && t.k == k) << n << " " << p;
        }
    ASSERT_EQ(p, triplet_count(n));
  }
  // Large n (C(n,3) near 2^62): round trips at random ranks and at the ends.
  std::mt19937_64 rng(7);
  for (index_t n : {index_t(1000), index_t(100000), index_t(3000000)}) {
    const index_t total = triplet_count(n);
    for (int k = 0; k < 20000; ++k) {
      const index_t p = k == 0 ? 0 : k == 1 ? total - 1 : rng() % total;
      const Triplet t = triplet_unrank(n, p);
      ASSERT_TRUE(t.i < t.j && t.j < t.k && t.k < n) << n << " " << p;
      ASSERT_EQ(triplet_rank(n, t.i, t.j, t.k), p) << n;
    }
  }
}

// λ3 visits every tile I <= J <= K < m once, a block layer's tiles being
// exactly the ω range lambda3_blocks gives for it; the strict variant visits
// every I < J < K once.
TEST(Lambda3, CoversEveryTileOnceLayerByLayer) {
  for (index_t m : {1, 2, 3, 4, 5, 7, 16, 33, 40, 300}) {
    std::vector<unsigned char> seen(m * m * m, 0);
    for (index_t I = 0; I < m; ++I) {
      const BlockRange w = lambda3_blocks(m, I, I + 1);
      for (index_t o = w.begin; o < w.end; ++o) {
        const Tile3 t = lambda3_tile(m, o);
        ASSERT_EQ(t.layer, I) << m << " " << o;
        ASSERT_TRUE(t.layer <= t.row && t.row <= t.col && t.col < m) << m << " " << o;
        ASSERT_EQ(seen[(t.layer * m + t.row) * m + t.col]++, 0) << m << " " << o;
      }
    }
    ASSERT_EQ(lambda3_blocks(m, 0, m).size(), tet(m));
    index_t count = 0;
    for (unsigned char s : seen)
      count += s;
    ASSERT_EQ(count, tet(m)) << m;

    std::vector<unsigned char> strict(m * m * m, 0);
    for (index_t o = 0; o < triplet_count(m); ++o) {
      const Tile3 t = lambda3_strict_tile(m, o);
      ASSERT_TRUE(t.layer < t.row && t.row < t.col && t.col < m) << m << " " << o;
      ASSERT_EQ(strict[(t.layer * m + t.row) * m + t.col]++, 0) << m << " " << o;
    }
  }
}

// What the device check asserts at every layer boundary, here on the host.
TEST(Lambda3, LayerBoundariesAsTheDeviceCheckSeesThem) {
  const index_t m = tet_root_ref(index_t(1) << 53) + 2;
  for (index_t r = 1; r < m; r += r < 5000 ? 1 : 97) {
    const index_t t = tet(r);
    const Tile3 a = lambda3_tile(m, t), b = lambda3_tile(m, t - 1);
    ASSERT_TRUE(a.layer == m - 1 - r && a.row == m - 1 && a.col == m - 1) << r;
    ASSERT_TRUE(b.layer == m - r && b.row == m - r && b.col == m - r) << r;
  }
}

// At the top of the index range (ω near 2^62) the map stays exact.
TEST(Lambda3, ExactForTheLargestBlockCounts) {
  const index_t m = tet_root_ref((index_t(1) << 62) - 1);  // Te(m) <= 2^62 - 1
  std::mt19937_64 rng(3);
  for (int k = 0; k < 100000; ++k) {
    const index_t o = k < 3 ? (k == 0 ? 0 : tet(m) - k) : rng() % tet(m);
    const Tile3 t = lambda3_tile(m, o);
    ASSERT_TRUE(t.layer <= t.row && t.row <= t.col && t.col < m) << o;
    // Its ω back from the tile: layer, then the triangle inside it.
    const index_t r = m - 1 - t.layer, s = m - 1 - t.row, u = m - 1 - t.col;
    ASSERT_EQ(tet(r) + tri(s) + u, o) << o;
  }
}

// The domain's offsets are those of the packed order, and a chunk plan over
// it tiles the triplets exactly.
TEST(TripletDomain, OffsetsAndChunksMatchThePackedOrder) {
  for (index_t n : {3, 4, 7, 16, 17, 50, 301}) {
    for (index_t rho : {1, 2, 4, 16, 128}) {
      const TripletDomain d(n, rho);
      EXPECT_EQ(d.total(), triplet_count(n));
      for (index_t I = 0; I <= d.m; ++I) {
        const index_t i = std::min(I * rho, n);
        const index_t want = i + 2 < n ? triplet_rank(n, i, i + 1, i + 2) : triplet_count(n);
        ASSERT_EQ(d.elements_before(I), want) << n << " " << rho << " " << I;
      }
      // Triplets of the tiles of each chunk, counted by brute force.
      const ChunkPlan plan(d, triplet_count(n) / 5 + 1);
      EXPECT_EQ(plan.total(), d.total());
      for (index_t c = 0; c < plan.chunks(); ++c) {
        const BlockRange w = lambda3_blocks(d.m, plan.row_begin(c), plan.row_end(c));
        index_t inside = 0;
        for (index_t o = w.begin; o < w.end; ++o) {
          const Tile3 t = lambda3_tile(d.m, o);
          for (index_t i = t.layer * rho; i < std::min(n, (t.layer + 1) * rho); ++i)
            for (index_t j = t.row * rho; j < std::min(n, (t.row + 1) * rho); ++j)
              for (index_t k = t.col * rho; k < std::min(n, (t.col + 1) * rho); ++k)
                inside += i < j && j < k;
        }
        ASSERT_EQ(inside, plan.elements(c)) << n << " " << rho << " chunk " << c;
      }
      const ChunkPlan back = ChunkPlan::from_offsets(d, plan.offsets());
      EXPECT_EQ(back.offsets(), plan.offsets());
    }
  }
}

// Both triplet maps visit each tile of a chunk's layers once; λ3 launches
// nothing else, BB-3D the whole m² box per layer (seed 002 §6: ~6× more
// blocks for large m).
template <typename Map>
std::vector<int> visits3(const TripletDomain& d, index_t I0, index_t I1, index_t* launched) {
  std::vector<int> v(d.m * d.m * d.m, 0);
  const Grid g = Map::grid(d, I0, I1);
  *launched = g.blocks();
  for (index_t by = 0; by < g.y; ++by)
    for (index_t bx = 0; bx < g.x; ++bx) {
      Tile3 t{};
      if (Map::tile(d, g, bx, by, &t)) ++v[(t.layer * d.m + t.row) * d.m + t.col];
    }
  return v;
}

TEST(BlockMaps3, TripletMapsVisitEachTileOfAChunkOnce) {
  for (index_t n : {3, 4, 17, 40, 101}) {
    for (index_t rho : {1, 4, 16}) {
      const TripletDomain d(n, rho);
      const index_t m = d.m;
      for (index_t I0 = 0; I0 < m; I0 += 1 + m / 4) {
        const index_t I1 = std::min(m, I0 + 1 + m / 3);
        index_t l_blocks = 0, b_blocks = 0, want_tiles = 0;
        const std::vector<int> l = visits3<Lambda3Map>(d, I0, I1, &l_blocks);
        const std::vector<int> b = visits3<BoundingBox3Map>(d, I0, I1, &b_blocks);
        for (index_t I = 0; I < m; ++I)
          for (index_t J = 0; J < m; ++J)
            for (index_t K = 0; K < m; ++K) {
              const int want = I >= I0 && I < I1 && I <= J && J <= K;
              want_tiles += want;
              const index_t at = (I * m + J) * m + K;
              ASSERT_EQ(l[at], want) << "λ3 n=" << n << " ρ=" << rho << " " << I << J << K;
              ASSERT_EQ(b[at], want) << "bb3 n=" << n << " ρ=" << rho << " " << I << J << K;
            }
        EXPECT_EQ(l_blocks, want_tiles);
        EXPECT_EQ(b_blocks, m * m * (I1 - I0));
      }
    }
  }
  const TripletDomain big(300 * 16, 16);
  EXPECT_GT(double(BoundingBox3Map::grid(big, 0, big.m).blocks()) /
                double(Lambda3Map::grid(big, 0, big.m).blocks()),
            5.9);
}
