#include <gtest/gtest.h>

#include "mapping/partition.hpp"

using namespace tdsolve;
using namespace tdsolve::mapping;

namespace {
void expect_valid(const ChunkPlan& plan, const PairDomain& t, index_t bound) {
  ASSERT_GE(plan.chunks(), 1u);
  EXPECT_EQ(plan.row_begin(0), 0u);
  EXPECT_EQ(plan.row_end(plan.chunks() - 1), t.m);
  index_t sum = 0;
  for (index_t c = 0; c < plan.chunks(); ++c) {
    EXPECT_LT(plan.row_begin(c), plan.row_end(c)) << "empty chunk " << c;
    EXPECT_EQ(plan.offset(c), sum);
    EXPECT_LE(plan.elements(c), bound);
    sum += plan.elements(c);
  }
  EXPECT_EQ(sum, pair_count(t.n));
}
}  // namespace

TEST(ChunkPlan, CoversTheDomainWithinTheBound) {
  for (index_t n : {2, 3, 127, 128, 129, 1000, 4099, 100000}) {
    for (index_t rho : {1, 16, 128}) {
      const PairDomain t(n, rho);
      const index_t row0 = t.elements_in_rows(0, 1);
      for (index_t bound : {index_t(1), index_t(1000), index_t(65536), index_t(1) << 24}) {
        const ChunkPlan plan(t, bound);
        expect_valid(plan, t, std::max(bound, row0));
      }
    }
  }
}

TEST(ChunkPlan, DependsOnlyOnTheProblem) {
  const PairDomain t(50000, 128);
  const ChunkPlan a(t, 1 << 20), b(t, 1 << 20);
  ASSERT_EQ(a.chunks(), b.chunks());
  for (index_t c = 0; c <= a.chunks(); ++c)
    EXPECT_EQ(a.offset(c < a.chunks() ? c : 0), b.offset(c < b.chunks() ? c : 0));
}

TEST(ChunkPlan, ChunksAreBalanced) {
  const PairDomain t(200000, 128);
  const ChunkPlan plan(t, index_t(64) << 18);  // 64 MiB of float32
  index_t lo = ~index_t(0), hi = 0;
  for (index_t c = 0; c < plan.chunks(); ++c) {
    lo = std::min(lo, plan.elements(c));
    hi = std::max(hi, plan.elements(c));
  }
  // Equal targets, cut at block-row granularity: within one block row.
  EXPECT_LE(hi - lo, t.elements_in_rows(0, 1));
}

TEST(ChunkPlan, RanksOwnContiguousBalancedRanges) {
  const PairDomain t(30000, 128);
  const ChunkPlan plan(t, 1 << 20);
  for (int ranks : {1, 2, 3, 4, 7, 64, 1000}) {
    index_t next = 0, most = 0, least = ~index_t(0);
    for (int r = 0; r < ranks; ++r) {
      const BlockRange mine = plan.rank_chunks(r, ranks);
      EXPECT_EQ(mine.begin, next);
      EXPECT_LE(mine.begin, mine.end);
      next = mine.end;
      index_t e = 0;
      for (index_t c = mine.begin; c < mine.end; ++c)
        e += plan.elements(c);
      most = std::max(most, e);
      least = std::min(least, e);
    }
    EXPECT_EQ(next, plan.chunks());
    if (static_cast<index_t>(ranks) <= plan.chunks() / 2) {
      // Balanced to within a chunk or so of the ideal share.
      EXPECT_LE(most, plan.total() / ranks + plan.largest_chunk());
    }
  }
}
