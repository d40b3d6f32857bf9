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
#include "core/knobs.hpp"
#include "solver/cpu/cpu_backend.hpp"
#include "solver/cuda/cuda_backend.hpp"
#include "solver/cuda/cuda_check.hpp"
#include "solver/cuda/cuda_resources.cuh"
#include "solver/cuda/kernel_params.cuh"
#include "solver/cuda/knn_kernels.cuh"
#include "solver/cuda/select_sort.cuh"
#include "solver/fault.hpp"
#include "solver/knn.hpp"

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

// Test hook: every sub-tile of the tile kernels on the masked path.
bool masked_only_requested() {
  return knobs::flag("TDSOLVE_TEST_MASKED_ONLY");
}

// The order λ2's tiles run in (mapping::Grid::reversed): TDSOLVE_LAMBDA2_ORDER
// = long (the bounding box's order, from the long end of the triangle) or
// short (from the short end); long unless set (docs/performance.md).
bool lambda2_from_long_end() {
  return knobs::choice("TDSOLVE_LAMBDA2_ORDER", {"long", "short"}) != 1;
}

// Whether the device's memory is fast (memory clock × bus width at least
// 4 TB/s: the H200's 4.8, not the H100's 3.35). The d <= 8 choices of the
// kernel plan follow it; each was measured on both sides of the line
// (performance.md).
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

