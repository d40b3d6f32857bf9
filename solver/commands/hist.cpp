// tdsolve hist: the histogram of all pair distances (and the RDF in a
// periodic box), without storing a distance.
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <numeric>
#include <utility>

#include "io/trajectory.hpp"
#include "solver/commands/frames.hpp"
#include "solver/commands/pairs.hpp"
#include "solver/commands/sinks.hpp"
#include "solver/progress.hpp"

namespace tdsolve {

namespace {

const char* kUsage =
    "Usage: tdsolve hist (--input SRC | --generate SPEC) --bins B --range LO:HI --output FILE.h5\n"
    "                    [--box L1,...,Ld [--tilt XY,XZ,YZ]] [options]\n"
    "\n"
    "Counts the distances of all pairs i<j of n points in B equal bins over [LO, HI],\n"
    "without storing a distance: /counts (int64) equals numpy.histogram(d, B, (LO, HI))\n"
    "of the distances d in the run's precision; /underflow and /overflow count those\n"
    "outside. With --box, distances are minimum-image and /rdf is the radial distribution\n"
    "function as MDAnalysis InterRDF normalises it (a triclinic cell: --tilt, or --box with\n"
    "the cell's 9 numbers). --types gives one histogram per pair of point types (partial\n"
    "RDFs, in one pass), --exclude or --exclude-block leaves out pairs of one molecule.\n"
    "With --with B: the distances of every point of --input to every point of B (the\n"
    "M × K pairs, each once: numpy.histogram(cdist(A, B)), MDAnalysis InterRDF(A, B)).\n"
    "Same counts on any rank count.\n";

const char* kRdfFormula =
    "rdf[b] = counts[b] / ((4/3) pi (edges[b+1]^3 - edges[b]^3) n (n-1) / (2 volume)), "
    "as MDAnalysis InterRDF(g, g, exclusion_block=(1, 1)) for one frame";
const char* kRdfWithFormula =
    "rdf[b] = counts[b] / ((4/3) pi (edges[b+1]^3 - edges[b]^3) n with_n / volume), n the "
    "--input points, with_n the --with points: MDAnalysis InterRDF(A, B) for one frame";
const char* kRdfFramesFormula =
    "rdf[b] = counts[b] / (F (4/3) pi (edges[b+1]^3 - edges[b]^3) n (n-1) / (2 volume)), F the "
    "frames (/frames), volume the mean of the frames' cells (one fixed cell: its volume), as "
    "MDAnalysis InterRDF(g, g, exclusion_block=(1, 1)) over those frames";
const char* kConvention =
    "counts are of unordered pairs i < j, each once (MDAnalysis InterRDF(g, g)'s count holds "
    "each twice)";
const char* kWithConvention =
    "counts are of the pairs (a, b) of a point a of --input and a point b of --with, each once "
    "(n × with_n of them), as MDAnalysis InterRDF(A, B)'s count";
const char* kTypedConvention =
    "counts[p] are of the unordered pairs of type pair p = A-B (/pair): an A and a B once "
    "each, as MDAnalysis InterRDF(A, B)'s count, and for A-A each pair of two As once "
    "(InterRDF(A, A)'s count holds each twice)";
const char* kCentres = "bin centres, (edges[b] + edges[b+1]) / 2 (MDAnalysis InterRDF's bins)";
const char* kCumulativeFormula =
    "cumulative[..., b] = (sum of ordered counts over bins 0 .. b) / F, F the frames (1 without "
    "--frames), ordered counts being 2 counts for pairs of one type: MDAnalysis's cumulative "
    "count N(r) (InterRDF_s get_cdf, summed over its sites); divide by the first group's size "
    "for the coordination number";
const char* kBinning =
    "numpy.histogram: edges = numpy.linspace(range_lo, range_hi, bins + 1); bins half-open "
    "[edges[b], edges[b+1]), the last closed; distances below range_lo in /underflow, above "
    "range_hi in /overflow";

// Histogram chunks buffer nothing, so their size serves progress and
// balance only: about 1/256 of the pairs (at least a block row), at most
// 2^30. Like every plan, it depends on the problem alone.
index_t hist_chunk_pairs(index_t total) {
  return std::min<index_t>(index_t(1) << 30, std::max<index_t>(1, total / 256));
}

// /rdf's formula for --norm `norm` (grouped or not: pair_total is C(n,2)
// without --types, less the excluded pairs).
std::string rdf_formula(const std::string& norm, bool frames, bool plain, bool with) {
  if (norm == "rdf" && with) return kRdfWithFormula;
  if (norm == "rdf" && plain) return frames ? kRdfFramesFormula : kRdfFormula;
  if (norm == "rdf")
    return "rdf[..., b] = counts[..., b] / (F (4/3) pi (edges[b+1]^3 - edges[b]^3) pairs / "
           "volume), pairs the unordered pairs counted (/pair_total, else C(n,2) less the "
           "excluded), F the frames: MDAnalysis InterRDF(A, B, norm='rdf') with exclusions";
  if (norm == "density")
    return "rdf[..., b] = ordered counts / (F (4/3) pi (edges[b+1]^3 - edges[b]^3)), ordered "
           "counts being 2 counts for pairs of one type: MDAnalysis InterRDF norm='density'";
  return "rdf[..., b] = ordered counts / F, ordered counts being 2 counts for pairs of one type: "
         "MDAnalysis InterRDF norm='none'";
}

// What /rdf holds: --norm as given, else g(r) where there is a box ("": no
// /rdf).
std::string rdf_norm(const HistOptions& h) {
  if (!h.norm.empty()) return h.norm;
  return h.box.dims > 0 ? "rdf" : "";
}

// The unordered pairs a frame of a run without --types counts: C(n,2), or
// with --with (the rectangle of two sets) rows × cols; ordered: how many
// times InterRDF's count holds each (2 for pairs of one set, 1 for A-B).
struct PlainPairs {
  index_t pairs = 0;
  double ordered = 2;
};

// Rank 0, every frame binned: /rdf as MDAnalysis InterRDF's norm makes it
// of the (ordered) counts, and /cumulative, their running sum per frame
// (InterRDF_s's get_cdf summed over the sites). A histogram's ordered
// counts are twice its pairs where they are of one type; its ordered
// pairs (InterRDF's N) likewise, so g(r) is the same either way.
std::vector<std::pair<std::string, std::vector<double>>> normalise(
    const HistSpec& hist, PlainPairs plain, const std::string& norm, double volume,
    index_t frame_count, const std::vector<std::int64_t>& counts) {
  const index_t bins = hist.bins, H = hist.histograms();
  const HistGroups& g = hist.groups;
  const double frames = double(std::max<index_t>(frame_count, 1));
  const std::vector<double>& e = hist.edges;
  std::vector<double> rdf(norm.empty() ? 0 : H * bins, 0.0), cumulative(H * bins, 0.0);
  for (index_t r = 0; r < H; ++r) {
    const double ordered = g.count > 0 ? g.ordered[r] : plain.ordered;
    const double pairs = g.count > 0 ? double(g.pairs[r]) : double(plain.pairs);
    double running = 0;
    for (index_t b = 0; b < bins; ++b) {
      const double c = static_cast<double>(counts[r * bins + b]);
      running += ordered * c;
      cumulative[r * bins + b] = running / frames;
      if (norm.empty()) continue;
      const double shell = 4.0 / 3.0 * kPi * (e[b + 1] * e[b + 1] * e[b + 1] - e[b] * e[b] * e[b]);
      // MDAnalysis's count / norm, norm = F (× shell) (× N / volume).
      double v;
      if (norm == "rdf")
        v = c / (shell * (pairs / volume * frames));
      else
        v = ordered * c / (norm == "density" ? frames * shell : frames);
      rdf[r * bins + b] = v;
    }
  }
  std::vector<std::pair<std::string, std::vector<double>>> out;
  if (!norm.empty()) out.emplace_back("rdf", std::move(rdf));
  out.emplace_back("cumulative", std::move(cumulative));
  return out;
}

template <typename T>
class Hist final : public PairCommand<T> {
 public:
  Hist(const char* name, const CommandOptions& o)
      : PairCommand<T>(name, o),
        h_(o.hist),
        with_(!o.with.input.empty() || !o.with.generate.empty()),
        frames_("hist --frames bins") {}

