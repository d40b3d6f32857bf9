// guard_output_file (solver/driver.hpp): a failed write of the output file
// ends the job from the MPI-IO call that failed.
//
// Parallel HDF5 writes through MPI-IO: MPI_File_write_at(_all) for data and
// metadata, MPI_File_set_size and MPI_File_sync when it flushes. When such
// a call fails on one rank (a full disk), HDF5 reports it there, but first
// goes on along its error path, and that path differs from the path of the
// ranks whose writes went through: inside H5Fflush the failed rank skips the
// barrier of the metadata cache's sync point and enters MPI_File_set_size's,
// while the others wait in the first; a rank whose dataset allocation fails
// closes the file (collectively) while the others wait for it in the next
// step. Both hang the job, inside HDF5, where no exchange of status after
// the call can reach. Worse, MPI-IO does not always say that a write failed:
// Open MPI's OMPIO reports a full disk in a plain write as success with a
// short count, and in a collective write (its vulcan component) as success
// with the full count, the data not written.
//
// So the guard watches two levels, and the rank that fails ends the job
// before HDF5 takes one more step:
// - the system calls: this file defines the write calls of the C library
//   (pwrite, pwritev, write, ... forwarding to the next definition, the C
//   library's); one that fails on the output file (the same device and
//   inode) is recorded;
// - the MPI-IO calls HDF5 makes (MPI's profiling interface: these forward to
//   the PMPI_ versions): on return, a call on the output's handle that
//   failed, wrote less than it was given, or during which a write of the
//   file failed, calls abort_run, outside MPI.
// The executable's definitions take the place of the libraries' for libhdf5
// and Open MPI's components too (the linker exports them:
// solver/CMakeLists.txt).
#include <dlfcn.h>
#include <mpi.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "solver/driver.hpp"
#include "solver/mpi_util.hpp"

