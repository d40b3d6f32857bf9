// The map laboratory (issue 14): the papers' three test problems run under
// every block-space map of mapping/variants.hpp, to time the maps against
// each other (`tdsolve bench --problem dummy|edm|collide`).
//
// As in the papers (seed 000 §V, seed 002 §5), a launch is a grid of B × B
// thread blocks over the n × n matrix: the map turns block (bx, by) of a
// pass into a block tile (I, J), I <= J (or discards it), and thread
// (tx, ty) into element (r, c) = (I·B + ty, J·B + tx); the element is the
// problem's when r < c < n (the strict upper triangle; the tiles on the
// diagonal hold both halves, so the maps must launch them). Maps without the
// diagonal (kDiagonal = false) get one extra pass of m blocks for it, as REC
// has. Every map runs the same problem code with the same launch rules; only
// the block -> tile step differs.
//
//   dummy    each element computes r + c and stores it only if it equals a
//            value it never takes (one memory access the compiler cannot
//            remove; seed 002 §4.1): the map's cost alone
//   edm      the Euclidean distance of points r and c (1-4 features, float32,
//            read from global memory) stored at out[r·n + c]: seed 002's
//            4-D EDM test, here also with 1-3 features
//   collide  spheres (x, r) or (x, y, z, r), float32, in a unit box: does
//            sphere r overlap sphere c? The block stages its B row and B
//            column spheres in shared memory (seed 002's shared-memory test);
//            overlaps are counted (a warp vote, one atomic a warp)
// and, not timed, a coverage check: every element adds 1 to its own counter
// of an n × n array; then each counter must be 1 inside the triangle and 0
// outside, so a map that drops, repeats or misplaces a tile shows up (this
// is how the float maps' failures past the papers' range are found on a
// GPU). collide's count is also compared with a map-free reference count.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/types.hpp"
#include "mapping/variants.hpp"

