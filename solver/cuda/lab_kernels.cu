// The map laboratory's CUDA engine (solver/lab/lab.hpp): one kernel per
// map × problem, each block asking the map for its tile and leaving at once
// when it has none. Launch rules are the same for every map: B × B threads a
// block, the map's passes in order on one stream, timed together with CUDA
// events.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "core/error.hpp"
#include "solver/cuda/cuda_check.hpp"
#include "solver/lab/lab.hpp"

namespace tdsolve::lab {

namespace {

constexpr int kMaxBlock = 32;  // B: at most 32 × 32 threads
constexpr int kMaxStride = 4;  // a sphere: 3 coordinates and a radius
enum Kind { kDummy, kEdm, kCollide, kCover };

struct Params {
  index_t n = 0, m = 0;
  const float* data = nullptr;
  float* out = nullptr;                 // edm: n × n
  unsigned* cover = nullptr;            // the coverage counters: n × n
  unsigned long long* count = nullptr;  // collide's overlaps
  unsigned long long* never = nullptr;  // dummy's store that never happens
  bool once = false;                    // the map evaluated once a block
};

// kOnce: thread (0, 0) evaluates the map and hands the tile to the block
// through shared memory (one warp's work a block); else every thread
// evaluates it, as the papers' kernels do (every warp's work).
template <typename Map, int kKind, int F, bool kOnce>
__global__ void lab_kernel(const Params p, const v::Pass pass) {
  index_t i, j;
  if constexpr (kOnce) {
    __shared__ index_t tile[2];
    __shared__ bool has;
    if (threadIdx.x == 0 && threadIdx.y == 0)
      has = lab_tile<Map>(p.m, pass, blockIdx.x, blockIdx.y, &tile[0], &tile[1]);
    __syncthreads();
    if (!has) return;  // block-uniform
    i = tile[0];
    j = tile[1];
  } else {
    if (!lab_tile<Map>(p.m, pass, blockIdx.x, blockIdx.y, &i, &j)) return;  // block-uniform
  }
  const index_t b = blockDim.x;
  const index_t r = i * b + threadIdx.y, c = j * b + threadIdx.x;
  const bool in = r < c && c < p.n;
  if constexpr (kKind == kCover) {
    if (in) atomicAdd(&p.cover[r * p.n + c], 1u);
  } else if constexpr (kKind == kDummy) {
    if (in && r + c == kDummyNever) *p.never = r;
  } else if constexpr (kKind == kEdm) {
    if (in) p.out[r * p.n + c] = edm_value<F>(p.data, r, c);
  } else {
    // The block's B row spheres and B column spheres, staged once.
    constexpr int s = F + 1;
    __shared__ float rows[kMaxBlock * kMaxStride], cols[kMaxBlock * kMaxStride];
    const int t = threadIdx.y * blockDim.x + threadIdx.x;
    for (int e = t; e < static_cast<int>(b) * s; e += blockDim.x * blockDim.y) {
      const index_t ri = i * b + e / s, ci = j * b + e / s;
      rows[e] = ri < p.n ? p.data[ri * s + e % s] : 0.0f;
      cols[e] = ci < p.n ? p.data[ci * s + e % s] : 0.0f;
    }
    __syncthreads();
    const bool hit = in && spheres_overlap<F>(&rows[threadIdx.y * s], &cols[threadIdx.x * s]);
    const unsigned votes = __ballot_sync(0xffffffffu, hit);
    if (t % 32 == 0 && votes) atomicAdd(p.count, static_cast<unsigned long long>(__popc(votes)));
  }
}

// Map-free reference for collide: the whole n × n grid, each thread its pair.
template <int F>
__global__ void collide_reference(const Params p) {
  constexpr int s = F + 1;
  const index_t r = blockIdx.y * static_cast<index_t>(blockDim.y) + threadIdx.y;
  const index_t c = blockIdx.x * static_cast<index_t>(blockDim.x) + threadIdx.x;
  const bool hit = r < c && c < p.n && spheres_overlap<F>(&p.data[r * s], &p.data[c * s]);
  const unsigned votes = __ballot_sync(0xffffffffu, hit);
  if ((threadIdx.y * blockDim.x + threadIdx.x) % 32 == 0 && votes)
    atomicAdd(p.count, static_cast<unsigned long long>(__popc(votes)));
}

// Counters that are not 1 inside the strict upper triangle and 0 outside.
__global__ void coverage_errors(const Params p) {
  unsigned long long bad = 0;
  for (index_t r = blockIdx.x; r < p.n; r += gridDim.x)
    for (index_t c = threadIdx.x; c < p.n; c += blockDim.x)
      bad += p.cover[r * p.n + c] != (r < c ? 1u : 0u);
  for (int o = 16; o > 0; o /= 2)
    bad += __shfl_down_sync(0xffffffffu, bad, o);
  if (threadIdx.x % 32 == 0 && bad) atomicAdd(p.count, bad);
}

template <typename Map, int kKind, int F>
void launch_passes(const Params& p, int block, cudaStream_t stream) {
  const v::Launch l = lab_launch<Map>(p.m);
  for (int k = 0; k < l.count; ++k) {
    const v::Pass& pass = l.pass[k];
    const dim3 grid(static_cast<unsigned>(pass.x), static_cast<unsigned>(pass.y));
    if (p.once)
      lab_kernel<Map, kKind, F, true><<<grid, dim3(block, block), 0, stream>>>(p, pass);
    else
      lab_kernel<Map, kKind, F, false><<<grid, dim3(block, block), 0, stream>>>(p, pass);
  }
}

template <int kKind, int F>
void launch_map(MapId map, const Params& p, int block, cudaStream_t stream) {
  dispatch_lab_map(map, [&](auto M) { launch_passes<decltype(M), kKind, F>(p, block, stream); });
}

// Every pass of the map must fit a launch (x < 2^31, y < 2^16).
void check_grid(MapId map, index_t m, int block) {
  dispatch_lab_map(map, [&](auto M) {
    const v::Launch l = lab_launch<decltype(M)>(m);
    for (int k = 0; k < l.count; ++k)
      if (l.pass[k].x >= (index_t(1) << 31) || l.pass[k].y >= 65536)
        throw UsageError(std::string("--n: map ") + map_name(map) + " would launch a grid of " +
                         std::to_string(l.pass[k].x) + " × " + std::to_string(l.pass[k].y) +
                         " blocks of " + std::to_string(block) + "², past CUDA's limits");
  });
}

class CudaLab final : public LabEngine {
 public:
  CudaLab() {
    int dev = 0;
    cuda::check(cudaGetDevice(&dev), "cudaGetDevice");
    cudaDeviceProp prop{};
    cuda::check(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties");
    name_ = prop.name;
    cuda::check(cudaStreamCreate(&stream_), "cudaStreamCreate");
    cuda::check(cudaEventCreate(&start_), "cudaEventCreate");
    cuda::check(cudaEventCreate(&stop_), "cudaEventCreate");
    cuda::check(cudaMalloc(&counters_, 2 * sizeof(unsigned long long)), "cudaMalloc");
  }
  ~CudaLab() override {
    release();
    cudaFree(counters_);
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
    cudaStreamDestroy(stream_);
  }

  std::string describe() const override { return "cuda: " + name_; }

  void prepare(const LabCase& c, const std::vector<float>& data, bool check) override {
    if (c.block < 1 || c.block > kMaxBlock || (c.block * c.block) % 32 != 0)
      throw UsageError("--block for the laboratory: B × B threads, B = 8, 16 or 32");
    c_ = c;
    reference_ = ~std::uint64_t(0);
    grow(&data_, data.size() * sizeof(float), &data_bytes_);
    if (!data.empty())
      cuda::check(
          cudaMemcpy(data_, data.data(), data.size() * sizeof(float), cudaMemcpyHostToDevice),
          "cudaMemcpy");
    const size_t cells = static_cast<size_t>(c.n) * c.n;
    if (c.problem == LabProblem::edm) grow(&out_, cells * sizeof(float), &out_bytes_);
    if (check) grow(&cover_, cells * sizeof(unsigned), &cover_bytes_);
  }

  std::vector<double> time(MapId map, int repeat) override {
    check_grid(map, c_.m(), c_.block);
    const Params p = params();
    std::vector<double> ms;
    for (int r = 0; r <= repeat; ++r) {  // the first launch warms up
      cuda::check(cudaEventRecord(start_, stream_), "cudaEventRecord");
      launch(map, p);
      cuda::check(cudaEventRecord(stop_, stream_), "cudaEventRecord");
      cuda::check(cudaEventSynchronize(stop_), "cudaEventSynchronize");
      cuda::check(cudaGetLastError(), "cudaGetLastError");
      float t = 0;
      cuda::check(cudaEventElapsedTime(&t, start_, stop_), "cudaEventElapsedTime");
      if (r > 0) ms.push_back(t);
    }
    return ms;
  }

  LabCheck check(MapId map) override {
    check_grid(map, c_.m(), c_.block);
    LabCheck k;
    k.done = true;
    Params p = params();
    const size_t cells = static_cast<size_t>(c_.n) * c_.n;
    cuda::check(cudaMemsetAsync(cover_, 0, cells * sizeof(unsigned), stream_), "cudaMemsetAsync");
    launch_map<kCover, 0>(map, p, c_.block, stream_);
    cuda::check(cudaMemsetAsync(counters_, 0, 2 * sizeof(unsigned long long), stream_),
                "cudaMemsetAsync");
    p.count = counters_;
    coverage_errors<<<4096, 256, 0, stream_>>>(p);
    if (c_.problem == LabProblem::collide) {
      p.count = counters_ + 1;
      launch(map, p);
    }
    std::uint64_t got[2];
    cuda::check(cudaMemcpyAsync(got, counters_, sizeof got, cudaMemcpyDeviceToHost, stream_),
                "cudaMemcpyAsync");
    cuda::check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    cuda::check(cudaGetLastError(), "cudaGetLastError");
    k.wrong = got[0];
    k.count = got[1];
    k.reference = c_.problem == LabProblem::collide ? reference() : 0;
    return k;
  }

  void release() override {
    for (void** b : {reinterpret_cast<void**>(&data_), reinterpret_cast<void**>(&out_),
                     reinterpret_cast<void**>(&cover_)})
      if (*b) {
        cudaFree(*b);
        *b = nullptr;
      }
    data_bytes_ = out_bytes_ = cover_bytes_ = 0;
  }

 private:
  template <typename P>
  void grow(P** buf, size_t bytes, size_t* have) {
    if (bytes <= *have) return;
    if (*buf) cudaFree(*buf);
    *buf = nullptr;
    *have = 0;
    if (cudaMalloc(reinterpret_cast<void**>(buf), bytes) != cudaSuccess) {
      cudaGetLastError();
      throw InputError("--n " + std::to_string(c_.n) + ": the laboratory needs " +
                       std::to_string(bytes >> 20) + " MiB more on " + name_ +
                       " (edm keeps an n × n matrix, --check an n × n array of counters)");
    }
    *have = bytes;
  }

  Params params() const {
    Params p;
    p.n = c_.n;
    p.m = c_.m();
    p.data = data_;
    p.out = out_;
    p.cover = cover_;
    p.count = counters_ + 1;
    p.never = counters_;
    p.once = c_.map_once;
    return p;
  }

  void launch(MapId map, const Params& p) {
    const int b = c_.block;
    switch (c_.problem) {
      case LabProblem::dummy:
        return launch_map<kDummy, 0>(map, p, b, stream_);
      case LabProblem::collide:
        return c_.features == 1 ? launch_map<kCollide, 1>(map, p, b, stream_)
                                : launch_map<kCollide, 3>(map, p, b, stream_);
      case LabProblem::edm:
        switch (c_.features) {
          case 1:
            return launch_map<kEdm, 1>(map, p, b, stream_);
          case 2:
            return launch_map<kEdm, 2>(map, p, b, stream_);
          case 3:
            return launch_map<kEdm, 3>(map, p, b, stream_);
          default:
            return launch_map<kEdm, 4>(map, p, b, stream_);
        }
    }
  }

  // collide's map-free count, once per case.
  std::uint64_t reference() {
    if (reference_ != ~std::uint64_t(0)) return reference_;
    Params p = params();
    p.count = counters_ + 1;
    cuda::check(cudaMemsetAsync(p.count, 0, sizeof(unsigned long long), stream_),
                "cudaMemsetAsync");
    const unsigned g = static_cast<unsigned>((c_.n + 15) / 16);
    if (c_.features == 1)
      collide_reference<1><<<dim3(g, g), dim3(16, 16), 0, stream_>>>(p);
    else
      collide_reference<3><<<dim3(g, g), dim3(16, 16), 0, stream_>>>(p);
    std::uint64_t got = 0;
    cuda::check(cudaMemcpyAsync(&got, p.count, sizeof got, cudaMemcpyDeviceToHost, stream_),
                "cudaMemcpyAsync");
    cuda::check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    cuda::check(cudaGetLastError(), "cudaGetLastError");
    return reference_ = got;
  }

  std::string name_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  unsigned long long* counters_ = nullptr;  // [0]: dummy's / the check's, [1]: collide's
  LabCase c_;
  float* data_ = nullptr;
  float* out_ = nullptr;
  unsigned* cover_ = nullptr;
  size_t data_bytes_ = 0, out_bytes_ = 0, cover_bytes_ = 0;
  std::uint64_t reference_ = ~std::uint64_t(0);
};

}  // namespace

std::unique_ptr<LabEngine> make_cuda_lab() {
  return std::make_unique<CudaLab>();
}

}  // namespace tdsolve::lab
