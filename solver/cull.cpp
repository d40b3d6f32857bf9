#include "solver/cull.hpp"

#include "solver/bucket_sort.hpp"
#include "solver/cull_bound.hpp"
#include "solver/setup_clock.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <iterator>
#include <limits>
#include <memory>
#include <numeric>

namespace tdsolve {

namespace {

// The bits of x (below 2^21) spread to every third (second) bit.
std::uint64_t spread3(std::uint64_t x) {
  x &= 0x1fffff;
  x = (x | x << 32) & 0x1f00000000ffffull;
  x = (x | x << 16) & 0x1f0000ff0000ffull;
  x = (x | x << 8) & 0x100f00f00f00f00full;
  x = (x | x << 4) & 0x10c30c30c30c30c3ull;
  x = (x | x << 2) & 0x1249249249249249ull;
  return x;
}
std::uint64_t spread2(std::uint64_t x) {
  x &= 0x1fffff;
  x = (x | x << 16) & 0x0000ffff0000ffffull;
  x = (x | x << 8) & 0x00ff00ff00ff00ffull;
  x = (x | x << 4) & 0x0f0f0f0f0f0f0f0full;
  x = (x | x << 2) & 0x3333333333333333ull;
  x = (x | x << 1) & 0x5555555555555555ull;
  return x;
}

}  // namespace

std::uint64_t morton_code(const std::uint64_t* q, int dims, int bits) {
  // Bit b of coordinate k lands at b * dims + (dims - 1 - k): coordinate 0
  // the most significant of each group.
  if (dims == 3 && bits <= 21) return spread3(q[0]) << 2 | spread3(q[1]) << 1 | spread3(q[2]);
  if (dims == 2 && bits <= 21) return spread2(q[0]) << 1 | spread2(q[1]);
  if (dims == 1) return q[0];
  std::uint64_t code = 0;
  for (int b = bits - 1; b >= 0; --b)
    for (int k = 0; k < dims; ++k)
      code = (code << 1) | ((q[k] >> b) & 1u);
  return code;
}

std::vector<index_t> morton_order(const double* pts, index_t n, index_t d) {
  std::vector<index_t> order;
  if (n < 2 || d == 0) {
    order.resize(n);
    std::iota(order.begin(), order.end(), index_t(0));
    return order;
  }
  const int dims = static_cast<int>(std::min<index_t>(d, 63));
  const int bits = std::max(1, std::min(21, 63 / dims));
  std::vector<double> lo(dims, INFINITY), scale(dims, 0);
  std::vector<double> hi(dims, -INFINITY);
  for (int k = 0; k < dims; ++k) {
    double l = INFINITY, h = -INFINITY;
#pragma omp parallel for reduction(min : l) reduction(max : h)
    for (index_t i = 0; i < n; ++i) {
      l = std::min(l, pts[i * d + k]);
      h = std::max(h, pts[i * d + k]);
    }
    lo[k] = l;
    hi[k] = h;
  }
  const double cells = std::ldexp(1.0, bits) - 1;
  for (int k = 0; k < dims; ++k)
    scale[k] = hi[k] > lo[k] ? cells / (hi[k] - lo[k]) : 0.0;
  // (code, input index): ties keep the input order.
  struct Key {
    std::uint64_t code, i;
    bool operator<(const Key& o) const { return code < o.code || (code == o.code && i < o.i); }
  };
  std::unique_ptr<Key[]> key = uninitialised<Key>(n), sorted = uninitialised<Key>(n);
#pragma omp parallel
  {
    std::vector<std::uint64_t> q(dims);
#pragma omp for schedule(static)
    for (index_t i = 0; i < n; ++i) {
      for (int k = 0; k < dims; ++k) {
        const double c = (pts[i * d + k] - lo[k]) * scale[k];
        q[k] = static_cast<std::uint64_t>(std::min(std::max(c, 0.0), cells));
      }
      key[i] = {morton_code(q.data(), dims, bits), i};
    }
  }
  // Buckets by the codes' top 16 bits (of bits × dims).
  const int code_bits = bits * dims, top = std::min(code_bits, 16);
  bucket_sort(key.get(), n, sorted.get(), std::size_t(1) << top,
              [&](const Key& k) { return k.code >> (code_bits - top); });
  key.reset();
  order.resize(n);
#pragma omp parallel for schedule(static)
  for (index_t i = 0; i < n; ++i)
    order[i] = sorted[i].i;
  return order;
}

void cell_normals(const double* cell, double (*n)[3], double* widths) {
  const double lx = cell[0], ly = cell[1], lz = cell[2], xy = cell[3], xz = cell[4], yz = cell[5];
  // The rows of the inverse of the cell matrix (columns a, b, c): the face
  // normals, of length 1 / width.
  const double r[3][3] = {{1 / lx, -xy / (lx * ly), (xy * yz - xz * ly) / (lx * ly * lz)},
                          {0, 1 / ly, -yz / (ly * lz)},
                          {0, 0, 1 / lz}};
  for (int k = 0; k < 3; ++k) {
    const double len = std::sqrt(r[k][0] * r[k][0] + r[k][1] * r[k][1] + r[k][2] * r[k][2]);
    widths[k] = 1 / len;
    for (int c = 0; c < 3; ++c)
      n[k][c] = r[k][c] / len;
  }
}

void set_triclinic(CullGeometry* g, const double* cell) {
  g->triclinic = true;
  std::copy(cell, cell + 6, g->cell);
  g->box_dims = 3;
  g->box[0] = g->box[1] = g->box[2] = 1;
  double u[3][3];
  cell_normals(cell, u, g->tilted.w);
  // Gershgorin: the largest eigenvalue of the normals' Gram matrix (1 on
  // its diagonal) is at most 1 + the largest row sum of |cosines|; a margin
  // for its rounding.
  double most = 0;
  for (int k = 0; k < 3; ++k) {
    double s = 0;
    for (int q = 0; q < 3; ++q)
      if (q != k) s += std::fabs(u[k][0] * u[q][0] + u[k][1] * u[q][1] + u[k][2] * u[q][2]);
    most = std::max(most, s);
  }
  g->tilted.inv_sigma = 1 / std::sqrt(1 + most) * (1 - 1e-12);
}

namespace {

// The fractional coordinates of x (3) in a triclinic cell (lx, ly, lz, xy,
// xz, yz). Not wrapped, as an orthorhombic box's points are not: the gaps
// fold any range onto a period, and wrapping splits the points that lie
// across a face between the two ends of the curve (a jittered lattice's
// first plane: 42 % more triplet tiles, 17 % more pair tiles at n = 13824).
void fractional(const double* cell, const double* x, double* s) {
  const double sz = x[2] / cell[2];
  const double sy = (x[1] - cell[5] * sz) / cell[1];
  s[0] = (x[0] - cell[3] * sy - cell[4] * sz) / cell[0];
  s[1] = sy;
  s[2] = sz;
}

// The scale of cull::limit for points pts (n × d, as the run computes them)
// in g's periodic box; 0 without one.
double cull_scale(const double* pts, index_t n, index_t d, const CullGeometry& g) {
  if (g.box_dims == 0) return 0;
  double s = 0;
#pragma omp parallel for reduction(max : s)
  for (index_t q = 0; q < n * d; ++q)
    s = std::max(s, std::fabs(pts[q]));
  for (int k = 0; k < g.box_dims; ++k)
    s = std::max(s, g.box[k]);
  if (g.triclinic)  // the images' shifts: the cell vectors' components
    for (int k = 0; k < 6; ++k)
      s = std::max(s, std::fabs(g.cell[k]));
  return s;
}

// An implicit binary tree over blocks [first, last): its box, its largest
// radius, its children (-1: a leaf, one block).
struct Node {
  index_t first, last;
  std::int64_t left = -1, right = -1;
  double rmax = 0;
};

class Traversal {
 public:
  // scale: the margin's share of a periodic box (cull::limit).
  Traversal(const CullGeometry& g, index_t dims, index_t max_tiles, double scale)
      : g_(g), dims_(dims), max_tiles_(max_tiles), scale_(scale) {}

