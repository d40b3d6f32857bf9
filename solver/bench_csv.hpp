// What the benchmarks share (bench, the map laboratory, fractal --bench):
// the median of their timed runs and their --csv file, appended to a row at
// a time with the header written first when the file is new or empty.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace tdsolve {

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

struct CsvClose {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using CsvFile = std::unique_ptr<std::FILE, CsvClose>;

// Opens `path` for appending; throws InputError naming it when it cannot, or
// when it is not a regular file (a FIFO is refused, never waited on).
// `size`: the file's length before this run's rows (for close_bench_csv).
inline CsvFile open_bench_csv(const std::string& path, const char* header, off_t* size = nullptr) {
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    throw InputError("--csv '" + path + "' is not a regular file");
  const int fd =
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0666);
  if (fd < 0) throw InputError("cannot append to --csv '" + path + "': " + std::strerror(errno));
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw InputError("--csv '" + path + "' is not a regular file");
  }
  CsvFile f(fdopen(fd, "a"));
  if (!f) {
    const int e = errno;
    ::close(fd);
    throw InputError("cannot append to --csv '" + path + "': " + std::strerror(e));
  }
  if (size) *size = st.st_size;
  if (st.st_size == 0) std::fputs(header, f.get());
  return f;
}

// Closes a file of open_bench_csv. When its rows did not all reach the file
// (a full disk: the C library writes them here), the file is cut back to
// `size`, its length before them, so no half row stays, and InputError says
// why.
inline void close_bench_csv(CsvFile& f, const std::string& path, off_t size) {
  std::FILE* fp = f.release();
  if (!fp) return;
  bool failed = std::fflush(fp) != 0 || std::ferror(fp) != 0;
  int e = failed ? errno : 0;
  if (failed) (void)ftruncate(fileno(fp), size);
  if (std::fclose(fp) != 0 && !failed) {
    failed = true;
    e = errno;
    (void)::truncate(path.c_str(), size);
  }
  if (failed)
    throw InputError("writing --csv '" + path + "' failed: " + std::strerror(e ? e : EIO) +
                     " (its earlier rows are kept)");
}

}  // namespace tdsolve
