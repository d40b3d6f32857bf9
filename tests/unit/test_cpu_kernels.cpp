// The CPU tile loops against a plain pair loop over the same functors (bit
// for bit) and against a float64 reference (within rounding).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "mapping/partition.hpp"
#include "solver/cpu/cpu_backend.hpp"
#include "solver/cpu/tiles.hpp"
#include "solver/epilogue.hpp"

using namespace tdsolve;

namespace {

template <typename T>
struct Case {
  index_t n, d, rho;
  Metric metric;
  std::vector<T> x;
  std::vector<double> norms;
};

template <typename T>
Case<T> make_case(index_t n, index_t d, index_t rho, Metric m, unsigned seed) {
  Case<T> c{n, d, rho, m, {}, {}};
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  c.x.resize(n * d);
  for (auto& v : c.x)
    v = static_cast<T>(u(rng));
  c.norms.resize(n);
  for (index_t i = 0; i < n; ++i)
    c.norms[i] = metric::norm(&c.x[i * d], d);
  return c;
}

// Scalar pair loop in packed order: the bits every backend must reproduce.
template <typename T>
std::vector<T> scalar_reference(const Case<T>& c) {
  std::vector<T> out(mapping::pair_count(c.n));
  dispatch_metric<T>(c.metric, [&](auto m) {
    using M = decltype(m);
    index_t p = 0;
    for (index_t i = 0; i < c.n; ++i)
      for (index_t j = i + 1; j < c.n; ++j) {
        typename M::acc_t a = 0;
        for (index_t k = 0; k < c.d; ++k)
          a = m.accumulate(a, c.x[i * c.d + k], c.x[j * c.d + k], k);
        out[p++] = m.finalize(a, c.norms[i], c.norms[j]);
      }
    return 0;
  });
  return out;
}

double exact_distance(Metric m, const double* a, const double* b, index_t d) {
  double s = 0, na = 0, nb = 0;
  for (index_t k = 0; k < d; ++k) {
    const double t = a[k] - b[k];
    switch (m) {
      case Metric::euclidean:
      case Metric::sqeuclidean:
        s += t * t;
        break;
      case Metric::cityblock:
        s += std::fabs(t);
        break;
      case Metric::chebyshev:
        s = std::max(s, std::fabs(t));
        break;
      case Metric::cosine:
        s += a[k] * b[k];
        na += a[k] * a[k];
        nb += b[k] * b[k];
        break;
    }
  }
  if (m == Metric::euclidean) return std::sqrt(s);
  if (m == Metric::cosine) return 1 - s / std::sqrt(na * nb);
  return s;
}

// Runs the backend chunk by chunk, as the driver does.
template <typename T>
std::vector<T> run_backend(const Case<T>& c, index_t chunk_elements, int threads,
                           cpu::CpuVariant v) {
  const mapping::ChunkPlan plan(mapping::PairDomain(c.n, c.rho), chunk_elements);
  cpu::CpuView<T> view;
  view.a = view.b = c.x.data();
  view.norms_a = view.norms_b = c.norms.data();
  view.rows = view.cols = c.n;
  view.d = c.d;
  view.rho = c.rho;
  view.mp.metric = c.metric;
  std::vector<T> out(mapping::pair_count(c.n), std::numeric_limits<T>::quiet_NaN());
  for (index_t k = 0; k < plan.chunks(); ++k)
    cpu::compute_chunk<T>(view, plan.row_begin(k), plan.row_end(k), out.data() + plan.offset(k),
                          nullptr, threads, v);
  return out;
}

const Metric kMetrics[] = {Metric::euclidean, Metric::sqeuclidean, Metric::cityblock,
                           Metric::chebyshev, Metric::cosine};

template <typename T>
void check_bitwise(cpu::CpuVariant variant) {
  unsigned seed = 1;
  for (Metric m : kMetrics)
    for (index_t rho : {1, 7, 16, 128})
      for (index_t n : {index_t(2), index_t(3), rho - 1, rho, rho + 1, index_t(301)})
        for (index_t d : {1, 3, 4, 8, 9, 17}) {
          if (n < 2) continue;
          const Case<T> c = make_case<T>(n, d, rho, m, seed++);
          const std::vector<T> want = scalar_reference(c);
          for (index_t chunk : {index_t(1), index_t(997), index_t(1) << 20}) {
            // One thread for the one-block-row chunks (thousands of tiny
            // parallel regions cost seconds on two busy cores), two else.
            const std::vector<T> got = run_backend(c, chunk, chunk == 1 ? 1 : 2, variant);
            ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(T)))
                << metric_name(m) << " n=" << n << " d=" << d << " rho=" << rho
                << " chunk=" << chunk;
          }
        }
}

}  // namespace

