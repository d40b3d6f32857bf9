// Device-side checks for the GPU tests: the λ2 unranking as kernels run it
// (float32 rsqrtf estimate below 2^24, float64 above, then the correction).
#include <cuda_runtime.h>

#include "device_checks.hpp"
#include "mapping/lambda2.hpp"
#include "mapping/tetra.hpp"

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

// Layers r: Te(r) ± 1 through tet_root, and the tile at each layer's first
// ω mapped back to that ω (λ3 as a kernel runs it: cbrtf estimate while 6ω
// is small, cbrt beyond, then the integer correction).
__global__ void tet_root_boundaries(index_t first_layer, index_t last_layer, index_t m,
                                    unsigned long long* failures) {
  for (index_t r = first_layer + blockIdx.x * static_cast<index_t>(blockDim.x) + threadIdx.x;
       r <= last_layer; r += static_cast<index_t>(gridDim.x) * blockDim.x) {
    const index_t t = mapping::tet(r);
    bool ok = mapping::tet_root(t - 1) == r - 1 && mapping::tet_root(t) == r &&
              mapping::tet_root(t + 1) == r;
    if (r < m) {
      const mapping::Tile3 a = mapping::lambda3_tile(m, t), b = mapping::lambda3_tile(m, t - 1);
      // Layer r (reversed) starts at its triangle's (0, 0), i.e. (J, K) =
      // (m-1, m-1); layer r-1 ends at its (r-1, r-1), i.e. (m-r, m-r).
      ok = ok && a.layer == m - 1 - r && a.row == m - 1 && a.col == m - 1 && b.layer == m - r &&
           b.row == m - r && b.col == m - r;
    }
    if (!ok) atomicAdd(failures, 1ull);
  }
}
}  // namespace

unsigned long long count_tet_root_failures(index_t first_layer, index_t last_layer) {
  unsigned long long* d = nullptr;
  unsigned long long h = ~0ull;
  if (cudaMalloc(&d, sizeof h) != cudaSuccess) return h;
  cudaMemset(d, 0, sizeof h);
  tet_root_boundaries<<<4096, 256>>>(first_layer, last_layer, last_layer + 1, d);
  if (cudaDeviceSynchronize() == cudaSuccess) cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost);
  cudaFree(d);
  return h;
}

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
