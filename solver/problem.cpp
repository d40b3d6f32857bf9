#include "solver/problem.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <type_traits>

#include "core/error.hpp"
#include "core/knobs.hpp"
#include "solver/cpu/cpu_backend.hpp"  // available_host_bytes
#include "solver/cull_bound.hpp"
#include "solver/cull_with.hpp"
#include "solver/setup_clock.hpp"

namespace tdsolve {

std::vector<double> linspace_edges(double lo, double hi, index_t bins) {
  // numpy.linspace: step = (stop - start) / div; y = arange(num) * step;
  // y += start; y[-1] = stop. Two roundings per edge, never fused.
  std::vector<double> e(bins + 1);
  const double step = (hi - lo) / static_cast<double>(bins);
  for (index_t k = 0; k <= bins; ++k) {
    const volatile double scaled = static_cast<double>(k) * step;  // no contraction
    e[k] = scaled + lo;
  }
  e[bins] = hi;
  return e;
}

HistSpec make_hist_spec(double lo, double hi, index_t bins) {
  HistSpec h;
  h.bins = bins;
  h.lo = lo;
  h.hi = hi;
  h.edges = linspace_edges(lo, hi, bins);
  const double u = std::ldexp(1.0, -53), b = static_cast<double>(bins);
  const double widest = std::max(std::fabs(lo), std::fabs(hi)) / (hi - lo);
  h.margin = 2 * u * b * (8 + widest);
  const bool off = knobs::flag("TDSOLVE_HIST_EXACT_ALWAYS");
  if (h.margin >= 0.25 || off) h.margin = 1;
  // The float range that [lo, hi] holds: x < lo <=> x < lo32 for a float x.
  epilogue::HistFast32& q = h.fast32;
  const float inf = std::numeric_limits<float>::infinity();
  float lo32 = static_cast<float>(lo);  // nearest; step up if below lo
  if (static_cast<double>(lo32) < lo) lo32 = std::nextafter(lo32, inf);
  float hi32 = static_cast<float>(hi);  // nearest; step down if above hi
  if (static_cast<double>(hi32) > hi) hi32 = std::nextafter(hi32, -inf);
  q.lo32 = lo32;
  q.hi32 = hi32;
  q.lo_f = static_cast<float>(lo);
  q.norm_f = static_cast<float>(b / (hi - lo));
  const double u32 = std::ldexp(1.0, -24);
  const double m32 = 2 * u32 * b * (8 + widest);
  // The screen needs x - lo_f >= 0 for every x >= lo32 (true: lo_f is lo
  // rounded to nearest, never above lo32) and floor(f) < 2^22.
  q.margin32 = (m32 >= 0.25 || off || b >= 4194304.0 || !std::isfinite(q.norm_f) ||
                std::fabs(lo) > 1e30 || std::fabs(hi) > 1e30)
                   ? 1.0f
                   : static_cast<float>(m32);
  return h;
}

bool cull_metric(Metric m, double minkowski_p, double* norm_p) {
  switch (m) {
    case Metric::euclidean:
    case Metric::sqeuclidean:
      *norm_p = 2;
      return true;
    case Metric::cityblock:
      *norm_p = 1;
      return true;
    case Metric::chebyshev:
      *norm_p = INFINITY;
      return true;
    case Metric::minkowski:
      *norm_p = minkowski_p;
      return minkowski_p > 0;
    default:
      return false;
  }
}

template <typename T>
void apply_cull(Problem<T>* p, CullMode mode, CullGeometry g, const CullBuilder<T>& elsewhere,
                index_t cap) {
  p->culled = false;
  p->cull = Culled{};
  if (mode == CullMode::off) {
    p->cull_note = "dense (--cull off)";
    return;
  }
  double norm_p = 2;
  const bool metric_ok = cull_metric(p->metric, p->mp.p, &norm_p);
  const bool knn = p->knn();  // the rectangle of the points against themselves
  const bool triplets = p->triplets();
  // hist --with: the rectangle of two sets, culled as its union's triangle
  // cut to the tiles that pair the sets (solver/cull_with.hpp).
  const bool with = p->domain == DomainKind::rect && !knn &&
                    p->epilogue == EpilogueKind::histogram && p->hist.groups.count == 0;
  const index_t n = with ? p->rows + p->cols : p->rows;
  const index_t m = (n + p->rho - 1) / p->rho;
  std::string why;
  if (g.why_not) {
    why = g.why_not;
  } else if (p->domain != DomainKind::pairs && !knn && !triplets && !with) {
    why = "culling applies to the pairs or triplets of one point set";
  } else if (!metric_ok) {
    why = std::string("metric ") + metric_name(p->metric) +
          " has no box bound (culling needs euclidean, sqeuclidean, cityblock, chebyshev or "
          "minkowski)";
  } else if (p->map == MapKind::bb) {
    why = "--map bb launches the bounding box";
  } else if (p->d > (knn ? 4 : 8)) {
    why = "d = " + std::to_string(p->d) + " > " + (knn ? "4" : "8") +
          ": a space-filling curve does not order it" +
          (knn ? " well enough for nearest neighbours" : "");
  } else if (m >= (index_t(1) << 32)) {
    why = "more than 2^32 block rows";
  }
  if (!why.empty()) {
    if (mode == CullMode::on) throw UsageError("--cull on: " + why);
    p->cull_note = "dense (auto: " + why + ")";
    return;
  }
  g.p = norm_p;
  g.rel_tol = cull::rel_tol(sizeof(T) == 4);
  g.box_dims = p->box_dims;  // hist, knn --radius, collide, triplet: --box
  for (int k = 0; k < p->box_dims; ++k)
    g.box[k] = static_cast<double>(p->box[k]);
  if (p->triclinic) {
    const double cell[6] = {double(p->box[0]),  double(p->box[1]),  double(p->box[2]),
                            double(p->tilt[0]), double(p->tilt[1]), double(p->tilt[2])};
    set_triclinic(&g, cell);
  }
  // The tiles a dense run of the domain has (with: the union's that pair
  // the sets, block rows up to the first set's last, columns from the
  // second's first).
  index_t all = knn ? m * m : triplets ? mapping::tet(m) : m * (m + 1) / 2;
  if (with) {
    all = 0;
    for (index_t I = 0; I * p->rho < p->rows; ++I)
      all += m - std::max(I, p->rows / p->rho);
  }
  // auto: dense once more than half of the tiles survive; on: the list's
  // memory bounds it (cap).
  // knn --k: its rows stop at their lists' worst (cpu/knn.inc), far inside
  // the tiles listed, so only a list of nearly all of them runs dense.
  const index_t budget =
      mode == CullMode::automatic ? std::min((knn ? all / 10 * 9 : all / 2) + 1, cap) : cap;
  Culled c;
  bool built = false;
  std::vector<T> both;  // with: the first set's points, then the second's
  if (with) {
    both.resize(n * p->d);
    std::copy(p->a.begin(), p->a.end(), both.begin());
    std::copy(p->b.begin(), p->b.end(), both.begin() + p->rows * p->d);
  }
  if (with)
    built = build_culled_with<T>(both.data(), n, p->d, p->rho, p->rows, g, budget, &c);
  else if (knn)
    built = build_culled_knn<T>(p->a.data(), p->rows, p->d, p->rho, p->k, g, budget, &c);
  else if (triplets)
    built = build_culled_triplets<T>(p->a.data(), p->rows, p->d, p->rho, g, budget, &c);
  else if (!elsewhere || !elsewhere(p->a.data(), p->rows, p->d, p->rho, g, budget, &c, &built))
    built = build_culled<T>(p->a.data(), p->rows, p->d, p->rho, g, budget, &c);
  setup_mark("cull_tiles");
  if (!built) {
    if (mode == CullMode::on)
      throw InputError("--cull on: more than " + std::to_string(cap) + " tiles of " +
                       std::to_string(p->rho) +
                       " points survive the cutoff (the list's cap: 32 bytes a tile within a "
                       "rank's share of memory); run with --cull off (or auto)");
    p->cull_note = budget == cap ? "dense (auto: more than " + std::to_string(cap) +
                                       " tiles survive the cutoff, the list's cap)"
                   : knn ? "dense (auto: more than 90% of the tiles may hold neighbours)"
                         : "dense (auto: more than half of the tiles are within the cutoff)";
    return;
  }
  char note[160];
  const double possible = knn || with ? double(p->rows) * double(p->cols)
                          : triplets  ? double(mapping::triplet_count(p->rows))
                                      : double(mapping::pair_count(p->rows));
  std::snprintf(note, sizeof note, "culled (%s): %llu of %llu tiles, %.3g%% of the %s tested",
                mode == CullMode::on ? "--cull on" : "auto", (unsigned long long)c.tile_count(),
                (unsigned long long)all, 100.0 * double(c.tested()) / possible,
                triplets ? "triplets" : "pairs");
  p->cull_note = note;
  if (with) {
    // From here the run is the union's culled triangle, its points both
    // sets', and one histogram: of the pairs of a point of type 0 (the
    // first set) and one of type 1, as hist --types with --pairs 0-1.
    // Its pairs, each once in a rectangle, are rows × cols.
    HistGroups& h = p->hist.groups;
    h.count = 1;
    h.types = 2;
    h.type.assign(n, 1);
    std::fill(h.type.begin(), h.type.begin() + p->rows, 0);
    h.table = {-1, 0, 0, -1};
    h.pairs = {static_cast<std::int64_t>(p->rows * p->cols)};
    h.ordered = {1};
    p->a.swap(both);
    std::vector<T>().swap(p->b);
    p->norms_a.insert(p->norms_a.end(), p->norms_b.begin(), p->norms_b.end());
    std::vector<double>().swap(p->norms_b);
    p->domain = DomainKind::pairs;
    p->rows = p->cols = n;
  }
  const index_t d = p->d;
  const index_t* order = c.order.data();
  std::vector<T> a(n * d);
#pragma omp parallel for schedule(static)
  for (index_t q = 0; q < n; ++q)
    std::copy_n(p->a.begin() + order[q] * d, d, a.begin() + q * d);
  p->a.swap(a);
  if (knn) p->b = p->a;  // the points against themselves, in the run's order too
  c.squared = p->metric == Metric::sqeuclidean;
  // Every per-point vector (empty: none) in the points' new order: norms,
  // radii, hist's labels, typed ATM's types.
  const auto reorder = [&](auto* per_point) {
    if (per_point->empty()) return;
    std::remove_reference_t<decltype(*per_point)> v(n);
#pragma omp parallel for schedule(static)
    for (index_t q = 0; q < n; ++q)
      v[q] = (*per_point)[order[q]];
    per_point->swap(v);
  };
  reorder(&p->norms_a);
  reorder(&p->select_radii);
  reorder(&p->hist.groups.type);
  reorder(&p->hist.groups.molecule);
  reorder(&p->three_body.types);
  p->cull = std::move(c);
  p->culled = true;
  setup_mark("cull_reorder");
}

index_t cull_tile_cap(int local_ranks) {
  if (const auto test = knobs::integer("TDSOLVE_TEST_CULL_CAP", 1, 1ll << 31)) return *test;
  const index_t fits = cpu::available_host_bytes(local_ranks) / 32;
  return std::min(index_t(1) << 31, std::max(index_t(1) << 28, fits));
}

template <typename T>
mapping::ChunkPlan make_plan(const Problem<T>& p, index_t max_elements) {
  if (p.culled) return mapping::ChunkPlan(CulledDomain{&p.cull}, max_elements);
  if (p.triplets()) return mapping::ChunkPlan(p.triplet_domain(), max_elements);
  if (p.centres()) return mapping::ChunkPlan(p.centre_domain(), max_elements);
  if (p.domain == DomainKind::rect) return mapping::ChunkPlan(p.rect_domain(), max_elements);
  return mapping::ChunkPlan(p.pair_domain(), max_elements);
}

template <typename T>
mapping::ChunkPlan plan_from_offsets(const Problem<T>& p, const std::vector<index_t>& offsets) {
  if (p.culled) return mapping::ChunkPlan::from_offsets(CulledDomain{&p.cull}, offsets);
  if (p.triplets()) return mapping::ChunkPlan::from_offsets(p.triplet_domain(), offsets);
  if (p.centres()) return mapping::ChunkPlan::from_offsets(p.centre_domain(), offsets);
  if (p.domain == DomainKind::rect)
    return mapping::ChunkPlan::from_offsets(p.rect_domain(), offsets);
  return mapping::ChunkPlan::from_offsets(p.pair_domain(), offsets);
}

void check_float32_range(const io::PointSet& a, const io::PointSet* b, Metric m, double p) {
  const index_t d = a.d;
  std::vector<double> lo(d, INFINITY), hi(d, -INFINITY);
  for (const io::PointSet* s : {&a, b}) {
    if (!s) continue;
    for (index_t i = 0; i < s->n; ++i)
      for (index_t k = 0; k < d; ++k) {
        const double v = s->values[i * d + k];
        lo[k] = std::min(lo[k], v);
        hi[k] = std::max(hi[k], v);
      }
  }
  // A bound on the largest intermediate the metric forms (in double).
  double bound = 0;
  for (index_t k = 0; k < d; ++k) {
    const double range = hi[k] - lo[k];
    const double big = std::max(std::fabs(lo[k]), std::fabs(hi[k]));
    switch (m) {
      case Metric::euclidean:
      case Metric::sqeuclidean:
      case Metric::seuclidean:   // on the scaled points
      case Metric::mahalanobis:  // on the transformed points
        bound += range * range;  // the sum of squared differences
        break;
      case Metric::cityblock:
        bound += range;
        break;
      case Metric::chebyshev:
        bound = std::max(bound, range);
        break;
      case Metric::braycurtis:
        bound += 2 * big;  // sum |a + b|
        break;
      case Metric::minkowski:  // accumulated in float64; the result is at most
                               // sum |a - b| for p >= 1, d^(1/p - 1) times that below
        bound += p >= 1 ? range : range * std::pow(static_cast<double>(d), 1 / p - 1);
        break;
      default:  // cosine, correlation (float64 sums of products, norms: |x|^2 in float64),
                // canberra, jensenshannon (float64, terms <= 1), boolean (counts)
        break;
    }
  }
  const double limit = static_cast<double>(std::numeric_limits<float>::max());
  if (!(bound < limit)) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "intermediate values up to %.9g, above float32's largest %.9g",
                  bound, limit);
    throw InputError("input '" + a.source + "': its coordinates are so far apart that float32 " +
                     "arithmetic for the " + metric_name(m) + " metric can overflow (" + buf +
                     ") where the results are finite; use --precision float64");
  }
}