namespace tdsolve::lab {

namespace v = mapping::variants;

enum class LabProblem { dummy, edm, collide };
const char* problem_name(LabProblem p);

// Every map of the laboratory, by the name --maps takes.
enum class MapId {
  bb,
  ltm_x,
  ltm_n,
  ltm_r,  // the papers' λ: + ε
  ltm_x_raw,
  ltm_n_raw,
  ltm_r_raw,  // the formula as written
  ltm_x_exact,
  ltm_n_exact,  // the roots above + the product's exact correction
  ltm,          // the product's own λ2 (variants::ShippedLambda2)
  ltm_x_nodiag,
  ltm_n_nodiag,
  ltm_r_nodiag,
  ltm_nodiag,  // strict triangle + a diagonal pass
  rb,
  rec,
  utm,        // as published (with the diagonal)
  utm_exact,  // exact integer argument and steps
  utm_nodiag  // as published, strict triangle + a diagonal pass
};

struct MapInfo {
  MapId id;
  const char* name;
  const char* what;
};
const std::vector<MapInfo>& maps();
// "bb" -> MapId::bb; throws UsageError listing the names.
MapId parse_map(const std::string& name);
const char* map_name(MapId id);
// The maps --maps takes by default (the list) and "all".
std::vector<MapId> default_maps();

template <typename F>
decltype(auto) dispatch_lab_map(MapId id, F&& f) {
  using v::Fix;
  using v::LtmMap;
  using v::Sqrt;
  switch (id) {
    case MapId::bb:
      return f(v::BbMap{});
    case MapId::ltm_x:
      return f(LtmMap<Sqrt::X, Fix::Epsilon, true>{});
    case MapId::ltm_n:
      return f(LtmMap<Sqrt::N, Fix::Epsilon, true>{});
    case MapId::ltm_r:
      return f(LtmMap<Sqrt::R, Fix::Epsilon, true>{});
    case MapId::ltm_x_raw:
      return f(LtmMap<Sqrt::X, Fix::None, true>{});
    case MapId::ltm_n_raw:
      return f(LtmMap<Sqrt::N, Fix::None, true>{});
    case MapId::ltm_r_raw:
      return f(LtmMap<Sqrt::R, Fix::None, true>{});
    case MapId::ltm_x_exact:
      return f(LtmMap<Sqrt::X, Fix::Exact, true>{});
    case MapId::ltm_n_exact:
      return f(LtmMap<Sqrt::N, Fix::Exact, true>{});
    case MapId::ltm:
      return f(v::ShippedLambda2{});
    case MapId::ltm_x_nodiag:
      return f(LtmMap<Sqrt::X, Fix::Epsilon, false>{});
    case MapId::ltm_n_nodiag:
      return f(LtmMap<Sqrt::N, Fix::Epsilon, false>{});
    case MapId::ltm_r_nodiag:
      return f(LtmMap<Sqrt::R, Fix::Epsilon, false>{});
    case MapId::ltm_nodiag:
      return f(LtmMap<Sqrt::R, Fix::Exact, false>{});
    case MapId::rb:
      return f(v::RbMap{});
    case MapId::rec:
      return f(v::RecMap{});
    case MapId::utm:
      return f(v::UtmPublished{});
    case MapId::utm_exact:
      return f(v::UtmExact{});
    case MapId::utm_nodiag:
      break;
  }
  return f(v::UtmMap<v::UtmFix::Published, false>{});
}

// The diagonal pass added after the passes of a map without the diagonal:
// block (bx, 0) -> tile (bx, bx).
inline constexpr index_t kDiagonalPassLevel = ~index_t(0);

// Block (bx, by) of pass p -> tile (i, j) of the upper block triangle of m
// block rows, or false (a discarded block, or a float map's wrong tile: a
// tile off the triangle is never touched).
template <typename Map>
TDS_HD bool lab_tile(index_t m, const v::Pass& p, index_t bx, index_t by, index_t* i, index_t* j) {
  if (!Map::kDiagonal && p.level == kDiagonalPassLevel) {
    *i = *j = bx;
    return true;
  }
  if (!Map::map(m, p, bx, by, i, j)) return false;
  return *i <= *j && *j < m;
}

// The passes a laboratory launch of Map makes for m block rows.
template <typename Map>
v::Launch lab_launch(index_t m) {
  v::Launch l = Map::launch(m);
  if (!Map::kDiagonal) l.add(m, 1, kDiagonalPassLevel);
  return l;
}

// ---------------------------------------------------------------------------
// The problems' element code, shared by the CPU and CUDA engines (float32,
// no contraction on either: the CPU build has -ffp-contract=off, the kernels
// use the _rn intrinsics through variants::fp).

// The value dummy computes and never stores.
inline constexpr std::uint64_t kDummyNever = ~std::uint64_t(0);

template <int D>
TDS_HD float edm_value(const float* a, index_t r, index_t c) {
  float acc = 0.0f;
  for (int k = 0; k < D; ++k) {
    const float t = v::fp::sub(a[r * D + k], a[c * D + k]);
    acc = v::fp::add(acc, v::fp::mul(t, t));
  }
  return v::fp::sqrt_rn(acc);
}

// Spheres as DIM coordinates then the radius (stride DIM + 1): overlap when
// the squared centre distance is below the squared sum of the radii.
template <int DIM>
TDS_HD bool spheres_overlap(const float* s, const float* t) {
  float acc = 0.0f;
  for (int k = 0; k < DIM; ++k) {
    const float d = v::fp::sub(s[k], t[k]);
    acc = v::fp::add(acc, v::fp::mul(d, d));
  }
  const float rr = v::fp::add(s[DIM], t[DIM]);
  return acc < v::fp::mul(rr, rr);
}

// One laboratory case: a problem, its features (edm: 1-4; collide: the
// dimension, 1 or 3; dummy: 0) and a size.
struct LabCase {
  LabProblem problem = LabProblem::dummy;
  int features = 0;
  index_t n = 0;
  int block = 16;  // B: B × B threads a block
  // One thread a block evaluates the map and shares the tile (else every
  // thread does, as in the papers); the CPU engine has one "thread".
  bool map_once = false;
  index_t m() const { return (n + block - 1) / block; }
};

// The input of a case: n points of `features` floats (edm) or n spheres of
// features + 1 (collide), from a fixed seed: centres (and edm's points)
// uniform in [0, 1), radii uniform in (0, rmax] with rmax such that a sphere
// overlaps about two others on average.
std::vector<float> lab_data(const LabCase& c);

struct LabCheck {
  bool done = false;
  std::uint64_t wrong = 0;  // coverage counters that are not what they must be
  // collide: overlaps the map's launch counted and the map-free reference.
  std::uint64_t count = 0, reference = 0;
  bool ok() const { return done && wrong == 0 && count == reference; }
};

// Runs the laboratory's launches on one device (or the host).
class LabEngine {
 public:
  virtual ~LabEngine() = default;
  virtual std::string describe() const = 0;
  // Uploads the case's data; allocates edm's output and, with check, the
  // coverage counters (n × n each).
  virtual void prepare(const LabCase& c, const std::vector<float>& data, bool check) = 0;
  // Milliseconds of `repeat` timed launches of the map's passes, after one
  // untimed warm-up launch.
  virtual std::vector<double> time(MapId map, int repeat) = 0;
  // The coverage check (and collide's count), not timed.
  virtual LabCheck check(MapId map) = 0;
  // Frees what prepare allocated.
  virtual void release() = 0;
};

std::unique_ptr<LabEngine> make_cpu_lab();
std::unique_ptr<LabEngine> make_cuda_lab();  // throws UsageError without CUDA

// Blocks a map launches for m block rows (its passes, the diagonal pass of a
// strict map included) and the tiles it must cover: T(m).
index_t launched_blocks(MapId map, index_t m);

}  // namespace tdsolve::lab
