// The Axilrod–Teller–Muto three-body energy of one triplet, and its gradient,
// as LAMMPS `pair_style atm cutoff cutoff_triple` defines them:
//
//     E = ν (1 + 3 cos γ1 cos γ2 cos γ3) / (r12 r23 r31)³,
//
// counted only when r12, r23, r31 <= cutoff and r12 r23 r31 <= cutoff_triple³
// (LAMMPS skips a triplet when a distance or the product is larger).
//
// Everything follows from the three squared pair distances a = r12²,
// b = r23², c = r31² (law of cosines: cos γ1 = (a + c − b) / (2√(ac)) at
// atom 1, and so on), so a kernel computes each pair's a once and reuses it
// for every triplet it is in:
//
//     E = ν (abc)^(-3/2) + (3ν/8) P (abc)^(-5/2),
//     P = (a + c − b)(a + b − c)(b + c − a).
//
// The gradient with respect to a, b, c gives the forces through
// ∂a/∂x1 = 2(x1 − x2), ...:
//     F1 = −2 [E_a (x1 − x2) + E_c (x1 − x3)]
//     F2 = −2 [E_a (x2 − x1) + E_b (x2 − x3)]
//     F3 = −2 [E_b (x3 − x2) + E_c (x3 − x1)]
// which sum to zero. Summed over a point's pairs, F_p = −2 Σ_q W_pq (x_p − x_q)
// with W_pq the sum of ∂E/∂(r_pq²) over the triplets holding the pair: the
// triplet kernels accumulate W per pair of a tile, not forces per triplet.
// AtmEvaluator (below) is this potential as the tiles see it
// (potentials/terms.hpp).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "core/types.hpp"
#include "solver/potentials/terms.hpp"

namespace tdsolve {

template <typename T>
using AtmTerms = TripletTerms<T>;

// Whether the triplet with squared distances a, b, c counts: each distance
// at most `cutoff` (cutoff2 = cutoff²) and r12 r23 r31 at most cutoff_triple³
// (triple6 = cutoff_triple⁶). Without cutoffs pass the largest finite T for
// both: then only a product that overflows is skipped (its energy is 0 in T).
template <typename T>
TDS_HD bool atm_counts(T a, T b, T c, T cutoff2, T triple6) {
  return a <= cutoff2 && b <= cutoff2 && c <= cutoff2 && a * b * c <= triple6;
}

TDS_HD float atm_rsqrt(float x) {
#if defined(__CUDA_ARCH__)
  return rsqrtf(x);
#else
  return 1.0f / std::sqrt(x);
#endif
}
TDS_HD double atm_rsqrt(double x) {
#if defined(__CUDA_ARCH__)
  return rsqrt(x);
#else
  return 1.0 / std::sqrt(x);
#endif
}

template <typename T>
TDS_HD TripletTerms<T> atm_terms(T a, T b, T c, T nu) {
  const T pa = a + c - b, pb = a + b - c, pc = b + c - a;  // 2√(..) cos γ at atoms 1, 2, 3
  const T p = pa * pb * pc;
  const T abc = a * b * c;
  const T inv = T(1) / abc;
  const T s3 = inv * std::sqrt(inv);  // (abc)^(-3/2)
  const T s5 = s3 * inv;              // (abc)^(-5/2)
  const T k = T(3) / T(8) * nu;
  TripletTerms<T> t;
  t.e = nu * s3 + k * p * s5;
  // d/da of (abc)^(-3/2) = -3/2 (abc)^(-5/2) bc = -3/2 s5 bc, and of
  // P (abc)^(-5/2): P_a s5 - 5/2 P s5 bc / (abc) = P_a s5 - 5/2 P s5 / a.
  const T pa_a = pb * pc + pa * pc - pa * pb;  // ∂P/∂a
  const T pb_b = pa * pc + pb * pa - pb * pc;  // ∂P/∂b
  const T pc_c = pa * pb + pc * pb - pa * pc;  // ∂P/∂c
  const T base = T(-1.5) * nu * s3;            // times 1/a, 1/b, 1/c below
  const T tail = T(-2.5) * k * p * s5;
  t.ea = (base + tail) / a + k * pa_a * s5;
  t.eb = (base + tail) / b + k * pb_b * s5;
  t.ec = (base + tail) / c + k * pc_c * s5;
  return t;
}

// atm_terms for the kernels: 1/a, 1/b, 1/c given (computed once per pair of
// a tile), k = 3ν/8, and a reciprocal square root (the device's rsqrt).
// Scaled (the default), no intermediate leaves the range of T before the
// results do: P = (a+c−b)(a+b−c)(b+c−a), up to 8 max(a,b,c)³, is formed as
// (pa r)(pb r)(pc r), r = (abc)^(-1/2), and (abc)^(-5/2) (in float32 past
// 3.4e38 once r12 r23 r31 < 2e-8) never alone: the ∂P/∂x terms are scaled by
// (abc)^(-1) first. kScaled = false saves those multiplications for callers
// that know every squared distance lies in [1e-2, 1e12] (float32).
template <typename T, bool kScaled = true>
TDS_HD TripletTerms<T> atm_terms_fast(T a, T b, T c, T ia, T ib, T ic, T nu, T k) {
  const T pa = a + c - b, pb = a + b - c, pc = b + c - a;
  const T qa = pb * pc + pa * pc - pa * pb;  // ∂P/∂a
  const T qb = pa * pc + pb * pa - pb * pc;  // ∂P/∂b
  const T qc = pa * pb + pc * pb - pa * pc;  // ∂P/∂c
  const T r = atm_rsqrt(a * b * c);          // (abc)^(-1/2)
  const T r2 = r * r;
  const T s3 = r2 * r;  // (abc)^(-3/2)
  TripletTerms<T> t;
  T kps5, da, db, dc;  // k P (abc)^(-5/2); k (abc)^(-5/2) ∂P/∂a, ∂P/∂b, ∂P/∂c
  if constexpr (kScaled) {
    const T ks3 = k * s3;
    kps5 = k * ((pa * r) * (pb * r) * (pc * r) * r2);
    da = ks3 * (qa * r2);
    db = ks3 * (qb * r2);
    dc = ks3 * (qc * r2);
  } else {
    const T ks5 = k * s3 * r2;
    kps5 = ks5 * (pa * pb * pc);
    da = ks5 * qa;
    db = ks5 * qb;
    dc = ks5 * qc;
  }
  t.e = nu * s3 + kps5;
  const T bt = T(-1.5) * nu * s3 - T(2.5) * kps5;
  t.ea = bt * ia + da;
  t.eb = bt * ib + db;
  t.ec = bt * ic + dc;
  return t;
}

// LAMMPS `pair_style atm cutoff cutoff_triple` with `pair_coeff * * * nu`;
// types > 0: with `pair_coeff I J K nu` per type triple instead (nu is then
// unused; the per-point types and the ν table travel beside the spec,
// AtmTypeTable).
struct AtmParams {
  double nu = 1;
  double cutoff = 0, cutoff_triple = 0;  // <= 0: none
  int types = 0;                         // > 0: ν per type triple (AtmTypedEvaluator)
};

template <typename T>
struct AtmEvaluator {
  using Params = AtmParams;
  // Without cutoffs the kernel screens only for a·b·c overflowing, and
  // tiles within [kTiny, kHuge) take atm_terms_fast unscaled.
  static constexpr bool kUncutPaths = true;
  static constexpr bool kTyped = false;

