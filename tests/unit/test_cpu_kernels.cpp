// The CPU tile loops against a plain pair loop over the same functors (bit
// for bit) and against a float64 reference (within rounding).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "mapping/partition.hpp"
#include "solver/cpu/tiles.hpp"

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
          a = M::accumulate(a, c.x[i * c.d + k], c.x[j * c.d + k]);
        out[p++] = M::finalize(a, c.norms[i], c.norms[j]);
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
  view.metric = c.metric;
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
            const std::vector<T> got = run_backend(c, chunk, 2, variant);
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
