#include "solver/bench.hpp"

#include <omp.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "io/error.hpp"
#include "io/input.hpp"
#include "mapping/partition.hpp"
#include "solver/cpu/cpu_backend.hpp"
#include "solver/cpu/edm_cpu.hpp"
#include "solver/cuda/cuda_backend.hpp"
#include "solver/problem.hpp"
#include "solver/progress.hpp"

namespace tdsolve {

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

template <typename F>
std::vector<double> time_host(int repeat, F&& f) {
  f();  // warm-up (and first touch of the buffer)
  std::vector<double> ms;
  for (int r = 0; r < repeat; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return ms;
}

template <typename T>
void bench_typed(const BenchOptions& o) {
  io::PointSet pts;
  if (!o.generate.empty()) {
    pts = io::generate_points(io::parse_generator(o.generate));
  } else {
    pts = io::read_points(o.input);
  }
  io::check_finite(pts);
  EdmProblem<T> p;
  p.n = pts.n;
  p.d = pts.d;
  p.points = convert_points<T>(pts);
  complete_problem(&p, o.metric, o.block);
  check_norms(p, pts.source);

  std::string backend = o.backend;
  if (backend == "auto") backend = cuda::device_count() > 0 ? "cuda" : "cpu";
  cuda::CudaOptions co;
  co.device = o.device;
  co.bounding_box = o.map == "bb";
  if (backend == "cpu" && co.bounding_box)
    throw UsageError("--map bb applies to --backend cuda only");
  index_t limit = o.chunk_mb > 0
                      ? static_cast<index_t>(o.chunk_mb * (1 << 20)) / sizeof(T)
                      : (backend == "cuda" ? cuda::device_buffer_elements<T>(co)
                                           : cpu::available_host_bytes(1) / (2 * sizeof(T)));
  const mapping::ChunkPlan plan(p.tiling, std::max<index_t>(limit, 1));
  const double bytes = double(plan.total()) * sizeof(T);

  std::string device;
  std::vector<double> run, memset_ms, store_ms;
  if (backend == "cuda") {
    const cuda::KernelTiming t = cuda::time_edm_kernels<T>(p, co, plan, o.repeat);
    device = t.device;
    run = t.kernel_ms;
    memset_ms = t.memset_ms;
    store_ms = t.store_ms;
  } else {
    const int threads = o.threads > 0 ? o.threads : std::max(1, omp_get_max_threads());
    std::vector<T> out(plan.largest_chunk());
    const cpu::EdmView<T> v = cpu::view_of(p);
    run = time_host(o.repeat, [&] {
      for (index_t c = 0; c < plan.chunks(); ++c)
        cpu::compute_block_rows<T>(v, plan.row_begin(c), plan.row_end(c), out.data(), threads);
    });
    memset_ms = time_host(o.repeat, [&] {
      for (index_t c = 0; c < plan.chunks(); ++c)
        std::memset(out.data(), 0x3f, plan.elements(c) * sizeof(T));
    });
    device = std::string("cpu ") + cpu::cpu_variant() + " x" + std::to_string(threads);
  }
  const double med = median(run), best = *std::min_element(run.begin(), run.end());
  const double ms_med = median(memset_ms);
  const double st_med = store_ms.empty() ? 0 : median(store_ms);
  const char* prec = sizeof(T) == 8 ? "float64" : "float32";
  std::printf(
      "bench: %s n=%llu d=%llu %s %s map=%s block=%llu launches=%llu: median %.3f ms (min %.3f, %d "
      "runs), "
      "%.3g pairs/s, %s/s written; ceiling: memset %.3f ms (%s/s)",
      device.c_str(), (unsigned long long)p.n, (unsigned long long)p.d, metric_name(o.metric), prec,
      o.map.c_str(), (unsigned long long)o.block, (unsigned long long)plan.chunks(), med, best,
      o.repeat, plan.total() / (med * 1e-3), human_bytes(bytes / (med * 1e-3)).c_str(), ms_med,
      human_bytes(bytes / (ms_med * 1e-3)).c_str());
  if (st_med > 0)
    std::printf(", 16-byte stores %.3f ms (%s/s)", st_med,
                human_bytes(bytes / (st_med * 1e-3)).c_str());
  std::printf("; %.1f%% of memset\n", 100.0 * ms_med / med);
  if (!o.csv.empty()) {
    struct stat st {};
    const bool fresh = stat(o.csv.c_str(), &st) != 0 || st.st_size == 0;
    std::FILE* f = std::fopen(o.csv.c_str(), "a");
    if (!f) throw InputError("cannot append to --csv '" + o.csv + "': " + std::strerror(errno));
    if (fresh)
      std::fprintf(
          f,
          "device,backend,map,n,d,metric,precision,block,launches,pairs,bytes,repeat,median_ms,min_"
          "ms,"
          "pairs_per_s,gbytes_per_s,memset_ms,memset_gbytes_per_s,store_ms,store_gbytes_per_s,"
          "fraction_of_memset\n");
    std::fprintf(f,
                 "\"%s\",%s,%s,%llu,%llu,%s,%s,%llu,%llu,%llu,%.0f,%d,%.4f,%.4f,%.4g,%.2f,%.4f,%."
                 "2f,%.4f,%.2f,%.4f\n",
                 device.c_str(), backend.c_str(), o.map.c_str(), (unsigned long long)p.n,
                 (unsigned long long)p.d, metric_name(o.metric), prec, (unsigned long long)o.block,
                 (unsigned long long)plan.chunks(), (unsigned long long)plan.total(), bytes,
                 o.repeat, med, best, plan.total() / (med * 1e-3), bytes / (med * 1e-3) / 1e9,
                 ms_med, bytes / (ms_med * 1e-3) / 1e9, st_med,
                 st_med > 0 ? bytes / (st_med * 1e-3) / 1e9 : 0.0, ms_med / med);
    std::fclose(f);
  }
}

}  // namespace

void run_bench(const BenchOptions& o) {
  if (o.fp64) {
    bench_typed<double>(o);
  } else {
    bench_typed<float>(o);
  }
}

}  // namespace tdsolve
