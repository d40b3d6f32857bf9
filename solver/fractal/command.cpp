// tdsolve fractal: runs a Life-like rule on an NBB fractal and writes the
// snapshots (docs/output.md, "tdsolve fractal"). One rank; the output's
// lifecycle is the other commands' (lock, .creating, .partial, rename), and a
// stopped run resumes from its last snapshot.
#include "solver/fractal/command.hpp"

#include <omp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "core/error.hpp"
#include "io/h5.hpp"
#include "io/input.hpp"
#include "io/output_files.hpp"
#include "io/result_file.hpp"
#include "solver/bench_csv.hpp"
#include "solver/commands.hpp"
#include "solver/cuda/cuda_backend.hpp"
#include "solver/driver.hpp"
#include "solver/mpi_util.hpp"
#include "solver/progress.hpp"
#include "solver/signals.hpp"
#include "version.hpp"

namespace tdsolve::fractal {

using io::Hid;

RandomInit parse_random_init(const std::string& text) {
  const std::string what = "--init '" + text + "': ";
  const std::string form = "expected random:DENSITY:SEED (DENSITY in [0, 1], SEED an integer)";
  if (text.rfind("random:", 0) != 0) throw UsageError(what + form);
  const std::string rest = text.substr(7);
  const size_t colon = rest.find(':');
  if (colon == std::string::npos) throw UsageError(what + form);
  const std::string d = rest.substr(0, colon), s = rest.substr(colon + 1);
  char* end = nullptr;
  RandomInit init;
  init.density = std::strtod(d.c_str(), &end);
  if (d.empty() || *end || !(init.density >= 0 && init.density <= 1))
    throw UsageError(what + "DENSITY must be a number from 0 to 1");
  if (s.empty() || s.size() > 20 || s.find_first_not_of("0123456789") != std::string::npos)
    throw UsageError(what + "SEED must be a non-negative integer");
  init.seed = std::strtoull(s.c_str(), &end, 10);
  return init;
}

namespace {

constexpr std::uint64_t kSlab = std::uint64_t(1) << 26;  // cells per read or write

struct Job {
  Shape shape;
  Fractal f;
  Rule rule;
  std::vector<long> steps;  // the snapshots' steps
  std::string identity;     // what --resume compares
};

Job make_job(const FractalOptions& o) {
  Job j;
  j.shape = parse_shape(o.shape);
  j.f = make_fractal(j.shape, o.level);
  j.rule = parse_rule(o.rule);
  const long every = o.snapshot_every > 0 ? o.snapshot_every : o.steps;
  for (long t = 0; t < o.steps; t += every)
    j.steps.push_back(t);
  j.steps.push_back(o.steps);
  j.identity = "table=" + shape_table(j.shape) + "\nlevel=" + std::to_string(o.level) +
               "\nrule=" + rule_text(j.rule) + "\ninit=" + (o.input.empty() ? o.init : o.input) +
               "\nsteps=" + std::to_string(o.steps) +
               "\nsnapshot_every=" + std::to_string(o.snapshot_every) +
               "\nversion=" TDSOLVE_VERSION "\n";
  return j;
}

std::unique_ptr<Engine> make_engine(const FractalOptions& o, const Fractal& f, const Rule& rule) {
  EngineOptions e = o.engine;
  BackendKind b = o.backend;
  if (b == BackendKind::automatic)
    b = cuda::built_with_cuda() && cuda::device_count() > 0 ? BackendKind::cuda : BackendKind::cpu;
  if (b == BackendKind::cuda) {
    if (cuda::built_with_cuda() && cuda::device_count() == 0)
      throw UsageError("--backend cuda: " + cuda::no_device_reason());
    return make_cuda_engine(f, rule, e);
  }
  if (e.tensor_cores)
    throw UsageError("--tensor-cores needs the CUDA backend (this run uses the CPU)");
  if (e.threads <= 0) e.threads = std::max(1, omp_get_max_threads());
  return make_cpu_engine(f, rule, e);
}

// Calls f(c0, count, mem, space) for each slab [c0, c0 + count) of at most
// kSlab cells of row `row` of a 2-D dataset (of the whole of a 1-D one),
// `space` selecting the slab in the dataset and `mem` a buffer of count cells.
template <typename F>
void for_each_slab(hid_t dset, hsize_t row, std::uint64_t cells, F&& f) {
  Hid space(H5Dget_space(dset), H5Sclose);
  const int off = H5Sget_simple_extent_ndims(space) == 2 ? 0 : 1;
  for (std::uint64_t c0 = 0; c0 < cells; c0 += kSlab) {
    const hsize_t count = std::min<std::uint64_t>(kSlab, cells - c0);
    const hsize_t start[2] = {row, c0}, cnt[2] = {1, count};
    io::check_status(
        H5Sselect_hyperslab(space, H5S_SELECT_SET, start + off, nullptr, cnt + off, nullptr),
        "H5Sselect_hyperslab");
    Hid mem(H5Screate_simple(1, &count, nullptr), H5Sclose);
    f(c0, count, mem.get(), space.get());
  }
}

// The initial state from --input FILE.h5:/DATASET: a 1-D integer dataset of
// the fractal's cells, or a 2-D one (a run's /states) whose last row, or last
// snapshot marked done in that file's /progress/done, is taken.
void load_input_state(const std::string& spec, const Fractal& f, Engine& engine) {
  const io::InputSpec in = io::split_input_spec(spec);
  const std::string what = "--input '" + spec + "': ";
  if (in.dataset.empty()) throw InputError(what + "name the dataset: FILE.h5:/DATASET");
  struct stat st {};
  if (stat(in.path.c_str(), &st) != 0) throw InputError(what + "no such file");
  Hid file(H5Fopen(in.path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.valid()) throw InputError(what + "not an HDF5 file (" + io::hdf5_error_text() + ")");
  if (H5Lexists(file, in.dataset.c_str(), H5P_DEFAULT) <= 0)
    throw InputError(what + "no dataset '" + in.dataset + "'");
  Hid d(H5Dopen2(file, in.dataset.c_str(), H5P_DEFAULT), H5Dclose);
  if (!d.valid()) throw InputError(what + "'" + in.dataset + "' is not a dataset");
  Hid type(H5Dget_type(d), H5Tclose);
  if (H5Tget_class(type) != H5T_INTEGER && H5Tget_class(type) != H5T_ENUM)
    throw InputError(what + "the state must hold integers 0 and 1");
  const std::vector<hsize_t> shape = io::dataset_shape(d);
  if (shape.empty() || shape.size() > 2)
    throw InputError(what + "the state must be 1-D (cells) or 2-D (snapshots × cells)");
  const hsize_t cells = shape.back();
  // A run's own /states has unwritten rows; /progress/done rules those out.
  if (io::written(d) != io::Written::all &&
      !(shape.size() == 2 && H5Lexists(file, "progress", H5P_DEFAULT) > 0))
    throw InputError(what +
                     "the state was never (or only partly) written; HDF5 would read the "
                     "missing cells as its fill value");
  if (cells != f.cells)
    throw InputError(what + "the state has " + std::to_string(cells) +
                     " cells, but the fractal at this level has k^r = " + std::to_string(f.cells));
  hsize_t row = 0;
  if (shape.size() == 2) {
    if (shape[0] == 0) throw InputError(what + "no snapshot in it");
    row = shape[0] - 1;
    if (H5Lexists(file, "progress", H5P_DEFAULT) > 0 &&
        H5Lexists(file, "progress/done", H5P_DEFAULT) > 0) {
      Hid done(H5Dopen2(file, "progress/done", H5P_DEFAULT), H5Dclose);
      const std::vector<hsize_t> ds =
          done.valid() ? io::dataset_shape(done) : std::vector<hsize_t>{};
      if (ds.size() == 1 && ds[0] == shape[0]) {
        std::vector<std::uint8_t> flags(ds[0]);
        io::check_status(
            H5Dread(done, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, flags.data()),
            "H5Dread /progress/done");
        hsize_t last = 0;
        while (last < flags.size() && flags[last] == 1)
          ++last;
        if (last == 0) throw InputError(what + "no snapshot of that run was written");
        row = last - 1;
      }
    }
  }
  std::vector<std::int16_t> buf(std::min<std::uint64_t>(kSlab, f.cells));
  std::vector<std::uint8_t> bytes(buf.size());
  for_each_slab(d, row, f.cells, [&](std::uint64_t c0, hsize_t count, hid_t mem, hid_t space) {
    // int16 holds 0 and 1 exactly; anything else (also values that clip) is refused.
    io::check_status(H5Dread(d, H5T_NATIVE_INT16, mem, space, H5P_DEFAULT, buf.data()),
                     "H5Dread " + in.dataset);
    for (hsize_t i = 0; i < count; ++i) {
      if (buf[i] != 0 && buf[i] != 1)
        throw InputError(what + "cell " + std::to_string(c0 + i) + " holds " +
                         std::to_string(buf[i]) + "; a state holds 0 (dead) and 1 (alive)");
      bytes[i] = std::uint8_t(buf[i]);
    }
    engine.set_state(c0, count, bytes.data());
  });
}

void write_dataset(hid_t file, const char* name, hid_t mem_type, hid_t file_type,
                   const std::vector<hsize_t>& dims, const void* data, hid_t dcpl = H5P_DEFAULT) {
  Hid space(H5Screate_simple(int(dims.size()), dims.data(), nullptr), H5Sclose);
  Hid d =
      io::dataset_handle(H5Dcreate2(file, name, file_type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT),
                         std::string("H5Dcreate ") + name);
  if (data)
    io::check_status(H5Dwrite(d, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data),
                     std::string("H5Dwrite ") + name);
}

// The new file's whole structure (docs/output.md, "tdsolve fractal").
void build_file(hid_t file, const FractalOptions& o, const Job& j, const std::string& backend) {
  const Fractal& f = j.f;
  const hsize_t S = j.steps.size();
  io::write_attr(file, "software", std::string("tdsolve"));
  io::write_attr(file, "version", std::string(TDSOLVE_VERSION));
  io::write_attr(file, "command", o.run.command);
  io::write_attr(file, "options", o.run.effective);
  io::write_attr(file, "input", o.input.empty() ? o.init : o.input);
  io::write_attr(file, "job", j.identity);
  {
    const std::time_t now = std::time(nullptr);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    io::write_attr(file, "created", std::string(buf));
  }
  Hid dcpl = io::plist_handle(H5Pcreate(H5P_DATASET_CREATE), "H5Pcreate");
  const hsize_t chunk[2] = {1, std::min<hsize_t>(f.cells, kSlab)};
  io::check_status(H5Pset_chunk(dcpl, 2, chunk), "H5Pset_chunk");
  io::check_status(H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER), "H5Pset_fill_time");
  write_dataset(file, "states", H5T_NATIVE_UINT8, H5T_STD_U8LE, {S, f.cells}, nullptr, dcpl);
  {
    Hid d = io::dataset_handle(H5Dopen2(file, "states", H5P_DEFAULT), "H5Dopen /states");
    io::write_attr(d, "shape", j.shape.name);
    io::write_attr(d, "table", shape_table(j.shape));
    io::write_attr(d, "k", std::uint64_t(f.k));
    io::write_attr(d, "s", std::uint64_t(f.s));
    io::write_attr(d, "level", std::uint64_t(f.levels));
    io::write_attr(d, "n", f.n);
    io::write_attr(d, "cells", f.cells);
    io::write_attr(d, "rule", rule_text(j.rule));
    io::write_attr(d, "init", o.input.empty() ? o.init : o.input);
    io::write_attr(d, "layout",
                   std::string(o.engine.strategy == Strategy::nu ? "compact" : "embedded"));
    io::write_attr(d, "map", std::string(strategy_name(o.engine.strategy)));
    io::write_attr(d, "rho", std::uint64_t(o.engine.rho ? o.engine.rho : default_rho(f)));
    io::write_attr(d, "backend", backend);
    io::write_attr(d, "order", std::string("compact"));
    io::write_attr(d, "steps", std::uint64_t(o.steps));
  }
  std::vector<std::int64_t> steps(j.steps.begin(), j.steps.end());
  write_dataset(file, "steps", H5T_NATIVE_INT64, H5T_STD_I64LE, {S}, steps.data());
  std::vector<std::int64_t> live(std::size_t(o.steps) + 1, 0);
  write_dataset(file, "live", H5T_NATIVE_INT64, H5T_STD_I64LE, {live.size()}, live.data());
  std::vector<std::int64_t> table;
  for (const auto& [x, y] : j.shape.cells) {
    table.push_back(x);
    table.push_back(y);
  }
  write_dataset(file, "replicas", H5T_NATIVE_INT64, H5T_STD_I64LE, {hsize_t(f.k), 2}, table.data());
  Hid g = io::group_handle(H5Gcreate2(file, "progress", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                           "H5Gcreate /progress");
  io::write_attr(g, "chunks", std::uint64_t(S));
  io::write_attr(g, "dataset", std::string("/states"));
  io::write_attr(g, "elements", std::uint64_t(S));
  std::vector<std::uint8_t> done(S, 0);
  write_dataset(g, "done", H5T_NATIVE_UINT8, H5T_STD_U8LE, {S}, done.data());
  // The axes' names, as dimension scales (xarray, h5netcdf; docs/output.md).
  const std::pair<const char*, std::vector<std::string>> axes[] = {
      {"states", {"snapshot", "cell"}},
      {"steps", {"snapshot"}},
      {"live", {"step"}},
      {"replicas", {"replica", "xy"}},
      {"progress/done", {"progress/chunk"}}};
  for (const auto& [name, dims] : axes) {
    Hid d = io::dataset_handle(H5Dopen2(file, name, H5P_DEFAULT), std::string("H5Dopen /") + name);
    io::attach_dimensions(file, d, dims);
  }
}

// The new file, written as FILE.h5.creating and renamed to FILE.h5.partial
// once it is whole.
void create_file(const FractalOptions& o, const Job& j, const std::string& partial,
                 const std::string& backend) {
  // Built in memory and written as one image, as the other commands do: a
  // full disk then leaves nothing behind.
  const std::string creating = io::creating_path(o.out.output);
  std::remove(creating.c_str());
  io::create_file_image(
      creating, [&](hid_t file) { build_file(file, o, j, backend); }, false);
  io::rename_durably(creating, partial);
}

class Writer {
 public:
  explicit Writer(const std::string& path)
      : path_(path),
        file_(io::file_handle(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), "H5Fopen " + path)),
        states_(io::dataset_handle(H5Dopen2(file_, "states", H5P_DEFAULT), "H5Dopen /states")),
        live_(io::dataset_handle(H5Dopen2(file_, "live", H5P_DEFAULT), "H5Dopen /live")),
        done_(io::dataset_handle(H5Dopen2(file_, "progress/done", H5P_DEFAULT),
                                 "H5Dopen /progress/done")) {}

  // Row `row` of /states from the engine, live[from, to) into /live, then the flag.
  void snapshot(hsize_t row, Engine& engine, std::uint64_t cells,
                const std::vector<std::int64_t>& live, hsize_t from, hsize_t to) {
    std::vector<std::uint8_t> buf(std::min<std::uint64_t>(cells, kSlab));
    for_each_slab(
        states_, row, cells, [&](std::uint64_t c0, hsize_t count, hid_t mem, hid_t space) {
          engine.get_state(c0, count, buf.data());
          io::check_status(H5Dwrite(states_, H5T_NATIVE_UINT8, mem, space, H5P_DEFAULT, buf.data()),
                           "H5Dwrite /states");
        });
    write_range(live_, H5T_NATIVE_INT64, live.data() + from, from, to - from, "/live");
    flush();
    const std::uint8_t one = 1;
    write_range(done_, H5T_NATIVE_UINT8, &one, row, 1, "/progress/done");
    flush();
  }

  // Resume: the flags, the live counts so far and one snapshot.
  std::vector<std::uint8_t> done() {
    const std::vector<hsize_t> shape = io::dataset_shape(done_);
    std::vector<std::uint8_t> v(shape.empty() ? 0 : shape[0]);
    io::check_status(H5Dread(done_, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()),
                     "H5Dread /progress/done");
    return v;
  }
  std::vector<std::int64_t> live(std::size_t count) {
    std::vector<std::int64_t> v(count);
    io::check_status(H5Dread(live_, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()),
                     "H5Dread /live");
    return v;
  }
  void load(hsize_t row, std::uint64_t cells, Engine& engine) {
    std::vector<std::uint8_t> buf(std::min<std::uint64_t>(cells, kSlab));
    for_each_slab(
        states_, row, cells, [&](std::uint64_t c0, hsize_t count, hid_t mem, hid_t space) {
          io::check_status(H5Dread(states_, H5T_NATIVE_UINT8, mem, space, H5P_DEFAULT, buf.data()),
                           "H5Dread /states");
          engine.set_state(c0, count, buf.data());
        });
  }
  void close() {
    done_.reset();
    live_.reset();
    states_.reset();
    file_.close("H5Fclose " + path_);
  }

 private:
  // To the storage, not only to the page cache: a flag on disk always has
  // its data on disk, also after a node crash.
  void flush() {
    io::check_status(H5Fflush(file_, H5F_SCOPE_GLOBAL), "H5Fflush " + path_);
    void* handle = nullptr;
    io::check_status(H5Fget_vfd_handle(file_, H5P_DEFAULT, &handle), "H5Fget_vfd_handle");
    if (handle && ::fsync(*static_cast<int*>(handle)) != 0)
      throw InputError("cannot sync '" + path_ + "' to storage: " + std::strerror(errno));
  }
  static void write_range(hid_t d, hid_t type, const void* v, hsize_t at, hsize_t count,
                          const char* what) {
    if (count == 0) return;
    Hid space(H5Dget_space(d), H5Sclose);
    io::check_status(H5Sselect_hyperslab(space, H5S_SELECT_SET, &at, nullptr, &count, nullptr),
                     "H5Sselect_hyperslab");
    Hid mem(H5Screate_simple(1, &count, nullptr), H5Sclose);
    io::check_status(H5Dwrite(d, type, mem, space, H5P_DEFAULT, v),
                     std::string("H5Dwrite ") + what);
  }

  std::string path_;
  Hid file_, states_, live_, done_;
};

std::string read_job(const std::string& path) {
  Hid file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.valid() || !io::has_attr(file, "job")) return "";
  try {
    return io::read_attr_string(file, "job");
  } catch (const io::H5Error&) {
    return "";
  }
}

void describe_run(const FractalOptions& o, const Job& j, const Engine& e) {
  const Fractal& f = j.f;
  std::printf(
      "tdsolve fractal: %s (k = %d, s = %d), level %d: %llu × %llu embedding, %llu cells (%.3g%% "
      "of it); rule %s\n",
      j.shape.name.c_str(), f.k, f.s, f.levels, (unsigned long long)f.n, (unsigned long long)f.n,
      (unsigned long long)f.cells, 100.0 * double(f.cells) / (double(f.n) * double(f.n)),
      rule_text(j.rule).c_str());
  std::printf(
      "tdsolve fractal: %s, layout %s, map %s, rho %llu%s; %s of state\n", e.describe().c_str(),
      o.engine.strategy == Strategy::nu ? "compact" : "embedded", strategy_name(o.engine.strategy),
      (unsigned long long)(o.engine.rho ? o.engine.rho : default_rho(f)),
      o.engine.tensor_cores ? ", tensor cores" : "", human_bytes(double(e.device_bytes())).c_str());
  std::fflush(stdout);
}

void write_stats(const FractalOptions& o, const Job& j, const Engine& e, long steps_run,
                 double total, double compute, bool complete) {
  if (o.run.stats.empty()) return;
  std::FILE* fp = std::fopen(o.run.stats.c_str(), "w");
  if (!fp) {
    std::fprintf(stderr, "tdsolve: warning: cannot write --stats file '%s': %s\n",
                 o.run.stats.c_str(), std::strerror(errno));
    return;
  }
  std::fprintf(fp,
               "{\"command\": \"fractal\", \"shape\": \"%s\", \"k\": %d, \"s\": %d, "
               "\"level\": %d, \"cells\": %llu, \"map\": \"%s\", \"rho\": %llu, "
               "\"tensor_cores\": %s, \"backend\": \"%s\", \"state_bytes\": %llu, "
               "\"steps\": %ld, \"steps_run\": %ld, \"total_s\": %.6f, \"compute_s\": %.6f, "
               "\"complete\": %s}\n",
               shape_table(j.shape).c_str(), j.f.k, j.f.s, j.f.levels,
               (unsigned long long)j.f.cells, strategy_name(o.engine.strategy),
               (unsigned long long)(o.engine.rho ? o.engine.rho : default_rho(j.f)),
               o.engine.tensor_cores ? "true" : "false", e.describe().c_str(),
               (unsigned long long)e.device_bytes(), o.steps, steps_run, total, compute,
               complete ? "true" : "false");
  std::fclose(fp);
}

int bench(const FractalOptions& o, const Job& j) {
  std::unique_ptr<Engine> e = make_engine(o, j.f, j.rule);
  if (!o.run.quiet) describe_run(o, j, *e);
  const RandomInit init = parse_random_init(o.init);
  std::vector<std::uint64_t> live(std::size_t(std::max<long>(o.steps, 1)));
  std::vector<double> per_step;
  for (int r = 0; r <= o.repeat; ++r) {  // the first pass warms up
    e->set_random(init);
    const double t0 = e->seconds();
    e->step(int(o.steps), live.data());
    if (r > 0) per_step.push_back((e->seconds() - t0) / double(o.steps));
  }
  std::sort(per_step.begin(), per_step.end());
  const double med = per_step[per_step.size() / 2];
  const Fractal& f = j.f;
  std::printf(
      "bench: %s fractal %s level=%d n=%llu cells=%llu map=%s rho=%llu tc=%d: %.4f ms per "
      "step (median of %d runs of %ld steps, min %.4f), %.3g cells/s, state %s\n",
      e->describe().c_str(), j.shape.name.c_str(), f.levels, (unsigned long long)f.n,
      (unsigned long long)f.cells, strategy_name(o.engine.strategy),
      (unsigned long long)(o.engine.rho ? o.engine.rho : default_rho(f)),
      int(o.engine.tensor_cores), med * 1e3, o.repeat, o.steps, per_step[0] * 1e3,
      double(f.cells) / med, human_bytes(double(e->device_bytes())).c_str());
  if (!o.csv.empty()) {
    const CsvFile fp =
        open_bench_csv(o.csv,
                       "device,shape,k,s,level,n,cells,map,rho,tensor_cores,steps,repeat,"
                       "median_ms_per_step,min_ms_per_step,cells_per_s,state_bytes\n");
    std::fprintf(fp.get(), "\"%s\",%s,%d,%d,%d,%llu,%llu,%s,%llu,%d,%ld,%d,%.6f,%.6f,%.6g,%llu\n",
                 e->describe().c_str(), j.shape.name.c_str(), f.k, f.s, f.levels,
                 (unsigned long long)f.n, (unsigned long long)f.cells,
                 strategy_name(o.engine.strategy),
                 (unsigned long long)(o.engine.rho ? o.engine.rho : default_rho(f)),
                 int(o.engine.tensor_cores), o.steps, o.repeat, med * 1e3, per_step[0] * 1e3,
                 double(f.cells) / med, (unsigned long long)e->device_bytes());
  }
  return 0;
}

int run_root(const FractalOptions& o, MPI_Comm comm) {
  const auto t_start = std::chrono::steady_clock::now();
  const Job j = make_job(o);
  if (o.bench) return bench(o, j);
  const std::string& out = o.out.output;
  const std::string partial = io::partial_path(out);
  CommandOptions paths;  // the checks every command makes of its paths
  paths.out = o.out;
  paths.in.input = o.input;
  paths.run.stats = o.run.stats;
  check_output_paths(paths);
  io::OutputLock lock(out, o.run.command);
  io::remove_stale_creating(out);

  struct stat st {};
  if (o.out.resume && stat(out.c_str(), &st) == 0 && stat(partial.c_str(), &st) != 0) {
    if (read_job(out) != j.identity)
      throw InputError("--resume: '" + out +
                       "' is the result of another job; choose another "
                       "--output or pass --overwrite");
    if (!o.run.quiet)
      std::printf("tdsolve fractal: '%s' is already complete (the same job); nothing to do\n",
                  out.c_str());
    return 0;
  }
  bool resuming = false;
  if (o.out.resume && stat(partial.c_str(), &st) == 0) {
    if (read_job(partial) != j.identity)
      throw InputError("--resume: '" + partial +
                       "' was written by another job (shape, level, "
                       "rule, init, steps or version differ); run without --resume to replace it");
    resuming = true;
  }

  std::unique_ptr<Engine> engine = make_engine(o, j.f, j.rule);
  const Fractal& f = j.f;
  const double file_bytes = double(j.steps.size()) * double(f.cells) + 8.0 * double(o.steps);
  check_output_space(out, file_bytes);
  if (!o.run.quiet) describe_run(o, j, *engine);
  // The start is read (and checked) before the file exists: a bad state
  // leaves nothing behind.
  const auto start = [&] {
    if (o.input.empty()) {
      engine->set_random(parse_random_init(o.init));
    } else {
      load_input_state(o.input, f, *engine);
    }
  };
  if (!resuming) {
    start();
    create_file(o, j, partial, engine->describe());
  }

  // From here on the file exists: a failure ends the job at once with one
  // line (and MPI_Abort, so HDF5 never closes a failed file in MPI_Finalize).
  const std::string resume_cmd =
      o.run.command + (o.run.command.find(" --resume") == std::string::npos ? " --resume" : "");
  set_abort_hint(
      "the finished chunks (the snapshots written so far) are kept in '" + partial +
      "'; to continue from the last one, run the same job again with --resume: " + resume_cmd);
  const double deadline = o.run.max_hours > 0 ? o.run.max_hours * 3600.0 : 0;
  const auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  };
  std::vector<std::int64_t> live(std::size_t(o.steps) + 1, 0);
  long step = 0, first_step = 0;
  double compute0 = 0;
  int stopped = 0;
  bool out_of_time = false;
  contain(comm, [&] {
    Writer w(partial);
    std::size_t next_row = 0;
    if (resuming) {
      const std::vector<std::uint8_t> done = w.done();
      while (next_row < done.size() && done[next_row] == 1)
        ++next_row;
      live = w.live(live.size());
      if (next_row > 0) {
        w.load(next_row - 1, f.cells, *engine);
        if (!o.run.quiet)
          std::printf("tdsolve fractal: resuming '%s' from step %ld (%zu of %zu snapshots done)\n",
                      partial.c_str(), j.steps[next_row - 1], next_row, j.steps.size());
      }
    }
    if (next_row == 0) {
      if (resuming) start();
      live[0] = std::int64_t(engine->live());
      w.snapshot(0, *engine, f.cells, live, 0, 1);
      next_row = 1;
    }

    step = j.steps[next_row - 1];
    std::vector<std::uint64_t> after(1);
    compute0 = engine->seconds();
    first_step = step;
    for (std::size_t row = next_row; row < j.steps.size(); ++row) {
      while (step < j.steps[row]) {
        if ((stopped = stop_signal()) != 0 || (deadline > 0 && elapsed() > deadline)) {
          out_of_time = !stopped;
          break;
        }
        // A few steps at a time: signals and the deadline are seen within seconds.
        const long batch = std::min<long>(j.steps[row] - step, 16);
        after.resize(std::size_t(batch));
        engine->step(int(batch), after.data());
        for (long i = 0; i < batch; ++i)
          live[std::size_t(step + 1 + i)] = std::int64_t(after[i]);
        step += batch;
        lock.heartbeat();
      }
      if (stopped || out_of_time) break;
      w.snapshot(row, *engine, f.cells, live, hsize_t(j.steps[row - 1]) + 1, hsize_t(step) + 1);
      if (!o.run.quiet && o.run.progress != ProgressMode::none)
        std::printf(
            "tdsolve fractal: step %ld of %ld, %lld live cells, snapshot %zu of %zu written\n",
            step, o.steps, (long long)live[std::size_t(step)], row + 1, j.steps.size());
      std::fflush(stdout);
    }
    w.close();
  });
  set_abort_hint("");
  const double compute = engine->seconds() - compute0;
  write_stats(o, j, *engine, step - first_step, elapsed(), compute, !(stopped || out_of_time));
  if (stopped || out_of_time) {
    std::fprintf(stderr,
                 "tdsolve fractal: stopped cleanly (%s) at step %ld of %ld; the snapshots so far "
                 "are kept in '%s'. Resume (from the last snapshot) with: %s\n",
                 stopped ? signal_name(stopped) : "--max-hours reached", step, o.steps,
                 partial.c_str(), resume_cmd.c_str());
    return kStoppedExitCode;
  }
  io::rename_durably(partial, out);
  lock.release();
  if (!o.run.quiet) {
    const long done_steps = step - first_step;
    std::printf("tdsolve fractal: %ld steps in %s (%s per step, %.3g cells/s) -> %s\n", done_steps,
                human_seconds(elapsed()).c_str(),
                human_seconds(done_steps ? compute / double(done_steps) : 0).c_str(),
                compute > 0 ? double(f.cells) * double(done_steps) / compute : 0.0, out.c_str());
  }
  return 0;
}

}  // namespace

int run_fractal(const FractalOptions& o, MPI_Comm comm) {
  if (comm_size(comm) > 1)
    throw CollectiveError(
        "tdsolve fractal runs on one rank (the whole state lives on one device); start it "
        "without mpirun or with -np 1",
        2);
  int code = 0;
  all_agree(comm, [&] { code = run_root(o, comm); });
  return code;
}

}  // namespace tdsolve::fractal