template <typename T>
std::vector<T> convert_points(const io::PointSet& pts) {
  const index_t size = pts.values.size();
  std::vector<T> out(size);
  bool finite = true;
#pragma omp parallel for schedule(static) reduction(&& : finite)
  for (index_t i = 0; i < size; ++i) {
    out[i] = static_cast<T>(pts.values[i]);
    finite = finite && std::isfinite(out[i]);
  }
  if (finite) return out;
  for (index_t i = 0; i < size; ++i) {
    if (!std::isfinite(out[i]))
      throw InputError("input '" + pts.source + "' value " + std::to_string(pts.values[i]) +
                       " at row " + std::to_string(i / pts.d) + ", column " +
                       std::to_string(i % pts.d) + " overflows float32; use --precision float64");
  }
  return out;
}

namespace {
template <typename T>
std::vector<double> norms_of(const std::vector<T>& x, index_t n, index_t d) {
  std::vector<double> out(n);
  for (index_t i = 0; i < n; ++i)
    out[i] = metric::norm(&x[i * d], d);
  return out;
}

// sum(v) in the order of the Debian SciPy's C loops (two lanes: elements
// 0,2,4,... and 1,3,5,..., added, then an odd length's last element).
double lane2_sum(const std::vector<double>& v) {
  double e = 0, o = 0;
  const size_t n = v.size(), paired = n & ~size_t(1);
  for (size_t k = 0; k < paired; ++k)
    (k & 1 ? o : e) += v[k];
  const double s = e + o;
  return n & 1 ? s + v[n - 1] : s;
}

// numpy.sum(v) of a 1-D float64 array: 0 + NumPy's pairwise sum (eight
// lanes from 8 elements on, halves above 128).
double pairwise_sum(const double* a, size_t n) {
  if (n < 8) {
    double r = 0;
    for (size_t i = 0; i < n; ++i)
      r += a[i];
    return r;
  }
  if (n <= 128) {
    double r[8];
    for (int j = 0; j < 8; ++j)
      r[j] = a[j];
    size_t i = 8;
    for (; i < n - n % 8; i += 8)
      for (int j = 0; j < 8; ++j)
        r[j] += a[i + j];
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i)
      res += a[i];
    return res;
  }
  size_t n2 = n / 2;
  n2 -= n2 % 8;
  return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
}
double numpy_sum(const std::vector<double>& v) {
  return 0.0 + pairwise_sum(v.data(), v.size());
}

