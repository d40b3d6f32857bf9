// Options shared by the commands, parsed once (solver/cli.cpp) into these
// structs and enums; the commands never see strings they must re-check.
#pragma once

#include <string>
#include <vector>

#include "solver/problem.hpp"
#include "solver/progress.hpp"

namespace tdsolve {

enum class BackendKind { automatic, cpu, cuda };

// --input SRC | --generate SPEC (and for cross, --with | --with-generate).
struct InputOptions {
  std::string input, generate;
  bool transpose = false;        // the stored array is d × n
  std::vector<index_t> columns;  // the columns to use (empty: all)
  const std::string& spec() const { return input.empty() ? generate : input; }
};

struct OutputOptions {
  std::string output;
  bool overwrite = false;
  bool resume = false;  // continue FILE.h5.partial (or report FILE.h5 complete)
  bool store_points = false;
};

struct ComputeOptions {
  Metric metric = Metric::euclidean;
  bool fp64 = false;
  BackendKind backend = BackendKind::automatic;
  MapKind map = MapKind::lambda;
  index_t block = 128;
  double chunk_mb = 64;  // bench: 0 = as large as memory allows
  int threads = 0;       // 0: OMP_NUM_THREADS, else cores / node-local ranks
  int device = -1;
};

struct RunOptions {
  ProgressMode progress = ProgressMode::log;
  bool quiet = false;
  double max_hours = 0;  // stop cleanly before this much wall time (0: no limit)
  std::string stats;     // JSON timing summary path, or ""
  std::string command;   // argv as one line, recorded in the file
  // Every option's final value, as a config file; recorded in the file.
  std::string effective;
};

struct HistOptions {
  index_t bins = 0;
  double lo = 0, hi = 0;
  int box_dims = 0;
  double box[kMaxBoxDims] = {};
};

// triplet: the three-body potential and what to store.
struct TripletOptions {
  double nu = 1;
  double cutoff = 0, cutoff_triple = 0;  // 0: none
  bool store_triplets = false;
  double store_limit_gb = 16;  // --store-triplets refused above this many GB (0: no limit)
  TripletKernel kernel = TripletKernel::atm;  // bench: atm or dummy3
};

// knn: the k nearest other points of every point, or (radius > 0) every
// pair within a distance.
struct KnnOptions {
  index_t k = 0;       // 0: --radius
  double radius = -1;  // < 0: --k
};

// What one command asks for.
enum class CommandKind { edm, hist, cross, triplet, knn };

struct CommandOptions {
  CommandKind kind = CommandKind::edm;
  InputOptions in, with;  // `with`: cross only
  OutputOptions out;
  ComputeOptions compute;
  RunOptions run;
  HistOptions hist;        // hist only
  TripletOptions triplet;  // triplet only
  KnnOptions knn;          // knn only
};

// bench: the problem of edm (pairs), cross (with --with), hist (with
// --bins) or triplet (--problem atm|dummy3), computed without an output.
struct BenchOptions {
  CommandOptions cmd;
  int repeat = 5;
  std::string csv;  // append one row here
};

}  // namespace tdsolve
