// tdsolve's command line: one subcommand each (Boost.Program_options), built
// from shared option groups that are parsed once into solver/options.hpp.
//
// Help, version, usage errors and `info` never start MPI, so they are quick
// and print once even under mpirun (only the launcher's rank 0 prints).
// edm, hist, cross, knn, collide, triplet and bench run under MPI; an error every rank agrees on
// ends the run with one line from rank 0 and the same non-zero exit
// everywhere, a local failure after the output exists with one line naming
// the rank and MPI_Abort, so no rank is left waiting.
#include <mpi.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <new>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "io/h5.hpp"
#include "io/info.hpp"
#include "io/input.hpp"
#include "io/spheres.hpp"
#include "solver/commands.hpp"
#include "solver/driver.hpp"
#include "solver/fault.hpp"
#include "solver/fractal/command.hpp"
#include "solver/knn.hpp"
#include "solver/lab/command.hpp"
#include "solver/mpi_util.hpp"
#include "solver/signals.hpp"
#include "version.hpp"

namespace po = boost::program_options;
using namespace tdsolve;

namespace {

// The launcher's rank before MPI_Init (Open MPI, PMIx, Slurm, MPICH), so
// that only one process prints help and usage errors.
bool launcher_rank0() {
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (const char* s = std::getenv(v)) return std::atoi(s) == 0;
  }
  return true;
}

const char* kTopHelp =
    "tdsolve " TDSOLVE_VERSION
    " - triangular-domain solver: all pairs i<j (or triplets i<j<k) of n points,\n"
    "on CPU or GPU, split across MPI ranks, written to one HDF5 file.\n"
    "\n"
    "Usage: tdsolve COMMAND [options]       (under MPI: mpirun -np R tdsolve COMMAND ...)\n"
    "\n"
    "Commands:\n"
    "  edm    packed distance matrix of n points: C(n,2) values in SciPy condensed order\n"
    "  hist   histogram of all pair distances (and the RDF in a periodic box); no matrix\n"
    "  cross  distances between two point sets: the M x K matrix, as scipy cdist\n"
    "  knn    the K nearest other points of every point (or all pairs within a radius),\n"
    "         without the matrix; as scikit-learn NearestNeighbors / cKDTree.query_pairs\n"
    "  collide the pairs of n spheres (1-D or 3-D) that overlap: distance of the centres\n"
    "         < r_i + r_j, in float64\n"
    "  triplet three-body (Axilrod-Teller-Muto) energy, per-point energies and forces of\n"
    "         all triplets i<j<k of n points in 3-D, as LAMMPS pair_style atm\n"
    "  fractal Game of Life (any B/S rule) on an NBB fractal (Sierpinski, Vicsek, ...)\n"
    "         in compact form, through the λ/ν maps of seed 003\n"
    "  info   what a result file holds and whether it is complete\n"
    "  bench  kernel-only throughput of the distance computation (no file), vs the write ceiling;\n"
    "         --problem dummy|edm|collide: the map laboratory (every block map of the papers;\n"
    "         only in builds configured with -DTDSOLVE_LAB=ON)\n"
    "\n"
    "Options:\n"
    "  -h [ --help ]   show this help; `tdsolve COMMAND --help` shows a command's options\n"
    "  --version       print the version\n"
    "\n"
    "Example:\n"
    "  mpirun -np 2 tdsolve edm --generate uniform:20000:3:42 --output d.h5\n"
    "  tdsolve info d.h5\n";

std::string join_command(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    const bool quote = a.empty() || a.find_first_of(" \t'\"$\\") != std::string::npos;
    if (quote) {
      std::string q = "'";
      for (char c : a)
        q += c == '\'' ? std::string("'\\''") : std::string(1, c);
      a = q + "'";
    }
    s += (i ? " " : "") + a;
  }
  return s;
}

void check_choice(const std::string& what, const std::string& v,
                  std::initializer_list<const char*> ok) {
  std::string list;
  for (const char* c : ok) {
    if (v == c) return;
    list += (list.empty() ? "" : ", ") + std::string(c);
  }
  throw UsageError(what + " must be one of " + list + ", not '" + v + "'");
}

// ---- option groups ---------------------------------------------------------

// The strings of enum-valued options until they are checked.
struct Choices {
  std::string metric, precision, backend, map, progress, range, box;
  std::string p, base;  // the metric's parameters
};

// spheres: collide's input (n × 2 or n × 4 spheres, --generate spheres:...).
po::options_description input_group(InputOptions& in, InputOptions* with, bool spheres = false) {
  po::options_description g(with ? "Input (one of each pair)" : "Input (exactly one)");
  if (spheres)
    g.add_options()(
        "input", po::value(&in.input)->value_name("SRC"),
        "spheres, one a row: n × 2 (x, r) for 1-D or n × 4 (x, y, z, r) for 3-D, radii >= 0: "
        "FILE.h5:/dataset (2-D float32/float64 or integer), FILE.npy, or FILE.csv (one sphere per "
        "line; a non-numeric first line is a header)")(
        "generate", po::value(&in.generate)->value_name("SPEC"),
        "synthetic spheres: spheres:N:DIM:SEED[:RMAX], DIM 1 or 3: centres uniform in [0,1)^DIM "
        "(the points of uniform:N:DIM:SEED), radii uniform in (0, RMAX]; RMAX defaults to the "
        "value giving 2 overlapping partners a sphere on average (away from the faces): 1/(N-1) "
        "in 1-D, (pi (N-1))^(-1/3) in 3-D");
  else
    g.add_options()(
        "input", po::value(&in.input)->value_name("SRC"),
        "points, n rows × d features: FILE.h5:/dataset (2-D float32/float64 or integer), "
        "FILE.npy, or FILE.csv (one point per line; a non-numeric first line is a header)")(
        "generate", po::value(&in.generate)->value_name("SPEC"),
        "synthetic points uniform in [0,1)^D: uniform:N:D[:SEED] (SEED defaults to 0)");
  g.add_options()("transpose", po::bool_switch(&in.transpose),
                  "the input stores one point per column (d rows × n columns, as MATLAB and Julia "
                  "write an n × d array): read it transposed")(
      "columns", po::value<std::string>()->value_name("LIST"),
      "use only these columns of the input (after --transpose), 0-based, e.g. 1:4 (columns "
      "1, 2, 3) or 0,2,5:7: leaves out id or label columns");
  if (with) {
    g.add_options()("with", po::value(&with->input)->value_name("SRC"),
                    "the second set, K rows × d features, in any --input format")(
        "with-generate", po::value(&with->generate)->value_name("SPEC"),
        "a synthetic second set: uniform:K:D[:SEED]")(
        "with-transpose", po::bool_switch(&with->transpose), "--transpose for the --with input")(
        "with-columns", po::value<std::string>()->value_name("LIST"),
        "--columns for the --with input");
  }
  return g;
}

po::options_description output_group(OutputOptions& o, const char* what, bool points,
                                     const char* resume_help = nullptr) {
  po::options_description g("Output");
  g.add_options()("output", po::value(&o.output)->value_name("FILE.h5"), what)(
      "overwrite", po::bool_switch(&o.overwrite),
      "replace FILE.h5 if it exists (refused otherwise); the old file stays until the new one "
      "is complete. Also discards an unfinished FILE.h5.partial. Not with --resume")(
      "resume", po::bool_switch(&o.resume),
      resume_help ? resume_help
                  : "continue the unfinished FILE.h5.partial of the same job (any rank count or "
                    "backend); when FILE.h5 is already complete, say so and exit 0; with neither, "
                    "start a new run");
  if (points)
    g.add_options()("store-points", po::bool_switch(&o.store_points),
                    "also store the points, as computed with, in /points");
  return g;
}

