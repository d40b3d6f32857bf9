// A cell list for a cutoff: the points binned into cells at least the
// cutoff wide, so that every point within the cutoff of a point (its
// minimum image in a periodic box) is in that point's cell or one next to
// it. adf finds each centre's neighbours with it, on the CPU and (the same
// arrays copied) on the GPU. A cell only narrows the candidates: the
// commands' own tests decide, so the cells' rounding never changes a result.
//
// In a periodic box the cells divide the fractional coordinates s = H⁻¹ x
// (H LAMMPS's cell matrix; s wrapped into [0, 1)) into nc_k slices along
// each axis, nc_k = floor(width_k / cutoff) (width_k the cell's width
// across its two faces of that axis): a point within the cutoff is less
// than one slice away in s_k. Without a box they divide the points'
// bounding box the same way. With nc_k >= 3 a cell's neighbours along k
// are the slices k - 1, k, k + 1 (wrapping in a box), with 2 in a box the
// two slices, with 1 the one: no cell is visited twice.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/types.hpp"

namespace tdsolve {

// What a loop over a point's neighbouring cells reads (host or device memory).
struct CellView {
  int nc[3] = {1, 1, 1};
  bool periodic = false;
  const index_t* start = nullptr;      // cells + 1: cell c holds order[start[c] .. start[c+1])
  const index_t* order = nullptr;      // the points by cell
  const std::int32_t* cell = nullptr;  // each point's cell, (cz nc[1] + cy) nc[0] + cx

  // Calls f(c) for every cell next to point i's (its own too), each once.
  template <typename F>
  TDS_HD void for_each_cell(index_t i, F&& f) const {
    const std::int32_t c = cell[i];
    const int cx = c % nc[0], cy = (c / nc[0]) % nc[1], cz = c / (nc[0] * nc[1]);
    const int at[3] = {cx, cy, cz};
    int lo[3], hi[3];
    for (int k = 0; k < 3; ++k) {
      if (periodic) {
        lo[k] = nc[k] >= 3 ? -1 : 0;
        hi[k] = nc[k] >= 2 ? 1 : 0;
      } else {
        lo[k] = at[k] > 0 ? -1 : 0;
        hi[k] = at[k] + 1 < nc[k] ? 1 : 0;
      }
    }
    for (int dz = lo[2]; dz <= hi[2]; ++dz)
      for (int dy = lo[1]; dy <= hi[1]; ++dy)
        for (int dx = lo[0]; dx <= hi[0]; ++dx) {
          int x = at[0] + dx, y = at[1] + dy, z = at[2] + dz;
          if (periodic) {
            x = (x + nc[0]) % nc[0];
            y = (y + nc[1]) % nc[1];
            z = (z + nc[2]) % nc[2];
          }
          f((index_t(z) * nc[1] + y) * nc[0] + x);
        }
  }
  // Calls f(q) for every point q in the cells next to point i's (i too).
  template <typename F>
  TDS_HD void for_each_candidate(index_t i, F&& f) const {
    for_each_cell(i, [&](index_t cc) {
      for (index_t s = start[cc]; s < start[cc + 1]; ++s)
        f(order[s]);
    });
  }
};

// The cells and their arrays (host memory).
struct CellList {
  int nc[3] = {1, 1, 1};
  bool periodic = false;
  std::vector<index_t> start, order;
  std::vector<std::int32_t> cell;
  CellView view() const {
    CellView v;
    std::copy(nc, nc + 3, v.nc);
    v.periodic = periodic;
    v.start = start.data();
    v.order = order.data();
    v.cell = cell.data();
    return v;
  }
};

// The cell list of n points x (n × 3) for `cutoff`. box: lengths lx, ly,
// lz and tilts xy, xz, yz (LAMMPS's), widths the cell's widths across its
// faces (0: no box, the points' bounding box instead).
template <typename T>
CellList build_cell_list(const T* x, index_t n, const double* lengths, const double* tilt,
                         const double* widths, double cutoff) {
  CellList c;
  c.periodic = widths[0] > 0;
  // Slices a little wider than the cutoff: the rounding of s · nc cannot
  // put a point within the cutoff two slices away.
  const double reach = cutoff * (1 + 1e-6);
  double lo[3] = {0, 0, 0}, extent[3] = {1, 1, 1};
  if (!c.periodic && n > 0) {
    for (int k = 0; k < 3; ++k) {
      double a = x[k], b = x[k];
      for (index_t i = 1; i < n; ++i) {
        a = std::min(a, double(x[3 * i + k]));
        b = std::max(b, double(x[3 * i + k]));
      }
      lo[k] = a;
      extent[k] = b - a;
    }
  }
  for (int k = 0; k < 3; ++k) {
    const double w = c.periodic ? widths[k] : extent[k];
    const double slices = reach > 0 ? std::floor(w / reach) : 1.0;
    c.nc[k] = static_cast<int>(std::max(1.0, std::min(slices, 1024.0)));
  }
  // At most about 2 cells a point (tiny cutoffs): fewer, wider slices.
  while (double(c.nc[0]) * c.nc[1] * c.nc[2] > 2.0 * double(n) + 27) {
    int* widest = std::max_element(c.nc, c.nc + 3);
    *widest = std::max(1, *widest / 2);
  }
  const index_t cells = index_t(c.nc[0]) * c.nc[1] * c.nc[2];
  c.cell.resize(n);
  std::vector<index_t> count(cells + 1, 0);
  for (index_t i = 0; i < n; ++i) {
    double s[3];
    const double px = x[3 * i], py = x[3 * i + 1], pz = x[3 * i + 2];
    if (c.periodic) {
      s[2] = pz / lengths[2];
      s[1] = (py - tilt[2] * s[2]) / lengths[1];
      s[0] = (px - tilt[0] * s[1] - tilt[1] * s[2]) / lengths[0];
      for (double& v : s)
        v -= std::floor(v);
    } else {
      const double p[3] = {px, py, pz};
      for (int k = 0; k < 3; ++k)
        s[k] = extent[k] > 0 ? (p[k] - lo[k]) / extent[k] : 0.0;
    }
    int at[3];
    for (int k = 0; k < 3; ++k)
      at[k] = std::min(c.nc[k] - 1, std::max(0, static_cast<int>(s[k] * c.nc[k])));
    c.cell[i] = static_cast<std::int32_t>((index_t(at[2]) * c.nc[1] + at[1]) * c.nc[0] + at[0]);
    ++count[c.cell[i] + 1];
  }
  for (index_t q = 0; q < cells; ++q)
    count[q + 1] += count[q];
  c.start = count;
  c.order.resize(n);
  for (index_t i = 0; i < n; ++i)
    c.order[count[c.cell[i]]++] = i;
  return c;
}

}  // namespace tdsolve
