// The ATM triplet energy and gradient (solver/potentials/atm.hpp) against the textbook
// formula with angles, central finite differences, and symmetry.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <limits>
#include <random>

#include "solver/potentials/atm.hpp"

using namespace tdsolve;

namespace {

using V = std::array<double, 3>;

V sub(const V& p, const V& q) {
  return {p[0] - q[0], p[1] - q[1], p[2] - q[2]};
}
double dot(const V& p, const V& q) {
  return p[0] * q[0] + p[1] * q[1] + p[2] * q[2];
}

// E from the angles at each atom, as LAMMPS writes it.
double energy_by_angles(const V& x1, const V& x2, const V& x3, double nu) {
  const V d12 = sub(x2, x1), d13 = sub(x3, x1), d23 = sub(x3, x2);
  const double r12 = std::sqrt(dot(d12, d12)), r13 = std::sqrt(dot(d13, d13)),
               r23 = std::sqrt(dot(d23, d23));
  const double c1 = dot(d12, d13) / (r12 * r13);
  const double c2 = dot(sub(x1, x2), sub(x3, x2)) / (r12 * r23);
  const double c3 = dot(sub(x1, x3), sub(x2, x3)) / (r13 * r23);
  const double r = r12 * r23 * r13;
  return nu * (1 + 3 * c1 * c2 * c3) / (r * r * r);
}

double energy(const V& x1, const V& x2, const V& x3, double nu) {
  const V d12 = sub(x1, x2), d23 = sub(x2, x3), d31 = sub(x3, x1);
  return atm_terms<double>(dot(d12, d12), dot(d23, d23), dot(d31, d31), nu).e;
}

// Forces from the gradient terms.
std::array<V, 3> forces(const V& x1, const V& x2, const V& x3, double nu) {
  const V d12 = sub(x1, x2), d23 = sub(x2, x3), d31 = sub(x3, x1);
  const AtmTerms<double> t = atm_terms<double>(dot(d12, d12), dot(d23, d23), dot(d31, d31), nu);
  std::array<V, 3> f{};
  for (int k = 0; k < 3; ++k) {
    f[0][k] = -2 * (t.ea * (x1[k] - x2[k]) + t.ec * (x1[k] - x3[k]));
    f[1][k] = -2 * (t.ea * (x2[k] - x1[k]) + t.eb * (x2[k] - x3[k]));
    f[2][k] = -2 * (t.eb * (x3[k] - x2[k]) + t.ec * (x3[k] - x1[k]));
  }
  return f;
}

V random_point(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-2, 2);
  return {u(rng), u(rng), u(rng)};
}

}  // namespace

TEST(Atm, EnergyEqualsTheAngleFormula) {
  std::mt19937_64 rng(11);
  for (int t = 0; t < 2000; ++t) {
    const V a = random_point(rng), b = random_point(rng), c = random_point(rng);
    const double nu = 0.5 + t % 7;
    const double want = energy_by_angles(a, b, c, nu), got = energy(a, b, c, nu);
    // 1 + 3 cos cos cos may cancel: compare at the scale of its terms, ν/(r12 r23 r31)³.
    const V d12 = sub(a, b), d23 = sub(b, c), d31 = sub(c, a);
    const double scale = 4 * nu / std::pow(dot(d12, d12) * dot(d23, d23) * dot(d31, d31), 1.5);
    ASSERT_NEAR(got, want, 1e-13 * scale) << t;
    // Symmetric in the three atoms.
    ASSERT_NEAR(energy(b, c, a, nu), got, 1e-13 * scale) << t;
    ASSERT_NEAR(energy(c, b, a, nu), got, 1e-13 * scale) << t;
  }
  // An equilateral triangle of side 1: cos γ = 1/2 everywhere, E = ν·(1 + 3/8).
  const double h = std::sqrt(3.0) / 2;
  EXPECT_NEAR(energy({0, 0, 0}, {1, 0, 0}, {0.5, h, 0}, 2.0), 2.0 * 1.375, 1e-14);
  // Three atoms on a line, 1 apart: γ = 0, 0, π: E = ν (1 − 3) / (1·1·2)³.
  EXPECT_NEAR(energy({0, 0, 0}, {1, 0, 0}, {2, 0, 0}, 1.0), -2.0 / 8.0, 1e-14);
}

