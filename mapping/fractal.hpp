// NBB fractals (seed 003; Navarro et al. 2020): the compact index space of a
// fractal and its two maps, exact in 64-bit integers.
//
// A fractal is an s×s pattern of k filled sub-squares, the replicas, each
// with an ID 0..k-1 (the order the table lists them). At level r the
// embedding is n×n cells, n = s^r, x to the right and y downwards; cell
// (x, y) belongs to the fractal when, at every level μ = 0..r-1, its base-s
// digit pair (x_μ, y_μ) is a filled sub-square. The fractal has k^r cells.
//
// The compact index of a cell is c = Σ_μ id_μ · k^μ, where id_μ is the
// replica its level-μ digit pair falls in (μ = 0 the finest). Then
//   λ(c)     = (Σ_μ s^μ · cx[id_μ], Σ_μ s^μ · cy[id_μ])   compact -> embedded
//   ν(x, y)  = Σ_μ k^μ · id(x_μ, y_μ), or -1 off the fractal
// and ν(λ(c)) = c. The paper's 2-D compact layout (digits unfolded right
// and down in turn) is this index read as two interleaved halves; tdsolve
// keeps it linear. Both maps take `levels` (the digits to use), so the same
// code maps a coarse grid (cells of side s^b: the top r-b digits) and the
// miniature fractal inside one coarse cell (the low b digits).
#pragma once

#include <cstdint>

#include "core/types.hpp"

namespace tdsolve::mapping {

constexpr int kMaxFractalSide = 16;                              // s
constexpr int kMaxReplicas = kMaxFractalSide * kMaxFractalSide;  // k <= s^2
constexpr int kMaxFractalLevels = 62;                            // with s = 2: n = 2^31

// Everything the maps read; trivially copyable, so it goes to the device by
// value or into constant memory. Build it with make_fractal (solver/fractal).
struct Fractal {
  int k = 0, s = 0, levels = 0;                               // levels = r
  std::uint64_t n = 0;                                        // s^r, the embedding's side
  std::uint64_t cells = 0;                                    // k^r, the fractal's cells
  std::uint8_t cx[kMaxReplicas] = {}, cy[kMaxReplicas] = {};  // replica -> sub-square
  std::int16_t id[kMaxReplicas] = {};  // sub-square x + s*y -> replica, or -1
  std::uint64_t pk[kMaxFractalLevels + 1] = {}, ps[kMaxFractalLevels + 1] = {};  // k^μ, s^μ
};

// λ over the lowest `levels` digits of c: the embedded coordinate, in cells
// (or in coarse cells when c is a coarse index). Digits are peeled with
// 64-bit divisions only while c needs them (32-bit ones are several times
// cheaper on a GPU); the result is the same.
TDS_HD void fractal_lambda(const Fractal& f, std::uint64_t c, int levels, std::uint64_t* x,
                           std::uint64_t* y) {
  std::uint64_t ex = 0, ey = 0;
  int mu = 0;
  for (; mu < levels && c > 0xffffffffu; ++mu) {
    const std::uint64_t q = c / std::uint64_t(f.k);
    const int d = int(c - q * std::uint64_t(f.k));
    c = q;
    ex += f.ps[mu] * f.cx[d];
    ey += f.ps[mu] * f.cy[d];
  }
  std::uint32_t c32 = std::uint32_t(c);
  const std::uint32_t k = std::uint32_t(f.k);
  for (; mu < levels; ++mu) {
    const std::uint32_t q = c32 / k;
    const int d = int(c32 - q * k);
    c32 = q;
    ex += f.ps[mu] * f.cx[d];
    ey += f.ps[mu] * f.cy[d];
  }
  *x = ex;
  *y = ey;
}

// ν over `levels` digits: the compact index of (x, y), or -1 when the cell
// is not part of the fractal or lies outside the s^levels square. Takes
// signed coordinates so that a neighbour one step past an edge maps to -1.
// Coordinates inside the square are below 2^31: 32-bit digits.
TDS_HD std::int64_t fractal_nu(const Fractal& f, std::int64_t x, std::int64_t y, int levels) {
  const std::int64_t side = std::int64_t(f.ps[levels]);
  if (x < 0 || y < 0 || x >= side || y >= side) return -1;
  std::uint32_t ux = std::uint32_t(x), uy = std::uint32_t(y);
  const std::uint32_t s = std::uint32_t(f.s);
  std::uint64_t c = 0;
  for (int mu = 0; mu < levels; ++mu) {
    const std::uint32_t qx = ux / s, qy = uy / s;
    const int r = f.id[(ux - qx * s) + s * (uy - qy * s)];
    if (r < 0) return -1;
    c += f.pk[mu] * std::uint64_t(r);
    ux = qx;
    uy = qy;
  }
  return std::int64_t(c);
}

}  // namespace tdsolve::mapping
