// The commands, each run on every rank of `comm` (bench on one process).
// They throw CollectiveError for problems every rank agrees on; a local
// failure after the output exists ends the job inside (MPI_Abort).
#pragma once

#include <mpi.h>

#include <string>

#include "solver/options.hpp"

namespace tdsolve {

// edm, hist and cross: compute and write one result file. Returns the exit
// code: 0 (complete) or kStoppedExitCode (stopped cleanly, resumable).
int run_command(const CommandOptions& options, MPI_Comm comm);

// The checks every command makes of the paths it writes (the output and its
// companions against the inputs, an existing output without --overwrite, a
// folder that is missing or read-only) and of the free space; UsageError or
// InputError. Also used by tdsolve fractal.
void check_output_paths(const CommandOptions& options);
void check_output_space(const std::string& output, double bytes);

// bench: the same driver loop with a sink that drops the results.
void run_bench(const BenchOptions& options, MPI_Comm comm);

}  // namespace tdsolve
