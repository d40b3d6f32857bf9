// Block maps as types (CUTLASS's threadblock swizzles): how a launch's block
// indices become tiles of a domain.
//
// A map has a host half, grid(domain, I0, I1): the launch shape for block rows
// [I0, I1) of a chunk (x × y blocks, any size: kernels stride over both), and
// a device half, tile(domain, grid, bx, by, &t): the tile of block (bx, by),
// or false when that block has no work (a bounding box's discarded blocks).
// Kernels and CPU loops are templated on the map; adding a map is one type
// here plus its entry in MapKind and dispatch_map (solver/problem.hpp).
//
//   Lambda2Map      pairs: exactly the chunk's T(m-I0) - T(m-I1) tiles, 1-D (λ2);
//                   of a culled domain, the chunk's tiles of its list
//   BoundingBoxMap  pairs: the (m × rows) box; blocks with J < I leave at once
//   RectMap         rectangles: (block columns × rows), every block a tile
//   Lambda3Map      triplets: exactly the chunk's Te(m-I0) - Te(m-I1) tiles, 1-D (λ3)
//   BoundingBox3Map triplets: the (m² × layers) box of (J, K) per layer I;
//                   blocks without I <= J <= K leave at once (BB-3D)
#pragma once

#include "mapping/lambda2.hpp"
#include "mapping/tetra.hpp"

namespace tdsolve::mapping {

struct Grid {
  index_t x = 0, y = 0;  // blocks in each direction
  index_t base = 0;      // map-specific origin (λ2: first ω; boxes: first block row)
  // λ2 only: block bx takes the chunk's ω from its end (base + x - 1 - bx),
  // so the tiles run in the bounding box's order, block rows from the long
  // end and left to right, instead of from the short end and right to left.
  // The same tiles either way; only the order the GPU meets them in differs.
  bool reversed = false;
  TDS_HD index_t blocks() const { return x * y; }
};

struct Lambda2Map {
  using Domain = PairDomain;
  static constexpr bool kOneDimensional = true;  // grid.y == 1, every block a tile
  // A culled domain's tiles come from its list (base: the chunk's first).
  static Grid grid(const PairDomain& d, index_t row_begin, index_t row_end) {
    if (d.tiles) {
      const index_t first = d.tile_start[row_begin], count = d.tile_start[row_end] - first;
      return Grid{count, count > 0 ? index_t(1) : index_t(0), first};
    }
    const BlockRange w = lambda2_blocks(d.m, row_begin, row_end);
    return Grid{w.size(), w.size() > 0 ? index_t(1) : index_t(0), w.begin};
  }
  TDS_HD static bool tile(const PairDomain& d, const Grid& g, index_t bx, index_t, Tile* t) {
    if (d.tiles) {
      const index_t at = 2 * (g.base + bx);
      *t = Tile{d.tiles[at], d.tiles[at + 1]};
      return true;
    }
    *t = lambda2_tile(d.m, g.reversed ? g.base + (g.x - 1 - bx) : g.base + bx);
    return true;
  }
};

struct BoundingBoxMap {
  using Domain = PairDomain;
  static constexpr bool kOneDimensional = false;
  static Grid grid(const PairDomain& d, index_t row_begin, index_t row_end) {
    return Grid{row_end > row_begin ? d.m : 0, row_end - row_begin, row_begin};
  }
  TDS_HD static bool tile(const PairDomain&, const Grid& g, index_t bx, index_t by, Tile* t) {
    t->row = g.base + by;
    t->col = bx;
    return t->col >= t->row;
  }
};

struct RectMap {
  using Domain = RectDomain;
  static constexpr bool kOneDimensional = false;
  static Grid grid(const RectDomain& d, index_t row_begin, index_t row_end) {
    return Grid{row_end > row_begin ? d.mc : 0, row_end - row_begin, row_begin};
  }
  TDS_HD static bool tile(const RectDomain&, const Grid& g, index_t bx, index_t by, Tile* t) {
    t->row = g.base + by;
    t->col = bx;
    return true;
  }
};

struct Lambda3Map {
  using Domain = TripletDomain;
  static constexpr bool kOneDimensional = true;
  // A culled domain's tiles come from its list (base: the chunk's first).
  static Grid grid(const TripletDomain& d, index_t layer_begin, index_t layer_end) {
    if (d.tiles) {
      const index_t first = d.tile_start[layer_begin], count = d.tile_start[layer_end] - first;
      return Grid{count, count > 0 ? index_t(1) : index_t(0), first};
    }
    const BlockRange w = lambda3_blocks(d.m, layer_begin, layer_end);
    return Grid{w.size(), w.size() > 0 ? index_t(1) : index_t(0), w.begin};
  }
  TDS_HD static bool tile(const TripletDomain& d, const Grid& g, index_t bx, index_t, Tile3* t) {
    if (d.tiles) {
      const index_t at = 3 * (g.base + bx);
      t->layer = d.tiles[at];
      t->row = d.tiles[at + 1];
      t->col = d.tiles[at + 2];
      return true;
    }
    *t = lambda3_tile(d.m, g.base + bx);
    return true;
  }
};

struct BoundingBox3Map {
  using Domain = TripletDomain;
  static constexpr bool kOneDimensional = false;
  static Grid grid(const TripletDomain& d, index_t layer_begin, index_t layer_end) {
    return Grid{layer_end > layer_begin ? d.m * d.m : 0, layer_end - layer_begin, layer_begin};
  }
  TDS_HD static bool tile(const TripletDomain& d, const Grid& g, index_t bx, index_t by, Tile3* t) {
    t->layer = g.base + by;
    t->row = bx / d.m;
    t->col = bx % d.m;
    return t->layer <= t->row && t->row <= t->col;
  }
};

}  // namespace tdsolve::mapping
