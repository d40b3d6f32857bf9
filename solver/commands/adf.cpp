// tdsolve adf: the bond-angle distribution, as LAMMPS `compute adf` makes
// it (src/compute_adf.cpp): for every centre i and every unordered pair
// {j, k} of its neighbours within the ADF's cutoffs, the angle θ_jik,
// binned. The domain is the centres (block rows of them shared among the
// ranks as any domain's), each with its neighbours from a cell list over
// the outer cutoff, as LAMMPS's neighbour list gives them; the counts are
// exact integers, the same on any rank count and backend. Frames of a
// trajectory are summed in one run.
//
// (The triplet tetrahedron, culled to the tiles where two of a triplet's
// pairs may be within the cutoff, holds the same angles, but a 32³ tile of
// a liquid's first shell holds a few hundred of its 32768 triplets: at
// 32000 atoms and 1.5 σ it tested 6.6e10 triplets, 83 s on two cores,
// where its centres' pairs of neighbours are 2.3e6.)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <utility>

#include "core/error.hpp"
#include "io/trajectory.hpp"
#include "solver/commands/frames.hpp"
#include "solver/commands/pairs.hpp"
#include "solver/commands/sinks.hpp"
#include "solver/progress.hpp"

namespace tdsolve {

namespace {

namespace po = cli::po;

const char* kUsage =
    "Usage: tdsolve adf (--input SRC | --generate SPEC) --output FILE.h5 --bins N\n"
    "                   (--cutoff RC | --triples I-J-K:RJIN:RJOUT:RKIN:RKOUT,... [--types SRC])\n"
    "                   [--ordinate degree|radian|cosine] [--box LX,LY,LZ [--tilt XY,XZ,YZ]]\n"
    "                   [--frames START:STOP[:STEP] [--per-frame] | --frame K] [options]\n"
    "\n"
    "The angular distribution function of points in 3-D, as LAMMPS compute adf: for each\n"
    "centre i and each unordered pair {j, k} of its neighbours (j within the J cutoffs of i,\n"
    "k within the K cutoffs, both ends included), the angle theta_jik in N bins over\n"
    "[0, 180] degrees, [0, pi] or, as cosines, [-1, 1]. --cutoff RC: one ADF of every type,\n"
    "both legs in [0, RC]; --triples: one ADF per type triple I-J-K (types of --types, or *\n"
    "for every type) with its own inner and outer cutoffs, as LAMMPS's itype jtype ktype\n"
    "Rjinner Rjouter Rkinner Rkouter. /counts (int64) are exact, the same on any rank\n"
    "count; /pdf and /cumulative are LAMMPS's two columns. In a periodic box (--box, or a\n"
    "trajectory's cell) the legs are minimum-image; the outer cutoff must be at most half\n"
    "the box's shortest width. --frames sums the angles of several frames in one run.\n";

const char* kBinning =
    "LAMMPS compute adf: bin b = (int) x, x = acos(cos) bins / pi (degree, radian) or (cos + 1) "
    "/ (2 / bins) (cosine), cos = (d1 . d2) (1/|d1|) (1/|d2|) of the centre's legs d = x_centre "
    "- x_neighbour; an angle with b >= bins (theta = pi, cos = 1 exactly) is not binned but "
    "counted in /dropped";
const char* kConvention =
    "counts[..., b]: the angles theta_jik, each centre i with each unordered pair {j, k} of its "
    "neighbours that can be taken as (J neighbour, K neighbour) once, as LAMMPS compute adf's "
    "histogram, summed over the frames";
const char* kPdfFormula =
    "pdf[..., b] = counts[..., b] / (delta sum_b counts[..., b]), delta the bin width in the "
    "ordinate's unit (LAMMPS compute adf's column 2m+1, here of the counts of every frame)";
const char* kCumulativeFormula =
    "cumulative[..., b] = (counts[..., 0] + ... + counts[..., b]) / centres, centres the centre "
    "atoms counted over the frames (/centres; LAMMPS compute adf's column 2m+2)";

// --triples I-J-K:RJIN:RJOUT:RKIN:RKOUT,...: UsageError for bad syntax, a
// negative inner cutoff or one not below its outer (LAMMPS's checks).
std::vector<AdfTriple> parse_triples(const std::string& text) {
  std::vector<AdfTriple> out;
  for (const std::string& item : split_on(text, ',')) {
    const std::vector<std::string> parts = split_on(item, ':');
    const std::vector<std::string> names = split_on(parts[0], '-');
    if (parts.size() != 5 || names.size() != 3 || names[0].empty() || names[1].empty() ||
        names[2].empty())
      throw UsageError(
          "--triples wants I-J-K:RJIN:RJOUT:RKIN:RKOUT separated by commas (as LAMMPS compute "
          "adf's itype jtype ktype Rjinner Rjouter Rkinner Rkouter; a type or *), got '" +
          item + "'");
    AdfTriple t{names[0], names[1], names[2]};
    double* r[4] = {&t.rj_in, &t.rj_out, &t.rk_in, &t.rk_out};
    const char* what[4] = {"RJIN", "RJOUT", "RKIN", "RKOUT"};
    for (int q = 0; q < 4; ++q)
      *r[q] = cli::parse_finite(parts[q + 1], "--triples " + parts[0] + " " + what[q]);
    for (int leg = 0; leg < 2; ++leg)
      if (!(*r[2 * leg] >= 0) || !(*r[2 * leg] < *r[2 * leg + 1]))
        throw UsageError("--triples " + item + ": the " + (leg ? "K" : "J") +
                         " cutoffs want 0 <= inner < outer (as LAMMPS)");
    out.push_back(t);
  }
  if (out.size() > static_cast<size_t>(kMaxAdfs))
    throw UsageError("--triples gives " + std::to_string(out.size()) + " ADFs; at most " +
                     std::to_string(kMaxAdfs) + " in one run");
  return out;
}

std::string triple_name(const AdfTriple& t) {
  return t.i + "-" + t.j + "-" + t.k;
}
// The ADFs as the identity records them (%.17g) or the summary line shows.
std::string triples_text(const std::vector<AdfTriple>& v, bool exact) {
  std::string s;
  for (const AdfTriple& t : v) {
    s += (s.empty() ? "" : ",") + triple_name(t);
    for (double r : {t.rj_in, t.rj_out, t.rk_in, t.rk_out})
      s += ":" + (exact ? number_text(r) : cli::option_text("cutoff", r));
  }
  return s;
}

// The bin width and the first edge in the ordinate's unit, as LAMMPS's
// init(): degree π/N · 180/π, radian π/N, cosine 2/N from -1.
struct Ordinate {
  double delta = 0, x0 = 0;
};
Ordinate ordinate_of(const std::string& name, index_t bins) {
  const double pi = 3.14159265358979323846;  // MY_PI
  if (name == "cosine") return {2.0 / bins, -1.0};
  if (name == "radian") return {pi / bins, 0.0};
  return {pi / bins * (180.0 / pi), 0.0};
}

// Histograms buffer nothing: chunks of about 1/64 of the centres, so that
// progress moves, the ranks share the work and a stop is honoured between
// them, at most 2^20 (a few seconds of two cores at a liquid's first shell).
index_t adf_chunk_centres(index_t total) {
  return std::min<index_t>(index_t(1) << 20, std::max<index_t>(1, total / 64));
}

// The legs of a centre are minimum-image: certain when the outer cutoff is
// at most half the box's shortest width (each neighbour within it has one
// image within it, as LAMMPS's ghost atoms give it). "" when it is, else
// why not (`what`: the box's name).
std::string beyond_reach(const BoxOptions& box, double outer, const std::string& what) {
  if (box.dims == 0) return "";
  const double w = box.half_width();
  if (outer <= w) return "";
  return "the outer cutoff " + number_text(outer) + " is more than half the shortest width (" +
         number_text(w) + ") of " + what + ": a neighbour's minimum image is not certain there";
}

template <typename T>
class Adf final : public PairCommand<T> {
 public:
  Adf(const char* name, const CommandOptions& o)
      : PairCommand<T>(name, o), a_(o.adf), frames_("adf --frames takes") {}