// kTriplets: no --metric (euclidean), tiles of 32³ (--block 32 only).
// kCollide: no --metric (euclidean) and its parameters, no --precision
// (float64 always).
enum ComputeFlags { kChunks = 1, kMap = 2, kBenchChunks = 4, kTriplets = 8, kCollide = 16 };

// The triplet tile side: one warp along each edge of a tile.
constexpr index_t kTripletBlock = 32;

po::options_description compute_group(ComputeOptions& o, Choices& c, int flags) {
  po::options_description g("Computation");
  const bool metric = !(flags & (kTriplets | kCollide));
  if (metric)
    g.add_options()(
        "metric", po::value(&c.metric)->default_value("euclidean")->value_name("NAME"),
        "euclidean, sqeuclidean, cityblock, chebyshev, cosine, minkowski, seuclidean, "
        "correlation, braycurtis, canberra, jensenshannon; on 0/1 features (nonzero is 1): "
        "hamming, jaccard, dice, russellrao, rogerstanimoto, sokalmichener, sokalsneath, yule "
        "(as scipy.spatial.distance); also SciPy's aliases and l2, l1, manhattan, linf, in any "
        "case (the file records the name above)");
  if (metric)
    g.add_options()("p", po::value(&c.p)->value_name("P"),
                    "minkowski: the order p > 0, or inf (default 2)")(
        "weights", po::value(&o.weights)->value_name("W"),
        "one weight >= 0 a feature, as SciPy's w: an inline list 1,0.5,2 or a file "
        "(FILE.npy, FILE.h5:/dataset, FILE.csv/.txt; one row or one column). Not for "
        "seuclidean, jensenshannon or the boolean metrics")(
        "variance", po::value(&o.variance)->value_name("V"),
        "seuclidean: the variance of each feature, > 0, in the forms of --weights (default: "
        "the points' variances, ddof=1; cross: of both sets together, as SciPy's cdist)")(
        "base", po::value(&c.base)->value_name("B"),
        "jensenshannon: the logarithm's base, > 1 (default: e)");
  if (!(flags & kCollide))
    g.add_options()("precision", po::value(&c.precision)->default_value("float32")->value_name("P"),
                    (flags & kTriplets)
                        ? "float32 or float64: the arithmetic of each triplet (and the stored "
                          "triplet energies); sums are exact and written as float64"
                        : "float32 or float64: the arithmetic and the stored values");
  g.add_options()("backend", po::value(&c.backend)->default_value("auto")->value_name("B"),
                  "auto (cuda when a GPU is visible, else cpu), cpu or cuda");
  if (flags & kTriplets)
    g.add_options()("block", po::value(&o.block)->default_value(kTripletBlock)->value_name("RHO"),
                    "tile side ρ: each block of work is a ρ×ρ×ρ tile of triplets; 32 is the only "
                    "size (a warp along each edge)");
  else
    g.add_options()(
        "block", po::value(&o.block)->default_value(128)->value_name("RHO"),
        "tile side ρ, 1 to 65536: each block of work is a ρ×ρ tile (cuda: a multiple of 128)");
  if (flags & kChunks)
    g.add_options()("chunk-mb", po::value(&o.chunk_mb)->default_value(64)->value_name("MB"),
                    (flags & kTriplets)
                        ? "with --store-triplets: largest chunk of triplet energies computed "
                          "and written at once, in MiB (1 to 1024); less if memory is short"
                        : "largest chunk of output computed and written at once, in MiB (1 to "
                          "1024); less if memory is short");
  if (flags & kBenchChunks)
    g.add_options()("chunk-mb", po::value(&o.chunk_mb)->default_value(0)->value_name("MB"),
                    "chunk size in MiB, 0 to 1048576 (0: one buffer as large as memory allows, "
                    "usually one launch)");
  g.add_options()(
      "threads", po::value(&o.threads)->default_value(0)->value_name("N"),
      "CPU threads per rank, 0 to 4096 (0: OMP_NUM_THREADS, else the node's cores / ranks on "
      "the node)")("device", po::value(&o.device)->default_value(-1)->value_name("ID"),
                   "GPU for this rank (-1: node-local rank modulo the visible GPUs)");
  if (flags & kMap)
    g.add_options()("map", po::value(&c.map)->default_value("lambda")->value_name("M"),
                    "block map: lambda (only the triangle's or tetrahedron's tiles: λ2, λ3) or "
                    "bb (bounding box or cube, for comparison)");
  return g;
}

// The strings of the triplet options until they are checked.
struct TripletChoices {
  std::string potential = "atm";
  std::string cutoff, cutoff_triple;
};

po::options_description triplet_group(TripletOptions& t, TripletChoices& c, bool bench) {
  po::options_description g("Three-body potential (LAMMPS pair_style atm)");
  if (!bench)
    g.add_options()("potential", po::value(&c.potential)->default_value("atm")->value_name("P"),
                    "atm (Axilrod-Teller-Muto): E = nu (1 + 3 cos g1 cos g2 cos g3) / (r12 r23 "
                    "r31)^3 per triplet");
  g.add_options()("nu", po::value(&t.nu)->default_value(1.0)->value_name("NU"),
                  "the strength nu (LAMMPS pair_coeff * * * NU), finite")(
      "cutoff", po::value(&c.cutoff)->value_name("RC"),
      "count a triplet only when each of its 3 distances is <= RC (LAMMPS cutoff; default: "
      "none)")("cutoff-triple", po::value(&c.cutoff_triple)->value_name("RT"),
               "and only when r12 r23 r31 <= RT^3 (LAMMPS cutoff_triple; default: none)");
  if (!bench)
    g.add_options()("store-triplets", po::bool_switch(&t.store_triplets),
                    "also store every triplet's energy in /triplet_energy, C(n,3) values in "
                    "itertools.combinations order")(
        "store-limit-gb", po::value(&t.store_limit_gb)->default_value(16)->value_name("GB"),
        "refuse --store-triplets above this many GB (0: no limit)");
  return g;
}

double parse_finite(const std::string& s, const std::string& what);

void finish_triplet(TripletOptions& t, const TripletChoices& c) {
  check_choice("--potential", c.potential, {"atm"});
  if (!std::isfinite(t.nu)) throw UsageError("--nu must be a finite number");
  if (!c.cutoff.empty()) {
    t.cutoff = parse_finite(c.cutoff, "--cutoff");
    if (!(t.cutoff > 0)) throw UsageError("--cutoff must be positive, got '" + c.cutoff + "'");
  }
  if (!c.cutoff_triple.empty()) {
    t.cutoff_triple = parse_finite(c.cutoff_triple, "--cutoff-triple");
    if (!(t.cutoff_triple > 0))
      throw UsageError("--cutoff-triple must be positive, got '" + c.cutoff_triple + "'");
  }
  if (!(t.store_limit_gb >= 0 && std::isfinite(t.store_limit_gb)))
    throw UsageError("--store-limit-gb must be 0 (no limit) or a positive number of GB");
}

