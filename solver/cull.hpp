// Culled pair domains (issue 29): when a command has a cutoff, the block
// pairs that cannot hold an answer are never visited.
//
// The points are ordered along a Morton curve (over their bounds), so a
// block of ρ consecutive points is spatially compact; each block gets its
// bounding box (and, for overlaps, its largest radius). For each block row
// I, a descent of an implicit binary tree over the blocks (node = a
// contiguous range of blocks, its box the union of theirs) keeps the blocks
// J >= I whose boxes may be within the cutoff of I's: the surviving tiles,
// listed by block row, are the domain (mapping::PairDomain::tiles); a CUDA
// run's device makes the same list (cuda/cull_build.cu). Its elements are
// the pairs those tiles test, so the chunk planner cuts it by work, and
// ranks share it as they share a dense one.
//
// Exact: the block test is conservative (a lower bound on any pair's
// distance, less a margin far above the rounding of the per-pair value in
// T), and each surviving pair gets the command's own test, computed from the
// same two points as in a dense run. The metrics culled compute the same
// bits for (x, y) and (y, x), so the order a culled run meets a pair in does
// not change its value: every result is the dense run's.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "mapping/domain.hpp"
#include "solver/cull_bound.hpp"
#include "solver/morton.hpp"

namespace tdsolve {

enum class CullMode { automatic, on, off };

// The block test of one run: a lower bound of the metric's value for two
// boxes, against the cutoff.
struct CullGeometry {
  // The bound's norm: Σ|g_k|^p to the 1/p (1: cityblock, 2: euclidean and
  // sqeuclidean, infinity: chebyshev, any p > 0: minkowski), of the gaps
  // g_k between the boxes along each axis.
  double p = 2;
  // Pairs of boxes farther apart than this (in the norm's units) are dropped:
  // every pair in them has a value above the cutoff. Unused with radii.
  double cutoff = 0;
  // Overlaps (collide): box pairs farther apart than the sum of their
  // largest radii are dropped (radii: one per point, in input order).
  const double* radii = nullptr;
  // A periodic box (lengths per axis; 0: none): gaps are minimum-image.
  int box_dims = 0;
  double box[8] = {};
  // A triclinic cell (d = 3): its lengths lx, ly, lz and tilts xy, xz, yz as
  // LAMMPS's. The builders order and bound the points by their fractional
  // coordinates (period 1), whose boxes `tilted` bounds.
  bool triclinic = false;
  double cell[6] = {};
  cull::Tilted tilted;
  // Relative margin on the cutoff, far above the per-pair rounding in T.
  double rel_tol = 1e-4;
  // Triplets (build_culled_triplets): how many of a triplet's three pairs
  // must be within the cutoff for it to count: 3 (ATM with a cutoff: all),
  // 2 (Stillinger-Weber: a vertex with both its sides within it); 0: pairs.
  int triplet_rule = 0;
  // Why the command cannot be culled this time (null: it can): --cull on
  // refuses with it, auto runs dense and says it.
  const char* why_not = nullptr;
};

// The surviving tiles of a culled pair domain.
struct Culled {
  index_t n = 0, rho = 1, m = 0;
  std::vector<index_t> order;        // position in the run -> input index
  std::vector<std::uint32_t> tiles;  // (I, J) at 2t, 2t + 1; by block row, J rising
  std::vector<index_t> tile_start;   // m + 1: block row I's tiles [tile_start[I], [I + 1])
  std::vector<index_t> before;       // m + 1: pairs tested before block row I
  // What the list was built from, for the CPU loops' row test: the
  // geometry (radii: null; the run's own, in its order, are the problem's
  // select_radii), the margin's scale (cull::limit), each block's bounding
  // box (m × d) and, for overlaps, its largest radius.
  CullGeometry geometry;
  double scale = 0;
  std::vector<double> lo, hi, rmax;
  // A triclinic cell: the points' fractional coordinates (n × 3, the run's
  // order), which lo and hi bound.
  std::vector<double> frac;
  const cull::Tilted* tilted() const { return geometry.triclinic ? &geometry.tilted : nullptr; }
  // knn --k (build_culled_knn): the tiles are (I, J) for every J (not only
  // J >= I), a block row's in order of their boxes' distance, and each
  // counts ri × rj comparisons; squared: the metric's value is the square
  // of the norm (sqeuclidean).
  bool all_columns = false, squared = false;
  // Indices a tile: 2 (I, J), or 3 (I, J, K) for triplets.
  int width = 2;
  // Where the list was built: "host", or "gpu" (cuda/cull_build.cu).
  const char* built_on = "host";
  index_t tile_count() const { return tiles.size() / width; }
  index_t tested() const { return before.empty() ? 0 : before.back(); }
  // The first block row with `elements` tested before it: a chunk's first
  // row from its offset (a chunk starts and ends at block rows).
  index_t block_row_at(index_t elements) const {
    return std::lower_bound(before.begin(), before.end(), elements) - before.begin();
  }
};

// Sets g's triclinic cell (lx, ly, lz, xy, xz, yz): box = 1 along each
// fractional axis, the widths and normals' bound of cull::Tilted.
void set_triclinic(CullGeometry* g, const double* cell);

// The unit normals of a triclinic cell's faces (rows of n, across a, b, c:
// the rows of the inverse of the cell matrix, scaled) and the cell's widths
// there (the distances between opposite faces; an orthorhombic box's are
// its lengths).
void cell_normals(const double* cell, double (*n)[3], double* widths);

// The Morton order of n points of d coordinates (row-major), over their
// bounds: order[q] is the input index of the q-th point. Ties keep the
// input order.
std::vector<index_t> morton_order(const double* pts, index_t n, index_t d);

// The implicit binary tree over a culled domain's blocks that its builders
// descend: node = a range of blocks [first, last), split at its middle, its
// box the union of theirs and its rmax their largest radius; nodes in
// pre-order (the root first, a node's left subtree before its right), -1
// for a leaf's children; leaf[I]: block I's node.
struct CullTree {
  index_t dims = 0;
  std::vector<index_t> first, last;
  std::vector<std::int64_t> left, right, leaf;
  std::vector<double> rmax, lo, hi;  // lo, hi: dims a node
  std::int64_t root = -1;
};
// The tree over c's block boxes (c.lo, c.hi, c.rmax).
CullTree cull_tree(const Culled& c);

// Block row counts to prefix sums: tile_start[I + 1] and before[I + 1] hold
// row I's tiles and elements on entry, the sums of rows <= I on return.
void sum_rows(Culled* c);

// Builds the culled domain of n points (input order, row-major, as the run
// computes them) in blocks of rho. False (c left partial) when more than
// max_tiles tiles survive.
template <typename T>
bool build_culled(const T* pts, index_t n, index_t d, index_t rho, const CullGeometry& g,
                  index_t max_tiles, Culled* c);

// The culled domain of knn --k: for each block I, R_I bounds from above the
// distance of every point of I to its k-th nearest other point (the
// farthest-corner distance of the nearest boxes that hold k others), and
// the tiles (I, J) are the blocks J whose boxes may hold a point within R_I
// (plus the margin) of I's box: every point that can enter a row's list of
// k is in them. g: the norm and margin (no cutoff, no box, no radii).
template <typename T>
bool build_culled_knn(const T* pts, index_t n, index_t d, index_t rho, index_t k,
                      const CullGeometry& g, index_t max_tiles, Culled* c);

// The culled domain of a triplet command: the tiles (I <= J <= K) whose
// three block pairs may satisfy g.triplet_rule (each pair's boxes within
// g.cutoff plus the margin), by layer I; their elements are the triplets
// i < j < k they test. d = 3.
template <typename T>
bool build_culled_triplets(const T* pts, index_t n, index_t d, index_t rho, const CullGeometry& g,
                           index_t max_tiles, Culled* c);

// The culled domain as the chunk planner sees it (mapping::ChunkPlan's
// Domain): block rows of the run's order, elements the pairs tested.
struct CulledDomain {
  const Culled* c = nullptr;
  index_t block_rows() const { return c->m; }
  index_t total() const { return c->tested(); }
  index_t elements_before(index_t I) const { return c->before[I < c->m ? I : c->m]; }
  index_t elements_in_rows(index_t I0, index_t I1) const {
    return elements_before(I1) - elements_before(I0);
  }
  index_t largest_block_row() const {
    index_t most = 0;
    for (index_t I = 0; I < c->m; ++I)
      most = std::max(most, c->before[I + 1] - c->before[I]);
    return most;
  }
};

// Triplets i < j < k of a tile (I <= J <= K) of n points in blocks of rho.
inline index_t tile_triplets(index_t n, index_t rho, index_t I, index_t J, index_t K) {
  const index_t ri = std::min(rho, n - I * rho), rj = std::min(rho, n - J * rho),
                rk = std::min(rho, n - K * rho);
  if (I == J && J == K) return ri * (ri - 1) * (ri - 2) / 6;
  if (I == J) return ri * (ri - 1) / 2 * rk;
  if (J == K) return ri * (rj * (rj - 1) / 2);
  return ri * rj * rk;
}

// Pairs of a tile (I, J) of n points in blocks of rho (all_columns: the
// comparisons of knn's rows, ri × rj).
inline index_t tile_pairs(index_t n, index_t rho, index_t I, index_t J, bool all_columns = false) {
  const index_t ri = std::min(rho, n - I * rho), rj = std::min(rho, n - J * rho);
  return I == J && !all_columns ? ri * (ri - 1) / 2 : ri * rj;
}

}  // namespace tdsolve