  // Nodes over block boxes lo/hi (dims a block) and radii rmax.
  void build(const std::vector<double>& lo, const std::vector<double>& hi,
             const std::vector<double>& rmax, index_t m) {
    lo_ = lo;
    hi_ = hi;
    rmax_ = rmax;
    nodes_.reserve(2 * m);
    node_lo_.reserve(2 * m * dims_);
    node_hi_.reserve(2 * m * dims_);
    root_ = make(0, m);
  }

  // Every (I, J), I <= J, of blocks whose boxes may hold a pair within the
  // cutoff. False when more than max_tiles survive.
  bool run(std::vector<std::uint64_t>* out) {
    // The recursion's upper levels are OpenMP tasks (pairs of nodes of more
    // than `grain_` blocks between them); each thread lists its tiles, in
    // any order (the caller sorts them).
    const int team = omp_get_max_threads();
    parts_ = std::vector<Part>(team);
    emitted_ = 0;
    failed_ = false;
    grain_ = std::max<index_t>(64, nodes_.empty() ? 0 : (nodes_[root_].last / (16 * team)));
#pragma omp parallel num_threads(team)
#pragma omp single
    self(root_);
    std::size_t total = 0;
    for (const Part& p : parts_)
      total += p.tiles.size();
    if (failed_ || total > max_tiles_) return false;
    out->clear();
    out->reserve(total);
    for (Part& p : parts_) {
      out->insert(out->end(), p.tiles.begin(), p.tiles.end());
      std::vector<std::uint64_t>().swap(p.tiles);
    }
    return true;
  }