void check_zero_norms(const std::vector<double>& norms, const std::string& source,
                      const std::string& metric, const std::string& what) {
  for (index_t i = 0; i < norms.size(); ++i)
    if (norms[i] == 0.0)
      throw InputError("point " + std::to_string(i) + " of '" + source + "' is all zeros" + what +
                       ": its " + metric + " distance is undefined");
}
}  // namespace

template <typename T>
void complete_problem(Problem<T>* p) {
  p->norms_a.clear();
  p->norms_b.clear();
  if (dispatch_metric<T>(p->metric_params(), [](auto m) { return decltype(m)::needs_norms; })) {
    p->norms_a = norms_of(p->a, p->rows, p->d);
    if (p->domain == DomainKind::rect) p->norms_b = norms_of(p->b, p->cols, p->d);
  }
}

template <typename T>
void check_norms(const Problem<T>& p, const std::string& source_a, const std::string& source_b) {
  // Correlation runs cosine on centred points: a constant point centres to 0.
  const std::string what =
      p.metric == Metric::correlation ? " once centred (a constant point)" : "";
  check_zero_norms(p.norms_a, source_a, metric_name(p.metric), what);
  check_zero_norms(p.norms_b, source_b, metric_name(p.metric), what);
}

template <typename T>
std::vector<T> pack_points(const io::PointSet& pts) {
  using Word = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  constexpr index_t kBits = sizeof(T) * 8;
  const index_t words = (pts.d + kBits - 1) / kBits;
  std::vector<Word> w(pts.n * words, 0);
  for (index_t i = 0; i < pts.n; ++i)
    for (index_t k = 0; k < pts.d; ++k)
      if (pts.values[i * pts.d + k] != 0.0) w[i * words + k / kBits] |= Word(1) << (k % kBits);
  std::vector<T> out(w.size());
  if (!w.empty()) std::memcpy(out.data(), w.data(), w.size() * sizeof(T));
  return out;
}