TEST(CpuKernels, GenericMatchesScalarLoopBitForBitFloat) {
  check_bitwise<float>(cpu::CpuVariant::generic);
}
TEST(CpuKernels, GenericMatchesScalarLoopBitForBitDouble) {
  check_bitwise<double>(cpu::CpuVariant::generic);
}

TEST(CpuKernels, Avx2MatchesScalarLoopBitForBit) {
  if (!cpu::cpu_variant_available(cpu::CpuVariant::avx2))
    GTEST_SKIP() << "this CPU has no AVX2+FMA";
  check_bitwise<float>(cpu::CpuVariant::avx2);
  check_bitwise<double>(cpu::CpuVariant::avx2);
}

// metric::BoolValues (the boolean family on values, weighted or not) has a
// tile loop of its own (bool_values_sums: four column arrays, selects for
// branches): it must give the functor's accumulate bits, pair by pair, for
// every formula, odd and even d (hamming's lanes), rows and columns with
// zeros, repeats and negatives, weights with a 0, both variants.
template <typename T>
void check_bool_values(cpu::CpuVariant variant) {
  const Metric formulas[] = {
      Metric::hamming,        Metric::jaccard,       Metric::dice,        Metric::russellrao,
      Metric::rogerstanimoto, Metric::sokalmichener, Metric::sokalsneath, Metric::yule};
  const T pool[] = {T(0), T(0), T(1), T(2), T(-1), T(0.5)};
  unsigned seed = 7;
  for (Metric m : formulas)
    for (bool weighted : {false, true})
      for (index_t d : {1, 2, 3, 8, 9, 64})
        for (index_t rho : {7, 128}) {
          const index_t n = 301;
          std::mt19937_64 rng(seed++);
          Case<T> c{n, d, rho, m, std::vector<T>(n * d), std::vector<double>(n)};
          for (auto& v : c.x)
            v = pool[rng() % 6];
          std::vector<double> w(d);
          double weight_sum = 0;
          for (index_t k = 0; k < d; ++k) {
            w[k] = k == 1 ? 0.0 : std::ldexp(static_cast<double>(rng() % 1000 + 1), -7);
            weight_sum += w[k];
          }
          MetricParams mp;
          mp.metric = m;
          mp.bits = d;
          mp.values = true;
          mp.weights = weighted ? w.data() : nullptr;
          mp.weight_sum = weighted ? weight_sum : static_cast<double>(d);
          std::vector<T> want(mapping::pair_count(n));
          const bool values = dispatch_metric<T>(mp, [&](auto f) {
            if constexpr (std::is_same_v<decltype(f), metric::BoolValues<T>>) {
              index_t p = 0;
              for (index_t i = 0; i < n; ++i)
                for (index_t j = i + 1; j < n; ++j) {
                  metric::Sums4 a = 0;
                  for (index_t k = 0; k < d; ++k)
                    a = f.accumulate(a, c.x[i * d + k], c.x[j * d + k], k);
                  want[p++] = f.finalize(a, 0, 0);
                }
              return true;
            }
            return false;
          });
          ASSERT_TRUE(values) << metric_name(m);
          const mapping::ChunkPlan plan(mapping::PairDomain(n, rho), 997);
          cpu::CpuView<T> view;
          view.a = view.b = c.x.data();
          view.rows = view.cols = n;
          view.d = d;
          view.rho = rho;
          view.mp = mp;
          std::vector<T> got(want.size(), T(42));
          for (index_t k = 0; k < plan.chunks(); ++k)
            cpu::compute_chunk<T>(view, plan.row_begin(k), plan.row_end(k),
                                  got.data() + plan.offset(k), nullptr, 2, variant);
          ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(T)))
              << metric_name(m) << (weighted ? " weighted" : "") << " d=" << d << " rho=" << rho;
        }
}