  // Every block J (any, I itself too) whose box may hold a point within
  // `cutoff` of block I's, with the lower bound of its distance: appended
  // to out. False once out holds more than `room` entries.
  bool query(index_t I, double cutoff, index_t room, std::vector<std::pair<double, index_t>>* out) {
    return down(root_, leaf_[I], cutoff, room, out);
  }

 private:
  std::int64_t make(index_t first, index_t last) {
    const std::int64_t id = static_cast<std::int64_t>(nodes_.size());
    nodes_.push_back(Node{first, last});
    node_lo_.resize((id + 1) * dims_);
    node_hi_.resize((id + 1) * dims_);
    if (last - first == 1) {
      if (leaf_.size() <= first) leaf_.resize(first + 1, -1);
      leaf_[first] = id;
      for (index_t k = 0; k < dims_; ++k) {
        node_lo_[id * dims_ + k] = lo_[first * dims_ + k];
        node_hi_[id * dims_ + k] = hi_[first * dims_ + k];
      }
      nodes_[id].rmax = rmax_.empty() ? 0 : rmax_[first];
      return id;
    }
    const index_t mid = first + (last - first) / 2;
    const std::int64_t l = make(first, mid), r = make(mid, last);
    nodes_[id].left = l;
    nodes_[id].right = r;
    nodes_[id].rmax = std::max(nodes_[l].rmax, nodes_[r].rmax);
    for (index_t k = 0; k < dims_; ++k) {
      node_lo_[id * dims_ + k] = std::min(node_lo_[l * dims_ + k], node_lo_[r * dims_ + k]);
      node_hi_[id * dims_ + k] = std::max(node_hi_[l * dims_ + k], node_hi_[r * dims_ + k]);
    }
    return id;
  }

  // The lower bound of any pair's distance between nodes a and b.
  double lower(std::int64_t a, std::int64_t b) const {
    return cull::bound(&node_lo_[a * dims_], &node_hi_[a * dims_], &node_lo_[b * dims_],
                       &node_hi_[b * dims_], dims_, g_.p, g_.box_dims, g_.box,
                       g_.triclinic ? &g_.tilted : nullptr);
  }

  bool far(std::int64_t a, std::int64_t b) const {
    const double cutoff = g_.radii ? nodes_[a].rmax + nodes_[b].rmax : g_.cutoff;
    return lower(a, b) > cull::limit(cutoff, g_.rel_tol, scale_);
  }

  bool down(std::int64_t a, std::int64_t leaf, double cutoff, index_t room,
            std::vector<std::pair<double, index_t>>* out) const {
    const double b = lower(a, leaf);
    if (b > cull::limit(cutoff, g_.rel_tol, scale_)) return true;
    const Node& x = nodes_[a];
    if (x.left < 0) {
      if (out->size() >= room) return false;
      out->emplace_back(b, x.first);
      return true;
    }
    return down(x.left, leaf, cutoff, room, out) && down(x.right, leaf, cutoff, room, out);
  }

  void emit(index_t I, index_t J) {
    Part& p = parts_[omp_get_thread_num()];
    p.tiles.push_back((static_cast<std::uint64_t>(I) << 32) | J);
    // The shared count every 4096 tiles a thread: past max_tiles_, the list
    // is too long whatever is still to come.
    if (p.tiles.size() % 4096 == 0 &&
        emitted_.fetch_add(4096, std::memory_order_relaxed) + 4096 > max_tiles_)
      failed_ = true;
  }

  index_t span(std::int64_t a) const {
    return nodes_[a].last - nodes_[a].first;
  }

