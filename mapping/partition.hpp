// Balanced partition of the pair domain: block rows into chunks, chunks into ranks.
//
// Chunks are contiguous ranges of block rows, so each is one contiguous range
// of the packed output. Their boundaries depend only on (n, ρ, chunk size),
// never on the rank count: every decomposition writes the same bytes and
// records the same progress. Cut points sit where the cumulative pair count
// reaches c·N/K (N pairs, K chunks), found by bisection over block rows (the
// count before block row I is the exact row_start(n, Iρ)); K grows until no
// chunk exceeds the bound. Ranks then own contiguous chunk ranges cut the same
// way by element count, so each rank's output is also one contiguous range.
//
// Host only: the plan is a small table (K+1 boundaries) built once per run.
#pragma once

#include <algorithm>
#include <vector>

#include "mapping/lambda2.hpp"

namespace tdsolve::mapping {

// First block row I in [0, m] with elements_before(I) >= e.
inline index_t block_row_at_element(const PairTiling& t, index_t e) {
  index_t lo = 0, hi = t.m;
  while (lo < hi) {
    const index_t mid = lo + (hi - lo) / 2;
    if (t.elements_before(mid) >= e)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

// ceil(a * b / c) without overflow, for a, c < 2^64 and b <= c.
inline index_t mul_div_ceil(index_t a, index_t b, index_t c) {
  const unsigned __int128 p = static_cast<unsigned __int128>(a) * b;
  return static_cast<index_t>((p + c - 1) / c);
}

class ChunkPlan {
 public:
  ChunkPlan() = default;

  // Cut the domain into chunks of at most max(max_elements, largest block row)
  // pairs. A block row is never split: the caller checks largest_chunk().
  ChunkPlan(const PairTiling& tiling, index_t max_elements) : tiling_(tiling) {
    const index_t total = tiling.elements_before(tiling.m);
    const index_t largest_row = tiling.elements_in_rows(0, std::min<index_t>(1, tiling.m));
    const index_t bound = std::max<index_t>({max_elements, largest_row, 1});
    index_t k = std::max<index_t>(1, (total + bound - 1) / bound);
    for (;;) {
      cut(k);
      if (largest_chunk() <= bound) break;
      k += std::max<index_t>(1, k / 16);
    }
  }

  const PairTiling& tiling() const { return tiling_; }
  index_t chunks() const { return rows_.empty() ? 0 : rows_.size() - 1; }
  index_t row_begin(index_t c) const { return rows_[c]; }
  index_t row_end(index_t c) const { return rows_[c + 1]; }
  index_t offset(index_t c) const { return tiling_.elements_before(rows_[c]); }
  index_t elements(index_t c) const { return tiling_.elements_in_rows(rows_[c], rows_[c + 1]); }
  index_t total() const { return tiling_.elements_before(tiling_.m); }

  index_t largest_chunk() const {
    index_t best = 0;
    for (index_t c = 0; c < chunks(); ++c)
      best = std::max(best, elements(c));
    return best;
  }

  // Chunks [first, last) owned by `rank` of `ranks`: contiguous, balanced by
  // pair count (a rank may own none when there are more ranks than chunks).
  BlockRange rank_chunks(int rank, int ranks) const {
    return BlockRange{first_chunk_of(rank, ranks), first_chunk_of(rank + 1, ranks)};
  }

 private:
  void cut(index_t k) {
    const index_t total = this->total();
    rows_.assign(1, 0);
    for (index_t c = 1; c < k; ++c) {
      const index_t r = block_row_at_element(tiling_, mul_div_ceil(total, c, k));
      if (r > rows_.back() && r < tiling_.m) rows_.push_back(r);
    }
    // The last block row may hold no pair at all (it is row n-1 alone); it
    // still belongs to the last chunk so that every tile is launched.
    if (tiling_.m > 0) rows_.push_back(tiling_.m);
  }

  index_t first_chunk_of(int rank, int ranks) const {
    if (rank <= 0) return 0;
    if (rank >= ranks) return chunks();
    const index_t target =
        mul_div_ceil(total(), static_cast<index_t>(rank), static_cast<index_t>(ranks));
    index_t lo = 0, hi = chunks();
    while (lo < hi) {
      const index_t mid = lo + (hi - lo) / 2;
      if (offset(mid) >= target)
        hi = mid;
      else
        lo = mid + 1;
    }
    return lo;
  }

  PairTiling tiling_;
  std::vector<index_t> rows_;  // K+1 block-row boundaries
};

}  // namespace tdsolve::mapping