po::options_description run_group(RunOptions& o, Choices& c, const char* progress_help = nullptr) {
  po::options_description g("Run");
  g.add_options()("config", po::value<std::string>()->value_name("FILE.ini"),
                  "read options from an INI file (`metric = cosine`, one long option per line); "
                  "the command line wins")(
      "progress", po::value(&c.progress)->default_value("auto")->value_name("MODE"),
      progress_help ? progress_help
                    : "auto (a bar on a terminal, log lines otherwise), bar, log or none")(
      "stats", po::value(&o.stats)->value_name("FILE.json"), "write timings as JSON (rank 0)")(
      "max-hours", po::value(&o.max_hours)->default_value(0)->value_name("H"),
      "stop cleanly (exit 75, resumable) before H hours of wall time, e.g. a little under the "
      "batch job's limit (0: no limit)")("quiet", po::bool_switch(&o.quiet),
                                         "print nothing but errors");
  return g;
}

po::options_description hist_group(HistOptions& h, Choices& c) {
  po::options_description g("Histogram");
  g.add_options()("bins", po::value(&h.bins)->value_name("B"),
                  "number of equal bins, 1 to 1000000 (required)")(
      "range", po::value(&c.range)->value_name("LO:HI"),
      "the binned interval [LO, HI], LO < HI (required); distances outside it are counted in "
      "/underflow and /overflow")(
      "box", po::value(&c.box)->value_name("L1,...,Ld"),
      "periodic orthorhombic box: minimum-image distances, and /rdf normalised as MDAnalysis "
      "InterRDF (one length per feature; not with cosine)");
  return g;
}

struct KnnChoices {
  long long k = 0;
  std::string radius;
};

po::options_description knn_group(KnnChoices& c) {
  static const std::string k_text =
      "the K nearest other points of each point, 1 <= K < n (--backend cuda: K <= " +
      std::to_string(kMaxGpuNeighbors) +
      "): /indices and /distances, n × K, by distance, ties by the smaller index";
  po::options_description g("Neighbours (exactly one of --k and --radius)");
  g.add_options()("k", po::value(&c.k)->value_name("K"), k_text.c_str())(
      "radius", po::value(&c.radius)->value_name("R"),
      "every pair i < j whose distance is <= R (R >= 0): /pairs (m × 2) and /distances (m), "
      "sorted, as scipy cKDTree.query_pairs");
  return g;
}

void finish_knn(KnnOptions& k, const KnnChoices& c, const po::variables_map& vm) {
  const bool has_k = vm.count("k") > 0, has_r = !c.radius.empty();
  if (has_k == has_r) throw UsageError("give exactly one of --k K and --radius R");
  if (has_k) {
    if (c.k < 1) throw UsageError("--k must be at least 1");
    k.k = static_cast<index_t>(c.k);
  } else {
    k.radius = parse_finite(c.radius, "--radius");
    if (!(k.radius >= 0)) throw UsageError("--radius must be >= 0, got '" + c.radius + "'");
  }
}

// ---- parsing -----------------------------------------------------------------

// The options whose values are paths: relative ones in a config file are
// relative to its folder (for input and with, the FILE of FILE.h5:/dataset).
const char* const kPathOptions[] = {"input", "with",    "output",  "stats",
                                    "csv",   "weights", "variance"};
// Pairs of options that give one input: the layer that gives either wins.
const char* const kInputPairs[][2] = {{"input", "generate"}, {"with", "with-generate"}};

bool is_path_option(const std::string& name) {
  for (const char* p : kPathOptions)
    if (name == p) return true;
  return false;
}

// `value` with a relative FILE part put under `dir`; with `tidy`, the
// folder of the result without its `..` and symbolic links.
std::string resolve_path(const std::string& name, const std::string& value,
                         const std::filesystem::path& dir, bool tidy = false) {
  io::InputSpec s{value, ""};
  std::vector<double> numbers;
  if ((name == "weights" || name == "variance") && parse_number_list(value, &numbers))
    return value;  // an inline list, not a file
  if (name == "input" || name == "with" || name == "weights" || name == "variance")
    s = io::split_input_spec(value);
  if (s.path.empty() || dir.empty() || std::filesystem::path(s.path).is_absolute()) return value;
  std::filesystem::path file = dir / s.path;
  if (tidy) {
    std::error_code ec;
    const std::filesystem::path folder = std::filesystem::weakly_canonical(file.parent_path(), ec);
    if (!ec) file = folder / file.filename();
  }
  return s.dataset.empty() ? file.string() : file.string() + ":" + s.dataset;
}

// The lines of a config file for command `name`: those before any [section]
// (`common`) and those of [name] (`own`). Sections of the other commands are
// skipped; any other section is an error. Comments and trimming as Boost's.
struct ConfigText {
  std::string common, own;
};

ConfigText read_config(const std::string& path, const std::string& name) {
  std::ifstream f(path);
  if (!f) throw UsageError("cannot read --config '" + path + "'");
  ConfigText t;
  std::string* to = &t.common;
  for (std::string line; std::getline(f, line);) {
    std::string s = line.substr(0, line.find('#'));
    s.erase(0, s.find_first_not_of(" \t\r"));
    s.erase(s.find_last_not_of(" \t\r") + 1);
    if (s.size() >= 2 && s.front() == '[' && s.back() == ']') {
      const std::string section = s.substr(1, s.size() - 2);
      if (section == name) {
        to = &t.own;
      } else if (section == "edm" || section == "hist" || section == "cross" || section == "knn" ||
                 section == "collide" || section == "triplet" || section == "fractal" ||
                 section == "bench") {
        to = nullptr;
      } else {
        throw UsageError("unknown section [" + section + "] in --config '" + path +
                         "' (sections name a command: edm, hist, cross, knn, collide, triplet, "
                         "fractal or bench)");
      }
    } else if (to) {
      *to += line + "\n";
    }
  }
  return t;
}

bool mentions(const po::parsed_options& p, const char* name) {
  for (const po::option& o : p.options)
    if (o.string_key == name) return true;
  return false;
}

void drop(po::parsed_options& p, const char* a, const char* b) {
  auto& v = p.options;
  v.erase(
      std::remove_if(v.begin(), v.end(),
                     [&](const po::option& o) { return o.string_key == a || o.string_key == b; }),
      v.end());
}

