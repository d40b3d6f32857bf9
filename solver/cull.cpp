#include "solver/cull.hpp"

#include "solver/bucket_sort.hpp"
#include "solver/cull_bound.hpp"
#include "solver/cull_fractional.hpp"
#include "solver/cull_with.hpp"
#include "solver/morton.hpp"
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

std::vector<index_t> morton_order(const double* pts, index_t n, index_t d) {
  std::vector<index_t> order;
  if (n < 2 || d == 0) {
    order.resize(n);
    std::iota(order.begin(), order.end(), index_t(0));
    return order;
  }
  const int dims = static_cast<int>(std::min<index_t>(d, 63));
  const int bits = morton_bits(dims);
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

// The descent of the tree (CullTree) for one run's geometry: a block row's
// tiles (build_culled, and the CUDA builder the same way), and the blocks
// near a block (knn --k, triplets).
class Traversal {
 public:
  // scale: the margin's share of a periodic box (cull::limit).
  Traversal(const CullGeometry& g, index_t dims, double scale)
      : g_(g), dims_(dims), scale_(scale) {}

  void build(const Culled& c) { t_ = cull_tree(c); }

  // Block row I's tiles: every block J >= I, rising, whose box may hold a
  // pair within the cutoff of I's: a descent from the root that drops a
  // node once its box is too far from I's (the bound only shrinks towards
  // the root, so a dropped node holds no J the leaf test would keep).
  // (first: the blocks J >= max(I, first) only.)
  template <class Emit>
  void row(index_t I, Emit&& emit, index_t first = 0) const {
    const std::int64_t leaf = t_.leaf[I];
    const index_t from = std::max(I, first);
    std::int64_t stack[2 * 64];  // depth <= 33 below 2^32 blocks, 2 a level
    int top = 0;
    stack[top++] = t_.root;
    while (top > 0) {
      const std::int64_t a = stack[--top];
      if (t_.last[a] <= from || far(leaf, a)) continue;
      if (t_.left[a] < 0) {
        emit(t_.first[a]);
        continue;
      }
      stack[top++] = t_.right[a];
      stack[top++] = t_.left[a];
    }
  }

  // Every block J (any, I itself too) whose box may hold a point within
  // `cutoff` of block I's, with the lower bound of its distance: appended
  // to out. False once out holds more than `room` entries.
  bool query(index_t I, double cutoff, index_t room, std::vector<std::pair<double, index_t>>* out) {
    return down(t_.root, t_.leaf[I], cutoff, room, out);
  }

 private:
  // The lower bound of any pair's distance between nodes a and b.
  double lower(std::int64_t a, std::int64_t b) const {
    return cull::bound(&t_.lo[a * dims_], &t_.hi[a * dims_], &t_.lo[b * dims_], &t_.hi[b * dims_],
                       dims_, g_.p, g_.box_dims, g_.box, g_.triclinic ? &g_.tilted : nullptr);
  }

  bool far(std::int64_t a, std::int64_t b) const {
    const double cutoff = g_.radii ? t_.rmax[a] + t_.rmax[b] : g_.cutoff;
    return lower(a, b) > cull::limit(cutoff, g_.rel_tol, scale_);
  }

  bool down(std::int64_t a, std::int64_t leaf, double cutoff, index_t room,
            std::vector<std::pair<double, index_t>>* out) const {
    const double b = lower(a, leaf);
    if (b > cull::limit(cutoff, g_.rel_tol, scale_)) return true;
    if (t_.left[a] < 0) {
      if (out->size() >= room) return false;
      out->emplace_back(b, t_.first[a]);
      return true;
    }
    return down(t_.left[a], leaf, cutoff, room, out) && down(t_.right[a], leaf, cutoff, room, out);
  }

  const CullGeometry& g_;
  index_t dims_;
  double scale_;
  CullTree t_;
};

}  // namespace

namespace {

std::int64_t make_node(CullTree* t, const Culled& c, index_t dims, index_t first, index_t last) {
  const std::int64_t id = static_cast<std::int64_t>(t->first.size());
  t->first.push_back(first);
  t->last.push_back(last);
  t->left.push_back(-1);
  t->right.push_back(-1);
  t->rmax.push_back(0);
  t->lo.resize((id + 1) * dims);
  t->hi.resize((id + 1) * dims);
  if (last - first == 1) {
    t->leaf[first] = id;
    std::copy_n(&c.lo[first * dims], dims, &t->lo[id * dims]);
    std::copy_n(&c.hi[first * dims], dims, &t->hi[id * dims]);
    t->rmax[id] = c.rmax.empty() ? 0 : c.rmax[first];
    return id;
  }
  const index_t mid = first + (last - first) / 2;
  const std::int64_t l = make_node(t, c, dims, first, mid), r = make_node(t, c, dims, mid, last);
  t->left[id] = l;
  t->right[id] = r;
  t->rmax[id] = std::max(t->rmax[l], t->rmax[r]);
  for (index_t k = 0; k < dims; ++k) {
    t->lo[id * dims + k] = std::min(t->lo[l * dims + k], t->lo[r * dims + k]);
    t->hi[id * dims + k] = std::max(t->hi[l * dims + k], t->hi[r * dims + k]);
  }
  return id;
}

}  // namespace

