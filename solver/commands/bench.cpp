// tdsolve bench: the driver loop of edm, cross, hist or triplet with a sink
// that drops the results (no file: the problem's loading and the backend's
// setup are the commands', not the output lifecycle); with --problem
// dummy|edm|collide, the map laboratory (solver/lab/).
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "solver/bench_csv.hpp"
#include "solver/commands/pairs.hpp"
#include "solver/commands/triplet.hpp"
#include "solver/driver.hpp"
#include "solver/lab/command.hpp"
#include "solver/lifecycle.hpp"
#include "solver/mpi_util.hpp"
#include "solver/progress.hpp"

namespace tdsolve {

namespace {

struct BenchOptions {
  CommandOptions cmd;
  LabOptions lab;
  int repeat = 5;
  std::string csv;  // append one row here
};

const char* kUsage =
    "Usage: tdsolve bench (--generate SPEC | --input SRC) [--with B | --with-generate SPEC]\n"
    "                     [--bins B --range LO:HI [--box ...]] [options]\n"
    "\n"
    "Times the computation alone: the driver loop of `tdsolve edm` (or of cross, with\n"
    "--with; of hist, with --bins; of triplet, with --problem atm or sw) with a sink that drops\n"
    "the results (no copy back, no file), median of --repeat passes after a warm-up, next\n"
    "to the write ceiling over the same bytes (memset; on the GPU also a plain 16-byte\n"
    "store kernel). --problem dummy3 walks the triplet tiles of --map and does no work\n"
    "in them, to time the block maps. One process.\n"
    "\n"
    "       tdsolve bench --problem dummy|edm|collide --n SIZES [--maps LIST] [--features LIST]\n"
    "                     [--block B] [--map-once] [--repeat R] [--csv FILE] [--no-check]\n"
    "\n"
    "The map laboratory: the tests of the block-map papers (Navarro, Hitschfeld and\n"
    "Bustos) under every block map they compare, B × B threads a block (default 16)\n"
    "over an n × n matrix, each map timed (CUDA events) on the same float32 data:\n"
    "dummy (the map's cost alone), edm (1-4 features from global memory, stored) and\n"
    "collide (spheres in 1-D or 3-D, staged in shared memory, overlaps counted). Per\n"
    "size one line of medians and I = T_bb / T_map, per map a CSV row; then each\n"
    "map's coverage is checked (every element of the triangle exactly once): the\n"
    "float maps fail past their range. Without a GPU the same loops run on the CPU\n"
    "(n <= 8192): a check, not a timing.\n";

// "a:b:c" (a, a+c, ... up to b) or "a,b,c" or "a"; throws UsageError.
std::vector<index_t> parse_sizes(const std::string& text) {
  std::vector<index_t> out;
  const auto number = [&](const std::string& s) {
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
    if (s.empty() || *end || errno || s[0] == '-' || v < 2 || v > (1ull << 20))
      throw UsageError("--n: '" + s + "' is not a size from 2 to 1048576 (in '" + text + "')");
    return static_cast<index_t>(v);
  };
  std::vector<std::string> parts;
  std::stringstream ss(text);
  if (text.find(':') != std::string::npos) {
    for (std::string part; std::getline(ss, part, ':');)
      parts.push_back(part);
    if (parts.size() != 3) throw UsageError("--n wants FIRST:LAST:STEP, got '" + text + "'");
    const index_t first = number(parts[0]), last = number(parts[1]);
    char* end = nullptr;
    const unsigned long long step = std::strtoull(parts[2].c_str(), &end, 10);
    if (parts[2].empty() || *end || parts[2][0] == '-' || step < 1 || first > last)
      throw UsageError("--n wants FIRST <= LAST and a STEP >= 1, got '" + text + "'");
    for (index_t n = first; n <= last; n += step)
      out.push_back(n);
  } else {
    for (std::string part; std::getline(ss, part, ',');)
      out.push_back(number(part));
  }
  if (out.empty() || out.size() > 10000)
    throw UsageError("--n: 1 to 10000 sizes, got '" + text + "'");
  return out;
}

// "1..4" or "1,3" or "3"; throws UsageError.
std::vector<int> parse_feature_list(const std::string& text) {
  std::vector<int> out;
  const auto number = [&](const std::string& s) {
    if (s.size() != 1 || s[0] < '0' || s[0] > '9')
      throw UsageError("--features: '" + s + "' is not a feature count (in '" + text + "')");
    return s[0] - '0';
  };
  const size_t dots = text.find("..");
  if (dots != std::string::npos) {
    const int a = number(text.substr(0, dots)), b = number(text.substr(dots + 2));
    if (a > b) throw UsageError("--features: '" + text + "' is an empty range");
    for (int f = a; f <= b; ++f)
      out.push_back(f);
  } else {
    std::stringstream ss(text);
    for (std::string part; std::getline(ss, part, ',');)
      out.push_back(number(part));
  }
  return out;
}

// The map laboratory's options; everything of the other problems is refused
// (`three_body`: the options of the three-body group, whatever the potentials).
void finish_lab(BenchOptions& b, const cli::Choices& c, const cli::po::variables_map& vm,
                const std::string& problem, const std::string& maps, const std::string& sizes,
                const std::string& features, bool no_check,
                const std::vector<std::string>& three_body) {
  std::vector<std::string> others = {
      "input",   "generate", "with", "with-generate", "bins", "range",    "box",      "metric", "p",
      "weights", "variance", "vi",   "base",          "map",  "chunk-mb", "precision"};
  others.insert(others.end(), three_body.begin(), three_body.end());
  others.insert(others.end(), {"device", "threads"});
  for (const std::string& other : others)
    if (vm.count(other) && !vm[other].defaulted())
      throw UsageError("--" + other + " does not apply to --problem " + problem +
                       " (the map laboratory makes its own float32 data)");
  LabOptions& l = b.lab;
  l.active = true;
  l.problem = problem;
  if (!vm.count("n")) throw UsageError("--problem " + problem + " needs --n SIZES");
  l.sizes = parse_sizes(sizes);
  if (vm.count("maps")) {
    std::stringstream ss(maps);
    for (std::string part; std::getline(ss, part, ',');)
      l.maps.push_back(part);
    if (l.maps.empty()) throw UsageError("--maps: no map named");
  }
  if (vm.count("features")) l.features = parse_feature_list(features);
  l.block = vm["block"].defaulted() ? 16 : static_cast<int>(b.cmd.compute.block);
  if (l.block != 8 && l.block != 16 && l.block != 32)
    throw UsageError("--block for the map laboratory is B of B × B threads: 8, 16 or 32");
  l.check = !no_check;
  cli::check_choice("--backend", c.backend, {"auto", "cpu", "cuda"});
  l.backend = c.backend == "cpu"    ? BackendKind::cpu
              : c.backend == "cuda" ? BackendKind::cuda
                                    : BackendKind::automatic;
  if (b.repeat < 1 || b.repeat > 1000) throw UsageError("--repeat must be between 1 and 1000");
}

// The problem of command `cmd` (edm, cross, hist or triplet), loaded and set
// up as that command does, through the driver loop into a NullSink.
template <typename T>
void bench_typed(const BenchOptions& b, PairCommand<T>& cmd, MPI_Comm comm) {
  const CommandOptions& o = b.cmd;
  check_not_an_input(b.csv, "--csv", files_read(o));
  Sources src;
  const Problem<T> p = load_problem<T>(cmd, comm, &src);
  std::string kind;
  std::unique_ptr<Backend<T>> backend = make_backend<T>(o.compute, p, comm, true, &kind);
  backend->keep_on_device(true);
  const mapping::ChunkPlan plan = agree_plan(p, *backend, cmd.chunk_bound(p), comm);
  NullSink<T> sink;
  std::vector<double> ms;
  for (int r = 0; r <= b.repeat; ++r) {  // the first pass warms up
    const LoopTiming t = run_chunks(plan, {}, *backend, sink, comm, nullptr, nullptr).time;
    if (r > 0) ms.push_back(t.compute * 1e3);
  }
  std::vector<index_t> chunk_bytes;
  for (index_t c = 0; c < plan.chunks(); ++c)
    chunk_bytes.push_back(p.stores_values() ? plan.elements(c) * sizeof(T) : 0);
  // A histogram writes nothing per value: no write ceiling applies.
  const auto ceilings = p.stores_values() ? backend->write_ceilings(chunk_bytes)
                                          : std::vector<typename Backend<T>::Ceiling>{};

  const double bytes = p.stores_values() ? double(plan.total()) * sizeof(T) : 0;
  const double med = median(ms), best = *std::min_element(ms.begin(), ms.end());
  const double memset_ms = ceilings.empty() ? 0 : ceilings[0].seconds * 1e3;
  const double store_ms = ceilings.size() > 1 ? ceilings[1].seconds * 1e3 : 0;
  const char* prec = sizeof(T) == 8 ? "float64" : "float32";
  const std::string device = backend->describe();
  const char* problem = !p.triplets() ? cmd.name()
                        : p.three_body.kernel == TripletKernel::dummy
                            ? "dummy3"
                            : potential_name(p.three_body.potential.kind);
  const std::string map = p.domain == DomainKind::rect ? "rect" : map_name(p.map);
  std::printf(
      "bench: %s %s n=%llu cols=%llu d=%llu %s %s map=%s block=%llu launches=%llu: median %.3f ms "
      "(min %.3f, %d runs), %.3g values/s",
      device.c_str(), problem, (unsigned long long)p.rows, (unsigned long long)p.cols,
      (unsigned long long)p.d, metric_name(p.metric), prec, map.c_str(), (unsigned long long)p.rho,
      (unsigned long long)plan.chunks(), med, best, b.repeat, plan.total() / (med * 1e-3));
  if (memset_ms > 0) {
    std::printf(", %s/s written; ceiling: memset %.3f ms (%s/s)",
                human_bytes(bytes / (med * 1e-3)).c_str(), memset_ms,
                human_bytes(bytes / (memset_ms * 1e-3)).c_str());
    if (store_ms > 0)
      std::printf(", 16-byte stores %.3f ms (%s/s)", store_ms,
                  human_bytes(bytes / (store_ms * 1e-3)).c_str());
    std::printf("; %.1f%% of memset", 100.0 * memset_ms / med);
  } else if (p.triplets()) {
    std::printf(" (triplets; reductions only, so no write ceiling)");
  } else {
    std::printf(" (%llu bins; nothing written per value, so no write ceiling)",
                (unsigned long long)p.hist.bins);
  }
  std::printf("\n");
  if (!b.csv.empty()) {
    off_t before = 0;
    CsvFile f = open_bench_csv(
        b.csv,
        "device,problem,backend,map,n,cols,d,metric,precision,block,launches,pairs,bytes,repeat,"
        "median_ms,min_ms,pairs_per_s,gbytes_per_s,memset_ms,memset_gbytes_per_s,store_ms,"
        "store_gbytes_per_s,fraction_of_memset\n",
        &before);
    std::fprintf(f.get(),
                 "\"%s\",%s,%s,%s,%llu,%llu,%llu,%s,%s,%llu,%llu,%llu,%.0f,%d,%.4f,%.4f,%.4g,"
                 "%.2f,%.4f,%.2f,%.4f,%.2f,%.4f\n",
                 device.c_str(), problem, kind.c_str(), map.c_str(), (unsigned long long)p.rows,
                 (unsigned long long)p.cols, (unsigned long long)p.d, metric_name(p.metric), prec,
                 (unsigned long long)p.rho, (unsigned long long)plan.chunks(),
                 (unsigned long long)plan.total(), bytes, b.repeat, med, best,
                 plan.total() / (med * 1e-3), bytes / (med * 1e-3) / 1e9, memset_ms,
                 memset_ms > 0 ? bytes / (memset_ms * 1e-3) / 1e9 : 0.0, store_ms,
                 store_ms > 0 ? bytes / (store_ms * 1e-3) / 1e9 : 0.0,
                 memset_ms > 0 ? memset_ms / med : 0.0);
    close_bench_csv(f, b.csv, before);
  }
}

class BenchCommand final : public cli::OptionsCommand {
 public:
  const char* name() const override { return "bench"; }
  const char* summary() const override {
    return "kernel-only throughput of the distance computation (no file), vs the write "
           "ceiling;\n--problem dummy|edm|collide: the map laboratory (every block map of the "
           "papers;\nonly in builds configured with -DTDSOLVE_LAB=ON)";
  }

