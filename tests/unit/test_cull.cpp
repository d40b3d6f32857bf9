// The culled domain (solver/cull.hpp): its Morton order is a permutation,
// its tile list is sorted, counted and exactly the block pairs whose boxes
// are within the limit,
// and it is conservative: every pair within the cutoff (by the pair's own
// value in T, as a run computes it, minimum image in a box) lies in a kept
// tile, for every metric with a box bound, in and out of a periodic box, and
// for overlaps. Brute force over all pairs of small random sets is the
// reference; the e2e test (tests/e2e/test_cull.py) compares whole runs.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <vector>

#include "mapping/partition.hpp"
#include "solver/bucket_sort.hpp"
#include "solver/cull.hpp"
#include "solver/cull_with.hpp"
#include "solver/epilogue.hpp"

using namespace tdsolve;

namespace {

// A pair list's tiles (I, J), and each input point's position in the run.
std::set<std::pair<index_t, index_t>> kept_tiles(const Culled& c) {
  std::set<std::pair<index_t, index_t>> kept;
  for (index_t t = 0; t < c.tile_count(); ++t)
    kept.insert({c.tiles[2 * t], c.tiles[2 * t + 1]});
  return kept;
}
std::vector<index_t> positions(const Culled& c) {
  std::vector<index_t> pos(c.n);
  for (index_t q = 0; q < c.n; ++q)
    pos[c.order[q]] = q;
  return pos;
}

// The metric's value of one pair in T as a run computes it: a norm of the
// coordinate differences (minimum image in a box).
template <typename T>
double value(const std::vector<T>& x, index_t d, index_t i, index_t j, double p,
             const CullGeometry& g) {
  double s = 0;
  for (index_t k = 0; k < d; ++k) {
    T delta = static_cast<T>(x[i * d + k] - x[j * d + k]);
    if (k < static_cast<index_t>(g.box_dims))
      delta = epilogue::minimum_image(delta, static_cast<T>(g.box[k]));
    const double a = std::fabs(static_cast<double>(delta));
    if (std::isinf(p)) {
      s = std::max(s, a);
    } else {
      s += std::pow(a, p);
    }
  }
  return std::isinf(p) ? s : std::pow(s, 1 / p);
}

template <typename T>
void expect_conservative(index_t n, index_t d, index_t rho, double p, double cutoff, bool box,
                         unsigned seed, index_t* pairs_within, index_t* tiles_dropped) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<T> x(n * d);
  for (auto& v : x)
    v = static_cast<T>(std::floor(u(rng) * 8) / 4);  // a lattice: pairs at the cutoff
  for (index_t i = n / 2; i < n; ++i)                // and points anywhere
    for (index_t k = 0; k < d; ++k)
      x[i * d + k] = static_cast<T>(u(rng) * 2);
  CullGeometry g;
  g.p = p;
  g.cutoff = cutoff;
  g.rel_tol = sizeof(T) == 4 ? 1e-4 : 1e-10;
  if (box) {
    g.box_dims = static_cast<int>(d);
    for (index_t k = 0; k < d; ++k)
      g.box[k] = 2;
  }
  Culled c;
  ASSERT_TRUE(build_culled<T>(x.data(), n, d, rho, g, ~index_t(0), &c));
  // The order is a permutation.
  std::vector<index_t> sorted = c.order;
  std::sort(sorted.begin(), sorted.end());
  for (index_t q = 0; q < n; ++q)
    ASSERT_EQ(sorted[q], q);
  // The list: sorted by (I, J), I <= J, indexed and counted per block row.
  std::set<std::pair<index_t, index_t>> kept;
  index_t tested = 0;
  for (index_t I = 0; I < c.m; ++I) {
    ASSERT_EQ(c.before[I], tested);
    for (index_t t = c.tile_start[I]; t < c.tile_start[I + 1]; ++t) {
      ASSERT_EQ(c.tiles[2 * t], I);
      const index_t J = c.tiles[2 * t + 1];
      ASSERT_GE(J, I);
      ASSERT_LT(J, c.m);
      if (t > c.tile_start[I]) ASSERT_LT(c.tiles[2 * t - 1], J);
      kept.insert({I, J});
      tested += tile_pairs(n, rho, I, J);
    }
  }
  ASSERT_EQ(c.before[c.m], tested);
  ASSERT_EQ(c.tile_count(), kept.size());
  // Every pair within the cutoff is in a kept tile.
  const std::vector<index_t> pos = positions(c);
  index_t within = 0;
  for (index_t i = 0; i < n; ++i)
    for (index_t j = i + 1; j < n; ++j) {
      if (!(value(x, d, i, j, p, g) <= cutoff)) continue;
      ++within;
      const index_t a = std::min(pos[i], pos[j]) / rho, b = std::max(pos[i], pos[j]) / rho;
      ASSERT_TRUE(kept.count({a, b})) << "pair (" << i << ", " << j << ") in dropped tile (" << a
                                      << ", " << b << "), p = " << p << ", cutoff " << cutoff;
    }
  *pairs_within += within;
  *tiles_dropped += c.m * (c.m + 1) / 2 - kept.size();
}

}  // namespace

