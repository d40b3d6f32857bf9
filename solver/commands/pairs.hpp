// The family of commands that compute over all pairs (or triplets) of points
// and write one result file: edm, cross, hist, knn, collide, triplet; bench
// computes their problems without a file. A command of the family is two
// pieces in its own file:
//
// - its typed piece, a PairCommand<T> for T = float and double: what
//   run_pairs asks of it — its problem's own parts (domain, epilogue,
//   checks), the file layout, the sink, the job identity, the chunk-size
//   bound, the summary lines before and after, --stats' bytes;
// - its command line, a PairFamilyCommand: its option groups and checks.
//
// The rest is written once, here: load_problem (rank 0 reads and checks the
// input, every rank gets the problem), job_identity, make_layout,
// inspect_output, and run_pairs, which runs the output lifecycle
// (solver/lifecycle.hpp) around the driver loop.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "io/input.hpp"
#include "io/result_file.hpp"
#include "mapping/partition.hpp"
#include "solver/cli/options.hpp"
#include "solver/lifecycle.hpp"
#include "solver/mpi_util.hpp"
#include "solver/options.hpp"
#include "solver/problem.hpp"
#include "solver/sink.hpp"

namespace tdsolve {

// What the attributes `input` and `with` record, and the inputs' content.
struct Sources {
  std::string a, b;            // what the `input` and `with` attributes record
  std::string a_hash, b_hash;  // FNV-1a 64 of the points as read (hex)
};

// What rank 0 found at the output's names (and a stopped run left).
struct Existing {
  Start start = Start::fresh;
  std::vector<index_t> offsets;
  std::vector<unsigned char> done;
  std::vector<std::uint64_t> slots;        // hist: counts a stopped run left, in slot order
  std::vector<std::int64_t> frame_counts;  // hist --per-frame: the frames' rows a stopped run left
  std::vector<std::int64_t> sums;          // triplet: the exact sums a stopped run left
  index_t sums_width = 0;                  // triplet: the limbs a row of its /progress/sums keeps
  std::vector<double> frame_energy;  // triplet --frames: the frames' energies a stopped run left
  // knn --radius, collide: the pairs a resumed file holds when every flag is
  // set (it is complete but for the rename); -1 none (every chunk is run).
  std::int64_t held_pairs = -1;
  // A resumed file whose every chunk is done (none: a fresh one).
  bool all_done() const {
    return !done.empty() &&
           std::all_of(done.begin(), done.end(), [](unsigned char d) { return d; });
  }
};

// Adds one `key=value` line to the job identity.
using AddKey = std::function<void(const std::string& key, const std::string& value)>;

// One command of the family, for one run in precision T. The defaults are
// edm's (packed pair values stored in the file); a command overrides what
// differs. Rank 0 alone calls the hooks marked so; every rank the others.
template <typename T>
class PairCommand {
 public:
  PairCommand(const char* name, const CommandOptions& o) : name_(name), o_(o) {}
  virtual ~PairCommand() = default;
  PairCommand(const PairCommand&) = delete;
  PairCommand& operator=(const PairCommand&) = delete;
  const char* name() const { return name_; }
  const CommandOptions& options() const { return o_; }

