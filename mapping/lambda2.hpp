// λ2, the block-space map of the pair domain: the ρ×ρ tiles on or above the
// diagonal of the block matrix.
//
// λ2 (Navarro & Hitschfeld, seed 000 §3 / seed 002 eq. 4) enumerates the lower
// triangle of blocks with the diagonal in colex rows: ω -> (R, C), C <= R,
//     R = floor(sqrt(1/4 + 2ω) - 1/2) = tri_root(ω),  C = ω - T(R).
// The packed output wants lexicographic rows, so the block labels are
// reversed (I = m-1-R, J = m-1-C): block rows [I0, I1) are then exactly the
// ω range [T(m-I1), T(m-I0)), one contiguous 1-D grid per chunk.
#pragma once

#include "mapping/domain.hpp"

namespace tdsolve::mapping {

// λ2 with the diagonal and the colex→lex reversal: ω < T(m) -> (I, J).
TDS_HD Tile lambda2_tile(index_t m, index_t omega) {
  const index_t r = tri_root(omega);
  return Tile{m - 1 - r, m - 1 - (omega - tri(r))};
}

// The ω range of block rows [row_begin, row_end).
TDS_HD BlockRange lambda2_blocks(index_t m, index_t row_begin, index_t row_end) {
  return BlockRange{tri(m - row_end), tri(m - row_begin)};
}

}  // namespace tdsolve::mapping