  int run(MPI_Comm comm) override {
    if (b_.lab.active) {
      all_agree(comm, [&] { run_lab(b_.lab, b_.repeat, b_.csv, comm); });
      return 0;
    }
    // The command whose problem this is, from the registry.
    const std::unique_ptr<Command> c = make_command(command_);
    const auto* family = dynamic_cast<const PairFamilyCommand*>(c.get());
    if (!family) throw std::logic_error("bench: '" + command_ + "' is no pair command");
    // No file exists: every failure is an ordinary error (one line, exit 1/2).
    all_agree(comm, [&] {
      if (b_.cmd.compute.fp64) {
        bench_typed<double>(b_, *family->piece<double>(b_.cmd), comm);
      } else {
        bench_typed<float>(b_, *family->piece<float>(b_.cmd), comm);
      }
    });
    return 0;
  }

 protected:
  const char* usage() const override {
    static const std::string text = std::string(kUsage) + lab_help_note();
    return text.c_str();
  }

  void add_options(cli::po::options_description& all) override {
    namespace po = cli::po;
    CommandOptions& o = b_.cmd;
    all.add(cli::input_group(o.in, &o.with));
    all.add(cli::compute_group(o.compute, c_, cli::kBenchChunks | cli::kMap));
    po::options_description h = cli::hist_group(o.hist, c_);
    all.add(h);
    const po::options_description t = triplet_group(o.triplet, tc_, true);
    for (const auto& d : t.options())
      three_body_.push_back(d->long_name());
    all.add(t);
    po::options_description r("Bench");
    r.add_options()("problem", po::value(&problem_)->default_value("auto")->value_name("P"),
                    "auto (edm, cross with --with, hist with --bins), atm or sw (the triplet "
                    "command's kernel with that potential; points in 3-D) or dummy3 (the triplet "
                    "tiles only); dummy, edm or collide: the map laboratory (below)")(
        "maps", po::value(&maps_)->value_name("LIST"),
        "laboratory: maps to time, comma-separated (default bb,ltm-x,ltm-n,ltm-r,ltm,rb,rec,utm; "
        "all: every map; bb is always timed, as the reference)")(
        "n", po::value(&sizes_)->value_name("SIZES"),
        "laboratory: matrix sizes n, as FIRST:LAST:STEP or a comma list (required)")(
        "features", po::value(&features_)->value_name("LIST"),
        "laboratory: edm's features, 1..4 (default) or a list; collide's dimension, 1 and/or 3")(
        "no-check", po::bool_switch(&no_check_),
        "laboratory: skip the coverage check of each map (saves an n × n array of counters)")(
        "map-once", po::bool_switch(&map_once_),
        "laboratory: one thread of each block evaluates the map and shares the tile through "
        "shared memory (default: every thread evaluates it, as in the papers' kernels)")(
        "repeat", po::value(&b_.repeat)->default_value(5),
        "timed passes, 1 to 1000 (median reported)")("csv", po::value(&b_.csv)->value_name("FILE"),
                                                     "append a row of results to FILE")(
        "config", po::value<std::string>()->value_name("FILE.ini"),
        "read options from an INI file; the command line wins")("help,h", "show this help");
    all.add(r);
  }

