// Per-value pieces shared by the CPU loops and the CUDA kernels: the minimum
// image of a periodic box and numpy.histogram's binning, each written once.
#pragma once

#include <cmath>

#include "core/types.hpp"

namespace tdsolve::epilogue {

// a - b folded into [-L/2, L/2] as MDAnalysis and numpy do:
// delta -= L * rint(delta / L) (round half to even), in the run's precision.
TDS_HD float minimum_image(float delta, float L) {
  return delta - L * rintf(delta / L);
}
TDS_HD double minimum_image(double delta, double L) {
  return delta - L * rint(delta / L);
}
TDS_HD float image_count(float x) {
  return rintf(x);
}
TDS_HD double image_count(double x) {
  return rint(x);
}

// The minimum image of a difference v = (x, y, z) in a triclinic cell
// (LAMMPS's: a = (L[0], 0, 0), b = (t[0], L[1], 0), c = (t[1], t[2], L[2]);
// t = xy, xz, yz), reduced along c, then b, then a as LAMMPS's
// Domain::minimum_image: each coordinate's image is minimum_image's, the
// tilts carried along. Exact (the nearest image) for every pair closer than
// half the cell's shortest width, the largest cutoff the commands take.
template <typename T>
TDS_HD void triclinic_image(T& x, T& y, T& z, const T* L, const T* t) {
  const T nz = image_count(z / L[2]);
  z = z - L[2] * nz;
  y = y - t[2] * nz;
  x = x - t[1] * nz;
  const T ny = image_count(y / L[1]);
  y = y - L[1] * ny;
  x = x - t[0] * ny;
  x = x - L[0] * image_count(x / L[0]);
}

// The periodic box of the triplet tiles (3-D): none, orthorhombic
// (minimum_image per coordinate) or triclinic (triclinic_image).
template <typename T>
struct Cell3 {
  int kind = 0;  // 0: none, 1: orthorhombic, 2: triclinic
  T L[3] = {T(0), T(0), T(0)}, tilt[3] = {T(0), T(0), T(0)};
  TDS_HD void image(T& x, T& y, T& z) const {
    if (kind == 1) {
      x = minimum_image(x, L[0]);
      y = minimum_image(y, L[1]);
      z = minimum_image(z, L[2]);
    } else if (kind == 2) {
      triclinic_image(x, y, z, L, tilt);
    }
  }
};

// Histogram slot of x in [underflow, bins..., overflow] = 0, 1..B, B+1,
// computed as numpy.histogram's uniform-bin path does (numpy 1.24,
// lib/histograms.py): keep lo <= x <= hi; i = int((x - lo) * norm) with
// norm = B / (hi - lo); i == B -> B - 1; then one step down if x < edges[i],
// one up if x >= edges[i+1] and i != B - 1. edges are numpy's linspace.
//
// The two edge checks can only move i when f = (x - lo) * norm lies within
// `margin` of an integer, margin bounding the rounding of f and of the edges
// in units of bins (histogram_margin, problem.cpp); elsewhere they are
// skipped, which saves two loads per value and changes no count.
TDS_HD index_t histogram_slot(double x, double lo, double hi, double norm, index_t bins,
                              const double* edges, double margin) {
  if (x < lo) return 0;
  if (!(x <= hi)) return bins + 1;  // NaN too, though distances are finite
  const double f = (x - lo) * norm;
  // f >= 0, so truncation is numpy's astype(intp); bins < 2^32 (the CLI
  // allows 10^6), so a 32-bit conversion is exact and cheaper on a GPU.
  const double t = trunc(f);
  index_t i = static_cast<unsigned int>(t);
  if (i >= bins) {
    i = bins - 1;
  } else {
    const double frac = f - t;
    if (frac > margin && frac < 1.0 - margin) return i + 1;
  }
  if (x < edges[i]) {
    --i;
  } else if (i != bins - 1 && x >= edges[i + 1]) {
    ++i;
  }
  return i + 1;
}

// Float32 runs: the same slot found with float32 arithmetic when the value
// lies safely inside a bin, else with histogram_slot. `fast` is prepared on
// the host (make_hist_spec): lo32 and hi32 are the float range [lo, hi] holds
// exactly (x < lo ⟺ x < lo32 and x <= hi ⟺ x <= hi32 for a float x), lo_f and
// norm_f the rounded lo and norm, margin32 the bound on f's float32 rounding
// in units of bins, doubled (1: never fast). f stays below 2^22 (bins <=
// 10^6), so adding 1.5·2^23 rounding down puts floor(f) in the low mantissa
// bits: no float-to-integer conversion, which a GPU issues at 1/8 the rate.
struct HistFast32 {
  float lo32 = 0, hi32 = 0, lo_f = 0, norm_f = 0, margin32 = 1;
};

TDS_HD index_t histogram_slot(float x, const HistFast32& q, double lo, double hi, double norm,
                              index_t bins, const double* edges, double margin) {
  if (x < q.lo32) return 0;
  if (!(x <= q.hi32)) return bins + 1;
  const float f = (x - q.lo_f) * q.norm_f;
#if defined(__CUDA_ARCH__)
  const float g = __fadd_rd(f, 12582912.0f);  // 1.5 · 2^23 + floor(f)
  const unsigned int i = static_cast<unsigned int>(__float_as_int(g) - 0x4B400000);
  const float t = g - 12582912.0f;
#else
  const float t = std::floor(f);
  const unsigned int i = static_cast<unsigned int>(t);
#endif
  const float frac = f - t;
  if (i < bins && frac > q.margin32 && frac < 1.0f - q.margin32) return index_t(i) + 1;
  return histogram_slot(static_cast<double>(x), lo, hi, norm, bins, edges, margin);
}

}  // namespace tdsolve::epilogue
