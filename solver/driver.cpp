#include "solver/driver.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "core/error.hpp"
#include "solver/fault.hpp"
#include "solver/mpi_util.hpp"
#include "solver/signals.hpp"

namespace tdsolve {

template <typename T>
mapping::ChunkPlan agree_plan(const Problem<T>& p, Backend<T>& backend, index_t max_elements,
                              MPI_Comm comm) {
  index_t hard = ~index_t(0), limit = std::max<index_t>(1, max_elements);
  if (p.stores_values()) {
    hard = backend.max_chunk_elements();
    limit = std::min(limit, hard);
  }
  // knn --k: bounded by the work as well as by the output, so that a stop
  // request is honoured within a chunk or two.
  if (p.knn()) limit = std::min(limit, std::max<index_t>(1, backend.max_chunk_work()));
  index_t agreed = limit;
  check_mpi(MPI_Allreduce(&limit, &agreed, 1, MPI_UINT64_T, MPI_MIN, comm), "MPI_Allreduce");
  mapping::ChunkPlan plan = make_plan(p, agreed);
  all_agree(comm, [&] {
    if (plan.largest_chunk() > hard)
      throw InputError("one block row with --block " + std::to_string(p.rho) + " holds " +
                       human_bytes(double(plan.largest_chunk()) * sizeof(T)) + ", more than the " +
                       human_bytes(double(hard) * sizeof(T)) +
                       " this rank can buffer; use a smaller --block");
    backend.reserve(plan.largest_chunk());
  });
  return plan;
}

template <typename T>
void reserve_for_plan(const Problem<T>& p, Backend<T>& backend, const mapping::ChunkPlan& plan,
                      MPI_Comm) {
  const index_t hard = p.stores_values() ? backend.max_chunk_elements() : ~index_t(0);
  if (plan.largest_chunk() > hard)
    throw InputError("the file's largest chunk holds " +
                     human_bytes(double(plan.largest_chunk()) * sizeof(T)) + ", more than the " +
                     human_bytes(double(hard) * sizeof(T)) + " this rank can buffer");
  backend.reserve(plan.largest_chunk());
}

namespace {

// Positions [begin, end) in the to-do list owned by each rank: contiguous,
// cut where the running element count reaches r/R of the total (so a fresh
// run splits exactly as ChunkPlan::rank_chunks does).
std::vector<index_t> split_todo(const mapping::ChunkPlan& plan, const std::vector<index_t>& todo,
                                int ranks, std::vector<index_t>* prefix) {
  prefix->assign(todo.size() + 1, 0);
  for (size_t i = 0; i < todo.size(); ++i)
    (*prefix)[i + 1] = (*prefix)[i] + plan.elements(todo[i]);
  const index_t total = prefix->back();
  std::vector<index_t> first(ranks + 1, todo.size());
  first[0] = 0;
  for (int r = 1; r < ranks; ++r) {
    const index_t target = mapping::mul_div_ceil(total, r, ranks);
    first[r] = std::lower_bound(prefix->begin(), prefix->end() - 1, target) - prefix->begin();
  }
  return first;
}

}  // namespace

StopVerdict agree_stop(const StopPolicy& stop, double round_seconds, double last_checkpoint,
                       MPI_Comm comm) {
  const double now = MPI_Wtime();
  int want[3] = {stop_signal(),
                 stop.deadline > 0 && now + 1.5 * round_seconds + 1.0 >= stop.deadline,
                 comm_rank(comm) == 0 && stop.checkpoint_every > 0 &&
                     now - last_checkpoint >= stop.checkpoint_every},
      agreed[3] = {0, 0, 0};
  check_mpi(MPI_Allreduce(want, agreed, 3, MPI_INT, MPI_MAX, comm), "MPI_Allreduce (stop)");
  return StopVerdict{agreed[0], agreed[1] != 0, agreed[2] != 0};
}

template <typename T>
LoopResult run_chunks(const mapping::ChunkPlan& plan, const std::vector<unsigned char>& done,
                      Backend<T>& backend, Sink<T>& sink, MPI_Comm comm, Progress* progress,
                      const StopPolicy* stop) {
  const int rank = comm_rank(comm), ranks = comm_size(comm);
  backend.keep_on_device(!sink.wants_results());
  std::vector<index_t> todo;
  index_t before = 0;  // elements already done
  for (index_t c = 0; c < plan.chunks(); ++c) {
    if (c < done.size() && done[c])
      before += plan.elements(c);
    else
      todo.push_back(c);
  }
  // Every rank knows every rank's share, so rank 0 can count global progress
  // after each round without communication.
  std::vector<index_t> prefix;
  const std::vector<index_t> first = split_todo(plan, todo, ranks, &prefix);
  index_t rounds = 0;
  for (int r = 0; r < ranks; ++r)
    rounds = std::max(rounds, first[r + 1] - first[r]);
  const index_t begin = first[rank], mine = first[rank + 1] - begin;
  auto job = [&](index_t i) {
    const index_t c = todo[begin + i];
    return ChunkJob{c, plan.row_begin(c), plan.row_end(c), plan.elements(c), plan.offset(c)};
  };

  LoopResult out;
  std::vector<unsigned char> finished(plan.chunks(), 0);
  // Collective: every chunk done so far, by any rank, now or before this run.
  const auto all_done = [&] {
    std::vector<unsigned char> all(plan.chunks(), 0);
    check_mpi(MPI_Allreduce(finished.data(), all.data(), static_cast<int>(plan.chunks()),
                            MPI_UNSIGNED_CHAR, MPI_MAX, comm),
              "MPI_Allreduce (chunks done)");
    for (index_t c = 0; c < plan.chunks() && c < done.size(); ++c)
      all[c] |= done[c];
    return all;
  };
  backend.reset_timers();
  double last_round = 0, last_checkpoint = MPI_Wtime();
  // Pipeline: chunk i+1 computes while chunk i goes to the sink.
  if (mine > 0) backend.submit(job(0));
  for (index_t round = 0; round < rounds; ++round) {
    const double r0 = MPI_Wtime();
    const bool has = round < mine;
    const index_t c = has ? todo[begin + round] : 0;
    if (round + 1 < mine) backend.submit(job(round + 1));
    const ChunkResult<T> result = has ? backend.wait() : ChunkResult<T>{};
    const double w0 = MPI_Wtime();
    if (has) {
      fault_point(Stage::kill, c);
      fault_point(Stage::write, c);
    }
    sink.write(has, c, has ? plan.offset(c) : 0, has ? plan.elements(c) : 0, result);
    if (has) fault_point(Stage::mark, c);
    sink.mark(has, c);
    if (has) finished[c] = 1;
    out.time.sink += MPI_Wtime() - w0;
    if (rank == 0 && progress) {
      index_t now = before;
      for (int r = 0; r < ranks; ++r) {
        const index_t last = std::min(first[r + 1], first[r] + round + 1);
        now += prefix[last] - prefix[first[r]];
      }
      progress->update(now);
    }
    if (!stop) continue;
    if (rank == 0 && stop->beat) stop->beat();
    last_round = MPI_Wtime() - r0;
    // Stop when any rank saw a signal, or the next round might not end
    // before the deadline.
    const StopVerdict v = agree_stop(*stop, last_round, last_checkpoint, comm);
    if (v.checkpoint && round + 1 < rounds) {
      sink.checkpoint(all_done());
      last_checkpoint = MPI_Wtime();
    }
    if ((v.signal || v.deadline) && round + 1 < rounds) {
      if (round + 1 < mine) backend.wait();  // drain the chunk in flight; it is not written
      out.stopped = true;
      out.signal = v.signal;
      break;
    }
  }
  if (progress) progress->finish();
  out.time.compute = backend.compute_seconds();
  out.time.transfer = backend.transfer_seconds();
  out.done = all_done();
  return out;
}

namespace {
std::string g_abort_hint;
}

void set_abort_hint(const std::string& hint) {
  g_abort_hint = hint;
}

void agree_min(MPI_Comm comm, const int* in, int* out, int count, const std::string& why) {
  MPI_Request request = MPI_REQUEST_NULL;
  check_mpi(MPI_Iallreduce(in, out, count, MPI_INT, MPI_MIN, comm, &request), "MPI_Iallreduce");
  if (why.empty()) {
    check_mpi(MPI_Wait(&request, MPI_STATUS_IGNORE), "MPI_Wait");
    return;
  }
  // The others may never come: they can be inside the collective call that
  // failed here, waiting for this rank.
  const double deadline = MPI_Wtime() + kStepAgreeSeconds;
  int arrived = 0;
  while (true) {
    check_mpi(MPI_Test(&request, &arrived, MPI_STATUS_IGNORE), "MPI_Test");
    if (arrived) return;
    if (MPI_Wtime() >= deadline) abort_run(comm, why);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void agree_step(MPI_Comm comm, const std::string& why) {
  const int ranks = comm_size(comm);
  const int me = why.empty() ? ranks : comm_rank(comm);
  int first = ranks;
  agree_min(comm, &me, &first, 1, why);
  if (first == ranks) return;
  if (me == first) abort_run(comm, why);
  // Rank `first` ends the job; wait for it (never returns).
  while (true)
    std::this_thread::sleep_for(std::chrono::seconds(1));
}

namespace {
bool g_in_process = false;
std::string g_local_failure;
}  // namespace

void set_in_process(bool yes) {
  g_in_process = yes;
}
bool fails_locally(MPI_Comm comm) {
  return g_in_process && comm_size(comm) == 1;
}
void note_local_failure(const std::string& line) {
  if (g_local_failure.empty()) g_local_failure = line;
}
std::string take_local_failure() {
  std::string s;
  s.swap(g_local_failure);
  return s;
}

void abort_run(MPI_Comm comm, const std::string& what) {
  if (fails_locally(comm)) throw LocalFailure(one_line(what));
  std::fprintf(stderr, "tdsolve: error on rank %d: %s\n", comm_rank(comm), one_line(what).c_str());
  if (!g_abort_hint.empty()) std::fprintf(stderr, "tdsolve: %s\n", g_abort_hint.c_str());
  std::fflush(stderr);
  MPI_Abort(comm, 1);
  std::_Exit(1);  // MPI_Abort does not return; this satisfies [[noreturn]]
}

#define TDS_INSTANTIATE(T)                                                                        \
  template mapping::ChunkPlan agree_plan<T>(const Problem<T>&, Backend<T>&, index_t, MPI_Comm);   \
  template void reserve_for_plan<T>(const Problem<T>&, Backend<T>&, const mapping::ChunkPlan&,    \
                                    MPI_Comm);                                                    \
  template LoopResult run_chunks<T>(const mapping::ChunkPlan&, const std::vector<unsigned char>&, \
                                    Backend<T>&, Sink<T>&, MPI_Comm, Progress*,                   \
                                    const StopPolicy*);
TDS_INSTANTIATE(float)
TDS_INSTANTIATE(double)
#undef TDS_INSTANTIATE

}  // namespace tdsolve
