// The per-value epilogues: numpy.histogram's binning (against numpy's own
// counts, and the fast path against the always-checking one) and the
// minimum image of a periodic box (against values derived by hand), the
// top-k list against a stable sort, and the epilogue types.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>
#include <vector>

#include "solver/epi.hpp"
#include "solver/epilogue.hpp"
#include "solver/problem.hpp"

using namespace tdsolve;

namespace {

struct Golden {
  double lo, hi;
  index_t bins;
  std::vector<double> edges;          // numpy.linspace(lo, hi, bins + 1)
  std::vector<std::uint64_t> counts;  // [x < lo, numpy.histogram counts..., x > hi]
};

// Golden data from numpy 1.24.2 (Debian 12's python3-numpy), computed on
// 2026-11-22 with /usr/bin/python3 and printed with float.hex():
//   def slots(x, lo, hi, b):
//       x = np.array(x, dtype=np.float64)
//       c, e = np.histogram(x, bins=b, range=(lo, hi))
//       return [(x < lo).sum()] + list(c) + [(x > hi).sum()], e
// "A": the values kValuesA below, 5 bins over [0, 1].
// "B", "C", "D": every edge of np.linspace(lo, hi, b + 1) and the values 1, 2
// and 3 ulps either side (np.nextafter), built the same way by edge_values().
const Golden kA{0.0,
                1.0,
                5,
                {0x0.0p+0, 0x1.999999999999ap-3, 0x1.999999999999ap-2, 0x1.3333333333334p-1,
                 0x1.999999999999ap-1, 0x1.0000000000000p+0},
                {2, 3, 2, 3, 2, 4, 2}};
const Golden kB{
    -1.3,
    2.9,
    7,
    {-0x1.4cccccccccccdp+0, -0x1.6666666666667p-1, -0x1.99999999999a0p-4, 0x1.ffffffffffffcp-2,
     0x1.1999999999999p+0, 0x1.b333333333333p+0, 0x1.2666666666666p+1, 0x1.7333333333333p+1},
    {3, 7, 7, 7, 7, 7, 7, 8, 3}};
const Golden kC{
    0.1,
    0.7,
    3,
    {0x1.999999999999ap-4, 0x1.3333333333333p-2, 0x1.0000000000000p-1, 0x1.6666666666666p-1},
    {3, 7, 7, 8, 3}};
const Golden kD{
    0.37,
    5.9,
    13,
    {0x1.7ae147ae147aep-2, 0x1.973ca6fda30d6p-1, 0x1.388455121deebp+0, 0x1.a56a56a56a56ap+0,
     0x1.09282c1c5b5f5p+1, 0x1.3f9b2ce601935p+1, 0x1.760e2dafa7c75p+1, 0x1.ac812e794dfb5p+1,
     0x1.e2f42f42f42f5p+1, 0x1.0cb398064d31ap+2, 0x1.27ed186b204bap+2, 0x1.432698cff365ap+2,
     0x1.5e601934c67fap+2, 0x1.799999999999ap+2},
    {3, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 8, 3}};

// Values exactly on edges (0.6 is not the edge 0.6000000000000001 numpy
// computes as 3 * 0.2), one ulp off them, inside bins and out of range.
const std::vector<double> kValuesA = {0x0.0p+0,  // 0.0
                                      0x1.999999999999ap-3,
                                      0x1.999999999999ap-2,
                                      0x1.3333333333333p-1,
                                      0x1.3333333333334p-1,
                                      0x1.999999999999ap-1,
                                      0x1.0000000000000p+0,
                                      0x1.0000000000001p+0,      // nextafter(1, 2)
                                      -0x0.0000000000001p-1022,  // nextafter(0, -1)
                                      -0x1.999999999999ap-4,
                                      0x1.199999999999ap+0,
                                      0x1.999999999999ap-4,
                                      0x1.9999999999999p-3,  // nextafter(0.2, 0)
                                      0x1.0000000000000p-1,
                                      0x1.6666666666666p-1,
                                      0x1.fffffffffffffp-1,  // nextafter(1, 0)
                                      0x1.3333333333333p-2,
                                      0x1.ccccccccccccdp-1};

// Each edge and 1..3 ulps either side, in numpy's order (edge, +1, -1, +2, -2, ...).
std::vector<double> edge_values(const std::vector<double>& edges, int ulps) {
  std::vector<double> v;
  const double inf = std::numeric_limits<double>::infinity();
  for (double e : edges) {
    v.push_back(e);
    double up = e, down = e;
    for (int k = 0; k < ulps; ++k) {
      up = std::nextafter(up, inf);
      down = std::nextafter(down, -inf);
      v.push_back(up);
      v.push_back(down);
    }
  }
  return v;
}

index_t slot(const HistSpec& h, double x, double margin) {
  const double norm = static_cast<double>(h.bins) / (h.hi - h.lo);  // as view_of does
  return epilogue::histogram_slot(x, h.lo, h.hi, norm, h.bins, h.edges.data(), margin);
}

std::vector<std::uint64_t> counts(const HistSpec& h, const std::vector<double>& values,
                                  double margin) {
  std::vector<std::uint64_t> c(h.slots(), 0);
  for (double x : values)
    ++c[slot(h, x, margin)];
  return c;
}

// The fast margin is in force (not turned off by the environment).
HistSpec spec(double lo, double hi, index_t bins) {
  unsetenv("TDSOLVE_HIST_EXACT_ALWAYS");
  return make_hist_spec(lo, hi, bins);
}

}  // namespace

