// tdsolve edm: the distance of every pair i<j of n points, packed in SciPy's
// condensed order (the family's defaults: solver/commands/pairs.hpp).
#include "solver/commands/pairs.hpp"
#include "solver/commands/sinks.hpp"

namespace tdsolve {

namespace {

const char* kUsage =
    "Usage: tdsolve edm (--input SRC | --generate SPEC) --output FILE.h5 [options]\n"
    "\n"
    "Computes the distance of every pair i<j of n points and writes the C(n,2) values to\n"
    "/distances in SciPy's condensed order (scipy.spatial.distance.squareform gives the\n"
    "matrix). Run it under mpirun/srun to split the work across ranks; the file is the\n"
    "same for any rank count. /progress records each finished chunk: `tdsolve info` says\n"
    "whether a file is complete.\n";

template <typename T>
class Edm final : public PairCommand<T> {
 public:
  using PairCommand<T>::PairCommand;

  void identity(const Problem<T>&, const AddKey& add) const override {
    add("store_points", this->options().out.store_points ? "yes" : "no");
  }

  void layout(io::ResultLayout& L, const Problem<T>& p,
              const mapping::ChunkPlan& plan) const override {
    using io::Attr;
    const std::string precision = precision_name<T>(), metric = metric_name(p.metric);
    L.result = {"distances",
                value_type<T>(),
                {plan.total()},
                {Attr{"n", std::uint64_t(p.rows)}, Attr{"k", std::uint64_t(2)},
                 Attr{"layout", std::string("combinations")}, Attr{"metric", metric},
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

class EdmCommand final : public PairCommandOf<Edm> {
 public:
  EdmCommand()
      : PairCommandOf<Edm>(
            {"edm", "packed distance matrix of n points: C(n,2) values in SciPy condensed order",
             kUsage, "result file: /distances holds C(n,2) values in SciPy condensed order",
             /*store_points=*/true, /*second_set=*/false, /*spheres=*/false,
             cli::kChunks | cli::kMap}) {}
};

}  // namespace

std::unique_ptr<Command> make_edm_command() {
  return std::make_unique<EdmCommand>();
}

}  // namespace tdsolve
