// Unit tests run as one MPI process (singleton): the HDF5 writer needs MPI.
#include <gtest/gtest.h>
#include <mpi.h>

#include "io/h5.hpp"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // Listing the tests (ctest's discovery at build time) starts no MPI.
  if (::testing::GTEST_FLAG(list_tests)) return RUN_ALL_TESTS();
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  tdsolve::io::quiet_hdf5_errors();
  const int result = RUN_ALL_TESTS();
  MPI_Finalize();
  return result;
}
