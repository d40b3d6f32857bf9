// Device and pinned buffers, streams and events as RAII types, and the
// choice of a rank's GPU: what every CUDA backend shares.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "solver/cpu/cpu_backend.hpp"
#include "solver/cuda/cuda_backend.hpp"
#include "solver/cuda/cuda_check.hpp"

namespace tdsolve::cuda {

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
  // Allocates and fills from the host.
  void upload(const std::vector<T>& v, const char* what) {
    allocate(v.size(), what);
    if (!v.empty())
      check(cudaMemcpy(ptr_, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), what);
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

inline int pick_device(const CudaOptions& o) {
  const int count = device_count();
  if (count == 0) throw UsageError("no CUDA device is visible (" + no_device_reason() + ")");
  const int dev = o.device >= 0 ? o.device : o.local_rank % count;
  if (dev >= count)
    throw UsageError("--device " + std::to_string(dev) + ": only " + std::to_string(count) +
                     " CUDA device" + (count > 1 ? "s are" : " is") + " visible");
  check(cudaSetDevice(dev), "cudaSetDevice");
  return dev;
}

// Ranks of this node that share one GPU split its free memory.
inline int ranks_sharing_device(const CudaOptions& o) {
  const int count = std::max(1, device_count());
  if (o.device >= 0) return o.local_ranks;  // an explicit device may be shared by all
  return (o.local_ranks + count - 1) / count;
}

// The largest chunk (values of value_bytes) a backend can buffer: two device
// buffers per rank on this GPU, 20% left for the runtime; two pinned host
// buffers (unless results stay on the device), within half of the node's
// share per rank.
inline index_t chunk_limit(const CudaOptions& o, bool keep_on_device, size_t value_bytes) {
  size_t free = 0, total = 0;
  check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  const index_t device =
      static_cast<index_t>(free * 0.8) / ranks_sharing_device(o) / (2 * value_bytes);
  const index_t host = cpu::available_host_bytes(o.local_ranks) / (4 * value_bytes);
  return std::max<index_t>(1, std::min(device, keep_on_device ? device : host));
}

}  // namespace tdsolve::cuda
