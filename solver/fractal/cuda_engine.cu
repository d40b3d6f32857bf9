// The CUDA engine of tdsolve fractal: one thread block per coarse cell (or
// per ρ×ρ tile of the embedding for bb), the fractal's tables in constant
// memory, the live count reduced in the step kernel.
//
// The coarse maps of --map nu (λ of the block's coarse cell, then ν of its 8
// neighbours) run once per block, by one of two paths that give the same
// integers:
//   CUDA cores    threads 0..8 each run fractal_lambda and fractal_nu
//   tensor cores  warp 0: lane μ finds the level-μ digit, then one int8 MMA
//                 (16×16×16, two K-tiles for up to 32 levels) forms the sums
//                 Σ_μ w_μ·h_μ of eqs. 7-8 for all columns at once. The weights
//                 s^μ and k^μ go in as their 8 bytes (rows 0-7 and 8-15 of A),
//                 so every product and partial sum is exact in int32
//                 (< 32·255·255) and the 64-bit result is Σ_j D_j·2^(8j).
#include <cuda_runtime.h>
#include <mma.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "solver/cuda/cuda_check.hpp"
#include "solver/fractal/fractal.hpp"

namespace tdsolve::fractal {

namespace {

using cuda::check;

__constant__ Fractal c_frac;

// The 8 bytes of s^μ (rows 0-7) and k^μ (rows 8-15), levels μ = 0..31 as two
// 16×16 K-tiles, row-major: A[t][row*16 + (μ - 16t)].
struct TcWeights {
  alignas(32) unsigned char a[2][256];
};

// Adds the block's counts to *total (any block shape; every thread calls it).
__device__ __forceinline__ void add_count(unsigned mine, unsigned long long* total) {
  __shared__ unsigned block_count;
  const unsigned lin = threadIdx.y * blockDim.x + threadIdx.x;
  if (lin == 0) block_count = 0;
  __syncthreads();
  if (mine) atomicAdd(&block_count, mine);
  __syncthreads();
  if (lin == 0 && block_count) atomicAdd(total, (unsigned long long)block_count);
}

// Digit μ of coarse index cc (base k): 32-bit division when cc allows.
__device__ __forceinline__ int coarse_digit(std::uint64_t cc, int mu) {
  const Fractal& f = c_frac;
  if (f.pk[mu] > cc) return 0;
  if (cc <= 0xffffffffu)
    return int((std::uint32_t(cc) / std::uint32_t(f.pk[mu])) % std::uint32_t(f.k));
  return int((cc / f.pk[mu]) % std::uint64_t(f.k));
}

__device__ __forceinline__ std::uint64_t warp_sum64(std::uint64_t v) {
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Warp 0 maps the 3×3 coarse neighbourhood of cc into nb. Lane μ finds the
// level-μ digit h_μ (the coarse index's, then each neighbour's); the sums
// Σ_μ w_μ·h_μ of eqs. 7-8 are then formed on tensor cores (one int8 MMA per
// map: λ's x and y in columns 0-1, ν's 9 neighbours in columns 0-8) or on
// CUDA cores (a shuffle reduction per column). sb: two 16×16 u8 tiles (B),
// sd: 16×16 int (D), both in shared memory.
template <bool kTensorCores>
__device__ __forceinline__ void coarse_maps(std::uint64_t cc, int levels, std::int64_t* nb,
                                            const TcWeights* w, unsigned char* sb, int* sd) {
  using namespace nvcuda;
  if (threadIdx.x >= 32) return;
  const int lane = threadIdx.x;
  const Fractal& f = c_frac;
  const bool mine = lane < levels;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, unsigned char, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, unsigned char, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, int> fd;
  const int tiles = levels > 16 ? 2 : 1;
  const auto mma = [&] {
    __syncwarp();
    wmma::fill_fragment(fd, 0);
    for (int t = 0; t < tiles; ++t) {
      wmma::load_matrix_sync(fa, w->a[t], 16);
      wmma::load_matrix_sync(fb, sb + 256 * t, 16);
      wmma::mma_sync(fd, fa, fb, fd);
    }
    wmma::store_matrix_sync(sd, fd, 16, wmma::mem_row_major);
    __syncwarp();
  };
  const auto column = [&](int row0, int col) {
    std::uint64_t v = 0;
    for (int j = 0; j < 8; ++j)
      v += std::uint64_t(std::uint32_t(sd[(row0 + j) * 16 + col])) << (8 * j);
    return v;
  };
  unsigned char* row = sb + 256 * (lane >> 4) + (lane & 15) * 16;  // B[μ][.]
  // λ: h_μ = the replica's sub-square.
  const int d = mine ? coarse_digit(cc, lane) : 0;
  std::uint64_t X, Y;
  if (kTensorCores) {
    *reinterpret_cast<uint4*>(row) = make_uint4(0, 0, 0, 0);  // 32 lanes: both tiles' rows
    if (mine) {
      row[0] = f.cx[d];
      row[1] = f.cy[d];
    }
    mma();
    X = column(0, 0);
    Y = column(0, 1);
  } else {
    X = warp_sum64(mine ? f.ps[lane] * f.cx[d] : 0);
    Y = warp_sum64(mine ? f.ps[lane] * f.cy[d] : 0);
  }
  // ν: h_μ = the replica of each neighbour's level-μ digit pair.
  const std::int64_t side = std::int64_t(f.ps[levels]);
  const std::uint32_t s = std::uint32_t(f.s), div = std::uint32_t(f.ps[lane < 31 ? lane : 31]);
  unsigned bad = 0;  // bit dir: off the fractal or outside the coarse grid
  int ids[9];
  for (int dir = 0; dir < 9; ++dir) {
    const std::int64_t x = std::int64_t(X) + dir % 3 - 1, y = std::int64_t(Y) + dir / 3 - 1;
    ids[dir] = 0;
    if (x < 0 || y < 0 || x >= side || y >= side) {
      bad |= 1u << dir;
    } else if (mine) {
      const std::uint32_t dx = (std::uint32_t(x) / div) % s, dy = (std::uint32_t(y) / div) % s;
      const int r = f.id[dx + s * dy];
      if (r < 0)
        bad |= 1u << dir;
      else
        ids[dir] = r;
    }
  }
  bad = __reduce_or_sync(0xffffffffu, bad);
  if (kTensorCores) {
    for (int dir = 0; dir < 9; ++dir)
      row[dir] = (unsigned char)ids[dir];
    mma();
    if (lane < 9) nb[lane] = (bad >> lane & 1) ? -1 : std::int64_t(column(8, lane));
  } else {
    for (int dir = 0; dir < 9; ++dir) {
      const std::uint64_t c = warp_sum64(mine ? f.pk[lane] * std::uint64_t(ids[dir]) : 0);
      if (lane == dir) nb[dir] = (bad >> dir & 1) ? -1 : std::int64_t(c);
    }
  }
}

// The window of a coarse cell: its ρ×ρ cells and a ring of one cell from
// its 8 neighbours (0 where off the fractal), staged in shared memory, so
// each cell counts its neighbours there.
constexpr int kMaxWindow = (int(kMaxRho) + 2) * (int(kMaxRho) + 2);

template <bool kTensorCores>
__global__ void step_nu(const std::uint8_t* __restrict__ cur, std::uint8_t* __restrict__ next,
                        Blocking blk, const std::uint16_t* __restrict__ lx,
                        const std::uint16_t* __restrict__ ly, const std::int32_t* __restrict__ lnu,
                        Rule rule, const TcWeights* w, unsigned long long* live) {
  __shared__ std::int64_t nb[9];
  __shared__ __align__(32) unsigned char sb[512];
  __shared__ __align__(32) int sd[256];
  __shared__ std::uint8_t win[kMaxWindow];
  const int rho = int(blk.rho), side = rho + 2;
  unsigned count = 0;
  for (std::uint64_t cc = blockIdx.x; cc < blk.coarse; cc += gridDim.x) {
    coarse_maps<kTensorCores>(cc, blk.coarse_levels, nb, w, sb, sd);
    __syncthreads();
    for (int i = threadIdx.x; i < side * side; i += blockDim.x)
      win[i] = window_value(cur, i, rho, nb, lnu, blk.local);
    __syncthreads();
    const std::uint64_t base = cc * blk.local;
    for (std::uint32_t l = threadIdx.x; l < blk.local; l += blockDim.x) {
      const std::uint8_t v = window_next(win, rho, __ldg(lx + l), __ldg(ly + l), rule);
      next[base + l] = v;
      count += v;
    }
    __syncthreads();  // nb and win are rewritten for the next coarse cell
  }
  add_count(count, live);
}

__global__ void step_lambda(const std::uint8_t* __restrict__ cur, std::uint8_t* __restrict__ next,
                            Blocking blk, const std::uint16_t* __restrict__ lx,
                            const std::uint16_t* __restrict__ ly, Rule rule,
                            unsigned long long* live) {
  __shared__ std::uint64_t origin[2];
  const std::uint64_t n = c_frac.n;
  unsigned count = 0;
  for (std::uint64_t cc = blockIdx.x; cc < blk.coarse; cc += gridDim.x) {
    if (threadIdx.x == 0) {
      std::uint64_t X, Y;
      mapping::fractal_lambda(c_frac, cc, blk.coarse_levels, &X, &Y);
      origin[0] = X * blk.rho;
      origin[1] = Y * blk.rho;
    }
    __syncthreads();
    for (std::uint32_t l = threadIdx.x; l < blk.local; l += blockDim.x) {
      const std::uint64_t x = origin[0] + __ldg(lx + l), y = origin[1] + __ldg(ly + l);
      const std::uint8_t v = rule.next(cur[y * n + x], embedded_neighbours(cur, n, x, y));
      next[y * n + x] = v;
      count += v;
    }
    __syncthreads();
  }
  add_count(count, live);
}

// A thread per embedding cell in tiles of bx×by; cells off the fractal hold
// kOff in both generations and are skipped.
__global__ void step_bb(const std::uint8_t* __restrict__ cur, std::uint8_t* __restrict__ next,
                        Rule rule, unsigned long long* live) {
  const std::uint64_t n = c_frac.n;
  unsigned count = 0;
  const std::uint64_t x = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (std::uint64_t y = std::uint64_t(blockIdx.y) * blockDim.y + threadIdx.y; y < n;
       y += std::uint64_t(gridDim.y) * blockDim.y) {
    if (x >= n) break;
    const std::uint8_t c = cur[y * n + x];
    if (c == kOff) continue;
    const std::uint8_t v = rule.next(c, embedded_neighbours(cur, n, x, y));
    next[y * n + x] = v;
    count += v;
  }
  add_count(count, live);
}

__global__ void random_state(std::uint8_t* state, bool embedded, std::uint64_t seed,
                             std::uint64_t threshold) {
  const Fractal& f = c_frac;
  for (std::uint64_t c = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < f.cells;
       c += std::uint64_t(gridDim.x) * blockDim.x) {
    const std::uint8_t v = random_cell(seed, threshold, c);
    if (!embedded) {
      state[c] = v;
    } else {
      std::uint64_t x, y;
      mapping::fractal_lambda(f, c, f.levels, &x, &y);
      state[y * f.n + x] = v;
    }
  }
}

// Compact slab [c0, c0 + count) <-> the embedded state.
__global__ void scatter(std::uint8_t* state, const std::uint8_t* slab, std::uint64_t c0,
                        std::uint64_t count, bool to_state) {
  const Fractal& f = c_frac;
  for (std::uint64_t i = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += std::uint64_t(gridDim.x) * blockDim.x) {
    std::uint64_t x, y;
    mapping::fractal_lambda(f, c0 + i, f.levels, &x, &y);
    if (to_state)
      state[y * f.n + x] = slab[i];
    else
      const_cast<std::uint8_t*>(slab)[i] = state[y * f.n + x];
  }
}

__global__ void count_live(const std::uint8_t* state, std::uint64_t size,
                           unsigned long long* live) {
  unsigned count = 0;
  for (std::uint64_t i = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < size;
       i += std::uint64_t(gridDim.x) * blockDim.x)
    count += state[i] == 1;
  add_count(count, live);
}

template <typename T>
T* device_alloc(std::uint64_t count, const char* what);

// A (the weights' bytes) for the tensor-core path, on the device.
TcWeights* upload_weights(const Fractal& f) {
  TcWeights w{};
  for (int mu = 0; mu < 32 && mu <= f.levels; ++mu)
    for (int j = 0; j < 8; ++j) {
      w.a[mu / 16][j * 16 + mu % 16] = (unsigned char)(f.ps[mu] >> (8 * j));
      w.a[mu / 16][(8 + j) * 16 + mu % 16] = (unsigned char)(f.pk[mu] >> (8 * j));
    }
  TcWeights* d = device_alloc<TcWeights>(1, "the tensor-core weights");
  check(cudaMemcpy(d, &w, sizeof w, cudaMemcpyHostToDevice), "cudaMemcpy");
  return d;
}

template <typename T>
T* device_alloc(std::uint64_t count, const char* what) {
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, std::max<std::uint64_t>(count, 1) * sizeof(T));
  if (e != cudaSuccess) {
    cudaGetLastError();
    throw InputError(std::string("out of GPU memory allocating ") + what + " (" +
                     std::to_string(count * sizeof(T) >> 20) + " MiB)");
  }
  return static_cast<T*>(p);
}

class CudaEngine final : public Engine {
 public:
  CudaEngine(const Fractal& f, const Rule& rule, const EngineOptions& o)
      : f_(f), rule_(rule), o_(o), blk_(make_blocking(f, o.rho ? o.rho : default_rho(f))) {
    int devices = 0;
    check(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
    device_ = o.device >= 0 ? o.device : 0;
    if (device_ >= devices)
      throw UsageError("--device " + std::to_string(o.device) + ": only " +
                       std::to_string(devices) + " GPU(s) visible");
    check(cudaSetDevice(device_), "cudaSetDevice");
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, device_), "cudaGetDeviceProperties");
    name_ = prop.name;
    sms_ = prop.multiProcessorCount;
    if (o.tensor_cores && prop.major * 10 + prop.minor < 72)
      throw UsageError("--tensor-cores: " + name_ + " has no int8 tensor cores (sm_72 or newer)");
    size_ = o.strategy == Strategy::nu ? f.cells : f.n * f.n;
    size_t free_b = 0, total_b = 0;
    check(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
    const std::uint64_t need = 2 * size_ + kStage;
    if (need > free_b)
      throw InputError("the state needs " + std::to_string(need >> 20) +
                       " MiB of GPU memory, but " + name_ + " has " + std::to_string(free_b >> 20) +
                       " MiB free (layout " +
                       (o.strategy == Strategy::nu ? "compact" : "embedded") +
                       "; a lower --level, or the compact layout, fits)");
    check(cudaMemcpyToSymbol(c_frac, &f, sizeof f), "cudaMemcpyToSymbol");
    cur_ = device_alloc<std::uint8_t>(size_, "the state");
    next_ = device_alloc<std::uint8_t>(size_, "the next state");
    const std::uint8_t fill = o.strategy == Strategy::nu ? 0 : kOff;
    check(cudaMemset(cur_, fill, size_), "cudaMemset");
    check(cudaMemset(next_, fill, size_), "cudaMemset");
    stage_ = device_alloc<std::uint8_t>(kStage, "the staging buffer");
    live_ = device_alloc<unsigned long long>(1, "the live count");
    const LocalTables t = local_tables(f, blk_);
    lx_ = device_alloc<std::uint16_t>(t.lx.size(), "the local tables");
    ly_ = device_alloc<std::uint16_t>(t.ly.size(), "the local tables");
    lnu_ = device_alloc<std::int32_t>(t.nu.size(), "the local tables");
    check(cudaMemcpy(lx_, t.lx.data(), t.lx.size() * 2, cudaMemcpyHostToDevice), "cudaMemcpy");
    check(cudaMemcpy(ly_, t.ly.data(), t.ly.size() * 2, cudaMemcpyHostToDevice), "cudaMemcpy");
    check(cudaMemcpy(lnu_, t.nu.data(), t.nu.size() * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
    weights_ = upload_weights(f);
    check(cudaEventCreate(&e0_), "cudaEventCreate");
    check(cudaEventCreate(&e1_), "cudaEventCreate");
  }
  ~CudaEngine() override {
    for (void* p : {(void*)cur_, (void*)next_, (void*)stage_, (void*)live_, (void*)lx_, (void*)ly_,
                    (void*)lnu_, (void*)weights_})
      if (p) cudaFree(p);
    cudaEventDestroy(e0_);
    cudaEventDestroy(e1_);
  }

  void set_state(std::uint64_t c0, std::uint64_t count, const std::uint8_t* v) override {
    for (std::uint64_t done = 0; done < count; done += kStage) {
      const std::uint64_t m = std::min(kStage, count - done);
      if (o_.strategy == Strategy::nu) {
        check(cudaMemcpy(cur_ + c0 + done, v + done, m, cudaMemcpyHostToDevice), "cudaMemcpy");
      } else {
        check(cudaMemcpy(stage_, v + done, m, cudaMemcpyHostToDevice), "cudaMemcpy");
        scatter<<<grid(m), 256>>>(cur_, stage_, c0 + done, m, true);
        check(cudaGetLastError(), "scatter");
      }
    }
    check(cudaDeviceSynchronize(), "set_state");
  }

  void get_state(std::uint64_t c0, std::uint64_t count, std::uint8_t* v) override {
    for (std::uint64_t done = 0; done < count; done += kStage) {
      const std::uint64_t m = std::min(kStage, count - done);
      if (o_.strategy == Strategy::nu) {
        check(cudaMemcpy(v + done, cur_ + c0 + done, m, cudaMemcpyDeviceToHost), "cudaMemcpy");
      } else {
        scatter<<<grid(m), 256>>>(cur_, stage_, c0 + done, m, false);
        check(cudaGetLastError(), "gather");
        check(cudaMemcpy(v + done, stage_, m, cudaMemcpyDeviceToHost), "cudaMemcpy");
      }
    }
  }

  void set_random(const RandomInit& init) override {
    random_state<<<grid(f_.cells), 256>>>(cur_, o_.strategy != Strategy::nu, init.seed,
                                          init.threshold());
    check(cudaGetLastError(), "random_state");
    check(cudaDeviceSynchronize(), "random_state");
  }

  std::uint64_t live() override {
    check(cudaMemset(live_, 0, sizeof *live_), "cudaMemset");
    count_live<<<grid(size_), 256>>>(cur_, size_, live_);
    check(cudaGetLastError(), "count_live");
    unsigned long long v = 0;
    check(cudaMemcpy(&v, live_, sizeof v, cudaMemcpyDeviceToHost), "cudaMemcpy");
    return v;
  }

  void step(int steps, std::uint64_t* live_after) override {
    for (int s = 0; s < steps; ++s) {
      check(cudaMemsetAsync(live_, 0, sizeof *live_), "cudaMemset");
      check(cudaEventRecord(e0_), "cudaEventRecord");
      launch();
      check(cudaEventRecord(e1_), "cudaEventRecord");
      unsigned long long v = 0;
      check(cudaMemcpy(&v, live_, sizeof v, cudaMemcpyDeviceToHost), "step");
      float ms = 0;
      check(cudaEventElapsedTime(&ms, e0_, e1_), "cudaEventElapsedTime");
      seconds_ += ms * 1e-3;
      live_after[s] = v;
      std::swap(cur_, next_);
    }
  }

  double seconds() override { return seconds_; }
  std::uint64_t device_bytes() const override { return 2 * size_; }
  std::string describe() const override {
    return "cuda (" + name_ + ", device " + std::to_string(device_) + ")";
  }

 private:
  static constexpr std::uint64_t kStage = std::uint64_t(1) << 26;

  unsigned grid(std::uint64_t work) const {
    return unsigned(std::max<std::uint64_t>(
        1, std::min<std::uint64_t>((work + 255) / 256, std::uint64_t(sms_) * 64)));
  }

  unsigned threads_per_block() const {
    return unsigned(std::min<std::uint64_t>(256, (blk_.local + 31) / 32 * 32));
  }
  unsigned coarse_grid() const { return unsigned(std::min<std::uint64_t>(blk_.coarse, 1u << 30)); }

  void launch() {
    switch (o_.strategy) {
      case Strategy::nu:
        if (o_.tensor_cores)
          step_nu<true><<<coarse_grid(), std::max(32u, threads_per_block())>>>(
              cur_, next_, blk_, lx_, ly_, lnu_, rule_, weights_, live_);
        else
          step_nu<false><<<coarse_grid(), threads_per_block()>>>(cur_, next_, blk_, lx_, ly_, lnu_,
                                                                 rule_, weights_, live_);
        break;
      case Strategy::lambda:
        step_lambda<<<coarse_grid(), threads_per_block()>>>(cur_, next_, blk_, lx_, ly_, rule_,
                                                            live_);
        break;
      case Strategy::bb: {
        const unsigned bx = unsigned(std::min<std::uint64_t>(blk_.rho, 32));
        const unsigned by =
            unsigned(std::max<std::uint64_t>(1, std::min<std::uint64_t>(blk_.rho, 1024 / bx)));
        const dim3 block(bx, by);
        const std::uint64_t gy = (f_.n + by - 1) / by;
        const dim3 g(unsigned((f_.n + bx - 1) / bx), unsigned(std::min<std::uint64_t>(gy, 65535)));
        step_bb<<<g, block>>>(cur_, next_, rule_, live_);
        break;
      }
    }
    check(cudaGetLastError(), "step kernel");
  }

  Fractal f_;
  Rule rule_;
  EngineOptions o_;
  Blocking blk_;
  int device_ = 0, sms_ = 1;
  std::string name_;
  std::uint64_t size_ = 0;
  std::uint8_t *cur_ = nullptr, *next_ = nullptr, *stage_ = nullptr;
  unsigned long long* live_ = nullptr;
  std::uint16_t *lx_ = nullptr, *ly_ = nullptr;
  std::int32_t* lnu_ = nullptr;
  TcWeights* weights_ = nullptr;
  cudaEvent_t e0_{}, e1_{};
  double seconds_ = 0;
};

template <bool kTensorCores>
__global__ void coarse_maps_kernel(std::uint64_t first, std::uint64_t count, int levels,
                                   const TcWeights* w, std::int64_t* out) {
  __shared__ std::int64_t nb[9];
  __shared__ __align__(32) unsigned char sb[512];
  __shared__ __align__(32) int sd[256];
  for (std::uint64_t i = blockIdx.x; i < count; i += gridDim.x) {
    coarse_maps<kTensorCores>(first + i, levels, nb, w, sb, sd);
    __syncthreads();
    if (threadIdx.x < 9) out[i * 9 + threadIdx.x] = nb[threadIdx.x];
    __syncthreads();
  }
}

}  // namespace

std::vector<std::int64_t> cuda_coarse_maps(const Fractal& f, const Blocking& blk, bool tensor_cores,
                                           std::uint64_t first, std::uint64_t count) {
  check(cudaMemcpyToSymbol(c_frac, &f, sizeof f), "cudaMemcpyToSymbol");
  TcWeights* w = upload_weights(f);
  std::int64_t* out = device_alloc<std::int64_t>(count * 9, "the maps");
  if (tensor_cores)
    coarse_maps_kernel<true><<<4096, 32>>>(first, count, blk.coarse_levels, w, out);
  else
    coarse_maps_kernel<false><<<4096, 32>>>(first, count, blk.coarse_levels, w, out);
  check(cudaGetLastError(), "coarse_maps_kernel");
  std::vector<std::int64_t> v(count * 9);
  check(cudaMemcpy(v.data(), out, v.size() * sizeof(std::int64_t), cudaMemcpyDeviceToHost),
        "cudaMemcpy");
  cudaFree(out);
  cudaFree(w);
  return v;
}

std::unique_ptr<Engine> make_cuda_engine(const Fractal& f, const Rule& rule,
                                         const EngineOptions& o) {
  return std::make_unique<CudaEngine>(f, rule, o);
}

}  // namespace tdsolve::fractal
