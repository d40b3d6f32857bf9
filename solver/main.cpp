// tdsolve's command line: the top help, --version, and dispatch through the
// registry of commands (solver/commands/registry.cpp); each command parses
// its own options (shared groups: solver/cli/options.hpp).
//
// Help, version, usage errors and `info` never start MPI, so they are quick
// and print once even under mpirun (only the launcher's rank 0 prints).
// The commands that compute run under MPI; an error every rank agrees on
// ends the run with one line from rank 0 and the same non-zero exit
// everywhere, a local failure after the output exists with one line naming
// the rank and MPI_Abort, so no rank is left waiting.
#include <mpi.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/knobs.hpp"
#include "io/h5.hpp"
#include "solver/cli/options.hpp"
#include "solver/commands/command.hpp"
#include "solver/driver.hpp"
#include "solver/fault.hpp"
#include "solver/mpi_util.hpp"
#include "solver/signals.hpp"
#include "version.hpp"

using namespace tdsolve;

namespace {

// The top help: every command of the registry with its summary.
std::string top_help() {
  std::string s =
      "tdsolve " TDSOLVE_VERSION
      " - triangular-domain solver: all pairs i<j (or triplets i<j<k) of n points,\n"
      "on CPU or GPU, split across MPI ranks, written to one HDF5 file.\n"
      "\n"
      "Usage: tdsolve COMMAND [options]       (under MPI: mpirun -np R tdsolve COMMAND ...)\n"
      "\n"
      "Commands:\n";
  for (CommandMaker make : command_registry()) {
    const std::unique_ptr<Command> c = make();
    // "  NAME   summary", the summaries aligned after names of up to 6
    // letters; continuation lines under the summary.
    std::string name = c->name();
    if (name.size() < 6) name.resize(6, ' ');
    s += "  " + name + " ";
    for (const char* p = c->summary(); *p; ++p)
      s += *p == '\n' ? std::string("\n         ") : std::string(1, *p);
    s += "\n";
  }
  s += "\n"
       "Options:\n"
       "  -h [ --help ]   show this help; `tdsolve COMMAND --help` shows a command's options\n"
       "  --version       print the version\n"
       "\n"
       "Example:\n"
       "  mpirun -np 2 tdsolve edm --generate uniform:20000:3:42 --output d.h5\n"
       "  tdsolve info d.h5\n";
  return s;
}

// Runs f under MPI: collective errors end with one line from rank 0 and the
// same exit code on every rank; anything else aborts the job with the rank.
template <typename F>
int mpi_main(int argc, char** argv, F&& f) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  io::quiet_hdf5_errors();
  const int rank = comm_rank(MPI_COMM_WORLD);
  int code = 0;
  try {
    all_agree(MPI_COMM_WORLD, [&] {
      knobs::check_all();
      arm_faults(rank);
    });
    code = f(MPI_COMM_WORLD);
  } catch (const CollectiveError& e) {
    if (rank == 0) std::fprintf(stderr, "tdsolve: error: %s\n", one_line(e.what()).c_str());
    code = e.exit_code;
  } catch (const std::bad_alloc&) {
    abort_run(MPI_COMM_WORLD, "out of memory");
  } catch (const std::exception& e) {
    abort_run(MPI_COMM_WORLD, e.what());
  }
  MPI_Finalize();
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string cmd = argc > 1 ? argv[1] : "";
    if (cmd.empty() || cmd == "-h" || cmd == "--help" || cmd == "help") {
      if (cli::launcher_rank0()) std::cout << top_help();
      return cmd.empty() ? 2 : 0;
    }
    if (cmd == "--version" || cmd == "version") {
      if (cli::launcher_rank0()) std::cout << "tdsolve " TDSOLVE_VERSION "\n";
      return 0;
    }
    const std::unique_ptr<Command> command = make_command(cmd);
    if (!command) {
      std::string names;
      for (const std::string& name : command_names(false))
        names += (names.empty() ? "" : ", ") + name;
      throw UsageError("unknown command '" + cmd + "' (commands: " + names +
                       "; see tdsolve --help)");
    }
    if (const std::optional<int> code = command->parse(argc, argv)) return *code;
    if (!command->uses_mpi()) return command->run(MPI_COMM_NULL);
    // Before MPI_Init: a batch system's signal in the first second must
    // also stop the run cleanly, not kill it.
    if (command->stops_cleanly()) install_stop_signals();
    return mpi_main(argc, argv, [&](MPI_Comm comm) { return command->run(comm); });
  } catch (const std::bad_alloc&) {
    if (cli::launcher_rank0()) std::fprintf(stderr, "tdsolve: error: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    if (cli::launcher_rank0())
      std::fprintf(stderr, "tdsolve: error: %s\n", one_line(e.what()).c_str());
    return exit_code_of(e);
  }
}
