// The select epilogue (knn --radius, collide) in the CPU tile loops: the
// pairs it keeps, and their values, are exactly those of storing every
// value and scanning them with the test — the path the commands took before
// selection moved into the loops — for every metric family, both precisions,
// both maps, block sizes that do and do not divide n, radii on and between
// the values, and spheres that touch.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "mapping/partition.hpp"
#include "mapping/simplex.hpp"
#include "solver/cpu/cpu_backend.hpp"
#include "solver/cpu/tiles.hpp"
#include "solver/select.hpp"

using namespace tdsolve;

namespace {

template <typename T>
std::vector<T> points(index_t n, index_t d, unsigned seed, double scale = 1) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, scale);
  std::vector<T> x(n * d);
  for (auto& v : x)
    v = static_cast<T>(u(rng));
  // A few duplicates (distance 0) and a point repeated in one coordinate.
  if (n > 10) {
    for (index_t k = 0; k < d; ++k) {
      x[5 * d + k] = x[3 * d + k];
      x[(n - 1) * d + k] = x[3 * d + k];
    }
  }
  return x;
}

struct Selected {
  std::vector<std::int64_t> pairs;
  std::vector<double> values;  // as T, widened exactly
};

// Every value through the store epilogue, then the test on each: the
// reference.
template <typename T, typename Keep>
Selected scan(Problem<T> p, Keep keep) {
  p.epilogue = EpilogueKind::store;
  const cpu::CpuView<T> v = cpu::view_of(p);
  std::vector<T> all(mapping::pair_count(p.rows));
  const mapping::ChunkPlan plan = make_plan(p, index_t(1) << 40);
  for (index_t c = 0; c < plan.chunks(); ++c)
    cpu::compute_chunk<T>(v, plan.row_begin(c), plan.row_end(c), all.data() + plan.offset(c),
                          nullptr, 2);
  Selected s;
  index_t e = 0;
  for (index_t i = 0; i < p.rows; ++i)
    for (index_t j = i + 1; j < p.rows; ++j, ++e)
      if (keep(i, j, all[e])) {
        s.pairs.push_back(static_cast<std::int64_t>(i));
        s.pairs.push_back(static_cast<std::int64_t>(j));
        s.values.push_back(static_cast<double>(all[e]));
      }
  return s;
}

// The select epilogue, chunk by chunk (several chunks), concatenated.
template <typename T>
Selected run_selection(const Problem<T>& p, index_t chunk_elements) {
  const cpu::CpuView<T> v = cpu::view_of(p);
  const mapping::ChunkPlan plan = make_plan(p, chunk_elements);
  Selected s;
  for (index_t c = 0; c < plan.chunks(); ++c) {
    cpu::SelectOut<T> out;
    out.pairs.assign(3, -7);  // stale contents must be replaced
    cpu::compute_chunk<T>(v, plan.row_begin(c), plan.row_end(c), nullptr, nullptr, 2,
                          cpu::CpuVariant::best, &out);
    EXPECT_EQ(out.pairs.size(), 2 * out.values.size());
    s.pairs.insert(s.pairs.end(), out.pairs.begin(), out.pairs.end());
    for (T x : out.values)
      s.values.push_back(static_cast<double>(x));
  }
  return s;
}

void expect_same(const Selected& want, const Selected& got, const std::string& what) {
  ASSERT_EQ(want.pairs.size(), got.pairs.size()) << what;
  EXPECT_EQ(want.pairs, got.pairs) << what;
  ASSERT_EQ(want.values.size(), got.values.size()) << what;
  for (size_t q = 0; q < want.values.size(); ++q) {
    const bool both_nan = std::isnan(want.values[q]) && std::isnan(got.values[q]);
    ASSERT_TRUE(both_nan || std::memcmp(&want.values[q], &got.values[q], sizeof(double)) == 0)
        << what << ": value " << q << " " << want.values[q] << " vs " << got.values[q];
  }
}

template <typename T>
Problem<T> pair_problem(index_t n, index_t d, index_t rho, Metric m, MapKind map, unsigned seed) {
  Problem<T> p;
  p.domain = DomainKind::pairs;
  p.rows = p.cols = n;
  p.d = d;
  p.rho = rho;
  p.metric = m;
  p.map = map;
  p.a = points<T>(n, d, seed);
  p.mp = make_metric_params(m, m == Metric::minkowski ? 3 : 2, 0, d);
  complete_problem(&p);
  return p;
}

