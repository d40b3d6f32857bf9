/* enospc_preload.c: an LD_PRELOAD shim that makes a disk look full for one file.
 *
 *   TDSOLVE_ENOSPC_PATH   fnmatch(3) patterns (no flags), one per line, matched
 *                         against the absolute path of the file a descriptor refers to
 *                         (readlink of /proc/self/fd/N). Without wildcards it is
 *                         the exact path, so "/tmp/x/out.h5" does not also hit
 *                         Open MPI's "/tmp/x/out.h5.locktest.0" or its shared-
 *                         memory files. Unset or empty: the shim does nothing.
 *   TDSOLVE_ENOSPC_AFTER  bytes the process may write to matching files in all
 *                         (default 0). A write that would take the total past
 *                         it writes nothing and fails with ENOSPC, as do all
 *                         later ones. Zero-length writes succeed.
 *   TDSOLVE_ENOSPC_CALL   K >= 1: instead of a byte budget, the K-th write
 *                         (call) to matching files fails with ENOSPC, and
 *                         every later one; the earlier ones go through
 *                         whatever their size. So a test can fail each write
 *                         a run makes in turn. K = 0 with TDSOLVE_ENOSPC_COUNT:
 *                         no write fails (a clean run, counted).
 *   TDSOLVE_ENOSPC_RANK   R: only the process of MPI rank R (OMPI_COMM_WORLD_RANK)
 *                         fails writes; the others write freely (counted).
 *                         Unset or empty: every process. So a test can make
 *                         one rank alone meet the full disk.
 *   TDSOLVE_ENOSPC_COUNT  a file: at exit the process appends one line,
 *                         "RANK WRITES REFUSED": its MPI rank
 *                         (OMPI_COMM_WORLD_RANK, or - for a process run
 *                         alone), the writes to matching files it let through
 *                         and those it failed; mpirun's own processes (no
 *                         rank, no write) append nothing, nor does a process
 *                         that ends by MPI_Abort or a signal. A process that
 *                         exits normally after a failed write ignored it.
 *
 * The budget and the count are per process: under mpirun each rank has its own.
 *
 * Intercepted: write, pwrite, pwrite64, writev, pwritev, pwritev64, pwritev2,
 * pwritev64v2, aio_write and aio_write64. That covers what Open MPI 4.1
 * imports (OMPIO's fbtl_posix: pwrite, pwritev, aio_write; ROMIO: write,
 * pwrite) and HDF5's sec2 driver (pwrite, write); strace of tdsolve edm on 2
 * ranks shows only pwrite64 and pwritev on the output file. Writes made inside
 * glibc (fwrite's internal flush) cannot be interposed; none of the above
 * writes the output file that way, and none imports fallocate.
 *
 * Used by tests/e2e/test_faults.py, which finds the built library in
 * $TDSOLVE_ENOSPC_PRELOAD (or compiles this file itself when that is unset).
 *
 * Build: gcc -shared -fPIC -O2 -o libenospc_preload.so enospc_preload.c -ldl
 * Use:   LD_PRELOAD=$PWD/libenospc_preload.so TDSOLVE_ENOSPC_PATH=/tmp/o.h5 \
 *        TDSOLVE_ENOSPC_AFTER=65536 mpirun -n 2 tdsolve edm ... --output /tmp/o.h5
 */
#define _GNU_SOURCE
#include <aio.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

static const char* pattern;                 /* NULL: inactive */
static unsigned long long budget;           /* TDSOLVE_ENOSPC_AFTER */
static unsigned long long fail_call;        /* TDSOLVE_ENOSPC_CALL (0: by bytes) */
static const char* count_file;              /* TDSOLVE_ENOSPC_COUNT */
static int exempt;                          /* TDSOLVE_ENOSPC_RANK names another rank */
static _Atomic unsigned long long written;  /* bytes let through to matching files */
static _Atomic unsigned long long calls;    /* writes let through to matching files */
static _Atomic unsigned long long refused;  /* writes failed */
static pthread_once_t once = PTHREAD_ONCE_INIT;

static ssize_t (*real_write)(int, const void*, size_t);
static ssize_t (*real_pwrite)(int, const void*, size_t, off_t);
static ssize_t (*real_pwrite64)(int, const void*, size_t, off64_t);
static ssize_t (*real_writev)(int, const struct iovec*, int);
static ssize_t (*real_pwritev)(int, const struct iovec*, int, off_t);
static ssize_t (*real_pwritev64)(int, const struct iovec*, int, off64_t);
static ssize_t (*real_pwritev2)(int, const struct iovec*, int, off_t, int);
static ssize_t (*real_pwritev64v2)(int, const struct iovec*, int, off64_t, int);
static int (*real_aio_write)(struct aiocb*);
static int (*real_aio_write64)(struct aiocb64*);

