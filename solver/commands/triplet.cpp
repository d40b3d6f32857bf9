// tdsolve triplet: the Axilrod-Teller-Muto three-body energy, per-point
// energies and forces over every triplet i<j<k of n points in 3-D.
#include <algorithm>
#include <cstdio>
#include <limits>
#include <tuple>

#include "mapping/simplex.hpp"
#include "solver/commands/pairs.hpp"
#include "solver/commands/sinks.hpp"
#include "solver/exact_sum.hpp"
#include "solver/progress.hpp"

namespace tdsolve {

namespace {

const char* kUsage =
    "Usage: tdsolve triplet (--input SRC | --generate SPEC) --output FILE.h5\n"
    "                       [--potential atm] [--nu NU] [--cutoff RC] [--cutoff-triple RT]\n"
    "                       [--store-triplets] [options]\n"
    "\n"
    "Sums the Axilrod-Teller-Muto three-body energy over every triplet i<j<k of n points\n"
    "in 3-D, as LAMMPS pair_style atm with the same nu, cutoff and cutoff_triple:\n"
    "/energy (the total), /energy_per_point (each triplet's energy split equally among\n"
    "its points) and /forces (n x 3, the analytic -dE/dx), all float64. The sums are\n"
    "exact before the one final rounding, so the file is the same for any rank count,\n"
    "chunk size or thread schedule. Only the tetrahedron's tiles are launched (the\n"
    "block map λ3). --store-triplets also writes each triplet's energy.\n";

const char* kAtmFormula =
    "E = nu (1 + 3 cos g1 cos g2 cos g3) / (r12 r23 r31)^3 per triplet i<j<k, counted when "
    "r12, r23, r31 <= cutoff and r12 r23 r31 <= cutoff_triple^3 (LAMMPS pair_style atm)";
const char* kSumsText =
    "exact sums of the flagged chunks (resume state): row p < n the energy of point p times 3, "
    "rows n+3p+x the force component x on point p, row 4n the total energy; each row the "
    "integer sum_i limb[i] 2^(32 i - 1074), limbs 0..67 in [0, 2^32), the last signed";

// A chunk holds at least one layer of tiles, and a point's exact sums take
// one addition per tile of the chunk that holds it: up to m²/2 for m = n/32
// blocks, which must stay below the limbs' 2^31 additions of carry room
// (m < 65536). 2,000,000 points keep that (and C(n,3) < 2^62).
constexpr index_t kMaxTripletPoints = 2000000;

// Triplet chunks buffer no values unless --store-triplets: each carries the
// exact sums of its reductions (2.2 kB per point) to the host, so there are
// few: 1/64 of the triplets (at least a layer), at most 2^43 (about 30 s of
// one GPU), so a stop signal is honoured within a chunk.
index_t triplet_chunk_elements(index_t total) {
  return std::min<index_t>(index_t(1) << 43, std::max<index_t>(1, total / 64));
}

// --store-triplets writes C(n,3) values: refused above --store-limit-gb,
// so a forgotten option never fills a file system.
template <typename T>
void triplet_store_fits(const CommandOptions& o, index_t n, const std::string& source) {
  if (!o.triplet.store_triplets) return;
  const double bytes = double(mapping::triplet_count(n)) * sizeof(T);
  const double limit = o.triplet.store_limit_gb * 1e9;
  if (limit > 0 && bytes > limit) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", o.triplet.store_limit_gb);
    throw UsageError("--store-triplets: n = " + std::to_string(n) + " (" + source + ") gives " +
                     std::to_string(mapping::triplet_count(n)) + " triplet energies, " +
                     human_bytes(bytes) + ", above --store-limit-gb " + buf +
                     "; raise the limit (0: none) or leave out --store-triplets");
  }
}

// Coincident points have r = 0: their three-body energy is infinite.
// Checked in the compute precision (float32 may merge close points).
template <typename T>
void check_distinct(const std::vector<T>& x, index_t n, const std::string& source) {
  std::vector<index_t> order(n);
  for (index_t i = 0; i < n; ++i)
    order[i] = i;
  const auto key = [&](index_t i) { return std::make_tuple(x[3 * i], x[3 * i + 1], x[3 * i + 2]); };
  std::sort(order.begin(), order.end(), [&](index_t a, index_t b) { return key(a) < key(b); });
  for (index_t k = 1; k < n; ++k)
    if (key(order[k - 1]) == key(order[k])) {
      const index_t a = std::min(order[k - 1], order[k]), b = std::max(order[k - 1], order[k]);
      throw InputError("points " + std::to_string(a) + " and " + std::to_string(b) + " of '" +
                       source + "' coincide" + (sizeof(T) == 4 ? " (in float32)" : "") +
                       ": r = 0, where the three-body energy is infinite");
    }
}

// The triplets of one point set (no metric: euclidean), reduced into exact
// sums per point (TripletSink), their energies stored with --store-triplets.
template <typename T>
class Triplet final : public PairCommand<T> {
 public:
  using PairCommand<T>::PairCommand;

