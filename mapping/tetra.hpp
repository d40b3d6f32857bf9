// The triplet domain i < j < k and λ3, its block-space map (seed 002 §6).
//
// Packed order is itertools.combinations(range(n), 3): triplet (i, j, k) sits
// after every triplet with a smaller i, then a smaller j. Internally the maps
// enumerate the reversed labels a = n-1-i > b = n-1-j > c = n-1-k in colex
// order, q = C(a,3) + C(b,2) + c, which is the packed order read backwards
// (p = C(n,3) - 1 - q), exactly as for pairs (simplex.hpp).
//
// Blocks: with m = ceil(n/ρ) block indices, the triplets of tile (I, J, K),
// I <= J <= K, have i in block I, j in block J, k in block K. λ3 enumerates
// the m(m+1)(m+2)/6 tiles (diagonal planes included) in colex layers of the
// reversed labels R >= S >= U:
//     R = largest r with Te(r) = r(r+1)(r+2)/6 <= ω, the real root of
//         x³ + 3x² + 2x − 6ω = 0 rounded down,
//     (S, U) = λ2 of ω − Te(R) inside the triangular layer R,
// and reverses them (I = m-1-R, ...). So block layers [I0, I1) are the ω range
// [Te(m-I1), Te(m-I0)): the tiles of a chunk of block layers are one 1-D grid,
// and the layers' triplets one contiguous range of the packed output. The
// strict variant (no diagonal planes, I < J < K) maps ω < C(m,3) the same way.
//
// The root is estimated with a cube root (float32 on the device while 6ω is
// small, float64 otherwise) and corrected with exact 64-bit integer steps:
// exact for every ω < 2^62.
#pragma once

#include <cstdint>

#include <cmath>

#include "mapping/domain.hpp"

namespace tdsolve::mapping {

// Te(r) = C(r+2, 3) = r(r+1)(r+2)/6, the r-th tetrahedral number; exact
// while the result fits (r < ~4.8e6).
TDS_HD constexpr index_t tet(index_t r) {
  return triplet_count(r + 2);
}

TDS_HD index_t tet_root_estimate(index_t w) {
  // y = x + 1 solves y³ − y = 6w, so y is just above cbrt(6w).
#if defined(__CUDA_ARCH__)
  if (w < (index_t(1) << 20)) return static_cast<index_t>(cbrtf(6.0f * static_cast<float>(w)));
#endif
  const double y = cbrt(6.0 * static_cast<double>(w));
  return y > 1.0 ? static_cast<index_t>(y - 1.0) : 0;
}

TDS_HD index_t tet_root_correct(index_t w, index_t r) {
  while (r > 0 && tet(r) > w)
    --r;
  while (tet(r + 1) <= w)
    ++r;
  return r;
}

// Largest r with Te(r) <= w, for every w < 2^62.
TDS_HD index_t tet_root(index_t w) {
  return tet_root_correct(w, tet_root_estimate(w));
}

struct Triplet {
  index_t i, j, k;
};

// Packed rank of triplet (i, j, k), i < j < k < n.
TDS_HD index_t triplet_rank(index_t n, index_t i, index_t j, index_t k) {
  const index_t a = n - 1 - i, b = n - 1 - j, c = n - 1 - k;
  const index_t q = triplet_count(a) + pair_count(b) + c;  // C(a,3) + C(b,2) + c
  return triplet_count(n) - 1 - q;
}

// Inverse of triplet_rank: the triplet at packed rank p < C(n,3).
TDS_HD Triplet triplet_unrank(index_t n, index_t p) {
  const index_t q = triplet_count(n) - 1 - p;
  const index_t a = tet_root(q) + 2;  // C(a,3) = Te(a-2) <= q
  const index_t q2 = q - tet(a - 2);
  const index_t b = tri_root(q2) + 1;  // C(b,2) = T(b-1) <= q2
  const index_t c = q2 - tri(b - 1);
  return Triplet{n - 1 - a, n - 1 - b, n - 1 - c};
}

// A tile of the block tetrahedron: block indices I <= J <= K.
struct Tile3 {
  index_t layer, row, col;  // I, J, K
};

// λ3 with the diagonal planes: ω < Te(m) -> (I, J, K), I <= J <= K < m.
TDS_HD Tile3 lambda3_tile(index_t m, index_t omega) {
  const index_t r = tet_root(omega);
  const index_t w = omega - tet(r);
  const index_t s = tri_root(w);
  return Tile3{m - 1 - r, m - 1 - s, m - 1 - (w - tri(s))};
}

// λ3 without the diagonal planes: ω < C(m,3) -> (I, J, K), I < J < K < m.
TDS_HD Tile3 lambda3_strict_tile(index_t m, index_t omega) {
  const index_t r = tet_root(omega) + 2;
  const index_t w = omega - tet(r - 2);
  const index_t s = tri_root(w) + 1;
  return Tile3{m - 1 - r, m - 1 - s, m - 1 - (w - tri(s - 1))};
}

// The ω range of block layers [layer_begin, layer_end) (with the diagonal).
TDS_HD BlockRange lambda3_blocks(index_t m, index_t layer_begin, index_t layer_end) {
  return BlockRange{tet(m - layer_end), tet(m - layer_begin)};
}

// Triplets i < j < k of n points in tiles of ρ×ρ×ρ; block "rows" are the
// layers of ρ values of i (the chunk planner's unit).
struct TripletDomain {
  index_t n = 0;
  index_t rho = 1;
  index_t m = 0;  // ceil(n/ρ)
  // Culled (null: every tile; solver/cull.hpp): the surviving tiles, (I, J,
  // K) at tiles[3t..3t + 2], by layer I; layer I's are [tile_start[I],
  // tile_start[I + 1]). tiles is where the kernels run (device memory on a
  // GPU); tile_start is read on the host only (Lambda3Map::grid).
  const std::uint32_t* tiles = nullptr;
  const index_t* tile_start = nullptr;

  TripletDomain() = default;
  TDS_HD TripletDomain(index_t n_, index_t rho_) : n(n_), rho(rho_), m((n_ + rho_ - 1) / rho_) {}

  TDS_HD index_t block_rows() const { return m; }
  TDS_HD index_t blocks() const { return tet(m); }
  TDS_HD index_t total() const { return triplet_count(n); }
  // Packed rank of the first triplet with i >= Iρ: those before have i < Iρ.
  TDS_HD index_t elements_before(index_t I) const {
    const index_t i = I * rho < n ? I * rho : n;
    return triplet_count(n) - triplet_count(n - i);
  }
  TDS_HD index_t elements_in_rows(index_t I0, index_t I1) const {
    return elements_before(I1) - elements_before(I0);
  }
  // Layers shrink with I: the first is the largest.
  index_t largest_block_row() const { return m > 0 ? elements_in_rows(0, 1) : 0; }
};

}  // namespace tdsolve::mapping
