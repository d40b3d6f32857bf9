#pragma once

#include <string>

#include "solver/backend.hpp"

namespace tdsolve::cpu {

template <typename T>
std::unique_ptr<Backend<T>> make_cpu_backend(const Problem<T>& problem, int threads,
                                             int local_ranks);

// Bytes of memory this process may use for buffers, for sizing chunks: the
// least of the node's MemAvailable and the headroom (limit - usage) of every
// memory cgroup above this process (v2: memory.max, v1:
// memory.limit_in_bytes; a Slurm job's --mem, a container's limit), over the
// node-local ranks. /proc/meminfo shows the node's memory, not the job's:
// sized by it alone, a job under a limit was OOM-killed.
index_t available_host_bytes(int local_ranks);
// The same, read under `root` instead of / (root + "/proc/meminfo", ...), for
// the tests.
index_t available_host_bytes_under(const std::string& root, int local_ranks);

// The largest host buffer a CPU chunk gets (two of them): 1 GiB, the most
// --chunk-mb allows; bench's --chunk-mb 0 ("as large as memory allows")
// took half of the node's memory before.
constexpr index_t kMaxCpuBufferBytes = index_t(1) << 30;

}  // namespace tdsolve::cpu