// The kernel plan of a pair problem on this device (kernel_plan.hpp), with
// the test hooks TDSOLVE_TEST_STORE_SCHEDULE (strips or lanes, where both
// exist) and TDSOLVE_STRIP_ROWS (the rows of a strip, to measure others).
template <typename T>
KernelPlan plan_for(const Problem<T>& p, int device) {
  PlanRequest r;
  r.d = p.d;
  r.value_bytes = sizeof(T);
  r.small_d_metric =
      dispatch_metric<T>(p.metric, [](auto m) { return metric::traits<decltype(m)>::small_d; });
  r.epilogue = p.epilogue;
  const int forced = knobs::choice("TDSOLVE_TEST_STORE_SCHEDULE", {"strips", "lanes"});
  if (forced >= 0) {
    r.force = true;
    r.forced = forced == 0 ? Schedule::strips : Schedule::lanes;
  }
  constexpr int kRows[] = {8, 16, 32, 64, 128};
  const int rows = knobs::choice("TDSOLVE_STRIP_ROWS", {"8", "16", "32", "64", "128"});
  if (rows >= 0) r.forced_rows = kRows[rows];
  return plan_pair_kernel(DeviceTraits{fast_memory(device)}, r);
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

// Histogram copies a block keeps in shared memory, at most one a warp
// (TDSOLVE_HIST_COPIES caps it, to measure).
index_t hist_copies_wanted() {
  const int c = knobs::choice("TDSOLVE_HIST_COPIES", {"1", "2", "4", "8"});
  return c < 0 ? BlockPolicy::kWarps : index_t(1) << c;
}

// launch_metric<T, M, Map, E, kPeriodic> for the metric of p.mp, naming only
// the instantiations the generated kernel files hold (solver/CMakeLists.txt).
template <typename T, typename Map, typename E, bool kPeriodic>
void launch_family(const KernelParams<T>& p, cudaStream_t s) {
  dispatch_metric<T>(p.mp, [&](auto m) {
    using M = decltype(m);
    if constexpr (kPeriodic && !metric::traits<M>::box) {
      throw std::logic_error("no periodic box with this metric");
    } else if constexpr (std::is_same_v<E, epi::Select<epi::Overlap>> &&
                         !std::is_same_v<M, metric::Euclidean<double>>) {
      throw std::logic_error("overlaps are euclidean, in float64");
    } else {
      launch_metric<T, M, Map, E, kPeriodic>(p, s);
    }
  });
}

// Picks the kernel family of (domain, map, epilogue, box).
template <typename T>
void launch_chunk(const Problem<T>& p, const KernelParams<T>& k, cudaStream_t s) {
  dispatch_map(p.domain, p.map, [&](auto map) {
    using Map = decltype(map);
    if (p.epilogue == EpilogueKind::store) return launch_family<T, Map, epi::Store, false>(k, s);
    if (p.epilogue == EpilogueKind::histogram) {
      if (p.box_dims > 0) return launch_family<T, Map, epi::Histogram, true>(k, s);
      return launch_family<T, Map, epi::Histogram, false>(k, s);
    }
    if constexpr (std::is_same_v<Map, mapping::RectMap>) {
      throw std::logic_error("rectangles store or bin");
    } else {
      if (p.epilogue != EpilogueKind::select)
        throw std::logic_error("no pair kernel for this epilogue");
      const bool box = p.box_dims > 0;
      if (p.select.kind == SelectKind::overlap) {
        if (box) return launch_family<T, Map, epi::Select<epi::Overlap>, true>(k, s);
        return launch_family<T, Map, epi::Select<epi::Overlap>, false>(k, s);
      }
      if (box) return launch_family<T, Map, epi::Select<epi::Within>, true>(k, s);
      return launch_family<T, Map, epi::Select<epi::Within>, false>(k, s);
    }
  });
}

__global__ void store16_kernel(float4* out, index_t count, float value) {
  const float4 v = make_float4(value, value, value, value);
  for (index_t k = blockIdx.x * static_cast<index_t>(blockDim.x) + threadIdx.x; k < count;
       k += static_cast<index_t>(gridDim.x) * blockDim.x)
    out[k] = v;
}

// The selected pairs of one slot (select): the kernels' list, its sorted
// copy, the pairs, and their pinned host copies; grown when a chunk finds
// more than they hold (never dropping one: the chunk runs again).
template <typename T>
struct SelectBuffers {
  index_t capacity = 0;
  DeviceBuffer<unsigned long long> count, keys, sorted_keys;
  DeviceBuffer<T> values, sorted_values;
  DeviceBuffer<long long> pairs;
  DeviceBuffer<char> scratch;
  size_t scratch_bytes = 0;
  PinnedBuffer<unsigned long long> host_count;
  PinnedBuffer<long long> host_pairs;
  PinnedBuffer<T> host_values;
  bool keep_on_device = false;
  void allocate(index_t items, bool on_device_only) {
    keep_on_device = on_device_only;
    capacity = items;
    keys.allocate(items, "the selected pairs");
    values.allocate(items, "the selected pairs");
    sorted_keys.allocate(items, "the selected pairs");
    sorted_values.allocate(items, "the selected pairs");
    pairs.allocate(2 * items, "the selected pairs");
    scratch_bytes = select_sort_bytes<T>(items);
    scratch.allocate(scratch_bytes, "the selected pairs' sort");
    if (!on_device_only) {
      host_pairs.allocate(2 * items, "the selected pairs");
      host_values.allocate(items, "the selected pairs");
    }
  }
};

template <typename T>
class CudaBackend final : public Backend<T> {
 public:
  CudaBackend(const Problem<T>& p, const CudaOptions& o) : p_(p), o_(o), device_(pick_device(o)) {
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, device_), "cudaGetDeviceProperties");
    name_ = prop.name;
    check_problem(p);
    long_end_ = lambda2_from_long_end();  // bad values fail here, before any file
    masked_only_ = masked_only_requested();
    if (!p.knn()) plan_ = plan_for(p, device_);
    a_.upload(p.a, "the points");
    if (p.domain == DomainKind::rect && !p.knn()) b_.upload(p.b, "the second set of points");
    norms_a_.upload(p.norms_a, "the norms");
    norms_b_.upload(p.norms_b, "the norms");
    weights_.upload(p.kernel_weights, "the weights");
    if (p.epilogue == EpilogueKind::histogram) {
      slots_ = p.hist.slots();
      hist_copies_ = hist_copies_wanted();
      edges_.upload(p.hist.edges, "the bin edges");
      for (int s = 0; s < 2; ++s) {
        device_counts_[s].allocate(slots_, "histogram counts");
        host_counts_[s].allocate(slots_, "histogram counts");
      }
      group_type_.upload(p.hist.groups.type, "the points' types");
      group_table_.upload(p.hist.groups.table, "the type pairs' histograms");
      group_molecule_.upload(p.hist.groups.molecule, "the points' molecules");
    }
    if (p.culled) tiles_.upload(p.cull.tiles, "the culled domain's tiles");
    if (p.culled && p.knn()) {  // each block row's walk (knn_kernels.cu)
      tile_start_.upload(p.cull.tile_start, "the culled domain's rows");
      box_lo_.upload(p.cull.lo, "the blocks' boxes");
      box_hi_.upload(p.cull.hi, "the blocks' boxes");
      order_.upload(p.cull.order, "the run's order");
    }
    if (p.selects()) {
      radii_.upload(p.select_radii, "the radii");
      for (int s = 0; s < 2; ++s) {
        select_[s].count.allocate(1, "the selection count");
        select_[s].host_count.allocate(1, "the selection count");
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

  // As the CPU's bound (d + 8 operations a comparison), 2048 times it: an
  // H100 compares 9e11 points a second at d = 3 (so 4e11, 0.45 s, a chunk)
  // and 3e11 at d = 32 (1.1e11, 0.37 s), so a stop waits well under a
  // second. Smaller chunks leave the GPU part idle: at n = 1e6, d = 3 a
  // bound 4 times lower (0.1 s) made 11 chunks of 391 blocks of rows, less
  // than one wave on an H200 (132 SMs), and knn's kernels took 1.39 s
  // against 1.06 s in 3 chunks (2026-11-26).
  index_t max_chunk_work() const override {
    return p_.knn() ? (index_t(1) << 42) / (p_.d + 8) : ~index_t(0);
  }

  void reserve(index_t elements) override {
    if (slots_ > 0) return;
    if (p_.knn() && p_.culled) return;  // submit sizes a culled chunk's rows
    if (p_.selects()) {
      // Room for a few pairs in 64 of a chunk to start with; a chunk that
      // finds more makes room and runs again.
      const index_t items =
          std::max<index_t>(index_t(1) << 16, std::min<index_t>(elements / 64, index_t(1) << 22));
      for (int s = 0; s < 2; ++s)
        select_[s].allocate(items, keep_on_device_);
      return;
    }
    if (p_.knn()) {
      const index_t values = (elements + p_.cols - 1) / p_.cols * p_.k;
      for (int s = 0; s < 2; ++s)
        allocate_knn(s, values);
      return;
    }
    for (int s = 0; s < 2; ++s) {
      device_out_[s].allocate(elements, "a chunk buffer");
      if (!keep_on_device_) host_out_[s].allocate(elements, "a chunk buffer");
    }
  }

  void keep_on_device(bool keep) override { keep_on_device_ = keep; }

  // Slot s's knn buffers for `values` distances and indices.
  void allocate_knn(int s, index_t values) {
    device_out_[s].allocate(values, "a chunk buffer");
    device_idx_[s].allocate(values, "a chunk buffer");
    if (!keep_on_device_) {
      host_out_[s].allocate(values, "a chunk buffer");
      host_idx_[s].allocate(values, "a chunk buffer");
    }
    knn_values_[s] = values;
  }
  // A knn chunk's rows: a culled chunk's are not elements / n.
  index_t knn_rows(const ChunkJob& job) const {
    if (!p_.culled) return job.elements / p_.cols;
    return std::min(job.row_end * p_.rho, p_.rows) - job.row_begin * p_.rho;
  }

  void submit(const ChunkJob& job) override {
    fault_point(Stage::compute, job.chunk);
    const int s = static_cast<int>(submitted_++ % 2);
    if (p_.knn() && p_.culled && knn_rows(job) * p_.k > knn_values_[s]) {
      // A culled chunk's rows (reserve): the slot's buffers grow once its
      // last chunk has been copied out and handed on.
      check(cudaEventSynchronize(copied_[s].e), "waiting for a chunk (kernel or copy failed)");
      allocate_knn(s, knn_rows(job) * p_.k);
    }
    chunk_[s] = job;
    const KernelParams<T> k = params(job, s);
    // The device buffer is free once the copy of the chunk before last is done.
    check(cudaStreamWaitEvent(compute_.s, copied_[s].e, 0), "cudaStreamWaitEvent");
    check(cudaEventRecord(kernel_start_[s].e, compute_.s), "cudaEventRecord");
    if (slots_ > 0)
      check(cudaMemsetAsync(device_counts_[s].get(), 0, slots_ * sizeof(unsigned long long),
                            compute_.s),
            "cudaMemsetAsync (histogram)");
    if (p_.selects())
      check(cudaMemsetAsync(select_[s].count.get(), 0, sizeof(unsigned long long), compute_.s),
            "cudaMemsetAsync (selection count)");
    if (p_.knn()) {
      launch_knn<T>(knn_params(job, s), compute_.s);
    } else {
      launch_chunk<T>(p_, k, compute_.s);
    }
    check(cudaGetLastError(), "kernel launch");
    check(cudaEventRecord(kernel_stop_[s].e, compute_.s), "cudaEventRecord");
    if (p_.selects()) {
      // The count only, on the compute stream (so that sorting the chunk
      // before, on the copy stream, overlaps this kernel); the pairs move
      // once wait() knows how many there are.
      check(cudaMemcpyAsync(select_[s].host_count.get(), select_[s].count.get(),
                            sizeof(unsigned long long), cudaMemcpyDeviceToHost, compute_.s),
            "cudaMemcpyAsync (selection count)");
      check(cudaEventRecord(counted_[s].e, compute_.s), "cudaEventRecord");
      return;
    }
    check(cudaStreamWaitEvent(copy_.s, kernel_stop_[s].e, 0), "cudaStreamWaitEvent");
    check(cudaEventRecord(copy_start_[s].e, copy_.s), "cudaEventRecord");
    if (slots_ > 0) {
      check(cudaMemcpyAsync(host_counts_[s].get(), device_counts_[s].get(),
                            slots_ * sizeof(unsigned long long), cudaMemcpyDeviceToHost, copy_.s),
            "cudaMemcpyAsync (histogram to host)");
    } else if (p_.knn() && !keep_on_device_) {
      const index_t values = knn_rows(job) * p_.k;
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
    if (p_.selects()) return wait_selected(s);
    check(cudaEventSynchronize(copied_[s].e), "waiting for a chunk (kernel or copy failed)");
    add_times(s);
    fault_point(Stage::copy, chunk_[s].chunk);
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
  void add_times(int s) {
    float kernel_ms = 0, copy_ms = 0;
    check(cudaEventElapsedTime(&kernel_ms, kernel_start_[s].e, kernel_stop_[s].e),
          "cudaEventElapsedTime");
    check(cudaEventElapsedTime(&copy_ms, copy_start_[s].e, copied_[s].e), "cudaEventElapsedTime");
    kernel_s_ += kernel_ms * 1e-3;
    copy_s_ += copy_ms * 1e-3;
  }

  // Select: the chunk's count; if its list overflowed, room for it and the
  // chunk again (the same pairs: only the room differs); then, on the copy
  // stream, the list sorted by packed index, its pairs (i, j), and both to
  // the host.
  ChunkResult<T> wait_selected(int s) {
    SelectBuffers<T>& b = select_[s];
    const ChunkJob& job = chunk_[s];
    check(cudaEventSynchronize(counted_[s].e), "waiting for a chunk (kernel failed)");
    index_t found = *b.host_count.get();
    if (found > b.capacity) {
      check(cudaDeviceSynchronize(), "before growing the selection buffers");
      b.allocate(found + found / 4, keep_on_device_);
      const KernelParams<T> k = params(job, s);
      check(cudaMemsetAsync(b.count.get(), 0, sizeof(unsigned long long), copy_.s),
            "cudaMemsetAsync (selection count)");
      check(cudaEventRecord(kernel_start_[s].e, copy_.s), "cudaEventRecord");
      launch_chunk<T>(p_, k, copy_.s);
      check(cudaGetLastError(), "kernel launch");
      check(cudaEventRecord(kernel_stop_[s].e, copy_.s), "cudaEventRecord");
      check(cudaMemcpyAsync(b.host_count.get(), b.count.get(), sizeof(unsigned long long),
                            cudaMemcpyDeviceToHost, copy_.s),
            "cudaMemcpyAsync (selection count)");
      check(cudaStreamSynchronize(copy_.s), "a chunk run again with room for its pairs");
      if (*b.host_count.get() != found)
        throw std::logic_error("a chunk run again found " + std::to_string(*b.host_count.get()) +
                               " pairs, not " + std::to_string(found));
    }
    check(cudaEventRecord(copy_start_[s].e, copy_.s), "cudaEventRecord");
    check(cudaStreamWaitEvent(copy_.s, counted_[s].e, 0), "cudaStreamWaitEvent");
    if (!keep_on_device_ && found > 0) {
      // Keys are packed indices less the chunk's first: below the dense
      // pairs of its rows (a culled chunk tests fewer, but its keys span
      // them all).
      const index_t span =
          mapping::PairDomain(p_.rows, p_.rho).elements_in_rows(job.row_begin, job.row_end);
      int bits = 1;
      while (bits < 64 && (span >> bits) != 0)
        ++bits;
      select_sort<T>(b.scratch.get(), b.scratch_bytes, b.keys.get(), b.sorted_keys.get(),
                     b.values.get(), b.sorted_values.get(), found, bits, copy_.s);
      const index_t first = mapping::PairDomain(p_.rows, p_.rho).elements_before(job.row_begin);
      select_pairs(b.sorted_keys.get(), found, p_.rows, first, b.pairs.get(), copy_.s);
      check(cudaMemcpyAsync(b.host_pairs.get(), b.pairs.get(), 2 * found * sizeof(long long),
                            cudaMemcpyDeviceToHost, copy_.s),
            "cudaMemcpyAsync (selected pairs to host)");
      check(cudaMemcpyAsync(b.host_values.get(), b.sorted_values.get(), found * sizeof(T),
                            cudaMemcpyDeviceToHost, copy_.s),
            "cudaMemcpyAsync (selected values to host)");
    }
    check(cudaEventRecord(copied_[s].e, copy_.s), "cudaEventRecord");
    check(cudaEventSynchronize(copied_[s].e), "waiting for a chunk's pairs (sort or copy failed)");
    add_times(s);
    fault_point(Stage::copy, job.chunk);
    ChunkResult<T> r;
    r.selected = found;
    if (!keep_on_device_) {
      static_assert(sizeof(long long) == sizeof(std::int64_t), "64-bit pairs");
      r.pairs = reinterpret_cast<const std::int64_t*>(b.host_pairs.get());
      r.values = b.host_values.get();
    }
    return r;
  }

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
    k.box_dims = p_.box_dims;
    for (int i = 0; i < kMaxBoxDims; ++i)
      k.box[i] = p_.box[i];
    if (p_.culled) {
      const Culled& c = p_.cull;
      k.tiles = tiles_.get();
      k.tile_start = tile_start_.get();
      k.box_lo = box_lo_.get();
      k.box_hi = box_hi_.get();
      k.order = order_.get();
      k.rho = p_.rho;
      k.bound_p = c.geometry.p;
      k.rel_tol = c.geometry.rel_tol;
      k.scale = c.scale;
      k.squared = c.squared;
      k.cull_box_dims = c.geometry.box_dims;
      for (int i = 0; i < kMaxBoxDims; ++i)
        k.cull_box[i] = c.geometry.box[i];
    }
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
    k.plan = plan_;
    dispatch_map(p_.domain, p_.map, [&](auto map) {
      using Map = decltype(map);
      typename Map::Domain dom;
      if constexpr (std::is_same_v<Map, mapping::RectMap>) {
        dom = p_.rect_domain();
      } else {
        dom = p_.pair_domain();
      }
      k.grid = Map::grid(dom, job.row_begin, job.row_end);  // culled: host tile_start
      k.tiles = p_.culled ? tiles_.get() : nullptr;
      k.grid.reversed = std::is_same_v<Map, mapping::Lambda2Map> && long_end_;
      k.m = dom.m;
      if constexpr (std::is_same_v<Map, mapping::RectMap>) k.mc = dom.mc;
      k.out_offset = dom.elements_before(job.row_begin);
      if (plan_.schedule != Schedule::strips && plan_.schedule != Schedule::lanes) return;
      // The strips of the chunk's rows [r0, r1): bands of strip_rows rows
      // (r0 is a multiple of ρ, so of 128: a band boundary).
      const index_t h = plan_.strip_rows, w = BlockPolicy::strip_cols<T>();
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
    k.out = p_.stores_values() ? device_out_[s].get() : nullptr;
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
    // at most one a warp) as fit.
    const index_t slots = p_.hist.slots(), shared = BlockPolicy::kSharedHistSlots;
    index_t copies = hist_copies_;
    while (copies > 0 && copies * slots > shared)
      copies /= 2;
    k.hist_copies = static_cast<unsigned int>(copies);
    k.hist_stride = static_cast<unsigned int>(slots);
    k.groups = p_.hist.groups.count;
    k.types = p_.hist.groups.types;
    k.type = group_type_.get();
    k.table = group_table_.get();
    k.molecule = group_molecule_.get();
    if (p_.selects()) {
      const SelectBuffers<T>& b = select_[s];
      k.select = p_.select;
      k.select.radii = radii_.get();
      k.sel_count = b.count.get();
      k.sel_keys = b.keys.get();
      k.sel_values = b.values.get();
      k.sel_capacity = b.capacity;
    }
    for (int i = 0; i < kMaxBoxDims; ++i)
      k.box[i] = p_.box[i];
    k.triclinic = p_.triclinic;
    for (int i = 0; i < 3; ++i)
      k.tilt[i] = p_.tilt[i];
    k.mp = p_.metric_params();
    k.mp.weights = p_.kernel_weights.empty() ? nullptr : weights_.get();
    k.masked_only = masked_only_;
    return k;
  }

  const Problem<T>& p_;
  CudaOptions o_;
  int device_;
  std::string name_;
  KernelPlan plan_;       // the pair kernel (kernel_plan.hpp)
  bool long_end_ = true;  // λ2's tile order (lambda2_from_long_end)
  bool masked_only_ = false;
  bool keep_on_device_ = false;
  index_t slots_ = 0;
  index_t hist_copies_ = BlockPolicy::kWarps;
  DeviceBuffer<T> a_, b_;
  DeviceBuffer<double> norms_a_, norms_b_, edges_, weights_, radii_;
  DeviceBuffer<std::uint32_t> tiles_;         // a culled domain's list
  DeviceBuffer<index_t> tile_start_, order_;  // knn --k culled: rows' tiles, input indices
  DeviceBuffer<std::int32_t> group_type_, group_table_, group_molecule_;  // HistGroups
  DeviceBuffer<double> box_lo_, box_hi_;                                  // and the blocks' boxes
  index_t knn_values_[2] = {0, 0};  // knn: the slots' buffers, values
  DeviceBuffer<T> device_out_[2];
  PinnedBuffer<T> host_out_[2];
  DeviceBuffer<std::int64_t> device_idx_[2];  // knn
  PinnedBuffer<std::int64_t> host_idx_[2];
  DeviceBuffer<unsigned long long> device_counts_[2];
  PinnedBuffer<unsigned long long> host_counts_[2];
  SelectBuffers<T> select_[2];
  Stream compute_, copy_;
  Event kernel_start_[2] = {Event(true), Event(true)}, kernel_stop_[2] = {Event(true), Event(true)};
  Event copy_start_[2] = {Event(true), Event(true)}, copied_[2] = {Event(true), Event(true)};
  Event counted_[2] = {Event(false), Event(false)};
  ChunkJob chunk_[2];
  index_t submitted_ = 0, waited_ = 0;
  double kernel_s_ = 0, copy_s_ = 0;
};

}  // namespace

template <typename T>
std::unique_ptr<Backend<T>> make_cuda_backend(const Problem<T>& problem,
                                              const CudaOptions& options) {
  if (problem.triplets()) return make_cuda_triplet_backend<T>(problem, options);
  if (problem.centres()) return make_cuda_adf_backend<T>(problem, options);
  return std::make_unique<CudaBackend<T>>(problem, options);
}

template std::unique_ptr<Backend<float>> make_cuda_backend(const Problem<float>&,
                                                           const CudaOptions&);
template std::unique_ptr<Backend<double>> make_cuda_backend(const Problem<double>&,
                                                            const CudaOptions&);

}  // namespace tdsolve::cuda
