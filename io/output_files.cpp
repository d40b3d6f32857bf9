#include "io/output_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "core/error.hpp"
#include "core/knobs.hpp"

namespace tdsolve::io {

namespace {
const std::string kPartial = ".partial";
}

std::string partial_path(const std::string& output) {
  return output + kPartial;
}
std::string output_of_partial(const std::string& path) {
  const bool partial = path.size() > kPartial.size() &&
                       path.compare(path.size() - kPartial.size(), kPartial.size(), kPartial) == 0;
  return partial ? path.substr(0, path.size() - kPartial.size()) : "";
}
std::string lock_path(const std::string& output) {
  return output + ".lock";
}
std::string creating_path(const std::string& output) {
  return output + ".creating";
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

void parse_text(const std::string& text, LockHolder* h) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
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

bool same_inode(int fd, const std::string& path) {
  struct stat a {
  }, b{};
  return fstat(fd, &a) == 0 && stat(path.c_str(), &b) == 0 && a.st_dev == b.st_dev &&
         a.st_ino == b.st_ino;
}

// A holder that is certainly gone: a process of this host that no longer exists.
bool dead_here(const LockHolder& h) {
  return h.host == this_host() && h.pid > 0 && kill(static_cast<pid_t>(h.pid), 0) != 0 &&
         errno == ESRCH;
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
  const std::string path = lock_path(output);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
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
  if (!h.can_tell)
    h.locked = h.heartbeat > 0 && std::time(nullptr) - h.heartbeat < OutputLock::kStaleSeconds &&
               !dead_here(h);
  ::close(fd);
  return h;
}

OutputLock::OutputLock(const std::string& output, const std::string& command)
    : output_(output),
      path_(lock_path(output)),
      command_(command),
      started_(utc(std::time(nullptr))) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd_ < 0)
      throw InputError("cannot create the lock file '" + path_ + "': " + std::strerror(errno));
    struct flock fl {};
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    int err = 0;
    if (forced_heartbeat_mode()) {
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
      const int e = err;
      ::close(fd_);
      fd_ = -1;
      throw InputError("cannot lock '" + path_ + "': " + std::strerror(e));
    }
    // No POSIX locks on this file system: the heartbeat decides.
    posix_ = false;
    const long age = static_cast<long>(std::time(nullptr) - h.heartbeat);
    if (h.heartbeat > 0 && age < kStaleSeconds && !dead_here(h)) {
      ::close(fd_);
      fd_ = -1;
      throw InputError(
          "output '" + output_ + "' is being written by another tdsolve run (" + h.describe() +
          "; this file system cannot lock, so a heartbeat under " + std::to_string(kStaleSeconds) +
          " s counts as running); wait for it, or remove '" + path_ + "' if that run is gone");
    }
    write_text();
    return;
  }
  throw InputError("cannot lock '" + path_ + "': it keeps being replaced");
}

OutputLock::~OutputLock() {
  release();
}

void OutputLock::write_text() {
  last_beat_ = std::time(nullptr);
  const char* job = std::getenv("SLURM_JOB_ID");
  std::string command = command_;
  for (char& c : command)
    if (c == '\n') c = ' ';
  const std::string text = "tdsolve output lock\nhost=" + this_host() +
                           "\npid=" + std::to_string(getpid()) + "\njob=" + (job ? job : "") +
                           "\nstarted=" + started_ + "\nheartbeat=" + std::to_string(last_beat_) +
                           "\ncommand=" + command + "\n";
  // Written over the old text, then cut to length, so that a reader never
  // sees an empty file (in heartbeat mode that would read as a dead
  // holder). Best effort: the text informs; the record lock excludes.
  if (pwrite(fd_, text.data(), text.size(), 0) == static_cast<ssize_t>(text.size()))
    (void)!ftruncate(fd_, static_cast<off_t>(text.size()));
}

void OutputLock::heartbeat() {
  if (fd_ >= 0 && std::time(nullptr) - last_beat_ >= 5) write_text();
}

void OutputLock::release() {
  if (fd_ < 0) return;
  // Unlinked while still held, so nobody can lock the old file and think
  // they hold the name (they check the inode after locking).
  ::unlink(path_.c_str());
  ::close(fd_);
  fd_ = -1;
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
