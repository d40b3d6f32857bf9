// A culled pair domain built on the GPU (solver/cull.hpp, build_culled):
// the Morton codes, their sort, the block boxes and every block row's
// descent of the tree run on the device; the host builds the tree itself
// (O(blocks)) and keeps what the run needs (the order, the boxes, the list).
// The same arithmetic as the host's (cull_bound.hpp and morton.hpp are
// shared; this file is compiled with --fmad=false), so the same list, tile
// for tile: a run may stop on one backend and resume on the other.
#include <cub/cub.cuh>

#include <cstring>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "solver/cuda/cuda_resources.cuh"
#include "solver/cull.hpp"
#include "solver/cull_bound.hpp"
#include "solver/cull_fractional.hpp"
#include "solver/morton.hpp"
#include "solver/setup_clock.hpp"

namespace tdsolve::cuda {

namespace {

constexpr int kThreads = 256;

unsigned grid(index_t work) {
  return static_cast<unsigned>((work + kThreads - 1) / kThreads);
}

// Doubles as unsigned keys in their order (for atomic min and max).
__device__ unsigned long long ordered(double v) {
  const unsigned long long b = __double_as_longlong(v);
  return b >> 63 ? ~b : b | (1ull << 63);
}
__host__ __device__ double unordered(unsigned long long k) {
  const unsigned long long b = k >> 63 ? k & ~(1ull << 63) : ~k;
#ifdef __CUDA_ARCH__
  return __longlong_as_double(b);
#else
  double v;
  std::memcpy(&v, &b, sizeof v);
  return v;
#endif
}

// The geometry a kernel needs, by value.
struct Geometry {
  double p, cutoff, rel_tol, scale;
  int box_dims;
  double box[8];
  bool triclinic, radii;
  double cell[6];
  cull::Tilted tilted;
};

// The coordinates the list is built from: the points in double, or their
// fractional coordinates in a triclinic cell (cull::fractional).
template <typename T>
__global__ void to_double(const T* pts, index_t n, index_t d, Geometry g, double* x) {
  const index_t i = blockIdx.x * index_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  if (g.triclinic) {
    const double v[3] = {double(pts[i * 3]), double(pts[i * 3 + 1]), double(pts[i * 3 + 2])};
    cull::fractional(g.cell, v, &x[i * 3]);
    return;
  }
  for (index_t k = 0; k < d; ++k)
    x[i * d + k] = static_cast<double>(pts[i * d + k]);
}

// Per axis the least and largest of x (keys[2k], keys[2k + 1]: ordered()),
// and the largest |value| of pts (keys[2d]): each thread over a stride of
// points, then its warp, then one atomic a warp (d <= 8).
template <typename T>
__global__ void bounds(const T* pts, const double* x, index_t n, index_t d,
                       unsigned long long* keys) {
  unsigned long long lo[8], hi[8], big = 0;
  for (index_t k = 0; k < d; ++k) {
    lo[k] = ~0ull;
    hi[k] = 0;
  }
  const index_t stride = index_t(gridDim.x) * blockDim.x;
  for (index_t i = blockIdx.x * index_t(blockDim.x) + threadIdx.x; i < n; i += stride)
    for (index_t k = 0; k < d; ++k) {
      const unsigned long long v = ordered(x[i * d + k]);
      lo[k] = v < lo[k] ? v : lo[k];
      hi[k] = v > hi[k] ? v : hi[k];
      const unsigned long long a = ordered(fabs(static_cast<double>(pts[i * d + k])));
      big = a > big ? a : big;
    }
  for (int off = 16; off > 0; off /= 2) {
    for (index_t k = 0; k < d; ++k) {
      const unsigned long long l = __shfl_down_sync(0xffffffffu, lo[k], off);
      const unsigned long long h = __shfl_down_sync(0xffffffffu, hi[k], off);
      lo[k] = l < lo[k] ? l : lo[k];
      hi[k] = h > hi[k] ? h : hi[k];
    }
    const unsigned long long b = __shfl_down_sync(0xffffffffu, big, off);
    big = b > big ? b : big;
  }
  if (threadIdx.x % 32 != 0) return;
  for (index_t k = 0; k < d; ++k) {
    atomicMin(&keys[2 * k], lo[k]);
    atomicMax(&keys[2 * k + 1], hi[k]);
  }
  atomicMax(&keys[2 * d], big);
}

// morton_order's codes: (x − lo) × scale, clamped to the cells, spread.
__global__ void codes(const double* x, index_t n, int dims, int bits, const double* lo,
                      const double* scale, double cells, std::uint64_t* code,
                      std::uint32_t* index) {
  const index_t i = blockIdx.x * index_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  std::uint64_t q[8];
  for (int k = 0; k < dims; ++k) {
    double c = (x[i * dims + k] - lo[k]) * scale[k];
    c = c < 0.0 ? 0.0 : c;  // std::max(c, 0.0), then std::min(·, cells)
    c = cells < c ? cells : c;
    q[k] = static_cast<std::uint64_t>(c);
  }
  code[i] = morton_code(q, dims, bits);
  index[i] = static_cast<std::uint32_t>(i);
}

// Each block's box (m × d) and largest radius, its points in the run's order.
__global__ void block_boxes(const double* x, const std::uint32_t* order, const double* radii,
                            index_t n, index_t d, index_t rho, index_t m, double* lo, double* hi,
                            double* rmax) {
  const index_t I = blockIdx.x * index_t(blockDim.x) + threadIdx.x;
  if (I >= m) return;
  const index_t end = min(n, (I + 1) * rho);
  for (index_t k = 0; k < d; ++k) {
    double l = INFINITY, h = -INFINITY;
    for (index_t q = I * rho; q < end; ++q) {
      const double v = x[index_t(order[q]) * d + k];
      l = v < l ? v : l;  // std::min(l, v)
      h = h < v ? v : h;  // std::max(h, v)
    }
    lo[I * d + k] = l;
    hi[I * d + k] = h;
  }
  if (radii) {
    double r = 0;
    for (index_t q = I * rho; q < end; ++q) {
      const double v = radii[order[q]];
      r = r < v ? v : r;
    }
    rmax[I] = r;
  }
}

// The tree (CullTree) on the device.
struct Tree {
  const std::uint32_t *first, *last;
  const std::int32_t *left, *right, *leaf;
  const double *rmax, *lo, *hi;
  int dims;
};

// Block row I's descent (cull.cpp's Traversal::row): every J >= I, rising,
// passed to emit.
template <class Emit>
__device__ void descend(const Tree& t, const Geometry& g, index_t I, Emit emit) {
  const std::int32_t leaf = t.leaf[I];
  const int d = t.dims;
  std::int32_t stack[2 * 64];
  int top = 0;
  stack[top++] = 0;  // the root: the first node in pre-order
  while (top > 0) {
    const std::int32_t a = stack[--top];
    if (t.last[a] <= I) continue;
    const double b = cull::bound(&t.lo[leaf * d], &t.hi[leaf * d], &t.lo[a * d], &t.hi[a * d], d,
                                 g.p, g.box_dims, g.box, g.triclinic ? &g.tilted : nullptr);
    const double cutoff = g.radii ? t.rmax[leaf] + t.rmax[a] : g.cutoff;
    if (b > cull::limit(cutoff, g.rel_tol, g.scale)) continue;
    if (t.left[a] < 0) {
      emit(t.first[a]);
      continue;
    }
    stack[top++] = t.right[a];
    stack[top++] = t.left[a];
  }
}

__device__ index_t pairs_of(index_t n, index_t rho, index_t I, index_t J) {
  const index_t ri = min(rho, n - I * rho), rj = min(rho, n - J * rho);
  return I == J ? ri * (ri - 1) / 2 : ri * rj;
}

__global__ void count_rows(Tree t, Geometry g, index_t n, index_t rho, index_t m,
                           unsigned long long* tiles, unsigned long long* pairs) {
  const index_t I = blockIdx.x * index_t(blockDim.x) + threadIdx.x;
  if (I >= m) return;
  unsigned long long count = 0, tested = 0;
  descend(t, g, I, [&](index_t J) {
    ++count;
    tested += pairs_of(n, rho, I, J);
  });
  tiles[I] = count;
  pairs[I] = tested;
}

__global__ void list_rows(Tree t, Geometry g, index_t m, const unsigned long long* start,
                          std::uint32_t* out) {
  const index_t I = blockIdx.x * index_t(blockDim.x) + threadIdx.x;
  if (I >= m) return;
  std::uint32_t* at = out + 2 * start[I];
  descend(t, g, I, [&](index_t J) {
    *at++ = static_cast<std::uint32_t>(I);
    *at++ = static_cast<std::uint32_t>(J);
  });
}

template <typename V>
void download(std::vector<V>* out, const V* from, index_t count, const char* what) {
  out->resize(count);
  if (count) check(cudaMemcpy(out->data(), from, count * sizeof(V), cudaMemcpyDeviceToHost), what);
}

template <typename V>
void upload(DeviceBuffer<V>* to, const V* from, index_t count, const char* what) {
  to->allocate(count, what);
  if (count) check(cudaMemcpy(to->get(), from, count * sizeof(V), cudaMemcpyHostToDevice), what);
}

template <typename T>
bool build(const T* pts, index_t n, index_t d, index_t rho, const CullGeometry& g,
           index_t max_tiles, Culled* c) {
  c->n = n;
  c->rho = rho;
  const index_t m = c->m = (n + rho - 1) / rho;
  c->geometry = g;
  c->geometry.radii = nullptr;  // input order: not the run's
  c->tiles.clear();
  c->tile_start.assign(m + 1, 0);
  c->before.assign(m + 1, 0);

  Geometry k{};
  k.p = g.p;
  k.cutoff = g.cutoff;
  k.rel_tol = g.rel_tol;
  k.box_dims = g.box_dims;
  std::copy(g.box, g.box + 8, k.box);
  k.triclinic = g.triclinic;
  k.radii = g.radii != nullptr;
  std::copy(g.cell, g.cell + 6, k.cell);
  k.tilted = g.tilted;

  DeviceBuffer<T> d_pts;
  upload(&d_pts, pts, n * d, "the points (culled list)");
  DeviceBuffer<double> x;
  x.allocate(n * d, "the points in double (culled list)");
  to_double<<<grid(n), kThreads>>>(d_pts.get(), n, d, k, x.get());
  DeviceBuffer<unsigned long long> keys;
  std::vector<unsigned long long> init(2 * d + 1);
  for (index_t q = 0; q < d; ++q) {
    init[2 * q] = ~0ull;  // above every ordered() value
    init[2 * q + 1] = 0;
  }
  init[2 * d] = 0;
  upload(&keys, init.data(), init.size(), "the bounds (culled list)");
  bounds<<<static_cast<unsigned>(std::min<index_t>(grid(n), 2048)), kThreads>>>(
      d_pts.get(), x.get(), n, d, keys.get());
  check(cudaGetLastError(), "the culled list's bounds");
  download(&init, keys.get(), 2 * d + 1, "the bounds (culled list)");
  d_pts.release();

  // cull_scale: the largest coordinate, box length or cell component.
  double scale = 0;
  if (g.box_dims > 0) {
    scale = unordered(init[2 * d]);
    for (int q = 0; q < g.box_dims; ++q)
      scale = std::max(scale, g.box[q]);
    if (g.triclinic)
      for (int q = 0; q < 6; ++q)
        scale = std::max(scale, std::fabs(g.cell[q]));
  }
  c->scale = k.scale = scale;
  setup_mark("cull_copy");

  // morton_order.
  const int dims = static_cast<int>(d), bits = morton_bits(dims);
  const double cells = std::ldexp(1.0, bits) - 1;
  std::vector<double> lo_scale(2 * d);
  for (index_t q = 0; q < d; ++q) {
    const double lo = unordered(init[2 * q]), hi = unordered(init[2 * q + 1]);
    lo_scale[q] = lo;
    lo_scale[d + q] = hi > lo ? cells / (hi - lo) : 0.0;
  }
  DeviceBuffer<double> d_lo_scale;
  upload(&d_lo_scale, lo_scale.data(), 2 * d, "the curve's scale (culled list)");
  DeviceBuffer<std::uint64_t> code, code_sorted;
  DeviceBuffer<std::uint32_t> index, order;
  code.allocate(n, "Morton codes");
  code_sorted.allocate(n, "Morton codes");
  index.allocate(n, "the point order");
  order.allocate(n, "the point order");
  codes<<<grid(n), kThreads>>>(x.get(), n, dims, bits, d_lo_scale.get(), d_lo_scale.get() + d,
                               cells, code.get(), index.get());
  check(cudaGetLastError(), "the Morton codes");
  // Stable: ties keep the input order, as the host's (code, index) keys.
  std::size_t scratch_bytes = 0;
  check(cub::DeviceRadixSort::SortPairs(nullptr, scratch_bytes, code.get(), code_sorted.get(),
                                        index.get(), order.get(), static_cast<int>(n), 0,
                                        bits * dims),
        "cub::DeviceRadixSort (scratch size)");
  {
    DeviceBuffer<unsigned char> scratch;
    scratch.allocate(scratch_bytes, "the Morton sort's scratch");
    check(cub::DeviceRadixSort::SortPairs(scratch.get(), scratch_bytes, code.get(),
                                          code_sorted.get(), index.get(), order.get(),
                                          static_cast<int>(n), 0, bits * dims),
          "cub::DeviceRadixSort (the Morton codes)");
  }
  code.release();
  code_sorted.release();
  index.release();
  std::vector<std::uint32_t> order32;
  download(&order32, order.get(), n, "the point order");
  c->order.resize(n);
#pragma omp parallel for schedule(static)
  for (index_t q = 0; q < n; ++q)
    c->order[q] = order32[q];
  setup_mark("cull_order");

  // The block boxes, and a triclinic run's fractional coordinates in its order.
  DeviceBuffer<double> lo, hi, rmax, radii;
  lo.allocate(m * d, "block boxes");
  hi.allocate(m * d, "block boxes");
  if (g.radii) {
    upload(&radii, g.radii, n, "the radii (culled list)");
    rmax.allocate(m, "block radii");
  }
  block_boxes<<<grid(m), kThreads>>>(x.get(), order.get(), radii.get(), n, d, rho, m, lo.get(),
                                     hi.get(), rmax.get());
  check(cudaGetLastError(), "the block boxes");
  download(&c->lo, lo.get(), m * d, "block boxes");
  download(&c->hi, hi.get(), m * d, "block boxes");
  if (g.radii)
    download(&c->rmax, rmax.get(), m, "block radii");
  else
    c->rmax.clear();
  c->frac.clear();
  if (g.triclinic) {
    std::vector<double> frac;
    download(&frac, x.get(), n * 3, "fractional coordinates");
    c->frac.resize(n * 3);
#pragma omp parallel for schedule(static)
    for (index_t q = 0; q < n; ++q)
      std::copy_n(&frac[c->order[q] * 3], 3, &c->frac[q * 3]);
  }
  x.release();
  order.release();
  radii.release();
  setup_mark("cull_boxes");

  // The tree (host: O(blocks)), then every row's descent: counts, their
  // prefix sums, the list.
  const CullTree tree = cull_tree(*c);
  const index_t nodes = tree.first.size();
  std::vector<std::uint32_t> first(nodes), last(nodes);
  std::vector<std::int32_t> left(nodes), right(nodes), leaf(m);
  for (index_t a = 0; a < nodes; ++a) {
    first[a] = static_cast<std::uint32_t>(tree.first[a]);
    last[a] = static_cast<std::uint32_t>(tree.last[a]);
    left[a] = static_cast<std::int32_t>(tree.left[a]);
    right[a] = static_cast<std::int32_t>(tree.right[a]);
  }
  for (index_t I = 0; I < m; ++I)
    leaf[I] = static_cast<std::int32_t>(tree.leaf[I]);
  DeviceBuffer<std::uint32_t> t_first, t_last;
  DeviceBuffer<std::int32_t> t_left, t_right, t_leaf;
  DeviceBuffer<double> t_rmax, t_lo, t_hi;
  upload(&t_first, first.data(), nodes, "the block tree");
  upload(&t_last, last.data(), nodes, "the block tree");
  upload(&t_left, left.data(), nodes, "the block tree");
  upload(&t_right, right.data(), nodes, "the block tree");
  upload(&t_leaf, leaf.data(), m, "the block tree");
  upload(&t_rmax, tree.rmax.data(), nodes, "the block tree");
  upload(&t_lo, tree.lo.data(), nodes * d, "the block tree");
  upload(&t_hi, tree.hi.data(), nodes * d, "the block tree");
  const Tree t{t_first.get(), t_last.get(), t_left.get(), t_right.get(), t_leaf.get(),
               t_rmax.get(),  t_lo.get(),   t_hi.get(),   dims};
  DeviceBuffer<unsigned long long> tiles, pairs, start;
  tiles.allocate(m, "tiles a row");
  pairs.allocate(m, "pairs a row");
  start.allocate(m + 1, "tiles before a row");
  count_rows<<<grid(m), kThreads>>>(t, k, n, rho, m, tiles.get(), pairs.get());
  check(cudaGetLastError(), "the tiles a row");
  std::size_t scan_bytes = 0;
  check(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, tiles.get(), start.get(),
                                      static_cast<int>(m)),
        "cub::DeviceScan (scratch size)");
  {
    DeviceBuffer<unsigned char> scratch;
    scratch.allocate(scan_bytes, "the tiles' scan");
    check(cub::DeviceScan::ExclusiveSum(scratch.get(), scan_bytes, tiles.get(), start.get(),
                                        static_cast<int>(m)),
          "cub::DeviceScan (the tiles a row)");
  }
  std::vector<unsigned long long> per_row, tested;
  download(&per_row, tiles.get(), m, "tiles a row");
  download(&tested, pairs.get(), m, "pairs a row");
  index_t total = 0;
  for (index_t I = 0; I < m; ++I) {
    c->tile_start[I + 1] = per_row[I];
    c->before[I + 1] = tested[I];
    total += per_row[I];
  }
  if (total > max_tiles) return false;
  setup_mark("cull_tiles");
  DeviceBuffer<std::uint32_t> list;
  list.allocate(2 * total, "the tile list");
  list_rows<<<grid(m), kThreads>>>(t, k, m, start.get(), list.get());
  check(cudaGetLastError(), "the tile list");
  download(&c->tiles, list.get(), 2 * total, "the tile list");
  sum_rows(c);
  c->built_on = "gpu";
  setup_mark("cull_list");
  return true;
}

}  // namespace

