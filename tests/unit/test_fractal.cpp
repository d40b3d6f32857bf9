// The NBB fractal maps (mapping/fractal.hpp) against brute-force expansion,
// and the fractal command's shapes, rules, blocking and CPU engine.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "core/error.hpp"
#include "mapping/fractal.hpp"
#include "solver/fractal/fractal.hpp"

using namespace tdsolve;
using namespace tdsolve::fractal;

namespace {

// In the fractal by its definition: every base-s digit pair is a filled
// sub-square (no map code involved).
bool member(const Shape& sh, int r, std::uint64_t x, std::uint64_t y) {
  bool filled[kMaxFractalSide][kMaxFractalSide] = {};
  for (const auto& [cx, cy] : sh.cells)
    filled[cx][cy] = true;
  for (int mu = 0; mu < r; ++mu, x /= sh.s, y /= sh.s)
    if (!filled[x % sh.s][y % sh.s]) return false;
  return true;
}

std::vector<Shape> shapes() {
  std::vector<Shape> v;
  for (const auto& [name, table] : presets())
    v.push_back(parse_shape(name));
  v.push_back(parse_shape("4:3,0/1,1/0,2/2,3/3,3"));  // a custom one, s = 4
  return v;
}

// The largest level whose embedding has at most `cells` cells.
int level_for(const Shape& sh, std::uint64_t cells) {
  int r = 0;
  std::uint64_t n = 1;
  while (n * sh.s * n * sh.s <= cells) {
    n *= sh.s;
    ++r;
  }
  return r;
}

}  // namespace

// Every cell of the embedding up to ~10^7 cells, at every level: ν(x, y) is
// the compact index whose λ is (x, y), or -1 exactly off the fractal.
TEST(FractalMaps, MatchBruteForceExpansion) {
  for (const Shape& sh : shapes()) {
    const int top = level_for(sh, 10'000'000);
    for (int r = 0; r <= top; ++r) {
      SCOPED_TRACE(sh.name + " level " + std::to_string(r));
      const Fractal f = make_fractal(sh, r);
      ASSERT_EQ(f.n * f.n >= f.cells, true);
      std::vector<std::int64_t> at(f.n * f.n, -1);
      for (std::uint64_t c = 0; c < f.cells; ++c) {
        std::uint64_t x, y;
        mapping::fractal_lambda(f, c, r, &x, &y);
        ASSERT_LT(x, f.n);
        ASSERT_LT(y, f.n);
        ASSERT_EQ(at[y * f.n + x], -1) << "λ maps two indices to (" << x << ", " << y << ")";
        at[y * f.n + x] = std::int64_t(c);
      }
      std::uint64_t bad = 0, members = 0;
      for (std::uint64_t y = 0; y < f.n; ++y)
        for (std::uint64_t x = 0; x < f.n; ++x) {
          const bool in = member(sh, r, x, y);
          members += in;
          const std::int64_t nu = mapping::fractal_nu(f, std::int64_t(x), std::int64_t(y), r);
          bad += nu != at[y * f.n + x] || in != (nu >= 0);
        }
      EXPECT_EQ(bad, 0u);
      EXPECT_EQ(members, f.cells);
      // One step past each edge is off the fractal.
      EXPECT_EQ(mapping::fractal_nu(f, -1, 0, r), -1);
      EXPECT_EQ(mapping::fractal_nu(f, 0, std::int64_t(f.n), r), -1);
    }
  }
}

// At the largest level (n = s^r up to 2^31, up to 3^31 cells): ν(λ(ω)) = ω
// for random ω and for the first and last indices.
TEST(FractalMaps, RoundTripAtTheLargestLevel) {
  std::mt19937_64 rng(7);
  for (const Shape& sh : shapes()) {
    const int r = max_level(sh);
    const Fractal f = make_fractal(sh, r);
    SCOPED_TRACE(sh.name + " level " + std::to_string(r));
    std::vector<std::uint64_t> omegas = {0, 1, f.cells / 2, f.cells - 2, f.cells - 1};
    for (int i = 0; i < 200000; ++i)
      omegas.push_back(rng() % f.cells);
    std::uint64_t bad = 0;
    for (std::uint64_t w : omegas) {
      std::uint64_t x, y;
      mapping::fractal_lambda(f, w, r, &x, &y);
      bad += x >= f.n || y >= f.n ||
             mapping::fractal_nu(f, std::int64_t(x), std::int64_t(y), r) != std::int64_t(w) ||
             !member(sh, r, x, y);
    }
    EXPECT_EQ(bad, 0u);
  }
}

