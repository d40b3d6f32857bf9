// The one driver loop every command runs: backend choice, the chunk plan all
// ranks agree on, the pipeline (compute c+1 while the sink takes c),
// progress, timing and error containment. It includes no concrete backend
// header but the factories' declarations, and knows no command.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

#include "mapping/partition.hpp"
#include "solver/backend.hpp"
#include "solver/options.hpp"
#include "solver/progress.hpp"
#include "solver/sink.hpp"

namespace tdsolve {

struct NodeInfo {
  int local_rank = 0, local_ranks = 1;
};
NodeInfo node_info(MPI_Comm comm);

// Collective: the backend --backend asks for (auto: cuda when a GPU is
// visible). Problems every rank sees the same way become CollectiveErrors.
template <typename T>
std::unique_ptr<Backend<T>> make_backend(const ComputeOptions& o, const Problem<T>& p,
                                         MPI_Comm comm, bool quiet, std::string* kind);

// Collective: the plan with chunks of at most max_elements, lowered when a
// sink stores values to what every rank's backend can buffer; buffers are
// reserved for its largest chunk.
template <typename T>
mapping::ChunkPlan agree_plan(const Problem<T>& p, Backend<T>& backend, index_t max_elements,
                              MPI_Comm comm);

struct LoopTiming {
  double compute = 0, transfer = 0, sink = 0;  // seconds, this rank
};

// Collective: every chunk of the plan this rank owns, through the backend
// into the sink, two in flight. Failures are not contained here: call it
// inside contain() once the output exists.
template <typename T>
LoopTiming run_chunks(const mapping::ChunkPlan& plan, Backend<T>& backend, Sink<T>& sink,
                      MPI_Comm comm, Progress* progress);

// This rank's failure after the output exists: one line naming the rank,
// then MPI_Abort at once, before anything collective (a collective close
// while other ranks wait in a write would hang the job).
[[noreturn]] void abort_run(MPI_Comm comm, const std::string& what);

template <typename F>
void contain(MPI_Comm comm, F&& f) {
  try {
    f();
  } catch (const std::bad_alloc&) {
    abort_run(comm, "out of memory");
  } catch (const std::exception& e) {
    abort_run(comm, e.what());
  }
}

}  // namespace tdsolve
