// tdsolve bench --problem dummy|edm|collide: the map laboratory's sweep
// (solver/lab/lab.hpp): for each --features and --n, every map of --maps
// (and BB, the reference) timed on the same data, one line each and one CSV
// row a map, with each map's coverage checked.
//
// The laboratory is built only with the CMake option TDSOLVE_LAB (off by
// default): command.cpp then defines these, else not_built.cpp, whose
// run_lab refuses with kLabNotBuilt.
#pragma once

#include <mpi.h>

#include <string>

#include "solver/options.hpp"

namespace tdsolve {

// The one line a build without the laboratory answers its problems with.
inline constexpr const char* kLabNotBuilt =
    "this tdsolve was built without the map laboratory; configure with -DTDSOLVE_LAB=ON";

// Whether this build has the laboratory (-DTDSOLVE_LAB=ON).
bool lab_available();

// What bench --help adds after its text: nothing with the laboratory, else
// a paragraph saying it is not in this build.
const char* lab_help_note();

void run_lab(const LabOptions& o, int repeat, const std::string& csv, MPI_Comm comm);

}  // namespace tdsolve