TEST(Cull, MortonOrderIsAStablePermutationAlongTheCurve) {
  // 2-D points of a 4 × 4 grid, given in reverse: the Z order of cells.
  std::vector<double> x;
  for (int q = 15; q >= 0; --q) {
    x.push_back(q % 4);
    x.push_back(q / 4);
  }
  const std::vector<index_t> o = morton_order(x.data(), 16, 2);
  // Cell (cx, cy) has code interleaving cx's and cy's bits, cx first.
  std::vector<std::pair<unsigned, index_t>> want;
  for (index_t i = 0; i < 16; ++i) {
    const unsigned cx = static_cast<unsigned>(x[2 * i]), cy = static_cast<unsigned>(x[2 * i + 1]);
    unsigned code = 0;
    for (int b = 1; b >= 0; --b)
      code = (code << 2) | (((cx >> b) & 1u) << 1) | ((cy >> b) & 1u);
    want.push_back({code, i});
  }
  std::sort(want.begin(), want.end());
  for (index_t q = 0; q < 16; ++q)
    EXPECT_EQ(o[q], want[q].second) << q;
  // Duplicates keep the input order.
  const std::vector<double> same(10, 1.5);
  const std::vector<index_t> s = morton_order(same.data(), 5, 2);
  for (index_t q = 0; q < 5; ++q)
    EXPECT_EQ(s[q], q);
}

TEST(Cull, MortonCodeFastPathsAreTheBitLoop) {
  // d = 1, 2, 3 take shortcuts (magic-number spreads); the loop is the
  // definition.
  std::mt19937_64 rng(7);
  for (int dims = 1; dims <= 6; ++dims) {
    const int bits = std::max(1, std::min(21, 63 / dims));
    for (int t = 0; t < 2000; ++t) {
      std::uint64_t q[6];
      for (int k = 0; k < dims; ++k)
        q[k] = t < 2 ? (t ? (std::uint64_t(1) << bits) - 1 : 0) : rng() >> (64 - bits);
      std::uint64_t want = 0;
      for (int b = bits - 1; b >= 0; --b)
        for (int k = 0; k < dims; ++k)
          want = (want << 1) | ((q[k] >> b) & 1u);
      ASSERT_EQ(morton_code(q, dims, bits), want) << "dims " << dims << ", try " << t;
    }
  }
}

TEST(Cull, BucketSortIsStdSort) {
  // Many duplicates, empty and crowded buckets, on a team of 1 and of 4.
  std::mt19937_64 rng(3);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> v(300000);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = {i % 3 ? rng() % 1000 : rng() >> 8, rng() % 7};
  std::vector<std::pair<std::uint64_t, std::uint64_t>> want = v;
  std::sort(want.begin(), want.end());
  const int before = omp_get_max_threads();
  for (int team : {1, 4}) {
    omp_set_num_threads(team);
    std::vector<std::pair<std::uint64_t, std::uint64_t>> got = v;
    bucket_sort(&got, std::size_t(1) << 12, [](const auto& x) { return x.first >> 44; });
    EXPECT_TRUE(got == want) << "team " << team;
  }
  omp_set_num_threads(before);
}

