// The shared option groups, the command line and the --config file
// (solver/cli/options.hpp).
#include "solver/cli/options.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/suggest.hpp"
#include "io/input.hpp"
#include "io/spheres.hpp"
#include "io/trajectory.hpp"

namespace tdsolve::cli {

// The launcher's rank before MPI_Init (Open MPI, PMIx, Slurm, MPICH), so
// that only one process prints help and usage errors.
bool launcher_rank0() {
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (const char* s = std::getenv(v)) return std::atoi(s) == 0;
  }
  return true;
}

namespace {

// Words as one line, quoted for a shell where needed.
std::string join_words(const std::vector<std::string>& words) {
  std::string s;
  for (size_t i = 0; i < words.size(); ++i) {
    std::string a = words[i];
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

}  // namespace

std::string join_command(int argc, char** argv) {
  return join_words(std::vector<std::string>(argv, argv + argc));
}

void check_choice(const std::string& what, const std::string& v,
                  std::initializer_list<const char*> ok) {
  std::string list;
  std::vector<std::string> names;
  for (const char* c : ok) {
    if (v == c) return;
    list += (list.empty() ? "" : ", ") + std::string(c);
    names.emplace_back(c);
  }
  throw UsageError(what + " must be one of " + list + ", not '" + v + "'" + did_you_mean(v, names));
}

// spheres: collide's input (n × 2 or n × 4 spheres, --generate spheres:...).
po::options_description input_group(InputOptions& in, InputOptions* with, bool spheres) {
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
        "FILE.npy, or FILE.csv (one point per line; a non-numeric first line is a header); or a "
        "frame of a trajectory: FILE.dump/.lammpstrj (LAMMPS), FILE.xyz/.extxyz, FILE.h5md "
        "(H5MD), FILE.h5:/dataset of frames × n × d (see --frame)")(
        "generate", po::value(&in.generate)->value_name("SPEC"),
        "synthetic points uniform in [0,1)^D: uniform:N:D[:SEED] (SEED defaults to 0)");
  g.add_options()("transpose", po::bool_switch(&in.transpose),
                  "the input stores one point per column (d rows × n columns, as MATLAB and Julia "
                  "write an n × d array): read it transposed")(
      "columns", po::value<std::string>()->value_name("LIST"),
      "use only these columns of the input (after --transpose), 0-based, e.g. 1:4 (columns "
      "1, 2, 3) or 0,2,5:7: leaves out id or label columns")(
      "frame", po::value<std::int64_t>(&in.frame)->value_name("K"),
      "of a trajectory input (LAMMPS dump, extended XYZ, H5MD, or an HDF5 dataset frames × n × "
      "d): use frame K (0-based; negative counts from the end); required when it holds several "
      "frames (cross and hist --with: also of --with when that is a trajectory)");
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
                                     const char* resume_help) {
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

po::options_description compute_group(ComputeOptions& o, Choices& c, int flags) {
  po::options_description g("Computation");
  const bool metric = !(flags & (kTriplets | kCollide | kCentres));
  if (metric)
    g.add_options()(
        "metric", po::value(&c.metric)->default_value("euclidean")->value_name("NAME"),
        "euclidean, sqeuclidean, cityblock, chebyshev, cosine, minkowski, seuclidean, "
        "correlation, braycurtis, canberra, jensenshannon, mahalanobis; boolean (nonzero is "
        "true; hamming and jaccard compare values): hamming, jaccard, dice, russellrao, "
        "rogerstanimoto, sokalmichener, sokalsneath, yule (as scipy.spatial.distance); also "
        "SciPy's aliases and l2, l1, manhattan, linf, in any "
        "case (the file records the name above)");
  if (metric)
    g.add_options()("p", po::value(&c.p)->value_name("P"),
                    "minkowski: the order p > 0, or inf (default 2)")(
        "weights", po::value(&o.weights)->value_name("W"),
        "one weight >= 0 a feature, as SciPy's w: an inline list 1,0.5,2 or a file "
        "(FILE.npy, FILE.h5:/dataset, FILE.csv/.txt; one row or one column). Not for "
        "seuclidean, jensenshannon or mahalanobis")(
        "variance", po::value(&o.variance)->value_name("V"),
        "seuclidean: the variance of each feature, > 0, in the forms of --weights (default: "
        "the points' variances, ddof=1; cross: of both sets together, as SciPy's cdist)")(
        "vi", po::value(&o.vi)->value_name("VI"),
        "mahalanobis: the inverse covariance, a d × d matrix file in any --input format, "
        "symmetric positive definite (default: the inverse of the points' covariance; cross: "
        "of both sets together, as SciPy's cdist)")(
        "base", po::value(&c.base)->value_name("B"),
        "jensenshannon: the logarithm's base, > 1 (default: e)");
  if (!(flags & kCollide))
    g.add_options()("precision", po::value(&c.precision)->default_value("float32")->value_name("P"),
                    (flags & kTriplets)
                        ? "float32 or float64: the arithmetic of each triplet (and the stored "
                          "triplet energies); sums are exact and written as float64"
                    : (flags & kCentres)
                        ? "float32 or float64: the arithmetic of the legs and their cosines (each "
                          "angle's bin is then found in float64)"
                        : "float32 or float64: the arithmetic and the stored values");
  g.add_options()("backend", po::value(&c.backend)->default_value("auto")->value_name("B"),
                  "auto (cuda when a GPU is visible, else cpu), cpu or cuda");
  if (flags & kTriplets)
    g.add_options()("block", po::value(&o.block)->default_value(kTripletBlock)->value_name("RHO"),
                    "tile side ρ: each block of work is a ρ×ρ×ρ tile of triplets; 32 is the only "
                    "size (a warp along each edge)");
  else if (flags & kCentres)
    g.add_options()("block", po::value(&o.block)->default_value(128)->value_name("RHO"),
                    "centres a block row, 1 to 65536: chunks (and ranks' shares) are whole "
                    "block rows");
  else
    g.add_options()(
        "block", po::value(&o.block)->default_value(128)->value_name("RHO"),
        "tile side ρ, 1 to 65536: each block of work is a ρ×ρ tile (cuda: a multiple of 128; "
        "knn --k culled on the cpu backend, unless given: 32 at d <= 3, 64 at d = 4)");
  if (flags & kChunks)
    g.add_options()("chunk-mb", po::value(&o.chunk_mb)->default_value(64)->value_name("MB"),
                    (flags & kTriplets)
                        ? "with --store-triplets: largest chunk of triplet energies computed "
                          "and written at once, in MiB (1 to 1024); less if memory is short"
                        : "output computed and written at once, in MiB (1 to 1024): as many "
                          "block rows as fit, at least one; less if memory is short");
  if (flags & kSelectChunks)
    g.add_options()("chunk-mb", po::value(&o.chunk_mb)->default_value(0)->value_name("MB"),
                    "0: chunks of about 1/256 of the pairs tested (at most 2^28 pairs); 1 to "
                    "1024: at most MB MiB of distances tested a chunk (8 bytes a pair)");
  if (flags & kKnnChunks)
    g.add_options()("chunk-mb", po::value(&o.chunk_mb)->default_value(64)->value_name("MB"),
                    "--k: largest chunk of neighbour lists computed and written at once, in MiB "
                    "(1 to 1024); less if memory is short. --radius, when given: at most MB MiB "
                    "of distances tested a chunk (default there: about 1/256 of the pairs, at "
                    "most 2^28)");
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
  if (flags & kCull)
    g.add_options()(
        "cull", po::value(&c.cull)->default_value("auto")->value_name("MODE"),
        "auto, on or off: order the points along a Morton curve and visit only the tiles whose "
        "bounding boxes may hold a pair within the cutoff (same results as off). auto culls "
        "when at most half of the tiles survive (knn --k: 90%, CPU only); the log line and the "
        "file say what it chose. For euclidean, sqeuclidean, cityblock, chebyshev and "
        "minkowski, d <= 8 (knn --k: d <= 4)");
  return g;
}

po::options_description run_group(RunOptions& o, Choices& c, const char* progress_help) {
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
      "periodic box: minimum-image distances, and /rdf normalised as MDAnalysis InterRDF. "
      "Orthorhombic: one length per feature (euclidean, sqeuclidean, cityblock, chebyshev); "
      "triclinic (3-D, euclidean or sqeuclidean): with --tilt, or the 9 numbers of the cell's "
      "vectors a, b, c (rows, a along x, b in the xy plane), and RANGE's HI at most half the "
      "cell's shortest width. Without --box, a trajectory frame's periodic cell is the box; "
      "--box none: no box")(
      "frames", po::value(&h.frames)->value_name("START:STOP[:STEP]"),
      "of a trajectory --input: bin these frames (Python's slice: 0:100, ::10, -50:) into one "
      "histogram in one run, each frame's pairs once; /rdf is their average (InterRDF over "
      "those frames, normalised by the mean volume of their cells, each frame in its own cell, "
      "as for an NPT run; or all in --box). Resumes frame by frame")(
      "per-frame", po::bool_switch(&h.per_frame),
      "with --frames: also each frame's counts, /frame_counts (frames × bins)")(
      "types", po::value(&h.types)->value_name("SRC"),
      "each point's type, for partial RDFs in one pass: a column of the trajectory --input (a "
      "LAMMPS dump's `type`, an extended XYZ file's `species`, H5MD's `species`) or a file of one "
      "label per point (text, or FILE.h5:/dataset); one histogram per type pair (--pairs): "
      "/counts is pairs × bins")(
      "pairs", po::value(&h.pairs)->value_name("A-B,..."),
      "with --types: the type pairs to bin, each in its own histogram (default: every pair of "
      "types: A-A, A-B, ..., B-B in the types' order); A-B counts each pair of an A and a B once")(
      "exclude", po::value(&h.exclude)->value_name("SRC"),
      "each point's molecule (a column such as a dump's `mol`, or a file, as --types): pairs of "
      "one molecule are not counted (MDAnalysis InterRDF's exclusion_block)")(
      "exclude-block", po::value(&h.exclude_block)->value_name("N"),
      "pairs i, j (input order) with i/N = j/N are not counted: molecules of N consecutive "
      "points, as InterRDF's exclusion_block=(N, N)")(
      "norm", po::value(&h.norm)->value_name("rdf|density|none"),
      "what /rdf holds, as MDAnalysis InterRDF's norm: rdf, g(r) (needs a box; the default "
      "where there is one), density (counts per frame per shell volume), none (counts per "
      "frame); counts in both orders as MDAnalysis counts them")(
      "tilt", po::value(&c.tilt)->value_name("XY,XZ,YZ"), kTiltHelp);
  return g;
}

// ---- parsing -----------------------------------------------------------------

namespace {

// The options whose values are paths: relative ones in a config file are
// relative to its folder (for input and with, the FILE of FILE.h5:/dataset).
const char* const kPathOptions[] = {"input",   "with",     "output", "stats", "csv",
                                    "weights", "variance", "vi",     "types", "exclude"};
// Pairs of options that are one choice (an input; continue or start over):
// the layer that gives either wins.
const char* const kChoicePairs[][2] = {
    {"input", "generate"}, {"with", "with-generate"}, {"overwrite", "resume"}};

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
  if (name == "input" || name == "with" || name == "weights" || name == "variance" || name == "vi")
    s = io::split_input_spec(value);
  if (name == "types" || name == "exclude") {
    // A column of the input (a dump's `type`) or a file of labels: a path
    // only where such a file exists.
    s = io::split_input_spec(value);
    std::error_code ec;
    if (s.path.empty() || !std::filesystem::is_regular_file(dir / s.path, ec)) return value;
  }
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
// (`common`) and those of [name] (`own`). Sections of the other commands
// (the registry's) are skipped; any other section is an error. Comments and
// trimming as Boost's.
struct ConfigText {
  std::string common, own;
};

ConfigText read_config(const std::string& path, const std::string& name) {
  // A folder opens as a stream that reads nothing: it would pass as an
  // empty file. (A pipe, e.g. --config <(...), is read as a file.)
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw UsageError("--config '" + path + "' is a folder, not an INI file");
  std::ifstream f(path);
  if (!f) throw UsageError("cannot read --config '" + path + "': " + std::strerror(errno));
  const std::vector<std::string> sections = command_names(true);
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
      } else if (std::find(sections.begin(), sections.end(), section) != sections.end()) {
        to = nullptr;
      } else {
        std::string list;
        for (size_t k = 0; k < sections.size(); ++k)
          list += (k == 0 ? "" : k + 1 == sections.size() ? " or " : ", ") + sections[k];
        throw UsageError("unknown section [" + section + "] in --config '" + path +
                         "' (sections name a command: " + list + ")");
      }
    } else if (to) {
      *to += line + "\n";
    }
  }
  if (f.bad()) throw UsageError("cannot read --config '" + path + "': " + std::strerror(errno));
  return t;
}

