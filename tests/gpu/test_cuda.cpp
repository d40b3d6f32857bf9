// The CUDA backend against the CPU backend, chunk by chunk, bit for bit.
// Skips without a GPU; fails instead when TDSOLVE_REQUIRE_GPU=1.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>

#include "core/error.hpp"
#include "device_checks.hpp"
#include "mapping/partition.hpp"
#include "mapping/tetra.hpp"
#include "solver/cpu/cpu_backend.hpp"
#include "solver/cpu/tiles.hpp"
#include "solver/cuda/cuda_backend.hpp"
#include "solver/fractal/fractal.hpp"
#include "solver/problem.hpp"

using namespace tdsolve;

#define REQUIRE_GPU()                                                               \
  do {                                                                              \
    if (cuda::device_count() == 0) {                                                \
      const char* req = std::getenv("TDSOLVE_REQUIRE_GPU");                         \
      if (req && std::string(req) == "1")                                           \
        FAIL() << "TDSOLVE_REQUIRE_GPU=1 but no GPU: " << cuda::no_device_reason(); \
      GTEST_SKIP() << "no CUDA device here (" << cuda::no_device_reason() << ")";   \
    }                                                                               \
  } while (0)

namespace {

const Metric kMetrics[] = {Metric::euclidean, Metric::sqeuclidean, Metric::cityblock,
                           Metric::chebyshev, Metric::cosine};

std::vector<double> random_values(index_t n, index_t d, unsigned seed) {
  std::vector<double> v(n * d);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (auto& x : v)
    x = u(rng);
  return v;
}

template <typename T>
std::vector<T> to(const std::vector<double>& v) {
  return std::vector<T>(v.begin(), v.end());
}

// Pairs of n points (store), with the given map.
template <typename T>
Problem<T> random_problem(index_t n, index_t d, Metric m, index_t rho, unsigned seed,
                          MapKind map = MapKind::lambda) {
  Problem<T> p;
  p.rows = p.cols = n;
  p.d = d;
  p.rho = rho;
  p.metric = m;
  p.map = map;
  p.a = to<T>(random_values(n, d, seed));
  complete_problem(&p);
  return p;
}

// The M × K rectangle of two sets.
template <typename T>
Problem<T> random_cross(index_t rows, index_t cols, index_t d, Metric m, unsigned seed) {
  Problem<T> p;
  p.domain = DomainKind::rect;
  p.rows = rows;
  p.cols = cols;
  p.d = d;
  p.metric = m;
  p.a = to<T>(random_values(rows, d, seed));
  p.b = to<T>(random_values(cols, d, seed + 1000));
  complete_problem(&p);
  return p;
}

// Pairs binned into `bins` over [lo, hi], optionally in a periodic box of side 1.5.
template <typename T>
Problem<T> random_hist(index_t n, index_t d, Metric m, index_t bins, double lo, double hi, bool box,
                       unsigned seed, MapKind map = MapKind::lambda) {
  Problem<T> p = random_problem<T>(n, d, m, 128, seed, map);
  p.epilogue = EpilogueKind::histogram;
  p.hist = make_hist_spec(lo, hi, bins);
  if (box) {
    p.box_dims = static_cast<int>(d);
    for (index_t k = 0; k < d; ++k)
      p.box[k] = T(1.5);
  }
  return p;
}

// Differences in units in the last place (0 when the bits agree).
template <typename T>
double ulps(T a, T b) {
  if (std::memcmp(&a, &b, sizeof(T)) == 0) return 0;
  const T gap = std::nextafter(std::fabs(b), std::numeric_limits<T>::infinity()) - std::fabs(b);
  return std::fabs(double(a) - double(b)) / double(gap);
}

struct Outcome {
  index_t compared = 0, differing = 0;
  double worst_ulps = 0;
};

// Computes the chosen chunks on the GPU (through the backend's own
// submit/wait pipeline) and on the CPU, and compares values or counts.
template <typename T>
Outcome compare_chunks(const Problem<T>& p, bool sample_chunks) {
  const mapping::ChunkPlan plan = make_plan(p, index_t(64) << 20 >> (sizeof(T) == 8 ? 3 : 2));
  std::vector<index_t> chunks;
  if (sample_chunks && plan.chunks() > 3) {
    chunks = {0, plan.chunks() / 2, plan.chunks() - 1};
  } else {
    for (index_t c = 0; c < plan.chunks(); ++c)
      chunks.push_back(c);
  }
  auto gpu = cuda::make_cuda_backend<T>(p, cuda::CudaOptions{});
  gpu->reserve(plan.largest_chunk());
  const cpu::CpuView<T> v = cpu::view_of(p);
  const int threads = std::max(1u, std::thread::hardware_concurrency());
  const bool hist = p.epilogue == EpilogueKind::histogram;
  std::vector<T> want(hist ? 0 : plan.largest_chunk());
  std::vector<std::uint64_t> want_counts(hist ? p.hist.slots() : 0);
  Outcome out;
  for (index_t c : chunks) {
    gpu->submit(ChunkJob{c, plan.row_begin(c), plan.row_end(c), plan.elements(c)});
    const ChunkResult<T> got = gpu->wait();
    cpu::compute_chunk<T>(v, plan.row_begin(c), plan.row_end(c), want.data(), want_counts.data(),
                          threads);
    if (hist) {
      std::uint64_t sum = 0;
      for (index_t s = 0; s < p.hist.slots(); ++s) {
        out.differing += got.counts[s] != want_counts[s];
        sum += got.counts[s];
      }
      EXPECT_EQ(sum, plan.elements(c)) << "chunk " << c << ": counts do not add up to its pairs";
      out.compared += p.hist.slots();
      continue;
    }
    for (index_t e = 0; e < plan.elements(c); ++e) {
      const double u = ulps(got.values[e], want[e]);
      out.differing += u != 0;
      out.worst_ulps = std::max(out.worst_ulps, std::isnan(u) ? 1e30 : u);
    }
    out.compared += plan.elements(c);
  }
  return out;
}

template <typename T>
void check_all(const std::vector<index_t>& ns, const std::vector<index_t>& ds, bool bounding_box) {
  unsigned seed = 1;
  for (Metric m : kMetrics)
    for (index_t n : ns)
      for (index_t d : ds) {
        const Problem<T> p =
            random_problem<T>(n, d, m, 128, seed++, bounding_box ? MapKind::bb : MapKind::lambda);
        const Outcome r = compare_chunks(p, n > 10000);
        // One arithmetic on both backends: every metric agrees bit for bit.
        EXPECT_EQ(r.differing, 0u)
            << metric_name(m) << " n=" << n << " d=" << d << " "
            << (sizeof(T) == 8 ? "float64" : "float32") << (bounding_box ? " bb" : "") << ": "
            << r.differing << " of " << r.compared << " values differ, worst by " << r.worst_ulps
            << " ulp";
        EXPECT_GT(r.compared, 0u);
      }
}

}  // namespace