  void configure(Problem<T>& p) const override {
    p.epilogue = EpilogueKind::histogram;
    if (with_) p.domain = DomainKind::rect;
  }
  bool second_set() const override { return with_; }
  std::pair<index_t, index_t> sizes(const Problem<T>& p) const override {
    return with_ ? with_sizes_ : PairCommand<T>::sizes(p);
  }
  // Pairs of one set need two points; --with's rectangle one a side (its
  // total is checked once both sets are read).
  void check_size(index_t n, index_t d, const std::string& source) const override {
    if (!with_) PairCommand<T>::check_size(n, d, source);
  }
  // No bound on the bytes: the file holds a few counts.
  index_t checked_total(index_t rows, index_t cols, index_t,
                        const std::string& source) const override {
    return with_ ? rect_total(rows, cols) : pair_total(rows, source);
  }
  // A trajectory frame's periodic cell is the box when none is given.
  bool takes_cell() const override { return true; }
  void take_input(io::PointSet& a) override {
    if (!frames_.first(a, mapping::pair_count(a.n))) {  // a later frame: checked before
      frames_.next_cell(a, &h_.box);
      return;
    }
    // A triclinic cell's minimum image is certain within half its shortest
    // width (an orthorhombic box's at any distance).
    const double reach = cull_cutoff(this->options().compute.metric, h_.hi);
    const FrameRun::CellCheck within = [&](const BoxOptions& b, const std::string& where) {
      if (b.triclinic && reach > b.half_width())
        throw InputError("--range HI " + number_text(h_.hi) +
                         " reaches past half the shortest width (" + number_text(b.half_width()) +
                         ") of " + where + ": a pair's minimum image is not certain there");
    };
    take_cell(a, within);
    if (h_.norm == "rdf" && h_.box.dims == 0)
      throw InputError(
          "--norm rdf normalises by the box's volume: give --box (or an input "
          "with a periodic cell), or --norm density or none");
    frames_.check(a.n, this->options().in, h_.box, h_.input_box, within);
    take_groups(a);
  }
  // Rank 0, the first points: the box is their frame's periodic cell where
  // no --box is given (and --box none does not turn it off).
  void take_cell(const io::PointSet& a, const FrameRun::CellCheck& within) {
    const Metric m = this->options().compute.metric;
    const bool triclinic = FrameRun::tilted(a.cell);
    const bool box_metric = m == Metric::euclidean || m == Metric::sqeuclidean ||
                            (!triclinic && (m == Metric::cityblock || m == Metric::chebyshev));
    std::string refuse;
    if (!box_metric || !this->options().compute.weights.empty())
      refuse = "'" + a.source + "' has a periodic " + (triclinic ? "triclinic " : "") +
               "cell, which --metric " + metric_name(m) +
               (this->options().compute.weights.empty() ? "" : " with --weights") +
               " does not take: give --box none to bin without it";
    frames_.take_cell(a, &h_.box, h_.input_box, refuse, this->options().run.quiet, within);
  }
  // Rank 0, --with: without --box the run's box is --input's cell (or
  // none), so a second set in a periodic cell must be in that one.
  void prepare(Problem<T>& p, io::PointSet& a, io::PointSet* b) const override {
    if (b && b->cell.present && b->cell.periodic && h_.input_box &&
        this->options().hist.box.dims == 0) {
      const BoxOptions cell = FrameRun::box_of(b->cell);
      if (!FrameRun::same_cell(cell, h_.box))
        throw InputError("--with '" + b->source + "' is in the periodic cell " +
                         FrameRun::cell_text(cell) + ", --input '" + a.source + "' in " +
                         (h_.box.dims > 0 ? FrameRun::cell_text(h_.box) : "none") +
                         ": give --box for the cell both are in (or --box none)");
    }
    PairCommand<T>::prepare(p, a, b);
  }
  void broadcast(MPI_Comm comm) override {
    bcast_bytes(comm, &h_.box, sizeof h_.box);
    frames_.broadcast(comm);
    HistGroups& g = groups_;
    bcast_u64(comm, &g.count);
    bcast_bytes(comm, &g.types, sizeof g.types);
    bcast_vector(comm, &g.type);
    bcast_vector(comm, &g.table);
    bcast_vector(comm, &g.molecule);
    bcast_vector(comm, &g.pairs);
    bcast_vector(comm, &g.ordered);
    bcast_vector(comm, &type_sizes_);
    bcast_u64(comm, &excluded_);
    bcast_strings(comm, &type_names_);
    bcast_strings(comm, &pair_names_);
  }
  index_t frame_count() const override { return frames_.count(); }
  io::PointSet read_frame(index_t q) override { return frames_.read(q, this->options().in); }
  void check_output(const Problem<T>& p, const io::PointSet& a, bool) const override {
    const HistOptions& h = h_;
    checked_total(p.rows, p.cols, sizeof(T), a.source);
    check_box_dims(h.box.dims, a.d, a.source);
  }
  void complete(Problem<T>& p) const override {
    with_sizes_ = {p.rows, p.cols};  // before a culled --with run makes them its union's
    const HistOptions& h = h_;
    p.hist = make_hist_spec(h.lo, h.hi, h.bins);
    p.hist.groups = groups_;  // input order (each frame's cull orders its copy)
    set_problem_box(&p, h.box);
  }