  void configure(Problem<T>& p) const override {
    p.domain = DomainKind::centres;
    p.epilogue = EpilogueKind::histogram;
  }
  void check_size(index_t n, index_t d, const std::string& source) const override {
    if (d != 3)
      throw InputError("input '" + source + "' has d = " + std::to_string(d) +
                       " features; adf needs points in 3-D (d = 3)");
    if (n < 3)
      throw InputError("input '" + source + "' has " + std::to_string(n) + " point" +
                       (n == 1 ? "" : "s") + "; an angle needs at least 3");
    if (n >= (index_t(1) << 31))
      throw InputError("input '" + source + "' has " + std::to_string(n) +
                       " points; adf takes at most 2^31 - 1");
  }
  index_t checked_total(index_t rows, index_t, index_t, const std::string&) const override {
    return rows;
  }
  void prepare(Problem<T>& p, io::PointSet& a, io::PointSet*) const override { p.features = a.d; }
  void check_output(const Problem<T>& p, const io::PointSet& a, bool) const override {
    checked_total(p.rows, p.cols, sizeof(T), a.source);
    check_box_dims(a_.box.dims, a.d, a.source);
  }
  bool takes_cell() const override { return true; }
  void take_input(io::PointSet& a) override {
    if (!frames_.first(a, a.n)) {  // a later frame: checked before
      frames_.next_cell(a, &a_.box);
      return;
    }
    const FrameRun::CellCheck within = [&](const BoxOptions& b, const std::string& where) {
      if (const std::string why = beyond_reach(b, a_.outer(), where); !why.empty())
        throw InputError(why);
    };
    frames_.take_cell(a, &a_.box, a_.input_box, "", this->options().run.quiet, within);
    frames_.check(a.n, this->options().in, a_.box, a_.input_box, within);
    take_types(a);
  }
  void broadcast(MPI_Comm comm) override {
    bcast_bytes(comm, &a_.box, sizeof a_.box);
    frames_.broadcast(comm);
    bcast_vector(comm, &types_);
    bcast_vector(comm, &masks_);
    bcast_vector(comm, &cut2_);
    bcast_vector(comm, &centres_);
    bcast_strings(comm, &type_names_);
  }
  index_t frame_count() const override { return frames_.count(); }
  io::PointSet read_frame(index_t q) override { return frames_.read(q, this->options().in); }

