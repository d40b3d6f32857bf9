// Functor-level checks of the newer metrics: tdsolve's own log and exp
// (which both backends share) against glibc's, the boolean formulas on
// hand-counted words, the NaN bits, the parameters' dispatch.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include "solver/metrics.hpp"

namespace tdsolve {
namespace {

double ulps_apart(double a, double b) {
  if (a == b) return 0;
  return std::fabs(a - b) / (std::nextafter(std::fabs(b), INFINITY) - std::fabs(b));
}

TEST(Metrics, LogWithinTwoUlpOfGlibc) {
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> e(-300, 300), m(0.5, 1.0);
  double worst = 0;
  for (int i = 0; i < 200000; ++i) {
    const double x = std::ldexp(m(rng), static_cast<int>(e(rng)));
    worst = std::max(worst, ulps_apart(metric::log_(x), std::log(x)));
  }
  // Near 1 (log -> 0) the relative error stays small too.
  for (double x = 0.999; x < 1.001; x += 1e-7)
    worst = std::max(worst, ulps_apart(metric::log_(x), std::log(x)));
  EXPECT_LE(worst, 2.0);
  EXPECT_EQ(metric::log_(1.0), 0.0);
  EXPECT_EQ(metric::log_(std::ldexp(1.0, -1074)), std::log(std::ldexp(1.0, -1074)));
}

TEST(Metrics, ExpWithinTwoUlpOfGlibc) {
  std::mt19937_64 rng(2);
  std::uniform_real_distribution<double> u(-708, 709);
  double worst = 0;
  for (int i = 0; i < 200000; ++i) {
    const double x = u(rng);
    worst = std::max(worst, ulps_apart(metric::exp_(x), std::exp(x)));
  }
  EXPECT_LE(worst, 2.0);
  EXPECT_EQ(metric::exp_(0.0), 1.0);
  EXPECT_EQ(metric::exp_(800.0), HUGE_VAL);
  EXPECT_EQ(metric::exp_(-800.0), 0.0);
}

TEST(Metrics, PowersAsTheMinkowskiFunctorTakesThem) {
  EXPECT_EQ(metric::powi_(3.0, 5), 243.0);
  EXPECT_EQ(metric::powi_(0.5, 7), 0.0078125);
  EXPECT_NEAR(metric::pow_(2.0, 0.5), std::sqrt(2.0), 4e-16);
  EXPECT_EQ(metric::pow_(0.0, 2.5), 0.0);
  MetricParams mp;
  mp.metric = Metric::minkowski;
  mp.p = 3;
  mp.int_p = 3;
  const metric::Minkowski<double> m(mp);
  double acc = 0;
  acc = m.accumulate(acc, 1.0, 3.0, 0);  // 8
  acc = m.accumulate(acc, 2.0, 1.0, 1);  // 1
  EXPECT_EQ(acc, 9.0);
  EXPECT_NEAR(m.finalize(acc, 0, 0), std::cbrt(9.0), 1e-15);
}

// Packs bits into one word of T.
template <typename T>
T word(std::uint64_t bits) {
  T t;
  if constexpr (sizeof(T) == 4) {
    const std::uint32_t u = static_cast<std::uint32_t>(bits);
    std::memcpy(&t, &u, 4);
  } else {
    std::memcpy(&t, &bits, 8);
  }
  return t;
}

template <typename T>
void check_boolean_formulas() {
  // a = 1100 1010, b = 1010 0110 over 8 features (bit k = feature k).
  const std::uint64_t a = 0b01010011, b = 0b01100101;
  // tt = a&b = 0b01000001 (2), tf = a&~b = 0b00010010 (2), ft = ~a&b = 0b00100100 (2), ff = 2.
  const double tt = 2, tf = 2, ft = 2, ff = 2, n = 8;
  const struct {
    Metric m;
    double want;
  } cases[] = {
      {Metric::hamming, (tf + ft) / n},
      {Metric::jaccard, (tf + ft) / (tt + tf + ft)},
      {Metric::dice, (tf + ft) / (2 * tt + tf + ft)},
      {Metric::russellrao, (n - tt) * (1.0 / n)},
      {Metric::rogerstanimoto, 2 * (tf + ft) / (tt + ff + 2 * (tf + ft))},
      {Metric::sokalmichener, 2 * (tf + ft) / (tt + ff + 2 * (tf + ft))},
      {Metric::sokalsneath, 2 * (tf + ft) / (tt + 2 * (tf + ft))},
      {Metric::yule, 2 * tf * ft / (tt * ff + tf * ft)},
  };
  for (const auto& c : cases) {
    MetricParams mp;
    mp.metric = c.m;
    mp.bits = 8;
    const T got = dispatch_metric<T>(mp, [&](auto f) {
      using M = decltype(f);
      typename M::acc_t acc = 0;
      acc = f.accumulate(acc, word<T>(a), word<T>(b), 0);
      acc = f.accumulate(acc, T(0), T(0), 1);  // zero padding changes nothing
      return f.finalize(acc, 0, 0);
    });
    EXPECT_EQ(got, static_cast<T>(c.want)) << metric_name(c.m);
  }
  // Two all-false points: SciPy's 0/0 cases.
  for (Metric m : {Metric::jaccard, Metric::yule, Metric::dice, Metric::sokalsneath}) {
    MetricParams mp;
    mp.metric = m;
    mp.bits = 8;
    const metric::Boolean<T> f(mp);
    const T got = f.finalize(f.accumulate(metric::BoolCounts(0), T(0), T(0)), 0, 0);
    if (m == Metric::dice || m == Metric::sokalsneath) {
      const T nan = metric::quiet_nan<T>();
      EXPECT_EQ(std::memcmp(&got, &nan, sizeof(T)), 0) << metric_name(m) << ": not the shared NaN";
      EXPECT_FALSE(std::signbit(got));
    } else {
      EXPECT_EQ(got, T(0)) << metric_name(m);
    }
  }
}

TEST(Metrics, BooleanFormulasOnPackedWords) {
  check_boolean_formulas<float>();
  check_boolean_formulas<double>();
}

TEST(Metrics, CanberraSkipsZeroTermsAndReadsWeights) {
  const double w[3] = {2.0, 0.5, 4.0};
  MetricParams mp;
  mp.metric = Metric::canberra;
  mp.weights = w;
  const metric::Canberra<double> c(mp);
  double acc = 0;
  acc = c.accumulate(acc, 1.0, -1.0, 0);  // 2 * 1
  acc = c.accumulate(acc, 0.0, 0.0, 1);   // 0/0: left out
  acc = c.accumulate(acc, 3.0, 1.0, 2);   // 4 * 0.5
  EXPECT_EQ(c.finalize(acc, 0, 0), 4.0);
  // Bray-Curtis of two zero points is the shared NaN, not x86's negative one.
  const float bc = metric::BrayCurtis<float>::finalize(metric::Sums2<float>(0), 0, 0);
  EXPECT_TRUE(std::isnan(bc));
  EXPECT_FALSE(std::signbit(bc));
}

// BoolValues: hamming and jaccard compare values; weights in SciPy's order
// (hamming's two lanes, the last of an odd d apart); features past d (the
// GPU's zero padding) count nothing; values or bits chosen by mp.values.
TEST(Metrics, BooleanOnValuesAndWeights) {
  const double a[5] = {1, 2, 0, 5, 0}, b[5] = {1, 3, 0, 4, 7};
  const double w[5] = {0.1, 0.2, 0.3, 0.4, 0.5};
  const auto run = [&](Metric m, const double* weights, double weight_sum) {
    MetricParams mp;
    mp.metric = m;
    mp.bits = 5;
    mp.values = true;
    mp.weights = weights;
    mp.weight_sum = weight_sum;
    return dispatch_metric<double>(mp, [&](auto f) {
      using M = decltype(f);
      EXPECT_TRUE((std::is_same_v<M, metric::BoolValues<double>>));
      typename M::acc_t acc = 0;
      for (index_t k = 0; k < 7; ++k)  // k = 5, 6: padding
        acc = f.accumulate(acc, k < 5 ? a[k] : 0.0, k < 5 ? b[k] : 0.0, k);
      return f.finalize(acc, 0, 0);
    });
  };
  EXPECT_EQ(run(Metric::hamming, nullptr, 5), 3.0 / 5);
  EXPECT_EQ(run(Metric::jaccard, nullptr, 5), 3.0 / 4);
  // Differing features 1, 3, 4: lanes (w1 + w3) and w4 (d odd: the last apart).
  EXPECT_EQ(run(Metric::hamming, w, 1.5), ((0.0 + (0.2 + 0.4)) + 0.5) / 1.5);
  EXPECT_EQ(run(Metric::jaccard, w, 0), ((0.2 + 0.4) + 0.5) / (((0.1 + 0.2) + 0.4) + 0.5));
  // dice on 0/1 points (the host's cast): tt = w0, tf = w3 (a only), ft = w4.
  const double ca[5] = {1, 1, 0, 1, 0}, cb[5] = {1, 1, 0, 0, 1};
  MetricParams mp;
  mp.metric = Metric::dice;
  mp.bits = 5;
  mp.values = true;
  mp.weights = w;
  const metric::BoolValues<double> f(mp);
  metric::Sums4 acc = 0;
  for (index_t k = 0; k < 5; ++k)
    acc = f.accumulate(acc, ca[k], cb[k], k);
  EXPECT_EQ(f.finalize(acc, 0, 0), (0.4 + 0.5) / ((2.0 * (0.1 + 0.2) + 0.4) + 0.5));
  mp.values = false;
  EXPECT_TRUE(dispatch_metric<double>(
      mp, [](auto g) { return std::is_same_v<decltype(g), metric::Boolean<double>>; }));
}

// jensenshannon: a negative (the host's mark of a row SciPy gives inf for)
// makes the pair inf.
TEST(Metrics, JensenShannonMarkedRowsAreInfinite) {
  const metric::JensenShannon<float> f{MetricParams{}};
  double acc = 0;
  acc = f.accumulate(acc, 0.5f, 0.25f);
  acc = f.accumulate(acc, -1.0f, 0.75f);
  acc = f.accumulate(acc, 0.5f, 0.0f);
  EXPECT_TRUE(std::isinf(f.finalize(acc, 0, 0)));
  EXPECT_GT(f.finalize(acc, 0, 0), 0.0f);
}

TEST(Metrics, DispatchByParameters) {
  const auto name = [](Metric m, double p) {
    MetricParams mp;
    mp.metric = m;
    mp.p = p;
    return dispatch_metric<float>(mp, [](auto f) { return std::string(typeid(f).name()); });
  };
  EXPECT_EQ(name(Metric::minkowski, 1), name(Metric::cityblock, 2));
  EXPECT_EQ(name(Metric::minkowski, 2), name(Metric::euclidean, 2));
  EXPECT_EQ(name(Metric::minkowski, HUGE_VAL), name(Metric::chebyshev, 2));
  EXPECT_NE(name(Metric::minkowski, 3), name(Metric::euclidean, 2));
  EXPECT_EQ(name(Metric::seuclidean, 2), name(Metric::euclidean, 2));
  EXPECT_EQ(name(Metric::correlation, 2), name(Metric::cosine, 2));
  EXPECT_EQ(name(Metric::yule, 2), name(Metric::hamming, 2));
  Metric m;
  ASSERT_TRUE(parse_metric("PNorm", &m));
  EXPECT_EQ(m, Metric::minkowski);
  ASSERT_TRUE(parse_metric("Matching", &m));
  EXPECT_EQ(m, Metric::hamming);
  EXPECT_FALSE(parse_metric("kulsinski", &m));
}

}  // namespace
}  // namespace tdsolve
