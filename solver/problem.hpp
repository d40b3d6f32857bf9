// Turning input points into the EdmProblem every backend sees; shared by
// `edm` (rank 0 converts, all ranks complete) and `bench`.
#pragma once

#include <string>

#include "io/input.hpp"
#include "solver/backend.hpp"

namespace tdsolve {

// Points in compute precision; InputError if a value overflows float32.
template <typename T>
std::vector<T> convert_points(const io::PointSet& pts);

// Tiling and, for metrics that need them, the norms (every rank computes
// the same bits from the same points).
template <typename T>
void complete_problem(EdmProblem<T>* p, Metric metric, index_t block);

// InputError naming the first all-zero point when the metric needs norms.
template <typename T>
void check_norms(const EdmProblem<T>& p, const std::string& source);

}  // namespace tdsolve