// `config = ...` and `help = ...` in a config file would be taken and then
// do nothing (a file names no further file, and asks for no help).
void refuse_config_only_keys(const po::parsed_options& p, const std::string& path) {
  for (const po::option& o : p.options)
    if (o.string_key == "config" || o.string_key == "help")
      throw UsageError("--config '" + path + "': '" + o.string_key +
                       "' cannot be set in a config file (give it on the command line)");
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

}  // namespace

// Parses argv[2..] with `desc` (the options of command `name`), then the
// --config file: the command line wins over the file's [name] section, which
// wins over the file's common part. Of a pair of alternatives
// (--input/--generate, --with/--with-generate, --overwrite/--resume) only
// the first of these that gives either member counts. False when it
// printed help.
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
      refuse_config_only_keys(own, path);
      refuse_config_only_keys(common, path);
      for (const auto& pair : kChoicePairs) {
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
// options without a value, --config, --help and those in `skip` are left out.
std::string effective_options(const po::options_description& desc, const po::variables_map& vm,
                              const std::vector<std::string>& skip) {
  std::string text;
  for (const auto& d : desc.options()) {
    const std::string name = d->long_name();
    const auto it = vm.find(name);
    if (name == "config" || name == "help" || it == vm.end() || it->second.empty()) continue;
    if (std::find(skip.begin(), skip.end(), name) != skip.end()) continue;
    std::string v = option_text(name, it->second.value());
    if (v.empty()) continue;
    if (is_path_option(name)) v = resolve_path(name, v, std::filesystem::current_path(), true);
    text += name + " = " + v + "\n";
  }
  return text;
}

void finish_input(InputOptions& in, const char* a, const char* b, bool pairs,
                  const po::variables_map& vm, bool spheres) {
  if (in.input.empty() == in.generate.empty())
    throw UsageError(std::string("give exactly one of --") + a + " SRC or --" + b +
                     (spheres ? " spheres:N:DIM:SEED[:RMAX]" : " uniform:N:D[:SEED]"));
  const std::string prefix = std::string(a) == "with" ? "with-" : "";
  if (vm.count(prefix + "columns"))
    in.columns = io::parse_columns(vm[prefix + "columns"].as<std::string>());
  if (vm.count("frame") && !vm["frame"].defaulted()) {
    in.frame_given = true;
    in.frame = vm["frame"].as<std::int64_t>();  // --with's frame is --input's
    in.frame_if_trajectory = !prefix.empty();
    if (prefix.empty() && !in.generate.empty())
      throw UsageError("--frame applies to a trajectory --input, not to --generate");
  }
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

namespace {

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
    if (!takes_weights(o.metric))
      throw UsageError("--weights does not apply to --metric " + name +
                       " (scipy.spatial.distance takes no weights for it)");
    std::vector<double> w;
    if (parse_number_list(o.weights, &w)) check_weights(w, "--weights", true);
  }
  if (!o.vi.empty() && o.metric != Metric::mahalanobis)
    throw UsageError("--vi applies to --metric mahalanobis, not " + name);
  if (!o.variance.empty()) {
    if (o.metric != Metric::seuclidean)
      throw UsageError("--variance applies to --metric seuclidean, not " + name);
    std::vector<double> v;
    if (parse_number_list(o.variance, &v)) check_variance(v, "--variance", true);
  }
}

}  // namespace

