// Built instead of the CUDA sources when CUDA is off.
#include "io/error.hpp"
#include "solver/cuda/cuda_backend.hpp"

namespace tdsolve::cuda {

bool built_with_cuda() {
  return false;
}
int device_count() {
  return 0;
}
std::string no_device_reason() {
  return "this tdsolve was built without CUDA";
}

template <typename T>
std::unique_ptr<EdmBackend<T>> make_cuda_backend(const EdmProblem<T>&, const CudaOptions&) {
  throw UsageError(
      "--backend cuda: this tdsolve was built without CUDA (rebuild with the CUDA toolkit)");
}

template std::unique_ptr<EdmBackend<float>> make_cuda_backend(const EdmProblem<float>&,
                                                              const CudaOptions&);
template std::unique_ptr<EdmBackend<double>> make_cuda_backend(const EdmProblem<double>&,
                                                               const CudaOptions&);

}  // namespace tdsolve::cuda

namespace tdsolve::cuda {

template <typename T>
KernelTiming time_edm_kernels(const EdmProblem<T>&, const CudaOptions&, const mapping::ChunkPlan&,
                              int) {
  throw UsageError("--backend cuda: this tdsolve was built without CUDA");
}
template <typename T>
index_t device_buffer_elements(const CudaOptions&) {
  throw UsageError("--backend cuda: this tdsolve was built without CUDA");
}
template KernelTiming time_edm_kernels<float>(const EdmProblem<float>&, const CudaOptions&,
                                              const mapping::ChunkPlan&, int);
template KernelTiming time_edm_kernels<double>(const EdmProblem<double>&, const CudaOptions&,
                                               const mapping::ChunkPlan&, int);
template index_t device_buffer_elements<float>(const CudaOptions&);
template index_t device_buffer_elements<double>(const CudaOptions&);

}  // namespace tdsolve::cuda
