// tdsolve knn: the K nearest other points of every point (--k), or every
// pair within a distance (--radius), without the matrix.
#include <algorithm>
#include <cstdio>

#include "solver/commands/pairs.hpp"
#include "solver/commands/sinks.hpp"
#include "solver/knn.hpp"
#include "solver/progress.hpp"

namespace tdsolve {

namespace {

const char* kUsage =
    "Usage: tdsolve knn (--input SRC | --generate SPEC) (--k K | --radius R) --output FILE.h5\n"
    "                   [options]\n"
    "\n"
    "--k: for every point, its K nearest other points over all n, without storing the\n"
    "matrix: /indices (n × K, int64) and /distances (n × K), sorted by distance, ties\n"
    "broken by the smaller index (as scikit-learn's brute-force NearestNeighbors). Each\n"
    "rank takes a band of rows and compares them with every point; the file is the same\n"
    "for any rank count and backend. At d <= 4, --cull (auto) visits only the\n"
    "blocks that may hold a row's neighbours; such a run keeps its rows in memory to the\n"
    "end, so a stopped one starts over on --resume.\n"
    "--radius: every pair i < j within distance R (<= R), as scipy cKDTree.query_pairs:\n"
    "/pairs (m × 2, int64, sorted) and /distances (m). m is not known in advance: each\n"
    "rank keeps its pairs in memory (20 or 24 bytes a pair) and the file gets them all at the\n"
    "end, so a stopped --radius run starts over on --resume.\n";

const char* kKnnOrder =
    "row i: the K nearest points j != i by distance, ties broken by the smaller j";

// --k: the top k of every row of the n × n rectangle (the point itself
// excluded); --radius: the pairs, kept by a PairListSink.
template <typename T>
class Knn final : public PairCommand<T> {
 public:
  using PairCommand<T>::PairCommand;

  void configure(Problem<T>& p) const override {
    const index_t k = this->options().knn.k;
    if (k > 0) {  // not --radius
      p.domain = DomainKind::rect;
      p.epilogue = EpilogueKind::topk;
      p.k = k;
    }
  }
  void check_size(index_t n, index_t d, const std::string& source) const override {
    const index_t k = this->options().knn.k;
    if (k == 0) return PairCommand<T>::check_size(n, d, source);  // --radius: pairs
    if (k >= n)
      throw InputError("--k " + std::to_string(k) + " needs more than K points, but '" + source +
                       "' has " + std::to_string(n) + " (each point's neighbours are " +
                       "the other n - 1)");
    if (n >= (index_t(1) << 31))
      throw InputError("'" + source + "' has " + std::to_string(n) +
                       " points; tdsolve knn takes fewer than 2^31");
    checked_total(n, n, 0, source);
  }
  // No bound on the bytes: the file holds n × K values, or the pairs found.
  index_t checked_total(index_t rows, index_t cols, index_t value_bytes,
                        const std::string& source) const override {
    return value_bytes == 0 ? rect_total(rows, cols) : pair_total(rows, source);
  }
  void check_output(const Problem<T>& p, const io::PointSet& a, bool bench) const override {
    checked_total(p.rows, p.cols, p.knn() ? 0 : sizeof(T), a.source);
    // --radius: the pairs found are not known in advance; a few bytes a
    // point at least.
    if (!bench)
      check_output_space(this->options().out.output,
                         p.knn() ? double(p.rows) * double(p.k) * (sizeof(T) + 8) : 1 << 20);
  }
  void check_points(Problem<T>& p, const io::PointSet& a) const override {
    if (p.knn()) p.b = p.a;  // the points against themselves
    check_box_dims(this->options().box.dims, a.d, a.source);
    PairCommand<T>::check_points(p, a);
  }

  void identity(const Problem<T>&, const AddKey& add) const override {
    const KnnOptions& k = this->options().knn;
    const BoxOptions& b = this->options().box;
    if (k.k > 0) add("neighbors", std::to_string(k.k));
    if (k.k == 0) add("radius", number_text(k.radius));
    if (b.dims > 0) add("box", box_text(b));
    if (b.triclinic) add("tilt", tilt_text(b));
  }

  // --radius writes a file of its own kind (/pairs and /distances, no /indices).
  std::string kind(const Problem<T>& p) const override { return p.knn() ? "knn" : "radius"; }

