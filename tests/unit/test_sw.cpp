// The Stillinger–Weber three-body evaluator (solver/potentials/sw.hpp)
// against a long double brute force written from LAMMPS's threebody()
// (angles from dot products, forces from its fj/fk expressions), central
// finite differences, its cutoff, float32, and the potential dispatch.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <random>
#include <type_traits>

#include "solver/potentials/potential.hpp"

using namespace tdsolve;

namespace {

using L = long double;
using V = std::array<L, 3>;

V sub(const V& p, const V& q) {
  return {p[0] - q[0], p[1] - q[1], p[2] - q[2]};
}
L dot(const V& p, const V& q) {
  return p[0] * q[0] + p[1] * q[1] + p[2] * q[2];
}

struct Ref {
  L e = 0;
  std::array<V, 3> f{};  // forces
  int terms = 0;         // how many of the three centred terms are present
  // The scales of the rounding: bounds on |E| and on a force component had
  // no factor (cos θ − cos θ0) cancelled (it loses digits where θ is near
  // θ0), times 1 + κ, κ the condition of exp(γσ / (r − aσ)) in r (the
  // relative error of r − aσ, eps aσ / |r − aσ|, times |γσ / (r − aσ)|):
  // near the cutoff a rounding of r moves the exponent a lot.
  L e_scale = 0, f_scale = 0;
};

// LAMMPS pair_style sw's three-body part for the three atoms of one triplet:
// for each centre i and its two others j < k, the term when r_ij² and r_ik²
// are both below cutsq = (σ a)² (computed in double, as LAMMPS does), with
// its forces exactly as threebody() forms them.
Ref lammps_threebody(const std::array<V, 3>& x, const SwParams& p) {
  const double cut = p.sigma * p.a, cutsq = cut * cut;
  const L sg = L(p.sigma) * p.gamma, le = L(p.lambda) * p.epsilon;
  Ref r;
  for (int i = 0; i < 3; ++i) {
    const int j = i == 0 ? 1 : 0, k = i == 2 ? 1 : 2;
    const V d1 = sub(x[j], x[i]), d2 = sub(x[k], x[i]);
    const L rsq1 = dot(d1, d1), rsq2 = dot(d2, d2);
    if (!(rsq1 < cutsq && rsq2 < cutsq)) continue;
    ++r.terms;
    const L r1 = std::sqrt(rsq1), r2 = std::sqrt(rsq2);
    const L rainv1 = 1 / (r1 - L(cut)), rainv2 = 1 / (r2 - L(cut));
    const L gsrainv1 = sg * rainv1, gsrainv2 = sg * rainv2;
    const L gsrainvsq1 = gsrainv1 * rainv1 / r1, gsrainvsq2 = gsrainv2 * rainv2 / r2;
    const L rinv12 = 1 / (r1 * r2);
    const L cs = dot(d1, d2) * rinv12;
    const L delcs = cs - L(p.costheta0);
    const L facexp = std::exp(gsrainv1) * std::exp(gsrainv2);
    const L facrad = le * facexp * delcs * delcs;
    const L frad1 = facrad * gsrainvsq1, frad2 = facrad * gsrainvsq2;
    const L facang = 2 * le * facexp * delcs;
    const L facang12 = rinv12 * facang;
    const L csfacang = cs * facang;
    const L csfac1 = csfacang / rsq1, csfac2 = csfacang / rsq2;
    for (int c = 0; c < 3; ++c) {
      const L fj = d1[c] * (frad1 + csfac1) - d2[c] * facang12;
      const L fk = d2[c] * (frad2 + csfac2) - d1[c] * facang12;
      r.f[j][c] += fj;
      r.f[k][c] += fk;
      r.f[i][c] -= fj + fk;
    }
    r.e += facrad;
    const L big = std::fabs(cs) + std::fabs(L(p.costheta0));
    const L kappa = std::fabs(gsrainv1 * rainv1) * cut + std::fabs(gsrainv2 * rainv2) * cut;
    r.e_scale += le * facexp * big * big * (1 + kappa);
    r.f_scale += le * facexp *
                 (big * big * (std::fabs(gsrainvsq1) * r1 + std::fabs(gsrainvsq2) * r2) +
                  4 * big * (1 / r1 + 1 / r2)) *
                 (1 + kappa);
  }
  return r;
}

template <typename T>
struct Got {
  TripletTerms<T> t;
  std::array<V, 3> f{};
};

// The evaluator on the triplet's squared distances (in T), and the forces
// its gradient gives: F1 = −2 [E_a (x1 − x2) + E_c (x1 − x3)], and so on.
template <typename T>
Got<T> evaluate(const std::array<V, 3>& x, const SwParams& p) {
  const V d12 = sub(x[0], x[1]), d23 = sub(x[1], x[2]), d31 = sub(x[2], x[0]);
  const T a = T(dot(d12, d12)), b = T(dot(d23, d23)), c = T(dot(d31, d31));
  const SwEvaluator<T> ev(p);
  Got<T> g;
  g.t = ev.evaluate(a, b, c, T(1) / a, T(1) / b, T(1) / c);
  const L ea = g.t.ea, eb = g.t.eb, ec = g.t.ec;
  for (int k = 0; k < 3; ++k) {
    g.f[0][k] = -2 * (ea * (x[0][k] - x[1][k]) + ec * (x[0][k] - x[2][k]));
    g.f[1][k] = -2 * (ea * (x[1][k] - x[0][k]) + eb * (x[1][k] - x[2][k]));
    g.f[2][k] = -2 * (eb * (x[2][k] - x[1][k]) + ec * (x[2][k] - x[0][k]));
  }
  return g;
}

L max_abs(const std::array<V, 3>& f) {
  L m = 0;
  for (const V& v : f)
    for (L c : v)
      m = std::max(m, std::fabs(c));
  return m;
}

// Three points near each other at the scale of Si's cutoff (3.77 Å): most
// triangles have two or three sides within it.
std::array<V, 3> random_triplet(std::mt19937_64& rng, L spread) {
  std::uniform_real_distribution<double> u(-1, 1);
  std::array<V, 3> x;
  for (V& p : x)
    for (L& c : p)
      c = spread * u(rng);
  return x;
}

}  // namespace

