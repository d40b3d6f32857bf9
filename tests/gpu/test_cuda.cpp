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
// serve (strips d <= 2; lanes d <= 8, with shuffles past 6), both maps,
// ρ = 128 and 384 (chunks start on other multiples of 128), float and
// double, and cosine (the norms).
TEST(CudaBackend, StripsMatchCpu) {
  REQUIRE_GPU();
  for (const char* schedule : {"strips", "lanes"}) {
    setenv("TDSOLVE_TEST_STORE_SCHEDULE", schedule, 1);
    const index_t max_d = std::string(schedule) == "strips" ? 2 : 8;
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
    unsetenv("TDSOLVE_TEST_STORE_SCHEDULE");
  }
}

// The tiles' masked path, where tiles run: histograms and selections at
// d <= 8, and the general path of stores.
TEST(CudaBackend, MaskedPathEverywhereMatchesCpu) {
  REQUIRE_GPU();
  setenv("TDSOLVE_TEST_MASKED_ONLY", "1", 1);
  check_all<float>({1000, 4099}, {3, 17}, false);
  for (index_t d : {1, 3, 8}) {
    const Problem<float> h = random_hist<float>(3001, d, Metric::euclidean, 97, 0.1, 1.9, false, 5);
    EXPECT_EQ(compare_chunks(h, false).differing, 0u) << "histogram d=" << d;
  }
  unsetenv("TDSOLVE_TEST_MASKED_ONLY");
}

namespace {

struct PairList {
  std::vector<std::int64_t> pairs;
  std::vector<double> values;
};

// Every chunk of a select problem on one backend, through its submit/wait
// pipeline (two chunks in flight), concatenated.
template <typename T>
PairList run_select(const Problem<T>& p, std::unique_ptr<Backend<T>> b, index_t chunk_elements) {
  const mapping::ChunkPlan plan = make_plan(p, chunk_elements);
  b->reserve(plan.largest_chunk());
  PairList out;
  const auto job = [&](index_t k) {
    return ChunkJob{k, plan.row_begin(k), plan.row_end(k), plan.elements(k)};
  };
  b->submit(job(0));
  for (index_t k = 0; k < plan.chunks(); ++k) {
    if (k + 1 < plan.chunks()) b->submit(job(k + 1));
    const ChunkResult<T> r = b->wait();
    out.pairs.insert(out.pairs.end(), r.pairs, r.pairs + 2 * r.selected);
    for (index_t q = 0; q < r.selected; ++q)
      out.values.push_back(static_cast<double>(r.values[q]));
  }
  return out;
}

template <typename T>
void expect_same_selection(const Problem<T>& p, index_t chunk, const std::string& what) {
  const PairList want = run_select<T>(p, cpu::make_cpu_backend<T>(p, 2, 1), chunk);
  const PairList got = run_select<T>(p, cuda::make_cuda_backend<T>(p, cuda::CudaOptions{}), chunk);
  ASSERT_EQ(want.pairs.size(), got.pairs.size()) << what;
  EXPECT_EQ(want.pairs, got.pairs) << what;
  EXPECT_EQ(0, std::memcmp(want.values.data(), got.values.data(), want.values.size() * 8)) << what;
}

}  // namespace

// knn --radius and collide select on the device: the same pairs, in the same
// order, with the same values as the CPU's tile loops (which tests/unit
// check against a scan of every stored value). Chunks that find more pairs
// than the list holds (65536 to start) grow it and run again.
TEST(CudaBackend, SelectMatchesCpu) {
  REQUIRE_GPU();
  unsigned seed = 300;
  for (Metric m : kMetrics)
    for (index_t d : {1, 3, 8, 17})
      for (MapKind map : {MapKind::lambda, MapKind::bb}) {
        Problem<float> p = random_problem<float>(3001, d, m, 128, seed++, map);
        set_select_within(&p, m == Metric::cosine ? 0.05 : 0.3 * std::sqrt(double(d)));
        expect_same_selection(p, 200000,
                              std::string("f32 ") + metric_name(m) + " d=" + std::to_string(d));
        Problem<double> q = random_problem<double>(2001, d, m, 256, seed++, map);
        set_select_within(&q, m == Metric::cosine ? 0.1 : 0.5 * std::sqrt(double(d)));
        expect_same_selection(q, 1 << 22,
                              std::string("f64 ") + metric_name(m) + " d=" + std::to_string(d));
      }
  // Everything passes: lists of millions, grown more than once.
  Problem<float> all = random_problem<float>(4000, 2, Metric::euclidean, 128, 9);
  set_select_within(&all, 100);
  expect_same_selection(all, index_t(1) << 30, "every pair");
  // A general-d metric and a value that can be nan.
  Problem<double> bc = random_problem<double>(1500, 5, Metric::braycurtis, 128, 10);
  for (index_t k = 0; k < 5; ++k)
    bc.a[7 * 5 + k] = bc.a[9 * 5 + k] = 0;
  complete_problem(&bc);
  set_select_within(&bc, 0.4);
  expect_same_selection(bc, 100000, "braycurtis");
}

TEST(CudaBackend, OverlapMatchesCpu) {
  REQUIRE_GPU();
  for (index_t dim : {1, 3})
    for (MapKind map : {MapKind::lambda, MapKind::bb})
      for (double rmax : {0.0, 1e-160, 0.003, 0.05, 1e200}) {
        Problem<double> p = random_problem<double>(5003, dim, Metric::euclidean, 128, 17, map);
        std::vector<double> radii(p.rows);
        std::mt19937_64 rng(3);
        std::uniform_real_distribution<double> u(0, rmax);
        for (auto& r : radii)
          r = u(rng);
        // Touching spheres (distance == r_i + r_j exactly): not an overlap.
        for (index_t k = 0; k < dim; ++k) {
          p.a[10 * dim + k] = k == 0 ? 0.25 : 0;
          p.a[11 * dim + k] = k == 0 ? 0.75 : 0;
        }
        radii[10] = radii[11] = 0.25;
        set_select_overlap(&p, radii);
        expect_same_selection(p, 1 << 20,
                              "dim=" + std::to_string(dim) + " rmax=" + std::to_string(rmax));
      }
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