TEST(CpuKernels, BooleanOnValuesMatchesTheFunctorBitForBit) {
  check_bool_values<float>(cpu::CpuVariant::generic);
  check_bool_values<double>(cpu::CpuVariant::generic);
  if (!cpu::cpu_variant_available(cpu::CpuVariant::avx2))
    GTEST_SKIP() << "this CPU has no AVX2+FMA: the generic variant only";
  check_bool_values<float>(cpu::CpuVariant::avx2);
  check_bool_values<double>(cpu::CpuVariant::avx2);
}

TEST(CpuKernels, CloseToFloat64Reference) {
  for (Metric m : kMetrics) {
    const Case<double> c = make_case<double>(257, 5, 64, m, 99);
    const std::vector<double> got = run_backend(c, 5000, 2, cpu::CpuVariant::best);
    index_t p = 0;
    for (index_t i = 0; i < c.n; ++i)
      for (index_t j = i + 1; j < c.n; ++j, ++p) {
        const double want = exact_distance(m, &c.x[i * c.d], &c.x[j * c.d], c.d);
        ASSERT_NEAR(got[p], want, 1e-12 * std::max(1.0, std::fabs(want))) << metric_name(m);
      }
  }
}

TEST(Metrics, CosineIsClippedToZeroTwo) {
  using C = metric::Cosine<float>;
  EXPECT_EQ(C::finalize(1.0000001, 1.0, 1.0), 0.0f);
  EXPECT_EQ(C::finalize(-1.0000001, 1.0, 1.0), 2.0f);
}

// Nearly parallel float32 vectors: the distance keeps its digits.
TEST(Metrics, Float32CosineKeepsSmallDistancesAccurate) {
  const float a[3] = {0.3f, 0.5f, 0.7f},
              b[3] = {0.3f, 0.5f, 0.701f};  // float32 arithmetic: 21% off
  double dot = 0, na = 0, nb = 0;
  for (int k = 0; k < 3; ++k) {
    dot += double(a[k]) * b[k];
    na += double(a[k]) * a[k];
    nb += double(b[k]) * b[k];
  }
  const double exact = 1 - dot / std::sqrt(na * nb);
  using C = metric::Cosine<float>;
  double acc = 0;
  for (int k = 0; k < 3; ++k)
    acc = C::accumulate(acc, a[k], b[k]);
  const float got = C::finalize(acc, metric::norm(a, 3), metric::norm(b, 3));
  EXPECT_GT(exact, 0.0);
  EXPECT_NEAR(got, exact, 1e-6 * exact);
}

// ---------------------------------------------------------------------------
// Chunks whose output starts past 2^32 elements, computed alone into a small
// buffer (no whole output): every value against a scalar loop at the packed
// index found by walking the pairs (or rows) one at a time.

namespace {

template <typename T>
std::vector<T> random_points(index_t n, index_t d, std::uint64_t seed, double lo = -1,
                             double hi = 1) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<T> x(n * d);
  for (auto& v : x)
    v = static_cast<T>(u(rng));
  return x;
}

template <typename T>
std::vector<double> norms_of(const std::vector<T>& x, index_t n, index_t d) {
  std::vector<double> out(n);
  for (index_t i = 0; i < n; ++i)
    out[i] = metric::norm(&x[i * d], d);
  return out;
}

// One value by the functors, features in order: what every backend writes.
template <typename T>
T scalar_value(Metric m, const T* x, const T* y, index_t d, double nx, double ny) {
  return dispatch_metric<T>(m, [&](auto f) {
    using M = decltype(f);
    typename M::acc_t a = 0;
    for (index_t k = 0; k < d; ++k)
      a = f.accumulate(a, x[k], y[k], k);
    return f.finalize(a, nx, ny);
  });
}

