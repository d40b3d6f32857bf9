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

}  // namespace tdsolve::cuda
