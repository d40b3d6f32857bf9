// Block-space maps for the pair domain: the ρ×ρ tiles of the upper triangle.
//
// The packed domain of n points is cut into m = ceil(n/ρ) block rows and
// columns; tile (I, J), I <= J, holds the pairs (i, j), i < j, with
// i in [Iρ, (I+1)ρ) and j in [Jρ, (J+1)ρ). Only the T(m) = m(m+1)/2 tiles on
// or above the diagonal are needed.
//
// λ2 (Navarro & Hitschfeld, seed 000 §3 / seed 002 eq. 4) enumerates the lower
// triangle of blocks with the diagonal in colex rows: ω -> (R, C), C <= R,
//     R = floor(sqrt(1/4 + 2ω) - 1/2) = tri_root(ω),  C = ω - T(R).
// The packed output wants lexicographic rows, so the block labels are
// reversed (I = m-1-R, J = m-1-C): block rows [I0, I1) are then exactly the
// ω range [T(m-I1), T(m-I0)), one contiguous 1-D grid per chunk.
//
// BB is the bounding box the papers compare against: an (m × rows) 2-D grid,
// where the blocks below the diagonal (J < I) leave at block level.
#pragma once

#include "mapping/simplex.hpp"

namespace tdsolve::mapping {

struct Tile {
  index_t row, col;  // block row I and block column J, I <= J
};

// λ2 with the diagonal and the colex→lex reversal: ω < T(m) -> (I, J).
TDS_HD Tile lambda2_tile(index_t m, index_t omega) {
  const index_t r = tri_root(omega);
  return Tile{m - 1 - r, m - 1 - (omega - tri(r))};
}

// The ω range of block rows [row_begin, row_end).
TDS_HD index_t lambda2_first_block(index_t m, index_t block_row) {
  return tri(m - block_row);
}

struct BlockRange {
  index_t begin, end;
  TDS_HD index_t size() const { return end - begin; }
};

TDS_HD BlockRange lambda2_blocks(index_t m, index_t row_begin, index_t row_end) {
  return BlockRange{tri(m - row_end), tri(m - row_begin)};
}

// BB: grid cell (x, y) over block rows [row_begin, ...) -> tile, or no tile.
TDS_HD bool bb_tile(index_t row_begin, index_t x, index_t y, Tile* t) {
  t->row = row_begin + y;
  t->col = x;
  return t->col >= t->row;
}

// Geometry of the tiled pair domain.
struct PairTiling {
  index_t n = 0;    // points
  index_t rho = 1;  // tile side ρ
  index_t m = 0;    // block rows = block columns = ceil(n/ρ)

  PairTiling() = default;
  TDS_HD PairTiling(index_t n_, index_t rho_) : n(n_), rho(rho_), m((n_ + rho_ - 1) / rho_) {}

  TDS_HD index_t blocks() const { return tri(m); }
  TDS_HD index_t row_of_block_row(index_t I) const { return I * rho < n ? I * rho : n; }
  // Packed rank of the first pair of block row I (C(n,2) for I >= m).
  TDS_HD index_t elements_before(index_t I) const { return row_start(n, row_of_block_row(I)); }
  TDS_HD index_t elements_in_rows(index_t I0, index_t I1) const {
    return elements_before(I1) - elements_before(I0);
  }
};

}  // namespace tdsolve::mapping
