#include "solver/problem.hpp"

#include <cmath>

#include "io/error.hpp"

namespace tdsolve {

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

template <typename T>
void complete_problem(EdmProblem<T>* p, Metric metric, index_t block) {
  p->metric = metric;
  p->tiling = mapping::PairTiling(p->n, block);
  p->norms.clear();
  if (dispatch_metric<T>(metric, [](auto m) { return decltype(m)::needs_norms; })) {
    p->norms.resize(p->n);
    for (index_t i = 0; i < p->n; ++i)
      p->norms[i] = metric::norm(&p->points[i * p->d], p->d);
  }
}

template <typename T>
void check_norms(const EdmProblem<T>& p, const std::string& source) {
  for (index_t i = 0; i < p.norms.size(); ++i)
    if (p.norms[i] == 0.0)
      throw InputError("point " + std::to_string(i) + " of '" + source +
                       "' is all zeros: its cosine distance is undefined");
}

template std::vector<float> convert_points<float>(const io::PointSet&);
template std::vector<double> convert_points<double>(const io::PointSet&);
template void complete_problem<float>(EdmProblem<float>*, Metric, index_t);
template void complete_problem<double>(EdmProblem<double>*, Metric, index_t);
template void check_norms<float>(const EdmProblem<float>&, const std::string&);
template void check_norms<double>(const EdmProblem<double>&, const std::string&);

}  // namespace tdsolve
