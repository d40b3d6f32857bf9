// The culled rectangle of two point sets (hist --with, issue 29), as a cut
// of their union's triangle: the points of the first set (rows [0, split))
// then the second's, each set in its own Morton order (the second's
// backwards, so that the block holding both sets' ends is compact where
// they share a region), and only the tiles
// (I <= J) whose block I holds a point of the first set and J one of the
// second. Every pair (a, b) of the rectangle is a pair i < j of the union
// with i in the first set, in exactly one such tile; the few pairs of one
// set that share a tile with them (the block that holds both sets' ends,
// and the tiles against it) are left out by the run's per-pair test
// (problem.cpp gives the two sets two types, and the histogram only their
// pair). Kept out of cull.hpp, which the CUDA kernels include through
// problem.hpp: this is host code.
#pragma once

#include "solver/cull.hpp"

namespace tdsolve {

// As build_culled, for the n points of both sets (first set's split rows,
// then the second's; input order, row-major): the order keeps each set's
// points within its own rows.
template <typename T>
bool build_culled_with(const T* pts, index_t n, index_t d, index_t rho, index_t split,
                       const CullGeometry& g, index_t max_tiles, Culled* c);

}  // namespace tdsolve
