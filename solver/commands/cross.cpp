// tdsolve cross: the M × K matrix of distances between two point sets, as
// scipy.spatial.distance.cdist.
#include "solver/commands/pairs.hpp"
#include "solver/commands/sinks.hpp"

namespace tdsolve {

namespace {

const char* kUsage =
    "Usage: tdsolve cross (--input A | --generate SPEC) (--with B | --with-generate SPEC)\n"
    "                     --output FILE.h5 [options]\n"
    "\n"
    "Computes the distance of every point of A (M × d) to every point of B (K × d) and\n"
    "writes the M × K matrix to /distances, row-major, as scipy.spatial.distance.cdist.\n"
    "Ranks share it in bands of rows; the file is the same for any rank count.\n";

template <typename T>
class Cross final : public PairCommand<T> {
 public:
  using PairCommand<T>::PairCommand;

  void configure(Problem<T>& p) const override { p.domain = DomainKind::rect; }
  bool second_set() const override { return true; }
  void check_size(index_t, index_t, const std::string&) const override {}
  index_t checked_total(index_t rows, index_t cols, index_t value_bytes,
                        const std::string& source) const override {
    const index_t total = rect_total(rows, cols);
    check_file_bytes(total, value_bytes, source);
    return total;
  }

  void layout(io::ResultLayout& L, const Problem<T>& p, const mapping::ChunkPlan&) const override {
    using io::Attr;
    const std::string precision = precision_name<T>(), metric = metric_name(p.metric);
    L.result = {"distances",
                value_type<T>(),
                {p.rows, p.cols},
                {Attr{"rows", std::uint64_t(p.rows)}, Attr{"cols", std::uint64_t(p.cols)},
                 Attr{"layout", std::string("matrix")}, Attr{"metric", metric},
                 Attr{"precision", precision}, Attr{"features", std::uint64_t(p.features)},
                 Attr{"block", std::uint64_t(p.rho)}},
                {}};
    add_metric_attrs(this->options(), p, &L);
  }

  std::unique_ptr<Sink<T>> make_sink(io::ResultWriter& w, MPI_Comm, const Problem<T>&,
                                     const Existing&) override {
    return std::make_unique<ArraySink<T>>(w);
  }
  std::unique_ptr<Sink<T>> make_memory_sink(T* out) override {
    return std::make_unique<MemorySink<T>>(out);
  }
};

class CrossCommand final : public PairCommandOf<Cross> {
 public:
  CrossCommand()
      : PairCommandOf<Cross>(
            {"cross", "distances between two point sets: the M x K matrix, as scipy cdist", kUsage,
             "result file: /distances holds the M × K matrix",
             /*store_points=*/false, /*second_set=*/true, /*spheres=*/false, cli::kChunks}) {}
};

}  // namespace

std::unique_ptr<Command> make_cross_command() {
  return std::make_unique<CrossCommand>();
}

}  // namespace tdsolve
