// The command line every command shares (Boost.Program_options): the option
// groups (input, output, computation, run, histogram), parsed
// once and checked once into the structs and enums of solver/options.hpp;
// the --config file; the record of every option's final value. A command's
// own options live in its own file (solver/commands/); this file knows no
// command but through the registry (for the --config sections).
#pragma once

#include <boost/program_options.hpp>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "solver/commands/command.hpp"
#include "solver/options.hpp"

namespace tdsolve::cli {

namespace po = boost::program_options;

// The launcher's rank before MPI_Init (Open MPI, PMIx, Slurm, MPICH), so
// that only one process prints help and usage errors.
bool launcher_rank0();
// argv as one line, quoted for a shell where needed.
std::string join_command(int argc, char** argv);
// UsageError unless v is one of ok.
void check_choice(const std::string& what, const std::string& v,
                  std::initializer_list<const char*> ok);
// UsageError unless s is a finite number.
double parse_finite(const std::string& s, const std::string& what);

// ---- option groups ---------------------------------------------------------

// The strings of enum-valued options until they are checked.
struct Choices {
  std::string metric, precision, backend, map, progress, range, box, tilt, cull;
  std::string p, base;  // the metric's parameters
};

// spheres: collide's input (n × 2 or n × 4 spheres, --generate spheres:...).
po::options_description input_group(InputOptions& in, InputOptions* with, bool spheres = false);
po::options_description output_group(OutputOptions& o, const char* what, bool points,
                                     const char* resume_help = nullptr);

// kTriplets: no --metric (euclidean), tiles of 32³ (--block 32 only).
// kCentres: no --metric (euclidean), --block the centres of a block row.
// kCollide: no --metric (euclidean) and its parameters, no --precision
// (float64 always).
// kSelectChunks: --chunk-mb for a selection (collide): 0 (default) cuts
// chunks by pairs tested (select_chunk_pairs), MB bounds them. kKnnChunks:
// --chunk-mb of knn: --k's bound (default 64), and --radius's when given.
enum ComputeFlags {
  kChunks = 1,
  kMap = 2,
  kBenchChunks = 4,
  kTriplets = 8,
  kCollide = 16,
  kSelectChunks = 32,
  kKnnChunks = 64,
  kCull = 128,    // --cull: a cutoff's culled domain (solver/cull.hpp)
  kCentres = 256  // adf: no --metric (euclidean); --block is centres a block row
};

// The triplet tile side: one warp along each edge of a tile.
constexpr index_t kTripletBlock = 32;

po::options_description compute_group(ComputeOptions& o, Choices& c, int flags);

po::options_description run_group(RunOptions& o, Choices& c, const char* progress_help = nullptr);
po::options_description hist_group(HistOptions& h, Choices& c);

// ---- parsing -----------------------------------------------------------------

// Parses argv[2..] with `desc` (the options of command `name`), then the
// --config file: the command line wins over the file's [name] section, which
// wins over the file's common part. Of a pair of alternatives
// (--input/--generate, --with/--with-generate, --overwrite/--resume) only
// the first of these that gives either member counts. False when it
// printed help.
bool parse(int argc, char** argv, const po::options_description& desc, const char* usage,
           const char* name, po::variables_map& vm);

// Every option's final value (command line, config, defaults) as a config
// file, `name = value` a line in the order of --help, paths made absolute;
// options without a value, --config, --help and those named in `skip`
// (options that do not apply to this run, such as another potential's) are
// left out.
std::string effective_options(const po::options_description& desc, const po::variables_map& vm,
                              const std::vector<std::string>& skip = {});
// The text effective_options writes for option `name`'s value v (a double:
// the shortest text that reads back as v), for help texts that show a
// default the same way.
std::string option_text(const std::string& name, const boost::any& v);

// The checks of the groups, once parsed (UsageError, before MPI starts).
void finish_input(InputOptions& in, const char* a, const char* b, bool pairs,
                  const po::variables_map& vm, bool spheres = false);
void finish_compute(ComputeOptions& o, const Choices& c, int flags);
// One bound on --threads for every command (fractal too): more than this is
// a typo, and OpenMP would try to start them all.
constexpr int kMaxThreads = 4096;
void check_threads(int threads);
// --device: -1 (automatic) or a GPU number, and no GPU with --backend cpu.
void check_device(int device, BackendKind backend);
void finish_run(RunOptions& o, const Choices& c, const po::options_description& all,
                const po::variables_map& vm, int argc, char** argv);
void finish_hist(HistOptions& h, const Choices& c, const po::variables_map& vm, Metric metric,
                 const std::string& weights);
// --box L1,...,Ld or ax,ay,az,bx,by,bz,cx,cy,cz, and --tilt xy,xz,yz (text
// as given; tilt may be empty) into *box: lengths finite and > 0, at most
// kMaxBoxDims, only with the metrics of a difference and without weights; a
// triclinic cell in LAMMPS's orientation, euclidean or sqeuclidean only;
// UsageError otherwise.
void parse_box(const std::string& text, const std::string& tilt, Metric metric,
               const std::string& weights, BoxOptions* box);
// --box and --tilt of a command whose box may come from a trajectory
// frame's cell (hist, adf, triplet): `text` parsed into *box (parse_box), or
// *input_box false for --box none (no --tilt with it); neither when both are
// empty. Whether a box was parsed (the command's own checks of it follow).
bool finish_box(const std::string& text, const std::string& tilt, Metric metric,
                const std::string& weights, BoxOptions* box, bool* input_box);
// --frames START:STOP[:STEP] of a trajectory --input (hist, adf, triplet):
// the slice checked, --generate and --frame K refused, in.frames set;
// nothing when `frames` is empty.
void finish_frames(const std::string& frames, InputOptions& in);
// --tilt's help.
inline constexpr const char* kTiltHelp =
    "with --box lx,ly,lz: a triclinic cell's tilt factors as LAMMPS's (a = (lx,0,0), "
    "b = (xy,ly,0), c = (xz,yz,lz)); minimum image as LAMMPS's";
// The --box and --tilt options, into `text` and `tilt` (what --box holds: `what`).
po::options_description box_group(std::string& text, std::string& tilt, const char* what);

// A command whose command line is Boost options: its usage text, its groups
// (in the order of its --help) and its checks; parse() is theirs in that
// order, with --help and --config as every command has them.
class OptionsCommand : public Command {
 public:
  std::optional<int> parse(int argc, char** argv) final;

 protected:
  // The text above the options in `tdsolve NAME --help`.
  virtual const char* usage() const = 0;
  // Adds the groups, bound to the command's members.
  virtual void add_options(po::options_description& all) = 0;
  // Checks the parsed values (`all`: every option, for effective_options).
  virtual void check(const po::options_description& all, const po::variables_map& vm, int argc,
                     char** argv) = 0;
};

}  // namespace tdsolve::cli