  void identity(const Problem<T>&, const AddKey& add) const override {
    const HistOptions& h = h_;
    char num[64];
    add("bins", std::to_string(h.bins));
    std::snprintf(num, sizeof num, "%.17g:%.17g", h.lo, h.hi);
    add("range", num);
    add("box", h.box.dims > 0 ? box_text(h.box) : "none");
    if (h.box.triclinic) add("tilt", tilt_text(h.box));
    if (frames_.count()) add("frames", frames_.text());
    if (h.per_frame) add("per_frame", "true");
    if (!h.types.empty())
      add("types",
          h.types + " (" + joined(type_names_, ",") + "), pairs " + joined(pair_names_, ","));
    if (!h.exclude.empty()) add("exclude", h.exclude);
    if (h.exclude_block > 0) add("exclude_block", std::to_string(h.exclude_block));
    if (!h.norm.empty()) add("norm", h.norm);
  }

  void layout(io::ResultLayout& L, const Problem<T>& p,
              const mapping::ChunkPlan& plan) const override {
    using io::Attr;
    const HistOptions& h = h_;
    const std::string precision = precision_name<T>(), metric = metric_name(p.metric);
    const std::vector<index_t>& frames = frames_.frames();
    const index_t F = std::max<index_t>(1, frames.size()), bins = p.hist.bins;
    // Partial histograms: one row per type pair, the pair its first axis.
    const bool typed = !h.types.empty();
    const index_t H = p.hist.histograms();
    const auto shape = [&](std::vector<index_t> lead) {
      if (typed) lead.push_back(H);
      lead.push_back(bins);
      return lead;
    };
    std::vector<Attr> a = {Attr{"n", std::uint64_t(sizes(p).first)},
                           Attr{"k", std::uint64_t(2)},
                           Attr{"metric", metric},
                           Attr{"precision", precision},
                           Attr{"features", std::uint64_t(p.features)},
                           Attr{"bins", std::uint64_t(bins)},
                           Attr{"range_lo", p.hist.lo},
                           Attr{"range_hi", p.hist.hi},
                           Attr{"pairs", std::uint64_t(counted_pairs(p) * F)},
                           Attr{"binning", std::string(kBinning)},
                           Attr{"convention", std::string(typed   ? kTypedConvention
                                                          : with_ ? kWithConvention
                                                                  : kConvention)}};
    if (with_) a.push_back(Attr{"with_n", std::uint64_t(sizes(p).second)});
    if (h.box.dims > 0) a.push_back(Attr{"box", box_text(h.box)});
    if (h.box.triclinic) a.push_back(Attr{"tilt", tilt_text(h.box)});
    if (!frames.empty()) a.push_back(Attr{"frames", std::uint64_t(frames.size())});
    if (typed) {
      a.push_back(Attr{"groups", std::uint64_t(H)});
      a.push_back(Attr{"types", std::uint64_t(type_names_.size())});
      a.push_back(Attr{"type_source", h.types});
    }
    if (h.exclude_block > 0 || !h.exclude.empty()) {
      a.push_back(Attr{"exclude",
                       h.exclude_block > 0
                           ? "blocks of " + std::to_string(h.exclude_block) + " points (i/N = j/N)"
                           : "molecules of " + h.exclude});
      a.push_back(Attr{"excluded", std::uint64_t(excluded_)});
    }
    L.result = {"counts", io::ValueType::i64, shape({}), a, {}};
    std::vector<double> centres(bins);
    for (index_t b = 0; b < bins; ++b)
      centres[b] = 0.5 * (p.hist.edges[b] + p.hist.edges[b + 1]);
    L.coordinates.push_back(
        {"r", io::ValueType::f64, {bins}, {Attr{"meaning", std::string(kCentres)}}, centres});
    L.extras.push_back({"edges", io::ValueType::f64, {bins + 1}, {}, p.hist.edges});
    if (typed) {
      io::DatasetSpec pair{"pair", io::ValueType::f64, {H}, {}, {}};
      pair.text = pair_names_;
      L.coordinates.push_back(pair);
      io::DatasetSpec types{"types", io::ValueType::f64, {index_t(type_names_.size())}, {}, {}};
      types.text = type_names_;
      L.extras.push_back(types);
      L.extras.push_back({"type_sizes",
                          io::ValueType::i64,
                          {index_t(type_sizes_.size())},
                          {},
                          std::vector<double>(type_sizes_.begin(), type_sizes_.end())});
      L.extras.push_back({"pair_total",
                          io::ValueType::i64,
                          {H},
                          {},
                          std::vector<double>(groups_.pairs.begin(), groups_.pairs.end())});
    }
    if (!frames.empty())
      L.extras.push_back({"frames",
                          io::ValueType::i64,
                          {frames.size()},
                          {},
                          std::vector<double>(frames.begin(), frames.end())});
    if (h.per_frame) {
      L.extras.push_back({"frame_counts", io::ValueType::i64, shape({frames.size()}), {}, {}});
    }
    const std::vector<index_t> per_row = typed ? std::vector<index_t>{H} : std::vector<index_t>{};
    L.extras.push_back({"underflow", io::ValueType::i64, per_row, {}, {}});
    L.extras.push_back({"overflow", io::ValueType::i64, per_row, {}, {}});
    const std::string norm = rdf_norm(h);
    if (!norm.empty()) {
      std::vector<Attr> ra = {
          Attr{"norm", norm},
          Attr{"formula", rdf_formula(norm, !frames.empty(), groups_.count == 0, with_)},
          Attr{"n", std::uint64_t(sizes(p).first)}};
      if (h.box.dims > 0) ra.push_back(Attr{"volume", frames_.volume(h.box)});
      L.extras.push_back({"rdf", io::ValueType::f64, shape({}), ra, {}});
    }
    L.extras.push_back({"cumulative",
                        io::ValueType::f64,
                        shape({}),
                        {Attr{"formula", std::string(kCumulativeFormula)}},
                        {}});
    add_metric_attrs(this->options(), p, &L);
  }