  void configure(Problem<T>& p) const override {
    const TripletOptions& t = this->options().triplet;
    p.domain = DomainKind::triplets;
    if (!t.store_triplets) p.epilogue = EpilogueKind::reduce;
    p.three_body.kernel = t.kernel;
    p.three_body.potential = t.potential;
  }
  void check_size(index_t n, index_t d, const std::string& source) const override {
    if (d != 3)
      throw InputError("input '" + source + "' has d = " + std::to_string(d) +
                       " features; triplet needs points in 3-D (d = 3)");
    if (n < 3)
      throw InputError("input '" + source + "' has " + std::to_string(n) + " point" +
                       (n == 1 ? "" : "s") + "; triplets need at least 3");
    if (n > kMaxTripletPoints)
      throw InputError("input '" + source + "' has " + std::to_string(n) +
                       " points; tdsolve triplet takes at most " +
                       std::to_string(kMaxTripletPoints) +
                       " (beyond, one chunk's exact sums could overflow their carry room)");
    checked_total(n, n, sizeof(T), source);
    triplet_store_fits<T>(this->options(), n, source);
  }
  // --store-triplets has its own bound (--store-limit-gb).
  index_t checked_total(index_t rows, index_t, index_t, const std::string& source) const override {
    return triplet_total(rows, source);
  }
  void prepare(Problem<T>& p, io::PointSet& a, io::PointSet*) const override { p.features = a.d; }
  void check_output(const Problem<T>& p, const io::PointSet& a, bool bench) const override {
    const index_t total = checked_total(p.rows, p.cols, sizeof(T), a.source);
    if (!bench)
      check_output_space(this->options().out.output,
                         (p.stores_values() ? double(total) * sizeof(T) : 0.0) +
                             double(triplet_sum_slots(p.rows)) * kExactLimbs * 8 +
                             double(p.rows) * 32);
  }
  void check_points(Problem<T>& p, const io::PointSet& a) const override {
    check_distinct(p.a, p.rows, a.source);
  }

  void identity(const Problem<T>&, const AddKey& add) const override {
    const TripletOptions& t = this->options().triplet;
    const AtmParams& atm = t.potential.atm;
    add("potential", "atm");
    add("nu", number_text(atm.nu));
    add("cutoff", atm.cutoff > 0 ? number_text(atm.cutoff) : "none");
    add("cutoff_triple", atm.cutoff_triple > 0 ? number_text(atm.cutoff_triple) : "none");
    add("store_triplets", t.store_triplets ? "yes" : "no");
  }

