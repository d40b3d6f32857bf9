// adf's centres on the CPU: each centre's neighbours from the cell list,
// then every pair of them, binned (solver/adf_bins.hpp). The CUDA backend
// hands the centres its kernel cannot hold (too many neighbours) to
// adf_centres too: the same operations, the same bins.
#pragma once

#include <cstdint>

#include "solver/cell_list.hpp"
#include "solver/problem.hpp"

namespace tdsolve::cpu {

// Adds the angles of centres [begin, end) of p (p.adf, p.a, p.cell3()) to
// counts (the ADFs' rows of [-1, 0 .. bins - 1, bins] slots, HistSpec's);
// `centres`: null for the range itself, else the centres to take (end -
// begin of them, from centres[begin]).
template <typename T>
void adf_centres(const Problem<T>& p, const CellView& cells, index_t begin, index_t end,
                 const index_t* centres, std::uint64_t* counts, int threads);

}  // namespace tdsolve::cpu