template <typename T>
void check_within(Metric m, index_t n, index_t d, index_t rho, MapKind map) {
  Problem<T> p = pair_problem<T>(n, d, rho, m, map, static_cast<unsigned>(n * 7 + d));
  const Selected every = scan(p, [](index_t, index_t, T) { return true; });
  // Radii: 0, a small quantile, exactly a value that occurs (the boundary),
  // just below and above it, one between values, and more than any.
  std::vector<double> vals = every.values;
  std::sort(vals.begin(), vals.end());
  const double at = vals[vals.size() / 50];
  const double radii[] = {0.0,
                          at,
                          std::nextafter(at, 0.0),
                          std::nextafter(at, 10.0),
                          static_cast<double>(static_cast<T>(at)) * (1 + 1e-9),
                          vals[vals.size() / 7],
                          1e30};
  for (double r : radii) {
    Problem<T> q = p;
    set_select_within(&q, r);
    const T rt = static_cast<T>(q.select.radius);
    const Selected want = scan(p, [&](index_t, index_t, T v) { return v <= rt; });
    const std::string what = std::string(metric_name(m)) + (sizeof(T) == 4 ? " f32" : " f64") +
                             " n=" + std::to_string(n) + " d=" + std::to_string(d) +
                             " rho=" + std::to_string(rho) + " " + map_name(map) +
                             " r=" + std::to_string(r);
    for (index_t chunk : {index_t(1), index_t(5000), index_t(1) << 40})
      expect_same(want, run_selection(q, chunk), what + " chunk=" + std::to_string(chunk));
  }
}

}  // namespace

TEST(Select, WithinMatchesAScanOfTheStoredValues) {
  for (Metric m : {Metric::euclidean, Metric::sqeuclidean, Metric::cityblock, Metric::chebyshev,
                   Metric::cosine, Metric::minkowski, Metric::braycurtis}) {
    check_within<float>(m, 300, 3, 16, MapKind::lambda);
    check_within<double>(m, 301, 2, 128, MapKind::bb);
  }
  // d past the specialised range (the general loop), and ρ not dividing n.
  check_within<float>(Metric::euclidean, 257, 11, 64, MapKind::lambda);
  check_within<double>(Metric::cityblock, 130, 9, 7, MapKind::bb);
  check_within<float>(Metric::euclidean, 2, 1, 128, MapKind::lambda);
}

TEST(Select, AccumulatorBoundIsExactForEuclidean) {
  // within_acc_max(R): the largest accumulator whose square root is <= R.
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(-30, 30);
  for (int t = 0; t < 2000; ++t) {
    const double r = std::ldexp(1.0 + std::fabs(u(rng)) / 30, static_cast<int>(u(rng)));
    const float rf = static_cast<float>(r);
    const metric::Euclidean<float> ef;
    const float af = static_cast<float>(selection::within_acc_max(ef, rf));
    ASSERT_LE(std::sqrt(af), rf) << r;
    ASSERT_GT(std::sqrt(std::nextafter(af, INFINITY)), rf) << r;
    const metric::Euclidean<double> ed;
    const double ad = selection::within_acc_max(ed, r);
    ASSERT_LE(std::sqrt(ad), r) << r;
    ASSERT_GT(std::sqrt(std::nextafter(ad, INFINITY)), r) << r;
  }
  const metric::Euclidean<float> ef;
  EXPECT_EQ(selection::within_acc_max(ef, 0.0f), 0.0);
  EXPECT_EQ(selection::within_acc_max(ef, std::numeric_limits<float>::max()),
            static_cast<double>(std::numeric_limits<float>::max()));
}

