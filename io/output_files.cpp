#include "io/output_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include "core/error.hpp"
#include "core/knobs.hpp"

namespace tdsolve::io {

namespace {
const std::string kPartial = ".partial", kLock = ".lock", kCreating = ".creating";

bool has_suffix(const std::string& s, const std::string& suffix) {
  return s.size() > suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
}  // namespace

std::string partial_path(const std::string& output) {
  return output + kPartial;
}
std::string output_of_partial(const std::string& path) {
  return has_suffix(path, kPartial) ? path.substr(0, path.size() - kPartial.size()) : "";
}
std::string lock_path(const std::string& output) {
  return output + kLock;
}
std::string creating_path(const std::string& output) {
  return output + kCreating;
}
std::string output_of_companion(const std::string& path) {
  for (const std::string* suffix : {&kPartial, &kLock, &kCreating})
    if (has_suffix(path, *suffix)) return path.substr(0, path.size() - suffix->size());
  return "";
}

namespace {

std::string this_host() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "?";
  return buf;
}

std::string utc(std::time_t t) {
  char buf[32];
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Errors that mean "this file system does not do POSIX record locks".
bool no_locking(int e) {
  return e == ENOLCK || e == ENOSYS || e == EOPNOTSUPP || e == EINVAL;
}

// Test hook: behave as where locks are unsupported.
bool forced_heartbeat_mode() {
  return knobs::choice("TDSOLVE_TEST_LOCK", {"heartbeat"}) == 0;
}

// Only whole lines count: a lock file being written (where it cannot
// appear whole, see create_whole) may end in part of a line, and a cut
// heartbeat or pid must not read as an old heartbeat or a dead process.
void parse_text(const std::string& text, LockHolder* h) {
  size_t at = 0;
  for (size_t end; (end = text.find('\n', at)) != std::string::npos; at = end + 1) {
    const std::string line = text.substr(at, end - at);
    const size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string k = line.substr(0, eq), v = line.substr(eq + 1);
    if (k == "host") h->host = v;
    if (k == "pid") h->pid = std::atol(v.c_str());
    if (k == "job") h->job = v;
    if (k == "started") h->started = v;
    if (k == "heartbeat") h->heartbeat = static_cast<std::time_t>(std::atoll(v.c_str()));
    if (k == "command") h->command = v;
  }
}

std::string read_all(int fd) {
  std::string s;
  char buf[4096];
  off_t at = 0;
  for (;;) {
    const ssize_t r = pread(fd, buf, sizeof buf, at);
    if (r <= 0) break;
    s.append(buf, static_cast<size_t>(r));
    at += r;
  }
  return s;
}

// Whether `path` (not followed, if a link) is the file open as `fd`.
bool same_inode(int fd, const std::string& path) {
  struct stat a {
  }, b{};
  return fstat(fd, &a) == 0 && lstat(path.c_str(), &b) == 0 && a.st_dev == b.st_dev &&
         a.st_ino == b.st_ino;
}

// A holder that is certainly gone: a process of this host that no longer
// exists (known only from a whole heartbeat line, written after the pid).
bool dead_here(const LockHolder& h) {
  return h.heartbeat > 0 && h.host == this_host() && h.pid > 0 &&
         kill(static_cast<pid_t>(h.pid), 0) != 0 && errno == ESRCH;
}

// Where the file system cannot lock: whether the lock file (its text `h`,
// its status `st`) counts as held. A heartbeat younger than kStaleSeconds
// does, unless its holder is dead here; a file without a heartbeat yet (one
// being written) counts by its modification time.
bool held_by_heartbeat(const LockHolder& h, const struct stat& st) {
  const std::time_t now = std::time(nullptr);
  if (h.heartbeat > 0) return now - h.heartbeat < OutputLock::kStaleSeconds && !dead_here(h);
  return now - st.st_mtime < OutputLock::kStaleSeconds;
}

// Opens an existing lock file for `flags`, never through a symbolic link
// (O_NOFOLLOW) nor blocking on a FIFO; -1 with errno ENOENT when there is
// none, ELOOP for a link, EINVAL for anything that is not a regular file.
int open_lock_file(const std::string& path, int flags, struct stat* st) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return -1;
  if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
    ::close(fd);
    errno = EINVAL;
    return -1;
  }
  return fd;
}

}  // namespace