template <typename T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

constexpr index_t k2Pow32 = index_t(1) << 32;

template <typename T>
void check_far_pair_chunks(Metric metric, MapKind map, index_t d) {
  const index_t n = 100003, rho = 128;
  const mapping::PairDomain dom(n, rho);
  ASSERT_GT(mapping::pair_count(n), k2Pow32);
  const std::vector<T> x = random_points<T>(n, d, 1000 + d);
  const std::vector<double> norms = norms_of(x, n, d);
  cpu::CpuView<T> v;
  v.a = v.b = x.data();
  v.norms_a = v.norms_b = norms.data();
  v.rows = v.cols = n;
  v.d = d;
  v.rho = rho;
  v.map = map;
  v.mp.metric = metric;

  // Pairs before each block row, one row at a time.
  std::vector<index_t> before(dom.m + 1, 0);
  for (index_t I = 0; I < dom.m; ++I) {
    index_t c = 0;
    for (index_t i = I * rho; i < std::min(n, (I + 1) * rho); ++i)
      c += n - 1 - i;
    before[I + 1] = before[I] + c;
  }
  ASSERT_EQ(before[dom.m], mapping::pair_count(n));
  index_t crossing = 0;  // the block row holding element 2^32
  while (before[crossing + 1] <= k2Pow32)
    ++crossing;
  ASSERT_LT(before[crossing], k2Pow32);

  // The block row across 2^32, and the last three (the last holds 35 rows).
  for (const auto& [I0, I1] :
       {std::make_pair(crossing, crossing + 1), std::make_pair(dom.m - 3, dom.m),
        std::make_pair(dom.m - 1, dom.m)}) {
    const index_t base = before[I0], count = before[I1] - before[I0];
    ASSERT_EQ(dom.elements_before(I0), base);
    ASSERT_EQ(dom.elements_in_rows(I0, I1), count);
    if (I0 != crossing) ASSERT_GT(base, k2Pow32);
    const index_t guard = 64;
    std::vector<T> out(count + guard, std::numeric_limits<T>::quiet_NaN());
    cpu::compute_chunk<T>(v, I0, I1, out.data(), nullptr, 2);
    index_t p = base, bad = 0;
    for (index_t i = I0 * rho; i < std::min(n, I1 * rho); ++i)
      for (index_t j = i + 1; j < n; ++j, ++p) {
        const T want = scalar_value<T>(metric, &x[i * d], &x[j * d], d, norms[i], norms[j]);
        if (!same_bits(out[p - base], want) && bad++ < 5)
          ADD_FAILURE() << metric_name(metric) << " " << map_name(map) << " d=" << d << " pair ("
                        << i << ", " << j << ") at " << p << ": got " << out[p - base] << " want "
                        << want;
        if ((p & 0xffff) == 0) {
          const mapping::Pair q = mapping::pair_unrank(n, p);
          ASSERT_EQ(q.i, i) << p;
          ASSERT_EQ(q.j, j) << p;
          ASSERT_EQ(mapping::pair_rank(n, i, j), p);
        }
      }
    EXPECT_EQ(p, base + count);
    EXPECT_EQ(bad, 0u) << "rows [" << I0 << ", " << I1 << ")";
    for (index_t g = 0; g < guard; ++g)
      ASSERT_TRUE(std::isnan(out[count + g])) << "written past the chunk at " << g;
  }
}

