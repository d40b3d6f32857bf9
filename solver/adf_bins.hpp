// What `tdsolve adf` does with one angle and one centre, shared by the CPU
// tiles and the CUDA kernel: LAMMPS `compute adf`'s binning (src/
// compute_adf.cpp, compute_array) and its neighbour test, as masks over
// the ADFs (at most kMaxAdfs) so that one angle serves every ADF it
// belongs to.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/types.hpp"

namespace tdsolve {

constexpr int kMaxAdfs = 16;

// LAMMPS's bin of an angle from its cosine cs = (d1 · d2) (1/r1)(1/r2):
// ordinate cosine, x = (cs + 1) / (2 / bins); degree or radian,
// x = acos(min(max(cs, -1), 1)) bins / π; bin = (int) x, and LAMMPS skips
// a bin >= bins or < 0 (θ = π, cos θ = 1 exactly; (int) truncates towards
// zero, so x in (-1, 0) is bin 0). Those come back as bins (or -1: a NaN
// from a neighbour at distance 0, never counted by LAMMPS either), counted
// apart as /dropped. x is computed in float64 whatever the run's precision
// (cs is the run's): a float32 acos differs between libraries by an ulp
// or two, which would move an angle near an edge from one bin to the next
// between the CPU and the GPU; float64's do not at any rate that matters.
struct AdfBinner {
  double inv = 0;  // LAMMPS's deltaxinv: bins / π, or 1 / (2 / bins)
  int bins = 0;
  bool cosine = false;

  AdfBinner() = default;
  AdfBinner(int bins_, bool cosine_) : bins(bins_), cosine(cosine_) {
    const double pi = 3.14159265358979323846;  // LAMMPS's MY_PI
    inv = cosine ? 1.0 / (2.0 / bins_) : bins_ / pi;
  }
  TDS_HD int bin(double cs) const {
    double x;
    if (cosine) {
      x = (cs + 1.0) * inv;
    } else {
      if (cs > 1.0) cs = 1.0;
      if (cs < -1.0) cs = -1.0;
      x = std::acos(cs) * inv;
    }
    if (!(x > -1.0)) return -1;  // NaN too
    if (x >= double(bins)) return bins;
    return static_cast<int>(x);
  }
};

// The ADFs' types and ranges as the loops read them (host or device
// memory): masks[3 t + s] the ADFs whose I (s = 0), J (1), K (2) hold type
// t; cut2[4 m ..] rj_in², rj_out², rk_in², rk_out² of ADF m, in float64.
struct AdfTable {
  int count = 0;
  const std::uint16_t* masks = nullptr;
  const double* cut2 = nullptr;

  // The ADFs a point of type t is a centre of.
  TDS_HD unsigned centre(std::int32_t t) const { return masks[3 * t]; }
  // A neighbour of type t at squared distance r2 from a centre: the ADFs
  // whose J list (*j) and K list (*k) take it (r2 within [in², out²], both
  // ends included, as LAMMPS compares rsq).
  TDS_HD void neighbour(std::int32_t t, double r2, unsigned* j, unsigned* k) const {
    unsigned in_j = 0, in_k = 0;
    for (int m = 0; m < count; ++m) {
      const double* c = cut2 + 4 * m;
      in_j |= unsigned(r2 >= c[0] && r2 <= c[1]) << m;
      in_k |= unsigned(r2 >= c[2] && r2 <= c[3]) << m;
    }
    *j = masks[3 * t + 1] & in_j;
    *k = masks[3 * t + 2] & in_k;
  }
};

// The ADFs that count the angle at a centre between neighbours a and b
// (ja, ka: the ADFs whose J and K lists take a; jb, kb: b's): LAMMPS takes
// a pair {a, b} once when it can be ordered as (J neighbour, K neighbour).
// centre: the ADFs whose I holds the centre's type.
TDS_HD unsigned adf_counted(unsigned centre, unsigned ja, unsigned ka, unsigned jb, unsigned kb) {
  return centre & ((ja & kb) | (jb & ka));
}

}  // namespace tdsolve
