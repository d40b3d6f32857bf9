// What every backend computes: a Problem is a domain (pairs of one point set,
// the rectangle of two, or triplets of one set), a metric, a block map and an
// epilogue (what happens to each value: stored in packed order, binned, or
// only reduced into per-point sums). Backends and sinks know nothing about
// which command built it.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "io/input.hpp"
#include "mapping/block_map.hpp"
#include "mapping/partition.hpp"
#include "solver/adf_bins.hpp"
#include "solver/cull.hpp"
#include "solver/epi.hpp"
#include "solver/epilogue.hpp"
#include "solver/metrics.hpp"
#include "solver/potentials/potential.hpp"
#include "solver/select.hpp"

namespace tdsolve {

// centres: each point as a centre with its neighbours (adf); an element a
// centre, block rows of rho centres.
enum class DomainKind { pairs, rect, triplets, centres };
enum class MapKind { lambda, bb };

inline const char* map_name(MapKind m) {
  return m == MapKind::bb ? "bb" : "lambda";
}

// Orthorhombic periodic box: minimum image per coordinate (hist, knn
// --radius, collide).
constexpr int kMaxBoxDims = 8;

// Partial histograms (hist --types, --pairs, --exclude; built by
// solver/commands/hist.cpp): a pair (i, j) is counted in histogram
// table[type[i] * types + type[j]] (none where that is -1), and not at all
// when molecule[i] == molecule[j]. The per-point labels are in the
// problem's point order (a culled run's: the Morton order of p.a).
struct HistGroups {
  index_t count = 0;  // histograms; 0: one, every pair (the plain epilogue)
  std::int32_t types = 1;
  std::vector<std::int32_t> type;      // per point (empty: one type)
  std::vector<std::int32_t> table;     // types × types (empty: histogram 0)
  std::vector<std::int32_t> molecule;  // per point (empty: no exclusions)
  // Per histogram, known before the run: the pairs of a frame it counts
  // (every count, underflow and overflow: a culled run's overflow is what
  // the others leave), and 2 where its pairs are of one type (MDAnalysis
  // counts them in both orders), else 1.
  std::vector<std::int64_t> pairs;
  std::vector<int> ordered;
};

// Uniform bins exactly as numpy.histogram(values, bins, range=(lo, hi)):
// edges = numpy.linspace(lo, hi, bins + 1), half-open bins, the last closed.
struct HistSpec {
  index_t bins = 0;
  double lo = 0, hi = 0;
  std::vector<double> edges;    // bins + 1
  double margin = 1;            // epilogue::histogram_slot's fast-path margin (1: never)
  epilogue::HistFast32 fast32;  // the float32 screen (float32 runs)
  HistGroups groups;
  // Histograms that are not type pairs' (adf: one per triple); 0: the
  // groups' count, or one.
  index_t rows = 0;
  // Counts are kept as [underflow, bin 0 .. bin B-1, overflow], one such
  // row per histogram.
  index_t histograms() const { return groups.count > 0 ? groups.count : rows > 0 ? rows : 1; }
  index_t slots() const { return (bins + 2) * histograms(); }
};

// numpy.linspace(lo, hi, bins + 1), to the bit: k * step + lo, last = hi.
std::vector<double> linspace_edges(double lo, double hi, index_t bins);

// Bins over [lo, hi] with their edges and the fast-path margin: a bound,
// in units of bins, on the rounding of (x - lo) * bins / (hi - lo) (4 ulp
// of at most `bins`) plus that of the edges (3 ulp of bins, and 1 ulp of
// max(|lo|, |hi|) scaled to bins), doubled; and the float32 screen, whose
// margin bounds the float32 rounding the same way (u = 2^-24: x - lo_f,
// lo_f, norm_f and the product). TDSOLVE_HIST_EXACT_ALWAYS=1 turns both
// fast paths off (to measure them).
HistSpec make_hist_spec(double lo, double hi, index_t bins);

// The angle distributions of `tdsolve adf` (LAMMPS `compute adf`), over
// the centres domain: for each ADF m, each centre i whose type is in I_m
// and each unordered pair {j, k} of its neighbours that can be taken as
// (j in J_m with rj_in² <= r_ij² <= rj_out², k in K_m likewise), the angle
// θ_jik binned as LAMMPS bins it (solver/adf_bins.hpp). The neighbours
// come from a cell list (solver/cell_list.hpp) over the outer cutoff.
enum class AdfOrdinate { degree, radian, cosine };

struct AdfSpec {
  index_t count = 0;  // ADFs (histogram rows)
  index_t bins = 0;
  AdfOrdinate ordinate = AdfOrdinate::degree;
  std::vector<std::int32_t> type;  // each point's type code (one type: all 0)
  // AdfTable's: masks[3 t + s], the ADFs whose I (s = 0), J (1), K (2) hold
  // type t; cut2[4 m ..]: rj_in², rj_out², rk_in², rk_out² (float64, as
  // LAMMPS squares them)
  std::vector<std::uint16_t> masks;
  std::vector<double> cut2;
  double outer = 0;              // the largest outer cutoff (the cells')
  double widths[3] = {0, 0, 0};  // a periodic box's perpendicular widths
  AdfTable table() const { return AdfTable{int(count), masks.data(), cut2.data()}; }
};

// The three-body problem: a potential (solver/potentials/: LAMMPS
// `pair_style atm` or the three-body term of `pair_style sw`) summed over
// the triplets; or (bench) a dummy kernel that only walks the tiles, to time
// the block maps.
enum class TripletKernel { potential, dummy };
struct TripletSpec {
  TripletKernel kernel = TripletKernel::potential;
  PotentialSpec potential;
  // ATM per type triple (potential.atm.types > 0): each point's type code
  // (the run's order: apply_cull permutes it with the points) and ν of
  // every type triple, T × T × T, symmetric (AtmTypeTable's layout).
  std::vector<std::int32_t> types;
  std::vector<double> nu;
};

// Triplet reductions, per chunk, in exact accumulators (solver/exact_sum.hpp):
// slot p (energy of point p, summed over its triplets, not yet divided by 3),
// n + 3p + x (force component x on point p), and 4n (the total energy).
inline index_t triplet_sum_slots(index_t n) {
  return 4 * n + 1;
}

template <typename T>
struct Problem {
  DomainKind domain = DomainKind::pairs;
  index_t rows = 0, cols = 0, d = 0;  // pairs: rows = cols = n
  index_t rho = 128;
  std::vector<T> a, b;  // rows × d and (rect) cols × d, row-major
  std::vector<double> norms_a, norms_b;
  Metric metric = Metric::euclidean;  // as named (the file's `metric`); mp.metric is the same
  MetricParams mp;  // its parameters (metric_params(): with `metric`; weights set by a backend)
  std::vector<double> weights,
      variance;            // --weights, seuclidean's V: as used (the file records them)
  std::vector<double> vi;  // mahalanobis's VI (d × d): as used (the file records it)
  std::vector<double>
      kernel_weights;  // canberra's and BoolValues' weights (others scale the points)
  // The boolean family on values, not bits (prepare_points; MetricParams::values)
  // and BoolValues' sum of the weights.
  bool bool_values = false;
  double weight_sum = 0;
  std::vector<T> stored_points;  // rank 0, --store-points: the points as given
  index_t features = 0;          // d of the input: d differs for packed boolean points (words) and
                                 // weighted chebyshev (features of weight 0 left out)
  MapKind map = MapKind::lambda;
  EpilogueKind epilogue = EpilogueKind::store;
  HistSpec hist;
  int box_dims = 0;  // 0: no box; else = d
  std::array<T, kMaxBoxDims> box{};
  // A triclinic cell (d = 3): the tilts xy, xz, yz of LAMMPS's (BoxOptions).
  bool triclinic = false;
  std::array<T, 3> tilt{};
  TripletSpec three_body;  // triplets
  AdfSpec adf;             // centres
  index_t k = 0;           // topk: neighbours per row
  // select: the test (select.radii: set by each backend to its copy of
  // select_radii, for overlaps)
  SelectParams select;
  std::vector<double> select_radii;

