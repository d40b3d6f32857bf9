// The triplet tiles on the CPU: OpenMP over the same block maps (λ3 or
// BB-3D) a GPU launch uses, one ρ×ρ×ρ tile per block, a template on the
// potential's evaluator (solver/potentials/terms.hpp), with the same
// structure as the CUDA kernel: the three ρ×ρ sets of pair terms of a tile
// computed once, every triplet from them, and the tile's reductions (per-pair
// weights W = Σ ∂E/∂r², then per-point energies and forces) added to exact
// accumulators (solver/exact_sum.hpp), so the sums do not depend on the
// order threads finish tiles in.
#pragma once

#include <cstdint>
#include <vector>

#include "solver/problem.hpp"

namespace tdsolve::cpu {

template <typename T>
struct TripletView {
  const T* x = nullptr;  // n × 3
  index_t n = 0, rho = 32;
  MapKind map = MapKind::lambda;
  TripletKernel kernel = TripletKernel::potential;
  PotentialSpec potential;  // the tiles' evaluator: dispatch_potential<T>(potential, ...)
  const std::int32_t* types = nullptr;           // typed ATM: each point's type (the problem's)
  std::vector<T> nu;                             // ... and the ν table in T
  EpilogueKind epilogue = EpilogueKind::reduce;  // epi::Reduce, or epi::Store as well
  const Culled* cull = nullptr;                  // a culled domain's tiles; null: dense
  epilogue::Cell3<T> cell;                       // --box: pairs' differences minimum-image
};

template <typename T>
TripletView<T> triplet_view_of(const Problem<T>& p);

// Layers [layer_begin, layer_end) of the triplet domain with `threads`
// OpenMP threads. epi::Store: the energy of triplet e lands at
// out[e - elements_before(layer_begin)] (0 where the cutoffs drop it).
// sums: triplet_sum_slots(n) × kExactLimbs limbs, set to this chunk's sums.
template <typename T>
void compute_triplet_chunk(const TripletView<T>& v, index_t layer_begin, index_t layer_end, T* out,
                           std::int64_t* sums, int threads);

}  // namespace tdsolve::cpu