namespace tdsolve {

namespace {

MPI_File g_file = MPI_FILE_NULL;  // the guarded handle
MPI_Comm g_comm = MPI_COMM_NULL;
std::string g_output;                 // for the line
std::atomic<bool> g_watching{false};  // g_dev and g_ino are set
dev_t g_dev = 0;                      // the file's device and inode
ino_t g_ino = 0;
std::atomic<int> g_write_errno{0};  // the first failed write of the file
std::atomic<const char*> g_write_call{nullptr};

// Sent by a rank that failed to every rank above it (the run's communicator
// carries no other point-to-point message).
constexpr int kFailedTag = 0x7d5;

// rc: the MPI call's error code (MPI_SUCCESS: it said nothing failed); err:
// the errno of the failed write, or 0. Returns (a run in process, one rank:
// fails_locally) the error for the call to give HDF5; else ends the job.
int failed(const char* call, int rc, int err) {
  std::string why = "the file system took fewer bytes than it was given";
  if (err) {
    why = std::strerror(err);
  } else if (rc != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING] = {};
    int length = 0;
    MPI_Error_string(rc, text, &length);
    why = text;
  }
  const char* inner = g_write_call.load();
  const std::string line = "writing the output '" + g_output + "' failed: " + why + " (" + call +
                           (inner ? std::string(", ") + inner : std::string()) + ")";
  if (fails_locally(g_comm)) {
    note_local_failure(line);
    return rc != MPI_SUCCESS ? rc : MPI_ERR_IO;
  }
  // When several ranks fail together, the lowest prints the one line: each
  // tells the ranks above it, and a rank that hears from one below within a
  // few seconds leaves the line and the MPI_Abort to it.
  const int rank = comm_rank(g_comm), ranks = comm_size(g_comm);
  std::vector<MPI_Request> told(static_cast<size_t>(ranks - rank - 1), MPI_REQUEST_NULL);
  for (int r = rank + 1; r < ranks; ++r)
    MPI_Isend(nullptr, 0, MPI_BYTE, r, kFailedTag, g_comm, &told[r - rank - 1]);
  const auto t0 = std::chrono::steady_clock::now();
  const auto waited = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  int flag = 0;
  if (rank == 0) {
    // Let the notices leave before the abort.
    while (!told.empty() && !flag && waited() < 0.1) {
      MPI_Testall(static_cast<int>(told.size()), told.data(), &flag, MPI_STATUSES_IGNORE);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  } else {
    while (!flag && waited() < 2.0) {
      MPI_Iprobe(MPI_ANY_SOURCE, kFailedTag, g_comm, &flag, MPI_STATUS_IGNORE);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    // A rank below failed too: its MPI_Abort ends this one (or, should it
    // not come, this rank's own, after 30 s).
    while (flag && waited() < 30)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  abort_run(g_comm, line);
}

bool guarded(MPI_File fh) {
  return fh != MPI_FILE_NULL && fh == g_file;
}

// After an MPI-IO call on the output: fails unless it succeeded, took every
// item (writes: count items of `type`) and no write of the file failed.
// Returns the code for the call to return.
int check_call(const char* call, int rc, int count = 0, MPI_Datatype type = MPI_BYTE,
               const MPI_Status* status = nullptr) {
  int written = count;
  if (rc == MPI_SUCCESS && status && count > 0 &&
      MPI_Get_count(status, type, &written) != MPI_SUCCESS)
    written = MPI_UNDEFINED;
  const int err = g_write_errno.load();
  if (rc != MPI_SUCCESS || written != count || err != 0) return failed(call, rc, err);
  return rc;
}

// A system call's failed write: recorded when it was to the output file.
void note_failure(int fd, const char* call) {
  const int err = errno;
  if (err == EINTR || err == EAGAIN || !g_watching.load()) return;
  struct stat st {};
  if (fstat(fd, &st) == 0 && st.st_dev == g_dev && st.st_ino == g_ino) {
    int none = 0;
    if (g_write_errno.compare_exchange_strong(none, err ? err : EIO)) g_write_call.store(call);
  }
  errno = err;
}

template <typename F>
F next(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

}  // namespace

void guard_output_file(MPI_Comm comm, MPI_File file, const std::string& path,
                       const std::string& output) {
  g_comm = comm;
  g_file = file;
  g_output = output;
  // A new output starts clean (a process that runs several commands, in
  // process, may have seen an earlier one's write fail).
  g_watching.store(false);
  g_write_errno.store(0);
  g_write_call.store(nullptr);
  struct stat st {};
  if (stat(path.c_str(), &st) == 0) {
    g_dev = st.st_dev;
    g_ino = st.st_ino;
    g_watching.store(true);
  }
}

}  // namespace tdsolve

using tdsolve::check_call;
using tdsolve::guarded;
using tdsolve::next;
using tdsolve::note_failure;

extern "C" {

// ---- the C library's writes -------------------------------------------------

#define TDS_WRITE(ret, name, params, args, fd)           \
  ret name params {                                      \
    static const auto real = next<ret(*) params>(#name); \
    if (!real) {                                         \
      errno = ENOSYS;                                    \
      return -1;                                         \
    }                                                    \
    const ret r = real args;                             \
    if (r < 0) note_failure(fd, #name);                  \
    return r;                                            \
  }

TDS_WRITE(ssize_t, write, (int fd, const void* buf, size_t n), (fd, buf, n), fd)
TDS_WRITE(ssize_t, pwrite, (int fd, const void* buf, size_t n, off_t at), (fd, buf, n, at), fd)
TDS_WRITE(ssize_t, pwrite64, (int fd, const void* buf, size_t n, off64_t at), (fd, buf, n, at), fd)
TDS_WRITE(ssize_t, writev, (int fd, const struct iovec* v, int n), (fd, v, n), fd)
TDS_WRITE(ssize_t, pwritev, (int fd, const struct iovec* v, int n, off_t at), (fd, v, n, at), fd)
TDS_WRITE(ssize_t, pwritev64, (int fd, const struct iovec* v, int n, off64_t at), (fd, v, n, at),
          fd)
#undef TDS_WRITE

// ---- the MPI-IO calls parallel HDF5 makes -------------------------------------

int MPI_File_write_at(MPI_File fh, MPI_Offset offset, const void* buf, int count,
                      MPI_Datatype datatype, MPI_Status* status) {
  if (!guarded(fh)) return PMPI_File_write_at(fh, offset, buf, count, datatype, status);
  MPI_Status mine;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &mine : status;
  const int rc = PMPI_File_write_at(fh, offset, buf, count, datatype, st);
  return check_call("MPI_File_write_at", rc, count, datatype, st);
}

int MPI_File_write_at_all(MPI_File fh, MPI_Offset offset, const void* buf, int count,
                          MPI_Datatype datatype, MPI_Status* status) {
  if (!guarded(fh)) return PMPI_File_write_at_all(fh, offset, buf, count, datatype, status);
  MPI_Status mine;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &mine : status;
  const int rc = PMPI_File_write_at_all(fh, offset, buf, count, datatype, st);
  return check_call("MPI_File_write_at_all", rc, count, datatype, st);
}

int MPI_File_sync(MPI_File fh) {
  const int rc = PMPI_File_sync(fh);
  return guarded(fh) ? check_call("MPI_File_sync", rc) : rc;
}

int MPI_File_set_size(MPI_File fh, MPI_Offset size) {
  const int rc = PMPI_File_set_size(fh, size);
  return guarded(fh) ? check_call("MPI_File_set_size", rc) : rc;
}

}  // extern "C"