  // ---- the problem (load_problem) ----
  // Its own parts before the input is read: domain, epilogue, parameters.
  virtual void configure(Problem<T>& p) const {}
  // Whether --with gives a second point set (the rectangle of two sets).
  virtual bool second_set() const { return false; }
  // Rank 0: n points of d values from `source`, before a generator
  // allocates anything. Default: pairs of one set.
  virtual void check_size(index_t n, index_t d, const std::string& source) const;
  // The values a rows × cols problem gives, refused (InputError) beyond what
  // tdsolve indexes or a file holds (value_bytes a value; 0: not stored).
  // Default: C(n,2) values, stored.
  virtual index_t checked_total(index_t rows, index_t cols, index_t value_bytes,
                                const std::string& source) const;
  // Whether an input with more features than points gets the note that it
  // may be stored transposed.
  virtual bool transpose_note() const { return true; }
  // Rank 0, the input read and its content hashed: takes what is not points
  // (collide's radii, hist's trajectory cell).
  virtual void take_input(io::PointSet& a) {}
  // Whether take_input applies a trajectory frame's periodic cell (else the
  // run notes that it does not).
  virtual bool takes_cell() const { return false; }
  // Rank 0: the points made the problem's. Default: the metric's vectors
  // and transforms (and --store-points).
  virtual void prepare(Problem<T>& p, io::PointSet& a, io::PointSet* b) const;
  // Rank 0: the total checked, and the output's size against the free
  // space (not for bench). Default: C(n,2) or rows × cols values of T.
  virtual void check_output(const Problem<T>& p, const io::PointSet& a, bool bench) const;
  // Rank 0, the points converted: the last checks. Default: float32 range.
  virtual void check_points(Problem<T>& p, const io::PointSet& a) const;
  // Every rank, after the problem's broadcast: what else rank 0 read.
  virtual void broadcast(MPI_Comm comm) {}
  // Every rank, at the end: the parts that need the input (hist's bins).
  virtual void complete(Problem<T>& p) const {}
  // Every rank, the problem complete: the cutoff of a run whose answer lies
  // within one (hist's upper edge, knn --radius, collide's radii), for
  // --cull (solver/cull.hpp; apply_cull adds the norm and the box); false
  // when the run has none.
  virtual bool cull_geometry(const Problem<T>& p, CullGeometry* g) const { return false; }
  // The sizes of the sets as given (rows, cols) for the job's identity, the
  // log and --stats: the problem's, unless culling recast it (a culled hist
  // --with runs one array of both sets: apply_cull).
  virtual std::pair<index_t, index_t> sizes(const Problem<T>& p) const { return {p.rows, p.cols}; }

  // ---- a run over the frames of a trajectory (hist --frames) ----
  // How many frames the run takes, one after the other into one result (0:
  // one point set). Every rank, after broadcast().
  virtual index_t frame_count() const { return 0; }
  // Rank 0: the points of the run's frame q (0 <= q < frame_count()), as
  // read; load_problem's are frame 0's. take_input, prepare and the checks
  // then see them as they saw the first.
  virtual io::PointSet read_frame(index_t q) { return {}; }

  // ---- the job and its file ----
  // The identity's keys of this command, after the common ones.
  virtual void identity(const Problem<T>& p, const AddKey& add) const {}
  // The result datasets and their attributes (L's root attributes, path and
  // offsets are set): make_layout's part of this command.
  virtual void layout(io::ResultLayout& L, const Problem<T>& p,
                      const mapping::ChunkPlan& plan) const = 0;
  // What the file is: the root's `kind`, the schema's description of it
  // (python/tdsolve/schema.json), which also names the datasets' axes.
  // Default: the command's name.
  virtual std::string kind(const Problem<T>& p) const { return name(); }

  // ---- the run ----
  // The largest chunk, in elements of the domain (bench: chunk_mb may be 0).
  virtual index_t chunk_bound(const Problem<T>& p) const;
  // Rank 0: the line that says what the run computes.
  virtual void print_before(const Problem<T>& p, const mapping::ChunkPlan& plan) const;
  // The sink for a run writing through `w` (ex: what a stopped run left).
  virtual std::unique_ptr<Sink<T>> make_sink(io::ResultWriter& w, MPI_Comm comm,
                                             const Problem<T>& p, const Existing& ex) = 0;
  // The sink of an in-memory result (--output memory:NAME: edm and cross),
  // the values into `out`; null: the command writes files only.
  virtual std::unique_ptr<Sink<T>> make_memory_sink(T* out) { return nullptr; }
  // A run whose sink keeps its pairs to the end (knn --radius, collide),
  // so a stopped one keeps nothing: what the abort hint calls it; null for
  // any other.
  virtual const char* list_run() const { return nullptr; }
  // Whether the sink's partial state is checkpointed now and then (hist,
  // triplet).
  virtual bool checkpoints() const { return false; }
  // Rank 0, a complete run: the first part of the last line, "tdsolve NAME:
  // ... (RATE/s" (run_pairs adds the times per rank). `now`: the elements
  // computed by this run.
  virtual void print_after(const Problem<T>& p, index_t now, double seconds) const;
  // --stats' "bytes": the size of the results the output holds.
  virtual double result_bytes(const Problem<T>& p, const mapping::ChunkPlan& plan) const;