  void check(const cli::po::options_description&, const cli::po::variables_map& vm, int,
             char**) override {
    CommandOptions& o = b_.cmd;
    const std::string& problem = problem_;
    const bool cross = !o.with.input.empty() || !o.with.generate.empty();
    const bool hist = vm.count("bins") || vm.count("range") || vm.count("box");
    cli::check_choice("--problem", problem,
                      {"auto", "atm", "sw", "dummy3", "dummy", "edm", "collide"});
    if (problem == "dummy" || problem == "edm" || problem == "collide") {
      if (!lab_available()) throw UsageError(kLabNotBuilt);
      finish_lab(b_, c_, vm, problem, maps_, sizes_, features_, no_check_, three_body_);
      b_.lab.map_once = map_once_;
      return;
    }
    for (const char* lab : {"maps", "n", "features"})
      if (vm.count(lab))
        throw UsageError(std::string("--") + lab +
                         " belongs to the map laboratory: --problem dummy, edm or collide");
    if (no_check_ || map_once_)
      throw UsageError(std::string(no_check_ ? "--no-check" : "--map-once") +
                       " belongs to the map laboratory: --problem dummy, edm or collide");
    const bool triplet = problem != "auto";
    if (cross && hist) throw UsageError("bench: --with and --bins do not go together");
    if (triplet && (cross || hist))
      throw UsageError("bench: --problem " + problem + " takes neither --with nor --bins");
    command_ = triplet ? "triplet" : cross ? "cross" : hist ? "hist" : "edm";
    cli::finish_input(o.in, "input", "generate", !cross, vm);
    if (cross) cli::finish_input(o.with, "with", "with-generate", false, vm);
    if (triplet) {
      if (!vm["metric"].defaulted())
        throw UsageError("bench: --metric does not apply to --problem " + problem);
      if (vm["block"].defaulted()) o.compute.block = cli::kTripletBlock;
      tc_.potential = problem == "dummy3" ? "atm" : problem;  // a potential's name
      finish_triplet(o.triplet, tc_, vm);
      o.triplet.kernel = problem == "dummy3" ? TripletKernel::dummy : TripletKernel::potential;
    }
    cli::finish_compute(o.compute, c_,
                        cli::kBenchChunks | cli::kMap | (triplet ? cli::kTriplets : 0));
    if (hist) cli::finish_hist(o.hist, c_, vm, o.compute.metric, o.compute.weights);
    if (b_.repeat < 1 || b_.repeat > 1000) throw UsageError("--repeat must be between 1 and 1000");
  }

 private:
  BenchOptions b_;
  cli::Choices c_;
  TripletChoices tc_;
  std::vector<std::string> three_body_;  // the options of the three-body group
  std::string problem_, maps_, sizes_, features_;
  bool no_check_ = false, map_once_ = false;
  std::string command_;  // the command whose problem is timed: edm, cross, hist or triplet
};

}  // namespace

std::unique_ptr<Command> make_bench_command() {
  return std::make_unique<BenchCommand>();
}

}  // namespace tdsolve
