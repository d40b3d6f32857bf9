// The lower bound a culled domain tests (solver/cull.hpp), shared by the
// traversal that builds its tile list (two boxes) and the CPU loops that
// skip a tile's rows (a point and a box): the metric's norm of the gaps
// between two coordinate ranges along each axis, minimum-image in a
// periodic box, against the cutoff plus a margin. On the host and the device
// (the CUDA list builder, compiled with --fmad=false): the same bits on both,
// for p = 1, 2 and infinity (pow differs between the two libraries).
#pragma once

#include <cmath>
#include <cstdint>

#include "core/types.hpp"

namespace tdsolve::cull {

// The margin of a run in float32 or float64 (cull::limit's rel_tol).
TDS_HD double rel_tol(bool float32) {
  return float32 ? 1e-4 : 1e-10;
}

// The gap between [alo, ahi] and [blo, bhi] along an axis of period L (0:
// none): the least |y - x|, or its least minimum image, over x, y in them.
// (std::max and std::min's choices, written out for the device.)
TDS_HD double gap(double alo, double ahi, double blo, double bhi, double L) {
  const double dlo = blo - ahi, dhi = bhi - alo;  // the range of y - x
  if (!(L > 0)) {
    double g = 0.0;
    if (g < dlo) g = dlo;
    if (g < -dhi) g = -dhi;
    return g;
  }
  const double w = dhi - dlo;
  if (w >= L) return 0;
  const double t = dlo - L * floor(dlo / L);  // dlo shifted into [0, L)
  if (t + w >= L || t <= 0) return 0;         // the range holds a multiple of L
  const double u = L - (t + w);
  return u < t ? u : t;
}

// Σ g^p (p = 2: squares; p = 1: sums; infinity: the largest), one gap at a
// time, then its p-th root.
TDS_HD double add(double s, double g, double p) {
  if (p == 2) return s + g * g;
  if (p == 1) return s + g;
  if (p == INFINITY) return s < g ? g : s;
  return s + pow(g, p);
}
TDS_HD double finish(double s, double p) {
  if (p == 2) return sqrt(s);
  if (p == 1 || p == INFINITY) return s;
  return pow(s, 1 / p);
}

// A triclinic cell (CullGeometry::tilted): the boxes are in fractional
// coordinates (period 1 along each cell vector), and w[k] is the cell's
// width across axis k: a fractional gap g_k puts the two points at least
// g_k w[k] apart along the face normal n_k, so the distance is at least the
// largest of those, and at least their euclidean norm over the largest
// singular value of the matrix of unit normals (Gershgorin's bound on it:
// 1 / inv_sigma², exact for an orthorhombic box).
struct Tilted {
  double w[3] = {1, 1, 1};
  double inv_sigma = 1;
};
TDS_HD double tilted_bound(const double* g, const Tilted& t) {
  double s = 0, most = 0;
  for (int k = 0; k < 3; ++k) {
    const double u = g[k] * t.w[k];
    s += u * u;
    if (most < u) most = u;
  }
  const double e = sqrt(s) * t.inv_sigma;
  return most < e ? e : most;
}

// The bound between the box [alo, ahi] and the box [blo, bhi] over d axes:
// the norm p of their gaps, the first box_dims axes of period box[k]; with
// `tilted`, a triclinic cell's (fractional boxes, d = 3, p = 2).
TDS_HD double bound(const double* alo, const double* ahi, const double* blo, const double* bhi,
                    std::int64_t d, double p, int box_dims = 0, const double* box = nullptr,
                    const Tilted* tilted = nullptr) {
  if (tilted) {
    double g[3];
    for (int k = 0; k < 3; ++k)
      g[k] = gap(alo[k], ahi[k], blo[k], bhi[k], 1.0);
    return tilted_bound(g, *tilted);
  }
  double s = 0;
  for (std::int64_t k = 0; k < d; ++k)
    s = add(s, gap(alo[k], ahi[k], blo[k], bhi[k], k < box_dims ? box[k] : 0.0), p);
  return finish(s, p);
}

// The same for a point x (d coordinates of the run's precision; with
// `tilted`, its fractional coordinates) and a box.
template <typename T>
TDS_HD double point_bound(const T* x, const double* blo, const double* bhi, std::int64_t d,
                          double p, int box_dims = 0, const double* box = nullptr,
                          const Tilted* tilted = nullptr) {
  if (tilted) {
    double g[3];
    for (int k = 0; k < 3; ++k) {
      const double v = static_cast<double>(x[k]);
      g[k] = gap(v, v, blo[k], bhi[k], 1.0);
    }
    return tilted_bound(g, *tilted);
  }
  double s = 0;
  for (std::int64_t k = 0; k < d; ++k) {
    const double v = static_cast<double>(x[k]);
    s = add(s, gap(v, v, blo[k], bhi[k], k < box_dims ? box[k] : 0.0), p);
  }
  return finish(s, p);
}

// The largest bound that may still hold a pair within `cutoff`: a margin of
// rel_tol of the cutoff, and in a periodic box of `scale` (the largest
// coordinate or length: a minimum image rounds relative to it), far above
// the rounding of a pair's value in the run's precision. Without a box the
// differences round relative to themselves, so the cutoff's share is enough.
TDS_HD double limit(double cutoff, double rel_tol, double scale) {
  return cutoff + rel_tol * (fabs(cutoff) + scale);
}

}  // namespace tdsolve::cull
