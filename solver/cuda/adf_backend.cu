// tdsolve adf on the GPU: one warp per centre (8 a block, striding over
// the chunk's centres). A warp gathers the centre's neighbours from the
// cell list the host built (solver/cell_list.hpp; its arrays copied once),
// its lanes testing a cell's points 32 at a time and compacting the legs
// that some ADF takes into the warp's shared memory: x_i − x_o (minimum
// image), 1/r and the ADFs whose J and K lists take it. Then every pair of
// legs, the lanes over the second leg, is binned into the block's shared
// histogram (32-bit counts, added to the chunk's 64-bit counts at the
// block's end; straight into those when the ADFs' slots do not fit).
//
// The arithmetic is the CPU's (solver/cpu/adf.cpp) operation for operation
// — this file is compiled with --fmad=false, and a pair's cosine does not
// depend on which of its legs comes first — so the counts are the CPU's
// bytes. A centre with more than kCap legs does not fit its warp's buffer:
// the kernel lists it, and the host computes the listed centres with the
// CPU's loop (cpu::adf_centres) when it takes the chunk.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "solver/adf_bins.hpp"
#include "solver/adf_legs.hpp"
#include "solver/cell_list.hpp"
#include "solver/cpu/adf.hpp"
#include "solver/cuda/cuda_backend.hpp"
#include "solver/cuda/cuda_check.hpp"
#include "solver/cuda/cuda_resources.cuh"
#include "solver/fault.hpp"

namespace tdsolve::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kCap = 128;           // legs a warp holds
constexpr int kSharedSlots = 6144;  // 24 KiB of 32-bit counts

template <typename T>
struct AdfParams {
  const T* x = nullptr;  // n × 3
  const std::int32_t* type = nullptr;
  CellView cells;  // device memory
  epilogue::Cell3<T> cell;
  AdfTable table;  // device memory
  AdfBinner binner;
  double outer2 = 0;
  index_t begin = 0, end = 0;            // the chunk's centres
  unsigned long long* counts = nullptr;  // the chunk's slots
  int slots = 0;                         // ADFs × (bins + 2)
  bool shared_counts = false;
  unsigned long long* spilled = nullptr;  // [0]: how many; then the centres over kCap legs
};

template <typename T>
struct WarpLegs {
  T d[kCap][3];
  T ir[kCap];
  unsigned jk[kCap];  // J mask | K mask << 16
};

template <typename T>
__global__ void __launch_bounds__(kThreads) adf_kernel(const AdfParams<T> k) {
  extern __shared__ unsigned char raw[];
  WarpLegs<T>* all = reinterpret_cast<WarpLegs<T>*>(raw);
  unsigned* hist = reinterpret_cast<unsigned*>(raw + kWarps * sizeof(WarpLegs<T>));
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  WarpLegs<T>& w = all[warp];
  if (k.shared_counts) {
    for (int q = threadIdx.x; q < k.slots; q += kThreads)
      hist[q] = 0;
    __syncthreads();
  }
  const int row = k.binner.bins + 2;
  const CellView& cv = k.cells;
  for (index_t i = k.begin + index_t(blockIdx.x) * kWarps + warp; i < k.end;
       i += index_t(gridDim.x) * kWarps) {
    const unsigned centre = k.table.centre(k.type[i]);
    if (!centre) continue;
    int m = 0;  // legs gathered (beyond kCap: counted, not kept)
    cv.for_each_cell(i, [&](index_t cc) {
      const index_t s0 = cv.start[cc], s1 = cv.start[cc + 1];
      for (index_t s = s0; s < s1; s += 32) {  // the lanes take a cell's points 32 at a time
        AdfLeg<T> l;
        bool keep = false;
        if (s + lane < s1) {
          const index_t o = cv.order[s + lane];
          keep = o != i && adf_leg(k.x, i, o, k.type[o], k.cell, k.table, k.outer2, centre, &l);
        }
        const unsigned ballot = __ballot_sync(0xffffffffu, keep);
        if (keep) {
          const int slot = m + __popc(ballot & ((1u << lane) - 1));
          if (slot < kCap) {
            w.d[slot][0] = l.d[0];
            w.d[slot][1] = l.d[1];
            w.d[slot][2] = l.d[2];
            w.ir[slot] = l.ir;
            w.jk[slot] = l.j | (l.k << 16);
          }
        }
        m += __popc(ballot);
      }
    });
    __syncwarp();
    if (m > kCap) {  // the host takes it
      if (lane == 0) {
        const unsigned long long q = atomicAdd(&k.spilled[0], 1ull);
        k.spilled[1 + q] = static_cast<unsigned long long>(i);
      }
      continue;
    }
    for (int a = 0; a < m; ++a) {
      const unsigned ja = w.jk[a] & 0xffffu, ka = w.jk[a] >> 16;
      for (int b = a + 1 + lane; b < m; b += 32) {
        unsigned adfs = adf_counted(centre, ja, ka, w.jk[b] & 0xffffu, w.jk[b] >> 16);
        if (!adfs) continue;
        const T cs = adf_cos(w.d[a], w.ir[a], w.d[b], w.ir[b]);
        const int slot = k.binner.bin(static_cast<double>(cs)) + 1;
        for (; adfs; adfs &= adfs - 1) {
          const int at_slot = (__ffs(adfs) - 1) * row + slot;
          if (k.shared_counts)
            atomicAdd(&hist[at_slot], 1u);
          else
            atomicAdd(&k.counts[at_slot], 1ull);
        }
      }
    }
    __syncwarp();  // the buffer is free for the next centre
  }
  if (!k.shared_counts) return;
  __syncthreads();
  for (int q = threadIdx.x; q < k.slots; q += kThreads)
    if (hist[q]) atomicAdd(&k.counts[q], static_cast<unsigned long long>(hist[q]));
}