static void init(void) {
  real_write = dlsym(RTLD_NEXT, "write");
  real_pwrite = dlsym(RTLD_NEXT, "pwrite");
  real_pwrite64 = dlsym(RTLD_NEXT, "pwrite64");
  real_writev = dlsym(RTLD_NEXT, "writev");
  real_pwritev = dlsym(RTLD_NEXT, "pwritev");
  real_pwritev64 = dlsym(RTLD_NEXT, "pwritev64");
  real_pwritev2 = dlsym(RTLD_NEXT, "pwritev2");
  real_pwritev64v2 = dlsym(RTLD_NEXT, "pwritev64v2");
  real_aio_write = dlsym(RTLD_NEXT, "aio_write");
  real_aio_write64 = dlsym(RTLD_NEXT, "aio_write64");
  const char* p = getenv("TDSOLVE_ENOSPC_PATH");
  const char* a = getenv("TDSOLVE_ENOSPC_AFTER");
  const char* k = getenv("TDSOLVE_ENOSPC_CALL");
  const char* c = getenv("TDSOLVE_ENOSPC_COUNT");
  pattern = (p && *p) ? p : NULL;
  budget = a ? strtoull(a, NULL, 10) : 0;
  fail_call = (k && *k) ? strtoull(k, NULL, 10) : 0;
  count_file = (c && *c) ? c : NULL;
  if (k && *k && !a) budget = ~0ULL; /* by calls only */
  const char* only = getenv("TDSOLVE_ENOSPC_RANK");
  const char* rank = getenv("OMPI_COMM_WORLD_RANK");
  exempt = only && *only && !(rank && strcmp(only, rank) == 0);
  if (exempt) {
    budget = ~0ULL;
    fail_call = 0;
  }
}

/* TDSOLVE_ENOSPC_COUNT: the writes made, appended at exit. */
__attribute__((destructor)) static void report_calls(void) {
  pthread_once(&once, init);
  if (!count_file || !real_write) return;
  const int fd = open(count_file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const char* rank = getenv("OMPI_COMM_WORLD_RANK");
  const unsigned long long made = atomic_load(&calls), failed = atomic_load(&refused);
  char line[80];
  const int n = snprintf(line, sizeof line, "%s %llu %llu\n", rank ? rank : "-", made, failed);
  if ((rank || made > 0) && n > 0) (void)real_write(fd, line, (size_t)n);
  close(fd);
}

static int matches(int fd) {
  if (!pattern || fd < 0) return 0;
  char link[64], path[PATH_MAX];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof path - 1);
  if (n <= 0) return 0;
  path[n] = '\0';
  /* Each line of the pattern text is one pattern. */
  for (const char* p = pattern; *p;) {
    const char* end = strchr(p, '\n');
    const size_t len = end ? (size_t)(end - p) : strlen(p);
    char one[PATH_MAX];
    if (len < sizeof one) {
      memcpy(one, p, len);
      one[len] = '\0';
      if (len > 0 && fnmatch(one, path, 0) == 0) return 1;
    }
    if (!end) break;
    p = end + 1;
  }
  return 0;
}

/* 1: `count` more bytes may be written to fd (and are now counted); 0: refused,
 * errno = ENOSPC. Resolves the real functions on first use. */
static int admit(int fd, size_t count) {
  pthread_once(&once, init);
  if (count == 0 || !matches(fd)) return 1;
  if (fail_call > 0) {
    unsigned long long made = atomic_load(&calls);
    do {
      if (made + 1 >= fail_call) {
        atomic_fetch_add(&refused, 1);
        errno = ENOSPC;
        return 0;
      }
    } while (!atomic_compare_exchange_weak(&calls, &made, made + 1));
    return 1;
  }
  unsigned long long cur = atomic_load(&written);
  do {
    if (cur > budget || count > budget - cur) {
      atomic_fetch_add(&refused, 1);
      errno = ENOSPC;
      return 0;
    }
  } while (!atomic_compare_exchange_weak(&written, &cur, cur + count));
  atomic_fetch_add(&calls, 1);
  return 1;
}

static size_t iov_bytes(const struct iovec* iov, int n) {
  size_t s = 0;
  for (int i = 0; i < n; ++i) s += iov[i].iov_len;
  return s;
}

#define FORWARD(real, fd, bytes, ...)       \
  if (!admit(fd, bytes)) return -1;         \
  if (!real) {                              \
    errno = ENOSYS;                         \
    return -1;                              \
  }                                         \
  return real(__VA_ARGS__)

ssize_t write(int fd, const void* buf, size_t count) {
  FORWARD(real_write, fd, count, fd, buf, count);
}
ssize_t pwrite(int fd, const void* buf, size_t count, off_t off) {
  FORWARD(real_pwrite, fd, count, fd, buf, count, off);
}
ssize_t pwrite64(int fd, const void* buf, size_t count, off64_t off) {
  FORWARD(real_pwrite64, fd, count, fd, buf, count, off);
}
ssize_t writev(int fd, const struct iovec* iov, int n) {
  FORWARD(real_writev, fd, iov_bytes(iov, n), fd, iov, n);
}
ssize_t pwritev(int fd, const struct iovec* iov, int n, off_t off) {
  FORWARD(real_pwritev, fd, iov_bytes(iov, n), fd, iov, n, off);
}
ssize_t pwritev64(int fd, const struct iovec* iov, int n, off64_t off) {
  FORWARD(real_pwritev64, fd, iov_bytes(iov, n), fd, iov, n, off);
}
ssize_t pwritev2(int fd, const struct iovec* iov, int n, off_t off, int flags) {
  FORWARD(real_pwritev2, fd, iov_bytes(iov, n), fd, iov, n, off, flags);
}
ssize_t pwritev64v2(int fd, const struct iovec* iov, int n, off64_t off, int flags) {
  FORWARD(real_pwritev64v2, fd, iov_bytes(iov, n), fd, iov, n, off, flags);
}
/* Refused at submission: aio_write returns -1, as when a request cannot be
 * queued; callers treat that as a failed write. */
int aio_write(struct aiocb* cb) {
  FORWARD(real_aio_write, cb->aio_fildes, cb->aio_nbytes, cb);
}
int aio_write64(struct aiocb64* cb) {
  FORWARD(real_aio_write64, cb->aio_fildes, cb->aio_nbytes, cb);
}
