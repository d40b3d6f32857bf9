// tdsolve collide: the pairs of n spheres (1-D or 3-D) that overlap, in
// float64.
#include <algorithm>
#include <cstdio>
#include <type_traits>

#include "io/input.hpp"

#include "solver/commands/pairs.hpp"
#include "solver/commands/sinks.hpp"
#include "solver/progress.hpp"

namespace tdsolve {

namespace {

const char* kUsage =
    "Usage: tdsolve collide (--input SRC | --generate spheres:N:DIM:SEED[:RMAX])\n"
    "                       --output FILE.h5 [options]\n"
    "\n"
    "Finds every pair i < j of n spheres (1-D: rows x, r; 3-D: rows x, y, z, r) that\n"
    "overlap: the euclidean distance of the centres is < r_i + r_j, in float64 (touching\n"
    "spheres, distance == r_i + r_j, do not count). Writes /pairs (m × 2, int64, sorted\n"
    "by (i, j)), /distances (m, float64: the centres' distances) and /count (m). The\n"
    "pairs are the same for any rank count and backend. m is not known in advance: each\n"
    "rank keeps its pairs in memory (24 bytes a pair) and the file gets them all at the\n"
    "end, so a stopped collide run starts over on --resume.\n";

const char* kOverlap =
    "spheres i < j overlap when the euclidean distance of their centres is < r_i + r_j, in "
    "float64: sqrt(fma(dz, dz, fma(dy, dy, dx * dx))) < r_i + r_j (1-D: sqrt(dx * dx)); "
    "touching spheres (distance == r_i + r_j) do not";

// Rank 0 splits the spheres (n × (DIM + 1): centres, then the radius) into
// the centres, which stay the points, and the radii; every radius must be
// >= 0 (check_finite has refused NaN and inf).
std::vector<double> split_radii(io::PointSet* a) {
  const index_t n = a->n, w = a->d, dim = w - 1;
  std::vector<double> r(n);
  for (index_t i = 0; i < n; ++i) {
    r[i] = a->values[i * w + dim];
    if (!(r[i] >= 0))
      throw InputError("input '" + a->source + "' has the negative radius " + number_text(r[i]) +
                       " at row " + std::to_string(i) + " (column " + std::to_string(dim) +
                       ", the last); radii must be >= 0");
    for (index_t k = 0; k < dim; ++k)
      a->values[i * dim + k] = a->values[i * w + k];
  }
  a->values.resize(n * dim);
  a->d = dim;
  return r;
}

// The pairs of the centres' distances that pass d < r_i + r_j, kept by a
// PairListSink; the points are the centres, the radii travel beside them.
template <typename T>
class Collide final : public PairCommand<T> {
 public:
  using PairCommand<T>::PairCommand;

  void check_size(index_t n, index_t d, const std::string& source) const override {
    if (d != 2 && d != 4)
      throw InputError("input '" + source + "' has " + std::to_string(d) +
                       " columns; collide needs spheres as n × 2 (x, r) or n × 4 (x, y, z, r)");
    io::check_pairs(n, source);
    checked_total(n, n, 0, source);
  }
  // No bound on the bytes: the pairs found are not known in advance.
  index_t checked_total(index_t rows, index_t, index_t, const std::string& source) const override {
    return pair_total(rows, source);
  }
  // A sphere's 2 or 4 columns are the format.
  bool transpose_note() const override { return false; }
  void take_input(io::PointSet& a) override { radii_ = split_radii(&a); }
  void check_output(const Problem<T>& p, const io::PointSet& a, bool bench) const override {
    checked_total(p.rows, p.cols, 0, a.source);
    const BoxOptions& b = this->options().box;
    check_box_dims(b.dims, a.d, a.source);
    if (b.dims > 0 && !radii_.empty()) {
      // Overlaps are within twice the largest radius: the minimum image is
      // every pair's only image that close within half the shortest length.
      const double rmax = *std::max_element(radii_.begin(), radii_.end());
      const double half = b.half_width();
      if (2 * rmax > half)
        throw InputError("'" + a.source + "' has a sphere of radius " + number_text(rmax) +
                         ": two of them overlap up to " + number_text(2 * rmax) +
                         " apart, past half the shortest --box " +
                         (b.triclinic ? "width" : "length") + " (" + number_text(half) +
                         "), where a pair's minimum image is not its only image");
    }
    // The pairs found are not known in advance; a few bytes a point at least.
    if (!bench) check_output_space(this->options().out.output, 1 << 20);
  }
  void broadcast(MPI_Comm comm) override { bcast_vector(comm, &radii_); }
  // The backend selects the overlapping pairs (collide computes in float64).
  void complete(Problem<T>& p) const override {
    if constexpr (std::is_same_v<T, double>) set_select_overlap(&p, radii_);
    set_problem_box(&p, this->options().box);
  }
  // Boxes farther apart than their largest radii together hold no overlap.
  bool cull_geometry(const Problem<T>& p, CullGeometry* g) const override {
    g->radii = radii_.data();
    return true;
  }
  void identity(const Problem<T>&, const AddKey& add) const override {
    const BoxOptions& b = this->options().box;
    if (b.dims > 0) add("box", box_text(b));
    if (b.triclinic) add("tilt", tilt_text(b));
  }
  index_t chunk_bound(const Problem<T>& p) const override {
    const ComputeOptions& o = this->options().compute;
    return culled_chunk_floor(p, o, select_chunk_pairs(p.total(), o, sizeof(T)));
  }

