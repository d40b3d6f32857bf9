#pragma once

#include "solver/backend.hpp"
#include "solver/cpu/edm_cpu.hpp"

namespace tdsolve::cpu {

// The tile loops' view of a problem (borrowed pointers: p must outlive it).
template <typename T>
EdmView<T> view_of(const EdmProblem<T>& p) {
  EdmView<T> v;
  v.points = p.points.data();
  v.norms = p.norms.empty() ? nullptr : p.norms.data();
  v.d = p.d;
  v.tiling = p.tiling;
  v.metric = p.metric;
  return v;
}

template <typename T>
std::unique_ptr<EdmBackend<T>> make_cpu_backend(const EdmProblem<T>& problem, int threads,
                                                int local_ranks);

// Bytes of memory this process may use for buffers (MemAvailable over the
// node-local ranks), for sizing chunks.
index_t available_host_bytes(int local_ranks);

}  // namespace tdsolve::cpu
