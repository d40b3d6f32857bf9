// The backend registry: the one place that knows the concrete backends.
#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <thread>

#include "core/error.hpp"
#include "solver/cpu/cpu_backend.hpp"
#include "solver/cuda/cuda_backend.hpp"
#include "solver/driver.hpp"
#include "solver/mpi_util.hpp"

namespace tdsolve {

NodeInfo node_info(MPI_Comm comm) {
  MPI_Comm node;
  check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node),
            "MPI_Comm_split_type");
  NodeInfo info{comm_rank(node), comm_size(node)};
  MPI_Comm_free(&node);
  return info;
}

namespace {

// CPUs this process may run on: mpirun binds each rank to one core by
// default (np <= 2), and threads beyond that would share it.
int allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  return CPU_COUNT(&set);
}

int default_threads(int local_ranks) {
  // OMP_NUM_THREADS wins; otherwise share the node's cores among its ranks,
  // within the CPUs this rank is bound to.
  if (std::getenv("OMP_NUM_THREADS")) return std::max(1, omp_get_max_threads());
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  const int share = std::max(1, (cores > 0 ? cores : 1) / std::max(1, local_ranks));
  const int allowed = allowed_cpus();
  return allowed > 0 ? std::min(share, allowed) : share;
}

}  // namespace

int cpu_threads(const ComputeOptions& o, int local_ranks) {
  return o.threads > 0 ? o.threads : default_threads(local_ranks);
}

template <typename T>
std::unique_ptr<Backend<T>> make_backend(const ComputeOptions& o, const Problem<T>& p,
                                         MPI_Comm comm, bool quiet, std::string* kind) {
  const NodeInfo node = node_info(comm);
  std::unique_ptr<Backend<T>> b;
  int threads = 0;
  all_agree(comm, [&] {
    BackendKind which = o.backend;
    if (which == BackendKind::automatic)
      which = cuda::device_count() > 0 ? BackendKind::cuda : BackendKind::cpu;
    if (which == BackendKind::cuda) {
      if (cuda::device_count() == 0)
        throw UsageError("--backend cuda: no GPU available (" + cuda::no_device_reason() + ")");
      cuda::CudaOptions co;
      co.device = o.device;
      co.local_rank = node.local_rank;
      co.local_ranks = node.local_ranks;
      b = cuda::make_cuda_backend<T>(p, co);
      *kind = "cuda";
    } else {
      threads = cpu_threads(o, node.local_ranks);
      b = cpu::make_cpu_backend<T>(p, threads, node.local_ranks);
      *kind = "cpu";
    }
  });
  // Threads asked for beyond the CPUs a rank is bound to only share them.
  const int allowed = allowed_cpus();
  int crowded = allowed > 0 && threads > allowed ? threads : 0, worst = 0;
  check_mpi(MPI_Allreduce(&crowded, &worst, 1, MPI_INT, MPI_MAX, comm), "MPI_Allreduce");
  if (worst > 0 && comm_rank(comm) == 0 && !quiet) {
    std::fprintf(stderr,
                 "tdsolve: note: %d threads per rank, but the launcher bound ranks to fewer CPUs; "
                 "use mpirun --map-by slot:PE=%d (or --bind-to none) to spread them\n",
                 worst, worst);
  }
  return b;
}

template std::unique_ptr<Backend<float>> make_backend<float>(const ComputeOptions&,
                                                             const Problem<float>&, MPI_Comm, bool,
                                                             std::string*);
template std::unique_ptr<Backend<double>> make_backend<double>(const ComputeOptions&,
                                                               const Problem<double>&, MPI_Comm,
                                                               bool, std::string*);

}  // namespace tdsolve
