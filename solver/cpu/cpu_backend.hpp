#pragma once

#include "solver/backend.hpp"

namespace tdsolve::cpu {

template <typename T>
std::unique_ptr<Backend<T>> make_cpu_backend(const Problem<T>& problem, int threads,
                                             int local_ranks);

// Bytes of memory this process may use for buffers (MemAvailable over the
// node-local ranks), for sizing chunks.
index_t available_host_bytes(int local_ranks);

}  // namespace tdsolve::cpu
