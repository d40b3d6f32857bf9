// k nearest neighbours: what both backends' top-k loops share (the list
// itself is the epilogue type epi::TopK, solver/epi.hpp).
//
// Row i visits the columns j = 0, 1, ..., n-1 in increasing order (j != i)
// and keeps the K smallest (distance, j) pairs, sorted: by distance, ties
// by the smaller index. Because j only grows, a candidate whose distance
// equals the list's worst is never better than it, so "strictly smaller
// than the worst distance" is the admission test (epi::TopK::admits adds
// free slots and nan), and an admitted candidate goes after every entry of
// equal distance. The distances are
// the metric functors' values (solver/metrics.hpp), the same bits on CPU
// and GPU, so both backends build identical lists.
//
// Screening on the accumulator: for a metric whose value is a
// non-decreasing function of its accumulator alone (sqrt for euclidean,
// the identity for sqeuclidean, cityblock, chebyshev), acc >= the worst
// entry's accumulator implies value >= the worst value, so the candidate
// is rejected without finalising it (no square root for most columns).
// Candidates below it are finalised and compared exactly as above.
#pragma once

#include <type_traits>

#include "core/types.hpp"
#include "solver/metrics.hpp"

namespace tdsolve {

// The largest K the CUDA kernel keeps per row (its lists live in local
// memory); the CPU takes any K < n.
constexpr index_t kMaxGpuNeighbors = 256;

template <typename M>
struct KnnScreen : std::false_type {};
template <typename T>
struct KnnScreen<metric::Euclidean<T>> : std::true_type {};
template <typename T>
struct KnnScreen<metric::SqEuclidean<T>> : std::true_type {};
template <typename T>
struct KnnScreen<metric::Cityblock<T>> : std::true_type {};
template <typename T>
struct KnnScreen<metric::Chebyshev<T>> : std::true_type {};

}  // namespace tdsolve