template <typename T>
class CudaAdfBackend final : public Backend<T> {
 public:
  CudaAdfBackend(const Problem<T>& p, const CudaOptions& o)
      : p_(p), device_(pick_device(o)), slots_(p.hist.slots()) {
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, device_), "cudaGetDeviceProperties");
    name_ = prop.name;
    sms_ = prop.multiProcessorCount;
    const double lengths[3] = {double(p.box[0]), double(p.box[1]), double(p.box[2])};
    const double tilt[3] = {double(p.tilt[0]), double(p.tilt[1]), double(p.tilt[2])};
    host_cells_ = build_cell_list(p.a.data(), p.rows, lengths, tilt, p.adf.widths, p.adf.outer);
    x_.upload(p.a, "the points");
    type_.upload(p.adf.type, "the points' types");
    masks_.upload(p.adf.masks, "the ADFs' types");
    cut2_.upload(p.adf.cut2, "the ADFs' cutoffs");
    start_.upload(host_cells_.start, "the cell list");
    order_.upload(host_cells_.order, "the cell list");
    cell_.upload(host_cells_.cell, "the cell list");
    for (int s = 0; s < 2; ++s) {
      device_counts_[s].allocate(slots_, "the angle counts");
      host_counts_[s].allocate(slots_, "the angle counts");
    }
    shared_bytes_ =
        kWarps * sizeof(WarpLegs<T>) + (slots_ <= kSharedSlots ? slots_ * sizeof(unsigned) : 0);
    check(cudaFuncSetAttribute(adf_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(shared_bytes_)),
          "cudaFuncSetAttribute (adf kernel shared memory)");
  }
  ~CudaAdfBackend() override { cudaDeviceSynchronize(); }

  std::string describe() const override {
    return "cuda (" + name_ + ", device " + std::to_string(device_) + ", a warp a centre)";
  }
  // Histograms buffer no values: chunks are bounded elsewhere.
  index_t max_chunk_elements() const override { return ~index_t(0) >> 2; }
  void reserve(index_t) override {}

  void submit(const ChunkJob& job) override {
    fault_point(Stage::compute, job.chunk);
    const int s = static_cast<int>(submitted_++ % 2);
    chunk_[s] = job;
    AdfParams<T> k;
    k.x = x_.get();
    k.type = type_.get();
    k.cells = host_cells_.view();
    k.cells.start = start_.get();
    k.cells.order = order_.get();
    k.cells.cell = cell_.get();
    k.cell = p_.cell3();
    k.table = AdfTable{int(p_.adf.count), masks_.get(), cut2_.get()};
    k.binner = AdfBinner(static_cast<int>(p_.adf.bins), p_.adf.ordinate == AdfOrdinate::cosine);
    k.outer2 = p_.adf.outer * p_.adf.outer;
    k.begin = std::min(job.row_begin * p_.rho, p_.rows);
    k.end = std::min(job.row_end * p_.rho, p_.rows);
    k.counts = device_counts_[s].get();
    k.slots = static_cast<int>(slots_);
    k.shared_counts = slots_ <= kSharedSlots;
    const index_t centres = k.end - k.begin;
    if (spilled_capacity_[s] < centres + 1) {
      device_spilled_[s].allocate(centres + 1, "the centres with many neighbours");
      host_spilled_[s].allocate(centres + 1, "the centres with many neighbours");
      spilled_capacity_[s] = centres + 1;
    }
    k.spilled = device_spilled_[s].get();
    check(cudaStreamWaitEvent(stream_.s, copied_[s].e, 0), "cudaStreamWaitEvent");
    check(cudaEventRecord(kernel_start_[s].e, stream_.s), "cudaEventRecord");
    check(cudaMemsetAsync(k.counts, 0, slots_ * sizeof(unsigned long long), stream_.s),
          "cudaMemsetAsync (angle counts)");
    check(cudaMemsetAsync(k.spilled, 0, sizeof(unsigned long long), stream_.s),
          "cudaMemsetAsync (angle counts)");
    if (centres > 0) {
      const index_t blocks = std::min<index_t>((centres + kWarps - 1) / kWarps, index_t(sms_) * 16);
      adf_kernel<T><<<static_cast<unsigned>(blocks), kThreads, shared_bytes_, stream_.s>>>(k);
    }
    check(cudaGetLastError(), "kernel launch (adf)");
    check(cudaEventRecord(kernel_stop_[s].e, stream_.s), "cudaEventRecord");
    check(cudaMemcpyAsync(host_counts_[s].get(), k.counts, slots_ * sizeof(unsigned long long),
                          cudaMemcpyDeviceToHost, stream_.s),
          "cudaMemcpyAsync (angle counts to host)");
    check(cudaMemcpyAsync(host_spilled_[s].get(), k.spilled,
                          (centres + 1) * sizeof(unsigned long long), cudaMemcpyDeviceToHost,
                          stream_.s),
          "cudaMemcpyAsync (spilled centres to host)");
    check(cudaEventRecord(copied_[s].e, stream_.s), "cudaEventRecord");
  }

  ChunkResult<T> wait() override {
    const int s = static_cast<int>(waited_++ % 2);
    check(cudaEventSynchronize(copied_[s].e), "waiting for a chunk (kernel or copy failed)");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, kernel_start_[s].e, kernel_stop_[s].e), "cudaEventElapsedTime");
    kernel_s_ += ms * 1e-3;
    fault_point(Stage::copy, chunk_[s].chunk);
    std::uint64_t* counts = reinterpret_cast<std::uint64_t*>(host_counts_[s].get());
    // The centres with more legs than a warp holds: the CPU's loop.
    const unsigned long long* spilled = host_spilled_[s].get();
    if (const index_t count = static_cast<index_t>(spilled[0])) {
      const std::vector<index_t> list(spilled + 1, spilled + 1 + count);
      const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
      cpu::adf_centres<T>(p_, host_cells_.view(), 0, count, list.data(), counts, threads);
      spilled_centres_ += count;
    }
    ChunkResult<T> r;
    r.counts = counts;
    return r;
  }
  double compute_seconds() const override { return kernel_s_; }
  void reset_timers() override { kernel_s_ = 0; }
  std::vector<typename Backend<T>::Ceiling> write_ceilings(const std::vector<index_t>&) override {
    return {};
  }

 private:
  const Problem<T>& p_;
  int device_, sms_ = 1;
  index_t slots_;
  size_t shared_bytes_ = 0;
  std::string name_;
  CellList host_cells_;
  DeviceBuffer<T> x_;
  DeviceBuffer<std::int32_t> type_;
  DeviceBuffer<std::uint16_t> masks_;
  DeviceBuffer<double> cut2_;
  DeviceBuffer<index_t> start_, order_;
  DeviceBuffer<std::int32_t> cell_;
  DeviceBuffer<unsigned long long> device_counts_[2], device_spilled_[2];
  PinnedBuffer<unsigned long long> host_counts_[2], host_spilled_[2];
  index_t spilled_capacity_[2] = {0, 0};
  index_t spilled_centres_ = 0;
  Stream stream_;
  Event kernel_start_[2] = {Event(true), Event(true)}, kernel_stop_[2] = {Event(true), Event(true)};
  Event copied_[2] = {Event(true), Event(true)};
  ChunkJob chunk_[2];
  index_t submitted_ = 0, waited_ = 0;
  double kernel_s_ = 0;
};

}  // namespace

template <typename T>
std::unique_ptr<Backend<T>> make_cuda_adf_backend(const Problem<T>& problem,
                                                  const CudaOptions& options) {
  return std::make_unique<CudaAdfBackend<T>>(problem, options);
}

template std::unique_ptr<Backend<float>> make_cuda_adf_backend(const Problem<float>&,
                                                               const CudaOptions&);
template std::unique_ptr<Backend<double>> make_cuda_adf_backend(const Problem<double>&,
                                                                const CudaOptions&);

}  // namespace tdsolve::cuda