CullTree cull_tree(const Culled& c) {
  CullTree t;
  const index_t m = c.m, dims = m ? c.lo.size() / m : 0;
  t.dims = dims;
  if (m == 0) return t;
  for (auto* v : {&t.first, &t.last})
    v->reserve(2 * m);
  for (auto* v : {&t.left, &t.right})
    v->reserve(2 * m);
  t.rmax.reserve(2 * m);
  t.lo.reserve(2 * m * dims);
  t.hi.reserve(2 * m * dims);
  t.leaf.assign(m, -1);
  t.root = make_node(&t, c, dims, 0, m);
  return t;
}

void sum_rows(Culled* c) {
  for (index_t I = 0; I < c->m; ++I) {
    c->tile_start[I + 1] += c->tile_start[I];
    c->before[I + 1] += c->before[I];
  }
}

namespace {

// What both builders start from: the Morton order, each block's bounding
// box (and largest radius), the geometry and the margin's scale; the tile
// lists empty.
// split (build_culled_with): points [0, split) and [split, n) are two sets,
// each ordered on its own, the first set's before the second's, which runs
// the curve backwards: where the sets share a region, the block that holds
// the first's end and the second's start then holds points of one corner
// of it (forwards, that block's box would span the region and meet every
// other block).
template <typename T>
void prepare(const T* pts, index_t n, index_t d, index_t rho, const CullGeometry& g, Culled* c,
             index_t split = 0) {
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
      cull::fractional(g.cell, &x[i * 3], s);
      std::copy(s, s + 3, &x[i * 3]);
    }
  }
  setup_mark("cull_copy");
  if (split > 0 && split < n) {
    c->order = morton_order(x, split, d);
    const std::vector<index_t> second = morton_order(x + split * d, n - split, d);
    c->order.resize(n);
#pragma omp parallel for schedule(static)
    for (index_t q = 0; q < n - split; ++q)
      c->order[split + q] = split + second[n - split - 1 - q];
  } else {
    c->order = morton_order(x, n, d);
  }
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

namespace {

// build_culled, and with split > 0 build_culled_with: only the tiles (I, J)
// whose block I holds a point of the first set and J one of the second.
template <typename T>
bool build_pairs(const T* pts, index_t n, index_t d, index_t rho, index_t split,
                 const CullGeometry& g, index_t max_tiles, Culled* c) {
  prepare(pts, n, d, rho, g, c, split);
  const index_t m = c->m;
  if (m == 0) return true;
  // Block rows from row_end on hold no point of the first set; the blocks
  // before first_col none of the second.
  const index_t row_end = split > 0 ? (split + rho - 1) / rho : m;
  const index_t first_col = split > 0 ? split / rho : 0;
  Traversal t(g, d, c->scale);
  t.build(*c);
  // The block rows in contiguous pieces, many a thread (rows differ in
  // work), each listing its rows' tiles: the pieces in order are the list
  // by row. The shared count every 4096 tiles a piece: past max_tiles, the
  // list is too long whatever is still to come.
  const index_t pieces = std::min<index_t>(m, 16 * index_t(omp_get_max_threads()));
  std::vector<std::vector<std::uint32_t>> part(pieces);
  std::atomic<index_t> listed{0};
  std::atomic<bool> failed{false};
#pragma omp parallel for schedule(dynamic, 1)
  for (index_t q = 0; q < pieces; ++q) {
    std::vector<std::uint32_t>& out = part[q];
    index_t unsaid = 0;
    for (index_t I = m * q / pieces; I < m * (q + 1) / pieces && !failed; ++I) {
      const std::size_t first = out.size();
      index_t pairs = 0;
      if (I < row_end)
        t.row(
            I,
            [&](index_t J) {
              out.push_back(static_cast<std::uint32_t>(I));
              out.push_back(static_cast<std::uint32_t>(J));
              pairs += tile_pairs(n, rho, I, J);
            },
            first_col);
      const index_t tiles = (out.size() - first) / 2;
      c->tile_start[I + 1] = tiles;
      c->before[I + 1] = pairs;
      if ((unsaid += tiles) >= 4096) {
        if (listed.fetch_add(unsaid) + unsaid > max_tiles) failed = true;
        unsaid = 0;
      }
    }
    listed += unsaid;
  }
  if (failed || listed > max_tiles) return false;
  setup_mark("cull_tiles");
  std::vector<std::size_t> at(pieces + 1, 0);
  for (index_t q = 0; q < pieces; ++q)
    at[q + 1] = at[q] + part[q].size();
  c->tiles.resize(at[pieces]);
#pragma omp parallel for schedule(dynamic, 1)
  for (index_t q = 0; q < pieces; ++q) {
    std::copy(part[q].begin(), part[q].end(), c->tiles.begin() + at[q]);
    std::vector<std::uint32_t>().swap(part[q]);
  }
  sum_rows(c);
  setup_mark("cull_list");
  return true;
}

}  // namespace