TEST(Cull, ManyThreadsBuildTheListOneThreadBuilds) {
  // Above the size where the order's sort goes parallel (65536 points; the
  // block rows are cut into pieces on any team): the same order, tiles,
  // counts and budget verdicts on 1 and on 4 threads, clustered points and
  // exact duplicates included; and the list is the leaf test's, exactly.
  const index_t n = 120000, d = 3, rho = 32;
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<float> x(n * d);
  for (index_t i = 0; i < n; ++i)
    for (index_t k = 0; k < d; ++k)
      x[i * d + k] = static_cast<float>(i % 5 == 0   ? 0.25                 // duplicates
                                        : i % 5 == 1 ? 0.5 + 0.01 * u(rng)  // a cluster
                                                     : u(rng));
  CullGeometry g;
  g.cutoff = 0.01;
  g.rel_tol = 1e-4;
  const int before = omp_get_max_threads();
  std::vector<Culled> built;
  for (int team : {1, 4}) {
    omp_set_num_threads(team);
    Culled c;
    ASSERT_TRUE(build_culled<float>(x.data(), n, d, rho, g, ~index_t(0), &c));
    // The budget: exactly the list's length passes, one less does not.
    Culled tight;
    EXPECT_TRUE(build_culled<float>(x.data(), n, d, rho, g, c.tile_count(), &tight));
    EXPECT_FALSE(build_culled<float>(x.data(), n, d, rho, g, c.tile_count() - 1, &tight));
    built.push_back(std::move(c));
  }
  omp_set_num_threads(before);
  EXPECT_GT(built[0].tile_count(), 100000u);  // not vacuous: the parallel paths ran
  EXPECT_TRUE(built[0].order == built[1].order);
  EXPECT_TRUE(built[0].tiles == built[1].tiles);
  EXPECT_TRUE(built[0].tile_start == built[1].tile_start);
  EXPECT_TRUE(built[0].before == built[1].before);
  EXPECT_TRUE(built[0].lo == built[1].lo && built[0].hi == built[1].hi);
  // Block rows' descents drop a node only when its box is too far, and a
  // node's bound is at most its blocks': (I, J), I <= J, is listed exactly
  // when the two blocks' own boxes are within the limit (what the CUDA
  // builder, the same descent, lists too).
  {
    const Culled& c = built[1];
    const double lim = cull::limit(g.cutoff, g.rel_tol, c.scale);
    index_t t = 0;
    for (index_t I = 0; I < c.m; ++I)
      for (index_t J = I; J < c.m; ++J) {
        const bool near =
            cull::bound(&c.lo[I * d], &c.hi[I * d], &c.lo[J * d], &c.hi[J * d], d, 2) <= lim;
        const bool listed = t < c.tile_count() && c.tiles[2 * t] == I && c.tiles[2 * t + 1] == J;
        ASSERT_EQ(near, listed) << I << " " << J;
        t += listed ? 1 : 0;
      }
    EXPECT_EQ(t, c.tile_count());
  }
  // The order is the Morton codes' over the points' bounds (21 bits an
  // axis, cell = floor((x - lo) · (2^21 - 1) / (hi - lo))), ties by index.
  double lo[3], hi[3];
  for (index_t k = 0; k < d; ++k) {
    lo[k] = INFINITY;
    hi[k] = -INFINITY;
    for (index_t i = 0; i < n; ++i) {
      lo[k] = std::min(lo[k], double(x[i * d + k]));
      hi[k] = std::max(hi[k], double(x[i * d + k]));
    }
  }
  std::vector<std::pair<std::uint64_t, index_t>> want(n);
  const double cells = (1 << 21) - 1;
  for (index_t i = 0; i < n; ++i) {
    std::uint64_t q[3], code = 0;
    for (index_t k = 0; k < d; ++k)
      q[k] = static_cast<std::uint64_t>(
          std::min(cells, (double(x[i * d + k]) - lo[k]) * (cells / (hi[k] - lo[k]))));
    for (int b = 20; b >= 0; --b)
      for (index_t k = 0; k < d; ++k)
        code = (code << 1) | ((q[k] >> b) & 1u);
    want[i] = {code, i};
  }
  std::sort(want.begin(), want.end());
  for (index_t q = 0; q < n; ++q)
    ASSERT_EQ(built[1].order[q], want[q].second) << q;
}