  // Pairs beyond the range's upper edge are overflow: the tiles that hold
  // only such pairs are never visited, their pairs counted there at the end.
  bool cull_geometry(const Problem<T>& p, CullGeometry* g) const override {
    g->cutoff = cull_cutoff(p.metric, p.hist.hi);
    return true;
  }
  index_t chunk_bound(const Problem<T>& p) const override {
    return culled_chunk_floor(p, this->options().compute, hist_chunk_pairs(p.total()));
  }
  std::unique_ptr<Sink<T>> make_sink(io::ResultWriter& w, MPI_Comm comm, const Problem<T>& p,
                                     const Existing& ex) override {
    HistOutputs out;
    out.per_frame = h_.per_frame;
    const index_t frames = frames_.count();
    const PlainPairs plain{counted_pairs(p), with_ ? 1.0 : 2.0};
    out.derive = [&hist = p.hist, plain, norm = rdf_norm(h_), volume = frames_.volume(h_.box),
                  frames](const std::vector<std::int64_t>& counts) {
      return normalise(hist, plain, norm, volume, frames, counts);
    };
    return std::make_unique<HistogramSink<T>>(w, comm, p, std::move(out), ex.slots, ex.all_done(),
                                              frames, &ex.frame_counts);
  }
  bool checkpoints() const override { return true; }
  void print_after(const Problem<T>& p, index_t now, double total) const override {
    const char* what = with_ ? "distances" : element_name(p);
    if (frames_.count()) {
      std::printf("tdsolve %s: binned %llu %s of %llu frames in %s (%.3g %s/s", this->name(),
                  (unsigned long long)now, what, (unsigned long long)frames_.count(),
                  human_seconds(total).c_str(), double(now) / total, what);
      return;
    }
    if (p.culled) {
      // The rest were never visited: they are beyond the range (overflow).
      std::printf(
          "tdsolve %s: binned %llu %s (%llu tested, the rest beyond the range) in %s "
          "(%.3g %s tested/s",
          this->name(), (unsigned long long)counted_pairs(p), what, (unsigned long long)now,
          human_seconds(total).c_str(), double(now) / total, what);
      return;
    }
    std::printf("tdsolve %s: binned %llu %s in %s (%.3g %s/s", this->name(),
                (unsigned long long)now, what, human_seconds(total).c_str(), double(now) / total,
                what);
  }

