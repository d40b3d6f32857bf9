// The one driver loop every command runs: backend choice, the chunk plan all
// ranks agree on, the pipeline (compute c+1 while the sink takes c),
// progress, timing and error containment. It includes no concrete backend
// header but the factories' declarations, and knows no command.
#pragma once

#include <mpi.h>

#include <functional>
#include <memory>
#include <stdexcept>
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
// The CPU threads of a rank: --threads, or OMP_NUM_THREADS, or the node's
// cores shared among its local_ranks (within the CPUs the rank is bound to).
int cpu_threads(const ComputeOptions& o, int local_ranks);

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

// Collective, between rounds (or a run's frames): what the ranks agree on
// now. signal: one any rank saw (0 none); deadline: the next round, taking
// `round_seconds`, might not end before stop.deadline; checkpoint: rank 0's
// clock says checkpoint_every has passed since `last_checkpoint`.
struct StopVerdict {
  int signal = 0;
  bool deadline = false, checkpoint = false;
};
StopVerdict agree_stop(const StopPolicy& stop, double round_seconds, double last_checkpoint,
                       MPI_Comm comm);

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
// A run inside another program (solver/commands/in_process.hpp): with one rank there
// is no job to end and no rank to wait for, so abort_run throws
// LocalFailure (the command unwinds, the .partial stays) and the output
// guard records its line (local_failure) and fails the MPI-IO call, which
// HDF5 then reports as an error. Under a launcher (several ranks) they end
// the job as on the command line.
struct LocalFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};
void set_in_process(bool yes);
bool fails_locally(MPI_Comm comm);
// The output guard's line of a failed write in such a run; taken once.
void note_local_failure(const std::string& line);
std::string take_local_failure();
// From now on a write, sync or resize of `file` (the output's MPI-IO handle,
// io::ResultWriter, open at `path`) that fails on this rank, writes less
// than it was given, or during which a system call's write of the file
// failed (a full disk: Open MPI's OMPIO reports some of those as success),
// ends the job as that call returns: abort_run on `comm`, one line naming
// `output` (the run's --output). Parallel HDF5 would otherwise go on, on
// this rank alone, into collective calls the other ranks never match
// (inside H5Fflush, H5Fclose, a dataset's allocation), and the job would
// hang there, out of reach of any status exchange. When several ranks fail
// together, the lowest prints the one line: each tells the ranks above it,
// and one that hears from a rank below within 2 s leaves the line and the
// abort to it. solver/output_guard.cpp has the wrappers.
void guard_output_file(MPI_Comm comm, MPI_File file, const std::string& path,
                       const std::string& output);

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

// Collective, once the output exists: the ranks' verdicts on a step they
// took together (a collective write, a flush, a close), exchanged before any
// rank goes on to the next collective operation. `why` is this rank's
// failure ("" none). When any rank failed, the lowest failing rank prints its
// one line and ends the job (abort_run) and no rank returns. A rank that
// failed waits at most kStepAgreeSeconds for the others (they may still be
// inside the collective call its failure left, which then never ends) and
// then ends the job itself; one that did not fail waits as long as it takes.
// So a failure on some ranks never leaves the others in a collective
// operation that the failed ones do not enter: no hang, one line.
constexpr double kStepAgreeSeconds = 10;
void agree_step(MPI_Comm comm, const std::string& why);
// The exchange under agree_step: MPI_Allreduce(MIN) of `count` ints, where a
// rank that failed (`why` not "") waits at most kStepAgreeSeconds for the
// others and then ends the job with `why` (abort_run).
void agree_min(MPI_Comm comm, const int* in, int* out, int count, const std::string& why);

// Runs f (a step every rank takes together), then agree_step on its outcome.
template <typename F>
void step_together(MPI_Comm comm, F&& f) {
  std::string why;
  try {
    f();
  } catch (const std::bad_alloc&) {
    why = "out of memory";
  } catch (const std::exception& e) {
    why = e.what();
    if (why.empty()) why = "unknown error";
  }
  agree_step(comm, why);
}

}  // namespace tdsolve
