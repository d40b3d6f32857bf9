#pragma once

#include <cuda_runtime.h>

namespace tdsolve::cuda {
// Throws std::runtime_error "CUDA <what>: <reason>" unless e is cudaSuccess.
void check(cudaError_t e, const char* what);
}  // namespace tdsolve::cuda
