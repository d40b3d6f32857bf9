// Balanced partition of a domain: block rows into chunks, chunks into ranks.
//
// Chunks are contiguous ranges of block rows, so each is one contiguous range
// of the packed output. Their boundaries depend only on (domain, ρ, chunk
// bound), never on the rank count: every decomposition writes the same bytes
// and records the same progress. Cut points sit where the cumulative element
// count reaches c·N/K (N elements, K chunks), found by bisection over block
// rows (the count before block row I is the domain's exact elements_before);
// K grows until no chunk exceeds the bound. Ranks then own contiguous chunk
// ranges cut the same way by element count, so each rank's output is also one
// contiguous range.
//
// A plan can also be rebuilt from the chunk offsets a file records
// (/progress/offsets): from_offsets() maps each offset back to its block row
// and refuses offsets that are not block-row boundaries of the domain.
//
// Host only: the plan is a small table (K+1 boundaries) built once per run.
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "mapping/domain.hpp"

namespace tdsolve::mapping {

// First block row I in [0, block_rows] with elements_before(I) >= e.
template <typename Domain>
index_t block_row_at_element(const Domain& d, index_t e) {
  index_t lo = 0, hi = d.block_rows();
  while (lo < hi) {
    const index_t mid = lo + (hi - lo) / 2;
    if (d.elements_before(mid) >= e)
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

  // Cut the domain into chunks of at most max(max_elements, largest block
  // row) elements. A block row is never split: the caller checks
  // largest_chunk() against what it can buffer.
  template <typename Domain>
  ChunkPlan(const Domain& d, index_t max_elements) {
    const index_t total = d.total();
    const index_t largest_row = d.largest_block_row();
    const index_t bound = std::max<index_t>({max_elements, largest_row, 1});
    index_t k = std::max<index_t>(1, (total + bound - 1) / bound);
    for (;;) {
      cut(d, k);
      if (largest_chunk() <= bound) break;
      k += std::max<index_t>(1, k / 16);
    }
  }

  // The plan whose chunks start at offsets[0..K-1] (offsets[K] = total), as
  // a file's /progress/offsets records it. Throws std::invalid_argument when
  // the offsets are not increasing block-row boundaries covering the domain.
  template <typename Domain>
  static ChunkPlan from_offsets(const Domain& d, const std::vector<index_t>& offsets) {
    ChunkPlan p;
    if (offsets.size() < 2 || offsets.front() != 0 || offsets.back() != d.total())
      throw std::invalid_argument("chunk offsets do not run from 0 to " +
                                  std::to_string(d.total()));
    p.rows_.push_back(0);
    p.offsets_.push_back(0);
    for (size_t c = 1; c + 1 < offsets.size(); ++c) {
      const index_t r = block_row_at_element(d, offsets[c]);
      if (r >= d.block_rows() || d.elements_before(r) != offsets[c] || r <= p.rows_.back())
        throw std::invalid_argument("chunk offset " + std::to_string(offsets[c]) +
                                    " is not a block-row boundary after the previous one");
      p.rows_.push_back(r);
      p.offsets_.push_back(offsets[c]);
    }
    p.rows_.push_back(d.block_rows());
    p.offsets_.push_back(d.total());
    return p;
  }

  index_t chunks() const { return rows_.empty() ? 0 : rows_.size() - 1; }
  index_t row_begin(index_t c) const { return rows_[c]; }
  index_t row_end(index_t c) const { return rows_[c + 1]; }
  index_t offset(index_t c) const { return offsets_[c]; }
  index_t elements(index_t c) const { return offsets_[c + 1] - offsets_[c]; }
  index_t total() const { return offsets_.empty() ? 0 : offsets_.back(); }
  // K+1 offsets, last = total: what /progress/offsets records.
  const std::vector<index_t>& offsets() const { return offsets_; }

  index_t largest_chunk() const {
    index_t best = 0;
    for (index_t c = 0; c < chunks(); ++c)
      best = std::max(best, elements(c));
    return best;
  }

  // Chunks [first, last) owned by `rank` of `ranks`: contiguous, balanced by
  // element count (a rank may own none when there are more ranks than chunks).
  BlockRange rank_chunks(int rank, int ranks) const {
    return BlockRange{first_chunk_of(rank, ranks), first_chunk_of(rank + 1, ranks)};
  }

 private:
  template <typename Domain>
  void cut(const Domain& d, index_t k) {
    const index_t total = d.total();
    rows_.assign(1, 0);
    for (index_t c = 1; c < k; ++c) {
      const index_t r = block_row_at_element(d, mul_div_ceil(total, c, k));
      if (r > rows_.back() && r < d.block_rows()) rows_.push_back(r);
    }
    // The last block row may hold no pair at all (it is row n-1 alone); it
    // still belongs to the last chunk so that every tile is launched.
    if (d.block_rows() > 0) rows_.push_back(d.block_rows());
    offsets_.resize(rows_.size());
    for (size_t c = 0; c < rows_.size(); ++c)
      offsets_[c] = d.elements_before(rows_[c]);
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

  std::vector<index_t> rows_;     // K+1 block-row boundaries
  std::vector<index_t> offsets_;  // K+1 element offsets of those boundaries
};

}  // namespace tdsolve::mapping