template <typename T>
bool build_culled(const T* pts, index_t n, index_t d, index_t rho, const CullGeometry& g,
                  index_t max_tiles, Culled* c) {
  return build_pairs(pts, n, d, rho, 0, g, max_tiles, c);
}

template <typename T>
bool build_culled_with(const T* pts, index_t n, index_t d, index_t rho, index_t split,
                       const CullGeometry& g, index_t max_tiles, Culled* c) {
  return build_pairs(pts, n, d, rho, split, g, max_tiles, c);
}

template <typename T>
bool build_culled_knn(const T* pts, index_t n, index_t d, index_t rho, index_t k,
                      const CullGeometry& g, index_t max_tiles, Culled* c) {
  prepare(pts, n, d, rho, g, c);
  c->all_columns = true;
  const index_t m = c->m;
  if (m == 0) return true;
  Traversal t(g, d, c->scale);
  t.build(*c);
  const std::vector<double>&lo = c->lo, &hi = c->hi;
  // R_I from the blocks near I along the curve: w on each side hold more
  // than k points (I's own count without the point itself). Block rows on
  // the OpenMP team, each its own list; then joined in order.
  const index_t w = 2 + 2 * ((k + rho) / rho);
  std::vector<std::vector<std::uint32_t>> rows(m);
  bool too_many = false;
#pragma omp parallel
  {
    std::vector<std::pair<double, index_t>> near, found;
#pragma omp for schedule(dynamic, 64) reduction(|| : too_many)
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
      if (too_many || !t.query(I, cutoff, max_tiles, &found)) {
        too_many = true;
        continue;
      }
      std::sort(found.begin(), found.end());  // nearest boxes first: lists fill early
      rows[I].reserve(found.size());
      for (const auto& f : found)
        rows[I].push_back(static_cast<std::uint32_t>(f.second));
    }
  }
  if (too_many) return false;
  index_t total = 0;
  for (const auto& r : rows)
    total += r.size();
  if (total > max_tiles) return false;
  c->tiles.reserve(2 * total);
  for (index_t I = 0; I < m; ++I) {
    const index_t ri = std::min(rho, n - I * rho);
    for (std::uint32_t J : rows[I]) {
      c->tiles.push_back(static_cast<std::uint32_t>(I));
      c->tiles.push_back(J);
      c->before[I + 1] += ri * std::min(rho, n - J * rho);
    }
    c->tile_start[I + 1] = rows[I].size();
    std::vector<std::uint32_t>().swap(rows[I]);
  }
  sum_rows(c);
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
  Traversal t(g, d, c->scale);
  t.build(*c);
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
  sum_rows(c);
  return true;
}

template bool build_culled<float>(const float*, index_t, index_t, index_t, const CullGeometry&,
                                  index_t, Culled*);
template bool build_culled<double>(const double*, index_t, index_t, index_t, const CullGeometry&,
                                   index_t, Culled*);
template bool build_culled_with<float>(const float*, index_t, index_t, index_t, index_t,
                                       const CullGeometry&, index_t, Culled*);
template bool build_culled_with<double>(const double*, index_t, index_t, index_t, index_t,
                                        const CullGeometry&, index_t, Culled*);
template bool build_culled_triplets<float>(const float*, index_t, index_t, index_t,
                                           const CullGeometry&, index_t, Culled*);
template bool build_culled_triplets<double>(const double*, index_t, index_t, index_t,
                                            const CullGeometry&, index_t, Culled*);
template bool build_culled_knn<float>(const float*, index_t, index_t, index_t, index_t,
                                      const CullGeometry&, index_t, Culled*);
template bool build_culled_knn<double>(const double*, index_t, index_t, index_t, index_t,
                                       const CullGeometry&, index_t, Culled*);

}  // namespace tdsolve