  void complete(Problem<T>& p) const override {
    AdfSpec& s = p.adf;
    s.count = a_.triples.size();
    s.bins = a_.bins;
    s.ordinate = a_.ordinate == "cosine"   ? AdfOrdinate::cosine
                 : a_.ordinate == "radian" ? AdfOrdinate::radian
                                           : AdfOrdinate::degree;
    s.type = types_;
    s.masks = masks_;
    s.cut2 = cut2_;
    s.outer = a_.outer();
    for (int k = 0; k < 3; ++k)
      s.widths[k] = a_.box.dims == 3 ? a_.box.width(k) : 0.0;
    p.hist.bins = a_.bins;
    p.hist.rows = s.count;
    set_problem_box(&p, a_.box);
  }

  void identity(const Problem<T>&, const AddKey& add) const override {
    add("bins", std::to_string(a_.bins));
    add("ordinate", a_.ordinate);
    add("triples", triples_text(a_.triples, true));
    if (!a_.types.empty()) add("types", a_.types + " (" + joined(type_names_, ", ") + ")");
    add("box", a_.box.dims > 0 ? box_text(a_.box) : "none");
    if (a_.box.triclinic) add("tilt", tilt_text(a_.box));
    if (frames_.count()) add("frames", frames_.text());
    if (a_.per_frame) add("per_frame", "true");
  }

