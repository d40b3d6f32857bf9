#include "solver/cpu/cpu_backend.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <future>
#include <mutex>
#include <string>
#include <thread>

#include "solver/bucket_sort.hpp"  // DefaultInit
#include "solver/cpu/adf.hpp"
#include "solver/cpu/tiles.hpp"
#include "solver/cpu/triplets.hpp"
#include "solver/exact_sum.hpp"
#include "solver/fault.hpp"

namespace tdsolve::cpu {

namespace {

// The first number in a file ("max" reads as none: no limit).
bool read_number(const std::string& path, index_t* v) {
  std::ifstream f(path);
  std::string text;
  if (!(f >> text) || text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
    return false;
  *v = std::strtoull(text.c_str(), nullptr, 10);
  return true;
}

// Headroom of the memory cgroup at `dir` and every one above it, up to the
// mount point `top` (the least of limit - usage); false when none has a
// limit.
bool cgroup_headroom(std::string dir, const std::string& top, const char* limit_file,
                     const char* usage_file, index_t* headroom) {
  bool found = false;
  for (;;) {
    index_t limit = 0, usage = 0;
    // A limit near 2^63 is v1's "unlimited".
    if (read_number(dir + "/" + limit_file, &limit) && limit < (index_t(1) << 62)) {
      read_number(dir + "/" + usage_file, &usage);
      const index_t room = limit > usage ? limit - usage : 0;
      *headroom = found ? std::min(*headroom, room) : room;
      found = true;
    }
    if (dir.size() <= top.size()) break;
    dir = dir.substr(0, dir.find_last_of('/'));
  }
  return found;
}

}  // namespace

index_t available_host_bytes_under(const std::string& root, int local_ranks) {
  std::ifstream meminfo(root + "/proc/meminfo");
  std::string key;
  index_t kib = 0;
  while (meminfo >> key) {
    if (key == "MemAvailable:") {
      meminfo >> kib;
      break;
    }
    meminfo.ignore(1 << 10, '\n');
  }
  if (kib == 0) kib = index_t(4) << 20;  // unknown: assume 4 GiB
  index_t bytes = kib * 1024;
  // The process's cgroups: "0::/path" (v2) or "N:...memory...:/path" (v1).
  std::ifstream cgroups(root + "/proc/self/cgroup");
  for (std::string line; std::getline(cgroups, line);) {
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    std::string path = line.substr(b + 1);
    while (path.size() > 1 && path.back() == '/')
      path.pop_back();
    if (path == "/") path.clear();
    std::string top;
    const char *limit_file, *usage_file;
    if (controllers.empty()) {
      top = root + "/sys/fs/cgroup";
      limit_file = "memory.max";
      usage_file = "memory.current";
    } else if (("," + controllers + ",").find(",memory,") != std::string::npos) {
      top = root + "/sys/fs/cgroup/memory";
      limit_file = "memory.limit_in_bytes";
      usage_file = "memory.usage_in_bytes";
    } else {
      continue;
    }
    // In a container the cgroup's path may not exist under the mount (it
    // shows the container's own cgroup as the root): then the root's files.
    std::string dir = top + path;
    std::ifstream probe(dir + "/" + limit_file);
    if (!probe) dir = top;
    index_t room = 0;
    if (cgroup_headroom(dir, top, limit_file, usage_file, &room)) bytes = std::min(bytes, room);
  }
  return bytes / static_cast<index_t>(local_ranks > 0 ? local_ranks : 1);
}

index_t available_host_bytes(int local_ranks) {
  return available_host_bytes_under("", local_ranks);
}

namespace {

// One thread that runs the tasks posted to it, in order, for the backend's
// lifetime. Its OpenMP team is made once: a new thread per chunk (as
// std::async gave) made a new team per chunk, and the teams of the chunks
// before spun on the cores for a while after their chunk (libgomp's
// spin-wait), so short chunks (a culled run's, a small problem's) spent most
// of their time in libgomp. One chunk computes at a time, as two teams on
// the same cores would only slow each other.
template <typename R>
class Worker {
 public:
  Worker() : thread_([this] { loop(); }) {}
  ~Worker() {
    {
      std::lock_guard<std::mutex> g(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
  template <typename F>
  std::future<R> post(F&& f) {
    std::packaged_task<R()> task(std::forward<F>(f));
    std::future<R> result = task.get_future();
    {
      std::lock_guard<std::mutex> g(mutex_);
      tasks_.push_back(std::move(task));
    }
    cv_.notify_one();
    return result;
  }

 private:
  void loop() {
    for (;;) {
      std::packaged_task<R()> task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
        if (tasks_.empty()) return;  // stopped, and every task run
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();  // an exception goes to the task's future
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::packaged_task<R()>> tasks_;
  bool stop_ = false;
  std::thread thread_;  // last: started once the rest is ready
};

// Two host buffers; each chunk is computed on a helper thread (running the
// OpenMP loop) while the main thread writes the previous one.
template <typename T>
class CpuBackend final : public Backend<T> {
 public:
  CpuBackend(const Problem<T>& p, int threads, int local_ranks)
      : view_(view_of(p)),
        triplets_(p.triplets()),
        store_(p.stores_values()),
        knn_(p.knn()),
        select_(p.selects()),
        k_(p.k),
        tview_(triplets_ ? triplet_view_of(p) : TripletView<T>{}),
        threads_(threads),
        local_ranks_(local_ranks),
        slots_(p.epilogue == EpilogueKind::histogram ? p.hist.slots() : 0),
        problem_(p) {
    for (auto& c : counts_)
      c.resize(slots_);
    if (p.centres()) {  // adf: the centres' neighbours from a cell list
      const double lengths[3] = {double(p.box[0]), double(p.box[1]), double(p.box[2])};
      const double tilt[3] = {double(p.tilt[0]), double(p.tilt[1]), double(p.tilt[2])};
      cells_ = build_cell_list(p.a.data(), p.rows, lengths, tilt, p.adf.widths, p.adf.outer);
    }
    if (triplets_)
      for (auto& s : sums_)
        s.resize(triplet_sum_slots(p.rows) * kExactLimbs);
  }
  ~CpuBackend() override {
    for (auto& f : pending_)
      if (f.valid()) f.wait();
  }

  std::string describe() const override {
    return std::string("cpu (") + cpu_variant() + ", " + std::to_string(threads_) + " thread" +
           (threads_ > 1 ? "s" : "") + " per rank)";
  }
  index_t max_chunk_elements() const override {
    // Two buffers, half of what is available, each at most kMaxCpuBufferBytes.
    if (knn_) return available_host_bytes(local_ranks_) / (4 * k_ * (sizeof(T) + 8)) * view_.cols;
    return std::min(available_host_bytes(local_ranks_) / 4, kMaxCpuBufferBytes) / sizeof(T);
  }
  // Comparisons cost about d + 8 operations each (the distance, then the
  // screen against the worst of the row's list): 2^31 of those is ~1 s on
  // two cores of an AVX2 machine (d = 3: 2e8 comparisons; cosine at d = 64:
  // 3e7), well under on a node's many.
  index_t max_chunk_work() const override {
    return knn_ ? (index_t(1) << 31) / (view_.d + 8) : ~index_t(0);
  }
  void reserve(index_t elements) override {
    if (knn_ && view_.cull) return;  // submit sizes a culled chunk's rows
    if (knn_) {
      const index_t rows = (elements + view_.cols - 1) / view_.cols;
      for (int s = 0; s < 2; ++s) {
        buffers_[s].resize(rows * k_);
        indices_[s].resize(rows * k_);
      }
      return;
    }
    if (!store_) return;  // histograms and triplet reductions keep no values
    for (auto& b : buffers_)
      b.resize(elements);
  }
  bool write_into(T* base) override {
    if (!store_ || knn_ || select_ || triplets_ || problem_.centres()) return false;
    direct_ = base;
    for (auto& b : buffers_) {  // reserve's, no longer needed
      b.clear();
      b.shrink_to_fit();
    }
    return true;
  }
  void submit(const ChunkJob& job) override {
    const int slot = static_cast<int>(submitted_++ % 2);
    if (knn_ && view_.cull) {
      // A culled chunk's rows are not elements / n (reserve): sized here.
      // The slot's last chunk was written before this one was submitted.
      const index_t rows =
          std::min(job.row_end * view_.rho, view_.rows) - job.row_begin * view_.rho;
      if (buffers_[slot].size() < rows * k_) {
        buffers_[slot].resize(rows * k_);
        indices_[slot].resize(rows * k_);
      }
    }
    T* out = direct_ ? direct_ + job.offset : buffers_[slot].data();
    out_[slot] = out;
    std::uint64_t* counts = counts_[slot].data();
    std::int64_t* sums = sums_[slot].data();
    std::int64_t* idx = indices_[slot].data();
    SelectOut<T>* sel = &selected_[slot];
    // On the one worker thread, in the order submitted (the main thread
    // writes meanwhile).
    pending_[slot] = worker_.post([this, job, out, counts, sums, idx, sel] {
      const auto t0 = std::chrono::steady_clock::now();
      fault_point(Stage::compute, job.chunk);
      if (knn_ && view_.cull) {  // block rows of the run's order
        compute_knn_chunk<T>(view_, k_, job.row_begin, job.row_end, out, idx, threads_);
      } else if (knn_) {
        const index_t r0 = job.row_begin * view_.rho;
        const index_t r1 = std::min(job.row_end * view_.rho, view_.rows);
        compute_knn_chunk<T>(view_, k_, r0, r1, out, idx, threads_);
      } else if (problem_.centres()) {
        std::fill(counts, counts + slots_, std::uint64_t(0));
        const index_t r0 = std::min(job.row_begin * view_.rho, view_.rows);
        const index_t r1 = std::min(job.row_end * view_.rho, view_.rows);
        adf_centres<T>(problem_, cells_.view(), r0, r1, nullptr, counts, threads_);
      } else if (triplets_) {
        compute_triplet_chunk<T>(tview_, job.row_begin, job.row_end, out, sums, threads_);
      } else {
        compute_chunk<T>(view_, job.row_begin, job.row_end, out, counts, threads_, CpuVariant::best,
                         select_ ? sel : nullptr);
      }
      return std::make_pair(
          job.chunk, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    });
  }
  ChunkResult<T> wait() override {
    const int slot = static_cast<int>(waited_++ % 2);
    const auto [chunk, seconds] = pending_[slot].get();
    seconds_ += seconds;
    fault_point(Stage::copy, chunk);
    ChunkResult<T> r;
    if (slots_ > 0) r.counts = counts_[slot].data();
    if (store_ || knn_) r.values = out_[slot];
    if (knn_) r.indices = indices_[slot].data();
    if (triplets_) r.sums = sums_[slot].data();
    if (select_) {
      r.selected = selected_[slot].values.size();
      r.pairs = selected_[slot].pairs.data();
      r.values = selected_[slot].values.data();
    }
    return r;
  }
  double compute_seconds() const override { return seconds_; }
  void reset_timers() override { seconds_ = 0; }
  std::vector<typename Backend<T>::Ceiling> write_ceilings(
      const std::vector<index_t>& chunk_bytes) override {
    index_t most = 0;
    for (index_t b : chunk_bytes)
      most = std::max(most, b);
    std::vector<char> buf(most);
    std::memset(buf.data(), 0, most);  // first touch outside the timing
    const auto t0 = std::chrono::steady_clock::now();
    for (index_t b : chunk_bytes)
      std::memset(buf.data(), 0x3f, b);
    return {
        {"memset", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()}};
  }

 private:
  CpuView<T> view_;
  bool triplets_, store_, knn_, select_;
  index_t k_;
  TripletView<T> tview_;
  int threads_, local_ranks_;
  index_t slots_;
  const Problem<T>& problem_;
  CellList cells_;  // adf
  // Never zeroed: every chunk's values (or knn rows) are written whole
  // before they are read; zeroing two chunk buffers was most of a small
  // call's set-up (the Python calls).
  std::vector<T, DefaultInit<T>> buffers_[2];
  T* direct_ = nullptr;             // write_into's array, or null
  T* out_[2] = {nullptr, nullptr};  // where each slot's chunk went
  std::vector<std::uint64_t> counts_[2];
  std::vector<std::int64_t> sums_[2];
  std::vector<std::int64_t> indices_[2];  // knn
  SelectOut<T> selected_[2];              // select
  std::future<std::pair<index_t, double>> pending_[2];
  index_t submitted_ = 0, waited_ = 0;
  double seconds_ = 0;
  // Last: destroyed first, it finishes what was posted before the buffers go.
  Worker<std::pair<index_t, double>> worker_;
};

}  // namespace

template <typename T>
std::unique_ptr<Backend<T>> make_cpu_backend(const Problem<T>& problem, int threads,
                                             int local_ranks) {
  return std::make_unique<CpuBackend<T>>(problem, threads, local_ranks);
}

template std::unique_ptr<Backend<float>> make_cpu_backend(const Problem<float>&, int, int);
template std::unique_ptr<Backend<double>> make_cpu_backend(const Problem<double>&, int, int);

}  // namespace tdsolve::cpu
