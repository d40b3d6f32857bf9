// The CUDA backend: one GPU per rank, chunks pipelined through two device
// buffers and two pinned host buffers on two streams, so that
//   kernel(c+1)  ||  device-to-host(c)  ||  sink(c-1, by the driver).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "solver/cpu/cpu_backend.hpp"
#include "solver/cuda/block_kernels.cuh"
#include "solver/cuda/cuda_backend.hpp"
#include "solver/cuda/cuda_check.hpp"
#include "solver/cuda/cuda_resources.cuh"
#include "solver/cuda/knn_kernels.cuh"
#include "solver/fault.hpp"
#include "solver/knn.hpp"

namespace tdsolve::cuda {
// The kernel families are instantiated in kernels_*.cu (compiled in
// parallel); these declarations keep this file from instantiating them again.
#define TDS_EXTERN_FAMILY(T, Map, H, P) \
  extern template void launch_family<T, Map, H, P>(const KernelParams<T>&, cudaStream_t);
#define TDS_EXTERN_FAMILIES(T)                                \
  TDS_EXTERN_FAMILY(T, mapping::Lambda2Map, false, false)     \
  TDS_EXTERN_FAMILY(T, mapping::BoundingBoxMap, false, false) \
  TDS_EXTERN_FAMILY(T, mapping::RectMap, false, false)        \
  TDS_EXTERN_FAMILY(T, mapping::Lambda2Map, true, false)      \
  TDS_EXTERN_FAMILY(T, mapping::Lambda2Map, true, true)       \
  TDS_EXTERN_FAMILY(T, mapping::BoundingBoxMap, true, false)  \
  TDS_EXTERN_FAMILY(T, mapping::BoundingBoxMap, true, true)
TDS_EXTERN_FAMILIES(float)
TDS_EXTERN_FAMILIES(double)
#undef TDS_EXTERN_FAMILIES
#undef TDS_EXTERN_FAMILY
}  // namespace tdsolve::cuda

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

// Tests and benchmarks can force every sub-tile onto the masked path.
bool masked_only_requested() {
  const char* v = std::getenv("TDSOLVE_CUDA_MASKED_ONLY");
  return v && *v == '1';
}

// The environment variable `name` as an index into `options`, or -1 when it
// is unset or empty; any other value is a usage error that names the
// options ("NAME must be a, b or c, not 'x'").
int env_choice(const char* name, std::initializer_list<const char*> options) {
  const char* v = std::getenv(name);
  if (!v || !*v) return -1;
  std::string list;
  int i = 0;
  for (const char* o : options) {
    if (std::string(o) == v) return i;
    list += (i == 0 ? "" : (i + 1 == static_cast<int>(options.size()) ? " or " : ", "));
    list += o;
    ++i;
  }
  throw UsageError(std::string(name) + " must be " + list + ", not '" + v + "'");
}

// The order λ2's tiles run in (mapping::Grid::reversed): TDSOLVE_LAMBDA2_ORDER
// = long (the bounding box's order, from the long end of the triangle) or
// short (from the short end); long unless set (docs/performance.md).
bool lambda2_from_long_end() {
  return env_choice("TDSOLVE_LAMBDA2_ORDER", {"long", "short"}) != 1;
}

// Whether the device's memory is fast (memory clock × bus width at least
// 4 TB/s: the H200's 4.8, not the H100's 3.35). The d <= 8 choices below
// follow it; each was measured on both sides of the line (performance.md).
bool fast_memory(int device) {
  int khz = 0, bits = 0;
  if (cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&bits, cudaDevAttrGlobalMemoryBusWidth, device) != cudaSuccess) {
    cudaGetLastError();  // no figure: the H100's choices
    return false;
  }
  const double bytes_per_s = 2.0 * khz * 1e3 * bits / 8;  // double data rate
  return bytes_per_s >= 4e12;
}