  void layout(io::ResultLayout& L, const Problem<T>& p,
              const mapping::ChunkPlan& plan) const override {
    using io::Attr;
    const AtmParams& atm = this->options().triplet.potential.atm;
    const std::string precision = precision_name<T>();
    const io::ValueType vt = value_type<T>();
    const double inf = std::numeric_limits<double>::infinity();
    const std::vector<Attr> a = {
        Attr{"n", std::uint64_t(p.rows)},
        Attr{"k", std::uint64_t(3)},
        Attr{"potential", std::string("atm")},
        Attr{"nu", atm.nu},
        Attr{"cutoff", atm.cutoff > 0 ? atm.cutoff : inf},
        Attr{"cutoff_triple", atm.cutoff_triple > 0 ? atm.cutoff_triple : inf},
        Attr{"triplets", std::uint64_t(plan.total())},
        Attr{"precision", precision},
        Attr{"block", std::uint64_t(p.rho)},
        Attr{"formula", std::string(kAtmFormula)}};
    if (p.stores_values()) {
      L.result = {"triplet_energy",
                  vt,
                  {plan.total()},
                  {Attr{"n", std::uint64_t(p.rows)}, Attr{"k", std::uint64_t(3)},
                   Attr{"layout", std::string("combinations")}, Attr{"precision", precision}},
                  {}};
    } else {
      L.result = {"", vt, {}, {}, {}};
    }
    L.extras.push_back({"energy", io::ValueType::f64, {}, a, {}});
    L.extras.push_back(
        {"energy_per_point",
         io::ValueType::f64,
         {p.rows},
         {Attr{"split", std::string("each triplet's energy / 3 to each of its points")}},
         {}});
    L.extras.push_back({"forces",
                        io::ValueType::f64,
                        {p.rows, 3},
                        {Attr{"definition", std::string("-dE/dx, the analytic gradient")}},
                        {}});
    L.extras.push_back({"progress/sums",
                        io::ValueType::i64,
                        {triplet_sum_slots(p.rows), index_t(kExactLimbs)},
                        {Attr{"what", std::string(kSumsText)}},
                        {}});
  }

  index_t chunk_bound(const Problem<T>& p) const override {
    if (p.epilogue == EpilogueKind::reduce) return triplet_chunk_elements(p.total());
    return PairCommand<T>::chunk_bound(p);
  }
  void print_before(const Problem<T>& p, const mapping::ChunkPlan& plan) const override {
    const double bytes = p.stores_values() ? double(plan.total()) * sizeof(T) : 0;
    const AtmParams& atm = p.three_body.potential.atm;
    std::printf(
        "tdsolve %s: %llu points in 3-D, %llu triplets%s, atm (nu %g, cutoff %s, "
        "cutoff-triple %s), %s, block %llu\n",
        this->name(), (unsigned long long)p.rows, (unsigned long long)plan.total(),
        bytes > 0 ? (" (" + human_bytes(bytes) + " stored)").c_str() : "", atm.nu,
        atm.cutoff > 0 ? number_text(atm.cutoff).c_str() : "none",
        atm.cutoff_triple > 0 ? number_text(atm.cutoff_triple).c_str() : "none",
        precision_name<T>(), (unsigned long long)p.rho);
  }
  std::unique_ptr<Sink<T>> make_sink(io::ResultWriter& w, MPI_Comm comm, const Problem<T>& p,
                                     const Existing& ex) override {
    return std::make_unique<TripletSink<T>>(w, comm, p, ex.sums);
  }
  bool checkpoints() const override { return true; }
  void print_after(const Problem<T>& p, index_t now, double total) const override {
    if (p.stores_values()) return PairCommand<T>::print_after(p, now, total);
    const char* what = element_name(p);
    std::printf("tdsolve %s: summed %llu %s in %s (%.3g %s/s", this->name(),
                (unsigned long long)now, what, human_seconds(total).c_str(), double(now) / total,
                what);
  }
};

class TripletCommand final : public PairCommandOf<Triplet> {
 public:
  TripletCommand()
      : PairCommandOf<Triplet>(
            {"triplet",
             "three-body (Axilrod-Teller-Muto) energy, per-point energies and forces of\nall "
             "triplets i<j<k of n points in 3-D, as LAMMPS pair_style atm",
             kUsage, "result file: /energy, /energy_per_point, /forces (and /triplet_energy)",
             /*store_points=*/true, /*second_set=*/false, /*spheres=*/false,
             cli::kChunks | cli::kMap | cli::kTriplets}) {}

 protected:
  void add_groups(cli::po::options_description& all) override {
    all.add(cli::triplet_group(o_.triplet, tc_, false));
  }
  void check_groups(const cli::po::variables_map&) override {
    cli::finish_triplet(o_.triplet, tc_);
  }

 private:
  cli::TripletChoices tc_;
};

}  // namespace

std::unique_ptr<Command> make_triplet_command() {
  return std::make_unique<TripletCommand>();
}

}  // namespace tdsolve
