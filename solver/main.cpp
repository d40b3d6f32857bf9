// tdsolve's command line: one subcommand each (Boost.Program_options).
//
// Help, version, usage errors and `info` never start MPI, so they are quick
// and print once even under mpirun (only the launcher's rank 0 prints).
// `edm` runs under MPI; an error every rank agrees on ends the run with one
// line from rank 0 and the same non-zero exit everywhere, anything else with
// MPI_Abort so no rank is left waiting.
#include <mpi.h>

#include <boost/program_options.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <new>
#include <sstream>
#include <string>
#include <vector>

#include "io/error.hpp"
#include "io/h5.hpp"
#include "io/info.hpp"
#include "io/input.hpp"
#include "solver/bench.hpp"
#include "solver/edm.hpp"
#include "solver/mpi_util.hpp"
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
    " - triangular-domain solver: all pairs i<j of n points, on CPU or GPU,\n"
    "split across MPI ranks, written to one HDF5 file.\n"
    "\n"
    "Usage: tdsolve COMMAND [options]       (under MPI: mpirun -np R tdsolve COMMAND ...)\n"
    "\n"
    "Commands:\n"
    "  edm    packed distance matrix of n points: C(n,2) values in SciPy condensed order\n"
    "  info   what a result file holds and whether it is complete\n"
    "  bench  kernel-only throughput of the distance computation (no file), vs the write ceiling\n"
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

po::options_description edm_options(EdmOptions& o, std::string& metric, std::string& precision) {
  po::options_description in("Input (exactly one)");
  in.add_options()(
      "input", po::value(&o.input)->value_name("SRC"),
      "points, n rows × d features: FILE.h5:/dataset (2-D float32/float64 or integer), "
      "FILE.npy, or FILE.csv (one point per line; a non-numeric first line is a header)")(
      "generate", po::value(&o.generate)->value_name("SPEC"),
      "synthetic points uniform in [0,1)^D: uniform:N:D[:SEED] (SEED defaults to 0)");
  po::options_description out("Output");
  out.add_options()("output", po::value(&o.output)->value_name("FILE.h5"),
                    "result file: /distances holds C(n,2) values in SciPy condensed order")(
      "overwrite", po::bool_switch(&o.overwrite),
      "replace FILE.h5 if it exists (refused otherwise)")(
      "store-points", po::bool_switch(&o.store_points),
      "also store the points, as computed with, in /points");
  po::options_description run("Computation");
  run.add_options()(
      "metric", po::value(&metric)->default_value("euclidean")->value_name("NAME"),
      "euclidean, sqeuclidean, cityblock, chebyshev or cosine (as scipy.spatial.distance.pdist)")(
      "precision", po::value(&precision)->default_value("float32")->value_name("P"),
      "float32 or float64: the arithmetic and the stored values")(
      "backend", po::value(&o.backend)->default_value("auto")->value_name("B"),
      "auto (cuda when a GPU is visible, else cpu), cpu or cuda")(
      "block", po::value(&o.block)->default_value(128)->value_name("RHO"),
      "tile side ρ: each block of work is a ρ×ρ tile of pairs (cuda: a multiple of 128)")(
      "chunk-mb", po::value(&o.chunk_mb)->default_value(64)->value_name("MB"),
      "largest chunk of output computed and written at once, in MiB (1 to 1024); "
      "less if memory is short")(
      "threads", po::value(&o.threads)->default_value(0)->value_name("N"),
      "CPU threads per rank (0: OMP_NUM_THREADS, else the node's cores / ranks on the node)")(
      "device", po::value(&o.device)->default_value(-1)->value_name("ID"),
      "GPU for this rank (-1: node-local rank modulo the visible GPUs)")(
      "map", po::value(&o.map)->default_value("lambda")->value_name("M"),
      "cuda block map: lambda (only the triangle's tiles) or bb (bounding box, for comparison)");
  po::options_description misc("Run");
  misc.add_options()("config", po::value<std::string>()->value_name("FILE.ini"),
                     "read options from an INI file (`metric = cosine`, one long option per line); "
                     "the command line wins")(
      "progress", po::value(&o.progress)->default_value("auto")->value_name("MODE"),
      "auto (a bar on a terminal, log lines otherwise), bar, log or none")(
      "stats", po::value(&o.stats)->value_name("FILE.json"), "write timings as JSON (rank 0)")(
      "quiet", po::bool_switch(&o.quiet), "print nothing but errors")("help,h", "show this help");
  po::options_description all;
  all.add(in).add(out).add(run).add(misc);
  return all;
}

const char* kEdmUsage =
    "Usage: tdsolve edm (--input SRC | --generate SPEC) --output FILE.h5 [options]\n"
    "\n"
    "Computes the distance of every pair i<j of n points and writes the C(n,2) values to\n"
    "/distances in SciPy's condensed order (scipy.spatial.distance.squareform gives the\n"
    "matrix). Run it under mpirun/srun to split the work across ranks; the file is the\n"
    "same for any rank count. /progress records each finished chunk: `tdsolve info` says\n"
    "whether a file is complete.\n";

void check_choice(const std::string& what, const std::string& v,
                  std::initializer_list<const char*> ok) {
  std::string list;
  for (const char* c : ok) {
    if (v == c) return;
    list += (list.empty() ? "" : ", ") + std::string(c);
  }
  throw UsageError(what + " must be one of " + list + ", not '" + v + "'");
}

enum class Action { done, edm };

