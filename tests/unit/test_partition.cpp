// Chunk plans against golden plans derived by hand and against an independent
// brute-force planner: per-block-row element counts summed by plain loops,
// the cut rule of partition.hpp's header comment applied by a linear scan.
#include <gtest/gtest.h>

#include <vector>

#include "mapping/partition.hpp"

using namespace tdsolve;
using namespace tdsolve::mapping;

namespace {

// Elements of each block row, counted one row (pairs: one pair) at a time.
std::vector<index_t> pair_row_counts(index_t n, index_t rho) {
  std::vector<index_t> counts;
  for (index_t i0 = 0; i0 < n; i0 += rho) {
    index_t c = 0;
    for (index_t i = i0; i < i0 + rho && i < n; ++i)
      c += n - 1 - i;  // pairs (i, j), j = i+1 .. n-1
    counts.push_back(c);
  }
  return counts;
}

std::vector<index_t> rect_row_counts(index_t rows, index_t cols, index_t rho) {
  std::vector<index_t> counts;
  for (index_t i0 = 0; i0 < rows; i0 += rho) {
    index_t c = 0;
    for (index_t i = i0; i < i0 + rho && i < rows; ++i)
      c += cols;
    counts.push_back(c);
  }
  return counts;
}

struct RefPlan {
  std::vector<index_t> rows, offsets;
};

// The rule: bound = max(max_elements, first block row, 1); K = ceil(N/bound);
// cut c (0 < c < K) at the first block row whose cumulative count reaches
// ceil(c·N/K), dropping repeated cuts and cuts at the end; raise K by
// max(1, K/16) until no chunk exceeds the bound.
RefPlan reference_plan(const std::vector<index_t>& counts, index_t max_elements) {
  const index_t m = counts.size();
  std::vector<index_t> cum(m + 1, 0);
  for (index_t I = 0; I < m; ++I)
    cum[I + 1] = cum[I] + counts[I];
  const index_t total = cum[m];
  index_t bound = std::max<index_t>(max_elements, 1);
  if (m > 0) bound = std::max(bound, counts[0]);
  index_t k = std::max<index_t>(1, (total + bound - 1) / bound);
  for (;;) {
    RefPlan p;
    p.rows.push_back(0);
    index_t r = 0;  // targets increase with c, so the scan only moves forward
    for (index_t c = 1; c < k; ++c) {
      const unsigned __int128 num = static_cast<unsigned __int128>(total) * c;
      const index_t target = static_cast<index_t>((num + k - 1) / k);
      while (r < m && cum[r] < target)
        ++r;
      if (r > p.rows.back() && r < m) p.rows.push_back(r);
    }
    if (m > 0) p.rows.push_back(m);
    index_t largest = 0;
    for (size_t c = 0; c < p.rows.size(); ++c) {
      p.offsets.push_back(cum[p.rows[c]]);
      if (c > 0) largest = std::max(largest, p.offsets[c] - p.offsets[c - 1]);
    }
    if (largest <= bound) return p;
    k += std::max<index_t>(1, k / 16);
  }
}

void expect_plan(const ChunkPlan& plan, const std::vector<index_t>& rows,
                 const std::vector<index_t>& offsets, const std::string& what) {
  ASSERT_EQ(plan.chunks() + 1, rows.size()) << what;
  EXPECT_EQ(plan.offsets(), offsets) << what;
  for (index_t c = 0; c < plan.chunks(); ++c) {
    EXPECT_EQ(plan.row_begin(c), rows[c]) << what << " chunk " << c;
    EXPECT_EQ(plan.row_end(c), rows[c + 1]) << what << " chunk " << c;
    EXPECT_EQ(plan.offset(c), offsets[c]) << what << " chunk " << c;
    EXPECT_EQ(plan.elements(c), offsets[c + 1] - offsets[c]) << what << " chunk " << c;
  }
}

void expect_valid(const ChunkPlan& plan, index_t block_rows, index_t total, index_t bound) {
  ASSERT_GE(plan.chunks(), 1u);
  EXPECT_EQ(plan.row_begin(0), 0u);
  EXPECT_EQ(plan.row_end(plan.chunks() - 1), block_rows);
  index_t sum = 0;
  for (index_t c = 0; c < plan.chunks(); ++c) {
    EXPECT_LT(plan.row_begin(c), plan.row_end(c)) << "empty chunk " << c;
    if (c > 0) EXPECT_EQ(plan.row_begin(c), plan.row_end(c - 1));
    EXPECT_EQ(plan.offset(c), sum);
    EXPECT_LE(plan.elements(c), bound);
    sum += plan.elements(c);
  }
  EXPECT_EQ(sum, total);
  EXPECT_EQ(plan.total(), total);
}

std::string describe(index_t a, index_t b, index_t rho, index_t bound) {
  return std::to_string(a) + "×" + std::to_string(b) + " ρ=" + std::to_string(rho) +
         " bound=" + std::to_string(bound);
}

}  // namespace

