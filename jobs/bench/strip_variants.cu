// The strip kernels alone (euclidean, float32, d = 1..4, strips of 16, 32
// and 64 rows, λ2 and BB) next to cudaMemset: "shared" (strip_store: the
// columns staged in shared memory, each warp's row through a shared buffer)
// and "lanes" (strip_lanes_store: the columns in registers, each thread's
// 16-byte piece computed in place). Every run's output is poisoned first and
// digested after; a digest that differs between runs of one (n, d) fails
// the program (exit 1). Small n (arguments 3 on) check the edges the same
// way, with 8, 16, 64 and 128 rows, without timing. Build-time knobs: the
// piece a row (TDS_STRIP_BYTES; lanes needs 4096) and the blocks an SM the
// shared kernel's registers must allow (TDS_STRIP_MIN_BLOCKS). Built with
// the include flags of the tdsolve_cuda target:
//   nvcc -DOMPI_SKIP_MPICXX=1 --options-file
//   build/solver/CMakeFiles/tdsolve_cuda.dir/includes_CUDA.rsp \
//     -O3 -DNDEBUG -arch=sm_90 --fmad=false --expt-relaxed-constexpr -std=c++17 \
//     -o strip_variants jobs/bench/strip_variants.cu
//   ./strip_variants 100000 TAG [small n ...]   # TAG: the CSV's first column
// docs/figures/lanes-*.csv came from builds of this file (performance.md).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <vector>
#include "solver/cuda/block_kernels.cuh"
using namespace tdsolve;
using namespace tdsolve::cuda;
using E = metric::Euclidean<float>;
#define CK(x)                                                                 \
  do {                                                                        \
    cudaError_t e_ = (x);                                                     \
    if (e_ != cudaSuccess) {                                                  \
      printf("CUDA error %s at line %d\n", cudaGetErrorString(e_), __LINE__); \
      exit(1);                                                                \
    }                                                                         \
  } while (0)
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
// Order-dependent digest: sum of mix(index, bits) over the buffer.
__global__ void digest(const unsigned* v, size_t m, unsigned long long* out) {
  unsigned long long s = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < m;
       i += size_t(gridDim.x) * blockDim.x) {
    unsigned long long x = (i * 0x9E3779B97F4A7C15ull) ^ v[i];
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    s += x ^ (x >> 32);
  }
  atomicAdd(out, s);
}
unsigned long long digest_of(const float* out, size_t m) {
  unsigned long long* d;
  CK(cudaMalloc(&d, 8));
  CK(cudaMemset(d, 0, 8));
  digest<<<1024, 256>>>(reinterpret_cast<const unsigned*>(out), m, d);
  unsigned long long h = 0;
  CK(cudaMemcpy(&h, d, 8, cudaMemcpyDeviceToHost));
  CK(cudaFree(d));
  return h;
}
std::map<std::pair<long long, int>, unsigned long long> seen;  // (n, d) -> digest
int failures = 0;
template <int D, typename Map, bool kLanes>
void one(index_t n, int h, float* out, double mset, int reps, const char* tag, const char* map) {
  float* a;
  CK(cudaMalloc(&a, size_t(n) * D * 4));
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
  if constexpr (Map::kOneDimensional)
    p.strip_grid = mapping::Grid{p.strip_layout.before(bands * h), 1, 0};
  else
    p.strip_grid = mapping::Grid{p.strip_layout.mc, bands, 0};
  auto k = strip_kernel<float, E, D, Map, kLanes>;
  cudaFuncAttributes fa;
  CK(cudaFuncGetAttributes(&fa, k));
  const size_t smem = kLanes ? sizeof(detail::StripLaneShared<float, D, false>)
                             : sizeof(detail::StripShared<float, D, false>);
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  int occ = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, k, 256, smem));
  const size_t m = size_t(n) * (n - 1) / 2;
  CK(cudaMemset(out, 0xff, m * 4));
  launch_strips<float, E, D, Map, kLanes>(p, 0);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  const unsigned long long dg = digest_of(out, m);
  auto it = seen.emplace(std::make_pair((long long)n, D), dg).first;
  const bool ok = it->second == dg;
  if (!ok) ++failures;
  float med = 0;
  if (reps > 0) {
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    std::vector<float> ms;
    for (int r = 0; r < reps; ++r) {
      CK(cudaEventRecord(e0));
      launch_strips<float, E, D, Map, kLanes>(p, 0);
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      float t;
      CK(cudaEventElapsedTime(&t, e0, e1));
      ms.push_back(t);
    }
    CK(cudaGetLastError());
    std::sort(ms.begin(), ms.end());
    med = ms[ms.size() / 2];
  }
  printf("%s,%s,%s,%lld,%d,%d,%d,%zu,%d,%.3f,%.1f,%016llx,%s\n", tag, kLanes ? "lanes" : "shared",
         map, (long long)n, D, h, fa.numRegs, smem, occ, med, med > 0 ? 100 * mset / med : 0.0, dg,
         ok ? "same" : "DIFFERENT");
  fflush(stdout);
  CK(cudaFree(a));
}
template <int D>
void all(index_t n, int h, float* out, double mset, int reps, const char* tag) {
  one<D, mapping::Lambda2Map, false>(n, h, out, mset, reps, tag, "lambda2");
  one<D, mapping::Lambda2Map, true>(n, h, out, mset, reps, tag, "lambda2");
  one<D, mapping::BoundingBoxMap, false>(n, h, out, mset, reps, tag, "bb");
  one<D, mapping::BoundingBoxMap, true>(n, h, out, mset, reps, tag, "bb");
}
int main(int argc, char** argv) {
  const index_t n = argc > 1 ? atoll(argv[1]) : 100000;
  const char* tag = argc > 2 ? argv[2] : "?";
  const size_t m = size_t(n) * (n - 1) / 2;
  float* out;
  CK(cudaMalloc(&out, m * 4));
  printf("tag,variant,map,n,d,rows,registers,smem,blocks_per_sm,ms,pct_memset,digest,check\n");
  for (int i = 3; i < argc; ++i) {  // the edges: small n, every strip height
    const index_t s = atoll(argv[i]);
    for (int h : {8, 16, 64, 128}) {
      all<1>(s, h, out, 0, 0, tag);
      all<2>(s, h, out, 0, 0, tag);
      all<3>(s, h, out, 0, 0, tag);
      all<4>(s, h, out, 0, 0, tag);
    }
  }
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<float> ms;
  for (int r = 0; r < 7; ++r) {
    CK(cudaEventRecord(e0));
    CK(cudaMemsetAsync(out, 0, m * 4));
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float t;
    CK(cudaEventElapsedTime(&t, e0, e1));
    ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  const double mset = ms[3];
  printf("# memset %.3f ms\n", mset);
  for (int h : {16, 32, 64}) {
    all<1>(n, h, out, mset, 7, tag);
    all<2>(n, h, out, mset, 7, tag);
    all<3>(n, h, out, mset, 7, tag);
    all<4>(n, h, out, mset, 7, tag);
  }
  printf("# %d digest(s) differ\n", failures);
  return failures ? 1 : 0;
}