  T nu = 1, k = T(3) / T(8);   // k = 3ν/8
  T cutoff2 = 0, triple6 = 0;  // atm_counts' bounds (largest T: none)

  AtmEvaluator() = default;
  explicit AtmEvaluator(const AtmParams& p) {
    nu = static_cast<T>(p.nu);
    k = static_cast<T>(3.0 / 8.0 * p.nu);
    const T none = std::numeric_limits<T>::max();
    const double c = p.cutoff, t = p.cutoff_triple;
    cutoff2 = c > 0 ? static_cast<T>(c * c) : none;
    triple6 = t > 0 ? static_cast<T>(t * t * t * t * t * t) : none;
    if (!(triple6 <= none)) triple6 = none;  // overflowed T: no bound
    if (!(cutoff2 <= none)) cutoff2 = none;
  }

  bool has_cutoff() const {
    return cutoff2 < std::numeric_limits<T>::max() || triple6 < std::numeric_limits<T>::max();
  }
  TDS_HD bool counts(T a, T b, T c) const { return atm_counts(a, b, c, cutoff2, triple6); }
  // Without cutoffs (triple6 is then the largest T): only an overflowing
  // product is dropped.
  TDS_HD bool counts_uncut(T a, T b, T c) const { return a * b * c <= triple6; }
  template <bool kScaled = true>
  TDS_HD TripletTerms<T> evaluate(T a, T b, T c, T ia, T ib, T ic) const {
    return atm_terms_fast<T, kScaled>(a, b, c, ia, ib, ic, nu, k);
  }
};

// The per-point types (in the run's order, codes 0 .. count-1) and the
// count × count × count table of ν, symmetric, as the tiles read them:
// host memory for the CPU, device memory for a kernel.
template <typename T>
struct AtmTypeTable {
  const std::int32_t* types = nullptr;
  const T* nu = nullptr;  // ν of types (x, y, z) at (x count + y) count + z
  int count = 0;
};

// LAMMPS `pair_style atm` with `pair_coeff I J K nu`: E and every term of
// its gradient are linear in ν, so the triplet is evaluated with ν = 1 (the
// same arithmetic as AtmEvaluator's) and its terms times ν of its three
// points' types (kTyped: the tiles call weight() and scale the terms).
template <typename T>
struct AtmTypedEvaluator : AtmEvaluator<T> {
  static constexpr bool kTyped = true;
  const std::int32_t* types = nullptr;
  const T* nu_table = nullptr;
  int count = 0;

  AtmTypedEvaluator() = default;
  AtmTypedEvaluator(const AtmParams& p, const AtmTypeTable<T>& t)
      : AtmEvaluator<T>(unit(p)), types(t.types), nu_table(t.nu), count(t.count) {}

  // ν of the type triple (x, y, z), in any order (the table is symmetric).
  TDS_HD T weight(std::int32_t x, std::int32_t y, std::int32_t z) const {
    return nu_table[(static_cast<index_t>(x) * count + y) * count + z];
  }
  static TDS_HD TripletTerms<T> scaled(TripletTerms<T> r, T w) {
    r.e *= w;
    r.ea *= w;
    r.eb *= w;
    r.ec *= w;
    return r;
  }

 private:
  static AtmParams unit(AtmParams p) {
    p.nu = 1;
    return p;
  }
};

}  // namespace tdsolve
