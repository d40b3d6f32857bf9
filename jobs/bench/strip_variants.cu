// The strip kernel alone (λ2, euclidean, float32, d = 1..4, strips of 16, 32
// and 64 rows) next to cudaMemset, to compare builds of it: the piece a row
// (TDS_STRIP_BYTES) and the blocks an SM the registers must allow
// (TDS_STRIP_MIN_BLOCKS). docs/figures/strip-variants-h200.csv came from
//   A: 4096 bytes, 3 blocks (the shipped build)   B: 2048, 4
//   C: 2048, 6 (40 registers, no spills)           D: 4096, 5
// built with the include flags of the tdsolve_cuda target:
//   nvcc -DOMPI_SKIP_MPICXX=1 --options-file
//   build/solver/CMakeFiles/tdsolve_cuda.dir/includes_CUDA.rsp \
//     -O3 -DNDEBUG -arch=sm_90 --fmad=false --expt-relaxed-constexpr -std=c++17 \
//     -DTDS_STRIP_BYTES=2048 -DTDS_STRIP_MIN_BLOCKS=6 -o strip_variants
//     jobs/bench/strip_variants.cu
//   ./strip_variants 100000 C     # n, a tag for the CSV's first column
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "solver/cuda/block_kernels.cuh"
using namespace tdsolve;
using namespace tdsolve::cuda;
using E = metric::Euclidean<float>;
__global__ void fill(float* a, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    unsigned long long x = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    a[i] = float(x >> 40) / float(1 << 24);
  }
}
template <int D>
void one(index_t n, int h, float* out, double mset, int reps, const char* tag) {
  float* a;
  cudaMalloc(&a, size_t(n) * D * 4);
  fill<<<1024, 256>>>(a, size_t(n) * D, 7u + D);
  KernelParams<float> p{};
  p.a = a;
  p.b = a;
  p.rows = n;
  p.cols = n;
  p.d = D;
  p.rho = 128;
  p.m = (n + 127) / 128;
  p.out = out;
  p.mp.metric = Metric::euclidean;
  p.strips = true;
  p.strip_layout = mapping::StripLayout(n, h, BlockPolicy::strip_cols<float>());
  const index_t bands = (n + h - 1) / h;
  const index_t cnt = p.strip_layout.before(bands * h);
  p.strip_grid = mapping::Grid{cnt, 1, 0};
  auto k = strip_kernel<float, E, D, mapping::Lambda2Map>;
  cudaFuncAttributes fa;
  cudaFuncGetAttributes(&fa, k);
  const size_t smem = sizeof(detail::StripShared<float, D, false>);
  cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
  int occ = 0;
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, k, 256, smem);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  launch_strips<float, E, D, mapping::Lambda2Map>(p, 0);
  cudaDeviceSynchronize();
  std::vector<float> ms;
  for (int r = 0; r < reps; ++r) {
    cudaEventRecord(e0);
    launch_strips<float, E, D, mapping::Lambda2Map>(p, 0);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float t;
    cudaEventElapsedTime(&t, e0, e1);
    ms.push_back(t);
  }
  if (cudaGetLastError() != cudaSuccess) {
    printf("error\n");
    exit(1);
  }
  std::sort(ms.begin(), ms.end());
  printf("%s,%lld,%d,%d,%d regs,%zu smem,%d blocks/SM,%.3f ms,%.1f %%\n", tag, (long long)n, D, h,
         fa.numRegs, smem, occ, ms[ms.size() / 2], 100 * mset / ms[ms.size() / 2]);
  fflush(stdout);
  cudaFree(a);
}
int main(int argc, char** argv) {
  const index_t n = argc > 1 ? atoll(argv[1]) : 100000;
  const char* tag = argc > 2 ? argv[2] : "?";
  const size_t m = size_t(n) * (n - 1) / 2;
  float* out;
  cudaMalloc(&out, m * 4);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::vector<float> ms;
  for (int r = 0; r < 6; ++r) {
    cudaEventRecord(e0);
    cudaMemsetAsync(out, 0, m * 4);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float t;
    cudaEventElapsedTime(&t, e0, e1);
    ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  const double mset = ms[3];
  for (int h : {16, 32, 64}) {
    one<1>(n, h, out, mset, 7, tag);
    one<2>(n, h, out, mset, 7, tag);
    one<3>(n, h, out, mset, 7, tag);
    one<4>(n, h, out, mset, 7, tag);
  }
}
