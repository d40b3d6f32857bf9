// The names a run writes beside its output, and the lock that keeps a second
// run off them (docs/design.md, "Output lifecycle").
//
//   FILE.h5           only ever a complete result: renamed into place at the end
//   FILE.h5.partial   the run in progress, or a stopped run to --resume
//   FILE.h5.lock      held (POSIX record lock) by the run writing FILE.h5;
//                     its text names the holder and a heartbeat time. It
//                     appears whole (written under a temporary name, then
//                     link()ed into place, which fails when it exists), is
//                     never opened through a symbolic link, and is removed
//                     only by the run that holds it
//   FILE.h5.creating  the new file while its structure is made; renamed to
//                     .partial once it is whole (a leftover is removed by the
//                     next run that holds the lock)
//
// Rank 0 does all of this; the other ranks only open .partial (MPI-IO).
#pragma once

#include <sys/stat.h>

#include <ctime>
#include <string>

namespace tdsolve::io {

std::string partial_path(const std::string& output);
// The output a FILE.h5.partial belongs to ("" when `path` is no .partial).
std::string output_of_partial(const std::string& path);
std::string lock_path(const std::string& output);
std::string creating_path(const std::string& output);
// The output that `path` is the .partial, .lock or .creating of, by name
// ("" when it is none of these): no run may write such a name as its own.
std::string output_of_companion(const std::string& path);

// Who holds an output's lock, as its lock file says.
struct LockHolder {
  bool present = false;  // a lock file exists
  bool locked = false;   // a process holds its lock now (POSIX locks)
  bool can_tell = true;  // false: the file system cannot lock; judge by heartbeat
  std::string host, job, started, command;
  long pid = 0;
  std::time_t heartbeat = 0;
  std::string describe() const;  // "host H, pid P, Slurm job J, started T, heartbeat Ns ago"
};

// What the lock file of `output` says, and whether someone holds it. Not
// for the process holding the lock: closing any descriptor of a file drops
// that process's POSIX locks on it.
LockHolder read_lock(const std::string& output);

// An exclusive hold on an output's names for the life of the object.
class OutputLock {
 public:
  // Takes the lock or throws InputError naming the holder. Where the file
  // system has no POSIX locks (some Lustre/NFS mounts), a lock file whose
  // heartbeat is younger than kStaleSeconds counts as held (one without a
  // heartbeat yet: by its modification time); an older one, or one left by
  // a dead process of this host, is taken over. A lock file that is a
  // symbolic link or not a regular file is refused, never written.
  OutputLock(const std::string& output, const std::string& command);
  ~OutputLock();
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;

  // Rewrites the heartbeat (at most every few seconds; cheap to call often).
  void heartbeat();
  // Removes the lock file, if the name still means the file this lock
  // holds, and lets go (also done by the destructor).
  void release();

  static constexpr int kStaleSeconds = 120;

 private:
  std::string text();
  void write_text();
  int create_whole();
  void take_over_stale(const struct stat& judged);
  std::string output_, path_, command_, started_;
  int fd_ = -1;
  bool posix_ = true;
  std::time_t last_beat_ = 0;
};

// A recorded command line (words quoted for a shell, as tdsolve records
// them) made into the one that continues its run: its --overwrite words
// left out (--resume refuses them), --resume added unless it has one.
std::string resume_command_of(const std::string& command);

// Removes a leftover FILE.h5.creating (call with the lock held).
void remove_stale_creating(const std::string& output);
// Renames `from` to `to` atomically (replacing `to`) and syncs the folder,
// so the new name survives a crash. Throws InputError.
void rename_durably(const std::string& from, const std::string& to);

}  // namespace tdsolve::io
