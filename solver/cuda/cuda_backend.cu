// The CUDA backend: one GPU per rank, chunks pipelined through two device
// buffers and two pinned host buffers on two streams, so that
//   kernel(c+1)  ||  device-to-host(c)  ||  HDF5 write(c-1, by the driver).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/error.hpp"
#include "solver/cpu/cpu_backend.hpp"
#include "solver/cuda/cuda_backend.hpp"
#include "solver/cuda/cuda_check.hpp"
#include "solver/cuda/edm_kernels.cuh"

namespace tdsolve::cuda {

bool built_with_cuda() {
  return true;
}

namespace {
cudaError_t count_devices(int* n) {
  *n = 0;
  const cudaError_t e = cudaGetDeviceCount(n);
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" error
    *n = 0;
  }
  return e;
}
}  // namespace

int device_count() {
  int n = 0;
  count_devices(&n);
  return n;
}

std::string no_device_reason() {
  int n = 0;
  const cudaError_t e = count_devices(&n);
  if (e != cudaSuccess) return cudaGetErrorString(e);
  return n == 0 ? "no CUDA device is visible" : "";
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("CUDA ") + what + ": " + cudaGetErrorString(e));
}

namespace {

// Owns device memory (kPinnedHost = false) or pinned host memory (true).
template <typename T, bool kPinnedHost>
class CudaBuffer {
 public:
  CudaBuffer() = default;
  CudaBuffer(const CudaBuffer&) = delete;
  CudaBuffer& operator=(const CudaBuffer&) = delete;
  ~CudaBuffer() { release(); }
  void allocate(index_t count, const char* what) {
    release();
    if (count == 0) return;
    void* p = nullptr;
    const cudaError_t e = kPinnedHost ? cudaHostAlloc(&p, count * sizeof(T), cudaHostAllocDefault)
                                      : cudaMalloc(&p, count * sizeof(T));
    if (e != cudaSuccess) {
      cudaGetLastError();
      throw std::runtime_error(std::string(kPinnedHost ? "cannot pin host memory for "
                                                       : "out of GPU memory allocating ") +
                               what + " (" + std::to_string(count * sizeof(T) >> 20) +
                               " MiB): " + cudaGetErrorString(e));
    }
    ptr_ = static_cast<T*>(p);
  }
  void release() {
    if (ptr_) kPinnedHost ? cudaFreeHost(ptr_) : cudaFree(ptr_);
    ptr_ = nullptr;
  }
  T* get() const { return ptr_; }

 private:
  T* ptr_ = nullptr;
};
template <typename T>
using DeviceBuffer = CudaBuffer<T, false>;
template <typename T>
using PinnedBuffer = CudaBuffer<T, true>;

struct Stream {
  cudaStream_t s = nullptr;
  Stream() { check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate"); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream() { cudaStreamDestroy(s); }
};
struct Event {
  cudaEvent_t e = nullptr;
  explicit Event(bool timing = false) {
    check(cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming),
          "cudaEventCreate");
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event() { cudaEventDestroy(e); }
};

int pick_device(const CudaOptions& o) {
  const int count = device_count();
  if (count == 0) throw UsageError("no CUDA device is visible (" + no_device_reason() + ")");
  const int dev = o.device >= 0 ? o.device : o.local_rank % count;
  if (dev >= count)
    throw UsageError("--device " + std::to_string(dev) + ": only " + std::to_string(count) +
                     " CUDA device" + (count > 1 ? "s are" : " is") + " visible");
  check(cudaSetDevice(dev), "cudaSetDevice");
  return dev;
}

// The kernels cut tiles into 128×128 sub-tiles.
void check_block(index_t rho) {
  if (rho % EdmPolicy::kTile != 0)
    throw UsageError("--backend cuda needs --block to be a multiple of " +
                     std::to_string(EdmPolicy::kTile) + " (got " + std::to_string(rho) + ")");
}

// Ranks of this node that share one GPU split its free memory.
int ranks_sharing_device(const CudaOptions& o) {
  const int count = std::max(1, device_count());
  if (o.device >= 0) return o.local_ranks;  // an explicit device may be shared by all
  return (o.local_ranks + count - 1) / count;
}

// Tests and benchmarks can force every sub-tile onto the masked path.
bool masked_only_requested() {
  const char* v = std::getenv("TDSOLVE_CUDA_MASKED_ONLY");
  return v && *v == '1';
}

// Kernel parameters for block rows [row_begin, row_end) of p, written to out
// (which holds the chunk from its first pair on).
template <typename T>
EdmParams<T> chunk_params(const EdmProblem<T>& p, const T* d_points, const double* d_norms,
                          T* d_out, index_t row_begin, index_t row_end, bool bounding_box) {
  EdmParams<T> k{};
  k.points = d_points;
  k.norms = d_norms;
  k.out = d_out;
  k.n = p.n;
  k.d = p.d;
  k.rho = p.tiling.rho;
  k.m = p.tiling.m;
  k.row_begin = row_begin;
  k.row_end = row_end;
  k.out_offset = p.tiling.elements_before(row_begin);
  const mapping::BlockRange blocks = mapping::lambda2_blocks(k.m, row_begin, row_end);
  k.block_begin = blocks.begin;
  k.block_end = blocks.end;
  k.bounding_box = bounding_box;
  k.masked_only = masked_only_requested();
  return k;
}

template <typename T>
class CudaBackend final : public EdmBackend<T> {
 public:
  CudaBackend(const EdmProblem<T>& p, const CudaOptions& o)
      : p_(p), o_(o), device_(pick_device(o)) {
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, device_), "cudaGetDeviceProperties");
    name_ = prop.name;
    check_block(p.tiling.rho);
    points_.allocate(p.points.size(), "the points");
    check(cudaMemcpy(points_.get(), p.points.data(), p.points.size() * sizeof(T),
                     cudaMemcpyHostToDevice),
          "copying the points to the GPU");
    if (!p.norms.empty()) {
      norms_.allocate(p.norms.size(), "the norms");
      check(cudaMemcpy(norms_.get(), p.norms.data(), p.norms.size() * sizeof(double),
                       cudaMemcpyHostToDevice),
            "copying the norms to the GPU");
    }
  }
  ~CudaBackend() override {
    // Nothing may still write into buffers about to be freed.
    cudaDeviceSynchronize();
  }

