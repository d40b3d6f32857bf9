// tdsolve fractal: the command (one MPI rank; the state lives on one device).
#pragma once

#include <mpi.h>

#include <string>

#include "solver/fractal/fractal.hpp"
#include "solver/options.hpp"

namespace tdsolve::fractal {

struct FractalOptions {
  std::string shape, rule = "B3/S23", init = "random:0.5:1", input;
  int level = -1;
  long steps = 0, snapshot_every = 0;
  EngineOptions engine;
  BackendKind backend = BackendKind::automatic;
  OutputOptions out;
  RunOptions run;
  bool bench = false;  // time the steps; write no file
  int repeat = 3;
  std::string csv;
};

// Returns 0 (complete) or kStoppedExitCode (stopped cleanly, resumable).
int run_fractal(const FractalOptions& o, MPI_Comm comm);

// --init random:DENSITY:SEED; throws UsageError.
RandomInit parse_random_init(const std::string& text);

}  // namespace tdsolve::fractal
