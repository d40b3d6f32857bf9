// k nearest neighbours: the per-row list both backends keep, written once.
//
// Row i visits the columns j = 0, 1, ..., n-1 in increasing order (j != i)
// and keeps the K smallest (distance, j) pairs, sorted: by distance, ties
// by the smaller index. Because j only grows, a candidate whose distance
// equals the list's worst is never better than it, so "strictly smaller
// than the worst distance" is the admission test (knn_admits, below, adds
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

// Values that are no number: a metric may give nan for some pairs of finite
// points (dice or sokalsneath of two all-false points, braycurtis of two zero
// points), and +inf where a sum overflows. A list's free slots hold index n
// (and +inf). The order, as a stable sort with nan last gives it: numbers
// (+inf among them) by value, then nan, then free slots; ties by index.
// Every candidate later than every listed index (j only grows) enters when:
//   a slot is free (any value, nan and inf too), or
//   it is a number and the worst entry is nan or a larger number.
// Without the free-slot rule a row whose candidates are all nan or +inf kept
// its free slots: index n (out of range) and distance inf in the file.
template <typename T>
TDS_HD bool knn_admits(T value, T worst, bool free_slot) {
  if (free_slot) return true;
  if (value != value) return false;
  return worst != worst || value < worst;
}

// Inserts (value, j, acc) into the sorted list of k entries; the caller has
// checked knn_admits. acc may be null (no screening). An entry moves down
// past the new one when it ranks after it: a free slot, a nan below a
// number, or a larger number (an equal one stays before it: smaller index).
template <typename T, typename A, typename I>
TDS_HD void knn_insert(T* dist, I* idx, A* acc, int k, T value, I j, A a, I n) {
  const bool nan = value != value;
  int p = k - 1;
  while (p > 0 &&
         (idx[p - 1] == n || (!nan && (dist[p - 1] != dist[p - 1] || dist[p - 1] > value)))) {
    dist[p] = dist[p - 1];
    idx[p] = idx[p - 1];
    if (acc) acc[p] = acc[p - 1];
    --p;
  }
  dist[p] = value;
  idx[p] = j;
  if (acc) acc[p] = a;
}

}  // namespace tdsolve