// Parses argv[2..] with `desc` (the options of command `name`), then the
// --config file: the command line wins over the file's [name] section, which
// wins over the file's common part. Of an input pair (--input/--generate,
// --with/--with-generate) only the first of these that gives either member
// counts. False when it printed help.
bool parse(int argc, char** argv, const po::options_description& desc, const char* usage,
           const char* name, po::variables_map& vm) {
  try {
    std::vector<std::string> args(argv + 2, argv + argc);
    const po::parsed_options cl = po::command_line_parser(args).options(desc).run();
    po::store(cl, vm);
    if (vm.count("help")) {
      if (launcher_rank0()) std::cout << usage << "\n" << desc << "\n";
      return false;
    }
    if (vm.count("config")) {
      const std::string path = vm["config"].as<std::string>();
      const ConfigText text = read_config(path, name);
      std::istringstream own_text(text.own), common_text(text.common);
      po::parsed_options own = po::parse_config_file(own_text, desc);
      po::parsed_options common = po::parse_config_file(common_text, desc);
      for (const auto& pair : kInputPairs) {
        if (mentions(cl, pair[0]) || mentions(cl, pair[1])) drop(own, pair[0], pair[1]);
        if (mentions(cl, pair[0]) || mentions(cl, pair[1]) || mentions(own, pair[0]) ||
            mentions(own, pair[1]))
          drop(common, pair[0], pair[1]);
      }
      const std::filesystem::path dir = std::filesystem::path(path).parent_path();
      for (po::parsed_options* p : {&own, &common}) {
        for (po::option& o : p->options)
          if (is_path_option(o.string_key) && o.value.size() == 1)
            o.value[0] = resolve_path(o.string_key, o.value[0], dir);
        po::store(*p, vm);
      }
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(std::string(e.what()) + " (see tdsolve " + name + " --help)");
  }
  return true;
}

std::string option_text(const std::string& name, const boost::any& v) {
  if (auto* s = boost::any_cast<std::string>(&v)) return *s;
  if (auto* b = boost::any_cast<bool>(&v)) return *b ? "true" : "false";
  if (auto* i = boost::any_cast<int>(&v)) return std::to_string(*i);
  if (auto* i = boost::any_cast<long>(&v)) return std::to_string(*i);
  if (auto* i = boost::any_cast<long long>(&v)) return std::to_string(*i);
  if (auto* i = boost::any_cast<unsigned>(&v)) return std::to_string(*i);
  if (auto* i = boost::any_cast<unsigned long>(&v)) return std::to_string(*i);
  if (auto* i = boost::any_cast<unsigned long long>(&v)) return std::to_string(*i);
  if (auto* d = boost::any_cast<double>(&v)) {
    char buf[32];  // the shortest text that reads back as the same double
    for (int digits = 1; digits <= 17; ++digits) {
      std::snprintf(buf, sizeof buf, "%.*g", digits, *d);
      if (std::strtod(buf, nullptr) == *d) break;
    }
    return buf;
  }
  throw std::logic_error("option --" + name + " has a type effective_options cannot print");
}

// Every option's final value (command line, config, defaults) as a config
// file, `name = value` a line in the order of --help, paths made absolute;
// options without a value, --config and --help are left out.
std::string effective_options(const po::options_description& desc, const po::variables_map& vm) {
  std::string text;
  for (const auto& d : desc.options()) {
    const std::string name = d->long_name();
    const auto it = vm.find(name);
    if (name == "config" || name == "help" || it == vm.end() || it->second.empty()) continue;
    std::string v = option_text(name, it->second.value());
    if (v.empty()) continue;
    if (is_path_option(name)) v = resolve_path(name, v, std::filesystem::current_path(), true);
    text += name + " = " + v + "\n";
  }
  return text;
}

void finish_input(InputOptions& in, const char* a, const char* b, bool pairs,
                  const po::variables_map& vm, bool spheres = false) {
  if (in.input.empty() == in.generate.empty())
    throw UsageError(std::string("give exactly one of --") + a + " SRC or --" + b +
                     (spheres ? " spheres:N:DIM:SEED[:RMAX]" : " uniform:N:D[:SEED]"));
  const std::string prefix = std::string(a) == "with" ? "with-" : "";
  if (vm.count(prefix + "columns"))
    in.columns = io::parse_columns(vm[prefix + "columns"].as<std::string>());
  if (!in.generate.empty() && (in.transpose || !in.columns.empty()))
    throw UsageError("--" + prefix + "transpose and --" + prefix + "columns apply to --" + a +
                     " (a file), not to --" + b);
  if (spheres && !in.generate.empty()) {
    if (!io::is_spheres_spec(in.generate))
      throw UsageError("collide generates spheres: --generate spheres:N:DIM:SEED[:RMAX], not '" +
                       in.generate + "'");
    io::parse_spheres(in.generate);  // a bad spec, before MPI starts
  } else if (!in.generate.empty()) {
    if (io::is_spheres_spec(in.generate))
      throw UsageError("--" + std::string(b) +
                       " spheres:... is for tdsolve collide; use uniform:N:D[:SEED]");
    // Report a bad spec before MPI starts.
    const io::GeneratorSpec g = io::parse_generator(in.generate);
    if (pairs) io::check_pairs(g.n, in.generate);
  }
}

// --p, --base, --weights, --variance: which metric takes which, and the
// values an inline list or a number can be checked for before any file is
// read (a file's vector is checked when it is read, on rank 0).
void finish_metric_params(ComputeOptions& o, const Choices& c) {
  const std::string name = metric_name(o.metric);
  if (!c.p.empty()) {
    if (o.metric != Metric::minkowski)
      throw UsageError("--p applies to --metric minkowski, not " + name);
    char* end = nullptr;
    const double v = std::strtod(c.p.c_str(), &end);
    if (*end || !(v > 0)) throw UsageError("--p must be a number > 0 (or inf), got '" + c.p + "'");
    o.p = v;
  }
  if (!c.base.empty()) {
    if (o.metric != Metric::jensenshannon)
      throw UsageError("--base applies to --metric jensenshannon, not " + name);
    char* end = nullptr;
    const double v = std::strtod(c.base.c_str(), &end);
    // SciPy takes any base, but below 1 the logarithm is negative and every
    // distance but 0 comes out nan.
    if (*end || !std::isfinite(v) || !(v > 1))
      throw UsageError("--base must be a finite number > 1, got '" + c.base + "'");
    o.base = v;
  }
  if (!o.weights.empty()) {
    if (is_boolean(o.metric))
      throw UsageError("--weights does not apply to --metric " + name +
                       ": tdsolve computes the boolean metrics on bit-packed points, without "
                       "weights");
    if (!takes_weights(o.metric))
      throw UsageError("--weights does not apply to --metric " + name +
                       " (scipy.spatial.distance takes no weights for it)");
    std::vector<double> w;
    if (parse_number_list(o.weights, &w)) check_weights(w, "--weights", true);
  }
  if (!o.variance.empty()) {
    if (o.metric != Metric::seuclidean)
      throw UsageError("--variance applies to --metric seuclidean, not " + name);
    std::vector<double> v;
    if (parse_number_list(o.variance, &v)) check_variance(v, "--variance", true);
  }
}

void finish_compute(ComputeOptions& o, const Choices& c, int flags) {
  if (c.metric.empty()) {
    o.metric = Metric::euclidean;  // triplets
  } else if (!parse_metric(c.metric, &o.metric))
    throw UsageError("unknown --metric '" + c.metric +
                     "'; choose euclidean (l2), sqeuclidean, cityblock (l1, manhattan), "
                     "chebyshev (linf), cosine, minkowski, seuclidean, correlation, braycurtis, "
                     "canberra, jensenshannon, hamming, jaccard, dice, russellrao, "
                     "rogerstanimoto, sokalmichener, sokalsneath or yule; SciPy's aliases and "
                     "any case also work");
  finish_metric_params(o, c);
  if (flags & kCollide) {
    o.fp64 = true;  // collide offers no --precision
  } else {
    check_choice("--precision", c.precision, {"float32", "float64"});
    o.fp64 = c.precision == "float64";
  }
  check_choice("--backend", c.backend, {"auto", "cpu", "cuda"});
  o.backend = c.backend == "cpu"    ? BackendKind::cpu
              : c.backend == "cuda" ? BackendKind::cuda
                                    : BackendKind::automatic;
  if (flags & kMap) {
    check_choice("--map", c.map, {"lambda", "bb"});
    o.map = c.map == "bb" ? MapKind::bb : MapKind::lambda;
  }
  if ((flags & kTriplets) && o.block != kTripletBlock)
    throw UsageError("--block must be 32 for triplets (tiles of 32×32×32 triplets)");
  if (o.block < 1 || o.block > 65536) throw UsageError("--block must be between 1 and 65536");
  if ((flags & kChunks) && !(o.chunk_mb >= 1 && o.chunk_mb <= 1024))
    throw UsageError("--chunk-mb must be between 1 and 1024");
  if ((flags & kBenchChunks) && !(o.chunk_mb >= 0 && o.chunk_mb <= 1048576))
    throw UsageError("--chunk-mb must be between 0 and 1048576");
  if (o.threads < 0 || o.threads > 4096)
    throw UsageError("--threads must be between 0 (automatic) and 4096");
  if (o.device < -1) throw UsageError("--device must be -1 (automatic) or a GPU number");
}

void finish_run(RunOptions& o, const Choices& c, int argc, char** argv) {
  if (!(o.max_hours >= 0 && o.max_hours < 1e6))
    throw UsageError("--max-hours must be between 0 (no limit) and 1e6");
  check_choice("--progress", c.progress, {"auto", "bar", "log", "none"});
  o.progress = o.quiet ? ProgressMode::none : parse_progress(c.progress);
  o.command = join_command(argc, argv);
}

double parse_finite(const std::string& s, const std::string& what) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end || !std::isfinite(v))
    throw UsageError(what + ": '" + s + "' is not a finite number");
  return v;
}