template <typename T>
bool build_culled_on_device(const T* pts, index_t n, index_t d, index_t rho, const CullGeometry& g,
                            index_t max_tiles, const CudaOptions& o, Culled* c, bool* built) {
  // The host builds what this cannot: pow's bits differ between the two
  // libraries (minkowski), 32-bit indices, and the Morton codes of d <= 8.
  if (!(g.p == 1 || g.p == 2 || g.p == INFINITY) || n >= (index_t(1) << 31) || d == 0 || d > 8 ||
      n < 2)
    return false;
  if (device_count() == 0) return false;
  pick_device(o);
  try {
    *built = build(pts, n, d, rho, g, max_tiles, c);
  } catch (const std::runtime_error& e) {
    // Out of GPU memory (CudaBuffer's message): the host builds it.
    if (std::string(e.what()).rfind("out of GPU memory", 0) != 0) throw;
    cudaGetLastError();
    return false;
  }
  return true;
}

template bool build_culled_on_device<float>(const float*, index_t, index_t, index_t,
                                            const CullGeometry&, index_t, const CudaOptions&,
                                            Culled*, bool*);
template bool build_culled_on_device<double>(const double*, index_t, index_t, index_t,
                                             const CullGeometry&, index_t, const CudaOptions&,
                                             Culled*, bool*);

}  // namespace tdsolve::cuda
