// What a three-body potential is to the triplet tiles: an evaluator, one
// HOSTDEVICE type constructed on the host from a POD params struct (as
// HOOMD's Evaluator* classes, LAMMPS's PairStyle), copied by value into the
// CPU tile loop and the CUDA kernel, which are templates on it.
//
// A tile computes each pair's squared distance once and hands a triplet
// (points 1, 2, 3) to the evaluator as a = r12², b = r23², c = r31² (and
// 1/a, 1/b, 1/c, which the tile also has); the evaluator returns the
// triplet's energy and ∂E/∂a, ∂E/∂b, ∂E/∂c. The tiles sum those per pair
// (W = Σ ∂E/∂r²) and form the forces F_p = −2 Σ_q W_pq (x_p − x_q) once per
// tile (docs/design.md, "Triplets"). An evaluator E<T> has:
//
//   using Params = ...;                  the POD parameters (float64)
//   explicit E(const Params&);           host: the parameters in T
//   bool counts(T a, T b, T c) const;    the screen: false when the triplet
//                                        is known to give nothing (E = 0,
//                                        no gradient); the tiles skip it and
//                                        store 0 for it
//   bool has_cutoff() const;             host: counts() can drop a triplet
//                                        whose squared distances are all
//                                        moderate (see kUncutPaths)
//   template <bool kScaled = true>
//   TripletTerms<T> evaluate(T a, T b, T c, T ia, T ib, T ic) const;
//                                        E and its gradient; called only
//                                        where counts() holds, or its result
//                                        discarded (so it may be inf or NaN
//                                        elsewhere, never trap)
//   static constexpr bool kUncutPaths;   whether the CUDA kernel should build
//                                        the paths for !has_cutoff(): where
//                                        counts_uncut(a, b, c) (a cheaper
//                                        screen) replaces counts, and, for
//                                        tiles whose squared distances all
//                                        lie in [kTiny, kHuge) (a range the
//                                        kernel checks), evaluate<false>
//                                        (no guard against intermediates
//                                        leaving the range of T) — ATM's
//                                        fast paths; false: counts() and
//                                        evaluate<true>() only.
//   static constexpr bool kTyped;        false for a potential whose parameters
//                                        are the same for every triplet; true
//                                        (ATM per type triple) for one whose
//                                        terms the tiles scale by
//                                        weight(type_i, type_j, type_k) (any
//                                        order), the per-point int32 codes at
//                                        `types` (global point indices):
//                                        evaluated terms t, scaled(t, w).
//
// New potentials: one file here with its Params and evaluator, its enum
// value, spec member and dispatch line in potentials/potential.hpp, and in
// the triplet command (solver/commands/triplet.cpp) its options and checks,
// file attributes, job identity and summary words — docs/design.md lists
// them.
#pragma once

#include <cmath>

#include "core/types.hpp"

namespace tdsolve {

template <typename T>
struct TripletTerms {
  T e;           // the triplet's energy
  T ea, eb, ec;  // ∂E/∂a, ∂E/∂b, ∂E/∂c (a = r12², b = r23², c = r31²)
};

}  // namespace tdsolve