void finish_hist(HistOptions& h, const Choices& c, const po::variables_map& vm, Metric metric,
                 const std::string& weights) {
  if (!vm.count("bins")) throw UsageError("--bins B is required");
  if (h.bins < 1 || h.bins > 1000000) throw UsageError("--bins must be between 1 and 1000000");
  if (c.range.empty()) throw UsageError("--range LO:HI is required");
  const size_t colon = c.range.find(':', c.range[0] == '-' ? 1 : 0);
  if (colon == std::string::npos) throw UsageError("--range wants LO:HI, got '" + c.range + "'");
  h.lo = parse_finite(c.range.substr(0, colon), "--range LO");
  h.hi = parse_finite(c.range.substr(colon + 1), "--range HI");
  if (!(h.lo < h.hi)) throw UsageError("--range wants LO < HI, got '" + c.range + "'");
  if (!c.box.empty()) {
    if (metric != Metric::euclidean && metric != Metric::sqeuclidean &&
        metric != Metric::cityblock && metric != Metric::chebyshev)
      throw UsageError(std::string("--box does not apply to --metric ") + metric_name(metric) +
                       " (only euclidean, sqeuclidean, cityblock, chebyshev)");
    if (!weights.empty()) throw UsageError("--box and --weights do not go together");
    std::stringstream ss(c.box);
    h.box_dims = 0;
    for (std::string part; std::getline(ss, part, ',');) {
      if (h.box_dims == kMaxBoxDims)
        throw UsageError("--box takes at most " + std::to_string(kMaxBoxDims) + " lengths");
      const double L = parse_finite(part, "--box");
      if (!(L > 0)) throw UsageError("--box lengths must be positive, got '" + part + "'");
      h.box[h.box_dims++] = L;
    }
    if (h.box_dims == 0) throw UsageError("--box wants L1,...,Ld");
  }
}

const char* kEdmUsage =
    "Usage: tdsolve edm (--input SRC | --generate SPEC) --output FILE.h5 [options]\n"
    "\n"
    "Computes the distance of every pair i<j of n points and writes the C(n,2) values to\n"
    "/distances in SciPy's condensed order (scipy.spatial.distance.squareform gives the\n"
    "matrix). Run it under mpirun/srun to split the work across ranks; the file is the\n"
    "same for any rank count. /progress records each finished chunk: `tdsolve info` says\n"
    "whether a file is complete.\n";

const char* kHistUsage =
    "Usage: tdsolve hist (--input SRC | --generate SPEC) --bins B --range LO:HI --output FILE.h5\n"
    "                    [--box L1,...,Ld] [options]\n"
    "\n"
    "Counts the distances of all pairs i<j of n points in B equal bins over [LO, HI],\n"
    "without storing a distance: /counts (int64) equals numpy.histogram(d, B, (LO, HI))\n"
    "of the distances d in the run's precision; /underflow and /overflow count those\n"
    "outside. With --box, distances are minimum-image and /rdf is the radial distribution\n"
    "function as MDAnalysis InterRDF normalises it. Same counts on any rank count.\n";

const char* kCrossUsage =
    "Usage: tdsolve cross (--input A | --generate SPEC) (--with B | --with-generate SPEC)\n"
    "                     --output FILE.h5 [options]\n"
    "\n"
    "Computes the distance of every point of A (M × d) to every point of B (K × d) and\n"
    "writes the M × K matrix to /distances, row-major, as scipy.spatial.distance.cdist.\n"
    "Ranks share it in bands of rows; the file is the same for any rank count.\n";

const char* kKnnUsage =
    "Usage: tdsolve knn (--input SRC | --generate SPEC) (--k K | --radius R) --output FILE.h5\n"
    "                   [options]\n"
    "\n"
    "--k: for every point, its K nearest other points over all n, without storing the\n"
    "matrix: /indices (n × K, int64) and /distances (n × K), sorted by distance, ties\n"
    "broken by the smaller index (as scikit-learn's brute-force NearestNeighbors). Each\n"
    "rank takes a band of rows and compares them with every point; the file is the same\n"
    "for any rank count and backend.\n"
    "--radius: every pair i < j within distance R (<= R), as scipy cKDTree.query_pairs:\n"
    "/pairs (m × 2, int64, sorted) and /distances (m). m is not known in advance: each\n"
    "rank keeps its pairs in memory (20 or 24 bytes a pair) and the file gets them all at the\n"
    "end, so a stopped --radius run starts over on --resume.\n";

const char* kCollideUsage =
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

const char* kTripletUsage =
    "Usage: tdsolve triplet (--input SRC | --generate SPEC) --output FILE.h5\n"
    "                       [--potential atm] [--nu NU] [--cutoff RC] [--cutoff-triple RT]\n"
    "                       [--store-triplets] [options]\n"
    "\n"
    "Sums the Axilrod-Teller-Muto three-body energy over every triplet i<j<k of n points\n"
    "in 3-D, as LAMMPS pair_style atm with the same nu, cutoff and cutoff_triple:\n"
    "/energy (the total), /energy_per_point (each triplet's energy split equally among\n"
    "its points) and /forces (n x 3, the analytic -dE/dx), all float64. The sums are\n"
    "exact before the one final rounding, so the file is the same for any rank count,\n"
    "chunk size or thread schedule. Only the tetrahedron's tiles are launched (the\n"
    "block map λ3). --store-triplets also writes each triplet's energy.\n";

