#include "solver/problem.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "core/error.hpp"

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
  const char* always = std::getenv("TDSOLVE_HIST_EXACT_ALWAYS");
  const bool off = always && *always == '1';
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

template <typename T>
mapping::ChunkPlan make_plan(const Problem<T>& p, index_t max_elements) {
  if (p.triplets()) return mapping::ChunkPlan(p.triplet_domain(), max_elements);
  if (p.domain == DomainKind::rect) return mapping::ChunkPlan(p.rect_domain(), max_elements);
  return mapping::ChunkPlan(p.pair_domain(), max_elements);
}

template <typename T>
mapping::ChunkPlan plan_from_offsets(const Problem<T>& p, const std::vector<index_t>& offsets) {
  if (p.triplets()) return mapping::ChunkPlan::from_offsets(p.triplet_domain(), offsets);
  if (p.domain == DomainKind::rect)
    return mapping::ChunkPlan::from_offsets(p.rect_domain(), offsets);
  return mapping::ChunkPlan::from_offsets(p.pair_domain(), offsets);
}

void check_float32_range(const io::PointSet& a, const io::PointSet* b, Metric m) {
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
        bound += range * range;  // the sum of squared differences
        break;
      case Metric::cityblock:
        bound += range;
        break;
      case Metric::chebyshev:
        bound = std::max(bound, range);
        break;
      case Metric::cosine:
        bound += big * big;  // the dot product
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
  std::vector<T> out(pts.values.size());
  for (index_t i = 0; i < pts.values.size(); ++i) {
    out[i] = static_cast<T>(pts.values[i]);
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

void check_zero_norms(const std::vector<double>& norms, const std::string& source) {
  for (index_t i = 0; i < norms.size(); ++i)
    if (norms[i] == 0.0)
      throw InputError("point " + std::to_string(i) + " of '" + source +
                       "' is all zeros: its cosine distance is undefined");
}
}  // namespace

template <typename T>
void complete_problem(Problem<T>* p) {
  p->norms_a.clear();
  p->norms_b.clear();
  if (dispatch_metric<T>(p->metric, [](auto m) { return decltype(m)::needs_norms; })) {
    p->norms_a = norms_of(p->a, p->rows, p->d);
    if (p->domain == DomainKind::rect) p->norms_b = norms_of(p->b, p->cols, p->d);
  }
}

template <typename T>
void check_norms(const Problem<T>& p, const std::string& source_a, const std::string& source_b) {
  check_zero_norms(p.norms_a, source_a);
  check_zero_norms(p.norms_b, source_b);
}

#define TDS_INSTANTIATE(T)                                                       \
  template mapping::ChunkPlan make_plan<T>(const Problem<T>&, index_t);          \
  template mapping::ChunkPlan plan_from_offsets<T>(const Problem<T>&,            \
                                                   const std::vector<index_t>&); \
  template std::vector<T> convert_points<T>(const io::PointSet&);                \
  template void complete_problem<T>(Problem<T>*);                                \
  template void check_norms<T>(const Problem<T>&, const std::string&, const std::string&);
TDS_INSTANTIATE(float)
TDS_INSTANTIATE(double)
#undef TDS_INSTANTIATE

}  // namespace tdsolve
