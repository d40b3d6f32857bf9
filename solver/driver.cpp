#include "solver/driver.hpp"

#include <algorithm>
#include <cstdio>

#include "core/error.hpp"
#include "solver/fault.hpp"
#include "solver/mpi_util.hpp"

namespace tdsolve {

template <typename T>
mapping::ChunkPlan agree_plan(const Problem<T>& p, Backend<T>& backend, index_t max_elements,
                              MPI_Comm comm) {
  index_t hard = ~index_t(0), limit = std::max<index_t>(1, max_elements);
  if (p.stores_values()) {
    hard = backend.max_chunk_elements();
    limit = std::min(limit, hard);
  }
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
LoopTiming run_chunks(const mapping::ChunkPlan& plan, Backend<T>& backend, Sink<T>& sink,
                      MPI_Comm comm, Progress* progress) {
  const int rank = comm_rank(comm), ranks = comm_size(comm);
  backend.keep_on_device(!sink.wants_results());
  // Every rank knows every rank's chunk range, so rank 0 can count global
  // progress after each round without communication.
  std::vector<mapping::BlockRange> owned(ranks);
  index_t rounds = 0;
  for (int r = 0; r < ranks; ++r) {
    owned[r] = plan.rank_chunks(r, ranks);
    rounds = std::max(rounds, owned[r].size());
  }
  const mapping::BlockRange mine = owned[rank];
  auto job = [&](index_t c) {
    return ChunkJob{c, plan.row_begin(c), plan.row_end(c), plan.elements(c)};
  };

  LoopTiming t;
  backend.reset_timers();
  // Pipeline: chunk c+1 computes while chunk c goes to the sink.
  if (mine.size() > 0) backend.submit(job(mine.begin));
  for (index_t round = 0; round < rounds; ++round) {
    const bool has = round < mine.size();
    const index_t c = mine.begin + round;
    if (round + 1 < mine.size()) backend.submit(job(c + 1));
    const ChunkResult<T> result = has ? backend.wait() : ChunkResult<T>{};
    const double w0 = MPI_Wtime();
    if (has) fault_point(Stage::write, c);
    sink.write(has, has ? c : 0, has ? plan.offset(c) : 0, has ? plan.elements(c) : 0, result);
    if (has) fault_point(Stage::mark, c);
    sink.mark(has, has ? c : 0);
    t.sink += MPI_Wtime() - w0;
    if (rank == 0 && progress) {
      index_t done = 0;
      for (int r = 0; r < ranks; ++r) {
        const index_t last = std::min(owned[r].end, owned[r].begin + round + 1);
        if (last > owned[r].begin) done += plan.offset(last) - plan.offset(owned[r].begin);
      }
      progress->update(done);
    }
  }
  if (progress) progress->finish();
  t.compute = backend.compute_seconds();
  t.transfer = backend.transfer_seconds();
  return t;
}

void abort_run(MPI_Comm comm, const std::string& what) {
  std::fprintf(stderr, "tdsolve: error on rank %d: %s\n", comm_rank(comm), one_line(what).c_str());
  std::fflush(stderr);
  MPI_Abort(comm, 1);
  std::_Exit(1);  // MPI_Abort does not return; this satisfies [[noreturn]]
}

#define TDS_INSTANTIATE(T)                                                                      \
  template mapping::ChunkPlan agree_plan<T>(const Problem<T>&, Backend<T>&, index_t, MPI_Comm); \
  template LoopTiming run_chunks<T>(const mapping::ChunkPlan&, Backend<T>&, Sink<T>&, MPI_Comm, \
                                    Progress*);
TDS_INSTANTIATE(float)
TDS_INSTANTIATE(double)
#undef TDS_INSTANTIATE

}  // namespace tdsolve