  void layout(io::ResultLayout& L, const Problem<T>& p, const mapping::ChunkPlan&) const override {
    using io::Attr;
    const index_t bins = a_.bins, M = a_.triples.size();
    // A value per ADF: a scalar for --cutoff's one, M of them with --triples.
    const std::vector<index_t> per_adf =
        a_.typed ? std::vector<index_t>{M} : std::vector<index_t>{};
    const std::vector<index_t>& frames = frames_.frames();
    const auto shape = [&](std::vector<index_t> lead) {
      if (a_.typed) lead.push_back(M);
      lead.push_back(bins);
      return lead;
    };
    const Ordinate o = ordinate_of(a_.ordinate, bins);
    std::vector<Attr> a = {Attr{"n", std::uint64_t(p.rows)},
                           Attr{"k", std::uint64_t(3)},
                           Attr{"precision", std::string(precision_name<T>())},
                           Attr{"bins", std::uint64_t(bins)},
                           Attr{"ordinate", a_.ordinate},
                           Attr{"delta", o.delta},
                           Attr{"triples", triples_text(a_.triples, false)},
                           Attr{"adfs", std::uint64_t(M)},
                           Attr{"binning", std::string(kBinning)},
                           Attr{"convention", std::string(kConvention)}};
    if (a_.box.dims > 0) a.push_back(Attr{"box", box_text(a_.box)});
    if (a_.box.triclinic) a.push_back(Attr{"tilt", tilt_text(a_.box)});
    if (!frames.empty()) a.push_back(Attr{"frames", std::uint64_t(frames.size())});
    if (!a_.types.empty()) {
      a.push_back(Attr{"types", std::uint64_t(type_names_.size())});
      a.push_back(Attr{"type_source", a_.types});
    }
    L.result = {"counts", io::ValueType::i64, shape({}), a, {}};
    // LAMMPS's first column, x0 + (b + 0.5) delta, and the edges x0 + b delta.
    std::vector<double> centres(bins), edges(bins + 1);
    for (index_t b = 0; b < bins; ++b)
      centres[b] = o.x0 + (double(b) + 0.5) * o.delta;
    for (index_t b = 0; b <= bins; ++b)
      edges[b] = o.x0 + double(b) * o.delta;
    L.coordinates.push_back(
        {"theta",
         io::ValueType::f64,
         {bins},
         {Attr{"meaning", "bin centres in " + a_.ordinate + "s (LAMMPS compute adf's column 1)"}},
         centres});
    L.extras.push_back({"edges", io::ValueType::f64, {bins + 1}, {}, edges});
    if (a_.typed) {
      io::DatasetSpec triple{"triple", io::ValueType::f64, {M}, {}, {}};
      for (const AdfTriple& t : a_.triples)
        triple.text.push_back(triple_name(t));
      L.coordinates.push_back(triple);
      io::DatasetSpec types{"types", io::ValueType::f64, {index_t(type_names_.size())}, {}, {}};
      types.text = type_names_;
      if (!type_names_.empty()) L.extras.push_back(types);
    }
    std::vector<double> cutoffs;
    for (const AdfTriple& t : a_.triples)
      for (double r : {t.rj_in, t.rj_out, t.rk_in, t.rk_out})
        cutoffs.push_back(r);
    std::vector<index_t> four = per_adf;
    four.push_back(4);
    L.extras.push_back(
        {"cutoffs",
         io::ValueType::f64,
         four,
         {Attr{"columns", std::string("Rjinner, Rjouter, Rkinner, Rkouter (LAMMPS's)")}},
         cutoffs});
    const index_t F = std::max<index_t>(1, frames.size());
    std::vector<double> centre_counts;
    for (index_t c : centres_)
      centre_counts.push_back(double(c * F));
    L.extras.push_back(
        {"centres",
         io::ValueType::i64,
         per_adf,
         {Attr{"meaning", std::string("centre atoms (type in I), times the frames")}},
         centre_counts});
    if (!frames.empty())
      L.extras.push_back({"frames",
                          io::ValueType::i64,
                          {frames.size()},
                          {},
                          std::vector<double>(frames.begin(), frames.end())});
    if (a_.per_frame)
      L.extras.push_back({"frame_counts", io::ValueType::i64, shape({frames.size()}), {}, {}});
    L.extras.push_back({"dropped",
                        io::ValueType::i64,
                        per_adf,
                        {Attr{"meaning", std::string("angles LAMMPS does not bin (theta = pi or "
                                                     "cos = 1 exactly, or a leg of length 0)")}},
                        {}});
    L.extras.push_back(
        {"pdf", io::ValueType::f64, shape({}), {Attr{"formula", std::string(kPdfFormula)}}, {}});
    L.extras.push_back({"cumulative",
                        io::ValueType::f64,
                        shape({}),
                        {Attr{"formula", std::string(kCumulativeFormula)}},
                        {}});
  }