TEST(SwEvaluator, MatchesLammpsThreebodyInFloat64) {
  std::mt19937_64 rng(2024);
  const SwParams p;  // Si.sw
  int by_terms[4] = {0, 0, 0, 0};
  for (int t = 0; t < 4000; ++t) {
    const std::array<V, 3> x = random_triplet(rng, 2.6);
    const Ref ref = lammps_threebody(x, p);
    const Got<double> got = evaluate<double>(x, p);
    ++by_terms[ref.terms];
    if (ref.terms == 0) {
      EXPECT_EQ(got.t.e, 0.0);
      EXPECT_EQ(max_abs(got.f), 0.0L);
      continue;
    }
    // (and 1e-300: terms below float64's range are 0 there)
    EXPECT_LE(std::fabs(got.t.e - ref.e), 1e-13L * ref.e_scale + 1e-300L) << "triplet " << t;
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 3; ++k)
        EXPECT_LE(std::fabs(got.f[i][k] - ref.f[i][k]), 1e-13L * ref.f_scale + 1e-300L)
            << "triplet " << t;
  }
  // The draw covered every case: 0, 1 and 3 terms (2 cannot be: two terms
  // need all three sides within the cutoff, and then the third is there).
  EXPECT_GT(by_terms[0], 100);
  EXPECT_GT(by_terms[1], 100);
  EXPECT_EQ(by_terms[2], 0);
  EXPECT_GT(by_terms[3], 100);
}

TEST(SwEvaluator, GradientIsFiniteDifferenceOfEnergy) {
  // Other parameters than Si's, so no default hides a wrong factor.
  SwParams p;
  p.epsilon = 1.3;
  p.sigma = 0.9;
  p.a = 2.1;
  p.lambda = 17.5;
  p.gamma = 0.8;
  p.costheta0 = -0.2;
  std::mt19937_64 rng(7);
  int checked = 0;
  for (int t = 0; t < 500; ++t) {
    const std::array<V, 3> x = random_triplet(rng, 1.3);
    const Got<double> got = evaluate<double>(x, p);
    if (got.t.e == 0) continue;
    // Central differences need a smooth neighbourhood of h: not within 10%
    // below the cutoff, where exp(γσ / (r − aσ)) has steep derivatives.
    bool steep = false;
    for (int i = 0; i < 3; ++i)
      for (int j = i + 1; j < 3; ++j) {
        const L r = std::sqrt(dot(sub(x[i], x[j]), sub(x[i], x[j])));
        steep |= r > 0.9L * p.sigma * p.a && r < L(p.sigma * p.a);
      }
    if (steep) continue;
    ++checked;
    const L h = 1e-6;
    std::array<V, 3> fd{};
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 3; ++k) {
        std::array<V, 3> xp = x, xm = x;
        xp[i][k] += h;
        xm[i][k] -= h;
        fd[i][k] = -(lammps_threebody(xp, p).e - lammps_threebody(xm, p).e) / (2 * h);
      }
    const L fs = max_abs(fd);
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 3; ++k)
        EXPECT_LE(std::fabs(got.f[i][k] - fd[i][k]), 1e-6L * fs) << "triplet " << t;
    // The forces of a triplet sum to zero (it does not move itself).
    for (int k = 0; k < 3; ++k)
      EXPECT_LE(std::fabs(got.f[0][k] + got.f[1][k] + got.f[2][k]), 1e-12L * fs);
  }
  EXPECT_GT(checked, 150);
}