  void self(std::int64_t a) {
    if (failed_) return;
    const Node& n = nodes_[a];
    if (n.left < 0) return emit(n.first, n.first);
    if (span(a) > grain_) {
      const std::int64_t l = n.left, r = n.right;
#pragma omp task
      self(l);
#pragma omp task
      cross(l, r);
      self(r);
#pragma omp taskwait
      return;
    }
    self(n.left);
    cross(n.left, n.right);
    self(n.right);
  }

  // a's blocks all come before b's.
  void cross(std::int64_t a, std::int64_t b) {
    if (failed_ || far(a, b)) return;
    const Node &x = nodes_[a], &y = nodes_[b];
    const bool leaf_a = x.left < 0, leaf_b = y.left < 0;
    if (leaf_a && leaf_b) return emit(x.first, y.first);
    std::int64_t u1 = a, v1 = b, u2 = a, v2 = b;
    if (!leaf_a && (leaf_b || span(a) >= span(b))) {
      u1 = x.left;
      u2 = x.right;
    } else {
      v1 = y.left;
      v2 = y.right;
    }
    if (span(a) + span(b) > grain_) {
#pragma omp task
      cross(u1, v1);
      cross(u2, v2);
#pragma omp taskwait
      return;
    }
    cross(u1, v1);
    cross(u2, v2);
  }

