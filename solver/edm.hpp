// `tdsolve edm`: plan, compute and write the packed distance matrix.
#pragma once

#include <mpi.h>

#include <string>

#include "mapping/hd.hpp"
#include "solver/metrics.hpp"

namespace tdsolve {

struct EdmOptions {
  std::string input, generate, output;
  bool overwrite = false;
  Metric metric = Metric::euclidean;
  bool fp64 = false;
  std::string backend = "auto";  // auto | cpu | cuda
  index_t block = 128;
  double chunk_mb = 64;
  int threads = 0;                // 0: cores / node-local ranks
  std::string progress = "auto";  // auto | bar | log | none
  int device = -1;
  std::string map = "lambda";  // lambda | bb (cuda only)
  bool store_points = false;
  std::string stats;    // JSON timing summary path, or ""
  std::string command;  // argv as one line, recorded in the file
  bool quiet = false;
};

// Runs on every rank of `comm`. Throws CollectiveError for problems every
// rank agrees on, anything else for local failures (main aborts then).
void run_edm(const EdmOptions& options, MPI_Comm comm);

}  // namespace tdsolve