  index_t chunk_bound(const Problem<T>& p) const override { return adf_chunk_centres(p.total()); }
  void print_before(const Problem<T>& p, const mapping::ChunkPlan&) const override {
    std::printf("tdsolve %s: %llu points in 3-D%s, %llu bin%s in %ss, %s, %s\n", this->name(),
                (unsigned long long)p.rows,
                frames_.count() ? (", " + std::to_string(frames_.count()) + " frames").c_str() : "",
                (unsigned long long)a_.bins, a_.bins == 1 ? "" : "s", a_.ordinate.c_str(),
                triples_text(a_.triples, false).c_str(), precision_name<T>());
  }
  std::unique_ptr<Sink<T>> make_sink(io::ResultWriter& w, MPI_Comm comm, const Problem<T>& p,
                                     const Existing& ex) override {
    HistOutputs out;
    out.dropped = true;
    out.per_frame = a_.per_frame;
    const index_t bins = a_.bins, F = std::max<index_t>(1, frames_.count());
    const Ordinate o = ordinate_of(a_.ordinate, bins);
    out.derive = [bins, F, o, centres = centres_](const std::vector<std::int64_t>& counts) {
      // LAMMPS's compute_array: pdf = hist (1 / delta / count), the running
      // sum of hist (1 / centres).
      const index_t M = centres.size();
      std::vector<double> pdf(M * bins), cumulative(M * bins);
      for (index_t m = 0; m < M; ++m) {
        double count = 0;
        for (index_t b = 0; b < bins; ++b)
          count += double(counts[m * bins + b]);
        const double norm1 = count > 0.0 ? 1.0 / o.delta / count : 0.0;
        const double c = double(centres[m] * F);
        const double norm2 = c > 0.0 ? 1.0 / c : 0.0;
        double running = 0;
        for (index_t b = 0; b < bins; ++b) {
          const double h = double(counts[m * bins + b]);
          pdf[m * bins + b] = h * norm1;
          running += h * norm2;
          cumulative[m * bins + b] = running;
        }
      }
      return std::vector<std::pair<std::string, std::vector<double>>>{
          {"pdf", std::move(pdf)}, {"cumulative", std::move(cumulative)}};
    };
    return std::make_unique<HistogramSink<T>>(w, comm, p, std::move(out), ex.slots, ex.all_done(),
                                              frames_.count(), &ex.frame_counts);
  }
  bool checkpoints() const override { return true; }
  void print_after(const Problem<T>& p, index_t now, double total) const override {
    (void)p;
    std::printf(
        "tdsolve %s: took %llu centres%s in %s (%.3g centres/s", this->name(),
        (unsigned long long)now,
        frames_.count() ? (" of " + std::to_string(frames_.count()) + " frames").c_str() : "",
        human_seconds(total).c_str(), double(now) / total);
  }

