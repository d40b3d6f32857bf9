// Built instead of the laboratory (solver/lab/command.cpp) when CMake's
// TDSOLVE_LAB is off: bench --problem dummy|edm|collide is a usage error
// that says how to get it.
#include "core/error.hpp"
#include "solver/lab/command.hpp"

namespace tdsolve {

bool lab_available() {
  return false;
}

const char* lab_help_note() {
  return "\n"
         "This tdsolve was built without the map laboratory: --problem dummy|edm|collide\n"
         "is refused. Configure with -DTDSOLVE_LAB=ON to build it.\n";
}

void run_lab(const LabOptions&, int, const std::string&, MPI_Comm) {
  throw UsageError(kLabNotBuilt);
}

}  // namespace tdsolve
