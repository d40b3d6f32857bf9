// tdsolve triplet: a three-body energy (Axilrod-Teller-Muto, or the
// three-body term of Stillinger-Weber), per-point energies and forces over
// every triplet i<j<k of n points in 3-D; and the three-body options
// (solver/commands/triplet.hpp), which bench borrows. A potential's
// knowledge outside its evaluator (solver/potentials/) is here: its
// options and checks, its /energy attributes and formula, its identity
// keys and its words in the summary line.
#include "solver/commands/triplet.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "core/error.hpp"
#include "io/trajectory.hpp"
#include "mapping/simplex.hpp"
#include "solver/commands/frames.hpp"
#include "solver/commands/pairs.hpp"
#include "solver/commands/sinks.hpp"
#include "solver/exact_sum.hpp"
#include "solver/progress.hpp"

namespace tdsolve {

namespace po = cli::po;

namespace {

// Each potential's options, as named on the command line.
const std::vector<std::string> kAtmOptions = {"nu", "cutoff", "cutoff-triple", "types", "nu-types"};

// --nu-types A-B-C:NU,...: each unordered triple once (a triple is its
// three names sorted as text). UsageError for bad syntax or a repeat.
std::vector<NuTriple> parse_nu_types(const std::string& text) {
  std::vector<NuTriple> out;
  std::map<std::array<std::string, 3>, std::string> seen;
  for (const std::string& item : split_on(text, ',')) {
    const size_t colon = item.rfind(':');
    const std::vector<std::string> names =
        split_on(colon == std::string::npos ? item : item.substr(0, colon), '-');
    if (colon == std::string::npos || names.size() != 3 || names[0].empty() || names[1].empty() ||
        names[2].empty())
      throw UsageError(
          "--nu-types wants type triples and their nu, A-B-C:NU separated by "
          "commas (as LAMMPS pair_coeff A B C NU), got '" +
          item + "'");
    NuTriple t{names[0], names[1], names[2],
               cli::parse_finite(item.substr(colon + 1), "--nu-types " + item.substr(0, colon))};
    std::array<std::string, 3> key = {t.a, t.b, t.c};
    std::sort(key.begin(), key.end());
    const auto [at, fresh] = seen.emplace(key, item.substr(0, colon));
    if (!fresh)
      throw UsageError("--nu-types gives the type triple " + item.substr(0, colon) + " twice (as " +
                       at->second + ": the order of the types does not matter)");
    out.push_back(t);
  }
  return out;
}
const std::vector<std::string> kSwOptions = {"epsilon", "sigma", "a",
                                             "lambda",  "gamma", "costheta0"};

}  // namespace

po::options_description triplet_group(TripletOptions& t, TripletChoices& c, bool bench) {
  po::options_description g(
      "Three-body potential (LAMMPS pair_style atm, or pair_style sw's three-body term)");
  if (!bench)
    g.add_options()(
        "potential", po::value(&c.potential)->default_value("atm")->value_name("P"),
        "atm (Axilrod-Teller-Muto): E = nu (1 + 3 cos g1 cos g2 cos g3) / (r12 r23 r31)^3 per "
        "triplet; sw (Stillinger-Weber's three-body term, LAMMPS pair_style sw with A = 0): per "
        "triplet, for each of its points i whose two sides r_ij, r_ik are < a sigma, lambda "
        "epsilon (cos theta_jik - costheta0)^2 exp(gamma sigma / (r_ij - a sigma)) exp(gamma "
        "sigma / (r_ik - a sigma))");
  AtmParams& atm = t.potential.atm;
  g.add_options()("nu", po::value(&atm.nu)->default_value(1.0)->value_name("NU"),
                  "atm: the strength nu (LAMMPS pair_coeff * * * NU), finite")(
      "cutoff", po::value(&c.cutoff)->value_name("RC"),
      "atm: count a triplet only when each of its 3 distances is <= RC (LAMMPS cutoff; default: "
      "none)")("cutoff-triple", po::value(&c.cutoff_triple)->value_name("RT"),
               "atm: and only when r12 r23 r31 <= RT^3 (LAMMPS cutoff_triple; default: none)");
  if (!bench)
    g.add_options()("types", po::value(&t.types)->value_name("SRC"),
                    "atm with --nu-types: each point's type, a column of the --input trajectory "
                    "(a LAMMPS dump's `type`), FILE.h5:/dataset or a text file of labels, one per "
                    "point")("nu-types", po::value(&c.nu_types)->value_name("A-B-C:NU,..."),
                             "atm: nu per unordered type triple of --types instead of one --nu "
                             "(LAMMPS pair_coeff A B C NU); every triple of the types needs one");
  // sw: the columns of a LAMMPS .sw file, defaults its Si.sw.
  SwParams& sw = t.potential.sw;
  const auto sw_value = [](double* v, const char* name, const char* value_name) {
    return po::value(v)->default_value(*v, cli::option_text(name, *v))->value_name(value_name);
  };
  g.add_options()("epsilon", sw_value(&sw.epsilon, "epsilon", "E"),
                  "sw: the energy scale epsilon (>= 0)");
  g.add_options()("sigma", sw_value(&sw.sigma, "sigma", "S"), "sw: the length scale sigma (> 0)");
  g.add_options()("a", sw_value(&sw.a, "a", "A"),
                  "sw: the cutoff a sigma, in units of sigma (> 0)");
  g.add_options()("lambda", sw_value(&sw.lambda, "lambda", "L"),
                  "sw: the three-body strength lambda (>= 0)");
  g.add_options()("gamma", sw_value(&sw.gamma, "gamma", "G"),
                  "sw: gamma, the decay of exp(gamma sigma / (r - a sigma)) (>= 0)");
  g.add_options()("costheta0", sw_value(&sw.costheta0, "costheta0", "C"),
                  "sw: costheta0, the cosine of the ideal angle");
  if (!bench)
    g.add_options()("store-triplets", po::bool_switch(&t.store_triplets),
                    "also store every triplet's energy in /triplet_energy, C(n,3) values in "
                    "itertools.combinations order")(
        "store-limit-gb", po::value(&t.store_limit_gb)->default_value(16)->value_name("GB"),
        "refuse --store-triplets above this many GB (0: no limit)");
  return g;
}

// c.potential: atm or sw (the command's --potential, bench's --problem).
void finish_triplet(TripletOptions& t, TripletChoices& c, const po::variables_map& vm) {
  cli::check_choice("--potential", c.potential, {"atm", "sw"});
  const bool sw = c.potential == "sw";
  t.potential.kind = sw ? Potential::sw : Potential::atm;
  const std::vector<std::string>& own = sw ? kSwOptions : kAtmOptions;
  const std::vector<std::string>& other = sw ? kAtmOptions : kSwOptions;
  for (const std::string& o : other)
    if (vm.count(o) && !vm[o].defaulted()) {
      std::string list;
      for (const std::string& x : own)
        list += " --" + x;
      throw UsageError("--" + o + " is a parameter of --potential " + (sw ? "atm" : "sw") +
                       "; --potential " + c.potential + " takes" + list);
    }
  c.unused = other;
  // --nu-types replaces --nu: the effective options (a config) leave it out.
  if (!sw && !c.nu_types.empty()) c.unused.push_back("nu");
  if (sw) {
    const SwParams& p = t.potential.sw;
    const std::pair<const char*, double> values[] = {
        {"epsilon", p.epsilon}, {"sigma", p.sigma}, {"a", p.a},
        {"lambda", p.lambda},   {"gamma", p.gamma}, {"costheta0", p.costheta0}};
    for (const auto& [name, v] : values)
      if (!std::isfinite(v))
        throw UsageError(std::string("--") + name + " must be a finite number");
    for (const auto& [name, v] : values)
      if (v < 0 && std::string(name) != "costheta0")
        throw UsageError(std::string("--") + name + " must not be negative (as in LAMMPS), got " +
                         cli::option_text(name, v));
    if (!(p.sigma > 0) || !(p.a > 0))
      throw UsageError(std::string(p.sigma > 0 ? "--a" : "--sigma") +
                       " must be positive: the cutoff is a sigma");
    const double cut = p.sigma * p.a;
    if (!std::isfinite(cut * cut) || !std::isfinite(p.sigma * p.gamma) ||
        !std::isfinite(p.lambda * p.epsilon))
      throw UsageError(
          "--potential sw: (a sigma)^2, gamma sigma and lambda epsilon must be finite");
  } else {
    AtmParams& atm = t.potential.atm;
    if (!std::isfinite(atm.nu)) throw UsageError("--nu must be a finite number");
    if (!c.nu_types.empty()) {
      if (vm.count("nu") && !vm["nu"].defaulted())
        throw UsageError(
            "--nu and --nu-types are exclusive: one nu for every triplet, or one "
            "per type triple");
      if (t.types.empty()) throw UsageError("--nu-types needs --types SRC: each point's type");
      t.nu_types = parse_nu_types(c.nu_types);
    } else if (!t.types.empty()) {
      throw UsageError("--types is read for --nu-types A-B-C:NU,...: give both (or neither)");
    }
    if (!c.cutoff.empty()) {
      atm.cutoff = cli::parse_finite(c.cutoff, "--cutoff");
      if (!(atm.cutoff > 0)) throw UsageError("--cutoff must be positive, got '" + c.cutoff + "'");
    }
    if (!c.cutoff_triple.empty()) {
      atm.cutoff_triple = cli::parse_finite(c.cutoff_triple, "--cutoff-triple");
      if (!(atm.cutoff_triple > 0))
        throw UsageError("--cutoff-triple must be positive, got '" + c.cutoff_triple + "'");
    }
  }
  if (!(t.store_limit_gb >= 0 && std::isfinite(t.store_limit_gb)))
    throw UsageError("--store-limit-gb must be 0 (no limit) or a positive number of GB");
}

namespace {

// A triplet's three minimum-image differences close (v12 + v23 + v31 = 0,
// one cluster as LAMMPS's ghost atoms give it) when the cutoff is small
// against the cell: ATM's three sides below RC sum to a lattice vector
// shorter than 3 RC, none if 3 RC <= the shortest width; SW's opposite side
// is below 2 aσ, the only image that short if 2 aσ <= half the width.
// `where` names the box ("" : --box, a UsageError; else a trajectory
// frame's cell, an InputError that says how to do without it).
void check_triplet_box(const TripletOptions& t, const BoxOptions& box,
                       const std::string& where = "") {
  if (box.dims != 3)
    throw UsageError("--box wants lx,ly,lz for triplets (3-D), got " + std::to_string(box.dims) +
                     " length" + (box.dims == 1 ? "" : "s"));
  const PotentialSpec& pot = t.potential;
  const double w = 2 * box.half_width();
  const std::string of = where.empty() ? "the --box" : where;
  const auto refuse = [&](const std::string& why) {
    if (where.empty()) throw UsageError(why);
    throw InputError(why + " (give --box none to sum without the input's cell)");
  };
  if (pot.kind == Potential::sw) {
    const double cut = pot.sw.sigma * pot.sw.a;
    if (4 * cut > w)
      refuse("--potential sw: a sigma = " + number_text(cut) +
             " is more than a quarter of the shortest width (" + number_text(w) + ") of " + of +
             ": a triplet could wrap around the box");
  } else {
    if (!(pot.atm.cutoff > 0))
      refuse(where.empty() ? "--box needs --cutoff for atm: without one a periodic sum never ends"
                           : "atm in " + where +
                                 " (periodic) needs --cutoff: without one a periodic sum never "
                                 "ends");
    if (3 * pot.atm.cutoff > w)
      refuse("--cutoff " + number_text(pot.atm.cutoff) +
             " is more than a third of the shortest width (" + number_text(w) + ") of " + of +
             ": a triplet could wrap around the box");
  }
}

const char* kUsage =
    "Usage: tdsolve triplet (--input SRC | --generate SPEC) --output FILE.h5\n"
    "                       [--potential atm] [--nu NU | --types SRC --nu-types A-B-C:NU,...]\n"
    "                       [--cutoff RC] [--cutoff-triple RT]\n"
    "                       [--store-triplets] [options]\n"
    "       tdsolve triplet ... --potential sw [--epsilon E] [--sigma S] [--a A] [--lambda L]\n"
    "                       [--gamma G] [--costheta0 C] [--store-triplets] [options]\n"
    "       (either with [--box LX,LY,LZ [--tilt XY,XZ,YZ] | --box none]: a periodic box,\n"
    "       by default a trajectory frame's periodic cell; and --frames START:STOP[:STEP])\n"
    "\n"
    "Sums a three-body energy over every triplet i<j<k of n points in 3-D: the\n"
    "Axilrod-Teller-Muto potential (--potential atm, the default), as LAMMPS pair_style\n"
    "atm with the same nu (or, with --nu-types, pair_coeff I J K nu per type triple),\n"
    "cutoff and cutoff_triple; or the three-body term of the\n"
    "Stillinger-Weber potential (--potential sw), as LAMMPS pair_style sw with the same\n"
    "parameters (the columns of its .sw file; defaults: LAMMPS's Si.sw) and A = 0, no\n"
    "two-body term. Each potential refuses the other's options. Writes\n"
    "/energy (the total), /energy_per_point (each triplet's energy split equally among\n"
    "its points) and /forces (n x 3, the analytic -dE/dx), all float64. The sums are\n"
    "exact before the one final rounding, so the file is the same for any rank count,\n"
    "chunk size or thread schedule. Only the tetrahedron's tiles are launched (the\n"
    "block map λ3). --store-triplets also writes each triplet's energy. In a periodic\n"
    "--box every pair's difference is its minimum image, and a cutoff short enough\n"
    "(atm: a third of the cell's shortest width, sw: a quarter) makes each triplet one\n"
    "cluster, as LAMMPS's ghost atoms give it. --frames sums a trajectory's frames in one\n"
    "run, each in its own cell: /frame_energy holds each frame's energy, /energy,\n"
    "/energy_per_point and /forces their means.\n";

const char* kAtmFormula =
    "E = nu (1 + 3 cos g1 cos g2 cos g3) / (r12 r23 r31)^3 per triplet i<j<k, counted when "
    "r12, r23, r31 <= cutoff and r12 r23 r31 <= cutoff_triple^3 (LAMMPS pair_style atm)";
const char* kAtmTypedFormula =
    "E = nu(type_i, type_j, type_k) (1 + 3 cos g1 cos g2 cos g3) / (r12 r23 r31)^3 per triplet "
    "i<j<k, nu of the unordered type triple (nu_types), counted when r12, r23, r31 <= cutoff and "
    "r12 r23 r31 <= cutoff_triple^3 (LAMMPS pair_style atm, pair_coeff I J K nu)";
const char* kSwFormula =
    "E = sum over the points i of triplet {i, j, k} with r_ij < a sigma and r_ik < a sigma of "
    "lambda epsilon (cos theta_jik - costheta0)^2 exp(gamma sigma / (r_ij - a sigma)) "
    "exp(gamma sigma / (r_ik - a sigma)) (the three-body term of LAMMPS pair_style sw; no "
    "two-body term: A = 0)";
// The sw parameters as the file and the job identity name them (the columns
// of a LAMMPS .sw file), in that order.
std::vector<std::pair<std::string, double>> sw_parameters(const SwParams& p) {
  return {{"epsilon", p.epsilon}, {"sigma", p.sigma}, {"a", p.a},
          {"lambda", p.lambda},   {"gamma", p.gamma}, {"costheta0", p.costheta0}};
}

// The summary line's words for the potential (nu_types: a typed ATM's
// table as text).
std::string potential_summary(const PotentialSpec& pot, const std::string& nu_types) {
  if (pot.kind == Potential::sw) {
    std::string s = "sw (";
    for (const auto& [k, v] : sw_parameters(pot.sw))
      s += (s.size() > 4 ? ", " : "") + k + " " + cli::option_text(k, v);
    return s + ")";
  }
  char nu[32];
  std::snprintf(nu, sizeof nu, "%g", pot.atm.nu);
  const std::string strength =
      pot.atm.types > 0 ? "nu per type triple " + nu_types : std::string("nu ") + nu;
  return "atm (" + strength + ", cutoff " +
         (pot.atm.cutoff > 0 ? number_text(pot.atm.cutoff) : "none") + ", cutoff-triple " +
         (pot.atm.cutoff_triple > 0 ? number_text(pot.atm.cutoff_triple) : "none") + ")";
}
const char* kOverFrames =
    "a run over frames (/frames): /energy, /energy_per_point and /forces are the means over its "
    "frames (the exact sums over every frame, divided by their number), /frame_energy each "
    "frame's total";
const char* kSumsText =
    "exact sums of the flagged chunks (resume state): row p < n the energy of point p times 3, "
    "rows n+3p+x the force component x on point p, row 4n the total energy; each row the "
    "integer sum_c sums[row, c] 2^(32 (first_limb + c) - 1074), every column but the last in "
    "[0, 2^32), the last signed";

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
void check_distinct(const std::vector<T>& x, index_t n, const std::string& source,
                    const epilogue::Cell3<T>& cell) {
  std::vector<index_t> order(n);
  for (index_t i = 0; i < n; ++i)
    order[i] = i;
  // In a periodic box a point and its image a cell vector away are the
  // same point: compare the points' own minimum images (the tiles' reduction).
  std::vector<T> w(x.begin(), x.begin() + 3 * n);
  if (cell.kind)
    for (index_t i = 0; i < n; ++i)
      cell.image(w[3 * i], w[3 * i + 1], w[3 * i + 2]);
  const auto key = [&](index_t i) { return std::make_tuple(w[3 * i], w[3 * i + 1], w[3 * i + 2]); };
  std::sort(order.begin(), order.end(), [&](index_t a, index_t b) { return key(a) < key(b); });
  for (index_t k = 1; k < n; ++k)
    if (key(order[k - 1]) == key(order[k])) {
      const index_t a = std::min(order[k - 1], order[k]), b = std::max(order[k - 1], order[k]);
      throw InputError("points " + std::to_string(a) + " and " + std::to_string(b) + " of '" +
                       source + "' coincide" + (sizeof(T) == 4 ? " (in float32)" : "") +
                       (cell.kind ? " in the periodic box" : "") +
                       ": r = 0, where the three-body energy is infinite");
    }
}

// The triplets of one point set (no metric: euclidean), reduced into exact
// sums per point (TripletSink), their energies stored with --store-triplets.
template <typename T>
class Triplet final : public PairCommand<T> {
 public:
  Triplet(const char* name, const CommandOptions& o)
      : PairCommand<T>(name, o), box_(o.box), frames_("triplet --frames sums") {}

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
    set_problem_box(&p, box_);  // as complete() sets it
    check_distinct(p.a, p.rows, a.source, p.cell3());
  }
  // A trajectory frame's periodic cell is the box when none is given.
  bool takes_cell() const override { return true; }
  // Rank 0: the box (--box, or the first frame's cell, vetted against the
  // potential's reach), a run's frames (each later frame in its own cell)
  // and, with --nu-types, the types (before any file exists) and the ν
  // table (a trajectory's types are its first frame's).
  void take_input(io::PointSet& a) override {
    const CommandOptions& o = this->options();
    if (!frames_.first(a, mapping::triplet_count(a.n))) {  // a later frame: checked before
      frames_.next_cell(a, &box_);
      return;
    }
    const FrameRun::CellCheck reach = [&](const BoxOptions& b, const std::string& where) {
      check_triplet_box(o.triplet, b, where);
    };
    frames_.take_cell(a, &box_, o.triplet.input_box, "", o.run.quiet, reach);
    frames_.check(a.n, o.in, box_, o.triplet.input_box, reach);
    if (!o.triplet.nu_types.empty()) take_types(a);
  }
  void broadcast(MPI_Comm comm) override {
    bcast_bytes(comm, &box_, sizeof box_);
    frames_.broadcast(comm);
    bcast_vector(comm, &types_);
    bcast_vector(comm, &nu_);
    bcast_strings(comm, &type_names_);
  }
  index_t frame_count() const override { return frames_.count(); }
  io::PointSet read_frame(index_t q) override { return frames_.read(q, this->options().in); }
  // --box: the pairs' differences minimum-image (the tiles' Cell3); typed
  // ATM: the points' types (input order: apply_cull permutes them) and ν.
  void complete(Problem<T>& p) const override {
    set_problem_box(&p, box_);
    if (type_names_.empty()) return;
    p.three_body.potential.atm.types = static_cast<int>(type_names_.size());
    p.three_body.types = types_;
    p.three_body.nu = nu_;
  }

