// ExactSum (solver/exact_sum.hpp): the same bits in any order or grouping,
// exact where a double can hold the answer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <random>
#include <vector>

#include "solver/exact_sum.hpp"

using namespace tdsolve;

namespace {

std::vector<double> wild_values(std::uint64_t seed, int count, int max_exp) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> m(0.5, 1.0);
  std::uniform_int_distribution<int> e(-max_exp, max_exp);
  std::vector<double> v(count);
  for (double& x : v)
    x = std::ldexp(m(rng), e(rng)) * (rng() % 2 ? 1 : -1);
  return v;
}

double sum_of(const std::vector<double>& v) {
  ExactSum s;
  for (double x : v)
    s.add(x);
  return s.value();
}

}  // namespace

TEST(ExactSum, SameBitsInAnyOrderAndGrouping) {
  std::vector<double> v = wild_values(1, 20000, 300);
  const double want = sum_of(v);
  std::mt19937_64 rng(2);
  for (int t = 0; t < 5; ++t) {
    std::shuffle(v.begin(), v.end(), rng);
    ASSERT_EQ(sum_of(v), want) << t;
    // Split into parts (as chunks and ranks would), merged in another order.
    std::vector<ExactSum> parts(3 + t);
    for (size_t i = 0; i < v.size(); ++i)
      parts[(i * 7 + t) % parts.size()].add(v[i]);
    ExactSum all;
    for (size_t p = parts.size(); p-- > 0;)
      all.add(parts[p]);
    ASSERT_EQ(all.value(), want) << t;
    // The same through limb-wise integer sums of normalised parts (MPI_SUM).
    ExactSum viaLimbs;
    for (ExactSum& p : parts) {
      p.normalise();
      for (int i = 0; i < ExactSum::kLimbs; ++i)
        viaLimbs.limbs()[i] += p.limbs()[i];
    }
    ASSERT_EQ(viaLimbs.value(), want) << t;
  }
}

TEST(ExactSum, ExactWhereNaiveSumsLoseEverything) {
  EXPECT_EQ(sum_of({1e100, 1.0, -1e100}), 1.0);
  EXPECT_EQ(sum_of({1.0, 1e100, 1.0, -1e100}), 2.0);
  EXPECT_EQ(sum_of({DBL_MAX, DBL_MAX, -DBL_MAX}), DBL_MAX);  // past 2^1024 on the way
  const double tiny = std::ldexp(1.0, -1074);                // the smallest subnormal
  EXPECT_EQ(sum_of({tiny, tiny, tiny}), 3 * tiny);
  EXPECT_EQ(sum_of({1.0, tiny, -1.0}), tiny);
  EXPECT_EQ(sum_of({-0.5, -0.25}), -0.75);
  EXPECT_EQ(sum_of({}), 0.0);
  // A million full mantissas into the same limbs (the words' carry room).
  std::vector<double> many(1000000, 0.7500000000000001);
  __float128 ref = 0;
  for (double x : many)
    ref += x;
  EXPECT_EQ(sum_of(many), static_cast<double>(ref));
}

TEST(ExactSum, WithinAnUlpOfAQuadPrecisionReference) {
  // Exponents within ±40: a __float128 running sum (113 bits) is exact here.
  for (std::uint64_t seed = 10; seed < 20; ++seed) {
    const std::vector<double> v = wild_values(seed, 5000, 40);
    __float128 ref = 0;
    for (double x : v)
      ref += x;
    const double got = sum_of(v), want = static_cast<double>(ref);
    EXPECT_LE(std::fabs(got - want), 2 * std::fabs(std::nextafter(want, INFINITY) - want)) << seed;
  }
}