const char* kBenchUsage =
    "Usage: tdsolve bench (--generate SPEC | --input SRC) [--with B | --with-generate SPEC]\n"
    "                     [--bins B --range LO:HI [--box ...]] [options]\n"
    "\n"
    "Times the computation alone: the driver loop of `tdsolve edm` (or of cross, with\n"
    "--with; of hist, with --bins; of triplet, with --problem atm) with a sink that drops\n"
    "the results (no copy back, no file), median of --repeat passes after a warm-up, next\n"
    "to the write ceiling over the same bytes (memset; on the GPU also a plain 16-byte\n"
    "store kernel). --problem dummy3 walks the triplet tiles of --map and does no work\n"
    "in them, to time the block maps. One process.\n"
    "\n"
    "       tdsolve bench --problem dummy|edm|collide --n SIZES [--maps LIST] [--features LIST]\n"
    "                     [--block B] [--map-once] [--repeat R] [--csv FILE] [--no-check]\n"
    "\n"
    "The map laboratory: the papers' tests (seeds 000-002) under every block map of\n"
    "the papers, B × B threads a block (default 16) over an n × n matrix, each map\n"
    "timed (CUDA events) on the same float32 data: dummy (the map's cost alone), edm\n"
    "(1-4 features from global memory, stored) and collide (spheres in 1-D or 3-D,\n"
    "staged in shared memory, overlaps counted). Per size one line of medians and\n"
    "I = T_bb / T_map, per map a CSV row; then each map's coverage is checked (every\n"
    "element of the triangle exactly once): the float maps fail past their range.\n"
    "Without a GPU the same loops run on the CPU (n <= 8192): a check, not a timing.\n";

// Parses a command; false when it printed help.
bool parse_command(CommandKind kind, int argc, char** argv, CommandOptions& o) {
  o.kind = kind;
  Choices c;
  po::variables_map vm;
  po::options_description all;
  const bool cross = kind == CommandKind::cross, hist = kind == CommandKind::hist;
  const bool triplet = kind == CommandKind::triplet, knn = kind == CommandKind::knn;
  const bool collide = kind == CommandKind::collide;
  const int flags = (hist ? 0 : kChunks) | (cross ? 0 : kMap) | (triplet ? kTriplets : 0) |
                    (collide ? kCollide : 0);
  TripletChoices tc;
  KnnChoices kc;
  all.add(input_group(o.in, cross ? &o.with : nullptr, collide));
  all.add(output_group(o.out,
                       hist      ? "result file: /counts, /edges, /underflow, /overflow (and /rdf)"
                       : cross   ? "result file: /distances holds the M × K matrix"
                       : triplet ? "result file: /energy, /energy_per_point, /forces (and "
                                   "/triplet_energy)"
                       : knn     ? "result file: /indices and /distances (n × K), or /pairs and "
                                   "/distances (--radius)"
                       : collide ? "result file: /pairs (m × 2), /distances (m) and /count"
                                 : "result file: /distances holds C(n,2) values in SciPy "
                                   "condensed order",
                       kind == CommandKind::edm || triplet));
  if (hist) all.add(hist_group(o.hist, c));
  if (triplet) all.add(triplet_group(o.triplet, tc, false));
  if (knn) all.add(knn_group(kc));
  all.add(compute_group(o.compute, c, flags));
  po::options_description misc = run_group(o.run, c);
  misc.add_options()("help,h", "show this help");
  all.add(misc);
  const char* name = kind == CommandKind::edm ? "edm"
                     : hist                   ? "hist"
                     : triplet                ? "triplet"
                     : knn                    ? "knn"
                     : collide                ? "collide"
                                              : "cross";
  const char* usage = kind == CommandKind::edm ? kEdmUsage
                      : hist                   ? kHistUsage
                      : triplet                ? kTripletUsage
                      : knn                    ? kKnnUsage
                      : collide                ? kCollideUsage
                                               : kCrossUsage;
  if (!parse(argc, argv, all, usage, name, vm)) return false;
  finish_input(o.in, "input", "generate", !cross, vm, collide);
  if (cross) finish_input(o.with, "with", "with-generate", false, vm);
  if (o.out.output.empty()) throw UsageError("--output FILE.h5 is required");
  if (o.out.resume && o.out.overwrite)
    throw UsageError(
        "--resume and --overwrite do not go together: --resume continues an unfinished run (or "
        "reports a finished one), --overwrite starts over");
  finish_compute(o.compute, c, flags);
  if (hist) finish_hist(o.hist, c, vm, o.compute.metric, o.compute.weights);
  if (triplet) finish_triplet(o.triplet, tc);
  if (knn) finish_knn(o.knn, kc, vm);
  finish_run(o.run, c, argc, argv);
  o.run.effective = effective_options(all, vm);
  return true;
}

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