TEST(Cull, KeepsEveryPairWithinTheCutoff) {
  unsigned seed = 1;
  for (double p : {1.0, 2.0, 3.0, 0.5, double(INFINITY)}) {
    // Not vacuous: for each norm, pairs within and tiles dropped.
    index_t within = 0, dropped = 0;
    for (double cutoff : {0.0, 0.25, 0.5, 0.75, 3.0})
      for (index_t d : {1, 2, 3})
        for (bool box : {false, true}) {
          expect_conservative<float>(150, d, 8, p, cutoff, box, ++seed, &within, &dropped);
          expect_conservative<double>(97, d, 16, p, cutoff, box, ++seed, &within, &dropped);
        }
    EXPECT_GT(within, 0u) << "p = " << p;
    EXPECT_GT(dropped, 0u) << "p = " << p;
  }
}

// hist --with (solver/cull_with.hpp): the first set's points stay in the
// first rows, every tile pairs a block holding a point of the first set
// with one holding a point of the second, the list is sorted and counted,
// and every pair of a point of each within the cutoff is in a kept tile.
TEST(Cull, TwoSetsKeepEveryPairOfOneOfEachWithinTheCutoff) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  index_t within = 0, dropped = 0, checked = 0;
  for (index_t rho : {8, 16})
    for (index_t split : {1, 7, 16, 40, 95, 99})
      for (double cutoff : {0.0, 0.2, 0.5})
        for (bool box : {false, true}) {
          const index_t n = 100, d = 3;
          std::vector<double> x(n * d);
          for (auto& v : x)
            v = std::floor(u(rng) * 8) / 4;  // a lattice: pairs at the cutoff
          CullGeometry g;
          g.cutoff = cutoff;
          g.rel_tol = 1e-10;
          if (box) {
            g.box_dims = 3;
            g.box[0] = g.box[1] = g.box[2] = 2;
          }
          Culled c;
          ASSERT_TRUE(build_culled_with<double>(x.data(), n, d, rho, split, g, ~index_t(0), &c));
          for (index_t q = 0; q < n; ++q)
            ASSERT_EQ(c.order[q] < split, q < split) << "split " << split;
          std::set<std::pair<index_t, index_t>> kept;
          index_t tested = 0;
          for (index_t I = 0; I < c.m; ++I) {
            ASSERT_EQ(c.before[I], tested);
            for (index_t t = c.tile_start[I]; t < c.tile_start[I + 1]; ++t) {
              const index_t J = c.tiles[2 * t + 1];
              ASSERT_EQ(c.tiles[2 * t], I);
              ASSERT_GE(J, I);
              ASSERT_LT(I * rho, split);                     // I holds a point of the first set
              ASSERT_GT(std::min(n, (J + 1) * rho), split);  // J one of the second
              if (t > c.tile_start[I]) ASSERT_LT(c.tiles[2 * t - 1], J);
              kept.insert({I, J});
              tested += tile_pairs(n, rho, I, J);
            }
          }
          ASSERT_EQ(c.before[c.m], tested);
          const std::vector<index_t> pos = positions(c);
          for (index_t i = 0; i < split; ++i)
            for (index_t j = split; j < n; ++j) {
              if (!(value(x, d, i, j, 2.0, g) <= cutoff)) continue;
              ++within;
              const index_t a = pos[i] / rho, b = pos[j] / rho;
              ASSERT_TRUE(kept.count({a, b})) << "pair (" << i << ", " << j << "), split " << split;
            }
          for (index_t I = 0; I * rho < split; ++I)
            dropped += c.m - std::max(I, split / rho);
          dropped -= kept.size();
          ++checked;
        }
  EXPECT_GT(within, 0u);
  EXPECT_GT(dropped, 0u);
  EXPECT_EQ(checked, 2u * 6 * 3 * 2);
}

// A triclinic cell (LAMMPS's: lx, ly, lz, xy, xz, yz): its nearest image by
// a search of the 125 images of the wrapped difference, in long double.
long double nearest_image(const double* cell, const double* v) {
  const long double lx = cell[0], ly = cell[1], lz = cell[2], xy = cell[3], xz = cell[4],
                    yz = cell[5];
  const long double sz = v[2] / lz, sy = (v[1] - yz * sz) / ly,
                    sx = (v[0] - xy * sy - xz * sz) / lx;
  const long double f[3] = {sx - std::nearbyint(sx), sy - std::nearbyint(sy),
                            sz - std::nearbyint(sz)};
  long double best = INFINITY;
  for (int a = -2; a <= 2; ++a)
    for (int b = -2; b <= 2; ++b)
      for (int c = -2; c <= 2; ++c) {
        const long double fa = f[0] + a, fb = f[1] + b, fc = f[2] + c;
        const long double x = lx * fa + xy * fb + xz * fc, y = ly * fb + yz * fc, z = lz * fc;
        best = std::min(best, std::sqrt(x * x + y * y + z * z));
      }
  return best;
}