TEST(Device, TriRootEveryRowBoundaryUpTo2Pow53) {
  REQUIRE_GPU();
  const index_t last = mapping::tri_root(index_t(1) << 53) + 1;
  EXPECT_EQ(gpu_test::count_tri_root_failures(1, last), 0ull);
}

TEST(Device, TetRootEveryLayerBoundaryUpTo2Pow53) {
  REQUIRE_GPU();
  const index_t last = mapping::tet_root(index_t(1) << 53) + 1;
  EXPECT_EQ(gpu_test::count_tet_root_failures(1, last), 0ull);
}

TEST(CudaBackend, MatchesCpuFloat32) {
  REQUIRE_GPU();
  check_all<float>({2, 3, 15, 16, 17, 1000, 4099, 70001}, {1, 3, 4, 17, 128}, false);
}

TEST(CudaBackend, MatchesCpuFloat64) {
  REQUIRE_GPU();
  check_all<double>({2, 3, 15, 16, 17, 1000, 4099, 70001}, {1, 3, 4, 17, 128}, false);
}

TEST(CudaBackend, BoundingBoxGridMatchesCpu) {
  REQUIRE_GPU();
  check_all<float>({17, 1000, 4099}, {3, 17}, true);
  check_all<double>({4099}, {4}, true);
}

TEST(CudaBackend, EveryFeatureCountAndLargerTiles) {
  REQUIRE_GPU();
  for (index_t d = 1; d <= 20; ++d) {
    const Problem<float> p = random_problem<float>(777, d, Metric::euclidean, 128, 100 + d);
    EXPECT_EQ(compare_chunks(p, false).differing, 0u) << "d=" << d;
  }
  for (index_t rho : {256, 384}) {
    const Problem<float> p = random_problem<float>(1500, 5, Metric::cityblock, rho, 7);
    EXPECT_EQ(compare_chunks(p, false).differing, 0u) << "rho=" << rho;
    const Problem<float> q = random_problem<float>(1500, 5, Metric::cityblock, rho, 7, MapKind::bb);
    EXPECT_EQ(compare_chunks(q, false).differing, 0u) << "bb rho=" << rho;
  }
}

