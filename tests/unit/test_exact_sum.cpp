// ExactSum (solver/exact_sum.hpp): the same bits in any order or grouping,
// exact where a double can hold the answer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <random>
#include <vector>

#include "solver/exact_sum.hpp"
#include "solver/exact_window.hpp"

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

TEST(ExactSum, AtomicAddsFromThreadsGiveTheSameLimbs) {
  // The triplet tiles add from many threads at once (exact_add_atomic): any
  // interleaving gives the limbs a serial loop gives.
  const std::vector<double> v = wild_values(31, 200000, 300);
  std::vector<std::int64_t> serial(kExactLimbs, 0), parallel(kExactLimbs, 0);
  for (double x : v)
    exact_add(serial.data(), x);
#pragma omp parallel for num_threads(4)
  for (size_t i = 0; i < v.size(); ++i)
    exact_add_atomic(parallel.data(), v[i]);
  exact_normalise(serial.data());
  exact_normalise(parallel.data());
  EXPECT_EQ(serial, parallel);
  EXPECT_EQ(exact_value(serial.data()), sum_of(v));
}

TEST(ExactSum, PiecesPlaceEveryBitOfTheDouble) {
  // The three pieces, shifted by 32·at, are the magnitude in units of 2^-1074.
  for (double v :
       {1.0, -3.5, 0x1.fffffffffffffp+1023, 0x1p-1074, 0x1.8p-1030, -1e-300, 123456.789}) {
    const ExactPieces p = exact_pieces(v);
    long double mag = 0;
    for (int k = 2; k >= 0; --k)
      mag = mag * 4294967296.0L + p.piece[k];
    EXPECT_EQ(static_cast<double>(std::ldexp(mag, 32 * p.at - 1074)), std::fabs(v)) << v;
    EXPECT_EQ(p.negative, v < 0) << v;
  }
}

TEST(ExactWindow, PacksEverySumIntoItsWindowAndBackBitForBit) {
  // Rows of a /progress/sums: sums of values of every sign and size, exact
  // zeros, the smallest subnormal's negative (all limbs ones), the largest
  // double (the top limbs), cancelling pairs; in a window of their own and
  // in wider ones (a resumed file's).
  std::vector<std::vector<double>> rows = {wild_values(1, 1000, 40),
                                           wild_values(2, 1000, 300),
                                           {},
                                           {-0x1p-1074},
                                           {0x1.fffffffffffffp+1023},
                                           {-0x1.fffffffffffffp+1023, 1.0},
                                           {1e-300, -1e-300},
                                           {-3.0, 1e-20},
                                           {5.0},
                                           {-5.0}};
  for (int r = 0; r < 40; ++r)
    rows.push_back(wild_values(100 + r, 50, r % 2 ? 10 : 60));
  const index_t slots = rows.size();
  std::vector<std::int64_t> limbs(slots * kExactLimbs, 0);
  for (index_t s = 0; s < slots; ++s) {
    for (double v : rows[s])
      exact_add(&limbs[s * kExactLimbs], v);
    exact_normalise(&limbs[s * kExactLimbs]);
  }
  for (int at_least : {0, 7, 40, kExactLimbs}) {
    const LimbWindow w = limb_window(limbs.data(), slots, at_least);
    ASSERT_GE(w.width, std::max(at_least, 1));
    ASSERT_GE(w.first, 0);
    ASSERT_LE(w.first + w.width, kExactLimbs);
    std::vector<std::int64_t> packed(slots * w.width), back(slots * kExactLimbs, -7);
    pack_limbs(limbs.data(), slots, w, packed.data());
    ASSERT_TRUE(unpack_limbs(packed.data(), slots, w, back.data()));
    EXPECT_EQ(back, limbs) << "at least " << at_least;
    for (index_t s = 0; s < slots; ++s)
      EXPECT_EQ(exact_value(&back[s * kExactLimbs]), exact_value(&limbs[s * kExactLimbs]));
  }
  // Any narrower window loses a row: the one chosen is the narrowest.
  const LimbWindow w = limb_window(limbs.data(), slots, 0);
  for (const LimbWindow narrow :
       {LimbWindow{w.first + 1, w.width - 1}, LimbWindow{w.first, w.width - 1}}) {
    std::vector<std::int64_t> packed(slots * narrow.width), back(slots * kExactLimbs);
    pack_limbs(limbs.data(), slots, narrow, packed.data());
    unpack_limbs(packed.data(), slots, narrow, back.data());
    EXPECT_NE(back, limbs) << narrow.first << " " << narrow.width;
  }
}

TEST(ExactWindow, TypicalSumsNeedAFewLimbs) {
  // Energies and forces of magnitudes 1e-6 .. 1e3 from terms down to 1e-12:
  // a handful of the 69 limbs, which is what makes the file small.
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(-1, 1), e(-12, 3);
  const index_t slots = 1000;
  std::vector<std::int64_t> limbs(slots * kExactLimbs, 0);
  for (index_t s = 0; s < slots; ++s) {
    for (int t = 0; t < 200; ++t)
      exact_add(&limbs[s * kExactLimbs], u(rng) * std::pow(10.0, e(rng)));
    exact_normalise(&limbs[s * kExactLimbs]);
  }
  const LimbWindow w = limb_window(limbs.data(), slots, 0);
  EXPECT_LE(w.width, 8);
  EXPECT_GE(w.width, 3);
}

TEST(ExactWindow, RefusesADamagedLimb) {
  const LimbWindow w{10, 3};
  std::vector<std::int64_t> back(kExactLimbs);
  const std::int64_t good[3] = {1, 2, -1}, negative[3] = {-1, 2, 3},
                     big[3] = {1, std::int64_t(1) << 32, 3};
  EXPECT_TRUE(unpack_limbs(good, 1, w, back.data()));
  EXPECT_FALSE(unpack_limbs(negative, 1, w, back.data()));
  EXPECT_FALSE(unpack_limbs(big, 1, w, back.data()));
}