  std::string describe() const override {
    return "cuda (" + name_ + ", device " + std::to_string(device_) + ", " +
           (o_.bounding_box ? "bounding-box grid" : "λ2 grid") + ")";
  }

  index_t max_chunk_elements() const override {
    size_t free = 0, total = 0;
    check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
    // Two device buffers per rank on this GPU, 20% left for the runtime;
    // two pinned host buffers, within half of the node's share per rank.
    const index_t device =
        static_cast<index_t>(free * 0.8) / ranks_sharing_device(o_) / (2 * sizeof(T));
    const index_t host = cpu::available_host_bytes(o_.local_ranks) / (4 * sizeof(T));
    return std::max<index_t>(1, std::min(device, host));
  }

  void reserve(index_t elements) override {
    for (int s = 0; s < 2; ++s) {
      device_out_[s].allocate(elements, "a chunk buffer");
      host_out_[s].allocate(elements, "a chunk buffer");
    }
  }

  void submit(const ChunkJob& job) override {
    const int s = static_cast<int>(submitted_++ % 2);
    bytes_[s] = job.elements * sizeof(T);
    const EdmParams<T> k = chunk_params(p_, points_.get(), norms_.get(), device_out_[s].get(),
                                        job.row_begin, job.row_end, o_.bounding_box);
    // The device buffer is free once the copy of the chunk before last is done.
    check(cudaStreamWaitEvent(compute_.s, copied_[s].e, 0), "cudaStreamWaitEvent");
    check(cudaEventRecord(kernel_start_[s].e, compute_.s), "cudaEventRecord");
    launch_edm<T>(k, p_.metric, compute_.s);
    check(cudaGetLastError(), "kernel launch");
    check(cudaEventRecord(kernel_stop_[s].e, compute_.s), "cudaEventRecord");
    check(cudaStreamWaitEvent(copy_.s, kernel_stop_[s].e, 0), "cudaStreamWaitEvent");
    check(cudaEventRecord(copy_start_[s].e, copy_.s), "cudaEventRecord");
    check(cudaMemcpyAsync(host_out_[s].get(), device_out_[s].get(), bytes_[s],
                          cudaMemcpyDeviceToHost, copy_.s),
          "cudaMemcpyAsync (device to host)");
    check(cudaEventRecord(copied_[s].e, copy_.s), "cudaEventRecord");
  }

  const T* wait() override {
    const int s = static_cast<int>(waited_++ % 2);
    check(cudaEventSynchronize(copied_[s].e), "waiting for a chunk (kernel or copy failed)");
    float kernel_ms = 0, copy_ms = 0;
    check(cudaEventElapsedTime(&kernel_ms, kernel_start_[s].e, kernel_stop_[s].e),
          "cudaEventElapsedTime");
    check(cudaEventElapsedTime(&copy_ms, copy_start_[s].e, copied_[s].e), "cudaEventElapsedTime");
    kernel_s_ += kernel_ms * 1e-3;
    copy_s_ += copy_ms * 1e-3;
    return host_out_[s].get();
  }

  double compute_seconds() const override { return kernel_s_; }
  double transfer_seconds() const override { return copy_s_; }

 private:
  const EdmProblem<T>& p_;
  CudaOptions o_;
  int device_;
  std::string name_;
  DeviceBuffer<T> points_;
  DeviceBuffer<double> norms_;
  DeviceBuffer<T> device_out_[2];
  PinnedBuffer<T> host_out_[2];
  Stream compute_, copy_;
  Event kernel_start_[2] = {Event(true), Event(true)}, kernel_stop_[2] = {Event(true), Event(true)};
  Event copy_start_[2] = {Event(true), Event(true)}, copied_[2] = {Event(true), Event(true)};
  index_t bytes_[2] = {0, 0};
  index_t submitted_ = 0, waited_ = 0;
  double kernel_s_ = 0, copy_s_ = 0;
};

}  // namespace