// Both strip schedules forced, whatever the GPU would pick: every d they
// serve (strips d <= 4; lanes d <= 8, with shuffles past 6), both maps,
// ρ = 128 and 384 (chunks start on other multiples of 128), float and
// double, and cosine (the norms). Then the tiles at d = 5..8, which
// periodic boxes and TDSOLVE_STORE_SCHEDULE=tiles still run.
TEST(CudaBackend, StripsMatchCpu) {
  REQUIRE_GPU();
  for (const char* schedule : {"strips", "lanes"}) {
    setenv("TDSOLVE_STORE_SCHEDULE", schedule, 1);
    const index_t max_d = std::string(schedule) == "strips" ? 4 : 8;
    for (index_t d = 1; d <= max_d; ++d)
      for (index_t rho : {128, 384})
        for (MapKind map : {MapKind::lambda, MapKind::bb}) {
          const std::string what =
              std::string(schedule) + " d=" + std::to_string(d) + " rho=" + std::to_string(rho);
          const Problem<float> p =
              random_problem<float>(2100, d, Metric::euclidean, rho, 40 + d, map);
          EXPECT_EQ(compare_chunks(p, false).differing, 0u) << what;
          const Problem<double> q =
              random_problem<double>(1100, d, Metric::cityblock, rho, 50 + d, map);
          EXPECT_EQ(compare_chunks(q, false).differing, 0u) << "double " << what;
          const Problem<float> c = random_problem<float>(1300, d, Metric::cosine, rho, 60 + d, map);
          EXPECT_EQ(compare_chunks(c, false).differing, 0u) << "cosine " << what;
        }
    unsetenv("TDSOLVE_STORE_SCHEDULE");
  }
  setenv("TDSOLVE_STORE_SCHEDULE", "tiles", 1);
  for (index_t d = 5; d <= 8; ++d) {
    const Problem<float> p = random_problem<float>(1500, d, Metric::euclidean, 128, 70 + d);
    EXPECT_EQ(compare_chunks(p, false).differing, 0u) << "tiles d=" << d;
    const Problem<double> q =
        random_problem<double>(1100, d, Metric::cosine, 128, 80 + d, MapKind::bb);
    EXPECT_EQ(compare_chunks(q, false).differing, 0u) << "tiles cosine bb d=" << d;
  }
  unsetenv("TDSOLVE_STORE_SCHEDULE");
}

// The tiles' masked path (d = 3 would run in strips on some GPUs, where the
// mask is the only path).
TEST(CudaBackend, MaskedPathEverywhereMatchesCpu) {
  REQUIRE_GPU();
  setenv("TDSOLVE_CUDA_MASKED_ONLY", "1", 1);
  setenv("TDSOLVE_STORE_SCHEDULE", "tiles", 1);
  check_all<float>({1000, 4099}, {3, 17}, false);
  unsetenv("TDSOLVE_STORE_SCHEDULE");
  unsetenv("TDSOLVE_CUDA_MASKED_ONLY");
}

TEST(CudaBackend, RejectsBlocksThatAreNotMultiplesOf128) {
  REQUIRE_GPU();
  const Problem<float> p = random_problem<float>(100, 3, Metric::euclidean, 100, 1);
  try {
    cuda::make_cuda_backend<float>(p, cuda::CudaOptions{});
    FAIL() << "accepted --block 100";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("multiple of 128"), std::string::npos) << e.what();
  }
}

TEST(CudaBackend, OutOfMemoryIsAClearError) {
  REQUIRE_GPU();
  const Problem<float> p = random_problem<float>(100, 3, Metric::euclidean, 128, 1);
  auto b = cuda::make_cuda_backend<float>(p, cuda::CudaOptions{});
  try {
    b->reserve(index_t(1) << 42);  // 16 TiB
    FAIL() << "a 16 TiB buffer was allocated";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("out of GPU memory"), std::string::npos) << e.what();
  }
  // The backend still works afterwards: a chunk equal to the CPU's.
  const mapping::ChunkPlan plan = make_plan(p, 1 << 20);
  b->reserve(plan.largest_chunk());
  b->submit(ChunkJob{0, 0, plan.row_end(0), plan.elements(0)});
  const float* got = b->wait().values;
  ASSERT_NE(got, nullptr);
  std::vector<float> want(plan.elements(0));
  cpu::compute_chunk<float>(cpu::view_of(p), 0, plan.row_end(0), want.data(), nullptr, 1);
  EXPECT_EQ(0, std::memcmp(got, want.data(), want.size() * sizeof(float)));
}

TEST(CudaBackend, CrossMatchesCpu) {
  REQUIRE_GPU();
  unsigned seed = 50;
  for (Metric m : kMetrics)
    for (auto [rows, cols] :
         {std::pair<index_t, index_t>{1, 1}, {5, 300}, {129, 127}, {1000, 77}, {3001, 2050}})
      for (index_t d : {1, 3, 17}) {
        for (bool fp64 : {false, true}) {
          const Outcome r =
              fp64 ? compare_chunks(random_cross<double>(rows, cols, d, m, seed), false)
                   : compare_chunks(random_cross<float>(rows, cols, d, m, seed), false);
          EXPECT_EQ(r.differing, 0u) << metric_name(m) << " " << rows << "x" << cols << " d=" << d
                                     << (fp64 ? " float64" : " float32");
          EXPECT_GT(r.compared, 0u);
        }
        ++seed;
      }
}

