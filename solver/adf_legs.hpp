// A centre's legs and their angles as both of adf's backends compute them
// (solver/cpu/adf.cpp, solver/cuda/adf_backend.cu): the same operations in
// the same order (neither fuses a multiply-add), so their angles fall in
// the same bins.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/types.hpp"
#include "solver/adf_bins.hpp"
#include "solver/epilogue.hpp"

namespace tdsolve {

// A leg d = x_centre − x_neighbour (minimum image), 1/r, and the ADFs
// whose J and K lists take the neighbour.
template <typename T>
struct AdfLeg {
  T d[3];
  T ir;
  unsigned j, k;
};

// The leg from centre i (a centre of the ADFs `centre`) to point o of type
// type_o: false where o is beyond every outer cutoff (outer2, float64) or
// no ADF's lists take it.
template <typename T>
TDS_HD bool adf_leg(const T* x, index_t i, index_t o, std::int32_t type_o,
                    const epilogue::Cell3<T>& cell, const AdfTable& table, double outer2,
                    unsigned centre, AdfLeg<T>* l) {
  T d[3] = {x[3 * i] - x[3 * o], x[3 * i + 1] - x[3 * o + 1], x[3 * i + 2] - x[3 * o + 2]};
  cell.image(d[0], d[1], d[2]);
  const T r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
  if (!(static_cast<double>(r2) <= outer2)) return false;
  unsigned j = 0, k = 0;
  table.neighbour(type_o, static_cast<double>(r2), &j, &k);
  l->j = j & centre;
  l->k = k & centre;
  if (!(l->j | l->k)) return false;
  for (int c = 0; c < 3; ++c)
    l->d[c] = d[c];
  l->ir = T(1) / std::sqrt(r2);
  return true;
}

// The cosine of the angle between two legs, as LAMMPS forms it:
// (d1 · d2)(1/r1 · 1/r2) (the same bits whichever leg comes first).
template <typename T>
TDS_HD T adf_cos(const T* d1, T ir1, const T* d2, T ir2) {
  return (d1[0] * d2[0] + d1[1] * d2[1] + d1[2] * d2[2]) * (ir1 * ir2);
}

}  // namespace tdsolve
