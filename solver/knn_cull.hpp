// A culled knn --k row's stop (solver/cull.hpp: build_culled_knn), shared by
// the CPU loop (cpu/knn.inc) and the CUDA kernel (cuda/knn_kernels.cu), so
// the two backends skip the same boxes for the same reason.
#pragma once

#include <cmath>

#include "core/types.hpp"
#include "solver/cull_bound.hpp"

namespace tdsolve {

// The largest box bound that may still hold a candidate for a row's list
// whose worst entry is `worst` (free_slot: the list's last slot is free):
// the cull margin (cull::limit) past the worst distance — sqeuclidean's
// values are squares of it — or infinity while the list takes any value
// (a free slot, or a nan worst).
TDS_HD double knn_cull_limit(double worst, bool free_slot, bool squared, double rel_tol,
                             double scale) {
  if (free_slot || worst != worst) return INFINITY;
  return cull::limit(squared ? sqrt(worst) : worst, rel_tol, scale);
}

}  // namespace tdsolve