 private:
  const char* name_;
  const CommandOptions& o_;
};

// Instantiated once, in pairs.cpp.
extern template class PairCommand<float>;
extern template class PairCommand<double>;

// ---- helpers for the typed pieces ----

// Every file a pair command reads, as (path, what it is) for the registry
// (OutputPaths::inputs); a generated input and an inline vector are none.
std::vector<std::pair<std::string, std::string>> files_read(const CommandOptions& o);

// C(n,2) pairs, C(n,3) triplets, rows × cols distances: InputError beyond
// 2^62 (what tdsolve indexes).
index_t pair_total(index_t n, const std::string& source);
index_t triplet_total(index_t n, const std::string& source);
index_t rect_total(index_t rows, index_t cols);
// The chunk bound of a selection (knn --radius, collide): they buffer only
// the pairs that pass, so their chunks are cut by pairs tested, as
// histograms' are: about 1/256 of them (at least a block row), at most
// 2^28, so that a chunk's list stays a few GB on a GPU even when every pair
// passes, and a stop signal is honoured within a second or so of one GPU;
// or, with --chunk-mb MB given, MB MiB of values tested.
index_t select_chunk_pairs(index_t total, const ComputeOptions& o, index_t value_bytes);
// A culled run's chunk bound (solver/cull.hpp): at least 2^24 pairs tested
// (a few tens of ms on two cores), unless --chunk-mb is given, so that a
// chunk's fixed costs (a parallel region, a launch, a round of the driver)
// do not outweigh the few pairs its tiles test.
template <typename T>
index_t culled_chunk_floor(const Problem<T>& p, const ComputeOptions& o, index_t bound) {
  return p.culled && !o.chunk_mb_given ? std::max(bound, index_t(1) << 24) : bound;
}
// InputError when `total` values of value_bytes do not fit in a file.
void check_file_bytes(index_t total, index_t value_bytes, const std::string& source);
// "float32" or "float64"; the file's value type.
template <typename T>
const char* precision_name() {
  return sizeof(T) == 8 ? "float64" : "float32";
}
template <typename T>
io::ValueType value_type() {
  return sizeof(T) == 8 ? io::ValueType::f64 : io::ValueType::f32;
}
// The shortest "%.17g" of v.
std::string number_text(double v);
// A periodic box as its file attribute and job key: "L1,...,Ld" (%.17g);
// a triclinic cell's tilts as theirs, "xy,xz,yz".
std::string box_text(int dims, const double* lengths);
inline std::string box_text(const BoxOptions& b) {
  return box_text(b.dims, b.lengths);
}
inline std::string tilt_text(const BoxOptions& b) {
  return box_text(3, b.tilt);
}
// Rank 0: InputError unless a --box has one length per coordinate of points
// from `source` (d of them).
void check_box_dims(int dims, index_t d, const std::string& source);
// Every rank: the box of o (--box) as the problem's (its lengths in T).
template <typename T>
void set_problem_box(Problem<T>* p, const BoxOptions& b) {
  p->box_dims = b.dims;
  for (int k = 0; k < b.dims; ++k)
    p->box[k] = static_cast<T>(b.lengths[k]);
  p->triclinic = b.triclinic;
  for (int k = 0; k < 3; ++k)
    p->tilt[k] = static_cast<T>(b.tilt[k]);
}
// The result dataset's attributes for the metric's parameters, and the
// datasets /weights and /variance (float64[d]) they name.
template <typename T>
void add_metric_attrs(const CommandOptions& o, const Problem<T>& p, io::ResultLayout* L);
// "pairs", "distances" (rectangles), "triplets" or "centres": what the domain's
// elements are called in the progress and summary lines.
template <typename T>
const char* element_name(const Problem<T>& p) {
  return p.domain == DomainKind::rect ? "distances"
         : p.triplets()               ? "triplets"
         : p.centres()                ? "centres"
                                      : "pairs";
}

// s cut at each sep ("" gives one empty piece), and v's pieces joined by sep.
std::vector<std::string> split_on(const std::string& s, char sep);
std::string joined(const std::vector<std::string>& v, const char* sep);
// Collective: the strings of rank 0's *v on every rank.
void bcast_strings(MPI_Comm comm, std::vector<std::string>* v);

// Collective: v on every rank as on rank 0.
template <typename T>
void bcast_vector(MPI_Comm comm, std::vector<T>* v) {
  index_t n = v->size();
  bcast_u64(comm, &n);
  v->resize(n);
  bcast_bytes(comm, v->data(), n * sizeof(T));
}

// ---- the shared parts ----

// Collective: rank 0 reads or generates the points and checks everything
// that can be checked before a file exists; all ranks then receive the
// same problem. bench: no output (no content hash, no space check).
template <typename T>
Problem<T> load_problem(PairCommand<T>& cmd, MPI_Comm comm, Sources* src);

// Collective, a run over frames: p takes the run's frame q (rank 0 reads it
// through cmd.read_frame), shared and settled as load_problem settles the
// first (norms, the command's parts, the culled domain).
template <typename T>
void load_frame(PairCommand<T>& cmd, Problem<T>& p, index_t q, MPI_Comm comm, const Sources& src);

// Collective: the whole run of a command that writes its file: the output
// lifecycle around the driver loop. 0, or kStoppedExitCode.
template <typename T>
int run_pairs(PairCommand<T>& cmd, MPI_Comm comm);

// The command line of a command of the family: input, output, its own
// groups, computation, run; then its checks in that order. The typed pieces
// come from make_piece (PairCommandOf below writes it).
class PairFamilyCommand : public cli::OptionsCommand {
 public:
  const char* name() const override { return info_.name; }
  const char* summary() const override { return info_.summary; }
  bool stops_cleanly() const override { return true; }
  int run(MPI_Comm comm) override;

