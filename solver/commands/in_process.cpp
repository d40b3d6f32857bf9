#include "solver/commands/in_process.hpp"

#include <mpi.h>

#include <map>
#include <memory>
#include <new>
#include <optional>

#include "core/error.hpp"
#include "core/knobs.hpp"
#include "io/h5.hpp"
#include "io/input.hpp"
#include "solver/commands/command.hpp"
#include "solver/driver.hpp"
#include "solver/fault.hpp"
#include "solver/mpi_util.hpp"
#include "solver/signals.hpp"

namespace tdsolve {

namespace {

// MPI once for the process; finalised when it exits.
void start_mpi() {
  int started = 0;
  MPI_Initialized(&started);
  if (started) return;
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  io::quiet_hdf5_errors();
  std::atexit([] {
    int done = 0;
    MPI_Finalized(&done);
    if (!done) MPI_Finalize();
  });
}

// The running call's in-memory outputs (one call at a time in a process).
std::map<std::string, MemoryOutput>& memory_outputs() {
  static std::map<std::string, MemoryOutput> outputs;
  return outputs;
}

// The in-process state for one call, undone however it ends.
struct Scope {
  Scope(const std::vector<MemoryInput>& inputs, const std::vector<MemoryOutput>& outputs) {
    for (const MemoryInput& m : inputs)
      io::set_memory_points(m.name, m.values, m.n, m.d, m.source);
    for (const MemoryOutput& m : outputs)
      memory_outputs()[m.name] = m;
    set_in_process(true);
  }
  ~Scope() {
    set_in_process(false);
    io::clear_memory_points();
    memory_outputs().clear();
    take_local_failure();
  }
};

}  // namespace

const MemoryOutput* memory_output(const std::string& spec) {
  if (!io::is_memory_spec(spec)) return nullptr;
  const auto it = memory_outputs().find(io::memory_name(spec));
  return it == memory_outputs().end() ? nullptr : &it->second;
}

int run_in_process(const std::vector<std::string>& args, const std::vector<MemoryInput>& inputs,
                   const std::vector<MemoryOutput>& outputs) {
  if (args.empty()) throw RunError("no command given", 2);
  std::vector<std::string> words = {"tdsolve"};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& w : words)
    argv.push_back(w.data());
  argv.push_back(nullptr);
  const int argc = static_cast<int>(words.size());
  Scope scope(inputs, outputs);
  try {
    const std::unique_ptr<Command> command = make_command(args[0]);
    if (!command) throw UsageError("unknown command '" + args[0] + "'");
    if (const std::optional<int> code = command->parse(argc, argv.data())) return *code;
    if (!command->uses_mpi()) return command->run(MPI_COMM_NULL);
    start_mpi();
    std::optional<StopOnInterrupt> stop;
    if (command->stops_cleanly()) stop.emplace();
    const int rank = comm_rank(MPI_COMM_WORLD);
    all_agree(MPI_COMM_WORLD, [&] {
      knobs::check_all();
      arm_faults(rank);
    });
    const int code = command->run(MPI_COMM_WORLD);
    const std::string failure = take_local_failure();
    if (!failure.empty()) throw RunError(failure, 1);
    return code;
  } catch (const RunError&) {
    throw;
  } catch (const CollectiveError& e) {
    const std::string failure = take_local_failure();
    throw RunError(failure.empty() ? one_line(e.what()) : failure, e.exit_code);
  } catch (const std::bad_alloc&) {
    throw RunError("out of memory", 1);
  } catch (const std::exception& e) {
    const std::string failure = take_local_failure();
    throw RunError(failure.empty() ? one_line(e.what()) : failure, exit_code_of(e));
  }
}

}  // namespace tdsolve