  void identity(const Problem<T>&, const AddKey& add) const override {
    const TripletOptions& t = this->options().triplet;
    const PotentialSpec& pot = t.potential;
    add("potential", potential_name(pot.kind));
    if (pot.kind == Potential::sw) {
      for (const auto& [k, v] : sw_parameters(pot.sw))
        add(k, number_text(v));
    } else {
      if (type_names_.empty()) {
        add("nu", number_text(pot.atm.nu));
      } else {
        add("types", t.types + " (" + joined(type_names_, ", ") + ")");
        add("nu_types", nu_types_text(true));
      }
      add("cutoff", pot.atm.cutoff > 0 ? number_text(pot.atm.cutoff) : "none");
      add("cutoff_triple", pot.atm.cutoff_triple > 0 ? number_text(pot.atm.cutoff_triple) : "none");
    }
    add("store_triplets", t.store_triplets ? "yes" : "no");
    const BoxOptions& b = box_;
    if (b.dims > 0) add("box", box_text(b));
    if (b.triclinic) add("tilt", tilt_text(b));
    if (frames_.count()) add("frames", frames_.text());
  }

  void layout(io::ResultLayout& L, const Problem<T>& p,
              const mapping::ChunkPlan& plan) const override {
    using io::Attr;
    const PotentialSpec& pot = this->options().triplet.potential;
    const std::string precision = precision_name<T>();
    const io::ValueType vt = value_type<T>();
    const double inf = std::numeric_limits<double>::infinity();
    std::vector<Attr> a = {Attr{"n", std::uint64_t(p.rows)}, Attr{"k", std::uint64_t(3)},
                           Attr{"potential", std::string(potential_name(pot.kind))}};
    if (pot.kind == Potential::sw) {
      for (const auto& [k, v] : sw_parameters(pot.sw))
        a.push_back(Attr{k, v});
    } else {
      if (type_names_.empty()) {
        a.push_back(Attr{"nu", pot.atm.nu});
      } else {
        a.push_back(Attr{"nu_types", nu_types_text(false)});
        a.push_back(Attr{"type_names", joined(type_names_, ",")});
        a.push_back(Attr{"type_source", this->options().triplet.types});
      }
      a.push_back(Attr{"cutoff", pot.atm.cutoff > 0 ? pot.atm.cutoff : inf});
      a.push_back(Attr{"cutoff_triple", pot.atm.cutoff_triple > 0 ? pot.atm.cutoff_triple : inf});
    }
    const BoxOptions& b = box_;
    if (b.dims > 0) a.push_back(Attr{"box", box_text(b)});
    if (b.triclinic) a.push_back(Attr{"tilt", tilt_text(b)});
    const std::vector<index_t>& frames = frames_.frames();
    if (!frames.empty()) a.push_back(Attr{"frames", std::uint64_t(frames.size())});
    a.push_back(Attr{"triplets", std::uint64_t(mapping::triplet_count(p.rows))});
    a.push_back(Attr{"precision", precision});
    a.push_back(Attr{"block", std::uint64_t(p.rho)});
    a.push_back(Attr{"formula", std::string(pot.kind == Potential::sw ? kSwFormula
                                            : type_names_.empty()     ? kAtmFormula
                                                                      : kAtmTypedFormula)});
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
    if (!frames.empty()) a.push_back(Attr{"over_frames", std::string(kOverFrames)});
    L.extras.push_back({"energy", io::ValueType::f64, {}, a, {}});
    if (!frames.empty()) {
      L.extras.push_back({"frames",
                          io::ValueType::i64,
                          {frames.size()},
                          {},
                          std::vector<double>(frames.begin(), frames.end())});
      L.extras.push_back(
          {"frame_energy",
           io::ValueType::f64,
           {frames.size()},
           {Attr{"meaning", std::string("each frame's total energy, /frames[q]'s at q (NaN: a "
                                        "frame a stopped run has not summed)")}},
           {}});
    }
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
                        {Attr{"what", std::string(kSumsText)}, Attr{"first_limb", std::uint64_t(0)},
                         Attr{"limbs", std::uint64_t(0)}},
                        {},
                        true});
  }

  index_t chunk_bound(const Problem<T>& p) const override {
    if (p.epilogue != EpilogueKind::reduce) return PairCommand<T>::chunk_bound(p);
    // Every chunk clears, copies and adds the (4n + 1) × 69 limbs of the
    // sums: a culled chunk tests few triplets for that, so it gets at least
    // 16 a limb (n = 32768, ATM to 2.5 at density 1: 72 chunks took 1.2 s of
    // their 2 s in those; with this floor 10 chunks, 0.28 s).
    const index_t limbs = triplet_sum_slots(p.rows) * kExactLimbs;
    const index_t bound = triplet_chunk_elements(p.total());
    return p.culled ? std::max(bound, 16 * limbs) : bound;
  }
  // --cull: the triplets whose pairs are beyond the potential's cutoff are
  // never visited: ATM with --cutoff (all three pairs within it), SW (two
  // of the three: the sides of a term's vertex).
  bool cull_geometry(const Problem<T>& p, CullGeometry* g) const override {
    const TripletOptions& t = this->options().triplet;
    const PotentialSpec& pot = t.potential;
    if (t.store_triplets) {
      g->why_not = "--store-triplets writes every triplet's energy";
    } else if (p.three_body.kernel != TripletKernel::potential) {
      g->why_not = "no potential (--kernel dummy)";
    } else if (pot.kind == Potential::sw) {
      g->cutoff = pot.sw.sigma * pot.sw.a;
      g->triplet_rule = 2;
    } else if (pot.atm.cutoff > 0) {
      g->cutoff = pot.atm.cutoff;
      g->triplet_rule = 3;
    } else {
      g->why_not = "ATM without --cutoff counts every triplet";
    }
    return true;
  }
  void print_before(const Problem<T>& p, const mapping::ChunkPlan& plan) const override {
    const double bytes = p.stores_values() ? double(plan.total()) * sizeof(T) : 0;
    std::printf("tdsolve %s: %llu points in 3-D, %llu triplets%s, %s, %s, block %llu\n",
                this->name(), (unsigned long long)p.rows,
                (unsigned long long)mapping::triplet_count(p.rows),
                bytes > 0 ? (" (" + human_bytes(bytes) + " stored)").c_str() : "",
                potential_summary(p.three_body.potential, nu_types_text(false)).c_str(),
                precision_name<T>(), (unsigned long long)p.rho);
  }
  std::unique_ptr<Sink<T>> make_sink(io::ResultWriter& w, MPI_Comm comm, const Problem<T>& p,
                                     const Existing& ex) override {
    return std::make_unique<TripletSink<T>>(w, comm, p, ex.sums,
                                            ex.sums_width,  // culled: p.cull.order
                                            frames_.count(), &ex.frame_energy);
  }
  bool checkpoints() const override { return true; }
  void print_after(const Problem<T>& p, index_t now, double total) const override {
    if (p.stores_values()) return PairCommand<T>::print_after(p, now, total);
    const char* what = element_name(p);
    std::string of;
    if (frames_.count()) of = " of " + std::to_string(frames_.count()) + " frames";
    std::printf("tdsolve %s: summed %llu %s%s in %s (%.3g %s/s", this->name(),
                (unsigned long long)now, what, of.c_str(), human_seconds(total).c_str(),
                double(now) / total, what);
  }

 private:
  // Rank 0: the labels of --types for the points as read, their types (as
  // integers when all are, else as text), each point's code and the ν of
  // every type triple from --nu-types: InputError naming a type that is not
  // one of them or the first triple without a ν.
  void take_types(const io::PointSet& a) {
    const TripletOptions& t = this->options().triplet;
    const InputOptions& in = this->options().in;
    const std::vector<std::string> labels =
        io::read_labels(t.types, in.input, a.frame, a.n, "--types");
    io::LabelCodes types = io::code_labels(labels);
    type_names_ = std::move(types.names);
    types_ = std::move(types.code);
    std::map<std::string, std::int32_t> code;
    for (size_t k = 0; k < type_names_.size(); ++k)
      code[type_names_[k]] = static_cast<std::int32_t>(k);
    const std::string their =
        " (the types of --types " + t.types + ": " + joined(type_names_, ", ") + ")";
    std::map<std::array<std::int32_t, 3>, double> given;
    for (const NuTriple& x : t.nu_types) {
      std::array<std::int32_t, 3> key{};
      int k = 0;
      for (const std::string* name : {&x.a, &x.b, &x.c}) {
        const auto it = code.find(*name);
        if (it == code.end())
          throw InputError("--nu-types " + x.a + "-" + x.b + "-" + x.c + ": '" + *name +
                           "' is not a type" + their);
        key[k++] = it->second;
      }
      std::sort(key.begin(), key.end());
      given[key] = x.nu;
    }
    // Every triple of the types needs its ν (LAMMPS: "All pair coeffs are
    // not set"); the first missing one is found within given.size() + 1 steps.
    const std::int32_t m = static_cast<std::int32_t>(type_names_.size());
    for (std::int32_t x = 0; x < m; ++x)
      for (std::int32_t y = x; y < m; ++y)
        for (std::int32_t z = y; z < m; ++z)
          if (!given.count({x, y, z}))
            throw InputError("--nu-types gives no nu for the type triple " + type_names_[x] + "-" +
                             type_names_[y] + "-" + type_names_[z] +
                             "; every triple of the types needs one, as LAMMPS's pair_coeff I J "
                             "K" +
                             their);
    nu_.assign(static_cast<size_t>(m) * m * m, 0.0);
    for (const auto& [key, v] : given) {
      std::array<std::int32_t, 3> q = key;
      do {
        nu_[(static_cast<size_t>(q[0]) * m + q[1]) * m + q[2]] = v;
      } while (std::next_permutation(q.begin(), q.end()));
    }
  }
  // The ν table as text, A-B-C:NU for each unordered triple in the types'
  // order (exact: the identity's, %.17g; else the shortest text of each ν).
  std::string nu_types_text(bool exact) const {
    std::string s;
    const size_t m = type_names_.size();
    for (size_t x = 0; x < m; ++x)
      for (size_t y = x; y < m; ++y)
        for (size_t z = y; z < m; ++z) {
          const double v = nu_[(x * m + y) * m + z];
          s += (s.empty() ? "" : ",") + type_names_[x] + "-" + type_names_[y] + "-" +
               type_names_[z] + ":" + (exact ? number_text(v) : cli::option_text("nu", v));
        }
    return s;
  }

  BoxOptions box_;   // --box, or a trajectory's cell (a run over frames: the frame's)
  FrameRun frames_;  // triplet --frames: the input's frames it takes
  std::vector<std::string> type_names_;  // --nu-types: the types, in code order
  std::vector<std::int32_t> types_;      // each point's type code, input order
  std::vector<double> nu_;               // ν of types (x, y, z) at (x m + y) m + z
};

