// The write-shape experiment behind the strip schedule (docs/performance.md,
// "d <= 4: strips"): how fast a GPU writes the packed upper triangle
// (j > i, SciPy's condensed order) as a function of the piece a block writes
// (H rows × W columns) and of how many blocks an SM holds. d = 1 euclidean
// values, the pieces from a host table (no map cost), each layout's output
// digest compared with the first one's. Modes: 0, a warp per row, 4-byte
// stores; 1, warps split a row's columns 128 at a time; 2, a warp computes
// its row piece into shared memory and writes it with 16-byte stores from
// the row's first 16-byte boundary (the strips' store). Next to
// cudaMemset, a 4-byte and a 16-byte linear store kernel, and a 4-byte one
// misaligned by 4 bytes.
//
// Built by CMake with the map laboratory and CUDA (-DTDSOLVE_LAB=ON
// -DTDSOLVE_CUDA=ON; target write_shapes) into build/bench/write_shapes;
// jobs/device/lab-gpu.sh part 8 runs it:
//   build/bench/write_shapes 100000 7 > write-shapes-<gpu>.csv   # n, repeats
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

__global__ void fill(float* a, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    unsigned long long x = (i + 1) * 0x9E3779B97F4A7C15ull;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    a[i] = float(x >> 40) / float(1 << 24);
  }
}
__global__ void linear_store(float* out, size_t m) {
  for (size_t e = blockIdx.x * size_t(blockDim.x) + threadIdx.x; e < m;
       e += size_t(gridDim.x) * blockDim.x)
    out[e] = float(e & 1023);
}

__global__ void digest(const float* out, size_t m, unsigned long long* d) {
  unsigned long long acc = 0;
  for (size_t e = blockIdx.x * size_t(blockDim.x) + threadIdx.x; e < m;
       e += size_t(gridDim.x) * blockDim.x)
    acc += (unsigned long long)__float_as_uint(out[e]) * (e % 1000003 + 1);
  atomicAdd(d, acc);
}
__global__ void linear_store4(float* out, size_t m) {
  for (size_t e = blockIdx.x * size_t(blockDim.x) + threadIdx.x; e < m / 4;
       e += size_t(gridDim.x) * blockDim.x)
    reinterpret_cast<float4*>(out)[e] = make_float4(e & 1023, 1, 2, 3);
}
// Row i of the packed triangle: element (i, j) at base + j, and the row's
// columns [jlo, jhi) within the piece [j0, j1).
struct RowPiece {
  long long base, jlo, jhi;
};
__device__ RowPiece row_piece(long long i, long long n, long long j0, long long j1) {
  return {i * n - i * (i + 1) / 2 - i - 1, max(j0, i + 1), min(j1, n)};
}
__global__ void __launch_bounds__(256)
    tile_kernel(const float* __restrict__ x, float* __restrict__ out, long long n,
                const int2* __restrict__ tiles, int H, int W, int mode) {
  extern __shared__ char pad[];
  const int2 t = tiles[blockIdx.x];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const long long i0 = (long long)t.x * H, j0 = (long long)t.y * W;
  if (mode == 0) {
    // warp takes rows i0 + warp, +8, ... ; each row piece [j0, j0 + W)
    for (int r = warp; r < H; r += 8) {
      const long long i = i0 + r;
      if (i >= n) break;
      const auto [base, jlo, jhi] = row_piece(i, n, j0, j0 + W);
      const float xi = x[i];
#pragma unroll 4
      for (long long j = j0 + lane; j < j0 + W; j += 32)
        if (j >= jlo && j < jhi) out[base + j] = fabsf(xi - x[j]);
    }
  } else if (mode == 2) {
    float* buf = reinterpret_cast<float*>(pad) + warp * (W + 8);
    for (int r = warp; r < H; r += 8) {
      const long long i = i0 + r;
      if (i >= n) break;
      const auto [base, jlo, jhi] = row_piece(i, n, j0, j0 + W);
      const float xi = x[i];
      if (jlo >= jhi) continue;
      const long long a0 = (base + j0) & ~3ll;
      const int sh = int(base + j0 - a0);
#pragma unroll 4
      for (int c = lane; c < W; c += 32) {
        const long long j = j0 + c;
        buf[sh + c] = (j < n) ? fabsf(xi - x[j < n ? j : 0]) : 0.f;
      }
      __syncwarp();
      const long long g0 = base + jlo, g1 = base + jhi;
      const int nq = (sh + W + 3) / 4;
      for (int q = lane; q < nq; q += 32) {
        const long long g = a0 + 4 * q;
        if (g >= g0 && g + 4 <= g1) {
          *reinterpret_cast<float4*>(out + g) = *reinterpret_cast<const float4*>(buf + 4 * q);
        } else {
          for (int e = 0; e < 4; ++e)
            if (g + e >= g0 && g + e < g1) out[g + e] = buf[4 * q + e];
        }
      }
      __syncwarp();
    }
  } else {
    // columns split between warps: warp takes column group (warp % G) of 32*C columns; rows
    // interleaved
    const int groups = W / 128 < 8 ? W / 128 : 8;  // 128-column groups at once
    const int g = warp % groups, rw = warp / groups, rstep = 8 / groups;
    for (long long cg = j0 + g * 128; cg < j0 + W; cg += groups * 128)
      for (int r = rw; r < H; r += rstep) {
        const long long i = i0 + r;
        if (i >= n) break;
        const auto [base, jlo, jhi] = row_piece(i, n, cg, min(cg + 128, j0 + W));
        const float xi = x[i];
#pragma unroll
        for (int s = 0; s < 4; ++s) {
          const long long j = cg + lane + 32 * s;
          if (j >= jlo && j < jhi) out[base + j] = fabsf(xi - x[j]);
        }
      }
  }
}