 private:
  // The unordered pairs of a frame the histograms count.
  index_t counted_pairs(const Problem<T>& p) const {
    if (with_) return sizes(p).first * sizes(p).second;
    if (groups_.count == 0) return mapping::pair_count(p.rows);
    return std::accumulate(groups_.pairs.begin(), groups_.pairs.end(), index_t(0));
  }

  // Rank 0, the first points: the partial histograms' labels (--types,
  // --exclude, --exclude-block) in input order, the type pairs' histograms
  // and the pairs each counts. A trajectory's labels are its first binned
  // frame's (atoms keep their types and molecules from frame to frame).
  void take_groups(const io::PointSet& a) {
    const HistOptions& h = h_;
    if (!h.grouped()) return;
    const InputOptions& in = this->options().in;
    const index_t n = a.n;
    if (n >= (index_t(1) << 31))
      throw InputError("--types and --exclude take at most 2^31 - 1 points; '" + a.source +
                       "' has " + std::to_string(n));
    HistGroups& g = groups_;
    g = HistGroups{};
    std::vector<std::array<std::int32_t, 2>> pairs;  // each histogram's types
    if (!h.types.empty()) {
      const std::vector<std::string> labels =
          io::read_labels(h.types, in.input, a.frame, n, "--types");
      io::LabelCodes types = io::code_labels(labels);
      type_names_ = std::move(types.names);
      g.type = std::move(types.code);
      type_sizes_ = std::move(types.sizes);
      g.types = static_cast<std::int32_t>(type_names_.size());
      std::map<std::string, std::int32_t> code;
      for (size_t t = 0; t < type_names_.size(); ++t)
        code[type_names_[t]] = static_cast<std::int32_t>(t);
      if (h.pairs.empty()) {
        for (std::int32_t x = 0; x < g.types; ++x)
          for (std::int32_t y = x; y < g.types; ++y)
            pairs.push_back({x, y});
      } else {
        for (const std::string& name : split_on(h.pairs, ',')) {
          const size_t dash = name.find('-');
          const std::string A = name.substr(0, dash),
                            B = dash == std::string::npos ? "" : name.substr(dash + 1);
          if (dash == std::string::npos || A.empty() || B.empty() ||
              B.find('-') != std::string::npos)
            throw UsageError("--pairs wants type pairs A-B separated by commas, got '" + name +
                             "'");
          for (const std::string& t : {A, B})
            if (!code.count(t))
              throw InputError("--pairs " + name + ": '" + t + "' is not a type of --types " +
                               h.types + " (its types: " + joined(type_names_, ",") + ")");
          std::array<std::int32_t, 2> q = {code[A], code[B]};
          if (q[0] > q[1]) std::swap(q[0], q[1]);
          if (std::find(pairs.begin(), pairs.end(), q) != pairs.end())
            throw UsageError("--pairs names the pair " + type_names_[q[0]] + "-" +
                             type_names_[q[1]] + " twice");
          pairs.push_back(q);
        }
      }
      g.table.assign(index_t(g.types) * g.types, -1);
      for (size_t k = 0; k < pairs.size(); ++k) {
        const auto [x, y] = pairs[k];
        g.table[x * g.types + y] = g.table[y * g.types + x] = static_cast<std::int32_t>(k);
        pair_names_.push_back(type_names_[x] + "-" + type_names_[y]);
      }
    } else {
      pairs.push_back({0, 0});
      type_sizes_ = {n};
    }
    g.count = pairs.size();
    for (const auto& q : pairs) {
      const index_t na = type_sizes_[q[0]], nb = type_sizes_[q[1]];
      const index_t within = q[0] == q[1] ? (na < 2 ? 0 : na * (na - 1) / 2) : na * nb;
      g.pairs.push_back(static_cast<std::int64_t>(within));
      g.ordered.push_back(q[0] == q[1] ? 2 : 1);
    }
    if (!h.exclude.empty()) {
      const std::vector<std::string> labels =
          io::read_labels(h.exclude, in.input, a.frame, n, "--exclude");
      g.molecule = io::code_labels(labels).code;
    } else if (h.exclude_block > 0) {
      g.molecule.resize(n);
      for (index_t i = 0; i < n; ++i)
        g.molecule[i] = static_cast<std::int32_t>(i / h.exclude_block);
    }
    if (!g.molecule.empty()) exclude_within_molecules(pairs);
  }
  // The pairs of one molecule leave each histogram: per molecule, the types
  // it holds, and for each pair of them the pairs of that histogram in it.
  void exclude_within_molecules(const std::vector<std::array<std::int32_t, 2>>& pairs) {
    HistGroups& g = groups_;
    const index_t n = g.molecule.size();
    std::vector<std::int32_t> by(n);
    std::iota(by.begin(), by.end(), 0);
    // (--exclude-block's molecules, and most files', are in order already.)
    if (!std::is_sorted(g.molecule.begin(), g.molecule.end()))
      std::stable_sort(by.begin(), by.end(), [&](std::int32_t x, std::int32_t y) {
        return g.molecule[x] < g.molecule[y];
      });
    std::vector<index_t> count(g.types, 0);
    std::vector<std::int32_t> present;
    excluded_ = 0;
    for (index_t s = 0; s < n;) {
      index_t e = s;
      present.clear();
      for (; e < n && g.molecule[by[e]] == g.molecule[by[s]]; ++e) {
        const std::int32_t t = g.type.empty() ? 0 : g.type[by[e]];
        if (count[t]++ == 0) present.push_back(t);
      }
      for (const std::int32_t x : present)
        for (const std::int32_t y : present) {
          if (y < x) continue;
          const std::int32_t k = g.table.empty() ? 0 : g.table[x * g.types + y];
          if (k < 0) continue;
          const index_t within = x == y ? count[x] * (count[x] - 1) / 2 : count[x] * count[y];
          g.pairs[k] -= static_cast<std::int64_t>(within);
          excluded_ += within;
        }
      for (const std::int32_t t : present)
        count[t] = 0;
      s = e;
    }
  }