TEST(Histogram, EdgesAreNumpyLinspaceToTheBit) {
  for (const Golden* g : {&kA, &kB, &kC, &kD}) {
    const std::vector<double> e = linspace_edges(g->lo, g->hi, g->bins);
    ASSERT_EQ(e.size(), g->edges.size());
    for (size_t k = 0; k < e.size(); ++k)
      EXPECT_EQ(e[k], g->edges[k]) << "range " << g->lo << ".." << g->hi << " edge " << k;
    EXPECT_EQ(spec(g->lo, g->hi, g->bins).edges, g->edges);
  }
}

TEST(Histogram, CountsEqualNumpyOnEdges) {
  const HistSpec a = spec(kA.lo, kA.hi, kA.bins);
  ASSERT_LT(a.margin, 0.25) << "the fast path must be in use";
  EXPECT_EQ(counts(a, kValuesA, a.margin), kA.counts);
  EXPECT_EQ(counts(a, kValuesA, 1.0), kA.counts);
  for (const Golden* g : {&kB, &kC, &kD}) {
    const HistSpec h = spec(g->lo, g->hi, g->bins);
    ASSERT_LT(h.margin, 0.25);
    const std::vector<double> v = edge_values(g->edges, 3);
    ASSERT_EQ(v.size(), 7 * g->edges.size());
    EXPECT_EQ(counts(h, v, h.margin), g->counts) << "range " << g->lo << ".." << g->hi;
    EXPECT_EQ(counts(h, v, 1.0), g->counts) << "range " << g->lo << ".." << g->hi;
  }
}

// Slot by slot, values at and beside the edges: x lands in the bin whose
// [edge k, edge k+1) holds it (the last bin closed), as numpy's correction
// step guarantees.
TEST(Histogram, SlotsFollowTheEdges) {
  for (const Golden* g : {&kA, &kB, &kC, &kD}) {
    const HistSpec h = spec(g->lo, g->hi, g->bins);
    for (double x : edge_values(g->edges, 3)) {
      index_t want;
      if (x < g->lo) {
        want = 0;
      } else if (x > g->hi) {
        want = g->bins + 1;
      } else {
        want = g->bins;  // x == hi, or in the last bin
        for (index_t k = 0; k < g->bins; ++k)
          if (x >= g->edges[k] && x < g->edges[k + 1]) want = k + 1;
      }
      EXPECT_EQ(slot(h, x, h.margin), want) << std::hexfloat << x;
    }
  }
}