TEST(Cull, TriclinicImageIsTheNearestWithinHalfTheWidth) {
  // epilogue::triclinic_image (the kernels' reduction) against the search,
  // for pairs closer than half the cell's shortest width; and the bound of
  // the culled domain (fractional boxes) never above the search's distance.
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  index_t close = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const double lx = 1 + 4 * u(rng), ly = 1 + 4 * u(rng), lz = 1 + 4 * u(rng);
    const double t = trial % 3 == 0 ? 0.5 : 1.5;  // within LAMMPS's limits, and beyond
    const double cell[6] = {lx,
                            ly,
                            lz,
                            t * lx * (2 * u(rng) - 1),
                            t * lx * (2 * u(rng) - 1),
                            t * ly * (2 * u(rng) - 1)};
    CullGeometry g;
    set_triclinic(&g, cell);
    const double half = std::min({g.tilted.w[0], g.tilted.w[1], g.tilted.w[2]}) / 2;
    for (int q = 0; q < 200; ++q) {
      double a[3], b[3];
      for (int k = 0; k < 3; ++k) {
        a[k] = (6 * u(rng) - 3) * cell[k];
        b[k] = a[k] + (2 * u(rng) - 1) * half * 1.2;
      }
      const double v[3] = {a[0] - b[0], a[1] - b[1], a[2] - b[2]};
      const long double want = nearest_image(cell, v);
      double x = v[0], y = v[1], z = v[2];
      epilogue::triclinic_image(x, y, z, cell, cell + 3);
      const double got = std::sqrt(x * x + y * y + z * z);
      if (want < half) {
        ++close;
        ASSERT_NEAR(got, static_cast<double>(want), 1e-12 * (1 + 3 * (lx + ly + lz)))
            << "trial " << trial;
      } else {
        ASSERT_GE(got, static_cast<double>(want) * (1 - 1e-12));  // an image, never nearer
      }
      // The bound of the points' fractional coordinates (single-point boxes).
      std::vector<double> pts(a, a + 3);
      pts.insert(pts.end(), b, b + 3);
      Culled c;
      g.cutoff = INFINITY;
      ASSERT_TRUE(build_culled<double>(pts.data(), 2, 3, 1, g, ~index_t(0), &c));
      const double bound =
          cull::bound(&c.lo[0], &c.hi[0], &c.lo[3], &c.hi[3], 3, 2, 3, g.box, c.tilted());
      ASSERT_LE(bound, static_cast<double>(want) * (1 + 1e-12) + 1e-12) << "trial " << trial;
    }
  }
  EXPECT_GT(close, 10000);
}

TEST(Cull, KeepsEveryPairWithinTheCutoffInATriclinicCell) {
  std::mt19937_64 rng(12);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  index_t within = 0, dropped = 0;
  for (int trial = 0; trial < 12; ++trial) {
    const double cell[6] = {2, 2.5, 3, trial % 2 ? 0.9 : -0.4, 0.7 * (u(rng) - 0.5), 1.1 * u(rng)};
    CullGeometry g;
    set_triclinic(&g, cell);
    const double half = std::min({g.tilted.w[0], g.tilted.w[1], g.tilted.w[2]}) / 2;
    g.cutoff = half * (trial % 4) / 3;
    g.rel_tol = 1e-10;
    const index_t n = 300, rho = 8;
    std::vector<double> x(n * 3);
    for (index_t i = 0; i < n; ++i) {  // half on a lattice of the cell, half anywhere
      const double f[3] = {i < n / 2 ? std::floor(u(rng) * 4) / 4 : 3 * u(rng) - 1,
                           i < n / 2 ? std::floor(u(rng) * 4) / 4 : 3 * u(rng) - 1,
                           i < n / 2 ? std::floor(u(rng) * 4) / 4 : 3 * u(rng) - 1};
      x[i * 3] = cell[0] * f[0] + cell[3] * f[1] + cell[4] * f[2];
      x[i * 3 + 1] = cell[1] * f[1] + cell[5] * f[2];
      x[i * 3 + 2] = cell[2] * f[2];
    }
    Culled c;
    ASSERT_TRUE(build_culled<double>(x.data(), n, 3, rho, g, ~index_t(0), &c));
    ASSERT_EQ(c.frac.size(), n * 3);
    const std::set<std::pair<index_t, index_t>> kept = kept_tiles(c);
    const std::vector<index_t> pos = positions(c);
    const double limit = cull::limit(g.cutoff, g.rel_tol, c.scale);
    for (index_t i = 0; i < n; ++i)
      for (index_t j = i + 1; j < n; ++j) {
        double v[3] = {x[i * 3] - x[j * 3], x[i * 3 + 1] - x[j * 3 + 1],
                       x[i * 3 + 2] - x[j * 3 + 2]};
        epilogue::triclinic_image(v[0], v[1], v[2], cell, cell + 3);
        if (!(std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]) <= g.cutoff)) continue;
        ++within;
        const index_t a = std::min(pos[i], pos[j]), b = std::max(pos[i], pos[j]);
        ASSERT_TRUE(kept.count({a / rho, b / rho})) << i << ", " << j << " trial " << trial;
        // The CPU loops' row test keeps it too.
        const index_t J = b / rho;
        ASSERT_LE(cull::point_bound(&c.frac[a * 3], &c.lo[J * 3], &c.hi[J * 3], 3, 2, 3, g.box,
                                    c.tilted()),
                  limit);
      }
    dropped += c.m * (c.m + 1) / 2 - kept.size();
  }
  EXPECT_GT(within, 1000u);
  EXPECT_GT(dropped, 100u);
}