namespace {

Problem<double> spheres(index_t n, index_t dim, index_t rho, MapKind map, unsigned seed,
                        double rmax, std::vector<double>* radii) {
  Problem<double> p = pair_problem<double>(n, dim, rho, Metric::euclidean, map, seed);
  std::mt19937_64 rng(seed + 1);
  std::uniform_real_distribution<double> u(0.0, rmax);
  radii->resize(n);
  for (auto& r : *radii)
    r = u(rng);
  (*radii)[0] = 0;  // a point-like sphere
  // Touching pairs: integer centres, radii adding up to their distance
  // exactly (these must not count), and pairs a hair apart either way.
  if (n > 12) {
    for (index_t k = 0; k < dim; ++k) {
      p.a[8 * dim + k] = 0;
      p.a[9 * dim + k] = k == 0 ? 3 : 0;
      p.a[10 * dim + k] = k == 0 ? 6 : 0;
      p.a[11 * dim + k] = k == 0 ? 9 : 0;
    }
    (*radii)[8] = 1;
    (*radii)[9] = 2;  // 8-9 touch
    // 9-10 overlap by an ulp of 3 (1 + 2^-51: 2 + 1 + 2^-52 would round to 3).
    (*radii)[10] = 1 + std::ldexp(1.0, -51);
    (*radii)[11] = std::nextafter(3.0 - (*radii)[10], 0.0);  // 10-11 miss by an ulp
  }
  return p;
}

}  // namespace

TEST(Select, OverlapMatchesAScanOfTheStoredDistances) {
  for (index_t dim : {1, 3})
    for (MapKind map : {MapKind::lambda, MapKind::bb})
      for (index_t rho : {16, 128})
        for (double rmax : {0.0, 1e-160, 0.02, 0.3, 1e200}) {
          std::vector<double> radii;
          const Problem<double> p = spheres(403, dim, rho, map, 11 + dim, rmax, &radii);
          const Selected want =
              scan(p, [&](index_t i, index_t j, double v) { return v < radii[i] + radii[j]; });
          Problem<double> q = p;
          set_select_overlap(&q, radii);
          const std::string what = "dim=" + std::to_string(dim) + " " + map_name(map) +
                                   " rho=" + std::to_string(rho) + " rmax=" + std::to_string(rmax);
          for (index_t chunk : {index_t(3000), index_t(1) << 40})
            expect_same(want, run_selection(q, chunk), what);
          if (rmax == 0.3) EXPECT_GT(want.values.size(), 1000u) << what;
          // The constructed edge cases: 9-10 overlap by an ulp, 8-9 and
          // 10-11 do not (touching, and apart by an ulp).
          const auto has = [&](std::int64_t i, std::int64_t j) {
            for (size_t q = 0; q < want.pairs.size(); q += 2)
              if (want.pairs[q] == i && want.pairs[q + 1] == j) return true;
            return false;
          };
          EXPECT_TRUE(has(9, 10)) << what;
          EXPECT_FALSE(has(8, 9)) << what;
          EXPECT_FALSE(has(10, 11)) << what;
        }
}

TEST(Select, BackendHandsOverEachChunksPairs) {
  // The backend's protocol with two chunks in flight: each result's pairs
  // stay intact until the next submit().
  Problem<float> p = pair_problem<float>(2003, 3, 16, Metric::euclidean, MapKind::lambda, 77);
  Problem<float> all = p;
  set_select_within(&p, 0.08);
  const mapping::ChunkPlan plan = make_plan(p, 20000);
  ASSERT_GE(plan.chunks(), 50u);
  const Selected want = scan(all, [](index_t, index_t, float v) { return v <= 0.08f; });
  auto b = cpu::make_cpu_backend<float>(p, 2, 1);
  b->reserve(plan.largest_chunk());
  const auto job = [&](index_t k) {
    return ChunkJob{k, plan.row_begin(k), plan.row_end(k), plan.elements(k)};
  };
  Selected got;
  b->submit(job(0));
  for (index_t k = 0; k < plan.chunks(); ++k) {
    if (k + 1 < plan.chunks()) b->submit(job(k + 1));
    const ChunkResult<float> r = b->wait();
    ASSERT_EQ(r.counts, nullptr);
    if (r.selected > 0) {
      ASSERT_NE(r.pairs, nullptr);
      ASSERT_NE(r.values, nullptr);
    }
    got.pairs.insert(got.pairs.end(), r.pairs, r.pairs + 2 * r.selected);
    for (index_t q = 0; q < r.selected; ++q)
      got.values.push_back(r.values[q]);
  }
  EXPECT_GT(want.values.size(), 1000u);
  expect_same(want, got, "backend");
}