// The map laboratory's options; everything of the other problems is refused.
void finish_lab(BenchOptions& b, const Choices& c, const po::variables_map& vm,
                const std::string& problem, const std::string& maps, const std::string& sizes,
                const std::string& features, bool no_check) {
  for (const char* other :
       {"input",     "generate",  "with",    "with-generate", "bins",          "range",  "box",
        "metric",    "p",         "weights", "variance",      "base",          "map",    "chunk-mb",
        "precision", "potential", "nu",      "cutoff",        "cutoff-triple", "device", "threads"})
    if (vm.count(other) && !vm[other].defaulted())
      throw UsageError("--" + std::string(other) + " does not apply to --problem " + problem +
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
  check_choice("--backend", c.backend, {"auto", "cpu", "cuda"});
  l.backend = c.backend == "cpu"    ? BackendKind::cpu
              : c.backend == "cuda" ? BackendKind::cuda
                                    : BackendKind::automatic;
  if (b.repeat < 1 || b.repeat > 1000) throw UsageError("--repeat must be between 1 and 1000");
}

bool parse_bench(int argc, char** argv, BenchOptions& b) {
  CommandOptions& o = b.cmd;
  Choices c;
  po::variables_map vm;
  po::options_description all;
  all.add(input_group(o.in, &o.with));
  all.add(compute_group(o.compute, c, kBenchChunks | kMap));
  po::options_description h = hist_group(o.hist, c);
  all.add(h);
  TripletChoices tc;
  all.add(triplet_group(o.triplet, tc, true));
  std::string problem, maps, sizes, features;
  bool no_check = false, map_once = false;
  po::options_description r("Bench");
  r.add_options()("problem", po::value(&problem)->default_value("auto")->value_name("P"),
                  "auto (edm, cross with --with, hist with --bins), atm (the triplet "
                  "command's kernel; points in 3-D) or dummy3 (the triplet tiles only); "
                  "dummy, edm or collide: the map laboratory (below)")(
      "maps", po::value(&maps)->value_name("LIST"),
      "laboratory: maps to time, comma-separated (default bb,ltm-x,ltm-n,ltm-r,ltm,rb,rec,utm; "
      "all: every map; bb is always timed, as the reference)")(
      "n", po::value(&sizes)->value_name("SIZES"),
      "laboratory: matrix sizes n, as FIRST:LAST:STEP or a comma list (required)")(
      "features", po::value(&features)->value_name("LIST"),
      "laboratory: edm's features, 1..4 (default) or a list; collide's dimension, 1 and/or 3")(
      "no-check", po::bool_switch(&no_check),
      "laboratory: skip the coverage check of each map (saves an n × n array of counters)")(
      "map-once", po::bool_switch(&map_once),
      "laboratory: one thread of each block evaluates the map and shares the tile through shared "
      "memory (default: every thread evaluates it, as in the papers' kernels)")(
      "repeat", po::value(&b.repeat)->default_value(5),
      "timed passes, 1 to 1000 (median reported)")("csv", po::value(&b.csv)->value_name("FILE"),
                                                   "append a row of results to FILE")(
      "config", po::value<std::string>()->value_name("FILE.ini"),
      "read options from an INI file; the command line wins")("help,h", "show this help");
  all.add(r);
  const std::string usage = std::string(kBenchUsage) + lab_help_note();
  if (!parse(argc, argv, all, usage.c_str(), "bench", vm)) return false;
  const bool cross = !o.with.input.empty() || !o.with.generate.empty();
  const bool hist = vm.count("bins") || vm.count("range") || vm.count("box");
  check_choice("--problem", problem, {"auto", "atm", "dummy3", "dummy", "edm", "collide"});
  if (problem == "dummy" || problem == "edm" || problem == "collide") {
    if (!lab_available()) throw UsageError(kLabNotBuilt);
    finish_lab(b, c, vm, problem, maps, sizes, features, no_check);
    b.lab.map_once = map_once;
    return true;
  }
  for (const char* lab : {"maps", "n", "features"})
    if (vm.count(lab))
      throw UsageError(std::string("--") + lab +
                       " belongs to the map laboratory: --problem dummy, edm or collide");
  if (no_check || map_once)
    throw UsageError(std::string(no_check ? "--no-check" : "--map-once") +
                     " belongs to the map laboratory: --problem dummy, edm or collide");
  const bool triplet = problem != "auto";
  if (cross && hist) throw UsageError("bench: --with and --bins do not go together");
  if (triplet && (cross || hist))
    throw UsageError("bench: --problem " + problem + " takes neither --with nor --bins");
  o.kind = triplet ? CommandKind::triplet
           : cross ? CommandKind::cross
           : hist  ? CommandKind::hist
                   : CommandKind::edm;
  finish_input(o.in, "input", "generate", !cross, vm);
  if (cross) finish_input(o.with, "with", "with-generate", false, vm);
  if (triplet) {
    if (!vm["metric"].defaulted())
      throw UsageError("bench: --metric does not apply to --problem " + problem);
    if (vm["block"].defaulted()) o.compute.block = kTripletBlock;
    finish_triplet(o.triplet, tc);
    o.triplet.kernel = problem == "dummy3" ? TripletKernel::dummy : TripletKernel::atm;
  }
  finish_compute(o.compute, c, kBenchChunks | kMap | (triplet ? kTriplets : 0));
  if (hist) finish_hist(o.hist, c, vm, o.compute.metric, o.compute.weights);
  if (b.repeat < 1 || b.repeat > 1000) throw UsageError("--repeat must be between 1 and 1000");
  return true;
}

const char* kFractalUsage =
    "Usage: tdsolve fractal --shape SHAPE --level R --steps T --output FILE.h5 [options]\n"
    "\n"
    "Runs a Life-like rule (Conway's B3/S23 by default) for T steps on an NBB fractal\n"
    "(seed 003: Sierpinski triangle and carpet, Vicsek, ...) held in compact form: k^r\n"
    "cells instead of the n×n embedding, n = s^r. Each cell sees its 8 embedded\n"
    "neighbours that lie on the fractal. Writes the state at steps 0, K, 2K, ... and T\n"
    "(/states, compact order), the live cells of every step (/live) and the fractal's\n"
    "parameters. --map bb and lambda run the same steps on the embedded layout, for\n"
    "comparison; every strategy, rho and backend gives the same bytes. One rank only.\n";

// Parses tdsolve fractal; false when it printed help.
bool parse_fractal(int argc, char** argv, fractal::FractalOptions& o) {
  Choices c;
  std::string layout, map;
  po::variables_map vm;
  po::options_description all;
  po::options_description f("Fractal");
  std::string presets;
  for (const auto& [name, table] : fractal::presets())
    presets += (presets.empty() ? "" : ", ") + name + " (" + table + ")";
  f.add_options()("shape", po::value(&o.shape)->value_name("SHAPE"),
                  ("a preset: " + presets +
                   "; or your own table S:x,y/x,y/...: the side s (2 to 16) and the filled "
                   "sub-squares of the s×s square, x rightwards and y downwards, in replica order")
                      .c_str())("level", po::value(&o.level)->value_name("R"),
                                "the fractal's level r: n = s^r cells a side, k^r cells in all")(
      "steps", po::value(&o.steps)->value_name("T"), "generations to run (0 or more)")(
      "rule", po::value(&o.rule)->default_value("B3/S23")->value_name("B../S.."),
      "birth and survival counts of live neighbours, as in Golly: B3/S23 is Conway's Life")(
      "init", po::value(&o.init)->default_value("random:0.5:1")->value_name("SPEC"),
      "random:DENSITY:SEED: each cell alive with probability DENSITY (a hash of SEED and the "
      "cell's compact index: the same start on every layout and backend)")(
      "input", po::value(&o.input)->value_name("FILE.h5:/DSET"),
      "start from a state instead: a 1-D integer dataset of k^r values 0/1 in compact order, or "
      "a 2-D one such as a run's /states (its last snapshot written)")(
      "snapshot-every", po::value(&o.snapshot_every)->default_value(0)->value_name("K"),
      "also write the state every K steps (0: only at step 0 and step T)")(
      "layout", po::value(&layout)->value_name("L"),
      "compact (k^r bytes; with --map nu, the default) or embedded (n×n bytes; with --map bb "
      "or lambda)")("map", po::value(&map)->value_name("M"),
                    "nu: a block per coarse cell of the compact layout, λ to place it and ν to "
                    "find its neighbours (default); lambda: the same grid over the embedded "
                    "layout; bb: a bounding box over the whole embedding")(
      "rho", po::value(&o.engine.rho)->default_value(0)->value_name("RHO"),
      "side of a coarse cell: a power of s up to 64 (0: the largest up to 32 the level allows)")(
      "tensor-cores", po::bool_switch(&o.engine.tensor_cores),
      "CUDA, --map nu: form the coarse maps' sums (eqs. 7-8) with tensor-core MMA; the same "
      "coordinates as without")("backend",
                                po::value(&c.backend)->default_value("auto")->value_name("B"),
                                "auto (cuda when a GPU is visible, else cpu), cpu or cuda")(
      "threads", po::value(&o.engine.threads)->default_value(0)->value_name("N"),
      "CPU threads (0: OMP_NUM_THREADS or all cores)")(
      "device", po::value(&o.engine.device)->default_value(-1)->value_name("D"),
      "GPU to use (-1: the first)")(
      "bench", po::bool_switch(&o.bench),
      "time the steps from the --init state instead of writing a file (no --output)")(
      "repeat", po::value(&o.repeat)->default_value(3)->value_name("R"),
      "with --bench: runs of T steps to take the median of (after one warm-up)")(
      "csv", po::value(&o.csv)->value_name("FILE"), "with --bench: append one row to FILE");
  all.add(f);
  all.add(output_group(o.out, "result file: /states, /steps, /live, /replicas", false,
                       "continue the unfinished FILE.h5.partial of the same job from its last "
                       "snapshot (any backend or strategy); when FILE.h5 is already complete, "
                       "say so and exit 0; with neither, start a new run"));
  po::options_description misc =
      run_group(o.run, c, "none: no line per snapshot; auto, bar and log: a line per snapshot");
  misc.add_options()("help,h", "show this help");
  all.add(misc);
  if (!parse(argc, argv, all, kFractalUsage, "fractal", vm)) return false;
  if (o.shape.empty()) throw UsageError("--shape is required (see tdsolve fractal --help)");
  if (!vm.count("level")) throw UsageError("--level R is required");
  if (!vm.count("steps")) throw UsageError("--steps T is required");
  if (o.steps < 0 || o.steps > 100'000'000)
    throw UsageError("--steps must be from 0 to 100000000 (/live holds a count per step)");
  if (o.snapshot_every < 0) throw UsageError("--snapshot-every must be 0 or more");
  if (o.snapshot_every > 0 && o.steps / o.snapshot_every > 1000000)
    throw UsageError("--snapshot-every: more than a million snapshots; take fewer");
  const fractal::Shape shape = fractal::parse_shape(o.shape);
  const fractal::Fractal fr = fractal::make_fractal(shape, o.level);
  fractal::parse_rule(o.rule);
  if (vm.count("input") && !vm["init"].defaulted())
    throw UsageError("--init and --input both give the start; give one");
  if (o.input.empty()) fractal::parse_random_init(o.init);
  if (!layout.empty()) check_choice("--layout", layout, {"compact", "embedded"});
  if (!map.empty()) check_choice("--map", map, {"nu", "lambda", "bb"});
  if (map.empty()) map = layout == "embedded" ? "lambda" : "nu";
  if (layout.empty()) layout = map == "nu" ? "compact" : "embedded";
  if ((layout == "compact") != (map == "nu"))
    throw UsageError("--layout " + layout + " does not go with --map " + map +
                     ": the compact layout is read through ν (--map nu); the embedded one with "
                     "--map bb or lambda");
  o.engine.strategy = map == "nu"       ? fractal::Strategy::nu
                      : map == "lambda" ? fractal::Strategy::lambda
                                        : fractal::Strategy::bb;
  if (o.engine.rho) fractal::make_blocking(fr, o.engine.rho);
  if (o.engine.tensor_cores && o.engine.strategy != fractal::Strategy::nu)
    throw UsageError("--tensor-cores goes with --map nu (the coarse maps of the compact layout)");
  check_choice("--backend", c.backend, {"auto", "cpu", "cuda"});
  o.backend = c.backend == "cpu"    ? BackendKind::cpu
              : c.backend == "cuda" ? BackendKind::cuda
                                    : BackendKind::automatic;
  if (o.engine.threads < 0) throw UsageError("--threads must be 0 (automatic) or more");
  if (o.bench) {
    if (!o.out.output.empty()) throw UsageError("--bench writes no file: leave out --output");
    if (!o.input.empty()) throw UsageError("--bench starts from --init random:...; not --input");
    if (o.steps < 1) throw UsageError("--bench needs --steps 1 or more");
    if (o.repeat < 1 || o.repeat > 1000) throw UsageError("--repeat must be between 1 and 1000");
  } else {
    if (o.out.output.empty()) throw UsageError("--output FILE.h5 is required");
    if (o.out.resume && o.out.overwrite)
      throw UsageError(
          "--resume and --overwrite do not go together: --resume continues an "
          "unfinished run (or reports a finished one), --overwrite starts over");
    if (!o.csv.empty() || !vm["repeat"].defaulted())
      throw UsageError("--repeat and --csv go with --bench");
  }
  finish_run(o.run, c, argc, argv);
  o.run.effective = effective_options(all, vm);
  return true;
}

// Runs f under MPI: collective errors end with one line from rank 0 and the
// same exit code on every rank; anything else aborts the job with the rank.
template <typename F>
int mpi_main(int argc, char** argv, F&& f) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  io::quiet_hdf5_errors();
  const int rank = comm_rank(MPI_COMM_WORLD);
  int code = 0;
  try {
    all_agree(MPI_COMM_WORLD, [&] { arm_faults(rank); });
    code = f(MPI_COMM_WORLD);
  } catch (const CollectiveError& e) {
    if (rank == 0) std::fprintf(stderr, "tdsolve: error: %s\n", one_line(e.what()).c_str());
    code = e.exit_code;
  } catch (const std::bad_alloc&) {
    abort_run(MPI_COMM_WORLD, "out of memory");
  } catch (const std::exception& e) {
    abort_run(MPI_COMM_WORLD, e.what());
  }
  MPI_Finalize();
  return code;
}

