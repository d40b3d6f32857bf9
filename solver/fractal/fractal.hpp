// tdsolve fractal: cellular automata (Game of Life rules) on NBB fractals,
// run on the compact form with the λ/ν maps of mapping/fractal.hpp (seed 003).
//
// Three strategies compute the same steps, so their states agree bit for bit:
//   bb       embedded layout (n×n bytes), a thread per embedding cell; cells
//            off the fractal hold kOff and do nothing
//   lambda   embedded layout, a compact grid: one block per coarse cell, λ
//            finds its place in the embedding
//   nu       compact layout (k^r bytes in compact order): one block per
//            coarse cell, λ to find it, ν to find the 8 coarse neighbours
// A coarse cell is a square of ρ = s^b cells; its k^b fractal cells are
// listed by a local table (the miniature fractal), so no block holds a
// thread for an empty cell and no byte of the compact state is padding.
//
// The neighbourhood is Moore's restricted to the fractal: of a cell's 8
// embedded neighbours, those on the fractal count; the rule says which
// counts give birth to a dead cell and which let a live one survive.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/types.hpp"
#include "mapping/fractal.hpp"

namespace tdsolve::fractal {

using mapping::Fractal;
using mapping::kMaxFractalSide;

constexpr std::uint8_t kOff = 0xFF;  // an embedding cell that is not on the fractal

// The shape as data: side s and the filled sub-squares (x, y) in replica order.
struct Shape {
  std::string name;  // a preset's name, or the table as given
  int s = 0;
  std::vector<std::pair<int, int>> cells;
};

// Presets: name, then the table as "S:x,y/x,y/...".
const std::vector<std::pair<std::string, std::string>>& presets();
// A preset's name or a table "S:x,y/x,y/..."; throws UsageError naming what is
// wrong (unknown name, s out of 2..16, a cell outside the square, a cell listed
// twice, no cell).
Shape parse_shape(const std::string& text);
// The table as "S:x,y/x,y/..." (recorded in the file).
std::string shape_table(const Shape& shape);
// The largest level whose embedding keeps 64-bit cell indices (s^r <= 2^31).
int max_level(const Shape& shape);
// Throws UsageError when `level` is negative or past max_level.
Fractal make_fractal(const Shape& shape, int level);

// B.../S... as in Golly: digits 0-8 after B (birth) and after S (survival).
struct Rule {
  std::uint16_t birth = 0, survive = 0;  // bit c: c live neighbours
  TDS_HD std::uint8_t next(std::uint8_t alive, int live_neighbours) const {
    const std::uint16_t m = alive ? survive : birth;
    return std::uint8_t((m >> live_neighbours) & 1u);
  }
};
Rule parse_rule(const std::string& text);  // "B3/S23"; throws UsageError
std::string rule_text(const Rule& rule);   // canonical "B3/S23"

// random:DENSITY:SEED: cell c starts alive when the splitmix64 hash of
// seed and c, scaled to [0, 1), is below DENSITY. The same cells start alive
// whatever the layout, backend or level of parallelism.
struct RandomInit {
  double density = 0.5;
  std::uint64_t seed = 1;
  std::uint64_t threshold() const;  // density as a 53-bit fraction
};
TDS_HD std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
TDS_HD std::uint8_t random_cell(std::uint64_t seed, std::uint64_t threshold, std::uint64_t c) {
  return std::uint8_t((splitmix64(seed ^ splitmix64(c)) >> 11) < threshold);
}

enum class Strategy { bb, lambda, nu };
const char* strategy_name(Strategy s);

// The coarse level of a run: coarse cells of side s^b = ρ (b <= r).
struct Blocking {
  int b = 0;                 // local levels
  std::uint64_t rho = 1;     // s^b
  std::uint64_t local = 1;   // k^b, fractal cells per coarse cell
  int coarse_levels = 0;     // r - b
  std::uint64_t coarse = 1;  // k^(r-b), coarse cells
};
// ρ must be a power of s no larger than n or kMaxRho (ρ = 1 allowed); the
// local tables of a coarse cell (ρ² entries) then fit in shared memory.
constexpr std::uint64_t kMaxRho = 64;
Blocking make_blocking(const Fractal& f, std::uint64_t rho);

// The miniature fractal of one coarse cell: local index -> (x, y) and
// back (-1 off the fractal), ρ² entries; shared by both backends.
struct LocalTables {
  std::vector<std::uint16_t> lx, ly;  // k^b entries
  std::vector<std::int32_t> nu;       // ρ² entries, y*ρ + x
};
LocalTables local_tables(const Fractal& f, const Blocking& b);

// Live neighbours of embedded cell (x, y) of an n×n embedded state.
TDS_HD int embedded_neighbours(const std::uint8_t* e, std::uint64_t n, std::uint64_t x,
                               std::uint64_t y) {
  int live = 0;
  for (int dy = -1; dy <= 1; ++dy) {
    if ((dy < 0 && y == 0) || (dy > 0 && y + 1 == n)) continue;
    const std::uint8_t* row = e + (y + dy) * n;
    for (int dx = -1; dx <= 1; ++dx) {
      if ((dx == 0 && dy == 0) || (dx < 0 && x == 0) || (dx > 0 && x + 1 == n)) continue;
      live += row[x + dx] == 1;
    }
  }
  return live;
}

// The compact layout's step works on the window of a coarse cell: its ρ×ρ
// cells and the ring of one cell around them from its 8 neighbours, (ρ+2)²
// bytes, 0 where off the fractal (in shared memory on the GPU). `nb` holds
// the compact coarse index of the 3×3 coarse cells around this one (-1 off
// the fractal), row by row; `local_nu` the local table (ρ² entries).
TDS_HD std::uint8_t window_value(const std::uint8_t* cur, int i, int rho, const std::int64_t* nb,
                                 const std::int32_t* local_nu, std::uint64_t local_cells) {
  const int side = rho + 2;
  int ax = i % side - 1, ay = i / side - 1, bx = 1, by = 1;
  if (ax < 0) {
    ax += rho;
    bx = 0;
  } else if (ax >= rho) {
    ax -= rho;
    bx = 2;
  }
  if (ay < 0) {
    ay += rho;
    by = 0;
  } else if (ay >= rho) {
    ay -= rho;
    by = 2;
  }
  const std::int64_t cb = nb[by * 3 + bx];
  if (cb < 0) return 0;
  const std::int32_t fl = local_nu[ay * rho + ax];
  return fl < 0 ? 0 : cur[std::uint64_t(cb) * local_cells + std::uint64_t(fl)];
}

// The next state of the cell at (lx, ly) of a coarse cell, from its window.
TDS_HD std::uint8_t window_next(const std::uint8_t* win, int rho, int lx, int ly,
                                const Rule& rule) {
  const int side = rho + 2;
  const std::uint8_t* r0 = win + ly * side + lx + 1;
  const std::uint8_t* r1 = r0 + side;
  const std::uint8_t* r2 = r1 + side;
  const int n = r0[-1] + r0[0] + r0[1] + r1[-1] + r1[1] + r2[-1] + r2[0] + r2[1];
  return rule.next(r1[0], n);
}

// The 3×3 coarse neighbourhood of coarse cell `cc`, by λ then ν.
TDS_HD void coarse_neighbourhood(const Fractal& f, const Blocking& blk, std::uint64_t cc,
                                 std::int64_t* nb) {
  std::uint64_t X, Y;
  mapping::fractal_lambda(f, cc, blk.coarse_levels, &X, &Y);
  for (int dy = -1; dy <= 1; ++dy)
    for (int dx = -1; dx <= 1; ++dx)
      nb[(dy + 1) * 3 + dx + 1] =
          mapping::fractal_nu(f, std::int64_t(X) + dx, std::int64_t(Y) + dy, blk.coarse_levels);
}

// A run's state on one backend. Host state is always in compact order.
class Engine {
 public:
  virtual ~Engine() = default;
  // Sets cells [c0, c0 + count) of the state (compact order), or the random start.
  virtual void set_state(std::uint64_t c0, std::uint64_t count, const std::uint8_t* v) = 0;
  virtual void set_random(const RandomInit& init) = 0;
  // `steps` generations; live_after[i]: the live cells after generation i+1.
  virtual void step(int steps, std::uint64_t* live_after) = 0;
  virtual std::uint64_t live() = 0;  // live cells now
  virtual void get_state(std::uint64_t c0, std::uint64_t count, std::uint8_t* v) = 0;
  virtual double seconds() = 0;                    // compute time of the steps so far
  virtual std::uint64_t device_bytes() const = 0;  // state memory held
  virtual std::string describe() const = 0;
};

struct EngineOptions {
  Strategy strategy = Strategy::nu;
  std::uint64_t rho = 0;      // 0: the default for the shape
  bool tensor_cores = false;  // CUDA: the coarse maps' sums on tensor cores
  int threads = 1;            // CPU
  int device = -1;            // CUDA
};

// Bytes of state a strategy needs (two generations).
std::uint64_t state_bytes(const Fractal& f, Strategy s);
// The default ρ: the largest power of s up to 32 that the level allows.
std::uint64_t default_rho(const Fractal& f);

std::unique_ptr<Engine> make_cpu_engine(const Fractal& f, const Rule& rule, const EngineOptions& o);
// Throws UsageError when built without CUDA.
std::unique_ptr<Engine> make_cuda_engine(const Fractal& f, const Rule& rule,
                                         const EngineOptions& o);

// For the tests: the 3×3 coarse neighbourhoods (as coarse_neighbourhood) of
// coarse cells [first, first + count), computed on the GPU by the step
// kernel's tensor-core or CUDA-core path; 9 values a cell.
std::vector<std::int64_t> cuda_coarse_maps(const Fractal& f, const Blocking& blk, bool tensor_cores,
                                           std::uint64_t first, std::uint64_t count);

}  // namespace tdsolve::fractal
