// Built instead of solver/cuda/lab_kernels.cu when the laboratory is built
// without CUDA: the CPU engine only.
#include "core/error.hpp"
#include "solver/lab/lab.hpp"

namespace tdsolve::lab {

std::unique_ptr<LabEngine> make_cuda_lab() {
  throw UsageError(
      "--backend cuda: this tdsolve was built without CUDA (rebuild with the CUDA toolkit)");
}

}  // namespace tdsolve::lab