// Plans worked out by hand from the rule. n = 10, ρ = 2: block rows hold
// 9+8, 7+6, 5+4, 3+2, 1+0 pairs = 17, 13, 9, 5, 1 (cumulative 0 17 30 39 44 45).
TEST(ChunkPlan, GoldenPairPlans) {
  const PairDomain t(10, 2);
  // bound 17 (or less: the first block row): K = 3, targets 15, 30.
  expect_plan(ChunkPlan(t, 17), {0, 1, 2, 5}, {0, 17, 30, 45}, "bound 17");
  expect_plan(ChunkPlan(t, 1), {0, 1, 2, 5}, {0, 17, 30, 45}, "bound 1");
  // bound 25: K = 2 cuts at 23 -> row 2 (30 > 25), so K = 3 as above.
  expect_plan(ChunkPlan(t, 25), {0, 1, 2, 5}, {0, 17, 30, 45}, "bound 25");
  // bound 30: K = 2, one cut at 23 -> block row 2.
  expect_plan(ChunkPlan(t, 30), {0, 2, 5}, {0, 30, 45}, "bound 30");
  expect_plan(ChunkPlan(t, 45), {0, 5}, {0, 45}, "bound 45");
  expect_plan(ChunkPlan(t, 1000), {0, 5}, {0, 45}, "bound 1000");
  // n = 10, ρ = 3: 24, 15, 6, 0 (block row 3 is row 9 alone, no pair; it
  // stays in the last chunk so that its tile is launched).
  expect_plan(ChunkPlan(PairDomain(10, 3), 1), {0, 1, 4}, {0, 24, 45}, "ρ=3 bound 1");
  // Two points: one pair, one chunk whatever the bound.
  expect_plan(ChunkPlan(PairDomain(2, 128), 1), {0, 1}, {0, 1}, "n=2");
  expect_plan(ChunkPlan(PairDomain(2, 1), 1), {0, 2}, {0, 1}, "n=2 ρ=1");
}

// 10 × 7, ρ = 3: bands of 3, 3, 3, 1 rows = 21, 21, 21, 7 elements.
TEST(ChunkPlan, GoldenRectPlans) {
  const RectDomain r(10, 7, 3);
  // bound 21: K = 4, targets 18, 35, 53 -> block rows 1, 2, 3.
  expect_plan(ChunkPlan(r, 21), {0, 1, 2, 3, 4}, {0, 21, 42, 63, 70}, "bound 21");
  // bound 50: K = 2, target 35 -> block row 2 (42, 28).
  expect_plan(ChunkPlan(r, 50), {0, 2, 4}, {0, 42, 70}, "bound 50");
  // bound 40: K = 2 gives 42 > 40; K = 3 cuts at 24, 47 -> rows 2, 3 (42
  // again); K = 4 as for 21.
  expect_plan(ChunkPlan(r, 40), {0, 1, 2, 3, 4}, {0, 21, 42, 63, 70}, "bound 40");
  expect_plan(ChunkPlan(r, 70), {0, 4}, {0, 70}, "bound 70");
  expect_plan(ChunkPlan(RectDomain(1, 1, 128), 1), {0, 1}, {0, 1}, "1×1");
}