  void layout(io::ResultLayout& L, const Problem<T>& p, const mapping::ChunkPlan&) const override {
    using io::Attr;
    const std::string precision = precision_name<T>(), metric = metric_name(p.metric);
    L.root_attrs.push_back(Attr{"n", std::uint64_t(p.rows)});
    L.root_attrs.push_back(Attr{"dim", std::uint64_t(p.d)});
    L.result = {"", value_type<T>(), {}, {}, {}};
    L.lists.push_back(
        {"pairs",
         io::ValueType::i64,
         {0, 2},
         {Attr{"n", std::uint64_t(p.rows)}, Attr{"dim", std::uint64_t(p.d)},
          Attr{"layout", std::string("pairs")}, Attr{"criterion", std::string("overlap")},
          Attr{"definition", std::string(kOverlap)}, Attr{"metric", metric},
          Attr{"precision", precision}, Attr{"features", std::uint64_t(p.d)},
          Attr{"block", std::uint64_t(p.rho)}},
         {}});
    const BoxOptions& b = this->options().box;
    if (b.dims > 0) L.lists.back().attrs.push_back(Attr{"box", box_text(b)});
    if (b.triclinic) L.lists.back().attrs.push_back(Attr{"tilt", tilt_text(b)});
    L.lists.push_back({"distances",
                       value_type<T>(),
                       {0},
                       {Attr{"layout", std::string("pairs")}, Attr{"metric", metric},
                        Attr{"precision", precision},
                        Attr{"what", std::string("the distance of the two centres")}},
                       {}});
    L.extras.push_back(
        {"count",
         io::ValueType::i64,
         {},
         {Attr{"what", std::string("the number of overlapping pairs (rows of /pairs); written "
                                   "with them when the run ends")}},
         {}});
    add_metric_attrs(this->options(), p, &L);
  }

  void print_before(const Problem<T>& p, const mapping::ChunkPlan& plan) const override {
    std::printf(
        "tdsolve %s: %llu spheres in %llu-D, %llu pairs tested (overlap: distance < r_i + "
        "r_j), float64, block %llu\n",
        this->name(), (unsigned long long)p.rows, (unsigned long long)p.d,
        (unsigned long long)plan.total(), (unsigned long long)p.rho);
  }
  std::unique_ptr<Sink<T>> make_sink(io::ResultWriter& w, MPI_Comm, const Problem<T>& p,
                                     const Existing& ex) override {
    auto list = std::make_unique<OverlapSink<T>>(w, ex.held_pairs, p);
    list_ = list.get();
    return list;
  }
  const char* list_run() const override { return "collide"; }
  void print_after(const Problem<T>&, index_t now, double total) const override {
    std::printf("tdsolve %s: found %llu overlapping pairs among %llu pairs in %s (%.3g pairs/s",
                this->name(), (unsigned long long)list_->count(), (unsigned long long)now,
                human_seconds(total).c_str(), double(now) / total);
  }
  // The pairs' indices (2 int64) and distances; nothing when the run
  // stopped (it keeps none).
  double result_bytes(const Problem<T>&, const mapping::ChunkPlan&) const override {
    return double(list_ ? list_->count() : 0) * double(2 * sizeof(std::int64_t) + sizeof(T));
  }

 private:
  std::vector<double> radii_;
  PairListSink<T>* list_ = nullptr;
};

class CollideCommand final : public PairCommandOf<Collide> {
 public:
  CollideCommand()
      : PairCommandOf<Collide>(
            {"collide",
             "the pairs of n spheres (1-D or 3-D) that overlap: distance of the centres\n< r_i + "
             "r_j, in float64",
             kUsage, "result file: /pairs (m × 2), /distances (m) and /count",
             /*store_points=*/false, /*second_set=*/false, /*spheres=*/true,
             cli::kSelectChunks | cli::kMap | cli::kCollide | cli::kCull}) {}

 protected:
  void add_groups(cli::po::options_description& all) override {
    all.add(cli::box_group(box_, tilt_,
                           "a periodic box, one length > 0 a coordinate (1 or 3), or a "
                           "triclinic cell (3-D): --tilt, or the 9 numbers of its vectors a, b, "
                           "c (rows, a along x, b in the xy plane); centres' distances are "
                           "minimum-image; twice the largest radius at most half the shortest "
                           "width"));
  }
  void check_groups(const cli::po::variables_map&) override {
    if (!box_.empty() || !tilt_.empty())
      cli::parse_box(box_, tilt_, Metric::euclidean, "", &o_.box);
  }

 private:
  std::string box_, tilt_;
};

}  // namespace

std::unique_ptr<Command> make_collide_command() {
  return std::make_unique<CollideCommand>();
}

}  // namespace tdsolve
