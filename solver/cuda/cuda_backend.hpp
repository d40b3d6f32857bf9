// The CUDA backend as the rest of the program sees it: no CUDA types here,
// so MPI/HDF5 code stays in .cpp files and CUDA in .cu files.
#pragma once

#include <string>

#include "mapping/partition.hpp"
#include "solver/backend.hpp"

namespace tdsolve::cuda {

struct CudaOptions {
  int device = -1;            // -1: node-local rank modulo the visible devices
  bool bounding_box = false;  // --map bb: the bounding-box grid, for comparison
  int local_rank = 0, local_ranks = 1;
};

// Whether this build has the CUDA backend at all.
bool built_with_cuda();
// Visible CUDA devices; 0 when none (or no CUDA build). Never throws.
int device_count();
// Why device_count() is 0, for messages.
std::string no_device_reason();

template <typename T>
std::unique_ptr<EdmBackend<T>> make_cuda_backend(const EdmProblem<T>& problem,
                                                 const CudaOptions& options);

}  // namespace tdsolve::cuda

namespace tdsolve::cuda {

// Kernel-only timing for `tdsolve bench`: every chunk of `plan` computed into
// one device buffer (no copy to the host, no file), `repeat` times after a
// warm-up, each pass timed with CUDA events; and, over the same bytes in the
// same chunks, the device's write ceiling: cudaMemset and a plain 16-byte
// store kernel.
struct KernelTiming {
  std::string device;
  index_t launches = 0;
  std::vector<double> kernel_ms, memset_ms, store_ms;
};

template <typename T>
KernelTiming time_edm_kernels(const EdmProblem<T>& problem, const CudaOptions& options,
                              const mapping::ChunkPlan& plan, int repeat);

// Largest chunk (pairs of T) one device buffer can hold on the chosen device.
template <typename T>
index_t device_buffer_elements(const CudaOptions& options);

}  // namespace tdsolve::cuda