template <typename T>
std::unique_ptr<EdmBackend<T>> make_cuda_backend(const EdmProblem<T>& problem,
                                                 const CudaOptions& options) {
  return std::make_unique<CudaBackend<T>>(problem, options);
}

template std::unique_ptr<EdmBackend<float>> make_cuda_backend(const EdmProblem<float>&,
                                                              const CudaOptions&);
template std::unique_ptr<EdmBackend<double>> make_cuda_backend(const EdmProblem<double>&,
                                                               const CudaOptions&);

}  // namespace tdsolve::cuda

namespace tdsolve::cuda {

namespace {

__global__ void store16_kernel(float4* out, index_t count, float value) {
  const float4 v = make_float4(value, value, value, value);
  for (index_t k = blockIdx.x * static_cast<index_t>(blockDim.x) + threadIdx.x; k < count;
       k += static_cast<index_t>(gridDim.x) * blockDim.x)
    out[k] = v;
}

// Times `passes` runs of f(stream), each bracketed by events.
template <typename F>
std::vector<double> time_passes(int passes, cudaStream_t s, F&& f) {
  Event a(true), b(true);
  std::vector<double> ms;
  f(s);  // warm-up
  check(cudaStreamSynchronize(s), "warm-up");
  for (int r = 0; r < passes; ++r) {
    check(cudaEventRecord(a.e, s), "cudaEventRecord");
    f(s);
    check(cudaGetLastError(), "kernel launch");
    check(cudaEventRecord(b.e, s), "cudaEventRecord");
    check(cudaEventSynchronize(b.e), "timed pass");
    float t = 0;
    check(cudaEventElapsedTime(&t, a.e, b.e), "cudaEventElapsedTime");
    ms.push_back(t);
  }
  return ms;
}

}  // namespace

template <typename T>
index_t device_buffer_elements(const CudaOptions& o) {
  pick_device(o);
  size_t free = 0, total = 0;
  check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  return static_cast<index_t>(free * 0.85) / sizeof(T);
}

template <typename T>
KernelTiming time_edm_kernels(const EdmProblem<T>& p, const CudaOptions& o,
                              const mapping::ChunkPlan& plan, int repeat) {
  check_block(p.tiling.rho);
  const int dev = pick_device(o);
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties");
  KernelTiming t;
  t.device = prop.name;
  t.launches = plan.chunks();
  DeviceBuffer<T> points, out;
  DeviceBuffer<double> norms;
  points.allocate(p.points.size(), "the points");
  check(cudaMemcpy(points.get(), p.points.data(), p.points.size() * sizeof(T),
                   cudaMemcpyHostToDevice),
        "copy");
  if (!p.norms.empty()) {
    norms.allocate(p.norms.size(), "the norms");
    check(cudaMemcpy(norms.get(), p.norms.data(), p.norms.size() * sizeof(double),
                     cudaMemcpyHostToDevice),
          "copy");
  }
  out.allocate(plan.largest_chunk() + 16 / sizeof(T), "the output buffer");
  Stream stream;
  auto edm_pass = [&](cudaStream_t s) {
    for (index_t c = 0; c < plan.chunks(); ++c)
      launch_edm<T>(chunk_params(p, points.get(), norms.get(), out.get(), plan.row_begin(c),
                                 plan.row_end(c), o.bounding_box),
                    p.metric, s);
  };
  t.kernel_ms = time_passes(repeat, stream.s, edm_pass);
  t.memset_ms = time_passes(repeat, stream.s, [&](cudaStream_t s) {
    for (index_t c = 0; c < plan.chunks(); ++c)
      check(cudaMemsetAsync(out.get(), 0x3f, plan.elements(c) * sizeof(T), s), "cudaMemsetAsync");
  });
  t.store_ms = time_passes(repeat, stream.s, [&](cudaStream_t s) {
    for (index_t c = 0; c < plan.chunks(); ++c) {
      const index_t vecs = plan.elements(c) * sizeof(T) / 16;
      const unsigned grid = static_cast<unsigned>(std::min<index_t>((vecs + 255) / 256, 1u << 20));
      store16_kernel<<<grid, 256, 0, s>>>(reinterpret_cast<float4*>(out.get()), vecs, 1.5f);
    }
  });
  return t;
}

template KernelTiming time_edm_kernels<float>(const EdmProblem<float>&, const CudaOptions&,
                                              const mapping::ChunkPlan&, int);
template KernelTiming time_edm_kernels<double>(const EdmProblem<double>&, const CudaOptions&,
                                               const mapping::ChunkPlan&, int);
template index_t device_buffer_elements<float>(const CudaOptions&);
template index_t device_buffer_elements<double>(const CudaOptions&);

}  // namespace tdsolve::cuda
