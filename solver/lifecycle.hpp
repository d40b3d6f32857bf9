// The output lifecycle, written once for every command that writes a result
// file (docs/design.md, "Output lifecycle"): nothing lost, nothing falsely
// complete. run_output drives it; the command supplies the steps that are
// its own (an OutputRun): what it reads, how it judges an existing output,
// the file it makes and the loop that fills it.
//
//   1. rank 0 checks every name the run writes and reads, takes
//      FILE.h5.lock and checks them all again holding it (so no run that
//      finishes meanwhile can change the verdict), then removes a stale
//      FILE.h5.creating; all before any input is read;
//   2. the command reads its input (load) and rank 0 inspects what exists:
//      start fresh, resume FILE.h5.partial, or report FILE.h5 complete;
//   3. a new file is made as FILE.h5.creating, opened by every rank, flushed
//      and only then renamed to FILE.h5.partial (TDSOLVE_TEST_FAULT=0:STEP:create
//      kills rank 0 at each step, 0 to 4); a resumed run opens the .partial;
//   4. the command's loop writes and flags its chunks;
//   5. a complete result is renamed to FILE.h5; the lock is released; the
//      command reports; rank 0 writes --stats.
// It knows no command and no backend.
#pragma once

#include <mpi.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "core/types.hpp"
#include "io/output_files.hpp"

namespace tdsolve {

// The registry of a run's files: every name it writes and every file it
// reads, checked against each other before anything is read or computed.
struct OutputPaths {
  std::string output;
  bool overwrite = false, resume = false;
  std::string stats;  // --stats, or ""
  // Every file the run reads, as (path, what it is): (the FILE of
  // FILE.h5:/dataset, "the input"), (..., "the --weights"), (..., "the
  // --config") ...; an empty path is skipped (a generated input, an inline
  // --weights list).
  std::vector<std::pair<std::string, std::string>> inputs;
};

// Rank 0: the registry's rules, UsageError for the first broken. The names
// the run writes (the output, its .partial, .lock and .creating, --stats)
// are none of the files it reads, nor each other, by path or, where they
// exist, by (device, inode); neither the output nor --stats is itself some
// output's .partial, .lock or .creating; the output, if it exists, is a
// regular file and is replaced only with --overwrite (or reported by
// --resume); its .partial, .lock and .creating, if they exist, are regular
// files (not symbolic links); --stats, if it exists, is a regular file;
// their folders exist and are writable. `locked`: the caller holds the
// output's lock, so this is the decision that counts (run_output checks
// before taking the lock, to fail early, and again holding it); then an
// unfinished .partial also needs --resume or --overwrite.
void check_output_paths(const OutputPaths& paths, bool locked);
// UsageError when `path` (a file the run writes that is no output: bench's
// --csv) is one of `inputs` (as OutputPaths::inputs), by path or by file.
void check_not_an_input(const std::string& path, const char* option,
                        const std::vector<std::pair<std::string, std::string>>& inputs);
// InputError when the output's folder has less than `bytes` free (an
// unfinished .partial counts as free: it is continued or replaced).
void check_output_space(const std::string& output, double bytes);

// What rank 0 found at the output's names, once it holds the lock.
enum class Start : index_t { fresh, resume, complete };

// What run_output hands the command's loop.
struct OutputContext {
  MPI_Comm comm;
  std::string output, partial;
  std::string resume_command;  // the run's command line with --resume
  io::OutputLock* lock;        // rank 0; null elsewhere
  // Rank 0: the lock file's heartbeat (call often; it writes every few seconds).
  void heartbeat() const {
    if (lock) lock->heartbeat();
  }
};

// The steps of the lifecycle that are the command's, called in this order
// (collective unless said otherwise).
class OutputRun {
 public:
  virtual ~OutputRun() = default;
  // After the lock: read the input.
  virtual void load() {}
  // Rank 0, holding the lock: what exists; throws to refuse (a different
  // job, an unfinished run without --resume or --overwrite).
  virtual Start inspect() = 0;
  // Every rank, with rank 0's verdict: take what rank 0 read (broadcast).
  virtual void share(Start) {}
  // Before the file exists or is opened: set up the computation and say
  // what the run will do.
  virtual void prepare(bool resuming) = 0;
  // Whether every rank holds the file open from its creation to the end
  // (parallel HDF5): then a failure once it exists ends the job inside
  // (MPI_Abort), as a collective close could hang. Otherwise (one process
  // that opens the file only once it is whole) the lifecycle's steps fail
  // as ordinary errors.
  virtual bool shared_file() const { return true; }
  // Rank 0: write the new file's whole structure to `creating`.
  virtual void make(const std::string& creating) = 0;
  // Every rank: open `path` (the new file, or a resumed .partial) for
  // writing. Nothing by default: the command opens it in its loop.
  virtual void open(const std::string& path) {}
  // Every rank: the new file's allocation reaches the storage.
  virtual void flush() {}
  // What abort_run adds to a failure from now on: where the finished work
  // is and how to continue it.
  virtual std::string abort_hint(const std::string& partial,
                                 const std::string& resume_command) const = 0;
  // The command's loop; true when the result is complete.
  virtual bool loop(const OutputContext& context) = 0;
  // After the rename (when complete) and the lock's release: the last lines.
  virtual void finish(bool complete) = 0;
  // Rank 0, with --stats: writes the timings' JSON line to f.
  virtual void write_stats(std::FILE* f, bool complete) const = 0;
};

struct OutputRequest {
  const char* name;  // the command, for "tdsolve NAME: ..." lines
  OutputPaths paths;
  std::string command;         // the command line (the lock file's text)
  std::string resume_command;  // the command line that continues the run (RunOptions)
  bool quiet = false;
};

// Collective: the whole lifecycle. Returns 0 (complete, or already complete)
// or kStoppedExitCode (stopped cleanly, resumable).
int run_output(MPI_Comm comm, const OutputRequest& request, OutputRun& run);

}  // namespace tdsolve