// The fast path (skip the edge checks when (x - lo)·B/(hi - lo) is more than
// `margin` from an integer) never changes a slot: random values over the
// range and beyond, and every edge ±4 ulps, for ranges from awkward to wide.
TEST(Histogram, FastMarginEqualsAlwaysChecking) {
  struct R {
    double lo, hi;
    index_t bins;
  };
  const R ranges[] = {{0, 1, 5},          {-1.3, 2.9, 7},     {0.1, 0.7, 3},
                      {0.37, 5.9, 13},    {0, 3.5, 1000},     {1000, 1001, 64},
                      {-1e6, 1e6, 99991}, {1e-3, 2e-3, 4097}, {0, 1.7320508075688772, 1 << 16},
                      {-7.25, -0.5, 1}};
  std::mt19937_64 rng(42);
  index_t fast_used = 0;
  for (const R& r : ranges) {
    const HistSpec h = spec(r.lo, r.hi, r.bins);
    ASSERT_LT(h.margin, 0.25) << r.lo << ".." << r.hi << " " << r.bins;
    const double w = r.hi - r.lo;
    std::uniform_real_distribution<double> u(r.lo - 0.05 * w, r.hi + 0.05 * w);
    std::vector<double> values = edge_values(h.edges, 4);
    for (int k = 0; k < 200000; ++k)
      values.push_back(u(rng));
    // Bin centres ± a few ulps of the scaled index: far from every edge.
    for (index_t k = 0; k < r.bins; k += 1 + r.bins / 500)
      values.push_back(r.lo + (k + 0.5) * w / r.bins);
    for (double x : values) {
      const index_t fast = slot(h, x, h.margin), exact = slot(h, x, 1.0);
      ASSERT_EQ(fast, exact) << std::hexfloat << "x=" << x << " range " << r.lo << ".." << r.hi
                             << " bins " << std::dec << r.bins;
    }
    // With edges that would move every value, only values that took the
    // fast path keep their slot: it is taken for most values.
    const std::vector<double> poisoned(h.edges.size(), std::numeric_limits<double>::infinity());
    const double norm = static_cast<double>(h.bins) / w;
    for (index_t k = 0; k < r.bins; k += 1 + r.bins / 500) {
      const double x = r.lo + (k + 0.5) * w / r.bins;
      fast_used += epilogue::histogram_slot(x, h.lo, h.hi, norm, h.bins, poisoned.data(),
                                            h.margin) == slot(h, x, 1.0);
    }
  }
  EXPECT_GT(fast_used, 1000u);
}

// The float32 screen (float runs) gives the slot of the exact path for
// every float: random values in and around the range, and the floats within
// 8 steps of every edge, of lo and of hi.
TEST(Histogram, Float32ScreenEqualsAlwaysChecking) {
  struct R {
    double lo, hi;
    index_t bins;
  };
  const R ranges[] = {{0, 1.8, 200},        {0, 1, 5},          {-1.3, 2.9, 7},
                      {0.1, 0.7, 3},        {0.37, 5.9, 13},    {0, 3.5, 1000},
                      {1000, 1001, 64},     {1e-3, 2e-3, 4097}, {0, 2, 1000000},
                      {0.1, 0.30000001, 9}, {-7.25, -0.5, 1}};
  std::mt19937_64 rng(7);
  index_t screened = 0, total = 0;
  for (const R& r : ranges) {
    const HistSpec h = spec(r.lo, r.hi, r.bins);
    const double norm = static_cast<double>(h.bins) / (r.hi - r.lo);
    const double w = r.hi - r.lo;
    std::uniform_real_distribution<double> u(r.lo - 0.05 * w, r.hi + 0.05 * w);
    std::vector<float> values;
    for (int k = 0; k < 200000; ++k)
      values.push_back(static_cast<float>(u(rng)));
    std::vector<double> marks = h.edges;
    for (index_t k = 0; k < h.edges.size(); k += 1 + h.edges.size() / 2000)
      marks.push_back(h.edges[k]);
    marks.push_back(r.lo);
    marks.push_back(r.hi);
    for (double e : marks) {
      float x = static_cast<float>(e);
      for (int k = 0; k < 8; ++k)
        x = std::nextafter(x, -std::numeric_limits<float>::infinity());
      for (int k = 0; k < 17; ++k, x = std::nextafter(x, std::numeric_limits<float>::infinity()))
        values.push_back(x);
    }
    for (float x : values) {
      const index_t screen =
          epilogue::histogram_slot(x, h.fast32, h.lo, h.hi, norm, h.bins, h.edges.data(), h.margin);
      const index_t exact = slot(h, static_cast<double>(x), 1.0);
      ASSERT_EQ(screen, exact) << std::hexfloat << "x=" << x << " range " << r.lo << ".." << r.hi
                               << " bins " << std::dec << r.bins;
    }
    // The screen is taken for most values: with poisoned edges and an
    // exact path that always checks, only screened values keep their slot.
    if (h.fast32.margin32 < 0.25f) {
      const std::vector<double> poisoned(h.edges.size(), std::numeric_limits<double>::infinity());
      for (int k = 0; k < 1000; ++k) {
        const float x = static_cast<float>(r.lo + (k + 0.5) * w / 1000);
        screened += epilogue::histogram_slot(x, h.fast32, h.lo, h.hi, norm, h.bins, poisoned.data(),
                                             1.0) == slot(h, x, 1.0);
        ++total;
      }
    }
  }
  EXPECT_GT(screened, total * 9 / 10);
}