template <typename T>
void check_far_rect_chunks(Metric metric, index_t d) {
  const index_t rows = 70001, cols = 70001, rho = 16;
  const mapping::RectDomain dom(rows, cols, rho);
  ASSERT_GT(dom.total(), k2Pow32);
  const std::vector<T> a = random_points<T>(rows, d, 77), b = random_points<T>(cols, d, 78);
  const std::vector<double> na = norms_of(a, rows, d), nb = norms_of(b, cols, d);
  cpu::CpuView<T> v;
  v.a = a.data();
  v.b = b.data();
  v.norms_a = na.data();
  v.norms_b = nb.data();
  v.rows = rows;
  v.cols = cols;
  v.d = d;
  v.rho = rho;
  v.domain = DomainKind::rect;
  v.mp.metric = metric;
  // Row 61355 holds element 2^32 (61355 · 70001 < 2^32 < 61356 · 70001).
  const index_t crossing = 61355 / rho;
  ASSERT_LT(61355 * cols, k2Pow32);
  ASSERT_GT(61356 * cols, k2Pow32);
  for (const auto& [I0, I1] :
       {std::make_pair(crossing, crossing + 1), std::make_pair(dom.m - 2, dom.m)}) {
    index_t base = 0;  // elements before row I0·ρ, one row at a time
    for (index_t i = 0; i < I0 * rho; ++i)
      base += cols;
    const index_t last = std::min(rows, I1 * rho), count = (last - I0 * rho) * cols;
    ASSERT_EQ(dom.elements_before(I0), base);
    ASSERT_EQ(dom.elements_in_rows(I0, I1), count);
    if (I0 != crossing) ASSERT_GT(base, k2Pow32);
    const index_t guard = 64;
    std::vector<T> out(count + guard, std::numeric_limits<T>::quiet_NaN());
    cpu::compute_chunk<T>(v, I0, I1, out.data(), nullptr, 2);
    index_t e = base, bad = 0;
    for (index_t i = I0 * rho; i < last; ++i)
      for (index_t j = 0; j < cols; ++j, ++e) {
        const T want = scalar_value<T>(metric, &a[i * d], &b[j * d], d, na[i], nb[j]);
        if (!same_bits(out[e - base], want) && bad++ < 5)
          ADD_FAILURE() << metric_name(metric) << " d=" << d << " (" << i << ", " << j << ") at "
                        << e << ": got " << out[e - base] << " want " << want;
      }
    EXPECT_EQ(bad, 0u) << "rows [" << I0 << ", " << I1 << ")";
    for (index_t g = 0; g < guard; ++g)
      ASSERT_TRUE(std::isnan(out[count + g])) << "written past the chunk at " << g;
  }
}

}  // namespace

TEST(CpuKernels, PairChunksPast2Pow32) {
  check_far_pair_chunks<float>(Metric::euclidean, MapKind::lambda, 3);
  check_far_pair_chunks<double>(Metric::cosine, MapKind::bb, 5);
  check_far_pair_chunks<float>(Metric::chebyshev, MapKind::lambda, 11);
}

TEST(CpuKernels, RectChunksPast2Pow32) {
  check_far_rect_chunks<float>(Metric::euclidean, 3);
  check_far_rect_chunks<double>(Metric::cityblock, 10);
}

// ---------------------------------------------------------------------------
// Histograms through the tile loops: counts against a plain pair loop that
// bins with histogram_slot's always-checking path (margin 1).