TEST(Atm, ForcesAreMinusTheGradientAndSumToZero) {
  std::mt19937_64 rng(12);
  for (int t = 0; t < 300; ++t) {
    std::array<V, 3> x = {random_point(rng), random_point(rng), random_point(rng)};
    const double nu = 1.25;
    const std::array<V, 3> f = forces(x[0], x[1], x[2], nu);
    for (int k = 0; k < 3; ++k)
      ASSERT_NEAR(f[0][k] + f[1][k] + f[2][k], 0.0, 1e-10 * (std::fabs(f[0][k]) + 1)) << t;
    for (int atom = 0; atom < 3; ++atom)
      for (int k = 0; k < 3; ++k) {
        const double h = 1e-6;
        std::array<V, 3> p = x, m = x;
        p[atom][k] += h;
        m[atom][k] -= h;
        const double fd = -(energy(p[0], p[1], p[2], nu) - energy(m[0], m[1], m[2], nu)) / (2 * h);
        ASSERT_NEAR(f[atom][k], fd, 1e-6 * (std::fabs(fd) + 1)) << t << " atom " << atom;
      }
  }
}

TEST(Atm, InvariantUnderTranslationAndRotation) {
  std::mt19937_64 rng(13);
  const double c = std::cos(0.7), s = std::sin(0.7);
  for (int t = 0; t < 500; ++t) {
    const V a = random_point(rng), b = random_point(rng), d = random_point(rng);
    const V shift = random_point(rng);
    auto move = [&](const V& p) {  // rotate about z, then shift
      return V{c * p[0] - s * p[1] + shift[0], s * p[0] + c * p[1] + shift[1], p[2] + shift[2]};
    };
    const double e = energy(a, b, d, 1.0);
    ASSERT_NEAR(energy(move(a), move(b), move(d), 1.0), e, 1e-10 * std::fabs(e)) << t;
  }
}

TEST(Atm, CutoffsFollowLammps) {
  // Each pair distance below `cutoff`, and r12 r23 r31 below cutoff_triple³.
  const double inf = INFINITY;
  EXPECT_TRUE(atm_counts(1.0, 4.0, 9.0, inf, inf));
  EXPECT_TRUE(atm_counts(1.0, 4.0, 9.0, 9.5, inf));    // r31 = 3 < 3.08
  EXPECT_TRUE(atm_counts(1.0, 4.0, 9.0, 9.0, inf));    // r31 = 3 = cutoff counts (LAMMPS)
  EXPECT_FALSE(atm_counts(1.0, 4.0, 9.0, 8.9, inf));   // r31 = 3 > 2.98
  EXPECT_TRUE(atm_counts(1.0, 4.0, 9.0, inf, 36.5));   // (1·2·3)² = 36 < rt⁶
  EXPECT_TRUE(atm_counts(1.0, 4.0, 9.0, inf, 36.0));   // equal counts
  EXPECT_FALSE(atm_counts(1.0, 4.0, 9.0, inf, 35.9));  // r12 r23 r31 > rt
}