 private:
  // Rank 0, the first points: each point's type (--types; one type
  // without), each ADF's types as masks and the centres of each.
  void take_types(const io::PointSet& a) {
    const index_t n = a.n;
    std::vector<index_t> sizes = {n};
    if (!a_.types.empty()) {
      if (n >= (index_t(1) << 31))
        throw InputError("--types takes at most 2^31 - 1 points; '" + a.source + "' has " +
                         std::to_string(n));
      const std::vector<std::string> labels =
          io::read_labels(a_.types, this->options().in.input, a.frame, n, "--types");
      io::LabelCodes codes = io::code_labels(labels);
      type_names_ = std::move(codes.names);
      types_ = std::move(codes.code);
      sizes = std::move(codes.sizes);
    } else {
      types_.assign(n, 0);
    }
    const index_t types = sizes.size();
    std::map<std::string, index_t> code;
    for (index_t t = 0; t < type_names_.size(); ++t)
      code[type_names_[t]] = t;
    masks_.assign(3 * types, 0);
    cut2_.clear();
    centres_.assign(a_.triples.size(), 0);
    for (index_t m = 0; m < a_.triples.size(); ++m) {
      const AdfTriple& t = a_.triples[m];
      const std::string* names[3] = {&t.i, &t.j, &t.k};
      for (int s = 0; s < 3; ++s) {
        for (index_t x = 0; x < types; ++x) {
          if (*names[s] != "*") {
            const auto it = code.find(*names[s]);
            if (it == code.end())
              throw InputError("--triples " + triple_name(t) + ": '" + *names[s] +
                               "' is not a type of --types " + a_.types +
                               " (its types: " + joined(type_names_, ", ") + ")");
            if (it->second != x) continue;
          }
          masks_[3 * x + s] |= static_cast<std::uint16_t>(1u << m);
          if (s == 0) centres_[m] += sizes[x];
        }
      }
      // LAMMPS compares rsq with rcutinner * rcutinner: float64 squares.
      for (double r : {t.rj_in, t.rj_out, t.rk_in, t.rk_out})
        cut2_.push_back(r * r);
    }
  }

  AdfOptions a_;     // the options' (its box: a trajectory's cell where none is given)
  FrameRun frames_;  // --frames: the input's frames it takes
  std::vector<std::string> type_names_;  // --types: the types, in code order
  std::vector<std::int32_t> types_;      // each point's type code, input order
  std::vector<std::uint16_t> masks_;     // AdfSpec::masks
  std::vector<double> cut2_;             // AdfSpec::cut2
  std::vector<index_t> centres_;         // per ADF: points whose type is in I, a frame
};

class AdfCommand final : public PairCommandOf<Adf> {
 public:
  AdfCommand()
      : PairCommandOf<Adf>(
            {"adf", "angular distribution functions of points in 3-D, as LAMMPS compute adf",
             kUsage, "result file: /counts, /theta, /edges, /pdf, /cumulative, /centres, /dropped",
             /*store_points=*/false, /*second_set=*/false, /*spheres=*/false, cli::kCentres}) {}