TEST(Histogram, MarginAndTheSwitchThatTurnsItOff) {
  const HistSpec h = spec(0, 1, 5);
  // A few hundred ulps of B at most: the fast path is the common case.
  EXPECT_GT(h.margin, 0.0);
  EXPECT_LT(h.margin, 1e-12);
  EXPECT_EQ(h.slots(), 7u);
  // Bins narrower than the rounding of the values themselves (lo = 1e15,
  // ulp 0.125, bins 0.5 wide): the margin would pass 1/4, so always check.
  EXPECT_EQ(spec(1e15, 1e15 + 1, 2).margin, 1.0);
  setenv("TDSOLVE_HIST_EXACT_ALWAYS", "1", 1);
  const HistSpec off = make_hist_spec(0, 1, 5);
  unsetenv("TDSOLVE_HIST_EXACT_ALWAYS");
  EXPECT_EQ(off.margin, 1.0);
  EXPECT_EQ(off.fast32.margin32, 1.0f);
  EXPECT_LT(h.fast32.margin32, 1e-4f);
}

TEST(Histogram, OutOfRangeAndNaN) {
  const HistSpec h = spec(-1, 1, 4);
  EXPECT_EQ(slot(h, -1.0000001, h.margin), 0u);
  EXPECT_EQ(slot(h, -std::numeric_limits<double>::infinity(), h.margin), 0u);
  EXPECT_EQ(slot(h, -1, h.margin), 1u);
  EXPECT_EQ(slot(h, 1, h.margin), 4u);  // the last bin is closed
  EXPECT_EQ(slot(h, std::nextafter(1.0, 2.0), h.margin), 5u);
  EXPECT_EQ(slot(h, std::numeric_limits<double>::infinity(), h.margin), 5u);
  EXPECT_EQ(slot(h, std::numeric_limits<double>::quiet_NaN(), h.margin), 5u);
}

// delta - L·rint(delta/L), round half to even: worked out by hand. All the
// values are exact in binary, so no rounding enters except rint's.
TEST(MinimumImage, HandValuesDouble) {
  struct C {
    double delta, L, want;
  };
  const C cases[] = {
      {0, 10, 0},
      {3, 10, 3},
      {7, 10, -3},
      {-7, 10, 3},
      {12.5, 10, 2.5},
      {-12.5, 10, -2.5},
      {17.5, 10, -2.5},
      {-17.5, 10, 2.5},
      // Ties at exactly L/2: rint rounds half to even.
      {5, 10, 5},     // 0.5 -> 0
      {-5, 10, -5},   // -0.5 -> -0
      {15, 10, -5},   // 1.5 -> 2
      {-15, 10, 5},   // -1.5 -> -2
      {25, 10, 5},    // 2.5 -> 2
      {-25, 10, -5},  // -2.5 -> -2
      {35, 10, -5},   // 3.5 -> 4
      {0.25, 0.5, 0.25},
      {0.75, 0.5, -0.25},
      {1.25, 0.5, 0.25},
      {1e6 + 0.125, 1, 0.125},
  };
  for (const C& c : cases)
    EXPECT_EQ(epilogue::minimum_image(c.delta, c.L), c.want) << c.delta << " mod " << c.L;
}