void finish_compute(ComputeOptions& o, const Choices& c, int flags) {
  if (c.metric.empty()) {
    o.metric = Metric::euclidean;  // triplets
  } else if (!parse_metric(c.metric, &o.metric)) {
    std::vector<std::string> names;
    for (const MetricName& n : metric_names())
      names.emplace_back(n.name);
    throw UsageError("unknown --metric '" + c.metric + "'" + did_you_mean(c.metric, names) +
                     "; choose euclidean (l2), sqeuclidean, cityblock (l1, manhattan), "
                     "chebyshev (linf), cosine, minkowski, seuclidean, correlation, braycurtis, "
                     "canberra, jensenshannon, mahalanobis, hamming, jaccard, dice, russellrao, "
                     "rogerstanimoto, sokalmichener, sokalsneath or yule; SciPy's aliases and "
                     "any case also work");
  }
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
  if (flags & kCull) {
    check_choice("--cull", c.cull, {"auto", "on", "off"});
    o.cull = c.cull == "on" ? CullMode::on : c.cull == "off" ? CullMode::off : CullMode::automatic;
    if (o.cull == CullMode::on && o.map == MapKind::bb)
      throw UsageError("--cull on launches the tiles of its list; it does not go with --map bb");
  }
  if ((flags & kTriplets) && o.block != kTripletBlock)
    throw UsageError("--block must be 32 for triplets (tiles of 32×32×32 triplets)");
  if (o.block < 1 || o.block > 65536) throw UsageError("--block must be between 1 and 65536");
  if ((flags & (kChunks | kKnnChunks)) && !(o.chunk_mb >= 1 && o.chunk_mb <= 1024))
    throw UsageError("--chunk-mb must be between 1 and 1024");
  if ((flags & kSelectChunks) && !(o.chunk_mb >= 0 && o.chunk_mb <= 1024))
    throw UsageError("--chunk-mb must be between 0 (automatic) and 1024");
  if ((flags & kBenchChunks) && !(o.chunk_mb >= 0 && o.chunk_mb <= 1048576))
    throw UsageError("--chunk-mb must be between 0 and 1048576");
  check_threads(o.threads);
  check_device(o.device, o.backend);
}