TEST(SwEvaluator, TermsFollowTheCutoffStrictly) {
  // Squared sides given directly: cut2 = (σ a)² exactly as the evaluator
  // holds it. A side exactly at the cutoff is out (LAMMPS: rsq < cutsq).
  const SwParams p;
  const SwEvaluator<double> ev(p);
  const double c2 = ev.cut2, in = 0.8 * c2, out = std::nextafter(c2, 2 * c2);
  EXPECT_EQ(ev.cut2, (p.sigma * p.a) * (p.sigma * p.a));
  EXPECT_TRUE(ev.counts(in, in, in));
  EXPECT_TRUE(ev.counts(in, in, c2));  // two sides in: the term between them
  EXPECT_FALSE(ev.counts(in, c2, c2));
  EXPECT_FALSE(ev.counts(in, out, 4 * c2));
  EXPECT_TRUE(ev.counts(std::nextafter(c2, 0.0), std::nextafter(c2, 0.0), 1.0));
  // Sides a, b in and c at the cutoff: only the term at point 2 (sides a, b),
  // which does not depend on c except through its angle.
  const auto t = ev.evaluate(in, in, c2, 1 / in, 1 / in, 1 / c2);
  EXPECT_GT(t.e, 0);
  const double s = 1 / in, cs = 0.5 * (in + in - c2) * s, d = cs - ev.costheta0;
  const double g = std::exp(ev.sigma_gamma / (std::sqrt(in) - ev.cut));
  EXPECT_NEAR(t.e, ev.lambda_epsilon * d * d * g * g, 1e-14 * t.e);
  EXPECT_NEAR(t.ec, -ev.lambda_epsilon * d * g * g * s, 1e-13 * std::fabs(t.ec));
  // Nothing in: all zero, even for sides far beyond (no inf or NaN).
  const double far = 1e300;
  const auto z = ev.evaluate(far, far, far, 1 / far, 1 / far, 1 / far);
  EXPECT_EQ(z.e, 0);
  EXPECT_EQ(z.ea, 0);
  EXPECT_EQ(z.eb, 0);
  EXPECT_EQ(z.ec, 0);
  // One side beyond (r_b = 1.22 aσ), two in: finite, the term between them.
  const auto w = ev.evaluate(in, 1.5 * c2, in, 1 / in, 1 / (1.5 * c2), 1 / in);
  EXPECT_TRUE(std::isfinite(w.e) && std::isfinite(w.ea) && std::isfinite(w.eb) &&
              std::isfinite(w.ec));
  EXPECT_GT(w.e, 0);
  // Just inside the cutoff the term fades to 0 smoothly: finite, tiny.
  const double edge = std::nextafter(c2, 0.0);
  const auto e = ev.evaluate(edge, edge, in, 1 / edge, 1 / edge, 1 / in);
  EXPECT_TRUE(std::isfinite(e.e) && std::isfinite(e.ea) && std::isfinite(e.eb));
  EXPECT_LT(std::fabs(e.e), 1e-100);
}

TEST(SwEvaluator, SymmetricUnderRelabelling) {
  std::mt19937_64 rng(11);
  const SwParams p;
  for (int t = 0; t < 300; ++t) {
    const std::array<V, 3> x = random_triplet(rng, 2.4);
    const Got<double> g = evaluate<double>(x, p);
    // Points (2, 3, 1): a' = r23², b' = r31², c' = r12².
    const Got<double> h = evaluate<double>({x[1], x[2], x[0]}, p);
    EXPECT_NEAR(h.t.e, g.t.e, 1e-14 * std::fabs(g.t.e));
    EXPECT_NEAR(h.t.ea, g.t.eb, 1e-13 * (std::fabs(g.t.eb) + std::fabs(g.t.ea)));
    EXPECT_NEAR(h.t.eb, g.t.ec, 1e-13 * (std::fabs(g.t.ec) + std::fabs(g.t.eb)));
    EXPECT_NEAR(h.t.ec, g.t.ea, 1e-13 * (std::fabs(g.t.ea) + std::fabs(g.t.ec)));
  }
}

