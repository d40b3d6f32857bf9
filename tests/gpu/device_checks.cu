// Device-side checks for the GPU tests: the λ2 unranking as kernels run it
// (float32 rsqrtf estimate below 2^24, float64 above, then the correction).
#include <cuda_runtime.h>

#include "device_checks.hpp"
#include "mapping/lambda2.hpp"

namespace tdsolve::gpu_test {

namespace {
__global__ void tri_root_boundaries(index_t first_row, index_t last_row,
                                    unsigned long long* failures) {
  for (index_t r = first_row + blockIdx.x * static_cast<index_t>(blockDim.x) + threadIdx.x;
       r <= last_row; r += static_cast<index_t>(gridDim.x) * blockDim.x) {
    const index_t t = mapping::tri(r);
    const bool ok = mapping::tri_root(t - 1) == r - 1 && mapping::tri_root(t) == r &&
                    mapping::tri_root(t + 1) == r;
    if (!ok) atomicAdd(failures, 1ull);
  }
}
}  // namespace

unsigned long long count_tri_root_failures(index_t first_row, index_t last_row) {
  unsigned long long* d = nullptr;
  unsigned long long h = ~0ull;
  if (cudaMalloc(&d, sizeof h) != cudaSuccess) return h;
  cudaMemset(d, 0, sizeof h);
  tri_root_boundaries<<<4096, 256>>>(first_row, last_row, d);
  if (cudaDeviceSynchronize() == cudaSuccess) cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost);
  cudaFree(d);
  return h;
}

}  // namespace tdsolve::gpu_test