class TripletCommand final : public PairCommandOf<Triplet> {
 public:
  TripletCommand()
      : PairCommandOf<Triplet>(
            {"triplet",
             "three-body energy, per-point energies and forces of all triplets i<j<k of\nn "
             "points in 3-D, as LAMMPS pair_style atm (Axilrod-Teller-Muto) or the\nthree-body "
             "term of pair_style sw (Stillinger-Weber)",
             kUsage, "result file: /energy, /energy_per_point, /forces (and /triplet_energy)",
             /*store_points=*/true, /*second_set=*/false, /*spheres=*/false,
             cli::kChunks | cli::kMap | cli::kTriplets | cli::kCull}) {}

 protected:
  void add_groups(cli::po::options_description& all) override {
    all.add(triplet_group(o_.triplet, tc_, false));
    all.add(cli::box_group(box_, tilt_,
                           "a periodic box, lx,ly,lz (or a triclinic cell: --tilt, or the 9 "
                           "numbers of its vectors a, b, c, rows, a along x, b in the xy "
                           "plane): pair differences are minimum-image. atm needs --cutoff at "
                           "most a third of the cell's shortest width, sw a sigma at most a "
                           "quarter: then every counted triplet is one compact cluster. Without "
                           "--box, a trajectory frame's periodic cell is the box; --box none: no "
                           "box"));
    cli::po::options_description frames("Frames");
    frames.add_options()(
        "frames", cli::po::value(&o_.triplet.frames)->value_name("START:STOP[:STEP]"),
        "of a trajectory --input: sum these frames (Python's slice: 0:100, ::10, -50:) in one "
        "run, each in its own periodic cell: /frame_energy holds each frame's total energy, "
        "/energy, /energy_per_point and /forces the means over the frames. Resumes frame by "
        "frame");
    all.add(frames);
  }
  void check_groups(const cli::po::variables_map& vm) override {
    finish_triplet(o_.triplet, tc_, vm);
    TripletOptions& t = o_.triplet;
    if (cli::finish_box(box_, tilt_, Metric::euclidean, "", &o_.box, &t.input_box))
      check_triplet_box(t, o_.box);
    cli::finish_frames(t.frames, o_.in);
    if (!t.frames.empty() && t.store_triplets)
      throw UsageError(
          "--store-triplets writes one frame's triplet energies; --frames sums several (take "
          "one frame with --frame K)");
  }
  // The other potential's options: not in the effective options, so a
  // file's `options` attribute reads back as a config of this potential.
  std::vector<std::string> unused_options() const override { return tc_.unused; }

 private:
  TripletChoices tc_;
  std::string box_, tilt_;
};

}  // namespace

std::unique_ptr<Command> make_triplet_command() {
  return std::make_unique<TripletCommand>();
}

}  // namespace tdsolve
