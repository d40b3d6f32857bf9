// The one driver loop every command runs: backend choice, the chunk plan all
// ranks agree on, the pipeline (compute c+1 while the sink takes c),
// progress, timing and error containment. It includes no concrete backend
// header but the factories' declarations, and knows no command.
#pragma once

#include <mpi.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

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

// Every rank, inside all_agree: reserves buffers for `plan` as a file
// records it (--resume), after checking that this rank's backend can buffer
// its largest chunk.
template <typename T>
void reserve_for_plan(const Problem<T>& p, Backend<T>& backend, const mapping::ChunkPlan& plan,
                      MPI_Comm comm);

struct LoopTiming {
  double compute = 0, transfer = 0, sink = 0;  // seconds, this rank
};

// When the loop may stop early. Without it (bench) it never does.
struct StopPolicy {
  double deadline = 0;          // MPI_Wtime() by which to stop (0: none)
  double checkpoint_every = 0;  // seconds between Sink::checkpoint calls (0: never)
  std::function<void()> beat;   // called on rank 0 after every round (heartbeat)
};

struct LoopResult {
  LoopTiming time;
  bool stopped = false;  // a signal or the deadline ended it before the last chunk
  int signal = 0;        // the signal that did (0: the deadline)
  // Every rank's view, after the loop: chunk c is done (before or now).
  std::vector<unsigned char> done;
};

// Collective: every chunk not yet `done` (empty: none is), shared by the
// ranks in contiguous runs balanced by element count, through the backend
// into the sink, two in flight. With a StopPolicy the ranks agree after
// every round whether to stop (a signal anywhere, or the deadline near);
// then in-flight work is drained and the loop returns with stopped = true.
// Every checkpoint_every seconds (rank 0's clock) they call
// sink.checkpoint with the chunks done so far.
// Failures are not contained here: call it inside contain() once the output
// exists.
template <typename T>
LoopResult run_chunks(const mapping::ChunkPlan& plan, const std::vector<unsigned char>& done,
                      Backend<T>& backend, Sink<T>& sink, MPI_Comm comm, Progress* progress,
                      const StopPolicy* stop);

// This rank's failure after the output exists: one line naming the rank
// (and, once set, how to resume), then MPI_Abort at once, before anything
// collective (a collective close while other ranks wait in a write would
// hang the job).
[[noreturn]] void abort_run(MPI_Comm comm, const std::string& what);
// What abort_run adds after the error once the output exists ("" none).
void set_abort_hint(const std::string& hint);

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