int main(int argc, char** argv) {
  const long long n = argc > 1 ? atoll(argv[1]) : 100000;
  const int reps = argc > 2 ? atoi(argv[2]) : 7;
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  const size_t m = size_t(n) * (n - 1) / 2;
  float *x, *out;
  cudaMalloc(&x, n * 4);
  cudaMalloc(&out, m * 4);
  fill<<<1024, 256>>>(x, n);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  auto timeit = [&](auto go) {
    go();
    cudaDeviceSynchronize();
    std::vector<float> ms;
    for (int r = 0; r < reps; ++r) {
      cudaEventRecord(e0);
      go();
      cudaEventRecord(e1);
      cudaEventSynchronize(e1);
      float t;
      cudaEventElapsedTime(&t, e0, e1);
      ms.push_back(t);
    }
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) {
      printf("error %s\n", cudaGetErrorString(err));
      exit(1);
    }
    std::sort(ms.begin(), ms.end());
    return double(ms[ms.size() / 2]);
  };
  const double mset = timeit([&] { cudaMemsetAsync(out, 0, m * 4); });
  const double lin = timeit([&] { linear_store<<<prop.multiProcessorCount * 8, 256>>>(out, m); });
  const double lin4 = timeit([&] { linear_store4<<<prop.multiProcessorCount * 8, 256>>>(out, m); });
  const double linm =
      timeit([&] { linear_store<<<prop.multiProcessorCount * 8, 256>>>(out + 1, m - 1); });
  printf("# linear float4 %.3f ms (%.1f%%), linear misaligned by 4 bytes %.3f ms (%.1f%%)\n", lin4,
         100 * mset / lin4, linm, 100 * mset / linm);
  printf("# %s n=%lld memset %.3f ms linear-store %.3f ms (%.1f%%)\n", prop.name, n, mset, lin,
         100 * mset / lin);
  printf("gpu,n,H,W,mode,blocks_per_sm,order,ms,pct_memset,digest\n");
  unsigned long long* dd;
  cudaMalloc(&dd, 8);
  unsigned long long ref = 0;
  struct S {
    int H, W;
  };
  const int full = int((n + 127) / 128 * 128);
  std::vector<S> shapes = {{128, 128}, {64, 256}, {32, 512},  {16, 1024}, {8, 2048},  {32, 1024},
                           {64, 512},  {8, 8192}, {32, 2048}, {8, full},  {16, full}, {32, full}};
  for (S s : shapes)
    for (int order = 0; order < 1; ++order) {
      // tiles: block rows from the long end (row 0), columns left to right; order 1: columns right
      // to left
      std::vector<int2> tl;
      const long long mr = (n + s.H - 1) / s.H, mcw = (n + s.W - 1) / s.W;
      for (long long bi = 0; bi < mr; ++bi) {
        const long long first =
            (bi * s.H + 1) / s.W;  // first column block holding j > i for the block's first row
        if (order == 0)
          for (long long bj = first; bj < mcw; ++bj)
            tl.push_back(make_int2(int(bi), int(bj)));
        else
          for (long long bj = mcw - 1; bj >= first; --bj)
            tl.push_back(make_int2(int(bi), int(bj)));
      }
      if (s.W >= n && order == 1) continue;
      int2* dt;
      cudaMalloc(&dt, tl.size() * sizeof(int2));
      cudaMemcpy(dt, tl.data(), tl.size() * sizeof(int2), cudaMemcpyHostToDevice);
      for (int mode = 0; mode < 3; ++mode) {
        if (mode == 1 && s.W < 256) continue;
        if (mode == 2 && s.W > 2048) continue;
        for (int bps : {2, 3, 4, 6}) {
          size_t smem = prop.sharedMemPerMultiprocessor / bps - 1024 - 64;
          const size_t need = mode == 2 ? 8 * (s.W + 8) * 4 : 0;
          if (smem < need) continue;
          cudaFuncSetAttribute(tile_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
          int occ = 0;
          cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, tile_kernel, 256, smem);
          const double t = timeit([&] {
            tile_kernel<<<unsigned(tl.size()), 256, smem>>>(x, out, n, dt, s.H, s.W, mode);
          });
          cudaMemset(out, 0xff, m * 4);
          tile_kernel<<<unsigned(tl.size()), 256, smem>>>(x, out, n, dt, s.H, s.W, mode);
          cudaMemset(dd, 0, 8);
          digest<<<1024, 256>>>(out, m, dd);
          unsigned long long dg = 0;
          cudaMemcpy(&dg, dd, 8, cudaMemcpyDeviceToHost);
          if (!ref) ref = dg;
          printf("%s,%lld,%d,%d,%d,%d,%d,%.3f,%.1f,%s\n", prop.name, n, s.H, s.W, mode, occ, order,
                 t, 100 * mset / t, dg == ref ? "same" : "DIFFERENT");
          fflush(stdout);
        }
      }
      cudaFree(dt);
    }
  return 0;
}
