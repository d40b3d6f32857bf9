// lmp with LAMMPS's own compute adf (package EXTRA-COMPUTE, compiled from
// the installed library's source version) registered: Debian 12's liblammps
// is built without that package. Runs the input file of -in as lmp does.
#include <mpi.h>

#include "compute_adf.h"
#include "input.h"
#include "lammps.h"
#include "modify.h"

using namespace LAMMPS_NS;

static Compute* adf_creator(LAMMPS* lmp, int narg, char** arg) {
  return new ComputeADF(lmp, narg, arg);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  auto* lmp = new LAMMPS(argc, argv, MPI_COMM_WORLD);
  (*lmp->modify->compute_map)["adf"] = &adf_creator;
  lmp->input->file();
  delete lmp;
  MPI_Finalize();
}