TEST(SwEvaluator, Float32AgreesWithFloat64) {
  std::mt19937_64 rng(32);
  const SwParams p;
  int checked = 0;
  for (int t = 0; t < 2000; ++t) {
    const std::array<V, 3> x = random_triplet(rng, 2.4);
    const Ref ref = lammps_threebody(x, p);
    // Away from the cutoff (float32 rounding could move a side across it).
    const Got<float> f = evaluate<float>(x, p);
    if (ref.terms == 0) continue;
    bool near_edge = false;
    const double cut = p.sigma * p.a;
    for (int i = 0; i < 3; ++i)
      for (int j = i + 1; j < 3; ++j)
        near_edge |= std::fabs(std::sqrt(dot(sub(x[i], x[j]), sub(x[i], x[j]))) - cut) < 0.05L;
    if (near_edge) continue;
    ++checked;
    // (and 1e-37: terms below float32's range are 0 there)
    EXPECT_LE(std::fabs(f.t.e - ref.e), 1e-5L * ref.e_scale + 1e-37L) << "triplet " << t;
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 3; ++k)
        EXPECT_LE(std::fabs(f.f[i][k] - ref.f[i][k]), 1e-5L * ref.f_scale + 1e-37L)
            << "triplet " << t;
  }
  EXPECT_GT(checked, 300);
}

TEST(PotentialDispatch, PicksTheEvaluatorOfTheSpec) {
  PotentialSpec s;
  s.atm.nu = 0.7;
  s.sw.epsilon = 3.0;
  const auto kind = [&](auto ev) { return std::is_same_v<decltype(ev), SwEvaluator<double>>; };
  EXPECT_FALSE(dispatch_potential<double>(s, kind));
  s.kind = Potential::sw;
  EXPECT_TRUE(dispatch_potential<double>(s, kind));
  // The evaluator is built from the spec's parameters.
  const double e = dispatch_potential<double>(s, [](auto ev) {
    if constexpr (std::is_same_v<decltype(ev), SwEvaluator<double>>) return ev.lambda_epsilon;
    return -1.0;
  });
  EXPECT_EQ(e, 21.0 * 3.0);
  s.kind = Potential::atm;
  const double nu = dispatch_potential<double>(s, [](auto ev) {
    if constexpr (std::is_same_v<decltype(ev), AtmEvaluator<double>>) return ev.nu;
    return -1.0;
  });
  EXPECT_EQ(nu, 0.7);
  EXPECT_STREQ(potential_name(Potential::sw), "sw");
  EXPECT_STREQ(potential_name(Potential::atm), "atm");
}

TEST(AtmEvaluator, SameBitsAsAtmTermsFast) {
  // The tiles' ATM arithmetic is atm_terms_fast with the parameters the
  // triplet view used to hold: the evaluator changes no bit of it.
  AtmParams p;
  p.nu = 0.83;
  p.cutoff = 2.5;
  p.cutoff_triple = 2.2;
  const AtmEvaluator<float> f(p);
  const AtmEvaluator<double> d(p);
  EXPECT_EQ(f.nu, float(0.83));
  EXPECT_EQ(f.k, float(3.0 / 8.0 * 0.83));
  EXPECT_EQ(d.cutoff2, 2.5 * 2.5);
  EXPECT_EQ(d.triple6, 2.2 * 2.2 * 2.2 * 2.2 * 2.2 * 2.2);
  EXPECT_TRUE(d.has_cutoff());
  EXPECT_FALSE(AtmEvaluator<double>(AtmParams{}).has_cutoff());
  EXPECT_EQ(AtmEvaluator<float>(AtmParams{}).cutoff2, std::numeric_limits<float>::max());
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(0.5, 6);
  for (int t = 0; t < 1000; ++t) {
    const double a = u(rng), b = u(rng), c = u(rng);
    const TripletTerms<double> x = d.evaluate(a, b, c, 1 / a, 1 / b, 1 / c);
    const TripletTerms<double> y = atm_terms_fast(a, b, c, 1 / a, 1 / b, 1 / c, d.nu, d.k);
    EXPECT_EQ(x.e, y.e);
    EXPECT_EQ(x.ea, y.ea);
    EXPECT_EQ(x.eb, y.eb);
    EXPECT_EQ(x.ec, y.ec);
    EXPECT_EQ(d.counts(a, b, c), atm_counts(a, b, c, d.cutoff2, d.triple6));
  }
}