template <typename T>
void prepare_points(Problem<T>* p, io::PointSet* a, io::PointSet* b, const MetricVectors& v) {
  const Metric m = p->metric;
  const index_t d = a->d;
  p->features = d;
  std::vector<io::PointSet*> sets = {a};
  if (b) sets.push_back(b);
  // Feature k multiplied by scale[k] (empty: none).
  std::vector<double> scale;
  const std::vector<double>& w = v.weights;
  if (m == Metric::mahalanobis) {
    // x' = M x: the euclidean distance of x' is the mahalanobis distance of x.
    std::vector<double> y(d);
    for (io::PointSet* s : sets)
      for (index_t i = 0; i < s->n; ++i) {
        double* x = &s->values[i * d];
        for (index_t r = 0; r < d; ++r) {
          double t = 0;
          for (index_t k = 0; k < d; ++k)
            t += v.transform[r * d + k] * x[k];
          y[r] = t;
        }
        std::copy(y.begin(), y.end(), x);
      }
  }
  if (m == Metric::seuclidean) {
    for (io::PointSet* s : sets)
      for (index_t i = 0; i < s->n; ++i)
        for (index_t k = 0; k < d; ++k)
          s->values[i * d + k] /= std::sqrt(v.variance[k]);
  }
  if (m == Metric::correlation) {
    // u - average(u, weights=w), as scipy.spatial.distance.correlation.
    for (io::PointSet* s : sets)
      for (index_t i = 0; i < s->n; ++i) {
        double* x = &s->values[i * d];
        double sum = 0, wsum = 0;
        for (index_t k = 0; k < d; ++k) {
          sum += w.empty() ? x[k] : x[k] * w[k];
          wsum += w.empty() ? 1.0 : w[k];
        }
        const double mean = sum / wsum;
        for (index_t k = 0; k < d; ++k)
          x[k] -= mean;
      }
  }
  if (!w.empty()) {
    switch (m) {
      case Metric::euclidean:
      case Metric::sqeuclidean:
      case Metric::cosine:
      case Metric::correlation:
        scale.resize(d);
        for (index_t k = 0; k < d; ++k)
          scale[k] = std::sqrt(w[k]);
        break;
      case Metric::cityblock:
      case Metric::braycurtis:
        scale = w;
        break;
      case Metric::minkowski:
        scale.resize(d);
        for (index_t k = 0; k < d; ++k)
          scale[k] = p->mp.p == HUGE_VAL ? (w[k] > 0 ? 1.0 : 0.0) : std::pow(w[k], 1.0 / p->mp.p);
        if (p->mp.p != HUGE_VAL) break;
        [[fallthrough]];
      case Metric::chebyshev: {
        // SciPy: the largest |u - v| over the features of positive weight.
        std::vector<index_t> keep;
        for (index_t k = 0; k < d; ++k)
          if (w[k] > 0) keep.push_back(k);
        for (io::PointSet* s : sets) {
          std::vector<double> x(s->n * keep.size());
          for (index_t i = 0; i < s->n; ++i)
            for (index_t c = 0; c < keep.size(); ++c)
              x[i * keep.size() + c] = s->values[i * d + keep[c]];
          s->values.swap(x);
          s->d = keep.size();
        }
        scale.clear();
        break;
      }
      case Metric::canberra:
        p->kernel_weights = w;
        break;
      default:  // the boolean family: on values, below
        if (!is_boolean(m)) throw std::logic_error("weights for a metric that takes none");
        break;
    }
  }
  if (!scale.empty())
    for (io::PointSet* s : sets)
      for (index_t i = 0; i < s->n; ++i)
        for (index_t k = 0; k < d; ++k)
          s->values[i * d + k] *= scale[k];
  if (m == Metric::jensenshannon) {
    for (io::PointSet* s : sets)
      for (index_t i = 0; i < s->n; ++i) {
        double* x = &s->values[i * d];
        double sum = 0;
        bool negative = false;
        for (index_t k = 0; k < d; ++k) {
          negative = negative || x[k] < 0;
          sum += x[k];
        }
        // SciPy's HUGE_VAL rows: -1 in every feature marks them.
        for (index_t k = 0; k < d; ++k)
          x[k] = negative || !(sum > 0) ? -1.0 : x[k] / sum;
      }
  }
  p->bool_values = false;
  p->weight_sum = 0;
  if (is_boolean(m)) {
    // Bits serve unless there are weights, or hamming/jaccard meet a value
    // other than 0/1 (SciPy compares their values; it casts the other six
    // to bool).
    bool values = !w.empty();
    if (m == Metric::hamming || m == Metric::jaccard) {
      for (io::PointSet* s : sets)
        for (double x : s->values)
          values = values || (x != 0.0 && x != 1.0);
    } else if (values) {
      for (io::PointSet* s : sets)
        for (double& x : s->values)
          x = x != 0.0 ? 1.0 : 0.0;
    }
    p->bool_values = values;
    if (values) {
      p->kernel_weights = w;
      if (w.empty()) {
        p->weight_sum = static_cast<double>(d);
      } else if (m == Metric::hamming) {
        p->weight_sum = lane2_sum(w);
      } else if (m == Metric::russellrao) {
        p->weight_sum = numpy_sum(w);
      }
    }
  }
  p->d = a->d;
  if (p->packed()) p->d = (d + sizeof(T) * 8 - 1) / (sizeof(T) * 8);
}