std::string LockHolder::describe() const {
  std::string s =
      "host " + (host.empty() ? std::string("?") : host) + ", pid " + std::to_string(pid);
  if (!job.empty()) s += ", Slurm job " + job;
  if (!started.empty()) s += ", started " + started;
  if (heartbeat > 0) {
    const long ago = static_cast<long>(std::time(nullptr) - heartbeat);
    s += ", last heartbeat " + std::to_string(ago < 0 ? 0 : ago) + " s ago";
  }
  return s;
}

LockHolder read_lock(const std::string& output) {
  LockHolder h;
  struct stat st {};
  const int fd = open_lock_file(lock_path(output), O_RDONLY, &st);
  if (fd < 0) return h;
  h.present = true;
  parse_text(read_all(fd), &h);
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  if (forced_heartbeat_mode()) {
    h.can_tell = false;
  } else if (fcntl(fd, F_GETLK, &fl) != 0) {
    h.can_tell = !no_locking(errno);
  } else {
    h.locked = fl.l_type != F_UNLCK;
  }
  if (!h.can_tell) h.locked = held_by_heartbeat(h, st);
  ::close(fd);
  return h;
}

OutputLock::OutputLock(const std::string& output, const std::string& command)
    : output_(output),
      path_(lock_path(output)),
      command_(command),
      started_(utc(std::time(nullptr))) {
  const bool forced = forced_heartbeat_mode();
  for (int attempt = 0; attempt < 8; ++attempt) {
    struct stat st {};
    bool created = false;
    fd_ = open_lock_file(path_, O_RDWR, &st);
    if (fd_ < 0 && errno == ENOENT) {
      fd_ = create_whole();
      if (fd_ < 0 && errno == EEXIST) continue;  // another run made it first: judge theirs
      if (fd_ < 0)
        throw InputError("cannot create the lock file '" + path_ + "': " + std::strerror(errno));
      created = true;
      fstat(fd_, &st);
    } else if (fd_ < 0) {
      const int e = errno;
      if (e == ELOOP || e == EINVAL)
        throw InputError("the lock file '" + path_ + "' is " +
                         (e == ELOOP ? "a symbolic link" : "not a regular file") +
                         "; tdsolve never writes through one: remove it (and find out who made "
                         "it) or choose another --output");
      throw InputError("cannot open the lock file '" + path_ + "': " + std::strerror(e));
    }
    struct flock fl {};
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    int err = 0;
    if (forced) {
      err = ENOLCK;
    } else if (fcntl(fd_, F_SETLK, &fl) != 0) {
      err = errno;
    }
    if (err == 0) {
      // The file we locked may have been removed by the holder that just
      // finished: only a lock on the file the name still means counts.
      if (!same_inode(fd_, path_)) {
        ::close(fd_);
        fd_ = -1;
        continue;
      }
      write_text();
      return;
    }
    LockHolder h;
    parse_text(read_all(fd_), &h);
    if (err == EAGAIN || err == EACCES) {
      ::close(fd_);
      fd_ = -1;
      throw InputError("output '" + output_ + "' is being written by another tdsolve run (" +
                       h.describe() + "); wait for it to finish or choose another --output");
    }
    if (!no_locking(err)) {
      ::close(fd_);
      fd_ = -1;
      throw InputError("cannot lock '" + path_ + "': " + std::strerror(err));
    }
    // No POSIX locks on this file system: the name decides. A lock file
    // this run made (whole, and only if there was none) is its own.
    posix_ = false;
    if (created) return;
    if (held_by_heartbeat(h, st)) {
      ::close(fd_);
      fd_ = -1;
      throw InputError(
          "output '" + output_ + "' is being written by another tdsolve run (" + h.describe() +
          "; this file system cannot lock, so a heartbeat under " + std::to_string(kStaleSeconds) +
          " s counts as running); wait for it, or remove '" + path_ + "' if that run is gone");
    }
    ::close(fd_);
    fd_ = -1;
    take_over_stale(st);
  }
  throw InputError("cannot lock '" + path_ + "': it keeps being replaced");
}

OutputLock::~OutputLock() {
  release();
}

std::string OutputLock::text() {
  last_beat_ = std::time(nullptr);
  const char* job = std::getenv("SLURM_JOB_ID");
  std::string command = command_;
  for (char& c : command)
    if (c == '\n') c = ' ';
  return "tdsolve output lock\nhost=" + this_host() + "\npid=" + std::to_string(getpid()) +
         "\njob=" + (job ? job : "") + "\nstarted=" + started_ +
         "\nheartbeat=" + std::to_string(last_beat_) + "\ncommand=" + command + "\n";
}