  void layout(io::ResultLayout& L, const Problem<T>& p, const mapping::ChunkPlan&) const override {
    using io::Attr;
    const std::string precision = precision_name<T>(), metric = metric_name(p.metric);
    const io::ValueType vt = value_type<T>();
    if (p.knn()) {
      // Offsets count the values of /distances (n × K), not the n × n
      // comparisons of the plan: every chunk is a band of whole rows.
      for (index_t& off : L.chunk_offsets) {
        if (p.culled) {  // comparisons before a chunk -> its first row of the run's order
          off = std::min(p.cull.block_row_at(off) * p.rho, p.rows) * p.k;
        } else {
          off = off / p.cols * p.k;
        }
      }
      const std::vector<Attr> common = {Attr{"n", std::uint64_t(p.rows)},
                                        Attr{"neighbors", std::uint64_t(p.k)},
                                        Attr{"layout", std::string("knn")}};
      std::vector<Attr> a = common;
      for (Attr x : {Attr{"metric", metric}, Attr{"precision", precision},
                     Attr{"features", std::uint64_t(p.d)}, Attr{"block", std::uint64_t(p.rho)},
                     Attr{"order", std::string(kKnnOrder)}})
        a.push_back(x);
      const BoxOptions& b = this->options().box;
      if (b.dims > 0) a.push_back(Attr{"box", box_text(b)});
      L.result = {"distances", vt, {p.rows, p.k}, a, {}};
      L.companion = {"indices", io::ValueType::i64, {p.rows, p.k}, common, {}};
    } else {
      L.result = {"", vt, {}, {}, {}};
      L.lists.push_back(
          {"pairs",
           io::ValueType::i64,
           {0, 2},
           {Attr{"n", std::uint64_t(p.rows)}, Attr{"radius", this->options().knn.radius},
            Attr{"layout", std::string("pairs")}, Attr{"metric", metric},
            Attr{"precision", precision}, Attr{"features", std::uint64_t(p.d)},
            Attr{"block", std::uint64_t(p.rho)}},
           {}});
      const BoxOptions& b = this->options().box;
      if (b.dims > 0) L.lists.back().attrs.push_back(Attr{"box", box_text(b)});
      if (b.triclinic) L.lists.back().attrs.push_back(Attr{"tilt", tilt_text(b)});
      L.lists.push_back({"distances",
                         vt,
                         {0},
                         {Attr{"layout", std::string("pairs")}, Attr{"metric", metric},
                          Attr{"precision", precision}},
                         {}});
    }
    add_metric_attrs(this->options(), p, &L);
  }

  // --radius: the backend selects the pairs within R.
  void complete(Problem<T>& p) const override {
    if (this->options().knn.k == 0) set_select_within(&p, this->options().knn.radius);
    set_problem_box(&p, this->options().box);
  }
  // --radius: pairs farther than R are never visited (--cull). --k: each
  // block row visits the blocks that may hold its rows' neighbours
  // (build_culled_knn; cpu/knn.inc, cuda/knn_kernels.cu).
  bool cull_geometry(const Problem<T>& p, CullGeometry* g) const override {
    if (p.knn()) return true;
    g->cutoff = cull_cutoff(p.metric, p.select.radius);
    return true;
  }
  // --k: --chunk-mb bounds the chunk's rows of K distances and indices;
  // --radius: chunks cut by pairs tested.
  index_t chunk_bound(const Problem<T>& p) const override {
    const ComputeOptions& o = this->options().compute;
    if (p.selects()) return culled_chunk_floor(p, o, select_chunk_pairs(p.total(), o, sizeof(T)));
    const index_t rows =
        std::max<index_t>(1, static_cast<index_t>(this->options().compute.chunk_mb * (1 << 20)) /
                                 (p.k * (sizeof(T) + 8)));
    // culled: the comparisons of that many rows, on average
    if (p.culled) return std::max<index_t>(1, rows * (p.total() / std::max<index_t>(1, p.rows)));
    return rows * p.cols;
  }
  void print_before(const Problem<T>& p, const mapping::ChunkPlan&) const override {
    std::printf("tdsolve %s: %llu points, d = %llu, %s, %s %s, block %llu\n", this->name(),
                (unsigned long long)p.rows, (unsigned long long)p.d,
                p.knn() ? ("the " + std::to_string(p.k) + " nearest of each").c_str()
                        : ("every pair within " + number_text(this->options().knn.radius)).c_str(),
                metric_name(p.metric), precision_name<T>(), (unsigned long long)p.rho);
  }
  std::unique_ptr<Sink<T>> make_sink(io::ResultWriter& w, MPI_Comm, const Problem<T>& p,
                                     const Existing& ex) override {
    if (p.knn() && p.culled) return std::make_unique<KnnRowsSink<T>>(w, p.cull, p.k);
    if (p.knn()) return std::make_unique<ArraySink<T>>(w, p.cols, p.k, true);
    auto list = std::make_unique<RadiusSink<T>>(w, ex.held_pairs, p);
    list_ = list.get();
    return list;
  }
  const char* list_run() const override { return this->options().knn.k > 0 ? nullptr : "--radius"; }
  void print_after(const Problem<T>& p, index_t now, double total) const override {
    const std::string found =
        p.knn() ? std::to_string(p.rows) + " × " + std::to_string(p.k) + " neighbours"
                : std::to_string(list_ ? list_->count() : 0) + " pairs within " +
                      number_text(this->options().knn.radius);
    std::printf("tdsolve %s: found %s among %llu distances in %s (%.3g distances/s", this->name(),
                found.c_str(), (unsigned long long)now, human_seconds(total).c_str(),
                double(now) / total);
  }
  // The pairs' indices (2 int64) and distances (nothing when the run
  // stopped: it keeps none), or the neighbours' distances and indices.
  double result_bytes(const Problem<T>& p, const mapping::ChunkPlan&) const override {
    if (list_) return double(list_->count()) * double(2 * sizeof(std::int64_t) + sizeof(T));
    return double(p.rows) * double(p.k) * double(sizeof(std::int64_t) + sizeof(T));
  }