TEST(MinimumImage, HandValuesFloat) {
  struct C {
    float delta, L, want;
  };
  const C cases[] = {
      {1.5f, 3, 1.5f},   // 0.5 -> 0
      {4.5f, 3, -1.5f},  // 1.5 -> 2
      {7.5f, 3, 1.5f},   // 2.5 -> 2
      {-4.5f, 3, 1.5f},  // -1.5 -> -2
      {-1.5f, 3, -1.5f},   {2, 3, -1},
      {-2, 3, 1},          {0.375f, 0.25f, -0.125f},  // 1.5 -> 2: 0.375 - 0.5
      {100.25f, 1, 0.25f},
  };
  for (const C& c : cases)
    EXPECT_EQ(epilogue::minimum_image(c.delta, c.L), c.want) << c.delta << " mod " << c.L;
}

// The top-k list (epi::TopK, both backends' list): candidates offered in
// increasing j keep exactly the first k of a stable sort by (value, j) with
// numbers first, then nan; free slots (index n) last.
TEST(TopK, ListEqualsAStableSortWithNanLast) {
  std::mt19937_64 rng(20261127);
  const double specials[] = {std::numeric_limits<double>::quiet_NaN(),
                             std::numeric_limits<double>::infinity(), 0.0, 1.0};
  for (int trial = 0; trial < 2000; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 40), k = 1 + static_cast<int>(rng() % 12);
    std::vector<double> v(n);
    for (auto& x : v)  // few distinct values: many ties
      x = rng() % 4 == 0 ? specials[rng() % 4] : static_cast<double>(rng() % 6);
    std::vector<double> dist(k, std::numeric_limits<double>::infinity());
    std::vector<index_t> idx(k, n);
    for (index_t j = 0; j < n; ++j)
      if (epi::TopK::admits<double>(v[j], dist[k - 1], idx[k - 1] == n))
        epi::TopK::insert<double, double, index_t>(dist.data(), idx.data(), nullptr, k, v[j], j,
                                                   0.0, n);
    std::vector<index_t> order(n);
    for (index_t j = 0; j < n; ++j)
      order[j] = j;
    std::stable_sort(order.begin(), order.end(), [&](index_t a, index_t b) {
      const bool na = v[a] != v[a], nb = v[b] != v[b];
      if (na || nb) return !na && nb;
      return v[a] < v[b];
    });
    for (int q = 0; q < k; ++q) {
      const index_t want = q < n ? order[q] : n;
      ASSERT_EQ(idx[q], want) << "trial " << trial << " slot " << q;
      if (want < n && v[want] == v[want]) ASSERT_EQ(dist[q], v[want]);
    }
  }
}

// Each run-time kind has exactly one epilogue type's traits (select has
// one per test), and each type says which loops run it.
TEST(Epilogues, KindsAndLoops) {
  static_assert(epi::traits<epi::Store>::kKind == EpilogueKind::store);
  static_assert(epi::traits<epi::Histogram>::kKind == EpilogueKind::histogram);
  static_assert(epi::traits<epi::Select<epi::Within>>::kKind == EpilogueKind::select);
  static_assert(epi::traits<epi::Select<epi::Overlap>>::kKind == EpilogueKind::select);
  static_assert(epi::traits<epi::TopK>::kKind == EpilogueKind::topk);
  static_assert(epi::traits<epi::Reduce>::kKind == EpilogueKind::reduce);
  static_assert(epi::runs_in<epi::Store>(epi::Loop::triplet_tiles));
  static_assert(!epi::runs_in<epi::TopK>(epi::Loop::pair_tiles));
  EXPECT_TRUE(epi::dispatch_triplet(EpilogueKind::store,
                                    [](auto e) { return epi::traits<decltype(e)>::kStores; }));
  EXPECT_TRUE(epi::dispatch_triplet(EpilogueKind::reduce,
                                    [](auto e) { return epi::traits<decltype(e)>::kReduces; }));
  EXPECT_THROW(epi::dispatch_triplet(EpilogueKind::topk, [](auto) { return 0; }), std::logic_error);
}