// d <= 4's launch shape in tiles (BlockPolicy::kMoreBlocks): 3 blocks an SM
// on fast memory, 2 elsewhere. The H200 wrote d = 1..4 up to 13 % faster
// with 3, the H100 up to 9 % slower. TDSOLVE_SMALL_D_BLOCKS=2 or 3 forces one
// (tests, measurements). Stores in a periodic box use it, and stores in
// tiles asked for.
bool small_d_more_blocks(bool fast) {
  const int c = env_choice("TDSOLVE_SMALL_D_BLOCKS", {"2", "3"});
  return c < 0 ? fast : c == 1;
}

// The store schedule of d <= 8 (mapping/strips.hpp; block_kernels.cuh):
// lanes (strips, the columns in registers, each thread a 16-byte piece of
// every row), strips (d <= 4: the columns in shared memory, each warp a row
// through a buffer) or ρ×ρ tiles. At d <= 4 lanes, but for d <= 2 where
// memory is not fast: there (the H100, n = 1e5) the strips wrote d = 1 6 %
// and d = 2 2 % faster; lanes took the H100's d = 3, 4 from 86 and 84 % of
// cudaMemset to 92 and 86 %, and the H200's d = 1..4 from the tiles'
// 70-76 % to 78-89 % (performance.md). At d = 5..8 the tiles, and lanes
// only when asked for: the kernel alone wrote the H100's d = 5..8 at
// 78-90 % of cudaMemset against the tiles' 65-70 %, but the backend's
// checks on a GPU have not run on it yet (performance.md).
// TDSOLVE_STORE_SCHEDULE=lanes, strips or tiles forces one (strips past
// d = 4, where there is no strips kernel: the tiles).
enum class StoreSchedule { tiles, strips, lanes };
StoreSchedule store_schedule(bool fast, index_t d) {
  using S = StoreSchedule;
  constexpr S kAsked[] = {S::strips, S::tiles, S::lanes};  // in the order the message names them
  const int c = env_choice("TDSOLVE_STORE_SCHEDULE", {"strips", "tiles", "lanes"});
  if (d > BlockPolicy::kLaneMaxD) return S::tiles;
  if (d > BlockPolicy::kStripMaxD) return c >= 0 && kAsked[c] == S::lanes ? S::lanes : S::tiles;
  if (c >= 0) return kAsked[c];
  return fast || d > 2 ? S::lanes : S::strips;
}

// Rows of a strip: BlockPolicy::strip_rows or lane_rows, or TDSOLVE_STRIP_ROWS
// (8, 16, 32, 64 or 128) to measure others.
index_t strip_rows(index_t d, StoreSchedule s, bool fast) {
  constexpr index_t kRows[] = {8, 16, 32, 64, 128};
  const int c = env_choice("TDSOLVE_STRIP_ROWS", {"8", "16", "32", "64", "128"});
  if (c >= 0) return kRows[c];
  const int dd = static_cast<int>(std::min<index_t>(d, 8));
  return s == StoreSchedule::lanes ? BlockPolicy::lane_rows(dd, fast) : BlockPolicy::strip_rows(dd);
}

template <typename T>
// The kernels cut tiles into 128×128 sub-tiles; the knn kernel keeps its
// lists in local memory.
void check_problem(const Problem<T>& p) {
  if (p.knn()) {
    if (p.k > kMaxGpuNeighbors)
      throw UsageError("--backend cuda keeps at most " + std::to_string(kMaxGpuNeighbors) +
                       " neighbours a point (--k " + std::to_string(p.k) +
                       "); use --backend cpu for more");
    return;
  }
  if (p.rho % BlockPolicy::kTile != 0)
    throw UsageError("--backend cuda needs --block to be a multiple of " +
                     std::to_string(BlockPolicy::kTile) + " (got " + std::to_string(p.rho) + ")");
}

// Histogram copies a block keeps in shared memory, at most one a warp.
index_t hist_copies_wanted() {
  const char* v = std::getenv("TDSOLVE_HIST_COPIES");
  index_t want = BlockPolicy::kWarps;
  if (v && *v) {
    const long c = std::strtol(v, nullptr, 10);
    if (c == 1 || c == 2 || c == 4 || c == 8) want = static_cast<index_t>(c);
  }
  return want;
}