// Parses `tdsolve edm ...`; returns done when it printed help.
Action parse_edm(int argc, char** argv, EdmOptions& o) {
  std::string metric, precision;
  po::options_description desc = edm_options(o, metric, precision);
  po::variables_map vm;
  try {
    std::vector<std::string> args(argv + 2, argv + argc);
    po::store(po::command_line_parser(args).options(desc).run(), vm);
    if (vm.count("help")) {
      if (launcher_rank0()) std::cout << kEdmUsage << "\n" << desc << "\n";
      return Action::done;
    }
    if (vm.count("config")) {
      const std::string path = vm["config"].as<std::string>();
      std::ifstream f(path);
      if (!f) throw UsageError("cannot read --config '" + path + "'");
      po::store(po::parse_config_file(f, desc), vm);
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(std::string(e.what()) + " (see tdsolve edm --help)");
  }
  if (o.input.empty() == o.generate.empty())
    throw UsageError("give exactly one of --input SRC or --generate uniform:N:D[:SEED]");
  if (o.output.empty()) throw UsageError("--output FILE.h5 is required");
  if (!parse_metric(metric, &o.metric))
    throw UsageError("unknown --metric '" + metric +
                     "'; choose euclidean, sqeuclidean, cityblock, chebyshev or cosine");
  check_choice("--precision", precision, {"float32", "float64"});
  o.fp64 = precision == "float64";
  check_choice("--backend", o.backend, {"auto", "cpu", "cuda"});
  check_choice("--map", o.map, {"lambda", "bb"});
  check_choice("--progress", o.progress, {"auto", "bar", "log", "none"});
  if (o.block < 1 || o.block > 65536) throw UsageError("--block must be between 1 and 65536");
  if (!(o.chunk_mb >= 1 && o.chunk_mb <= 1024))
    throw UsageError("--chunk-mb must be between 1 and 1024");
  if (o.threads < 0) throw UsageError("--threads must be 0 (automatic) or more");
  if (!o.generate.empty()) io::parse_generator(o.generate);  // report a bad spec before MPI starts
  o.command = join_command(argc, argv);
  return Action::edm;
}

int edm_main(int argc, char** argv, const EdmOptions& o) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  io::quiet_hdf5_errors();
  const int rank = comm_rank(MPI_COMM_WORLD);
  int code = 0;
  try {
    run_edm(o, MPI_COMM_WORLD);
  } catch (const CollectiveError& e) {
    if (rank == 0) std::fprintf(stderr, "tdsolve: error: %s\n", e.what());
    code = e.exit_code;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "tdsolve: error on rank %d: out of memory\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tdsolve: error on rank %d: %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return code;
}

const char* kBenchUsage =
    "Usage: tdsolve bench (--generate SPEC | --input SRC) [options]\n"
    "\n"
    "Times the distance computation alone: every chunk computed into one buffer on the\n"
    "device (or host), no copy back and no file, median of --repeat passes after a warm-up,\n"
    "next to the write ceiling over the same bytes (cudaMemset and a plain 16-byte store\n"
    "kernel; memset on the CPU). One process, no MPI.\n";

int bench_main(int argc, char** argv) {
  BenchOptions o;
  std::string metric, precision;
  po::options_description desc("Options");
  desc.add_options()("input", po::value(&o.input)->value_name("SRC"), "points, as for tdsolve edm")(
      "generate", po::value(&o.generate)->value_name("SPEC"), "uniform:N:D[:SEED]")(
      "metric", po::value(&metric)->default_value("euclidean"), "as for tdsolve edm")(
      "precision", po::value(&precision)->default_value("float32"), "float32 or float64")(
      "backend", po::value(&o.backend)->default_value("auto"), "auto, cpu or cuda")(
      "map", po::value(&o.map)->default_value("lambda"), "lambda or bb (cuda)")(
      "block", po::value(&o.block)->default_value(128), "tile side ρ")(
      "chunk-mb", po::value(&o.chunk_mb)->default_value(0),
      "chunk size in MiB (0: one buffer as large as memory allows, usually one launch)")(
      "repeat", po::value(&o.repeat)->default_value(5), "timed passes (median reported)")(
      "device", po::value(&o.device)->default_value(-1), "GPU (-1: the first)")(
      "threads", po::value(&o.threads)->default_value(0),
      "CPU threads (0: OMP_NUM_THREADS or all cores)")("csv", po::value(&o.csv)->value_name("FILE"),
                                                       "append a row of results to FILE")(
      "help,h", "show this help");
  po::variables_map vm;
  try {
    std::vector<std::string> args(argv + 2, argv + argc);
    po::store(po::command_line_parser(args).options(desc).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(std::string(e.what()) + " (see tdsolve bench --help)");
  }
  if (vm.count("help")) {
    std::cout << kBenchUsage << "\n" << desc << "\n";
    return 0;
  }
  if (o.input.empty() == o.generate.empty())
    throw UsageError("give exactly one of --input or --generate");
  if (!parse_metric(metric, &o.metric)) throw UsageError("unknown --metric '" + metric + "'");
  check_choice("--precision", precision, {"float32", "float64"});
  check_choice("--backend", o.backend, {"auto", "cpu", "cuda"});
  check_choice("--map", o.map, {"lambda", "bb"});
  if (o.repeat < 1) throw UsageError("--repeat must be at least 1");
  if (o.block < 1) throw UsageError("--block must be at least 1");
  o.fp64 = precision == "float64";
  io::quiet_hdf5_errors();
  run_bench(o);
  return 0;
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
    if (cmd == "bench") return bench_main(argc, argv);
    if (cmd == "edm") {
      EdmOptions o;
      if (parse_edm(argc, argv, o) == Action::done) return 0;
      return edm_main(argc, argv, o);
    }
    throw UsageError("unknown command '" + cmd +
                     "' (commands: edm, info, bench; see tdsolve --help)");
  } catch (const std::exception& e) {
    if (launcher_rank0()) std::fprintf(stderr, "tdsolve: error: %s\n", e.what());
    return exit_code_of(e);
  }
}
