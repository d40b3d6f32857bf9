// The strip kernels alone (euclidean, float32, d = 1..8, strips of 16, 32
// and 64 rows, λ2 and BB) next to cudaMemset and the tiles (block_kernel
// with the store epilogue, which no default runs at d <= 8 any more): "shared" (strip_store: the columns staged
// in shared memory, each warp's row through a shared buffer, d <= 4),
// "lanes" (strip_lanes_store: the columns around a thread's own in
// registers, each thread's 16-byte piece computed in place), "shuffle"
// (strip_lanes_store with kShuffle: only the thread's own columns, a row's
// first values from the previous lane) and "vlanes" (a prototype below:
// lane 0 repeats the previous warp's last piece, 992-column strips). Every
// run's output is poisoned first and digested after; a digest that differs
// between runs of one (n, d) fails the program (exit 1). Small n
// (arguments 3 on) check the edges the same way, with 8, 16, 64 and 128
// rows, without timing. TDS_DIMS="lo hi" picks the d. Build-time knobs: the
// piece a row of strip_store (TDS_STRIP_BYTES) and the blocks an SM its
// registers must allow (TDS_STRIP_MIN_BLOCKS). Built by CMake with the map
// laboratory and CUDA (-DTDSOLVE_LAB=ON -DTDSOLVE_CUDA=ON; target
// strip_variants, jobs/bench/CMakeLists.txt, where the knobs go in
// TDSOLVE_STRIP_VARIANTS_DEFINES) into build/bench/strip_variants:
//   build/bench/strip_variants 100000 TAG [small n ...]   # TAG: the CSV's first column
// jobs/device/lab-gpu.sh part 9 runs it. The lanes-variants, strip-variants
// and wide-lanes CSVs of performance.md came from builds of this file (data:
// git show 68463c1:docs/figures/wide-lanes-h100.csv and the like; the lanes
// builds with 8- and 4-byte pieces and 3 or 2 blocks an SM past d = 4 are in
// commit 1e05ff4).
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