  // A culled pair domain (solver/cull.hpp; apply_cull): the points (a,
  // norms_a, select_radii) are in its order, cull.order maps them back.
  bool culled = false;
  Culled cull;
  std::string cull_note;  // what the run chose and why (the log line, the file)

  bool triplets() const { return domain == DomainKind::triplets; }
  bool centres() const { return domain == DomainKind::centres; }
  // The box as the triplet tiles take it (3-D).
  epilogue::Cell3<T> cell3() const {
    epilogue::Cell3<T> c;
    if (box_dims != 3) return c;
    c.kind = triclinic ? 2 : 1;
    for (int k = 0; k < 3; ++k) {
      c.L[k] = box[k];
      c.tilt[k] = tilt[k];
    }
    return c;
  }
  mapping::TripletDomain triplet_domain() const { return mapping::TripletDomain(rows, rho); }

  // Culled: with its tile list (host memory).
  mapping::PairDomain pair_domain() const {
    mapping::PairDomain d(rows, rho);
    if (culled) {
      d.tiles = cull.tiles.data();
      d.tile_start = cull.tile_start.data();
    }
    return d;
  }
  mapping::RectDomain rect_domain() const { return mapping::RectDomain(rows, cols, rho); }
  mapping::CentreDomain centre_domain() const { return mapping::CentreDomain{rows, rho}; }
  // Elements of the domain: pairs, distances or triplets (culled: the pairs
  // its tiles test).
  index_t total() const {
    if (culled) return cull.tested();
    if (domain == DomainKind::triplets) return triplet_domain().total();
    if (domain == DomainKind::centres) return centre_domain().total();
    return domain == DomainKind::pairs ? pair_domain().total() : rect_domain().total();
  }
  const T* col_points() const { return domain == DomainKind::pairs ? a.data() : b.data(); }
  const std::vector<double>& col_norms() const {
    return domain == DomainKind::pairs ? norms_a : norms_b;
  }
  bool stores_values() const { return epilogue == EpilogueKind::store; }
  bool knn() const { return epilogue == EpilogueKind::topk; }
  bool selects() const { return epilogue == EpilogueKind::select; }

