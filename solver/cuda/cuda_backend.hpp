// The CUDA backend as the rest of the program sees it: no CUDA types here,
// so MPI/HDF5 code stays in .cpp files and CUDA in .cu files.
#pragma once

#include <string>

#include "solver/backend.hpp"

namespace tdsolve::cuda {

struct CudaOptions {
  int device = -1;  // -1: node-local rank modulo the visible devices
  int local_rank = 0, local_ranks = 1;
};

// Whether this build has the CUDA backend at all.
bool built_with_cuda();
// Visible CUDA devices; 0 when none (or no CUDA build). Never throws.
int device_count();
// Why device_count() is 0, for messages.
std::string no_device_reason();

template <typename T>
std::unique_ptr<Backend<T>> make_cuda_backend(const Problem<T>& problem,
                                              const CudaOptions& options);
// The triplet problem's backend (solver/cuda/triplet_backend.cu).
template <typename T>
std::unique_ptr<Backend<T>> make_cuda_triplet_backend(const Problem<T>& problem,
                                                      const CudaOptions& options);

// adf's angle histograms over the triplet domain (solver/cuda/adf_backend.cu).
template <typename T>
std::unique_ptr<Backend<T>> make_cuda_adf_backend(const Problem<T>& problem,
                                                  const CudaOptions& options);

// A culled pair domain built on the rank's GPU (solver/cuda/cull_build.cu):
// the list build_culled makes, tile for tile. False when it cannot (no
// device, minkowski's pow, 2^31 points or more, d > 8, out of GPU memory):
// the host builds it then. *built: build_culled's verdict.
template <typename T>
bool build_culled_on_device(const T* pts, index_t n, index_t d, index_t rho, const CullGeometry& g,
                            index_t max_tiles, const CudaOptions& o, Culled* c, bool* built);

}  // namespace tdsolve::cuda