namespace {

template <typename T>
void check_histogram(index_t n, index_t d, index_t rho, Metric metric, MapKind map,
                     const std::vector<double>& box, double lo, double hi, index_t bins) {
  Problem<T> p;
  p.domain = DomainKind::pairs;
  p.rows = p.cols = n;
  p.d = d;
  p.rho = rho;
  p.metric = metric;
  p.map = map;
  p.epilogue = EpilogueKind::histogram;
  p.hist = make_hist_spec(lo, hi, bins);
  p.a = random_points<T>(n, d, n * 31 + d, -1, 1);
  if (!box.empty()) {
    p.box_dims = static_cast<int>(d);
    for (index_t i = 0; i < n; ++i)
      for (index_t k = 0; k < d; ++k)
        p.a[i * d + k] = static_cast<T>((p.a[i * d + k] + 1) * box[k]);  // [0, 2L): images
    for (index_t k = 0; k < d; ++k)
      p.box[k] = static_cast<T>(box[k]);
  }
  complete_problem(&p);
  const std::string what = std::string(metric_name(metric)) + " " + map_name(map) +
                           " n=" + std::to_string(n) + " ρ=" + std::to_string(rho) +
                           (box.empty() ? "" : " box");

  // Reference: every pair in order, the minimum image written out here.
  std::vector<std::uint64_t> want(bins + 2, 0);
  const double norm = static_cast<double>(bins) / (hi - lo);
  std::vector<T> delta(d), zero(d, T(0));
  for (index_t i = 0; i < n; ++i)
    for (index_t j = i + 1; j < n; ++j) {
      const T* xi = &p.a[i * d];
      const T* xj = &p.a[j * d];
      T value;
      if (box.empty()) {
        value = scalar_value<T>(metric, xi, xj, d, p.norms_a.empty() ? 0 : p.norms_a[i],
                                p.norms_a.empty() ? 0 : p.norms_a[j]);
      } else {
        for (index_t k = 0; k < d; ++k) {
          const T t = xi[k] - xj[k], L = p.box[k];
          delta[k] = t - L * std::rint(t / L);
        }
        value = scalar_value<T>(metric, delta.data(), zero.data(), d, 0, 0);
      }
      ++want[epilogue::histogram_slot(static_cast<double>(value), lo, hi, norm, bins,
                                      p.hist.edges.data(), 1.0)];
    }
  if (mapping::pair_count(n) >= 1000) {
    ASSERT_GT(want[0], 0u) << what << ": choose lo so that some values fall below";
    ASSERT_GT(want[bins + 1], 0u) << what << ": choose hi so that some values fall above";
  }

  const cpu::CpuView<T> v = cpu::view_of(p);
  // About eight chunks: each one's counts are checked to add up to it.
  const mapping::ChunkPlan plan = make_plan(p, std::max<index_t>(3000, p.total() / 8));
  std::vector<std::uint64_t> got(bins + 2, 0), chunk(bins + 2, 7);
  for (index_t c = 0; c < plan.chunks(); ++c) {
    cpu::compute_chunk<T>(v, plan.row_begin(c), plan.row_end(c), nullptr, chunk.data(), 2);
    std::uint64_t in_chunk = 0;
    for (index_t s = 0; s < bins + 2; ++s) {
      got[s] += chunk[s];
      in_chunk += chunk[s];
    }
    ASSERT_EQ(in_chunk, plan.elements(c)) << what << " chunk " << c;
  }
  std::uint64_t sum = 0;
  for (std::uint64_t c : got)
    sum += c;
  EXPECT_EQ(sum, mapping::pair_count(n)) << what;
  EXPECT_EQ(got, want) << what;
}

}  // namespace

TEST(CpuKernels, HistogramMatchesAPlainLoop) {
  for (index_t rho : {1, 16, 128}) {
    for (index_t n : {index_t(2), index_t(3), rho - 1, rho, rho + 1, index_t(1009)}) {
      if (n < 2) continue;
      check_histogram<float>(n, 3, rho, Metric::euclidean, MapKind::lambda, {}, 0.3, 2.1, 17);
      check_histogram<double>(n, 2, rho, Metric::cityblock, MapKind::bb, {}, 0.25, 2.5, 5);
    }
  }
  check_histogram<float>(1009, 9, 16, Metric::cosine, MapKind::lambda, {}, 0.1, 1.3, 64);
  check_histogram<double>(1009, 4, 16, Metric::sqeuclidean, MapKind::lambda, {}, 0.2, 3.0, 1000);
}

TEST(CpuKernels, HistogramWithAPeriodicBox) {
  for (index_t rho : {16, 128}) {
    for (index_t n : {index_t(2), rho + 1, index_t(1009)}) {
      check_histogram<float>(n, 3, rho, Metric::euclidean, MapKind::lambda, {1.0, 0.75, 1.25}, 0.2,
                             0.7, 23);
      check_histogram<double>(n, 3, rho, Metric::euclidean, MapKind::bb, {1.0, 0.75, 1.25}, 0.2,
                              0.7, 23);
      check_histogram<float>(n, 2, rho, Metric::chebyshev, MapKind::bb, {0.5, 2.0}, 0.1, 0.9, 8);
    }
  }
}

