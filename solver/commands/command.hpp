// A command is a module: one file (or folder) implementing this interface,
// and one line in the registry (solver/commands/registry.cpp) that main.cpp
// walks for dispatch, for `tdsolve --help`, for the unknown-command message
// and for the sections a --config file may hold (docs/design.md, "Commands").
//
// main.cpp makes a fresh object per run: parse() (before MPI starts, so help
// and usage errors are instant and print once under mpirun), then run(),
// under MPI when uses_mpi(). The object keeps its parsed options between the
// two.
#pragma once

#include <mpi.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tdsolve {

class Command {
 public:
  virtual ~Command() = default;
  virtual const char* name() const = 0;
  // Its lines under "Commands:" in `tdsolve --help`, after the name; '\n'
  // starts a continuation line.
  virtual const char* summary() const = 0;
  // Whether a --config file may hold a [name] section (for this command's
  // options; the other commands skip it).
  virtual bool config_section() const { return true; }
  // Parses argv (argv[1] is the command's name) and checks everything that
  // can be checked without MPI and the input: usage errors throw here
  // (UsageError, InputError). An exit code when that was all (help printed),
  // nothing when run() follows.
  virtual std::optional<int> parse(int argc, char** argv) = 0;
  // Whether run() needs MPI; false: main calls run(MPI_COMM_NULL) in the
  // launching process.
  virtual bool uses_mpi() const { return true; }
  // Whether a stop signal (SIGTERM, SIGINT, SIGUSR1) ends it cleanly and
  // resumably: main installs the handlers before MPI starts, so a batch
  // system's signal in the first second does too.
  virtual bool stops_cleanly() const { return false; }
  // Returns the exit code: 0, or kStoppedExitCode (stopped, resumable).
  // Throws CollectiveError for what every rank agrees on; a failure on one
  // rank once the output exists ends the job inside (MPI_Abort).
  virtual int run(MPI_Comm comm) = 0;
};

using CommandMaker = std::unique_ptr<Command> (*)();

// Every command, in the order of `tdsolve --help` (solver/commands/registry.cpp).
const std::vector<CommandMaker>& command_registry();
// A new object of the command called `name`; null when there is none.
std::unique_ptr<Command> make_command(const std::string& name);
// The commands' names, in the registry's order; with config_only, those a
// --config file may name as a section.
std::vector<std::string> command_names(bool config_only);

}  // namespace tdsolve
