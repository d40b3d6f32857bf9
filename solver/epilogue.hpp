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

// Histogram slot of x in [underflow, bins..., overflow] = 0, 1..B, B+1,
// computed as numpy.histogram's uniform-bin path does (numpy 1.24,
// lib/histograms.py): keep lo <= x <= hi; i = int((x - lo) * norm) with
// norm = B / (hi - lo); i == B -> B - 1; then one step down if x < edges[i],
// one up if x >= edges[i+1] and i != B - 1. edges are numpy's linspace.
TDS_HD index_t histogram_slot(double x, double lo, double hi, double norm, index_t bins,
                              const double* edges) {
  if (x < lo) return 0;
  if (!(x <= hi)) return bins + 1;  // NaN too, though distances are finite
  index_t i = static_cast<index_t>((x - lo) * norm);
  if (i >= bins) i = bins - 1;
  if (x < edges[i]) {
    --i;
  } else if (i != bins - 1 && x >= edges[i + 1]) {
    ++i;
  }
  return i + 1;
}

}  // namespace tdsolve::epilogue