TEST(Cull, KeepsEveryOverlap) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const index_t n = 400, d = 3, rho = 16;
  std::vector<double> x(n * d), r(n);
  for (auto& v : x)
    v = u(rng) * 4;
  for (auto& v : r)
    v = u(rng) * 0.3;
  CullGeometry g;
  g.radii = r.data();
  g.rel_tol = 1e-10;
  Culled c;
  ASSERT_TRUE(build_culled<double>(x.data(), n, d, rho, g, ~index_t(0), &c));
  const std::set<std::pair<index_t, index_t>> kept = kept_tiles(c);
  const std::vector<index_t> pos = positions(c);
  index_t overlaps = 0;
  for (index_t i = 0; i < n; ++i)
    for (index_t j = i + 1; j < n; ++j) {
      double s = 0;
      for (index_t k = 0; k < d; ++k)
        s += (x[i * d + k] - x[j * d + k]) * (x[i * d + k] - x[j * d + k]);
      if (!(std::sqrt(s) < r[i] + r[j])) continue;
      ++overlaps;
      const index_t a = std::min(pos[i], pos[j]) / rho, b = std::max(pos[i], pos[j]) / rho;
      ASSERT_TRUE(kept.count({a, b})) << i << ", " << j;
    }
  EXPECT_GT(overlaps, 0u);
  EXPECT_LT(kept.size(), c.m * (c.m + 1) / 2);
}

TEST(Cull, StopsAtItsBudget) {
  std::vector<float> x(300);
  for (size_t k = 0; k < x.size(); ++k)
    x[k] = static_cast<float>(k % 17);
  CullGeometry g;
  g.cutoff = 1e9;  // every tile survives: 100 points in blocks of 10, 55 tiles
  Culled c;
  EXPECT_FALSE(build_culled<float>(x.data(), 100, 3, 10, g, 54, &c));
  EXPECT_TRUE(build_culled<float>(x.data(), 100, 3, 10, g, 55, &c));
  EXPECT_EQ(c.tile_count(), 55u);
  EXPECT_EQ(c.tested(), 100u * 99 / 2);
}

TEST(Cull, PlansByWork) {
  // A culled domain's plan: chunks cut by pairs tested, rows whole, the
  // largest row whatever its place.
  Culled c;
  c.n = 40;
  c.rho = 10;
  c.m = 4;
  c.before = {0, 5, 5, 400, 420};
  const mapping::ChunkPlan plan(CulledDomain{&c}, 100);
  EXPECT_EQ(plan.total(), 420u);
  EXPECT_EQ(CulledDomain{&c}.largest_block_row(), 395u);
  EXPECT_EQ(plan.largest_chunk(), 395u);
  const mapping::ChunkPlan back =
      mapping::ChunkPlan::from_offsets(CulledDomain{&c}, plan.offsets());
  EXPECT_EQ(back.offsets(), plan.offsets());
}
