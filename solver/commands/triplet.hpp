// The three-body options of `tdsolve triplet`: --potential, each potential's
// parameters (atm: --nu --cutoff --cutoff-triple; sw: the columns of a
// LAMMPS .sw file) and --store-triplets. They live with the triplet command
// (solver/commands/triplet.cpp), not among the shared groups, because they
// are its potentials' knowledge; bench --problem atm|sw borrows them.
#pragma once

#include <string>
#include <vector>

#include "solver/cli/options.hpp"
#include "solver/options.hpp"

namespace tdsolve {

// The strings of the triplet options until they are checked.
struct TripletChoices {
  std::string potential = "atm";  // --potential (bench: set from --problem)
  std::string cutoff, cutoff_triple;
  std::string nu_types;             // --nu-types A-B-C:NU,... as given
  std::vector<std::string> unused;  // the other potentials' options: not in the effective options
};

// bench: no --potential (bench's --problem names it), no --store-triplets.
cli::po::options_description triplet_group(TripletOptions& t, TripletChoices& c, bool bench);
// Checks the group: the potential (c.potential: atm or sw) and its
// parameters; the other potential's options are refused when given, and
// named in c.unused.
void finish_triplet(TripletOptions& t, TripletChoices& c, const cli::po::variables_map& vm);

}  // namespace tdsolve
