#include "solver/cull.hpp"

#include "solver/cull_bound.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace tdsolve {

std::vector<index_t> morton_order(const double* pts, index_t n, index_t d) {
  std::vector<index_t> order(n);
  std::iota(order.begin(), order.end(), index_t(0));
  if (n < 2 || d == 0) return order;
  const int dims = static_cast<int>(std::min<index_t>(d, 63));
  const int bits = std::max(1, std::min(21, 63 / dims));
  std::vector<double> lo(dims, INFINITY), scale(dims, 0);
  std::vector<double> hi(dims, -INFINITY);
  for (index_t i = 0; i < n; ++i)
    for (int k = 0; k < dims; ++k) {
      lo[k] = std::min(lo[k], pts[i * d + k]);
      hi[k] = std::max(hi[k], pts[i * d + k]);
    }
  const double cells = std::ldexp(1.0, bits) - 1;
  for (int k = 0; k < dims; ++k)
    scale[k] = hi[k] > lo[k] ? cells / (hi[k] - lo[k]) : 0.0;
  std::vector<std::pair<std::uint64_t, index_t>> key(n);
  std::vector<std::uint64_t> q(dims);
  for (index_t i = 0; i < n; ++i) {
    for (int k = 0; k < dims; ++k) {
      const double c = (pts[i * d + k] - lo[k]) * scale[k];
      q[k] = static_cast<std::uint64_t>(std::min(std::max(c, 0.0), cells));
    }
    std::uint64_t code = 0;
    for (int b = bits - 1; b >= 0; --b)
      for (int k = 0; k < dims; ++k)
        code = (code << 1) | ((q[k] >> b) & 1u);
    key[i] = {code, i};
  }
  std::sort(key.begin(), key.end());
  for (index_t i = 0; i < n; ++i)
    order[i] = key[i].second;
  return order;
}

namespace {

// The scale of cull::limit for points pts (n × d, as the run computes them)
// in g's periodic box; 0 without one.
double cull_scale(const double* pts, index_t n, index_t d, const CullGeometry& g) {
  if (g.box_dims == 0) return 0;
  double s = 0;
  for (index_t q = 0; q < n * d; ++q)
    s = std::max(s, std::fabs(pts[q]));
  for (int k = 0; k < g.box_dims; ++k)
    s = std::max(s, g.box[k]);
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
    out_ = out;
    return self(root_);
  }

 private:
  std::int64_t make(index_t first, index_t last) {
    const std::int64_t id = static_cast<std::int64_t>(nodes_.size());
    nodes_.push_back(Node{first, last});
    node_lo_.resize((id + 1) * dims_);
    node_hi_.resize((id + 1) * dims_);
    if (last - first == 1) {
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

  bool far(std::int64_t a, std::int64_t b) const {
    double s = 0;
    for (index_t k = 0; k < dims_; ++k) {
      const double L = k < static_cast<index_t>(g_.box_dims) ? g_.box[k] : 0;
      s = cull::add(s,
                    cull::gap(node_lo_[a * dims_ + k], node_hi_[a * dims_ + k],
                              node_lo_[b * dims_ + k], node_hi_[b * dims_ + k], L),
                    g_.p);
    }
    const double cutoff = g_.radii ? nodes_[a].rmax + nodes_[b].rmax : g_.cutoff;
    return cull::finish(s, g_.p) > cull::limit(cutoff, g_.rel_tol, scale_);
  }

  bool emit(index_t I, index_t J) {
    if (out_->size() >= max_tiles_) return false;
    out_->push_back((static_cast<std::uint64_t>(I) << 32) | J);
    return true;
  }

  bool self(std::int64_t a) {
    const Node& n = nodes_[a];
    if (n.left < 0) return emit(n.first, n.first);
    return self(n.left) && cross(n.left, n.right) && self(n.right);
  }

  // a's blocks all come before b's.
  bool cross(std::int64_t a, std::int64_t b) {
    if (far(a, b)) return true;
    const Node &x = nodes_[a], &y = nodes_[b];
    const bool leaf_a = x.left < 0, leaf_b = y.left < 0;
    if (leaf_a && leaf_b) return emit(x.first, y.first);
    if (!leaf_a && (leaf_b || x.last - x.first >= y.last - y.first))
      return cross(x.left, b) && cross(x.right, b);
    return cross(a, y.left) && cross(a, y.right);
  }

  const CullGeometry& g_;
  index_t dims_, max_tiles_;
  double scale_;
  std::vector<double> lo_, hi_, rmax_;
  std::vector<Node> nodes_;
  std::vector<double> node_lo_, node_hi_;
  std::int64_t root_ = -1;
  std::vector<std::uint64_t>* out_ = nullptr;
};

}  // namespace

template <typename T>
bool build_culled(const T* pts, index_t n, index_t d, index_t rho, const CullGeometry& g,
                  index_t max_tiles, Culled* c) {
  c->n = n;
  c->rho = rho;
  c->m = (n + rho - 1) / rho;
  std::vector<double> x(pts, pts + n * d);
  c->order = morton_order(x.data(), n, d);
  const index_t m = c->m;
  c->tiles.clear();
  c->tile_start.assign(m + 1, 0);
  c->before.assign(m + 1, 0);
  if (m == 0) return true;
  std::vector<double>&lo = c->lo, &hi = c->hi, &rmax = c->rmax;
  lo.assign(m * d, INFINITY);
  hi.assign(m * d, -INFINITY);
  rmax.assign(g.radii ? m : 0, 0.0);
  for (index_t q = 0; q < n; ++q) {
    const index_t I = q / rho, i = c->order[q];
    for (index_t k = 0; k < d; ++k) {
      lo[I * d + k] = std::min(lo[I * d + k], x[i * d + k]);
      hi[I * d + k] = std::max(hi[I * d + k], x[i * d + k]);
    }
    if (g.radii) rmax[I] = std::max(rmax[I], g.radii[i]);
  }
  c->geometry = g;
  c->geometry.radii = nullptr;  // input order: not the run's
  c->scale = cull_scale(x.data(), n, d, g);
  Traversal t(g, d, max_tiles, c->scale);
  t.build(lo, hi, rmax, m);
  std::vector<std::uint64_t> kept;
  if (!t.run(&kept)) return false;
  std::sort(kept.begin(), kept.end());
  c->tiles.resize(2 * kept.size());
  for (size_t q = 0; q < kept.size(); ++q) {
    const index_t I = kept[q] >> 32, J = kept[q] & 0xffffffffu;
    c->tiles[2 * q] = static_cast<std::uint32_t>(I);
    c->tiles[2 * q + 1] = static_cast<std::uint32_t>(J);
    ++c->tile_start[I + 1];
    c->before[I + 1] += tile_pairs(n, rho, I, J);
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

}  // namespace tdsolve
