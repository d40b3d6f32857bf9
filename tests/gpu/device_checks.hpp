#pragma once

#include "core/types.hpp"

namespace tdsolve::gpu_test {
// Rows r in [first_row, last_row] whose boundary T(r) ±1 the device's
// tri_root gets wrong (~0 if the check itself could not run).
unsigned long long count_tri_root_failures(index_t first_row, index_t last_row);
}  // namespace tdsolve::gpu_test