// ---------------------------------------------------------------------------
// The backend's protocol, as the driver uses it: submit(0); then for each c
// submit(c+1), wait() -> c. Each result against a reference that does not go
// through the tile loops (the scalar pair loop, binned by hand), checked
// again after the next job has had time to run: it computes into the other
// buffer, so a result stays intact until the next submit().

namespace {

template <typename T>
void check_two_jobs_in_flight(EpilogueKind kind) {
  Problem<T> p;
  p.domain = DomainKind::pairs;
  p.rows = p.cols = 2003;
  p.d = 4;
  p.rho = 16;
  p.metric = Metric::euclidean;
  p.epilogue = kind;
  p.hist = make_hist_spec(0.5, 1.5, 11);
  p.a = random_points<T>(p.rows, p.d, 4242);
  complete_problem(&p);
  const bool hist = kind == EpilogueKind::histogram;

  // Reference: the values in packed order, and each chunk's slots.
  const Case<T> c{p.rows, p.d, p.rho, p.metric, p.a, p.norms_a};
  const std::vector<T> values = scalar_reference(c);
  const mapping::ChunkPlan plan = make_plan(p, 20000);
  ASSERT_GE(plan.chunks(), 50u);
  const double norm = 11 / (1.5 - 0.5);
  auto slots_of = [&](index_t k) {
    std::vector<std::uint64_t> s(p.hist.slots(), 0);
    for (index_t e = plan.offset(k); e < plan.offset(k) + plan.elements(k); ++e)
      ++s[epilogue::histogram_slot(values[e], 0.5, 1.5, norm, 11, p.hist.edges.data(), 1.0)];
    return s;
  };
  auto check = [&](const ChunkResult<T>& r, index_t k, const char* when) {
    if (hist) {
      ASSERT_NE(r.counts, nullptr);
      ASSERT_EQ(r.values, nullptr);
      const std::vector<std::uint64_t> got(r.counts, r.counts + p.hist.slots());
      ASSERT_EQ(got, slots_of(k)) << "chunk " << k << " " << when;
    } else {
      ASSERT_NE(r.values, nullptr);
      ASSERT_EQ(r.counts, nullptr);
      ASSERT_EQ(0,
                std::memcmp(r.values, values.data() + plan.offset(k), plan.elements(k) * sizeof(T)))
          << "chunk " << k << " " << when;
    }
  };
  auto job = [&](index_t k) {
    return ChunkJob{k, plan.row_begin(k), plan.row_end(k), plan.elements(k)};
  };

  auto b = cpu::make_cpu_backend<T>(p, 2, 1);
  b->reserve(plan.largest_chunk());
  b->submit(job(0));
  const void* previous = nullptr;
  for (index_t k = 0; k < plan.chunks(); ++k) {
    if (k + 1 < plan.chunks()) b->submit(job(k + 1));
    const ChunkResult<T> r = b->wait();
    const void* mine = hist ? static_cast<const void*>(r.counts) : r.values;
    EXPECT_NE(mine, previous) << "chunks " << k - 1 << " and " << k << " share a buffer";
    previous = mine;
    check(r, k, "at wait()");
    // Chunk k+1 has been computing meanwhile; k must not have moved.
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    check(r, k, "while the next chunk computes");
  }

  // Draining: submit(a); submit(b); wait() -> a; wait() -> b. Once b is
  // complete, a is still what it was (no submit since its wait()).
  for (index_t k = 0; k + 1 < plan.chunks(); k += 17) {
    b->submit(job(k));
    b->submit(job(k + 1));
    const ChunkResult<T> first = b->wait();
    const ChunkResult<T> second = b->wait();
    check(second, k + 1, "second of a drained pair");
    check(first, k, "after the second of a drained pair completed");
  }
  EXPECT_GE(b->compute_seconds(), 0.0);
}

}  // namespace

TEST(CpuBackend, TwoJobsInFlightStore) {
  check_two_jobs_in_flight<float>(EpilogueKind::store);
  check_two_jobs_in_flight<double>(EpilogueKind::store);
}

TEST(CpuBackend, TwoJobsInFlightHistogram) {
  check_two_jobs_in_flight<float>(EpilogueKind::histogram);
}