  // The typed piece for options `o` (which must outlive it).
  virtual std::unique_ptr<PairCommand<float>> make_piece(const CommandOptions& o, float*) const = 0;
  virtual std::unique_ptr<PairCommand<double>> make_piece(const CommandOptions& o,
                                                          double*) const = 0;
  template <typename T>
  std::unique_ptr<PairCommand<T>> piece(const CommandOptions& o) const {
    return make_piece(o, static_cast<T*>(nullptr));
  }

  struct Info {
    const char* name;
    const char* summary;      // for tdsolve --help
    const char* usage;        // for tdsolve NAME --help
    const char* output_help;  // --output's help: what the file holds
    bool store_points;        // offers --store-points
    bool second_set;          // offers --with (and --with-generate, ...): required, or
                              // as second_set_optional() says
    bool spheres;             // its input is spheres (collide)
    int compute_flags;        // cli::ComputeFlags
  };

 protected:
  explicit PairFamilyCommand(const Info& info) : info_(info) {}
  const char* usage() const override { return info_.usage; }
  void add_options(cli::po::options_description& all) override;
  void check(const cli::po::options_description& all, const cli::po::variables_map& vm, int argc,
             char** argv) override;
  // Whether Info::second_set's --with may be left out (hist: the pairs of
  // one set, or with --with the rectangle of two).
  virtual bool second_set_optional() const { return false; }
  // The command's own groups (between the output's and the computation's)
  // and their checks (after the computation's).
  virtual void add_groups(cli::po::options_description& all) {}
  virtual void check_groups(const cli::po::variables_map& vm) {}
  // Once checked: the options of its groups that do not apply to this run
  // (triplet: the other potentials'), left out of the effective options.
  virtual std::vector<std::string> unused_options() const { return {}; }

  Info info_;
  CommandOptions o_;
  cli::Choices c_;
};

// A PairFamilyCommand whose typed piece is Piece<T>(name, options).
template <template <typename> class Piece>
class PairCommandOf : public PairFamilyCommand {
 public:
  std::unique_ptr<PairCommand<float>> make_piece(const CommandOptions& o, float*) const override {
    return std::make_unique<Piece<float>>(info_.name, o);
  }
  std::unique_ptr<PairCommand<double>> make_piece(const CommandOptions& o, double*) const override {
    return std::make_unique<Piece<double>>(info_.name, o);
  }

 protected:
  using PairFamilyCommand::PairFamilyCommand;
};

}  // namespace tdsolve