TEST(CudaBackend, HistogramMatchesCpu) {
  REQUIRE_GPU();
  unsigned seed = 80;
  for (Metric m : kMetrics)
    for (index_t n : {2, 129, 4099})
      for (index_t d : {1, 3, 17})
        for (bool box : {false, true}) {
          if (box && (m == Metric::cosine || d > 8)) continue;
          // A histogram per warp in shared memory, one per block, and more
          // bins than shared memory holds (global counts).
          for (index_t bins : {index_t(1), index_t(37), index_t(2000), index_t(10000)}) {
            const Outcome r =
                compare_chunks(random_hist<float>(n, d, m, bins, 0.05, 1.7, box, seed), false);
            EXPECT_EQ(r.differing, 0u) << metric_name(m) << " n=" << n << " d=" << d
                                       << " bins=" << bins << (box ? " box" : "");
            const Outcome r64 =
                compare_chunks(random_hist<double>(n, d, m, bins, 0.05, 1.7, box, seed), false);
            EXPECT_EQ(r64.differing, 0u) << metric_name(m) << " n=" << n << " d=" << d
                                         << " bins=" << bins << (box ? " box" : "") << " float64";
          }
          ++seed;
        }
  // A bounding-box grid bins the same pairs.
  const Outcome bb = compare_chunks(
      random_hist<float>(3000, 3, Metric::euclidean, 64, 0, 2, false, 7, MapKind::bb), false);
  EXPECT_EQ(bb.differing, 0u);
}

TEST(CudaBackend, TwoJobsInFlight) {
  REQUIRE_GPU();
  // The driver's protocol: submit(a); submit(b); wait() -> a; submit(c); wait() -> b; ...
  const Problem<float> p = random_problem<float>(5000, 3, Metric::euclidean, 128, 3);
  const mapping::ChunkPlan plan = make_plan(p, 1 << 18);
  ASSERT_GE(plan.chunks(), 4u);
  auto gpu = cuda::make_cuda_backend<float>(p, cuda::CudaOptions{});
  gpu->reserve(plan.largest_chunk());
  const cpu::CpuView<float> v = cpu::view_of(p);
  std::vector<float> want(plan.largest_chunk());
  auto job = [&](index_t c) {
    return ChunkJob{c, plan.row_begin(c), plan.row_end(c), plan.elements(c)};
  };
  gpu->submit(job(0));
  for (index_t c = 0; c < plan.chunks(); ++c) {
    if (c + 1 < plan.chunks()) gpu->submit(job(c + 1));
    const float* got = gpu->wait().values;
    cpu::compute_chunk<float>(v, plan.row_begin(c), plan.row_end(c), want.data(), nullptr, 2);
    ASSERT_EQ(0, std::memcmp(got, want.data(), plan.elements(c) * sizeof(float))) << "chunk " << c;
  }
}

// The coarse maps of the fractal step kernel, by both GPU paths (tensor
// cores and CUDA cores), equal the CPU's λ/ν for every coarse cell of every
// preset at a level of ~10^6 coarse cells, and for a stretch at the largest level.
TEST(CudaFractal, CoarseMapsBothPathsMatchTheCpu) {
  REQUIRE_GPU();
  using namespace tdsolve::fractal;
  for (const auto& [name, table] : presets()) {
    const Shape sh = parse_shape(name);
    for (int top : {0, 1}) {
      int r = 0;
      std::uint64_t cells = 1;
      if (top) {
        r = max_level(sh);
      } else {
        while (cells * sh.cells.size() <= 2'000'000 && r < max_level(sh)) {
          cells *= sh.cells.size();
          ++r;
        }
      }
      const Fractal f = make_fractal(sh, r);
      const Blocking blk = make_blocking(f, 1);
      const std::uint64_t count = std::min<std::uint64_t>(blk.coarse, 1'000'000);
      const std::uint64_t first = top ? blk.coarse - count : 0;
      std::vector<std::int64_t> want(count * 9);
      for (std::uint64_t i = 0; i < count; ++i)
        coarse_neighbourhood(f, blk, first + i, &want[i * 9]);
      for (bool tc : {false, true}) {
        const std::vector<std::int64_t> got = cuda_coarse_maps(f, blk, tc, first, count);
        std::uint64_t bad = 0;
        for (std::uint64_t i = 0; i < want.size(); ++i)
          bad += got[i] != want[i];
        EXPECT_EQ(bad, 0u) << name << " level " << r << (tc ? " tensor cores" : " CUDA cores");
      }
    }
  }
}
