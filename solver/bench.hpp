// `tdsolve bench`: kernel-only throughput of the EDM compute (no file), for
// comparing maps, precisions and feature counts against the write ceiling.
#pragma once

#include <string>

#include "mapping/hd.hpp"
#include "solver/metrics.hpp"

namespace tdsolve {

struct BenchOptions {
  std::string input, generate;
  Metric metric = Metric::euclidean;
  bool fp64 = false;
  std::string backend = "auto";
  std::string map = "lambda";
  index_t block = 128;
  double chunk_mb = 0;  // 0: as large as one device (or host) buffer allows
  int repeat = 5;
  int device = -1;
  int threads = 0;
  std::string csv;  // append one row here
};

void run_bench(const BenchOptions& options);

}  // namespace tdsolve