void check_threads(int threads) {
  if (threads < 0 || threads > kMaxThreads)
    throw UsageError("--threads must be between 0 (automatic) and " + std::to_string(kMaxThreads));
}

void check_device(int device, BackendKind backend) {
  if (device < -1) throw UsageError("--device must be -1 (automatic) or a GPU number");
  if (device >= 0 && backend == BackendKind::cpu)
    throw UsageError("--device " + std::to_string(device) +
                     " names a GPU, but --backend cpu uses none (leave out one of them)");
}

namespace {

// The command line that continues this run: argv without --overwrite (in
// any spelling the parser took for it) and with --resume, unless it has
// one. A --config file's overwrite then gives way to the command line's
// --resume (kChoicePairs).
std::string resume_command(int argc, char** argv, const po::options_description& desc) {
  const std::vector<std::string> args(argv + std::min(argc, 2), argv + argc);
  const po::parsed_options cl = po::command_line_parser(args).options(desc).run();
  std::vector<std::string> words(argv, argv + std::min(argc, 2));
  bool resume = false;
  for (const po::option& o : cl.options) {
    if (o.string_key == "overwrite") continue;
    resume = resume || o.string_key == "resume";
    words.insert(words.end(), o.original_tokens.begin(), o.original_tokens.end());
  }
  if (!resume) words.push_back("--resume");
  return join_words(words);
}

}  // namespace

