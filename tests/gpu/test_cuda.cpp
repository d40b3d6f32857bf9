// The CUDA backend against the CPU backend, chunk by chunk, bit for bit.
// Skips without a GPU; fails instead when TDSOLVE_REQUIRE_GPU=1.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>

#include "device_checks.hpp"
#include "io/error.hpp"
#include "mapping/partition.hpp"
#include "solver/cpu/cpu_backend.hpp"
#include "solver/cuda/cuda_backend.hpp"
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

template <typename T>
EdmProblem<T> random_problem(index_t n, index_t d, Metric m, index_t rho, unsigned seed) {
  io::PointSet pts;
  pts.n = n;
  pts.d = d;
  pts.source = "test";
  pts.values.resize(n * d);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (auto& v : pts.values)
    v = u(rng);
  EdmProblem<T> p;
  p.n = n;
  p.d = d;
  p.points = convert_points<T>(pts);
  complete_problem(&p, m, rho);
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
// submit/wait pipeline) and on the CPU, and compares them.
template <typename T>
Outcome compare_chunks(const EdmProblem<T>& p, bool bounding_box, bool sample_chunks) {
  const mapping::ChunkPlan plan(p.tiling, index_t(64) << 20 >> (sizeof(T) == 8 ? 3 : 2));
  std::vector<index_t> chunks;
  if (sample_chunks && plan.chunks() > 3) {
    chunks = {0, plan.chunks() / 2, plan.chunks() - 1};
  } else {
    for (index_t c = 0; c < plan.chunks(); ++c)
      chunks.push_back(c);
  }
  cuda::CudaOptions o;
  o.bounding_box = bounding_box;
  auto gpu = cuda::make_cuda_backend<T>(p, o);
  gpu->reserve(plan.largest_chunk());
  const cpu::EdmView<T> v = cpu::view_of(p);
  const int threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<T> want(plan.largest_chunk());
  Outcome out;
  for (index_t c : chunks) {
    gpu->submit(ChunkJob{plan.row_begin(c), plan.row_end(c), plan.elements(c)});
    const T* got = gpu->wait();
    cpu::compute_block_rows<T>(v, plan.row_begin(c), plan.row_end(c), want.data(), threads);
    for (index_t e = 0; e < plan.elements(c); ++e) {
      const double u = ulps(got[e], want[e]);
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
        const EdmProblem<T> p = random_problem<T>(n, d, m, 128, seed++);
        const Outcome r = compare_chunks(p, bounding_box, n > 10000);
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
    const EdmProblem<float> p = random_problem<float>(777, d, Metric::euclidean, 128, 100 + d);
    EXPECT_EQ(compare_chunks(p, false, false).differing, 0u) << "d=" << d;
  }
  for (index_t rho : {256, 384}) {
    const EdmProblem<float> p = random_problem<float>(1500, 5, Metric::cityblock, rho, 7);
    EXPECT_EQ(compare_chunks(p, false, false).differing, 0u) << "rho=" << rho;
    EXPECT_EQ(compare_chunks(p, true, false).differing, 0u) << "bb rho=" << rho;
  }
}

TEST(CudaBackend, MaskedPathEverywhereMatchesCpu) {
  REQUIRE_GPU();
  setenv("TDSOLVE_CUDA_MASKED_ONLY", "1", 1);
  check_all<float>({1000, 4099}, {3, 17}, false);
  unsetenv("TDSOLVE_CUDA_MASKED_ONLY");
}

TEST(CudaBackend, RejectsBlocksThatAreNotMultiplesOf128) {
  REQUIRE_GPU();
  const EdmProblem<float> p = random_problem<float>(100, 3, Metric::euclidean, 100, 1);
  try {
    cuda::make_cuda_backend<float>(p, cuda::CudaOptions{});
    FAIL() << "accepted --block 100";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("multiple of 128"), std::string::npos) << e.what();
  }
}

TEST(CudaBackend, OutOfMemoryIsAClearError) {
  REQUIRE_GPU();
  const EdmProblem<float> p = random_problem<float>(100, 3, Metric::euclidean, 128, 1);
  auto b = cuda::make_cuda_backend<float>(p, cuda::CudaOptions{});
  try {
    b->reserve(index_t(1) << 42);  // 16 TiB
    FAIL() << "a 16 TiB buffer was allocated";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("out of GPU memory"), std::string::npos) << e.what();
  }
  // The backend still works afterwards.
  const mapping::ChunkPlan plan(p.tiling, 1 << 20);
  b->reserve(plan.largest_chunk());
  b->submit(ChunkJob{0, plan.row_end(0), plan.elements(0)});
  EXPECT_NE(b->wait(), nullptr);
}
