// tdsolve hist: the histogram of all pair distances (and the RDF in a
// periodic box), without storing a distance.
#include <algorithm>
#include <cstdio>

#include "io/trajectory.hpp"
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
    "the cell's 9 numbers). Same counts on any rank count.\n";

const char* kRdfFormula =
    "rdf[b] = counts[b] / ((4/3) pi (edges[b+1]^3 - edges[b]^3) n (n-1) / (2 volume)), "
    "as MDAnalysis InterRDF(g, g, exclusion_block=(1, 1)) for one frame";
const char* kRdfFramesFormula =
    "rdf[b] = counts[b] / (F (4/3) pi (edges[b+1]^3 - edges[b]^3) n (n-1) / (2 volume)), F the "
    "frames (/frames), as MDAnalysis InterRDF(g, g, exclusion_block=(1, 1)) over those frames "
    "(one fixed cell)";
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

template <typename T>
class Hist final : public PairCommand<T> {
 public:
  Hist(const char* name, const CommandOptions& o) : PairCommand<T>(name, o), h_(o.hist) {}

  void configure(Problem<T>& p) const override { p.epilogue = EpilogueKind::histogram; }
  // No bound on the bytes: the file holds a few counts.
  index_t checked_total(index_t rows, index_t, index_t, const std::string& source) const override {
    return pair_total(rows, source);
  }
  // A trajectory frame's periodic cell is the box when none is given.
  bool takes_cell() const override { return true; }
  void take_input(io::PointSet& a) override {
    if (!a.frames.empty()) {  // load_problem's: the first frame of a run over frames
      frames_ = a.frames;
      const index_t pairs = mapping::pair_count(a.n);
      if (pairs > 0 && frames_.size() > (index_t(1) << 62) / pairs)
        throw InputError(std::to_string(frames_.size()) + " frames of C(" + std::to_string(a.n) +
                         ",2) pairs are more than tdsolve indexes (2^62)");
    } else if (!frames_.empty()) {  // a later frame: checked before the run (check_frames)
      return;
    }
    take_cell(a);
    if (!frames_.empty()) check_frames(a.n);
  }
  // Rank 0, the first points: the box is their frame's periodic cell where
  // no --box is given (and --box none does not turn it off).
  void take_cell(const io::PointSet& a) {
    const io::Cell& c = a.cell;
    if (h_.box.dims > 0 || !h_.input_box || !c.present) return;
    if (!c.periodic) {
      if (!this->options().run.quiet)
        std::fprintf(stderr,
                     "tdsolve: note: '%s' has a cell that is not periodic on every axis "
                     "(boundaries %s): binned without a box\n",
                     a.source.c_str(), c.boundary.c_str());
      return;
    }
    const Metric m = this->options().compute.metric;
    const bool triclinic = c.tilt[0] != 0 || c.tilt[1] != 0 || c.tilt[2] != 0;
    const bool box_metric = m == Metric::euclidean || m == Metric::sqeuclidean ||
                            (!triclinic && (m == Metric::cityblock || m == Metric::chebyshev));
    if (!box_metric || !this->options().compute.weights.empty())
      throw InputError("'" + a.source + "' has a periodic " + (triclinic ? "triclinic " : "") +
                       "cell, which --metric " + metric_name(m) +
                       (this->options().compute.weights.empty() ? "" : " with --weights") +
                       " does not take: give --box none to bin without it");
    BoxOptions& b = h_.box;
    b.dims = 3;
    for (int k = 0; k < 3; ++k) {
      b.lengths[k] = c.lengths[k];
      b.tilt[k] = c.tilt[k];
    }
    b.triclinic = triclinic;
    from_cell_ = true;
    cell_ = c;
    if (triclinic && cull_cutoff(m, h_.hi) > b.half_width())
      throw InputError("--range HI " + number_text(h_.hi) +
                       " reaches past half the shortest width (" + number_text(b.half_width()) +
                       ") of the triclinic cell of '" + a.source +
                       "': a pair's minimum image is not certain there");
  }
  void broadcast(MPI_Comm comm) override {
    bcast_bytes(comm, &h_.box, sizeof h_.box);
    bcast_vector(comm, &frames_);
  }
  index_t frame_count() const override { return frames_.size(); }
  io::PointSet read_frame(index_t q) override {
    const InputOptions& in = this->options().in;
    if (!trajectory_) trajectory_ = io::open_trajectory(in.input);
    io::Frame f = trajectory_->read(frames_[q]);
    f.points.source = in.input + ", frame " + std::to_string(frames_[q]);
    io::arrange_points(f.points, in.transpose, in.columns);
    io::check_finite(f.points);
    return std::move(f.points);
  }
  void check_output(const Problem<T>& p, const io::PointSet& a, bool) const override {
    const HistOptions& h = h_;
    checked_total(p.rows, p.cols, sizeof(T), a.source);
    check_box_dims(h.box.dims, a.d, a.source);
  }
  void complete(Problem<T>& p) const override {
    const HistOptions& h = h_;
    p.hist = make_hist_spec(h.lo, h.hi, h.bins);
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
    if (!frames_.empty()) add("frames", frames_text());
    if (h.per_frame) add("per_frame", "true");
  }