  const CullGeometry& g_;
  index_t dims_, max_tiles_;
  double scale_;
  std::vector<double> lo_, hi_, rmax_;
  std::vector<Node> nodes_;
  std::vector<double> node_lo_, node_hi_;
  std::vector<std::int64_t> leaf_;  // block -> its leaf node
  std::int64_t root_ = -1;
  // run(): each thread's tiles, the count listed, whether max_tiles_ was
  // passed, the task size.
  struct alignas(64) Part {  // a cache line of its own
    std::vector<std::uint64_t> tiles;
  };
  std::vector<Part> parts_;
  std::atomic<index_t> emitted_{0};
  std::atomic<bool> failed_{false};
  index_t grain_ = 64;
};

// What both builders start from: the Morton order, each block's bounding
// box (and largest radius), the geometry and the margin's scale; the tile
// lists empty.
template <typename T>
void prepare(const T* pts, index_t n, index_t d, index_t rho, const CullGeometry& g, Culled* c) {
  c->n = n;
  c->rho = rho;
  c->m = (n + rho - 1) / rho;
  // The points in double (triclinic: fractional), input order.
  const std::unique_ptr<double[]> xs = uninitialised<double>(n * d);
  double* x = xs.get();
#pragma omp parallel for schedule(static)
  for (index_t q = 0; q < n * d; ++q)
    x[q] = static_cast<double>(pts[q]);
  c->scale = cull_scale(x, n, d, g);  // of the coordinates as given
  if (g.triclinic) {                  // order and bound by fractional coordinates
#pragma omp parallel for schedule(static)
    for (index_t i = 0; i < n; ++i) {
      double s[3];
      fractional(g.cell, &x[i * 3], s);
      std::copy(s, s + 3, &x[i * 3]);
    }
  }
  setup_mark("cull_copy");
  c->order = morton_order(x, n, d);
  setup_mark("cull_order");
  const index_t m = c->m;
  const index_t* order = c->order.data();
  c->tiles.clear();
  c->tile_start.assign(m + 1, 0);
  c->before.assign(m + 1, 0);
  std::vector<double>&lo = c->lo, &hi = c->hi, &rmax = c->rmax;
  lo.assign(m * d, INFINITY);
  hi.assign(m * d, -INFINITY);
  rmax.assign(g.radii ? m : 0, 0.0);
  // Each block's box (and largest radius): its points are consecutive in
  // the run's order.
#pragma omp parallel for schedule(static)
  for (index_t I = 0; I < m; ++I)
    for (index_t q = I * rho; q < std::min(n, (I + 1) * rho); ++q) {
      const index_t i = order[q];
      for (index_t k = 0; k < d; ++k) {
        lo[I * d + k] = std::min(lo[I * d + k], x[i * d + k]);
        hi[I * d + k] = std::max(hi[I * d + k], x[i * d + k]);
      }
      if (g.radii) rmax[I] = std::max(rmax[I], g.radii[i]);
    }
  c->geometry = g;
  c->geometry.radii = nullptr;  // input order: not the run's
  c->frac.clear();
  if (g.triclinic) {
    c->frac.resize(n * 3);
#pragma omp parallel for schedule(static)
    for (index_t q = 0; q < n; ++q)
      std::copy_n(&x[order[q] * 3], 3, &c->frac[q * 3]);
  }
  setup_mark("cull_boxes");
}

}  // namespace

template <typename T>
bool build_culled(const T* pts, index_t n, index_t d, index_t rho, const CullGeometry& g,
                  index_t max_tiles, Culled* c) {
  prepare(pts, n, d, rho, g, c);
  const index_t m = c->m;
  if (m == 0) return true;
  Traversal t(g, d, max_tiles, c->scale);
  t.build(c->lo, c->hi, c->rmax, m);
  std::vector<std::uint64_t> kept;
  if (!t.run(&kept)) return false;
  setup_mark("cull_tiles");
  // By block row (the top 32 bits), J rising; buckets of rows, at most 2^16
  // (bucket_sort counts team × buckets).
  int shift = 0;
  while ((m - 1) >> shift >= (index_t(1) << 16))
    ++shift;
  bucket_sort(&kept, std::size_t(((m - 1) >> shift) + 1),
              [shift](std::uint64_t t) { return (t >> 32) >> shift; });
  c->tiles.resize(2 * kept.size());
  const index_t count = kept.size();
#pragma omp parallel for schedule(static)
  for (index_t q = 0; q < count; ++q) {
    c->tiles[2 * q] = static_cast<std::uint32_t>(kept[q] >> 32);
    c->tiles[2 * q + 1] = static_cast<std::uint32_t>(kept[q] & 0xffffffffu);
  }
  for (index_t q = 0; q < count; ++q) {
    const index_t I = kept[q] >> 32, J = kept[q] & 0xffffffffu;
    ++c->tile_start[I + 1];
    c->before[I + 1] += tile_pairs(n, rho, I, J);
  }
  for (index_t I = 0; I < m; ++I) {
    c->tile_start[I + 1] += c->tile_start[I];
    c->before[I + 1] += c->before[I];
  }
  setup_mark("cull_list");
  return true;
}

template <typename T>
bool build_culled_knn(const T* pts, index_t n, index_t d, index_t rho, index_t k,
                      const CullGeometry& g, index_t max_tiles, Culled* c) {
  prepare(pts, n, d, rho, g, c);
  c->all_columns = true;
  const index_t m = c->m;
  if (m == 0) return true;
  Traversal t(g, d, max_tiles, c->scale);
  t.build(c->lo, c->hi, c->rmax, m);
  const std::vector<double>&lo = c->lo, &hi = c->hi;
  // R_I from the blocks near I along the curve: w on each side hold more
  // than k points (I's own count without the point itself).
  const index_t w = 2 + 2 * ((k + rho) / rho);
  std::vector<std::pair<double, index_t>> near, found;
  for (index_t I = 0; I < m; ++I) {
    near.clear();
    const index_t J0 = I > w ? I - w : 0, J1 = std::min(m, I + w + 1);
    for (index_t J = J0; J < J1; ++J) {
      double s = 0;  // the farthest corners: every pair of I and J is within it
      for (index_t q = 0; q < d; ++q)
        s = cull::add(s, std::max(hi[J * d + q] - lo[I * d + q], hi[I * d + q] - lo[J * d + q]),
                      g.p);
      double far = cull::finish(s, g.p);
      if (!(far < INFINITY)) far = INFINITY;  // nan, inf: no bound
      const index_t count = std::min(rho, n - J * rho) - (J == I ? 1 : 0);
      near.emplace_back(far, count);
    }
    std::sort(near.begin(), near.end());
    double R = INFINITY;
    index_t have = 0;
    for (const auto& [far, count] : near)
      if ((have += count) >= k) {
        R = far;
        break;
      }
    // A computed value within R of the true distance's rounding (far below
    // the margin): R itself gets the margin, then the query adds its own.
    const double cutoff = R < INFINITY ? cull::limit(R, g.rel_tol, c->scale) : INFINITY;
    found.clear();
    const index_t kept = c->tiles.size() / 2;
    if (!t.query(I, cutoff, max_tiles - std::min(max_tiles, kept), &found)) return false;
    std::sort(found.begin(), found.end());  // nearest boxes first: lists fill early
    const index_t ri = std::min(rho, n - I * rho);
    for (const auto& [bound, J] : found) {
      c->tiles.push_back(static_cast<std::uint32_t>(I));
      c->tiles.push_back(static_cast<std::uint32_t>(J));
      c->before[I + 1] += ri * std::min(rho, n - J * rho);
    }
    c->tile_start[I + 1] = found.size();
  }
  for (index_t I = 0; I < m; ++I) {
    c->tile_start[I + 1] += c->tile_start[I];
    c->before[I + 1] += c->before[I];
  }
  return true;
}

// The triplets' list. Unlike a pair's value, a triplet's terms depend on
// the order of its points (ATM's a·b·c, the tile's partial sums in double
// before the exact ones), and the curve reorders them: a culled triplet run
// equals the dense one to rounding, not bit for bit (it is bit for bit the
// same for any rank count, chunk size and resume).
template <typename T>
bool build_culled_triplets(const T* pts, index_t n, index_t d, index_t rho, const CullGeometry& g,
                           index_t max_tiles, Culled* c) {
  prepare(pts, n, d, rho, g, c);
  c->width = 3;
  const index_t m = c->m;
  if (m == 0) return true;
  Traversal t(g, d, max_tiles, c->scale);
  t.build(c->lo, c->hi, c->rmax, m);
  // Each block's neighbours: the blocks (itself too) whose boxes may hold a
  // pair within the cutoff, by index.
  std::vector<std::vector<index_t>> near(m);
  bool too_many = false;
#pragma omp parallel
  {
    std::vector<std::pair<double, index_t>> found;
#pragma omp for schedule(dynamic, 64) reduction(|| : too_many)
    for (index_t I = 0; I < m; ++I) {
      found.clear();
      if (!t.query(I, g.cutoff, max_tiles, &found)) {
        too_many = true;
        continue;
      }
      near[I].reserve(found.size());
      for (const auto& f : found)
        near[I].push_back(f.second);
      std::sort(near[I].begin(), near[I].end());
    }
  }
  if (too_many) return false;
  std::vector<unsigned char> mark(m, 0);  // a neighbour of I (during layer I)
  std::vector<index_t> ks, second;
  for (index_t I = 0; I < m; ++I) {
    for (index_t J : near[I])
      mark[J] = 1;
    // Rows J >= I: with all three pairs needed, J is I's neighbour; with
    // two, J may also be a neighbour of one of I's (then K is both's).
    second.clear();
    for (index_t J : near[I])
      if (J >= I) second.push_back(J);
    if (g.triplet_rule == 2) {
      for (index_t X : near[I])
        for (index_t J : near[X])
          if (J >= I && !mark[J]) second.push_back(J);
      std::sort(second.begin(), second.end());
      second.erase(std::unique(second.begin(), second.end()), second.end());
    }
    for (index_t J : second) {
      const bool ij = mark[J] != 0;
      ks.clear();
      // K >= J: all three pairs: near I and near J; two of three: (IJ and
      // (IK or JK)) or (IK and JK).
      const std::vector<index_t>& nj = near[J];
      const std::vector<index_t>& ni = near[I];
      if (g.triplet_rule == 2 && ij) {
        std::set_union(ni.begin(), ni.end(), nj.begin(), nj.end(), std::back_inserter(ks));
      } else {
        std::set_intersection(ni.begin(), ni.end(), nj.begin(), nj.end(), std::back_inserter(ks));
      }
      for (index_t K : ks) {
        if (K < J) continue;
        if (c->tiles.size() / 3 >= max_tiles) return false;
        c->tiles.push_back(static_cast<std::uint32_t>(I));
        c->tiles.push_back(static_cast<std::uint32_t>(J));
        c->tiles.push_back(static_cast<std::uint32_t>(K));
        ++c->tile_start[I + 1];
        c->before[I + 1] += tile_triplets(n, rho, I, J, K);
      }
    }
    for (index_t J : near[I])
      mark[J] = 0;
  }
  for (index_t I = 0; I < m; ++I) {
    c->tile_start[I + 1] += c->tile_start[I];
    c->before[I + 1] += c->before[I];
  }
  return true;
}

template bool build_culled<float>(const float*, index_t, index_t, index_t, const CullGeometry&,
                                  index_t, Culled*);
template bool build_culled<double>(const double*, index_t, index_t, index_t, const CullGeometry&,
                                   index_t, Culled*);
template bool build_culled_triplets<float>(const float*, index_t, index_t, index_t,
                                           const CullGeometry&, index_t, Culled*);
template bool build_culled_triplets<double>(const double*, index_t, index_t, index_t,
                                            const CullGeometry&, index_t, Culled*);
template bool build_culled_knn<float>(const float*, index_t, index_t, index_t, index_t,
                                      const CullGeometry&, index_t, Culled*);
template bool build_culled_knn<double>(const double*, index_t, index_t, index_t, index_t,
                                       const CullGeometry&, index_t, Culled*);

}  // namespace tdsolve
