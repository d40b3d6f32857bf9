// tdsolve bench --problem dummy|edm|collide: the map laboratory's sweep.
#include "solver/lab/command.hpp"

#include <algorithm>
#include <cstdio>

#include "core/error.hpp"
#include "solver/bench_csv.hpp"
#include "solver/cuda/cuda_backend.hpp"
#include "solver/lab/lab.hpp"
#include "solver/mpi_util.hpp"

namespace tdsolve {

namespace {

// The CPU engine checks; its times say nothing about a GPU's maps.
constexpr index_t kMaxCpuLabN = 8192;

struct Row {
  lab::MapId map;
  double median = 0, min = 0;
  lab::LabCheck check;
};

}  // namespace

bool lab_available() {
  return true;
}

const char* lab_help_note() {
  return "";
}

void run_lab(const LabOptions& o, int repeat, const std::string& csv, MPI_Comm comm) {
  if (comm_size(comm) != 1)
    throw UsageError("bench --problem " + o.problem + " runs in one process (no mpirun -n 2+)");
  const lab::LabProblem problem = o.problem == "dummy" ? lab::LabProblem::dummy
                                  : o.problem == "edm" ? lab::LabProblem::edm
                                                       : lab::LabProblem::collide;
  // The maps, BB first: every I is T_BB / T_map of the same case.
  std::vector<lab::MapId> maps;
  if (o.maps.empty()) {
    maps = lab::default_maps();
  } else {
    for (const std::string& name : o.maps) {
      if (name == "all") {
        for (const lab::MapInfo& m : lab::maps())
          maps.push_back(m.id);
      } else {
        maps.push_back(lab::parse_map(name));
      }
    }
  }
  std::vector<lab::MapId> order{lab::MapId::bb};
  for (lab::MapId m : maps)
    if (std::find(order.begin(), order.end(), m) == order.end()) order.push_back(m);

  std::vector<int> features = o.features;
  if (problem == lab::LabProblem::dummy) {
    if (!features.empty()) throw UsageError("--features does not apply to --problem dummy");
    features = {0};
  } else if (features.empty()) {
    features =
        problem == lab::LabProblem::edm ? std::vector<int>{1, 2, 3, 4} : std::vector<int>{1, 3};
  }
  for (int f : features) {
    if (problem == lab::LabProblem::edm && (f < 1 || f > 4))
      throw UsageError("--features for --problem edm: 1 to 4 (the papers' EDM test), got " +
                       std::to_string(f));
    if (problem == lab::LabProblem::collide && f != 1 && f != 3)
      throw UsageError("--features for --problem collide is the dimension: 1 or 3, got " +
                       std::to_string(f));
  }

  const bool gpu =
      o.backend == BackendKind::cuda ||
      (o.backend == BackendKind::automatic && cuda::built_with_cuda() && cuda::device_count() > 0);
  if (o.backend == BackendKind::cuda && cuda::built_with_cuda() && cuda::device_count() == 0)
    throw UsageError("--backend cuda: " + cuda::no_device_reason());
  if (!gpu)
    for (index_t n : o.sizes)
      if (n > kMaxCpuLabN)
        throw UsageError("--n " + std::to_string(n) +
                         ": the CPU engine of the laboratory (no GPU) "
                         "checks the maps up to n = " +
                         std::to_string(kMaxCpuLabN) + "; its times say nothing about them");
  std::unique_ptr<lab::LabEngine> engine = gpu ? lab::make_cuda_lab() : lab::make_cpu_lab();
  const std::string device = engine->describe();

  off_t before = 0;
  CsvFile out = csv.empty()
                    ? nullptr
                    : open_bench_csv(csv,
                                     "device,problem,features,n,block,map_eval,m,map,passes,"
                                     "launched_blocks,tiles,repeat,median_ms,min_ms,improvement,"
                                     "checked,wrong,count,reference\n",
                                     &before);
  std::printf(
      "bench: map laboratory, %s, --problem %s, B = %d (%d threads a block), the map evaluated "
      "by %s, median of %d after a warm-up; I = T_bb / T_map (> 1: faster than the bounding "
      "box)%s\n",
      device.c_str(), o.problem.c_str(), o.block, o.block * o.block,
      o.map_once ? "one thread a block" : "every thread", repeat,
      o.check ? "; each map's coverage checked" : "");
  int failures = 0;
  for (int f : features) {
    for (index_t n : o.sizes) {
      lab::LabCase c;
      c.problem = problem;
      c.features = f;
      c.n = n;
      c.block = o.block;
      c.map_once = o.map_once;
      engine->prepare(c, lab::lab_data(c), o.check);
      std::vector<Row> rows;
      for (lab::MapId map : order) {
        Row r;
        r.map = map;
        const std::vector<double> ms = engine->time(map, repeat);
        r.median = median(ms);
        r.min = *std::min_element(ms.begin(), ms.end());
        if (o.check) r.check = engine->check(map);
        rows.push_back(r);
      }
      const double bb = rows[0].median;
      std::printf("%s%s n=%llu m=%llu:", o.problem.c_str(),
                  f ? (problem == lab::LabProblem::edm ? " d=" + std::to_string(f)
                                                       : " " + std::to_string(f) + "-D")
                          .c_str()
                    : "",
                  (unsigned long long)n, (unsigned long long)c.m());
      for (const Row& r : rows) {
        std::printf("  %s %.3f ms", lab::map_name(r.map), r.median);
        if (r.map != lab::MapId::bb) std::printf(" (I %.3f)", bb / r.median);
        if (r.check.done && !r.check.ok()) {
          ++failures;
          std::printf(" WRONG (%llu counters off%s)", (unsigned long long)r.check.wrong,
                      r.check.count != r.check.reference
                          ? (", " + std::to_string(r.check.count) + " overlaps, not " +
                             std::to_string(r.check.reference))
                                .c_str()
                          : "");
        }
      }
      std::printf("\n");
      std::fflush(stdout);
      if (out) {
        for (const Row& r : rows) {
          const index_t launched = lab::launched_blocks(r.map, c.m());
          const int passes = lab::dispatch_lab_map(
              r.map, [&](auto M) { return lab::lab_launch<decltype(M)>(c.m()).count; });
          std::fprintf(out.get(),
                       "\"%s\",%s,%d,%llu,%d,%s,%llu,%s,%d,%llu,%llu,%d,%.5f,%.5f,%.4f,%s,%llu,"
                       "%llu,%llu\n",
                       device.c_str(), o.problem.c_str(), f, (unsigned long long)n, o.block,
                       o.map_once ? "block" : "thread", (unsigned long long)c.m(),
                       lab::map_name(r.map), passes, (unsigned long long)launched,
                       (unsigned long long)mapping::tri(c.m()), repeat, r.median, r.min,
                       bb / r.median,
                       !r.check.done  ? "no"
                       : r.check.ok() ? "ok"
                                      : "wrong",
                       (unsigned long long)r.check.wrong, (unsigned long long)r.check.count,
                       (unsigned long long)r.check.reference);
        }
        std::fflush(out.get());
      }
    }
  }
  engine->release();
  close_bench_csv(out, csv, before);
  if (failures)
    std::printf(
        "bench: %d map run%s gave wrong results (WRONG above): the float maps past their "
        "range, as expected of them; the exact maps never should\n",
        failures, failures > 1 ? "s" : "");
}

}  // namespace tdsolve