  HistOptions h_;  // the options' (its box: a trajectory's cell where none is given)
  bool with_;      // --with: the pairs of --input's points with the second set's
  mutable std::pair<index_t, index_t> with_sizes_;  // --with: the two sets' points (complete())
  HistGroups groups_;                               // the partial histograms, labels in input order
  std::vector<std::string> type_names_, pair_names_;  // --types: the types, the histograms' pairs
  std::vector<index_t> type_sizes_;                   // points of each type
  index_t excluded_ = 0;  // pairs of one molecule left out of the histograms, a frame
  FrameRun frames_;       // hist --frames: the input's frames it takes
};

class HistCommand final : public PairCommandOf<Hist> {
 public:
  HistCommand()
      : PairCommandOf<Hist>(
            {"hist", "histogram of all pair distances (and the RDF in a periodic box); no matrix",
             kUsage, "result file: /counts, /edges, /underflow, /overflow (and /rdf)",
             /*store_points=*/false, /*second_set=*/true, /*spheres=*/false,
             cli::kMap | cli::kCull}) {}

 protected:
  bool second_set_optional() const override { return true; }
  void add_groups(cli::po::options_description& all) override {
    all.add(cli::hist_group(o_.hist, c_));
  }
  void check_groups(const cli::po::variables_map& vm) override {
    cli::finish_hist(o_.hist, c_, vm, o_.compute.metric, o_.compute.weights);
    if (!o_.with.input.empty() || !o_.with.generate.empty()) {
      // The rectangle of two sets: one histogram of their pairs.
      const HistOptions& h = o_.hist;
      const char* other = !h.types.empty()      ? "--types"
                          : !h.exclude.empty()  ? "--exclude"
                          : h.exclude_block > 0 ? "--exclude-block"
                          : !h.frames.empty()   ? "--frames"
                                                : nullptr;
      if (other)
        throw UsageError(std::string("--with bins the pairs of two point sets (one frame of "
                                     "each), which ") +
                         other +
                         " does not apply to: for partials of one system give --types (and "
                         "--pairs A-B) on its one --input");
    }
    cli::finish_frames(o_.hist.frames, o_.in);
  }
};

}  // namespace

std::unique_ptr<Command> make_hist_command() {
  return std::make_unique<HistCommand>();
}

}  // namespace tdsolve
