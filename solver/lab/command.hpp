// tdsolve bench --problem dummy|edm|collide: the map laboratory's sweep
// (solver/lab/lab.hpp): for each --features and --n, every map of --maps
// (and BB, the reference) timed on the same data, one line each and one CSV
// row a map, with each map's coverage checked.
#pragma once

#include <mpi.h>

#include <string>

#include "solver/options.hpp"

namespace tdsolve {

void run_lab(const LabOptions& o, int repeat, const std::string& csv, MPI_Comm comm);

}  // namespace tdsolve