 protected:
  void add_groups(po::options_description& all) override {
    AdfOptions& a = o_.adf;
    po::options_description g("Angle distribution (LAMMPS compute adf)");
    g.add_options()("bins", po::value(&a.bins)->value_name("N"),
                    "number of equal bins of the angle, 1 to 1000000 (required)")(
        "cutoff", po::value(&cutoff_)->value_name("RC"),
        "one ADF of every type: both neighbours within RC of the centre (r <= RC)")(
        "triples", po::value(&triples_)->value_name("I-J-K:RJIN:RJOUT:RKIN:RKOUT,..."),
        "one ADF per entry, as LAMMPS's itype jtype ktype Rjinner Rjouter Rkinner Rkouter: "
        "centres of type I, a J neighbour with Rjinner <= r <= Rjouter, a K neighbour likewise "
        "(a type of --types, or * for every type); at most 16")(
        "types", po::value(&a.types)->value_name("SRC"),
        "each point's type, for --triples: a column of the trajectory --input (a LAMMPS dump's "
        "`type`), FILE.h5:/dataset or a text file of labels, one per point")(
        "ordinate", po::value(&a.ordinate)->default_value("degree")->value_name("O"),
        "degree, radian or cosine: what is binned (LAMMPS's ordinate)")(
        "frames", po::value(&a.frames)->value_name("START:STOP[:STEP]"),
        "of a trajectory --input: sum the angles of these frames (Python's slice: 0:100, ::10, "
        "-50:) in one run, each frame in its own periodic cell (an NPT run's may differ), or all "
        "in --box. Resumes frame by frame")(
        "per-frame", po::bool_switch(&a.per_frame),
        "with --frames: also each frame's counts, /frame_counts (frames × bins, with --triples "
        "frames × ADFs × bins)");
    all.add(g);
    all.add(cli::box_group(box_, tilt_,
                           "a periodic box, lx,ly,lz (or a triclinic cell: --tilt, or the 9 "
                           "numbers of its vectors): the legs are minimum-image, the outer cutoff "
                           "at most half the cell's shortest width. Without --box, a trajectory "
                           "frame's periodic cell is the box; --box none: no box"));
  }
  void check_groups(const po::variables_map& vm) override {
    AdfOptions& a = o_.adf;
    if (!vm.count("bins")) throw UsageError("--bins N is required");
    if (a.bins < 1 || a.bins > 1000000) throw UsageError("--bins must be between 1 and 1000000");
    cli::check_choice("--ordinate", a.ordinate, {"degree", "radian", "cosine"});
    if (cutoff_.empty() == triples_.empty())
      throw UsageError(cutoff_.empty()
                           ? "give --cutoff RC (one ADF of every type) or --triples "
                             "I-J-K:RJIN:RJOUT:RKIN:RKOUT,... (one per type triple)"
                           : "--cutoff and --triples are two ways to give the ADFs' cutoffs: "
                             "give one");
    if (!cutoff_.empty()) {
      const double rc = cli::parse_finite(cutoff_, "--cutoff");
      if (!(rc > 0)) throw UsageError("--cutoff must be positive, got '" + cutoff_ + "'");
      a.triples = {AdfTriple{"*", "*", "*", 0.0, rc, 0.0, rc}};
    } else {
      a.triples = parse_triples(triples_);
      a.typed = true;
    }
    bool named = false;
    for (const AdfTriple& t : a.triples)
      for (const std::string* x : {&t.i, &t.j, &t.k})
        named = named || *x != "*";
    if (named && a.types.empty())
      throw UsageError("--triples names types: give --types SRC, each point's type");
    if (!named && !a.types.empty())
      throw UsageError("--types is read for --triples that name types (not only *)");
    cli::finish_frames(a.frames, o_.in);
    if (a.per_frame && a.frames.empty()) throw UsageError("--per-frame goes with --frames");
    if (cli::finish_box(box_, tilt_, Metric::euclidean, "", &a.box, &a.input_box)) {
      if (a.box.dims != 3)
        throw UsageError("--box wants lx,ly,lz for angles (3-D), got " +
                         std::to_string(a.box.dims) + " length" + (a.box.dims == 1 ? "" : "s"));
      if (const std::string why = beyond_reach(a.box, a.outer(), "--box"); !why.empty())
        throw UsageError(why);
    }
  }

 private:
  std::string cutoff_, triples_, box_, tilt_;
};

}  // namespace

std::unique_ptr<Command> make_adf_command() {
  return std::make_unique<AdfCommand>();
}

}  // namespace tdsolve