MetricParams make_metric_params(Metric m, double p, double base, index_t features) {
  MetricParams mp;
  mp.metric = m;
  mp.p = p;
  mp.int_p = (p >= 3 && p <= 64 && p == std::floor(p)) ? static_cast<int>(p) : 0;
  mp.log_base = base > 0 ? metric::log_(base) : 1.0;
  mp.bits = is_boolean(m) ? features : 0;
  return mp;
}

template <typename T>
void set_select_within(Problem<T>* p, double radius) {
  // The largest T <= radius: value <= radius in double is value <= that in T.
  T r = static_cast<T>(radius);
  if (static_cast<double>(r) > radius) r = std::nextafter(r, -std::numeric_limits<T>::infinity());
  p->epilogue = EpilogueKind::select;
  p->select = SelectParams{};
  p->select.kind = SelectKind::within;
  p->select.radius = static_cast<double>(r);
  p->select.acc_max = dispatch_metric<T>(p->metric_params(), [&](auto m) {
    using M = decltype(m);
    if constexpr (selection::kOnAccumulator<M>) {
      return selection::within_acc_max(m, r);
    } else {
      return 0.0;  // unused: the value is compared
    }
  });
}

void set_select_overlap(Problem<double>* p, std::vector<double> radii) {
  p->epilogue = EpilogueKind::select;
  p->select = SelectParams{};
  p->select.kind = SelectKind::overlap;
  p->select_radii = std::move(radii);
}

#define TDS_INSTANTIATE(T)                                                                \
  template void set_select_within<T>(Problem<T>*, double);                                \
  template void apply_cull<T>(Problem<T>*, CullMode, CullGeometry, const CullBuilder<T>&, \
                              index_t);                                                   \
  template mapping::ChunkPlan make_plan<T>(const Problem<T>&, index_t);                   \
  template mapping::ChunkPlan plan_from_offsets<T>(const Problem<T>&,                     \
                                                   const std::vector<index_t>&);          \
  template std::vector<T> convert_points<T>(const io::PointSet&);                         \
  template std::vector<T> pack_points<T>(const io::PointSet&);                            \
  template void prepare_points<T>(Problem<T>*, io::PointSet*, io::PointSet*,              \
                                  const MetricVectors&);                                  \
  template void complete_problem<T>(Problem<T>*);                                         \
  template void check_norms<T>(const Problem<T>&, const std::string&, const std::string&);
TDS_INSTANTIATE(float)
TDS_INSTANTIATE(double)
#undef TDS_INSTANTIATE

}  // namespace tdsolve