int info_main(int argc, char** argv) {
  if (argc < 3 || std::string(argv[2]) == "--help" || std::string(argv[2]) == "-h") {
    std::cout << "Usage: tdsolve info FILE.h5\n\n"
                 "Prints what a result file holds (parameters, datasets) and whether every chunk\n"
                 "of it was written. Exit status: 0 complete, 3 incomplete or not a tdsolve\n"
                 "result, 1 unreadable.\n";
    return argc < 3 ? 2 : 0;
  }
  if (argc > 3) throw UsageError("tdsolve info takes one file");
  io::quiet_hdf5_errors();
  return io::describe_result(argv[2], std::cout);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string cmd = argc > 1 ? argv[1] : "";
    if (cmd.empty() || cmd == "-h" || cmd == "--help" || cmd == "help") {
      if (launcher_rank0()) std::cout << kTopHelp;
      return cmd.empty() ? 2 : 0;
    }
    if (cmd == "--version" || cmd == "version") {
      if (launcher_rank0()) std::cout << "tdsolve " TDSOLVE_VERSION "\n";
      return 0;
    }
    if (cmd == "info") return info_main(argc, argv);
    if (cmd == "fractal") {
      fractal::FractalOptions o;
      if (!parse_fractal(argc, argv, o)) return 0;
      install_stop_signals();
      return mpi_main(argc, argv, [&](MPI_Comm comm) { return fractal::run_fractal(o, comm); });
    }
    if (cmd == "bench") {
      BenchOptions o;
      if (!parse_bench(argc, argv, o)) return 0;
      return mpi_main(argc, argv, [&](MPI_Comm comm) {
        if (o.lab.active)
          all_agree(comm, [&] { run_lab(o.lab, o.repeat, o.csv, comm); });
        else
          run_bench(o, comm);
        return 0;
      });
    }
    for (auto [name, kind] : {std::pair<const char*, CommandKind>{"edm", CommandKind::edm},
                              {"hist", CommandKind::hist},
                              {"cross", CommandKind::cross},
                              {"knn", CommandKind::knn},
                              {"collide", CommandKind::collide},
                              {"triplet", CommandKind::triplet}}) {
      if (cmd != name) continue;
      CommandOptions o;
      if (!parse_command(kind, argc, argv, o)) return 0;
      // Before MPI_Init: a batch system's signal in the first second must
      // also stop the run cleanly, not kill it.
      install_stop_signals();
      return mpi_main(argc, argv, [&](MPI_Comm comm) { return run_command(o, comm); });
    }
    throw UsageError(
        "unknown command '" + cmd +
        "' (commands: edm, hist, cross, knn, collide, triplet, fractal, info, bench; see "
        "tdsolve --help)");
  } catch (const std::bad_alloc&) {
    if (launcher_rank0()) std::fprintf(stderr, "tdsolve: error: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    if (launcher_rank0()) std::fprintf(stderr, "tdsolve: error: %s\n", one_line(e.what()).c_str());
    return exit_code_of(e);
  }
}