TEST(Atm, KernelFormEqualsTheReference) {
  // atm_terms_fast (the tiles' form: 1/a, 1/b, 1/c given, a reciprocal
  // square root) computes the same function as atm_terms.
  std::mt19937_64 rng(14);
  for (int t = 0; t < 2000; ++t) {
    const V x1 = random_point(rng), x2 = random_point(rng), x3 = random_point(rng);
    const V d12 = sub(x1, x2), d23 = sub(x2, x3), d31 = sub(x3, x1);
    const double a = dot(d12, d12), b = dot(d23, d23), c = dot(d31, d31), nu = 0.75;
    const AtmTerms<double> ref = atm_terms<double>(a, b, c, nu);
    const AtmTerms<double> got =
        atm_terms_fast<double>(a, b, c, 1 / a, 1 / b, 1 / c, nu, 0.375 * nu);
    const double scale = 4 * nu / std::pow(a * b * c, 1.5);
    ASSERT_NEAR(got.e, ref.e, 1e-13 * scale) << t;
    ASSERT_NEAR(got.ea, ref.ea, 1e-12 * (std::fabs(ref.ea) + scale / a)) << t;
    ASSERT_NEAR(got.eb, ref.eb, 1e-12 * (std::fabs(ref.eb) + scale / b)) << t;
    ASSERT_NEAR(got.ec, ref.ec, 1e-12 * (std::fabs(ref.ec) + scale / c)) << t;
    const AtmTerms<float> f =
        atm_terms_fast<float>(float(a), float(b), float(c), float(1 / a), float(1 / b),
                              float(1 / c), float(nu), float(0.375 * nu));
    ASSERT_NEAR(f.e, ref.e, 1e-5 * scale) << t;
  }
}

TEST(Atm, NoCutoffCountsEveryFiniteProduct) {
  // Without cutoffs the bounds are the largest finite value: only a product
  // a·b·c that overflows (its energy is 0 in that precision) is skipped.
  const float big = std::numeric_limits<float>::max();
  EXPECT_TRUE(atm_counts(1e12f, 1e12f, 1e12f, big, big));
  EXPECT_FALSE(atm_counts(1e13f, 1e13f, 1e13f, big, big));  // 1e39 overflows float
}

TEST(Atm, KernelFormStaysFiniteWherePWouldOverflowFloat) {
  // |P| = |(a+c-b)(a+b-c)(b+c-a)| reaches 8abc for collinear points: at 0,
  // r, 2r with r² = 2.92e12, abc = 4r⁶ ≈ 1e38 still counts in float32 but
  // P = -32r⁶ overflows. The energy (~1e-57) is 0 in float32, not NaN: the
  // kernel form never forms P.
  const float r2 = 2.92e12f;
  const float a = r2, b = r2, c = 4 * r2;
  ASSERT_TRUE(std::isfinite(a * b * c));
  ASSERT_FALSE(std::isfinite((a + c - b) * (a + b - c) * (b + c - a)));
  const AtmTerms<float> f = atm_terms_fast<float>(a, b, c, 1 / a, 1 / b, 1 / c, 1.0f, 0.375f);
  EXPECT_TRUE(std::isfinite(f.e) && std::isfinite(f.ea) && std::isfinite(f.eb) &&
              std::isfinite(f.ec));
  EXPECT_LE(std::fabs(f.e), 1e-40f);
  // The unscaled form (for tiles known to be far from this) would give NaN.
  EXPECT_TRUE(
      std::isnan((atm_terms_fast<float, false>(a, b, c, 1 / a, 1 / b, 1 / c, 1.0f, 0.375f).e)));
}

TEST(Atm, KernelFormStaysInRangeAtSmallDistancesInFloat) {
  // Close triplets: (abc)^(-5/2) alone passes float32's range once
  // r12 r23 r31 < 2e-8, well before the energy and its derivatives do; the
  // kernel form never forms it.
  for (double r : {3e-3, 1e-3, 5e-4}) {
    const double a = r * r, b = 1.21 * r * r, c = 1.44 * r * r;  // sides r, 1.1r, 1.2r
    const AtmTerms<double> ref = atm_terms<double>(a, b, c, 1.0);
    const AtmTerms<float> f = atm_terms_fast<float>(float(a), float(b), float(c), float(1 / a),
                                                    float(1 / b), float(1 / c), 1.0f, 0.375f);
    EXPECT_NEAR(f.e, ref.e, 1e-5 * std::fabs(ref.e)) << r;
    EXPECT_NEAR(f.ea, ref.ea, 1e-5 * std::fabs(ref.ea)) << r;
    EXPECT_NEAR(f.eb, ref.eb, 1e-5 * std::fabs(ref.eb)) << r;
    EXPECT_NEAR(f.ec, ref.ec, 1e-5 * std::fabs(ref.ec)) << r;
  }
}