// Prototype "vlanes": each thread keeps only its own 4 columns (4 d values)
// and computes their 4 values a row; a row s values past a 16-byte boundary
// takes its first s values from the previous lane by shuffle. Lane 0 of
// each warp duplicates the previous warp's last piece (warp 0's: the
// strip's last), so a strip is 8 × 31 pieces = 992 columns.
namespace vl {
constexpr int kPieces = 8 * 31, kW = kPieces * 4;
template <int D>
struct Shared {
  detail::LaneRow rows[128];
  alignas(16) float x[128][D <= 4 ? 4 : 8];
  mapping::Strip strip;
};
template <int S, int D>
__device__ __forceinline__ void piece(const KernelParams<float>& p, const detail::LaneRow& row,
                                      const float (&v)[4], int mine, int lane, int warp) {
  float w[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    if (e < S) {
      w[e] = __shfl_up_sync(0xffffffffu, v[4 - S + e], 1);
    } else {
      w[e] = v[e - S];
    }
  }
  if (lane == 0) {
    if (warp == 0 && S > 0) {  // the strip's last S values
#pragma unroll
      for (int e = 4 - S; e < 4; ++e) {
        const int c = mine * 4 + e;
        if (c >= row.lo && c < row.hi) p.out[row.base + c] = v[e];
      }
    }
    return;
  }
  const int c0 = mine * 4 - S;
  if (c0 >= row.lo && c0 + 4 <= row.hi) {
    float4 q;
    memcpy(&q, w, 16);
    *reinterpret_cast<float4*>(p.out + (row.base + c0)) = q;
  } else {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int c = c0 + e;
      if (c >= 0 && c >= row.lo && c < row.hi) p.out[row.base + c] = w[e];
    }
  }
}
template <int D, typename Map>
__device__ __forceinline__ void strip(const KernelParams<float>& p, index_t i0, index_t j0,
                                      Shared<D>& sh) {
  const E m(p.mp);
  const index_t h = p.strip_layout.h;
  for (index_t r = threadIdx.x; r < h; r += 256) {
    const index_t i = i0 + r;
    if (i >= p.rows) break;
    std::int64_t lo, hi;
    detail::column_range<Map>(p, i, j0, &lo, &hi);
    sh.rows[r] = detail::LaneRow{detail::first_row<Map>(p, i, j0).base,
                                 static_cast<int>(lo < 0 ? 0 : (lo > kW ? kW : lo)),
                                 static_cast<int>(hi > kW ? kW : (hi < 0 ? 0 : hi))};
#pragma unroll
    for (int k = 0; k < D; ++k)
      sh.x[r][k] = p.a[i * D + k];
  }
  const int t = threadIdx.x, lane = t % 32, warp = t / 32;
  const int mine = lane == 0 ? (warp == 0 ? kPieces - 1 : 31 * warp - 1) : 31 * warp + lane - 1;
  const index_t jt = j0 + mine * 4;
  float y[4][D];
  if (jt + 4 <= p.cols) {
    float own[4 * D];
#pragma unroll
    for (int g = 0; g < D; ++g) {
      const float4 q = reinterpret_cast<const float4*>(p.b + jt * D)[g];
      memcpy(own + 4 * g, &q, 16);
    }
#pragma unroll
    for (int e = 0; e < 4; ++e)
#pragma unroll
      for (int k = 0; k < D; ++k)
        y[e][k] = own[e * D + k];
  } else {
#pragma unroll
    for (int e = 0; e < 4; ++e)
#pragma unroll
      for (int k = 0; k < D; ++k)
        y[e][k] = jt + e < p.cols ? p.b[(jt + e) * D + k] : 0.f;
  }
  __syncthreads();
  for (index_t r = 0; r < h; ++r) {
    if (i0 + r >= p.rows) break;
    const detail::LaneRow row = sh.rows[r];
    if (row.lo >= row.hi) continue;
    float xr[D];
#pragma unroll
    for (int k = 0; k < D; ++k)
      xr[k] = sh.x[r][k];
    float v[4];
#pragma unroll
    for (int e = 0; e < 4; ++e)
      v[e] = detail::point_value<float, E, D>(p, m, xr, y[e], 1.0, 1.0);
    switch (detail::vec_phase(p, row.base)) {
      case 0:
        piece<0, D>(p, row, v, mine, lane, warp);
        break;
      case 1:
        piece<1, D>(p, row, v, mine, lane, warp);
        break;
      case 2:
        piece<2, D>(p, row, v, mine, lane, warp);
        break;
      default:
        piece<3, D>(p, row, v, mine, lane, warp);
        break;
    }
  }
  __syncthreads();
}
template <int D, typename Map>
__global__ void __launch_bounds__(256, 4) kernel(const KernelParams<float> p) {
  extern __shared__ __align__(16) unsigned char smem[];
  Shared<D>& sh = *reinterpret_cast<Shared<D>*>(smem);
  const mapping::Grid& g = p.strip_grid;
  if constexpr (Map::kOneDimensional) {
    for (index_t bx = blockIdx.x; bx < g.x; bx += gridDim.x) {
      if (threadIdx.x == 0) sh.strip = p.strip_layout.unrank(g.base + bx);
      __syncthreads();
      const mapping::Strip st = sh.strip;
      strip<D, Map>(p, st.row, st.col, sh);
    }
  } else {
    for (index_t by = blockIdx.y; by < g.y; by += gridDim.y) {
      const index_t i0 = g.base + by * p.strip_layout.h;
      for (index_t bx = blockIdx.x; bx < g.x; bx += gridDim.x) {
        if (bx < i0 / kW) continue;
        strip<D, Map>(p, i0, bx * kW, sh);
      }
    }
  }
}
}  // namespace vl

