// What the benchmarks share (bench, the map laboratory, fractal --bench):
// the median of their timed runs and their --csv file, appended to a row at
// a time with the header written first when the file is new or empty.
#pragma once

#include <sys/stat.h>

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

// Opens `path` for appending; throws InputError naming it when it cannot.
inline CsvFile open_bench_csv(const std::string& path, const char* header) {
  struct stat st {};
  const bool fresh = stat(path.c_str(), &st) != 0 || st.st_size == 0;
  CsvFile f(std::fopen(path.c_str(), "a"));
  if (!f) throw InputError("cannot append to --csv '" + path + "': " + std::strerror(errno));
  if (fresh) std::fputs(header, f.get());
  return f;
}

}  // namespace tdsolve