TEST(ChunkPlan, PairPlansMatchABruteForcePlanner) {
  for (index_t rho : {1, 2, 16, 128}) {
    for (index_t n : {index_t(2), index_t(3), rho - 1, rho, rho + 1, 2 * rho + 1, index_t(127),
                      index_t(997), index_t(4099), index_t(100003)}) {
      if (n < 2) continue;
      const PairDomain t(n, rho);
      const std::vector<index_t> counts = pair_row_counts(n, rho);
      ASSERT_EQ(counts.size(), t.block_rows());
      const index_t total = pair_count(n);
      for (index_t bound : {index_t(1), index_t(1000), index_t(65536), index_t(1) << 24, total - 1,
                            total, total + 1}) {
        const RefPlan want = reference_plan(counts, bound);
        const ChunkPlan plan(t, bound);
        expect_plan(plan, want.rows, want.offsets, describe(n, n, rho, bound));
        expect_valid(plan, t.m, total, std::max(bound, counts[0]));
      }
    }
  }
}

TEST(ChunkPlan, RectPlansMatchABruteForcePlanner) {
  for (index_t rho : {1, 2, 16, 128}) {
    for (index_t rows :
         {index_t(1), index_t(2), rho - 1, rho, rho + 1, index_t(997), index_t(70001)}) {
      if (rows < 1 || (rho == 1 && rows > 1000)) continue;
      for (index_t cols : {index_t(1), rho + 1, index_t(1009)}) {
        const RectDomain r(rows, cols, rho);
        const std::vector<index_t> counts = rect_row_counts(rows, cols, rho);
        const index_t total = rows * cols;
        for (index_t bound : {index_t(1), index_t(5000), index_t(1) << 20, total}) {
          const RefPlan want = reference_plan(counts, bound);
          const ChunkPlan plan(r, bound);
          const std::string what = describe(rows, cols, rho, bound);
          expect_plan(plan, want.rows, want.offsets, what);
          expect_valid(plan, r.m, total, std::max(bound, counts[0]));
          // Every chunk is a band of whole rows: offsets are multiples of
          // the row length, and of ρ rows except at the end.
          for (index_t c = 0; c <= plan.chunks(); ++c) {
            const index_t o = plan.offsets()[c];
            EXPECT_EQ(o % cols, 0u) << what;
            if (c < plan.chunks()) EXPECT_EQ(o % (rho * cols), 0u) << what;
          }
        }
      }
    }
  }
}

TEST(ChunkPlan, RectChunksAreBalanced) {
  const RectDomain r(70001, 70001, 128);
  const ChunkPlan plan(r, index_t(64) << 18);
  ASSERT_GT(plan.chunks(), 10u);
  index_t lo = ~index_t(0), hi = 0;
  for (index_t c = 0; c < plan.chunks(); ++c) {
    lo = std::min(lo, plan.elements(c));
    hi = std::max(hi, plan.elements(c));
  }
  EXPECT_LE(hi - lo, r.elements_in_rows(0, 1));
  EXPECT_LE(hi, index_t(64) << 18);
}

TEST(ChunkPlan, PairChunksAreBalanced) {
  const PairDomain t(200000, 128);
  const ChunkPlan plan(t, index_t(64) << 18);  // 64 MiB of float32
  ASSERT_GT(plan.chunks(), 10u);
  index_t lo = ~index_t(0), hi = 0;
  for (index_t c = 0; c < plan.chunks(); ++c) {
    lo = std::min(lo, plan.elements(c));
    hi = std::max(hi, plan.elements(c));
  }
  // Equal targets, cut at block-row granularity: within one block row.
  EXPECT_LE(hi - lo, t.elements_in_rows(0, 1));
}

TEST(ChunkPlan, FromOffsetsRoundTrips) {
  auto round_trip = [](const auto& dom, index_t bound) {
    const ChunkPlan p(dom, bound);
    std::vector<index_t> rows;
    for (index_t c = 0; c < p.chunks(); ++c)
      rows.push_back(p.row_begin(c));
    rows.push_back(p.row_end(p.chunks() - 1));
    ASSERT_EQ(rows.back(), dom.block_rows());
    expect_plan(ChunkPlan::from_offsets(dom, p.offsets()), rows, p.offsets(),
                "round trip bound " + std::to_string(bound));
  };
  for (index_t bound : {index_t(1), index_t(777), index_t(1) << 16, index_t(1) << 30}) {
    round_trip(PairDomain(1009, 16), bound);
    round_trip(PairDomain(129, 128), bound);
    round_trip(PairDomain(4099, 1), bound);
    round_trip(RectDomain(1009, 17, 16), bound);
    round_trip(RectDomain(1, 5, 128), bound);
  }
  // Offsets no plan would choose, but block-row boundaries: every block row.
  const PairDomain t(100, 7);
  std::vector<index_t> every;
  for (index_t I = 0; I < t.m; ++I)
    every.push_back(row_start(100, 7 * I));
  every.push_back(pair_count(100));
  const ChunkPlan q = ChunkPlan::from_offsets(t, every);
  ASSERT_EQ(q.chunks(), t.m);
  for (index_t c = 0; c < q.chunks(); ++c) {
    EXPECT_EQ(q.row_begin(c), c);
    EXPECT_EQ(q.row_end(c), c + 1);
  }
}