std::map<std::pair<long long, int>, unsigned long long> seen;  // (n, d) -> digest
int failures = 0;
// kKind: 0 strips (strip_store), 1 lanes (strip_lanes_store, the columns
// around a thread's own in registers), 2 tiles (block_kernel with the store
// epilogue), 3 vlanes, 4 lanes with shuffles (kShuffle).
template <int D, typename Map, int kKind>
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
  constexpr bool kLanes = kKind == 1 || kKind == 4;
  const int w = kKind == 3 ? vl::kW : BlockPolicy::strip_cols<float>();
  if (w % h != 0) return;
  p.strip_layout = mapping::StripLayout(n, h, w);
  const index_t bands = (n + h - 1) / h;
  if constexpr (Map::kOneDimensional)
    p.strip_grid = mapping::Grid{p.strip_layout.before(bands * h), 1, 0};
  else
    p.strip_grid = mapping::Grid{p.strip_layout.mc, bands, 0};
  p.grid = Map::grid(mapping::PairDomain(n, 128), 0, p.m);
  const auto launch = [&] {
    if constexpr (kKind == 2) {
      launch_kernel<float, E, D, Map, epi::Store, false>(p, 0);
    } else if constexpr (kKind == 3) {
      const dim3 grid(unsigned(p.strip_grid.x), unsigned(p.strip_grid.y));
      vl::kernel<D, Map><<<grid, 256, sizeof(vl::Shared<D>)>>>(p);
    } else
      launch_strips<float, E, D, Map, kLanes, kKind == 4>(p, 0);
  };
  cudaFuncAttributes fa;
  size_t smem = 0;
  int occ = 0;
  if constexpr (kKind == 2) {
    auto k = block_kernel<float, E, D, Map, epi::Store, false>;
    CK(cudaFuncGetAttributes(&fa, k));
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, k, 256, 0));
  } else if constexpr (kKind == 3) {
    auto k = vl::kernel<D, Map>;
    CK(cudaFuncGetAttributes(&fa, k));
    smem = sizeof(vl::Shared<D>);
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, k, 256, smem));
  } else {
    auto k = strip_kernel<float, E, D, Map, kLanes, kKind == 4>;
    CK(cudaFuncGetAttributes(&fa, k));
    smem = sizeof(detail::StripSharedOf<float, E, D, kLanes>);
    CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, k, 256, smem));
  }
  const size_t m = size_t(n) * (n - 1) / 2;
  CK(cudaMemset(out, 0xff, m * 4));
  launch();
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
      launch();
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
  const char* const kNames[] = {"shared", "lanes", "tiles", "vlanes", "shuffle"};
  const char* variant = kNames[kKind];
  printf("%s,%s,%s,%lld,%d,%d,%d,%zu,%d,%.3f,%.1f,%016llx,%s,%zu\n", tag, variant, map,
         (long long)n, D, kKind == 2 ? 128 : h, fa.numRegs, smem, occ, med,
         med > 0 ? 100 * mset / med : 0.0, dg, ok ? "same" : "DIFFERENT", fa.localSizeBytes);
  fflush(stdout);
  CK(cudaFree(a));
}
// Every build of one d on both maps; tiles (the reference at d > 4) once
// per call with `tiles`.
template <int D, typename Map>
void maps_of(index_t n, int h, float* out, double mset, int reps, const char* tag, const char* map,
             bool tiles) {
  if (tiles) one<D, Map, 2>(n, h, out, mset, reps, tag, map);
  if constexpr (D <= BlockPolicy::kStripMaxD) one<D, Map, 0>(n, h, out, mset, reps, tag, map);
  one<D, Map, 1>(n, h, out, mset, reps, tag, map);
  one<D, Map, 4>(n, h, out, mset, reps, tag, map);
  one<D, Map, 3>(n, h, out, mset, reps, tag, map);
}
template <int D>
void all(index_t n, int h, float* out, double mset, int reps, const char* tag, bool tiles) {
  maps_of<D, mapping::Lambda2Map>(n, h, out, mset, reps, tag, "lambda2", tiles);
  maps_of<D, mapping::BoundingBoxMap>(n, h, out, mset, reps, tag, "bb", tiles);
}
template <int... Ds>
void dims(index_t n, int h, float* out, double mset, int reps, const char* tag, bool tiles, int dlo,
          int dhi) {
  ((Ds >= dlo && Ds <= dhi ? all<Ds>(n, h, out, mset, reps, tag, tiles) : void()), ...);
}
int main(int argc, char** argv) {
  const index_t n = argc > 1 ? atoll(argv[1]) : 100000;
  const char* tag = argc > 2 ? argv[2] : "?";
  // TDS_DIMS="lo hi": the d measured (default 1 8).
  int dlo = 1, dhi = 8;
  if (const char* e = getenv("TDS_DIMS")) sscanf(e, "%d %d", &dlo, &dhi);
  const size_t m = size_t(n) * (n - 1) / 2;
  float* out;
  CK(cudaMalloc(&out, m * 4));
  printf(
      "tag,variant,map,n,d,rows,registers,smem,blocks_per_sm,ms,pct_memset,digest,check,local_"
      "bytes\n");
  for (int i = 3; i < argc; ++i) {  // the edges: small n, every strip height
    const index_t s = atoll(argv[i]);
    for (int h : {8, 16, 64, 128})
      dims<1, 2, 3, 4, 5, 6, 7, 8>(s, h, out, 0, 0, tag, h == 8, dlo, dhi);
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
  for (int h : {16, 32, 64})
    dims<1, 2, 3, 4, 5, 6, 7, 8>(n, h, out, mset, 7, tag, h == 16, dlo, dhi);
  printf("# %d digest(s) differ\n", failures);
  return failures ? 1 : 0;
}