// Picks the kernel family of (domain, map, epilogue, box).
template <typename T>
void launch_chunk(const Problem<T>& p, const KernelParams<T>& k, cudaStream_t s) {
  const bool hist = p.epilogue == EpilogueKind::histogram, periodic = p.box_dims > 0;
  dispatch_map(p.domain, p.map, [&](auto map) {
    using Map = decltype(map);
    if (!hist) return launch_family<T, Map, false, false>(k, s);
    if constexpr (std::is_same_v<Map, mapping::RectMap>) {
      throw std::logic_error("no histogram kernels for rectangles");
    } else {
      if (periodic) return launch_family<T, Map, true, true>(k, s);
      return launch_family<T, Map, true, false>(k, s);
    }
  });
}

__global__ void store16_kernel(float4* out, index_t count, float value) {
  const float4 v = make_float4(value, value, value, value);
  for (index_t k = blockIdx.x * static_cast<index_t>(blockDim.x) + threadIdx.x; k < count;
       k += static_cast<index_t>(gridDim.x) * blockDim.x)
    out[k] = v;
}

template <typename T>
class CudaBackend final : public Backend<T> {
 public:
  CudaBackend(const Problem<T>& p, const CudaOptions& o) : p_(p), o_(o), device_(pick_device(o)) {
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, device_), "cudaGetDeviceProperties");
    name_ = prop.name;
    check_problem(p);
    const bool fast = fast_memory(device_);  // the d <= 8 choices follow it
    more_blocks_ = small_d_more_blocks(fast);
    long_end_ = lambda2_from_long_end();  // a bad value fails here, before any file
    schedule_ = store_schedule(fast, p.d);
    strip_rows_ = strip_rows(p.d, schedule_, fast);
    a_.upload(p.a, "the points");
    if (p.domain == DomainKind::rect && !p.knn()) b_.upload(p.b, "the second set of points");
    norms_a_.upload(p.norms_a, "the norms");
    norms_b_.upload(p.norms_b, "the norms");
    weights_.upload(p.kernel_weights, "the weights");
    if (p.epilogue == EpilogueKind::histogram) {
      slots_ = p.hist.slots();
      edges_.upload(p.hist.edges, "the bin edges");
      for (int s = 0; s < 2; ++s) {
        device_counts_[s].allocate(slots_, "histogram counts");
        host_counts_[s].allocate(slots_, "histogram counts");
      }
    }
  }
  ~CudaBackend() override {
    // Nothing may still write into buffers about to be freed.
    cudaDeviceSynchronize();
  }

  std::string describe() const override {
    return "cuda (" + name_ + ", device " + std::to_string(device_) + ", " +
           (p_.domain == DomainKind::rect ? "rectangle"
            : p_.map == MapKind::bb       ? "bounding-box"
                                          : "λ2") +
           " grid)";
  }

  index_t max_chunk_elements() const override {
    if (p_.knn()) {  // rows of K distances and indices
      const index_t rows = chunk_limit(o_, keep_on_device_, p_.k * (sizeof(T) + 8));
      return rows > (index_t(1) << 62) / p_.cols ? (index_t(1) << 62) : rows * p_.cols;
    }
    return chunk_limit(o_, keep_on_device_, sizeof(T));
  }

  void reserve(index_t elements) override {
    if (slots_ > 0) return;
    if (p_.knn()) {
      const index_t values = (elements + p_.cols - 1) / p_.cols * p_.k;
      for (int s = 0; s < 2; ++s) {
        device_out_[s].allocate(values, "a chunk buffer");
        device_idx_[s].allocate(values, "a chunk buffer");
        if (!keep_on_device_) {
          host_out_[s].allocate(values, "a chunk buffer");
          host_idx_[s].allocate(values, "a chunk buffer");
        }
      }
      return;
    }
    for (int s = 0; s < 2; ++s) {
      device_out_[s].allocate(elements, "a chunk buffer");
      if (!keep_on_device_) host_out_[s].allocate(elements, "a chunk buffer");
    }
  }

  void keep_on_device(bool keep) override { keep_on_device_ = keep; }

  void submit(const ChunkJob& job) override {
    fault_point(Stage::compute, job.chunk);
    const int s = static_cast<int>(submitted_++ % 2);
    chunk_[s] = job.chunk;
    const KernelParams<T> k = params(job, s);
    // The device buffer is free once the copy of the chunk before last is done.
    check(cudaStreamWaitEvent(compute_.s, copied_[s].e, 0), "cudaStreamWaitEvent");
    check(cudaEventRecord(kernel_start_[s].e, compute_.s), "cudaEventRecord");
    if (slots_ > 0)
      check(cudaMemsetAsync(device_counts_[s].get(), 0, slots_ * sizeof(unsigned long long),
                            compute_.s),
            "cudaMemsetAsync (histogram)");
    if (p_.knn()) {
      launch_knn<T>(knn_params(job, s), compute_.s);
    } else {
      launch_chunk<T>(p_, k, compute_.s);
    }
    check(cudaGetLastError(), "kernel launch");
    check(cudaEventRecord(kernel_stop_[s].e, compute_.s), "cudaEventRecord");
    check(cudaStreamWaitEvent(copy_.s, kernel_stop_[s].e, 0), "cudaStreamWaitEvent");
    check(cudaEventRecord(copy_start_[s].e, copy_.s), "cudaEventRecord");
    if (slots_ > 0) {
      check(cudaMemcpyAsync(host_counts_[s].get(), device_counts_[s].get(),
                            slots_ * sizeof(unsigned long long), cudaMemcpyDeviceToHost, copy_.s),
            "cudaMemcpyAsync (histogram to host)");
    } else if (p_.knn() && !keep_on_device_) {
      const index_t values = job.elements / p_.cols * p_.k;
      check(cudaMemcpyAsync(host_out_[s].get(), device_out_[s].get(), values * sizeof(T),
                            cudaMemcpyDeviceToHost, copy_.s),
            "cudaMemcpyAsync (device to host)");
      check(cudaMemcpyAsync(host_idx_[s].get(), device_idx_[s].get(), values * sizeof(std::int64_t),
                            cudaMemcpyDeviceToHost, copy_.s),
            "cudaMemcpyAsync (device to host)");
    } else if (!keep_on_device_) {
      check(cudaMemcpyAsync(host_out_[s].get(), device_out_[s].get(), job.elements * sizeof(T),
                            cudaMemcpyDeviceToHost, copy_.s),
            "cudaMemcpyAsync (device to host)");
    }
    check(cudaEventRecord(copied_[s].e, copy_.s), "cudaEventRecord");
  }

  ChunkResult<T> wait() override {
    const int s = static_cast<int>(waited_++ % 2);
    check(cudaEventSynchronize(copied_[s].e), "waiting for a chunk (kernel or copy failed)");
    float kernel_ms = 0, copy_ms = 0;
    check(cudaEventElapsedTime(&kernel_ms, kernel_start_[s].e, kernel_stop_[s].e),
          "cudaEventElapsedTime");
    check(cudaEventElapsedTime(&copy_ms, copy_start_[s].e, copied_[s].e), "cudaEventElapsedTime");
    kernel_s_ += kernel_ms * 1e-3;
    copy_s_ += copy_ms * 1e-3;
    fault_point(Stage::copy, chunk_[s]);
    ChunkResult<T> r;
    if (slots_ > 0) {
      static_assert(sizeof(unsigned long long) == sizeof(std::uint64_t), "64-bit counts");
      r.counts = reinterpret_cast<const std::uint64_t*>(host_counts_[s].get());
    } else {
      r.values = keep_on_device_ ? nullptr : host_out_[s].get();
      if (p_.knn() && !keep_on_device_) r.indices = host_idx_[s].get();
    }
    return r;
  }

  double compute_seconds() const override { return kernel_s_; }
  double transfer_seconds() const override { return copy_s_; }
  void reset_timers() override { kernel_s_ = copy_s_ = 0; }

  std::vector<typename Backend<T>::Ceiling> write_ceilings(
      const std::vector<index_t>& chunk_bytes) override {
    index_t most = 0;
    for (index_t b : chunk_bytes)
      most = std::max(most, b);
    DeviceBuffer<char> buf;
    buf.allocate(most + 16, "the ceiling buffer");
    Stream stream;
    Event a(true), b(true);
    auto timed = [&](auto&& f) {
      f();  // warm-up
      check(cudaEventRecord(a.e, stream.s), "cudaEventRecord");
      f();
      check(cudaGetLastError(), "kernel launch");
      check(cudaEventRecord(b.e, stream.s), "cudaEventRecord");
      check(cudaEventSynchronize(b.e), "timed pass");
      float ms = 0;
      check(cudaEventElapsedTime(&ms, a.e, b.e), "cudaEventElapsedTime");
      return ms * 1e-3;
    };
    const double memset_s = timed([&] {
      for (index_t bytes : chunk_bytes)
        check(cudaMemsetAsync(buf.get(), 0x3f, bytes, stream.s), "cudaMemsetAsync");
    });
    const double store_s = timed([&] {
      for (index_t bytes : chunk_bytes) {
        const index_t vecs = bytes / 16;
        const unsigned grid =
            static_cast<unsigned>(std::min<index_t>((vecs + 255) / 256, 1u << 20));
        if (grid > 0)
          store16_kernel<<<grid, 256, 0, stream.s>>>(reinterpret_cast<float4*>(buf.get()), vecs,
                                                     1.5f);
      }
    });
    return {{"memset", memset_s}, {"16-byte stores", store_s}};
  }

 private:
  KnnParams<T> knn_params(const ChunkJob& job, int s) const {
    KnnParams<T> k{};
    k.a = a_.get();
    k.norms = norms_a_.get();
    k.n = p_.rows;
    k.d = p_.d;
    k.r0 = job.row_begin * p_.rho;
    k.rows = std::min(job.row_end * p_.rho, p_.rows) - k.r0;
    k.k = static_cast<int>(p_.k);
    k.out_d = device_out_[s].get();
    k.out_i = device_idx_[s].get();
    k.mp = p_.metric_params();
    k.mp.weights = p_.kernel_weights.empty() ? nullptr : weights_.get();
    return k;
  }

  KernelParams<T> params(const ChunkJob& job, int s) const {
    KernelParams<T> k{};
    k.a = a_.get();
    k.b = p_.domain == DomainKind::rect ? b_.get() : a_.get();
    k.norms_a = norms_a_.get();
    k.norms_b = p_.domain == DomainKind::rect ? norms_b_.get() : norms_a_.get();
    k.rows = p_.rows;
    k.cols = p_.cols;
    k.d = p_.d;
    k.rho = p_.rho;
    dispatch_map(p_.domain, p_.map, [&](auto map) {
      using Map = decltype(map);
      typename Map::Domain dom;
      if constexpr (std::is_same_v<Map, mapping::RectMap>) {
        dom = p_.rect_domain();
      } else {
        dom = p_.pair_domain();
      }
      k.grid = Map::grid(dom, job.row_begin, job.row_end);
      k.grid.reversed = std::is_same_v<Map, mapping::Lambda2Map> && long_end_;
      k.m = dom.m;
      if constexpr (std::is_same_v<Map, mapping::RectMap>) k.mc = dom.mc;
      k.out_offset = dom.elements_before(job.row_begin);
      // The strips of the chunk's rows [r0, r1): bands of strip_rows_ rows
      // (r0 is a multiple of ρ, so of 128: a band boundary).
      const index_t h = strip_rows_, w = BlockPolicy::strip_cols<T>();
      const index_t r0 = std::min(job.row_begin * p_.rho, p_.rows);
      const index_t r1 = std::min(job.row_end * p_.rho, p_.rows);
      const index_t bands = (r1 - r0 + h - 1) / h;
      k.strip_layout = mapping::StripLayout(p_.cols, h, w);
      if constexpr (Map::kOneDimensional) {
        const index_t first = k.strip_layout.before(r0);
        const index_t count = k.strip_layout.before(r0 + bands * h) - first;
        k.strip_grid = mapping::Grid{count, count > 0 ? index_t(1) : index_t(0), first};
      } else {
        k.strip_grid = mapping::Grid{bands > 0 ? k.strip_layout.mc : 0, bands, r0};
      }
    });
    k.out = slots_ > 0 ? nullptr : device_out_[s].get();
    k.counts = slots_ > 0 ? device_counts_[s].get() : nullptr;
    k.edges = edges_.get();
    k.bins = p_.hist.bins;
    k.lo = p_.hist.lo;
    k.hi = p_.hist.hi;
    k.norm = p_.hist.bins > 0 ? static_cast<double>(p_.hist.bins) / (p_.hist.hi - p_.hist.lo) : 0;
    k.margin = p_.hist.margin;
    k.fast32 = p_.hist.fast32;
    // A block's 32-bit slots hold at most 2^31 values between merges.
    k.flush_tiles = std::max<index_t>(1, (index_t(1) << 31) / (p_.rho * p_.rho));
    // Shared-memory histograms per block: as many copies (a power of two,
    // at most one a warp) as fit; TDSOLVE_HIST_COPIES caps it (to measure).
    const index_t slots = p_.hist.bins + 2, shared = BlockPolicy::kSharedHistSlots;
    index_t copies = hist_copies_wanted();
    while (copies > 0 && copies * slots > shared)
      copies /= 2;
    k.hist_copies = static_cast<unsigned int>(copies);
    k.hist_stride = static_cast<unsigned int>(slots);
    for (int i = 0; i < kMaxBoxDims; ++i)
      k.box[i] = p_.box[i];
    k.mp = p_.metric_params();
    k.mp.weights = p_.kernel_weights.empty() ? nullptr : weights_.get();
    k.masked_only = masked_only_requested();
    k.more_blocks = more_blocks_;
    k.strips = schedule_ != StoreSchedule::tiles && p_.epilogue != EpilogueKind::histogram;
    k.lanes = schedule_ == StoreSchedule::lanes;
    return k;
  }

  const Problem<T>& p_;
  CudaOptions o_;
  int device_;
  std::string name_;
  bool more_blocks_ = false;                       // d <= 4: launch shape (small_d_more_blocks)
  StoreSchedule schedule_ = StoreSchedule::tiles;  // d <= 8 stores (store_schedule)
  bool long_end_ = true;                           // λ2's tile order (lambda2_from_long_end)
  index_t strip_rows_ = 16;                        // rows of a strip (strip_rows)
  bool keep_on_device_ = false;
  index_t slots_ = 0;
  DeviceBuffer<T> a_, b_;
  DeviceBuffer<double> norms_a_, norms_b_, edges_, weights_;
  DeviceBuffer<T> device_out_[2];
  PinnedBuffer<T> host_out_[2];
  DeviceBuffer<std::int64_t> device_idx_[2];  // knn
  PinnedBuffer<std::int64_t> host_idx_[2];
  DeviceBuffer<unsigned long long> device_counts_[2];
  PinnedBuffer<unsigned long long> host_counts_[2];
  Stream compute_, copy_;
  Event kernel_start_[2] = {Event(true), Event(true)}, kernel_stop_[2] = {Event(true), Event(true)};
  Event copy_start_[2] = {Event(true), Event(true)}, copied_[2] = {Event(true), Event(true)};
  index_t chunk_[2] = {0, 0};
  index_t submitted_ = 0, waited_ = 0;
  double kernel_s_ = 0, copy_s_ = 0;
};

}  // namespace

template <typename T>
std::unique_ptr<Backend<T>> make_cuda_backend(const Problem<T>& problem,
                                              const CudaOptions& options) {
  if (problem.triplets()) return make_cuda_triplet_backend<T>(problem, options);
  return std::make_unique<CudaBackend<T>>(problem, options);
}

template std::unique_ptr<Backend<float>> make_cuda_backend(const Problem<float>&,
                                                           const CudaOptions&);
template std::unique_ptr<Backend<double>> make_cuda_backend(const Problem<double>&,
                                                            const CudaOptions&);

}  // namespace tdsolve::cuda