void OutputLock::write_text() {
  const std::string t = text();
  // Written over the old text, then cut to length, so that a reader never
  // sees an empty file (in heartbeat mode that would read as a file being
  // made). Best effort: the text informs; the lock excludes.
  if (pwrite(fd_, t.data(), t.size(), 0) == static_cast<ssize_t>(t.size()))
    (void)!ftruncate(fd_, static_cast<off_t>(t.size()));
}

// A new lock file with this run's text that appears at the lock's name
// whole, and only if the name is free: written under a name of this
// process's own, then link()ed to the lock's name (EEXIST when it exists).
// Where the file system has no hard links, the name itself is created with
// O_EXCL and then written (held_by_heartbeat counts a file without a
// heartbeat yet by its age). Returns its descriptor, or -1 with errno.
int OutputLock::create_whole() {
  const std::string t = text();
  const std::string own = path_ + "." + this_host() + "." + std::to_string(getpid()) + ".new";
  ::unlink(own.c_str());  // a leftover of this pid's (a crash between link and unlink)
  int fd = ::open(own.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (fd < 0) return -1;
  if (pwrite(fd, t.data(), t.size(), 0) != static_cast<ssize_t>(t.size())) {
    const int e = errno ? errno : EIO;
    ::close(fd);
    ::unlink(own.c_str());
    errno = e;
    return -1;
  }
  const int linked = ::link(own.c_str(), path_.c_str()) == 0 ? 0 : errno;
  ::unlink(own.c_str());
  if (linked == 0) return fd;
  ::close(fd);
  if (linked != EPERM && linked != EOPNOTSUPP && linked != ENOSYS) {
    errno = linked;
    return -1;
  }
  fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (fd >= 0) (void)!pwrite(fd, t.data(), t.size(), 0);
  return fd;
}

// Moves a stale lock file (`judged`, held by no one) out of the name, so
// that the next attempt can make a new one. Another run may have done so
// first and made its own lock file there: when what was moved is not the
// file judged, it goes back into place.
void OutputLock::take_over_stale(const struct stat& judged) {
  const std::string aside = path_ + "." + this_host() + "." + std::to_string(getpid()) + ".stale";
  if (::rename(path_.c_str(), aside.c_str()) != 0) {
    if (errno == ENOENT) return;  // gone already: try again
    throw InputError("cannot take over the stale lock file '" + path_ +
                     "': " + std::strerror(errno));
  }
  struct stat st {};
  if (lstat(aside.c_str(), &st) != 0 || st.st_dev != judged.st_dev || st.st_ino != judged.st_ino)
    (void)!::link(aside.c_str(), path_.c_str());
  ::unlink(aside.c_str());
}

void OutputLock::heartbeat() {
  if (fd_ >= 0 && std::time(nullptr) - last_beat_ >= 5) write_text();
}

void OutputLock::release() {
  if (fd_ < 0) return;
  // Only the file this lock holds is removed. With POSIX locks it is
  // unlinked while still locked, so nobody can lock the old file and think
  // they hold the name (they check the inode after locking). Without them,
  // a run that took the name over (after kStaleSeconds without a heartbeat)
  // made a file of its own there, which stays.
  if (same_inode(fd_, path_)) ::unlink(path_.c_str());
  ::close(fd_);
  fd_ = -1;
}

std::string resume_command_of(const std::string& command) {
  std::string out;
  bool resume = false;
  size_t at = 0;
  while (at < command.size()) {
    if (command[at] == ' ') {
      ++at;
      continue;
    }
    // One word: up to an unquoted space; '...' quotes, \ escapes one character.
    std::string word;
    const size_t start = at;
    bool quoted = false;
    for (; at < command.size() && (quoted || command[at] != ' '); ++at) {
      const char c = command[at];
      if (c == '\'') {
        quoted = !quoted;
      } else if (c == '\\' && !quoted && at + 1 < command.size()) {
        word += command[++at];
      } else {
        word += c;
      }
    }
    if (word == "--overwrite") continue;
    resume = resume || word == "--resume";
    out += (out.empty() ? "" : " ") + command.substr(start, at - start);
  }
  return resume ? out : out + " --resume";
}

void remove_stale_creating(const std::string& output) {
  ::unlink(creating_path(output).c_str());
}

void rename_durably(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0)
    throw InputError("cannot rename '" + from + "' to '" + to + "': " + std::strerror(errno));
  const size_t slash = to.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : to.substr(0, slash);
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    fsync(fd);  // some file systems refuse fsync on a folder: the rename stands
    ::close(fd);
  }
}

}  // namespace tdsolve::io