void finish_run(RunOptions& o, const Choices& c, const po::options_description& all,
                const po::variables_map& vm, int argc, char** argv) {
  if (!(o.max_hours >= 0 && o.max_hours < 1e6))
    throw UsageError("--max-hours must be between 0 (no limit) and 1e6");
  check_choice("--progress", c.progress, {"auto", "bar", "log", "none"});
  o.progress = o.quiet ? ProgressMode::none : parse_progress(c.progress);
  o.command = join_command(argc, argv);
  o.resume_command = resume_command(argc, argv, all);
  o.config = vm.count("config") ? vm["config"].as<std::string>() : "";
}

double parse_finite(const std::string& s, const std::string& what) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end || !std::isfinite(v))
    throw UsageError(what + ": '" + s + "' is not a finite number");
  return v;
}

namespace {
std::string g17(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}
}  // namespace

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
  if (h.per_frame && h.frames.empty()) throw UsageError("--per-frame goes with --frames");
  if (!h.pairs.empty() && h.types.empty()) throw UsageError("--pairs goes with --types");
  if (!h.exclude.empty() && vm.count("exclude-block"))
    throw UsageError("--exclude and --exclude-block are two ways to name molecules: give one");
  if (vm.count("exclude-block") && (h.exclude_block < 1 || h.exclude_block > (index_t(1) << 62)))
    throw UsageError("--exclude-block wants N >= 1 points a molecule");
  if (!h.norm.empty() && h.norm != "rdf" && h.norm != "density" && h.norm != "none")
    throw UsageError("--norm is rdf, density or none, got '" + h.norm + "'");
  if (!finish_box(c.box, c.tilt, metric, weights, &h.box, &h.input_box)) return;
  // An orthorhombic box's per-coordinate image is every pair's nearest at
  // any distance; a triclinic cell's reduction only within half its
  // shortest width.
  if (h.box.triclinic && cull_cutoff(metric, h.hi) > h.box.half_width())
    throw UsageError("--range HI " + g17(h.hi) + " reaches past half the triclinic cell's " +
                     "shortest width (" + g17(h.box.half_width()) +
                     "): a pair's minimum image is not certain there");
}