  // The functors' parameters: mp, for the metric `metric` (the one truth).
  MetricParams metric_params() const {
    MetricParams m = mp;
    m.metric = metric;
    m.values = bool_values;
    m.weight_sum = weight_sum;
    return m;
  }
  // Points as packed bits (the boolean family but on values).
  bool packed() const { return is_boolean(metric) && !bool_values; }
};

// select: the test of knn --radius (every pair whose value is <= radius,
// compared in T as the stored value would be) or of collide (spheres of
// these radii that overlap; euclidean, float64).
template <typename T>
void set_select_within(Problem<T>* p, double radius);
void set_select_overlap(Problem<double>* p, std::vector<double> radii);

// Culls the pair domain of *p (solver/cull.hpp) as `mode` asks, for the
// cutoff of geometry g (g.radii: p->select_radii's, in input order; the
// norm, margin and periodic box come from p): on
// every rank alike, after complete_problem. auto culls when the metric has a
// box bound (euclidean, sqeuclidean, cityblock, chebyshev, minkowski), d <=
// 8 and at most half of the tiles survive; on culls whenever the metric
// allows (else UsageError). Sets p->cull_note either way; when culled, puts
// p->a, p->norms_a and p->select_radii in the Morton order. A pair list
// (not knn --k's, not triplets') is built by `elsewhere` when given and it
// can (the CUDA builder: it returns false when it cannot, and sets *built
// as build_culled returns), else on the host. A list of more than `cap`
// tiles is not built (cull_tile_cap: every rank must pass the same).
template <typename T>
using CullBuilder =
    std::function<bool(const T* pts, index_t n, index_t d, index_t rho, const CullGeometry& g,
                       index_t max_tiles, Culled* c, bool* built)>;
template <typename T>
void apply_cull(Problem<T>* p, CullMode mode, CullGeometry g,
                const CullBuilder<T>& elsewhere = nullptr, index_t cap = index_t(1) << 28);
// The cap of a culled list on a rank that shares its node with local_ranks
// others: 32 bytes a tile (the list, its pieces while built; a triplet's
// third index) within its share of the host's memory, at least 2^28 and at
// most 2^31 tiles (TDSOLVE_TEST_CULL_CAP sets it, for the tests).
index_t cull_tile_cap(int local_ranks);
// Whether metric m has the box bound culling needs, and its norm's p.
bool cull_metric(Metric m, double minkowski_p, double* norm_p);
// A cutoff on metric m's values in the units of its bound's norm
// (sqeuclidean's values are squares).
inline double cull_cutoff(Metric m, double value) {
  if (m == Metric::sqeuclidean) return value > 0 ? std::sqrt(value) : value;
  return value;
}

// The plan of a problem's domain with chunks of at most max_elements.
template <typename T>
mapping::ChunkPlan make_plan(const Problem<T>& p, index_t max_elements);
// The plan a file records (/progress/offsets); std::invalid_argument when
// the offsets are not block-row boundaries of this problem's domain.
template <typename T>
mapping::ChunkPlan plan_from_offsets(const Problem<T>& p, const std::vector<index_t>& offsets);

// The metric's vectors, resolved on rank 0: weights (empty: none) and
// seuclidean's variances (computed when not given).
struct MetricVectors {
  std::vector<double> weights, variance;
  // mahalanobis: VI (d × d, row-major) as used, and the matrix M with
  // |M (u - v)|² = (u - v)ᵀ VI (u - v) (Cholesky) that prepare_points applies.
  std::vector<double> vi, transform;
};

// Rank 0, before convert_points: applies the host-side transforms of the
// metric to the points in float64 (docs/design.md, "Metric parameters"):
// seuclidean x/sqrt(V); correlation centring; weights as scalings (or,
// chebyshev, leaving out features of weight 0; canberra keeps them for the
// kernel); jensenshannon rows divided by their sums (a row with a negative
// value or a sum of 0, whose distances SciPy gives as inf, made -1 in every
// feature: metric::JensenShannon); the boolean family on values where bits
// do not serve (weights; hamming and jaccard on values other than 0/1: the
// other six made 0/1). Reads p->metric and p->mp.p; sets p->kernel_weights,
// p->bool_values, p->weight_sum, p->features and p->d (packed boolean: words
// a point).
template <typename T>
void prepare_points(Problem<T>* p, io::PointSet* a, io::PointSet* b, const MetricVectors& v);

// The functors' parameters: metric, minkowski's p (and whether it is a
// small integer), ln(base) for jensenshannon (base 0: natural), the boolean
// metrics' feature count. The same on every rank (metric::log_).
MetricParams make_metric_params(Metric m, double p, double base, index_t features);

// Boolean metrics: the points as bits (nonzero is 1), packed 32 (float) or
// 64 (double) to a word, feature k of a point in bit k % W of word k / W;
// the words travel as T, bit for bit. Sets p->d to the words per point.
template <typename T>
std::vector<T> pack_points(const io::PointSet& pts);

// Points in compute precision; InputError if a value overflows float32.
template <typename T>
std::vector<T> convert_points(const io::PointSet& pts);

// Float32 runs: InputError when the metric's arithmetic on these points can
// overflow float32 although the inputs fit (squared differences of points
// 1.8e19 apart pass 3.4e38 while their distance would not): the message
// asks for --precision float64. `b` is the second set of cross (or null).
// p: minkowski's order. The metrics that accumulate in float64 (cosine,
// correlation, canberra, jensenshannon) and the boolean ones pass.
void check_float32_range(const io::PointSet& a, const io::PointSet* b, Metric m, double p = 2);

// Norms for metrics that need them (every rank computes the same bits).
template <typename T>
void complete_problem(Problem<T>* p);

// InputError naming the first all-zero point when the metric needs norms.
template <typename T>
void check_norms(const Problem<T>& p, const std::string& source_a, const std::string& source_b);

// Calls f(Map{}) with the block map type of (domain, map), for pairs and
// rectangles; dispatch_map3 for triplets.
template <typename F>
decltype(auto) dispatch_map3(MapKind map, F&& f) {
  if (map == MapKind::bb) return f(mapping::BoundingBox3Map{});
  return f(mapping::Lambda3Map{});
}

template <typename F>
decltype(auto) dispatch_map(DomainKind domain, MapKind map, F&& f) {
  if (domain == DomainKind::rect) return f(mapping::RectMap{});
  if (map == MapKind::bb) return f(mapping::BoundingBoxMap{});
  return f(mapping::Lambda2Map{});
}

}  // namespace tdsolve