 private:
  PairListSink<T>* list_ = nullptr;  // --radius
};

struct KnnChoices {
  long long k = 0;
  std::string radius, box, tilt;
};

cli::po::options_description knn_group(KnnChoices& c) {
  static const std::string k_text =
      "the K nearest other points of each point, 1 <= K < n (--backend cuda: K <= " +
      std::to_string(kMaxGpuNeighbors) +
      "): /indices and /distances, n × K, by distance, ties by the smaller index";
  cli::po::options_description g("Neighbours (exactly one of --k and --radius)");
  g.add_options()("k", cli::po::value(&c.k)->value_name("K"), k_text.c_str())(
      "radius", cli::po::value(&c.radius)->value_name("R"),
      "every pair i < j whose distance is <= R (R >= 0): /pairs (m × 2) and /distances (m), "
      "sorted, as scipy cKDTree.query_pairs");
  return g;
}

void finish_knn(KnnOptions& k, const KnnChoices& c, const cli::po::variables_map& vm,
                const ComputeOptions& o, BoxOptions* box) {
  const bool has_k = vm.count("k") > 0, has_r = !c.radius.empty();
  if (has_k == has_r) throw UsageError("give exactly one of --k K and --radius R");
  if (has_k) {
    if (c.k < 1) throw UsageError("--k must be at least 1");
    k.k = static_cast<index_t>(c.k);
  } else {
    k.radius = cli::parse_finite(c.radius, "--radius");
    if (!(k.radius >= 0)) throw UsageError("--radius must be >= 0, got '" + c.radius + "'");
  }
  if (c.box.empty() && c.tilt.empty()) return;
  cli::parse_box(c.box, c.tilt, o.metric, o.weights, box);
  // An orthorhombic box's per-coordinate image is the nearest at any
  // distance; a triclinic cell's only within half its width, which a K-th
  // neighbour need not be.
  if (has_k) {
    if (box->triclinic)
      throw UsageError(
          "knn --k takes an orthorhombic --box (no --tilt): a triclinic cell's "
          "minimum image is certain only within half its width");
    return;
  }
  // The minimum image is every pair's nearest image only within half the
  // shortest width (an orthorhombic box's: its shortest length).
  const double half = box->half_width();
  if (cull_cutoff(o.metric, k.radius) > half)
    throw UsageError("--radius " + c.radius + " reaches past half the shortest --box " +
                     (box->triclinic ? "width" : "length") + " (" + number_text(half) +
                     "): a pair's minimum image is then not its only image within R");
}

class KnnCommand final : public PairCommandOf<Knn> {
 public:
  KnnCommand()
      : PairCommandOf<Knn>({"knn",
                            "the K nearest other points of every point (or all pairs within a "
                            "radius),\nwithout the matrix; as scikit-learn NearestNeighbors / "
                            "cKDTree.query_pairs",
                            kUsage,
                            "result file: /indices and /distances (n × K), or /pairs and "
                            "/distances (--radius)",
                            /*store_points=*/false, /*second_set=*/false, /*spheres=*/false,
                            cli::kKnnChunks | cli::kMap | cli::kCull}) {}

 protected:
  void add_groups(cli::po::options_description& all) override {
    all.add(knn_group(kc_));
    all.add(cli::box_group(kc_.box, kc_.tilt,
                           "a periodic box, one length > 0 a coordinate (euclidean, "
                           "sqeuclidean, cityblock, chebyshev), or for --radius a triclinic "
                           "cell (3-D, euclidean or sqeuclidean): --tilt, or the 9 numbers of "
                           "its vectors a, b, c (rows, a along x, b in the xy plane); distances "
                           "are minimum-image; R at most half the shortest width"));
  }
  void check_groups(const cli::po::variables_map& vm) override {
    finish_knn(o_.knn, kc_, vm, o_.compute, &o_.box);
  }

 private:
  KnnChoices kc_;
};

}  // namespace

std::unique_ptr<Command> make_knn_command() {
  return std::make_unique<KnnCommand>();
}

}  // namespace tdsolve
