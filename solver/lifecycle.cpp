// The output lifecycle (solver/lifecycle.hpp), once for every command.
#include "solver/lifecycle.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>

#include "core/error.hpp"
#include "core/knobs.hpp"
#include "io/input.hpp"
#include "io/walk.hpp"
#include "solver/driver.hpp"
#include "solver/fault.hpp"
#include "solver/mpi_util.hpp"
#include "solver/progress.hpp"
#include "solver/signals.hpp"

namespace tdsolve {

namespace {

std::string directory_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  return stat(a.c_str(), &sa) == 0 && stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

void check_writable_dir(const std::string& path, const char* option) {
  struct stat st {};
  const std::string dir = directory_of(path);
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw UsageError(std::string(option) + ": cannot write '" + path + "': directory '" + dir +
                     "' does not exist");
  if (access(dir.c_str(), W_OK) != 0)
    throw UsageError(std::string(option) + ": cannot write '" + path + "': directory '" + dir +
                     "' is not writable");
}

// A path that may not exist yet, made absolute through its folder (so
// "d.h5" and "./d.h5" compare equal).
std::string absolute(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  char* dir = realpath(directory_of(path).c_str(), nullptr);
  if (!dir) return path;
  const std::string out = std::string(dir) + (std::string(dir) == "/" ? "" : "/") + base;
  std::free(dir);
  return out;
}

bool same_path(const std::string& a, const std::string& b) {
  return absolute(a) == absolute(b) || same_file(a, b);
}

// A name the run writes that exists must be a regular file: never a
// symbolic link (its companions) nor a FIFO, device or folder.
void check_regular(const std::string& path, const std::string& what, bool follow) {
  struct stat st {};
  if ((follow ? stat(path.c_str(), &st) : lstat(path.c_str(), &st)) != 0) return;
  if (S_ISREG(st.st_mode)) return;
  const char* kind = S_ISLNK(st.st_mode)    ? "a symbolic link"
                     : S_ISDIR(st.st_mode)  ? "a directory"
                     : S_ISFIFO(st.st_mode) ? "a FIFO"
                                            : "not a regular file";
  throw UsageError(what + " is " + kind + "; tdsolve writes only regular files of its own (" +
                   (follow ? "choose another name" : "remove it, or choose another --output") +
                   ")");
}

}  // namespace

void check_output_paths(const OutputPaths& o, bool locked) {
  const std::string& out = o.output;
  if (out.empty()) throw UsageError("--output FILE.h5 is required");
  // memory:NAME is a Python call's array, for edm and cross (which do not
  // come here with it): not a file name.
  if (io::is_memory_spec(out))
    throw UsageError("--output " + out +
                     ": memory:NAME is for edm and cross; this command "
                     "writes a file");
  const std::string partial = io::partial_path(out);
  // Neither the output nor --stats may be a name tdsolve keeps for a run of
  // another output: that run's lock does not cover it.
  for (const auto& [name, option] : {std::pair{out, "--output"}, std::pair{o.stats, "--stats"}}) {
    const std::string owner = io::output_of_companion(name);
    if (!owner.empty())
      throw UsageError(std::string(option) + " '" + name + "' is the name tdsolve gives the " +
                       name.substr(owner.size()) + " file of the output '" + owner +
                       "'; choose another name");
  }
  const std::vector<std::pair<std::string, std::string>> written = {
      {out, "--output '" + out + "'"},
      {partial, "the unfinished output '" + partial + "'"},
      {io::lock_path(out), "the output's lock file '" + io::lock_path(out) + "'"},
      {io::creating_path(out), "the output's temporary '" + io::creating_path(out) + "'"}};
  for (const auto& [path, what] : written)
    for (const auto& [in, which] : o.inputs)
      if (!in.empty() && same_path(path, in))
        throw UsageError(what + " is " + which + " file; choose another --output");
  struct stat st {};
  if (stat(out.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw UsageError("--output '" + out + "' is a directory");
    if (!S_ISREG(st.st_mode))
      throw UsageError("--output '" + out + "' exists and is not a regular file");
    if (!o.overwrite && !o.resume)
      throw UsageError("output '" + out +
                       "' exists; pass --overwrite to replace it (it stays until the new result "
                       "is complete)");
  }
  for (size_t k = 1; k < written.size(); ++k)
    check_regular(written[k].first, written[k].second, false);
  if (locked && !o.overwrite && !o.resume && lstat(partial.c_str(), &st) == 0)
    throw UsageError("an unfinished run of this output exists ('" + partial +
                     "'): pass --resume to continue it, or --overwrite to start over");
  check_writable_dir(out, "--output");
  if (!o.stats.empty()) {
    const std::string& stats = o.stats;
    for (const auto& [path, what] : written)
      if (same_path(stats, path))
        throw UsageError("--stats '" + stats + "' is " + what + "; choose another name");
    for (const auto& [in, which] : o.inputs)
      if (!in.empty() && same_path(stats, in))
        throw UsageError("--stats '" + stats + "' is " + which + " file; choose another name");
    if (stat(stats.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
      throw UsageError("--stats '" + stats + "' is a directory");
    // A link to nothing yet cannot be compared with the names above, and
    // could be one of them once the run has made it (the result itself).
    if (lstat(stats.c_str(), &st) == 0 && S_ISLNK(st.st_mode) && stat(stats.c_str(), &st) != 0)
      throw UsageError("--stats '" + stats +
                       "' is a symbolic link to nothing; name the file itself");
    check_regular(stats, "--stats '" + stats + "'", true);
    check_writable_dir(stats, "--stats");
  }
}

void check_not_an_input(const std::string& path, const char* option,
                        const std::vector<std::pair<std::string, std::string>>& inputs) {
  for (const auto& [in, which] : inputs)
    if (!path.empty() && !in.empty() && same_path(path, in))
      throw UsageError(std::string(option) + " '" + path + "' is " + which +
                       " file; choose another name");
}

// The old output stays until the new one is complete, so it does not count
// as free; an unfinished .partial is either continued or replaced, so it does.
void check_output_space(const std::string& output, double bytes) {
  struct statvfs fs {};
  if (statvfs(directory_of(output).c_str(), &fs) != 0) return;  // cannot tell: let HDF5 try
  double free = static_cast<double>(fs.f_bavail) * fs.f_frsize;
  struct stat st {};
  if (stat(io::partial_path(output).c_str(), &st) == 0) free += static_cast<double>(st.st_size);
  if (bytes > free) {
    throw InputError("the output needs " + human_bytes(bytes) + " but '" + directory_of(output) +
                     "' has " + human_bytes(free) + " free");
  }
}

namespace {

// Makes the new file so that every interruption leaves no .partial or a
// whole one: rank 0 writes the structure to FILE.h5.creating, all ranks
// open it (parallel HDF5 allocates the datasets then), and only then is it
// renamed to FILE.h5.partial. TDSOLVE_TEST_FAULT=0:STEP:create kills rank 0 at
// each step, 0 to 4.
void create_output(MPI_Comm comm, OutputRun& run, const std::string& creating,
                   const std::string& partial) {
  const bool root = comm_rank(comm) == 0;
  const bool shared = run.shared_file();
  if (root) fault_point(Stage::create, 0);
  on_root(comm, [&] { run.make(creating); });
  if (root) fault_point(Stage::create, 1);
  run.open(creating);
  if (root) fault_point(Stage::create, 2);
  if (shared) step_together(comm, [&] { run.flush(); });
  if (root) fault_point(Stage::create, 3);
  const auto rename = [&] {
    if (root) io::rename_durably(creating, partial);
  };
  if (shared) {
    contain(comm, rename);
  } else {
    on_root(comm, rename);
  }
  MPI_Barrier(comm);
  if (root) fault_point(Stage::create, 4);
}

// Never blocks: a name that became a FIFO since the checks fails to open
// (O_NONBLOCK, no reader) or is left alone, as is anything not a regular file.
// Nor does it write the result (`output`) or its .partial, whatever the
// name has become since the checks (a link made meanwhile).
void write_stats(const std::string& path, const std::string& output, const OutputRun& run,
                 bool complete) {
  struct stat st {};
  const int fd = io::open_regular(path, O_WRONLY | O_CREAT, &st);
  const auto cannot = [&](int e) {
    std::fprintf(stderr, "tdsolve: warning: cannot write --stats file '%s': %s\n", path.c_str(),
                 e == EINVAL ? "not a regular file" : std::strerror(e));
  };
  if (fd < 0) return cannot(errno);
  for (const std::string& result : {output, io::partial_path(output)}) {
    struct stat rs {};
    if (stat(result.c_str(), &rs) == 0 && rs.st_dev == st.st_dev && rs.st_ino == st.st_ino) {
      ::close(fd);
      std::fprintf(stderr, "tdsolve: warning: --stats '%s' is now the file '%s'; not written\n",
                   path.c_str(), result.c_str());
      return;
    }
  }
  std::FILE* f = ftruncate(fd, 0) == 0 ? fdopen(fd, "w") : nullptr;
  if (!f) {
    const int e = errno;
    ::close(fd);
    return cannot(e);
  }
  run.write_stats(f, complete);
  // A full disk shows here (the writes happen inside the C library): an
  // object cut short is worse than none, so the file is left empty.
  bool failed = std::fflush(f) != 0 || std::ferror(f) != 0;
  int e = failed ? errno : 0;
  if (failed) (void)ftruncate(fd, 0);
  if (std::fclose(f) != 0 && !failed) {
    failed = true;
    e = errno;
    (void)::truncate(path.c_str(), 0);
  }
  if (failed)
    std::fprintf(stderr, "tdsolve: warning: writing --stats file '%s' failed: %s (left empty)\n",
                 path.c_str(), std::strerror(e ? e : EIO));
}

}  // namespace

int run_output(MPI_Comm comm, const OutputRequest& r, OutputRun& run) {
  const int rank = comm_rank(comm);
  const std::string& out = r.paths.output;
  const std::string partial = io::partial_path(out), creating = io::creating_path(out);

  // Up front, before any input is read: the paths, then the output's lock.
  // The checks that decide are those made holding the lock: a run of the
  // same output that finishes meanwhile changes what exists.
  std::unique_ptr<io::OutputLock> lock;
  on_root(comm, [&] {
    check_output_paths(r.paths, false);
    if (const auto ms = knobs::integer("TDSOLVE_TEST_LOCK_DELAY_MS", 0, 600000))
      std::this_thread::sleep_for(std::chrono::milliseconds(*ms));
    lock = std::make_unique<io::OutputLock>(out, r.command);
    check_output_paths(r.paths, true);
    io::remove_stale_creating(out);
  });
  run.load();
  Start start = Start::fresh;
  on_root(comm, [&] {
    // What --resume reads must survive HDF5 in a child first (io/walk.hpp).
    if (r.paths.resume) io::refuse_damaged_resume(out);
    start = run.inspect();
  });
  index_t verdict = static_cast<index_t>(start);
  bcast_u64(comm, &verdict);
  start = static_cast<Start>(verdict);
  run.share(start);
  if (start == Start::complete) {
    if (rank == 0 && !r.quiet)
      std::printf("tdsolve %s: '%s' is already complete (the same job); nothing to do\n", r.name,
                  out.c_str());
    return 0;
  }
  const bool resuming = start == Start::resume;
  run.prepare(resuming);
  if (resuming) {
    run.open(partial);
  } else {
    create_output(comm, run, creating, partial);
  }
  const std::string& resume_cmd = r.resume_command;
  set_abort_hint(run.abort_hint(partial, resume_cmd));

  // From here on the file exists.
  const OutputContext context{comm, out, partial, resume_cmd, lock.get()};
  const bool complete = run.loop(context);
  // Only a complete result takes the output's name (replacing an old one).
  if (complete) {
    fault_point(Stage::rename, 0);  // TDSOLVE_TEST_FAULT=RANK:0:rename
    const auto rename = [&] {
      if (rank == 0) io::rename_durably(partial, out);
    };
    if (run.shared_file()) {
      contain(comm, rename);
    } else {
      on_root(comm, rename);
    }
  }
  set_abort_hint("");
  if (rank == 0) lock.reset();
  run.finish(complete);
  if (rank == 0 && !r.paths.stats.empty()) write_stats(r.paths.stats, out, run, complete);
  return complete ? 0 : kStoppedExitCode;
}

}  // namespace tdsolve