TEST(ChunkPlan, FromOffsetsRejectsWhatIsNotAPlan) {
  // n = 10, ρ = 2: block-row boundaries 0 17 30 39 44 45.
  const PairDomain t(10, 2);
  for (const std::vector<index_t>& bad : std::vector<std::vector<index_t>>{
           {},                   // nothing
           {0},                  // no end
           {45},                 // no start
           {1, 45},              // not from 0
           {0, 44},              // not to the total
           {0, 46},              // past the total
           {0, 17, 30, 39, 46},  // past the total
           {0, 18, 45},          // inside block row 1
           {0, 16, 45},          // inside block row 0
           {0, 9, 45},           // a row boundary (row 1), not a block-row one
           {0, 30, 17, 45},      // not increasing
           {0, 17, 17, 45},      // repeated
           {0, 0, 45},           // repeated start
           {0, 30, 60, 45},      // beyond the end in the middle
       }) {
    std::string s;
    for (index_t o : bad)
      s += std::to_string(o) + " ";
    EXPECT_THROW(ChunkPlan::from_offsets(t, bad), std::invalid_argument) << s;
  }
  EXPECT_NO_THROW(ChunkPlan::from_offsets(t, {0, 17, 30, 39, 44, 45}));
  EXPECT_NO_THROW(ChunkPlan::from_offsets(t, {0, 45}));

  // 10 × 7, ρ = 3: boundaries 0 21 42 63 70; 7 and 14 are row boundaries only.
  const RectDomain r(10, 7, 3);
  for (const std::vector<index_t>& bad : std::vector<std::vector<index_t>>{
           {0, 7, 70}, {0, 14, 70}, {0, 22, 70}, {0, 42, 21, 70}, {0, 21, 21, 70}, {0, 69}}) {
    EXPECT_THROW(ChunkPlan::from_offsets(r, bad), std::invalid_argument) << bad[1];
  }
  EXPECT_NO_THROW(ChunkPlan::from_offsets(r, {0, 21, 42, 63, 70}));
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

// Rank ranges against a hand-worked case: 10 × 7, ρ = 3, bound 21 gives
// chunks of 21 21 21 7 starting at 0 21 42 63. Rank r of R starts at the
// first chunk whose offset reaches ceil(70 r / R).
TEST(ChunkPlan, GoldenRankRanges) {
  const ChunkPlan plan(RectDomain(10, 7, 3), 21);
  ASSERT_EQ(plan.chunks(), 4u);
  auto range = [&](int r, int R) {
    const BlockRange b = plan.rank_chunks(r, R);
    return std::make_pair(b.begin, b.end);
  };
  using P = std::pair<index_t, index_t>;
  EXPECT_EQ(range(0, 1), P(0, 4));
  // R = 2: target 35 -> chunk 2 (offset 42).
  EXPECT_EQ(range(0, 2), P(0, 2));
  EXPECT_EQ(range(1, 2), P(2, 4));
  // R = 3: targets 24, 47 -> chunks 2, 3.
  EXPECT_EQ(range(0, 3), P(0, 2));
  EXPECT_EQ(range(1, 3), P(2, 3));
  EXPECT_EQ(range(2, 3), P(3, 4));
  // R = 6: targets 12 24 35 47 59 -> chunks 1 2 2 3 3: ranks 2 and 4 own none.
  EXPECT_EQ(range(0, 6), P(0, 1));
  EXPECT_EQ(range(1, 6), P(1, 2));
  EXPECT_EQ(range(2, 6), P(2, 2));
  EXPECT_EQ(range(3, 6), P(2, 3));
  EXPECT_EQ(range(4, 6), P(3, 3));
  EXPECT_EQ(range(5, 6), P(3, 4));
}