  void layout(io::ResultLayout& L, const Problem<T>& p,
              const mapping::ChunkPlan& plan) const override {
    using io::Attr;
    const HistOptions& h = h_;
    const std::string precision = precision_name<T>(), metric = metric_name(p.metric);
    std::vector<Attr> a = {Attr{"n", std::uint64_t(p.rows)},
                           Attr{"k", std::uint64_t(2)},
                           Attr{"metric", metric},
                           Attr{"precision", precision},
                           Attr{"features", std::uint64_t(p.features)},
                           Attr{"bins", std::uint64_t(p.hist.bins)},
                           Attr{"range_lo", p.hist.lo},
                           Attr{"range_hi", p.hist.hi},
                           Attr{"pairs", std::uint64_t(mapping::pair_count(p.rows) *
                                                       std::max<index_t>(1, frames_.size()))},
                           Attr{"binning", std::string(kBinning)}};
    if (h.box.dims > 0) a.push_back(Attr{"box", box_text(h.box)});
    if (h.box.triclinic) a.push_back(Attr{"tilt", tilt_text(h.box)});
    if (!frames_.empty()) a.push_back(Attr{"frames", std::uint64_t(frames_.size())});
    L.result = {"counts", io::ValueType::i64, {p.hist.bins}, a, {}};
    L.extras.push_back({"edges", io::ValueType::f64, {p.hist.bins + 1}, {}, p.hist.edges});
    if (!frames_.empty())
      L.extras.push_back({"frames",
                          io::ValueType::i64,
                          {frames_.size()},
                          {},
                          std::vector<double>(frames_.begin(), frames_.end())});
    if (h.per_frame)
      L.extras.push_back(
          {"frame_counts", io::ValueType::i64, {frames_.size(), p.hist.bins}, {}, {}});
    L.extras.push_back({"underflow", io::ValueType::i64, {}, {}, {}});
    L.extras.push_back({"overflow", io::ValueType::i64, {}, {}, {}});
    if (h.box.dims > 0)
      L.extras.push_back(
          {"rdf",
           io::ValueType::f64,
           {p.hist.bins},
           {Attr{"volume", h.box.volume()},
            Attr{"formula", std::string(frames_.empty() ? kRdfFormula : kRdfFramesFormula)},
            Attr{"n", std::uint64_t(p.rows)}},
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
    const bool complete = !ex.done.empty() && std::all_of(ex.done.begin(), ex.done.end(),
                                                          [](unsigned char d) { return d != 0; });
    return std::make_unique<HistogramSink<T>>(w, comm, p, h_, ex.slots, complete, frames_.size(),
                                              &ex.frame_counts);
  }
  bool checkpoints() const override { return true; }
  void print_after(const Problem<T>& p, index_t now, double total) const override {
    const char* what = element_name(p);
    if (!frames_.empty()) {
      std::printf("tdsolve %s: binned %llu %s of %zu frames in %s (%.3g %s/s", this->name(),
                  (unsigned long long)now, what, frames_.size(), human_seconds(total).c_str(),
                  double(now) / total, what);
      return;
    }
    if (p.culled) {
      // The rest were never visited: they are beyond the range (overflow).
      std::printf(
          "tdsolve %s: binned %llu %s (%llu tested, the rest beyond the range) in %s "
          "(%.3g %s tested/s",
          this->name(), (unsigned long long)mapping::pair_count(p.rows), what,
          (unsigned long long)now, human_seconds(total).c_str(), double(now) / total, what);
      return;
    }
    std::printf("tdsolve %s: binned %llu %s in %s (%.3g %s/s", this->name(),
                (unsigned long long)now, what, human_seconds(total).c_str(), double(now) / total,
                what);
  }

 private:
  // "F frames of the input: K0, K1, K2, ..., the last three": what the
  // identity records (a slice's frames are its first, its step and its count).
  std::string frames_text() const {
    std::string t = std::to_string(frames_.size()) + " frames of the input: ";
    for (size_t i = 0; i < frames_.size(); ++i) {
      if (i == 3 && frames_.size() > 6) {
        t += "..., ";
        i = frames_.size() - 3;
      }
      t += std::to_string(frames_[i]) + (i + 1 < frames_.size() ? ", " : "");
    }
    return t;
  }
  // Rank 0, a run over frames: every frame's number of atoms is the first
  // frame's, and unless --box gives the box (or --box none drops it) so is
  // its cell, or its lack of one (as the file indexes them: an InputError
  // before the file exists, naming the first frame that differs).
  void check_frames(index_t n) {
    if (frames_.size() < 2) return;
    const InputOptions& in = this->options().in;
    const bool cells = h_.input_box && (from_cell_ || h_.box.dims == 0);
    if (!trajectory_) trajectory_ = io::open_trajectory(in.input);
    const auto differs = [&](index_t q, const std::string& has, const std::string& first,
                             const char* what) {
      return InputError("frame " + std::to_string(frames_[q]) + " of '" + in.input + "' has " +
                        has + " where its frame " + std::to_string(frames_[0]) + " has " + first +
                        ": hist --frames bins frames of " + what);
    };
    for (size_t q = 1; q < frames_.size(); ++q) {
      if (const index_t m = trajectory_->atoms(frames_[q]); m != n)
        throw differs(q, std::to_string(m) + " atoms", std::to_string(n), "one set of atoms");
      if (!cells) continue;
      const io::Cell c = trajectory_->cell(frames_[q]);
      const bool periodic = c.present && c.periodic;
      if (from_cell_ == periodic &&
          (!periodic || (std::equal(c.lengths, c.lengths + 3, cell_.lengths) &&
                         std::equal(c.tilt, c.tilt + 3, cell_.tilt))))
        continue;
      throw differs(q, periodic ? "the cell " + cell_text(c) : std::string("no periodic cell"),
                    from_cell_ ? cell_text(cell_) : std::string("none"),
                    "one fixed cell (give --box to bin them all in one box, or --box none)");
    }
  }
  static std::string cell_text(const io::Cell& c) {
    BoxOptions b;
    b.dims = 3;
    std::copy(c.lengths, c.lengths + 3, b.lengths);
    std::copy(c.tilt, c.tilt + 3, b.tilt);
    return "(" + box_text(b) + "; tilt " + tilt_text(b) + ")";
  }

  HistOptions h_;                // the options' (its box: a trajectory's cell where none is given)
  std::vector<index_t> frames_;  // hist --frames: the input's frames it takes, in order
  std::unique_ptr<io::Trajectory> trajectory_;  // rank 0, a run over frames
  bool from_cell_ = false;                      // the box is the first frame's cell
  io::Cell cell_;                               // ... that cell
};

class HistCommand final : public PairCommandOf<Hist> {
 public:
  HistCommand()
      : PairCommandOf<Hist>(
            {"hist", "histogram of all pair distances (and the RDF in a periodic box); no matrix",
             kUsage, "result file: /counts, /edges, /underflow, /overflow (and /rdf)",
             /*store_points=*/false, /*second_set=*/false, /*spheres=*/false,
             cli::kMap | cli::kCull}) {}

 protected:
  void add_groups(cli::po::options_description& all) override {
    all.add(cli::hist_group(o_.hist, c_));
  }
  void check_groups(const cli::po::variables_map& vm) override {
    cli::finish_hist(o_.hist, c_, vm, o_.compute.metric, o_.compute.weights);
    if (!o_.hist.frames.empty()) {
      if (!o_.in.generate.empty())
        throw UsageError("--frames applies to a trajectory --input, not to --generate");
      if (o_.in.frame_given)
        throw UsageError("--frame K takes one frame, --frames START:STOP[:STEP] several: give one");
      o_.in.frames = o_.hist.frames;
    }
  }
};

}  // namespace

std::unique_ptr<Command> make_hist_command() {
  return std::make_unique<HistCommand>();
}

}  // namespace tdsolve