bool finish_box(const std::string& text, const std::string& tilt, Metric metric,
                const std::string& weights, BoxOptions* box, bool* input_box) {
  if (text.empty() && tilt.empty()) return false;
  if (text == "none") {
    if (!tilt.empty()) throw UsageError("--tilt goes with --box lx,ly,lz, not with --box none");
    *input_box = false;
    return false;
  }
  parse_box(text, tilt, metric, weights, box);
  return true;
}

void finish_frames(const std::string& frames, InputOptions& in) {
  if (frames.empty()) return;
  if (!in.generate.empty())
    throw UsageError("--frames applies to a trajectory --input, not to --generate");
  if (in.frame_given)
    throw UsageError("--frame K takes one frame, --frames START:STOP[:STEP] several: give one");
  io::check_frame_range(frames);
  in.frames = frames;
}

void parse_box(const std::string& text, const std::string& tilt, Metric metric,
               const std::string& weights, BoxOptions* box) {
  if (metric != Metric::euclidean && metric != Metric::sqeuclidean && metric != Metric::cityblock &&
      metric != Metric::chebyshev)
    throw UsageError(std::string("--box does not apply to --metric ") + metric_name(metric) +
                     " (only euclidean, sqeuclidean, cityblock, chebyshev)");
  if (!weights.empty()) throw UsageError("--box and --weights do not go together");
  if (text.empty()) throw UsageError("--tilt needs --box lx,ly,lz");
  std::vector<double> v;
  std::stringstream ss(text);
  for (std::string part; std::getline(ss, part, ',');)
    v.push_back(parse_finite(part, "--box"));
  *box = BoxOptions{};
  if (v.size() == 9) {
    // The cell's vectors a, b, c as rows (MDAnalysis triclinic_vectors, an
    // H5MD box's edges): LAMMPS's orientation, a along x, b in the xy plane.
    if (!tilt.empty()) throw UsageError("--tilt goes with --box lx,ly,lz, not with a 3 x 3 cell");
    if (v[1] != 0 || v[2] != 0 || v[5] != 0)
      throw UsageError(
          "--box ax,ay,az,bx,by,bz,cx,cy,cz wants a along x and b in the xy plane (ay = az = bz "
          "= 0), as LAMMPS and MDAnalysis triclinic_vectors lay a cell out");
    if (!(v[0] > 0 && v[4] > 0 && v[8] > 0))
      throw UsageError("--box: a degenerate cell (ax, by and cz must be > 0, got " + g17(v[0]) +
                       ", " + g17(v[4]) + ", " + g17(v[8]) + ")");
    box->dims = 3;
    box->lengths[0] = v[0];
    box->lengths[1] = v[4];
    box->lengths[2] = v[8];
    box->tilt[0] = v[3];
    box->tilt[1] = v[6];
    box->tilt[2] = v[7];
  } else {
    if (v.size() > static_cast<size_t>(kMaxBoxDims))
      throw UsageError("--box takes at most " + std::to_string(kMaxBoxDims) +
                       " lengths (or the 9 numbers of a 3-D cell)");
    for (size_t k = 0; k < v.size(); ++k) {
      if (!(v[k] > 0)) throw UsageError("--box lengths must be positive, got '" + g17(v[k]) + "'");
      box->lengths[k] = v[k];
    }
    box->dims = static_cast<int>(v.size());
    if (!tilt.empty()) {
      if (box->dims != 3) throw UsageError("--tilt xy,xz,yz wants --box lx,ly,lz (3-D)");
      std::vector<double> t;
      std::stringstream ts(tilt);
      for (std::string part; std::getline(ts, part, ',');)
        t.push_back(parse_finite(part, "--tilt"));
      if (t.size() != 3) throw UsageError("--tilt wants xy,xz,yz (LAMMPS's tilt factors)");
      std::copy(t.begin(), t.end(), box->tilt);
    }
  }
  if (box->dims == 0) throw UsageError("--box wants L1,...,Ld");
  box->triclinic = box->tilt[0] != 0 || box->tilt[1] != 0 || box->tilt[2] != 0;
  if (box->triclinic && metric != Metric::euclidean && metric != Metric::sqeuclidean)
    throw UsageError(std::string("a triclinic --box applies to --metric euclidean and sqeuclidean, "
                                 "not ") +
                     metric_name(metric));
}

po::options_description box_group(std::string& text, std::string& tilt, const char* what) {
  po::options_description g("Periodic box");
  g.add_options()("box", po::value(&text)->value_name("L1,...,Ld"), what)(
      "tilt", po::value(&tilt)->value_name("XY,XZ,YZ"), kTiltHelp);
  return g;
}

std::optional<int> OptionsCommand::parse(int argc, char** argv) {
  po::options_description all;
  add_options(all);
  po::variables_map vm;
  if (!cli::parse(argc, argv, all, usage(), name(), vm)) return 0;
  check(all, vm, argc, argv);
  return std::nullopt;
}

}  // namespace tdsolve::cli
