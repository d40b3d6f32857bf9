#pragma once

#include "core/types.hpp"

namespace tdsolve::gpu_test {
// Rows r in [first_row, last_row] whose boundary T(r) ±1 the device's
// tri_root gets wrong (~0 if the check itself could not run).
unsigned long long count_tri_root_failures(index_t first_row, index_t last_row);
// Layers r in [first_layer, last_layer] whose boundary Te(r) ±1 the device's
// tet_root gets wrong, or whose first λ3 tile (m = last_layer + 1) is wrong.
unsigned long long count_tet_root_failures(index_t first_layer, index_t last_layer);
}  // namespace tdsolve::gpu_test