TEST(FractalShapes, PresetsAndTables) {
  const Shape t = parse_shape("sierpinski-triangle");
  EXPECT_EQ(t.s, 2);
  EXPECT_EQ(t.cells.size(), 3u);
  EXPECT_EQ(shape_table(t), "2:0,0/0,1/1,1");
  EXPECT_EQ(parse_shape("sierpinski-carpet").cells.size(), 8u);
  EXPECT_EQ(max_level(t), 31);
  EXPECT_EQ(max_level(parse_shape("vicsek")), 19);  // 3^19 < 2^31 < 3^20
  const Shape c = parse_shape("3:0,0/2,2");
  EXPECT_EQ(c.cells.size(), 2u);
  EXPECT_EQ(shape_table(c), "3:0,0/2,2");
}

TEST(FractalShapes, BadTablesAreRefused) {
  for (const char* bad : {"nosuch", "1:0,0", "17:0,0", "3:", "3:0,0/0,0", "3:3,0", "3:0,3", "3:0",
                          "3:0,0,0", "3:a,b", "3:0,0//1,1", "x:0,0", "3:-1,0"})
    EXPECT_THROW(parse_shape(bad), UsageError) << bad;
  EXPECT_THROW(make_fractal(parse_shape("vicsek"), 20), UsageError);
  EXPECT_THROW(make_fractal(parse_shape("vicsek"), -1), UsageError);
  EXPECT_NO_THROW(make_fractal(parse_shape("sierpinski-triangle"), 31));
  EXPECT_THROW(make_fractal(parse_shape("sierpinski-triangle"), 32), UsageError);
}

TEST(FractalRules, ParseAndPrint) {
  const Rule life = parse_rule("B3/S23");
  EXPECT_EQ(rule_text(life), "B3/S23");
  EXPECT_EQ(rule_text(parse_rule("s23/b36")), "B36/S23");
  EXPECT_EQ(rule_text(parse_rule("B/S")), "B/S");
  EXPECT_EQ(life.next(0, 3), 1);
  EXPECT_EQ(life.next(0, 2), 0);
  EXPECT_EQ(life.next(1, 2), 1);
  EXPECT_EQ(life.next(1, 4), 0);
  for (const char* bad : {"B3", "B9/S23", "B3/S23/B1", "X3/S23", "B3/B23", "", "B3/S2a"})
    EXPECT_THROW(parse_rule(bad), UsageError) << bad;
}

TEST(FractalBlocking, PowersOfS) {
  const Fractal f = make_fractal(parse_shape("sierpinski-carpet"), 4);
  const Blocking b = make_blocking(f, 9);
  EXPECT_EQ(b.b, 2);
  EXPECT_EQ(b.local, 64u);
  EXPECT_EQ(b.coarse, 64u);
  EXPECT_EQ(default_rho(f), 27u);
  EXPECT_THROW(make_blocking(f, 8), UsageError);
  EXPECT_THROW(make_blocking(f, 243), UsageError);  // > n = 81
  EXPECT_NO_THROW(make_blocking(f, 1));
  const LocalTables t = local_tables(f, b);
  for (std::uint64_t l = 0; l < b.local; ++l)
    EXPECT_EQ(t.nu[t.ly[l] * 9 + t.lx[l]], int(l));
}

// The three strategies of the CPU engine, several ρ and thread counts: the
// same live counts and the same final state.
TEST(FractalEngine, StrategiesAgree) {
  for (const Shape& sh : shapes()) {
    const int r = sh.s == 2 ? 7 : 4;
    const Fractal f = make_fractal(sh, r);
    SCOPED_TRACE(sh.name);
    const Rule rule = parse_rule("B3/S23");
    RandomInit init;
    init.density = 0.45;
    init.seed = 11;
    std::vector<std::uint8_t> ref;
    std::vector<std::uint64_t> ref_live;
    for (Strategy st : {Strategy::nu, Strategy::lambda, Strategy::bb})
      for (std::uint64_t rho = 1; rho <= f.n && rho <= kMaxRho; rho *= std::uint64_t(sh.s))
        for (int threads : {1, 2}) {
          EngineOptions o;
          o.strategy = st;
          o.rho = rho;
          o.threads = threads;
          auto e = make_cpu_engine(f, rule, o);
          e->set_random(init);
          std::vector<std::uint64_t> live(12);
          e->step(12, live.data());
          std::vector<std::uint8_t> out(f.cells);
          e->get_state(0, f.cells, out.data());
          EXPECT_EQ(e->live(), live.back());
          if (ref.empty()) {
            ref = out;
            ref_live = live;
          } else {
            EXPECT_EQ(out, ref) << strategy_name(st) << " rho " << rho << " threads " << threads;
            EXPECT_EQ(live, ref_live);
          }
        }
  }
}
