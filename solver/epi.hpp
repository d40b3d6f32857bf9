// The epilogues: what a loop does with each value it computes. One type
// each, shared by the CPU loops and the CUDA kernels (host and device; no
// I/O, no CUDA): the loops are templates on them, and a run's EpilogueKind
// picks the type once per chunk.
//
//   type                  kind       loop                values go
//   Store                 store      pair tiles,         to their packed index
//                                    triplet tiles       (triplets: and Reduce)
//   Histogram             histogram  pair tiles          into numpy's bins
//   Select<Within>        select     pair tiles          kept with their pair
//   Select<Overlap>       select     pair tiles          when the test passes
//   TopK                  topk       row lists           into each row's k best
//   Reduce                reduce     triplet tiles       summed per point
//
// A type's traits say what the planner and the backends need to know of
// it; the per-value work is the type's own (TopK's list, a select test) or,
// for the CUDA pair kernels, its detail::Epilogue specialisation
// (cuda/block_kernels.cuh). docs/design.md lists the files a new one touches.
#pragma once

#include <stdexcept>
#include <type_traits>

#include "core/types.hpp"
#include "solver/select.hpp"

namespace tdsolve {

// store: every value in packed order (triplets: and the reductions);
// reduce: triplets' reductions only; topk: each row's k nearest columns
// (epi::TopK), the point itself excluded; select: the pairs that pass a
// test (solver/select.hpp), with their values, in packed order.
enum class EpilogueKind { store, histogram, reduce, topk, select };

namespace epi {

// The loop family that runs an epilogue: the block tiles of a pair or
// rectangle domain (cpu/tiles.inc, cuda/block_kernels.cuh), whole rows
// against every column (cpu/knn.inc, cuda/knn_kernels.cu), or the tiles of
// the triplet domain (cpu/triplets.cpp, cuda/triplet_backend.cu).
enum class Loop { pair_tiles, row_lists, triplet_tiles };

struct Store {};
struct Histogram {};

// Select's tests (solver/select.hpp): the pair (i, j) with accumulator acc
// (row and column norms na, nb) is kept when test() says so; *value is then
// its finalized value.
struct Within {  // value <= radius
  template <typename T, typename M, typename A>
  static TDS_HD bool test(const SelectParams& sp, const M& m, A acc, index_t, index_t, double na,
                          double nb, T* value) {
    return selection::within<T>(sp, m, acc, na, nb, value);
  }
};
struct Overlap {  // spheres that overlap (euclidean, float64)
  template <typename T, typename M, typename A>
  static TDS_HD bool test(const SelectParams& sp, const M& m, A acc, index_t i, index_t j, double,
                          double, T* value) {
    return selection::overlap(sp, m, acc, i, j, value);
  }
};
template <typename Test>
struct Select {
  using test_type = Test;
};

// Top-k: the per-row list both backends keep (solver/knn.hpp says why the
// order needs no index comparison). Row i visits the columns j in
// increasing order (j != i) and keeps the K smallest (value, j), sorted by
// value, ties by the smaller index.
//
// Values that are no number: a metric may give nan for some pairs of finite
// points (dice or sokalsneath of two all-false points, braycurtis of two
// zero points), and +inf where a sum overflows. A list's free slots hold
// index n (and +inf). The order, as a stable sort with nan last gives it:
// numbers (+inf among them) by value, then nan, then free slots; ties by
// index. Every candidate later than every listed index (j only grows)
// enters when:
//   a slot is free (any value, nan and inf too), or
//   it is a number and the worst entry is nan or a larger number.
// Without the free-slot rule a row whose candidates are all nan or +inf
// kept its free slots: index n (out of range) and distance inf in the file.
struct TopK {
  template <typename T>
  static TDS_HD bool admits(T value, T worst, bool free_slot) {
    if (free_slot) return true;
    if (value != value) return false;
    return worst != worst || value < worst;
  }
  // Inserts (value, j, a) into the sorted list of k entries; the caller has
  // checked admits(). acc may be null (no screening on the accumulator). An
  // entry moves down past the new one when it ranks after it: a free slot,
  // a nan below a number, or a larger number (an equal one stays before
  // it: smaller index).
  template <typename T, typename A, typename I>
  static TDS_HD void insert(T* dist, I* idx, A* acc, int k, T value, I j, A a, I n) {
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

  // The same list when candidates come in any order of j (a culled run
  // meets the columns block by block): (value, j) is compared whole, in
  // the order above (numbers by value, then nan, then free slots; ties by
  // index).
  template <typename T, typename I>
  static TDS_HD bool before(T v, I j, T w, I wj, I n) {
    if (wj == n) return j != n;  // anything before a free slot
    if (j == n) return false;
    const bool vn = v != v, wn = w != w;
    if (vn != wn) return wn;  // a number before a nan
    if (!vn && v != w) return v < w;
    return j < wj;
  }
  template <typename T, typename A, typename I>
  static TDS_HD bool offer_any(T* dist, I* idx, A* acc, int k, T value, I j, A a, I n) {
    if (!before(value, j, dist[k - 1], idx[k - 1], n)) return false;
    int p = k - 1;
    while (p > 0 && before(value, j, dist[p - 1], idx[p - 1], n)) {
      dist[p] = dist[p - 1];
      idx[p] = idx[p - 1];
      if (acc) acc[p] = acc[p - 1];
      --p;
    }
    dist[p] = value;
    idx[p] = j;
    if (acc) acc[p] = a;
    return true;
  }
};

// Reduce: a triplet tile's energies and pair weights summed per point
// (exact accumulators, cpu/triplets.cpp and cuda/triplet_backend.cu); Store
// on the triplet tiles writes each triplet's energy as well.
struct Reduce {};

template <typename E>
struct traits;
template <>
struct traits<Store> {
  static constexpr EpilogueKind kKind = EpilogueKind::store;
  static constexpr bool kStores = true;      // writes every value (memory-bound)
  static constexpr bool kFixedGrid = false;  // a fixed number of blocks striding over the tiles
  static constexpr bool kSelects = false;    // hands the host a list of pairs
  static constexpr bool kReduces = false;    // hands the host per-point sums
};
template <>
struct traits<Histogram> {
  static constexpr EpilogueKind kKind = EpilogueKind::histogram;
  static constexpr bool kStores = false, kFixedGrid = true, kSelects = false, kReduces = false;
};
template <typename Test>
struct traits<Select<Test>> {
  static constexpr EpilogueKind kKind = EpilogueKind::select;
  static constexpr bool kStores = false, kFixedGrid = false, kSelects = true, kReduces = false;
};
template <>
struct traits<TopK> {
  static constexpr EpilogueKind kKind = EpilogueKind::topk;
  static constexpr bool kStores = false, kFixedGrid = false, kSelects = false, kReduces = false;
};
template <>
struct traits<Reduce> {
  static constexpr EpilogueKind kKind = EpilogueKind::reduce;
  static constexpr bool kStores = false, kFixedGrid = false, kSelects = false, kReduces = true;
};

template <typename E>
constexpr bool is_select = traits<E>::kSelects;

// The loops an epilogue runs in.
template <typename E>
constexpr bool runs_in(Loop l) {
  if constexpr (std::is_same_v<E, TopK>) return l == Loop::row_lists;
  if constexpr (std::is_same_v<E, Reduce>) return l == Loop::triplet_tiles;
  if constexpr (std::is_same_v<E, Store>) return l == Loop::pair_tiles || l == Loop::triplet_tiles;
  return l == Loop::pair_tiles;
}

// Calls f(E{}) with the triplet tiles' epilogue of a run's kind.
template <typename F>
decltype(auto) dispatch_triplet(EpilogueKind k, F&& f) {
  if (k == EpilogueKind::store) return f(Store{});
  if (k != EpilogueKind::reduce) throw std::logic_error("triplet tiles store or reduce");
  return f(Reduce{});
}

}  // namespace epi
}  // namespace tdsolve
