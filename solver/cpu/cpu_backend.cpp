#include "solver/cpu/cpu_backend.hpp"

#include <chrono>
#include <fstream>
#include <future>
#include <string>

#include "solver/cpu/edm_cpu.hpp"

namespace tdsolve::cpu {

index_t available_host_bytes(int local_ranks) {
  std::ifstream meminfo("/proc/meminfo");
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
  return kib * 1024 / static_cast<index_t>(local_ranks > 0 ? local_ranks : 1);
}

namespace {

// Two host buffers; each chunk is computed on a helper thread (running the
// OpenMP loop) while the main thread writes the previous one.
template <typename T>
class CpuBackend final : public EdmBackend<T> {
 public:
  CpuBackend(const EdmProblem<T>& p, int threads, int local_ranks)
      : view_(view_of(p)), threads_(threads), local_ranks_(local_ranks) {}
  ~CpuBackend() override {
    for (auto& f : pending_)
      if (f.valid()) f.wait();
  }

  std::string describe() const override {
    return std::string("cpu (") + cpu_variant() + ", " + std::to_string(threads_) + " thread" +
           (threads_ > 1 ? "s" : "") + " per rank)";
  }
  index_t max_chunk_elements() const override {
    // Two buffers, half of what is available.
    return available_host_bytes(local_ranks_) / (4 * sizeof(T));
  }
  void reserve(index_t elements) override {
    for (auto& b : buffers_)
      b.resize(elements);
  }
  void submit(const ChunkJob& job) override {
    const int slot = static_cast<int>(submitted_++ % 2);
    T* out = buffers_[slot].data();
    pending_[slot] = std::async(std::launch::async, [this, job, out] {
      const auto t0 = std::chrono::steady_clock::now();
      compute_block_rows<T>(view_, job.row_begin, job.row_end, out, threads_);
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    });
  }
  const T* wait() override {
    const int slot = static_cast<int>(waited_++ % 2);
    seconds_ += pending_[slot].get();
    return buffers_[slot].data();
  }
  double compute_seconds() const override { return seconds_; }

 private:
  EdmView<T> view_;
  int threads_, local_ranks_;
  std::vector<T> buffers_[2];
  std::future<double> pending_[2];
  index_t submitted_ = 0, waited_ = 0;
  double seconds_ = 0;
};

}  // namespace

template <typename T>
std::unique_ptr<EdmBackend<T>> make_cpu_backend(const EdmProblem<T>& problem, int threads,
                                                int local_ranks) {
  return std::make_unique<CpuBackend<T>>(problem, threads, local_ranks);
}

template std::unique_ptr<EdmBackend<float>> make_cpu_backend(const EdmProblem<float>&, int, int);
template std::unique_ptr<EdmBackend<double>> make_cpu_backend(const EdmProblem<double>&, int, int);

}  // namespace tdsolve::cpu
