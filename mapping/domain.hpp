// Index domains and their tiling into ρ×ρ blocks of work.
//
// A domain is an index space whose elements are stored in one packed order,
// cut into block rows of ρ rows each; a contiguous range of block rows is a
// contiguous range of the packed output. Everything the chunk planner and the
// drivers need from a domain is
//     block_rows()          block rows (the planner's unit; never split)
//     elements_before(I)    packed offset of the first element of block row I
//     total()               elements in the domain
// and what the kernels need is the geometry of one tile.
//
//   PairDomain  pairs i < j of n points (SciPy's condensed order, DESIGN §2);
//               tile (I, J), I <= J, holds pairs with i in block I, j in block J.
//               A culled one (solver/cull.hpp) also lists the tiles that may
//               hold an answer, by block row: Lambda2Map then launches those
//               alone; the packed offsets are still the dense domain's.
//   RectDomain  all (i, j) of an M × K rectangle (rows of A against rows of B),
//               row-major; every tile (I, J) is in the domain.
#pragma once

#include <cstdint>

#include "mapping/simplex.hpp"

namespace tdsolve::mapping {

struct Tile {
  index_t row, col;  // block row I and block column J
};

struct BlockRange {
  index_t begin, end;
  TDS_HD index_t size() const { return end - begin; }
};

struct PairDomain {
  index_t n = 0;    // points
  index_t rho = 1;  // tile side ρ
  index_t m = 0;    // block rows = block columns = ceil(n/ρ)
  // Culled (null: every tile): the surviving tiles, (I, J) at tiles[2t],
  // tiles[2t + 1], by block row; block row I's are [tile_start[I],
  // tile_start[I + 1]). tiles is where the kernels run (device memory on a
  // GPU); tile_start is read on the host only (Lambda2Map::grid).
  const std::uint32_t* tiles = nullptr;
  const index_t* tile_start = nullptr;

  PairDomain() = default;
  TDS_HD PairDomain(index_t n_, index_t rho_) : n(n_), rho(rho_), m((n_ + rho_ - 1) / rho_) {}

  TDS_HD index_t block_rows() const { return m; }
  TDS_HD index_t blocks() const { return tri(m); }
  TDS_HD index_t total() const { return pair_count(n); }
  TDS_HD index_t row_of_block_row(index_t I) const { return I * rho < n ? I * rho : n; }
  // Packed rank of the first pair of block row I (C(n,2) for I >= m).
  TDS_HD index_t elements_before(index_t I) const { return row_start(n, row_of_block_row(I)); }
  TDS_HD index_t elements_in_rows(index_t I0, index_t I1) const {
    return elements_before(I1) - elements_before(I0);
  }
  // Rows shrink with I: the first is the largest.
  index_t largest_block_row() const { return m > 0 ? elements_in_rows(0, 1) : 0; }
};

struct RectDomain {
  index_t rows = 0, cols = 0;  // M points of A, K points of B
  index_t rho = 1;
  index_t m = 0, mc = 0;  // block rows ceil(M/ρ), block columns ceil(K/ρ)

  RectDomain() = default;
  TDS_HD RectDomain(index_t rows_, index_t cols_, index_t rho_)
      : rows(rows_),
        cols(cols_),
        rho(rho_),
        m((rows_ + rho_ - 1) / rho_),
        mc((cols_ + rho_ - 1) / rho_) {}

  TDS_HD index_t block_rows() const { return m; }
  TDS_HD index_t blocks() const { return m * mc; }
  TDS_HD index_t total() const { return rows * cols; }
  TDS_HD index_t elements_before(index_t I) const {
    return (I * rho < rows ? I * rho : rows) * cols;
  }
  TDS_HD index_t elements_in_rows(index_t I0, index_t I1) const {
    return elements_before(I1) - elements_before(I0);
  }
  index_t largest_block_row() const { return m > 0 ? elements_in_rows(0, 1) : 0; }
};

// The centres of adf: n points, each an element (its neighbours' angles),
// block rows of rho of them.
struct CentreDomain {
  index_t n = 0, rho = 1;
  TDS_HD index_t block_rows() const { return (n + rho - 1) / rho; }
  TDS_HD index_t total() const { return n; }
  TDS_HD index_t elements_before(index_t I) const { return I * rho < n ? I * rho : n; }
  TDS_HD index_t elements_in_rows(index_t I0, index_t I1) const {
    return elements_before(I1) - elements_before(I0);
  }
  index_t largest_block_row() const { return n > 0 ? elements_in_rows(0, 1) : 0; }
};

}  // namespace tdsolve::mapping
