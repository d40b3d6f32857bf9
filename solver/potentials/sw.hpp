// The three-body term of the Stillinger–Weber potential, exactly as LAMMPS
// `pair_style sw` computes it (src/MANYBODY/pair_sw.cpp, threebody(); one
// element, the columns of a LAMMPS .sw file: ε, σ, a, λ, γ, cos θ0), with
// its two-body term left out (the same as A = 0 in the file).
//
// LAMMPS sums, for every atom i and every pair {j, k} of its neighbours
// within the cutoff a σ (r_ij² < (aσ)², strictly), the term centred at i
//
//     φ3(i; j, k) = λ ε (cos θ_jik − cos θ0)² exp(γσ / (r_ij − aσ))
//                                             exp(γσ / (r_ik − aσ)),
//
// so a triplet {1, 2, 3} holds up to three terms, one centred at each of its
// points, each present only when both of its sides are within the cutoff.
// With a = r12², b = r23², c = r31² the term at point 1 has sides a, c and
// the opposite side b (point 2: a, b and c; point 3: b, c and a). For a term
// with sides u, v (r_u = √u, r_v = √v) and opposite side w:
//
//     cos θ = (u + v − w) / (2 r_u r_v)                   (law of cosines)
//     g(u)  = exp(γσ / (r_u − aσ)),   g'(u) = −g(u) x(u) / (2 r_u (r_u − aσ))
//             with x(u) = γσ / (r_u − aσ)
//     E     = λε D² g(u) g(v),   D = cos θ − cos θ0
//     ∂E/∂u = λε D g(u) g(v) (1/(r_u r_v) − cos θ / u) + λε D² g'(u) g(v)
//     ∂E/∂v = the same with u and v swapped
//     ∂E/∂w = −λε D g(u) g(v) / (r_u r_v)
//
// (∂cos θ/∂u = 1/(2 r_u r_v) − cos θ/(2u), ∂cos θ/∂w = −1/(2 r_u r_v)).
// The triplet's energy and ∂E/∂a, ∂E/∂b, ∂E/∂c are the sums over its
// present terms. tests/unit/test_sw.cpp checks them against LAMMPS's force
// expressions, a long double brute force and finite differences.
//
// LAMMPS's cutoff test is on r² (rsq < cutsq, cutsq = (σ a)² in float64);
// so is this one. A side whose √ rounds to aσ itself also drops out (LAMMPS
// would divide by zero there; the limit of its term is 0).
#pragma once

#include <cmath>

#include "core/types.hpp"
#include "solver/potentials/terms.hpp"

namespace tdsolve {

// The defaults are LAMMPS's Si.sw (Stillinger and Weber 1985, metal units).
struct SwParams {
  double epsilon = 2.1683, sigma = 2.0951, a = 1.80, lambda = 21.0, gamma = 1.20,
         costheta0 = -0.333333333333;
};

template <typename T>
struct SwEvaluator {
  using Params = SwParams;
  static constexpr bool kUncutPaths = false;  // always a cutoff
  static constexpr bool kTyped = false;

  T lambda_epsilon = 0, sigma_gamma = 0, cut = 0, cut2 = 0, costheta0 = 0;

  SwEvaluator() = default;
  // As LAMMPS's setup_params: cut = σ a, cutsq = cut², σγ and λε, in
  // float64, then rounded to T.
  explicit SwEvaluator(const SwParams& p) {
    const double c = p.sigma * p.a;
    cut = static_cast<T>(c);
    cut2 = static_cast<T>(c * c);
    sigma_gamma = static_cast<T>(p.sigma * p.gamma);
    lambda_epsilon = static_cast<T>(p.lambda * p.epsilon);
    costheta0 = static_cast<T>(p.costheta0);
  }

  bool has_cutoff() const { return true; }

  // At least one term: two of the three sides within the cutoff.
  TDS_HD bool counts(T a, T b, T c) const {
    return int(a < cut2) + int(b < cut2) + int(c < cut2) >= 2;
  }

  // One side's factors: in (within the cutoff), g, dg = ∂g/∂r², 1/r.
  struct Side {
    T g, dg, ir;
    bool in;
  };
  TDS_HD Side side(T u) const {
    Side s;
    const T r = std::sqrt(u);
    s.ir = T(1) / r;
    s.in = u < cut2 && r < cut;
    s.g = s.dg = T(0);
    if (s.in) {
      const T rainv = T(1) / (r - cut);  // < 0
      const T x = sigma_gamma * rainv;
      s.g = std::exp(x);
      // g x / (r − aσ) would be 0 × inf where g has underflowed and r − aσ is tiny.
      if (s.g > T(0)) s.dg = T(-0.5) * (s.g * x) * rainv * s.ir;
    }
    return s;
  }

  // Adds the term centred where sides u and v meet (w opposite; iu = 1/u,
  // iv = 1/v) to e and to the derivatives with respect to u, v, w.
  TDS_HD void term(T u, T v, T w, T iu, T iv, const Side& su, const Side& sv, T& e, T& eu, T& ev,
                   T& ew) const {
    const T s = su.ir * sv.ir;              // 1/(r_u r_v)
    const T cs = T(0.5) * (u + v - w) * s;  // cos θ
    const T d = cs - costheta0;
    const T led = lambda_epsilon * d;  // λε D
    const T f = led * (su.g * sv.g);   // λε D g(u) g(v)
    const T ledd = led * d;            // λε D²
    e += f * d;
    eu += f * (s - cs * iu) + ledd * su.dg * sv.g;
    ev += f * (s - cs * iv) + ledd * su.g * sv.dg;
    ew -= f * s;
  }

  // kScaled is ATM's (potentials/terms.hpp): SW has one form.
  template <bool kScaled = true>
  TDS_HD TripletTerms<T> evaluate(T a, T b, T c, T ia, T ib, T ic) const {
    const Side sa = side(a), sb = side(b), sc = side(c);
    TripletTerms<T> t{T(0), T(0), T(0), T(0)};
    if (sa.in && sc.in) term(a, c, b, ia, ic, sa, sc, t.e, t.ea, t.ec, t.eb);  // at point 1
    if (sa.in && sb.in) term(a, b, c, ia, ib, sa, sb, t.e, t.ea, t.eb, t.ec);  // at point 2
    if (sb.in && sc.in) term(b, c, a, ib, ic, sb, sc, t.e, t.eb, t.ec, t.ea);  // at point 3
    return t;
  }
};

}  // namespace tdsolve
