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
#include "core/fnv.hpp"
#include "io/h5.hpp"
#include "io/input.hpp"
#include "io/output_files.hpp"
#include "io/result_file.hpp"
#include "io/schema.hpp"
#include "solver/bench_csv.hpp"
#include "solver/cli/options.hpp"
#include "solver/commands/command.hpp"
#include "solver/cuda/cuda_backend.hpp"
#include "solver/driver.hpp"
#include "solver/lifecycle.hpp"
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
template <typename Sink>
void read_input_state(const std::string& spec, const Fractal& f, Sink&& sink) {
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
    sink(c0, count, bytes.data());
  });
}

void load_input_state(const std::string& spec, const Fractal& f, Engine& engine) {
  read_input_state(spec, f, [&](std::uint64_t c0, hsize_t count, const std::uint8_t* cells) {
    engine.set_state(c0, count, cells);
  });
}

// What --resume compares of an --input state: its cells, not its path (the
// file at that path may have been replaced since). FNV-1a over the cells.
std::string input_state_digest(const std::string& spec, const Fractal& f) {
  Fnv1a64 h;
  read_input_state(spec, f, [&](std::uint64_t, hsize_t count, const std::uint8_t* cells) {
    h.add(cells, count);
  });
  return h.hex();
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
  io::write_attr(file, "kind", std::string("fractal"));  // what the file is (the schema's kind)
  io::write_attr(file, "schema_version", io::schema_version());
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

// --resume, before anything is written: every dataset of the job's file as
// the job writes it (type and shape; /steps and /replicas hold the job's
// values; every flag is 0 or 1, and all are 1 in a complete result).
// InputError naming the first that is not, and the way out.
void check_resumable(const std::string& path, const Job& j, const FractalOptions& o,
                     bool complete) {
  const Fractal& f = j.f;
  const index_t S = j.steps.size(), k = index_t(f.k);
  try {
    Hid file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
    if (!file.valid()) throw InputError("it cannot be opened");
    io::check_dataset(file, {"states", H5T_STD_U8LE, {S, index_t(f.cells)}});
    io::check_dataset(file, {"steps", H5T_STD_I64LE, {S}});
    io::check_dataset(file, {"live", H5T_STD_I64LE, {index_t(o.steps) + 1}});
    io::check_dataset(file, {"replicas", H5T_STD_I64LE, {k, 2}});
    io::check_dataset(file, {"progress/done", H5T_STD_U8LE, {S}});
    const auto read = [&](const char* name, std::size_t count) {
      std::vector<std::int64_t> v(count);
      Hid d = io::dataset_handle(H5Dopen2(file, name, H5P_DEFAULT), std::string("H5Dopen ") + name);
      io::check_status(H5Dread(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()),
                       std::string("reading /") + name);
      return v;
    };
    if (read("steps", S) != std::vector<std::int64_t>(j.steps.begin(), j.steps.end()))
      throw InputError("/steps are not the job's snapshot steps");
    std::vector<std::int64_t> table;
    for (const auto& [x, y] : j.shape.cells) {
      table.push_back(x);
      table.push_back(y);
    }
    if (read("replicas", 2 * k) != table) throw InputError("/replicas are not the job's table");
    const std::vector<unsigned char> done = io::read_flags(file, "progress/done");
    if (complete && std::count(done.begin(), done.end(), 1) != std::ptrdiff_t(done.size()))
      throw InputError("/progress/done has a snapshot not flagged done");
    // The snapshot a resume continues from (the last of the flagged ones
    // from the first): every cell 0 or 1, as an --input state must be. A
    // changed byte there (a cell of 108) would run into every step after.
    std::size_t next = 0;
    while (!complete && next < done.size() && done[next] == 1)
      ++next;
    if (next > 0) {
      Hid states = io::dataset_handle(H5Dopen2(file, "states", H5P_DEFAULT), "H5Dopen /states");
      std::vector<std::uint8_t> buf(std::min<std::uint64_t>(kSlab, f.cells));
      for_each_slab(
          states, next - 1, f.cells, [&](std::uint64_t c0, hsize_t count, hid_t mem, hid_t space) {
            io::check_status(H5Dread(states, H5T_NATIVE_UINT8, mem, space, H5P_DEFAULT, buf.data()),
                             "H5Dread /states");
            for (hsize_t i = 0; i < count; ++i)
              if (buf[i] > 1)
                throw InputError("/states row " + std::to_string(next - 1) + " (step " +
                                 std::to_string(j.steps[next - 1]) + "): cell " +
                                 std::to_string(c0 + i) + " holds " + std::to_string(buf[i]) +
                                 "; a state holds 0 (dead) and 1 (alive)");
          });
    }
  } catch (const std::exception& e) {
    H5Eclear2(H5E_DEFAULT);
    throw InputError("--resume: '" + path + "' cannot be " + (complete ? "reported" : "resumed") +
                     ": " + e.what() + ": the file is damaged; start over with --overwrite");
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

void write_stats(std::FILE* fp, const FractalOptions& o, const Job& j, const Engine& e,
                 long steps_run, double total, double compute, bool complete) {
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
    off_t before = 0;
    CsvFile fp = open_bench_csv(o.csv,
                                "device,shape,k,s,level,n,cells,map,rho,tensor_cores,steps,repeat,"
                                "median_ms_per_step,min_ms_per_step,cells_per_s,state_bytes\n",
                                &before);
    std::fprintf(fp.get(), "\"%s\",%s,%d,%d,%d,%llu,%llu,%s,%llu,%d,%ld,%d,%.6f,%.6f,%.6g,%llu\n",
                 e->describe().c_str(), j.shape.name.c_str(), f.k, f.s, f.levels,
                 (unsigned long long)f.n, (unsigned long long)f.cells,
                 strategy_name(o.engine.strategy),
                 (unsigned long long)(o.engine.rho ? o.engine.rho : default_rho(f)),
                 int(o.engine.tensor_cores), o.steps, o.repeat, med * 1e3, per_step[0] * 1e3,
                 double(f.cells) / med, (unsigned long long)e->device_bytes());
    close_bench_csv(fp, o.csv, before);
  }
  return 0;
}

// A run that writes its file, as the output lifecycle asks for it
// (solver/lifecycle.hpp); its own loop and resume: from the last snapshot.
class FractalRun final : public OutputRun {
 public:
  FractalRun(const FractalOptions& o, const Job& j)
      : o_(o), j_(j), t_start_(std::chrono::steady_clock::now()) {}

  // With the lock held: an --input state's cells join the job's identity.
  void load() override {
    if (!o_.input.empty())
      j_.identity += "input_cells=" + input_state_digest(o_.input, j_.f) + "\n";
  }

  Start inspect() override {
    const std::string& out = o_.out.output;
    const std::string partial = io::partial_path(out);
    struct stat st {};
    if (o_.out.resume && stat(out.c_str(), &st) == 0 && stat(partial.c_str(), &st) != 0) {
      if (read_job(out) != j_.identity)
        throw InputError("--resume: '" + out +
                         "' is the result of another job; choose another "
                         "--output or pass --overwrite");
      check_resumable(out, j_, o_, true);
      return Start::complete;
    }
    if (o_.out.resume && stat(partial.c_str(), &st) == 0) {
      if (read_job(partial) != j_.identity)
        throw InputError(
            "--resume: '" + partial +
            "' was written by another job (shape, level, rule, init or the --input "
            "state's cells, steps or version differ); run without --resume to replace it");
      check_resumable(partial, j_, o_, false);
      return Start::resume;
    }
    return Start::fresh;
  }

  void prepare(bool resuming) override {
    resuming_ = resuming;
    engine_ = make_engine(o_, j_.f, j_.rule);
    const Fractal& f = j_.f;
    const double file_bytes = double(j_.steps.size()) * double(f.cells) + 8.0 * double(o_.steps);
    check_output_space(o_.out.output, file_bytes);
    if (!o_.run.quiet) describe_run(o_, j_, *engine_);
    // The start is read (and checked) before the file exists: a bad state
    // leaves nothing behind.
    if (!resuming) start();
  }

  // One process opens the file, in its loop, once it is whole.
  bool shared_file() const override { return false; }
  void make(const std::string& creating) override {
    // Built in memory and written as one image, as the other commands do: a
    // full disk then leaves nothing behind.
    std::remove(creating.c_str());
    io::create_file_image(
        creating, [&](hid_t file) { build_file(file, o_, j_, engine_->describe()); }, false);
  }

  std::string abort_hint(const std::string& partial, const std::string& resume_cmd) const override {
    return "the finished chunks (the snapshots written so far) are kept in '" + partial +
           "'; to continue from the last one, run the same job again with --resume: " + resume_cmd;
  }

  // From here on the file exists: a failure ends the job at once with one
  // line (and MPI_Abort, so HDF5 never closes a failed file in MPI_Finalize).
  bool loop(const OutputContext& context) override {
    partial_ = context.partial;
    resume_cmd_ = context.resume_command;
    const Fractal& f = j_.f;
    const double deadline = o_.run.max_hours > 0 ? o_.run.max_hours * 3600.0 : 0;
    std::vector<std::int64_t> live(std::size_t(o_.steps) + 1, 0);
    contain(context.comm, [&] {
      Writer w(partial_);
      std::size_t next_row = 0;
      if (resuming_) {
        const std::vector<std::uint8_t> done = w.done();
        while (next_row < done.size() && done[next_row] == 1)
          ++next_row;
        live = w.live(live.size());
        if (next_row > 0) {
          w.load(next_row - 1, f.cells, *engine_);
          if (!o_.run.quiet)
            std::printf(
                "tdsolve fractal: resuming '%s' from step %ld (%zu of %zu snapshots done)\n",
                partial_.c_str(), j_.steps[next_row - 1], next_row, j_.steps.size());
        }
      }
      if (next_row == 0) {
        if (resuming_) start();
        live[0] = std::int64_t(engine_->live());
        w.snapshot(0, *engine_, f.cells, live, 0, 1);
        next_row = 1;
      }

      step_ = j_.steps[next_row - 1];
      std::vector<std::uint64_t> after(1);
      compute0_ = engine_->seconds();
      first_step_ = step_;
      for (std::size_t row = next_row; row < j_.steps.size(); ++row) {
        while (step_ < j_.steps[row]) {
          if ((stopped_ = stop_signal()) != 0 || (deadline > 0 && elapsed() > deadline)) {
            out_of_time_ = !stopped_;
            break;
          }
          // A few steps at a time: signals and the deadline are seen within seconds.
          const long batch = std::min<long>(j_.steps[row] - step_, 16);
          after.resize(std::size_t(batch));
          engine_->step(int(batch), after.data());
          for (long i = 0; i < batch; ++i)
            live[std::size_t(step_ + 1 + i)] = std::int64_t(after[i]);
          step_ += batch;
          context.heartbeat();
        }
        if (stopped_ || out_of_time_) break;
        w.snapshot(row, *engine_, f.cells, live, hsize_t(j_.steps[row - 1]) + 1,
                   hsize_t(step_) + 1);
        if (!o_.run.quiet && o_.run.progress != ProgressMode::none)
          std::printf(
              "tdsolve fractal: step %ld of %ld, %lld live cells, snapshot %zu of %zu written\n",
              step_, o_.steps, (long long)live[std::size_t(step_)], row + 1, j_.steps.size());
        std::fflush(stdout);
      }
      w.close();
    });
    compute_ = engine_->seconds() - compute0_;
    return !(stopped_ || out_of_time_);
  }

  void finish(bool complete) override {
    if (!complete) {
      std::fprintf(stderr,
                   "tdsolve fractal: stopped cleanly (%s) at step %ld of %ld; the snapshots so far "
                   "are kept in '%s'. Resume (from the last snapshot) with: %s\n",
                   stopped_ ? signal_name(stopped_) : "--max-hours reached", step_, o_.steps,
                   partial_.c_str(), resume_cmd_.c_str());
      return;
    }
    if (!o_.run.quiet) {
      const long done_steps = step_ - first_step_;
      std::printf("tdsolve fractal: %ld steps in %s (%s per step, %.3g cells/s) -> %s\n",
                  done_steps, human_seconds(elapsed()).c_str(),
                  human_seconds(done_steps ? compute_ / double(done_steps) : 0).c_str(),
                  compute_ > 0 ? double(j_.f.cells) * double(done_steps) / compute_ : 0.0,
                  o_.out.output.c_str());
    }
  }

  void write_stats(std::FILE* f, bool complete) const override {
    fractal::write_stats(f, o_, j_, *engine_, step_ - first_step_, elapsed(), compute_, complete);
  }

 private:
  // The start: --init's random state, or --input's.
  void start() {
    if (o_.input.empty()) {
      engine_->set_random(parse_random_init(o_.init));
    } else {
      load_input_state(o_.input, j_.f, *engine_);
    }
  }
  double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start_).count();
  }

  const FractalOptions& o_;
  Job j_;  // a copy: load() completes its identity
  std::chrono::steady_clock::time_point t_start_;
  bool resuming_ = false;
  std::unique_ptr<Engine> engine_;
  std::string partial_, resume_cmd_;
  long step_ = 0, first_step_ = 0;
  double compute0_ = 0, compute_ = 0;
  int stopped_ = 0;
  bool out_of_time_ = false;
};

int run_root(const FractalOptions& o, MPI_Comm comm) {
  const Job j = make_job(o);
  const std::vector<std::pair<std::string, std::string>> inputs = {
      {io::split_input_spec(o.input).path, "the input"}, {o.run.config, "the --config"}};
  if (o.bench) {
    check_not_an_input(o.csv, "--csv", inputs);
    return bench(o, j);
  }
  OutputRequest r;
  r.name = "fractal";
  r.paths.output = o.out.output;  // the checks every command makes of its paths
  r.paths.overwrite = o.out.overwrite;
  r.paths.resume = o.out.resume;
  r.paths.stats = o.run.stats;
  r.paths.inputs = inputs;
  r.command = o.run.command;
  r.resume_command = o.run.resume_command;
  r.quiet = o.run.quiet;
  FractalRun run(o, j);
  return run_output(comm, r, run);
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

namespace {

const char* kUsage =
    "Usage: tdsolve fractal --shape SHAPE --level R --steps T --output FILE.h5 [options]\n"
    "\n"
    "Runs a Life-like rule (Conway's B3/S23 by default) for T steps on an NBB fractal\n"
    "(Sierpinski triangle and carpet, Vicsek, ...) held in compact form through\n"
    "Quezada and Navarro's λ/ν maps: k^r cells instead of the n×n embedding, n = s^r.\n"
    "Each cell sees its 8 embedded neighbours that lie on the fractal. Writes the\n"
    "state at steps 0, K, 2K, ... and T (/states, compact order), the live cells of\n"
    "every step (/live) and the fractal's parameters. --map bb and lambda run the\n"
    "same steps on the embedded layout, for comparison; every strategy, rho and\n"
    "backend gives the same bytes. One rank only.\n";

// tdsolve fractal's command line.
class FractalCommand final : public cli::OptionsCommand {
 public:
  const char* name() const override { return "fractal"; }
  const char* summary() const override {
    return "Game of Life (any B/S rule) on an NBB fractal (Sierpinski, Vicsek, ...)\nin compact "
           "form, through Quezada and Navarro's λ/ν maps";
  }
  // --bench writes nothing: a signal ends it at once, as it ends `bench`
  // (with the handler installed, its loop never looked at the flag, and the
  // first SIGTERM was lost).
  bool stops_cleanly() const override { return !o_.bench; }
  int run(MPI_Comm comm) override { return run_fractal(o_, comm); }

 protected:
  const char* usage() const override { return kUsage; }

  void add_options(cli::po::options_description& all) override {
    namespace po = cli::po;
    po::options_description f("Fractal");
    std::string presets;
    for (const auto& [name, table] : fractal::presets())
      presets += (presets.empty() ? "" : ", ") + name + " (" + table + ")";
    f.add_options()(
        "shape", po::value(&o_.shape)->value_name("SHAPE"),
        ("a preset: " + presets +
         "; or your own table S:x,y/x,y/...: the side s (2 to 16) and the filled "
         "sub-squares of the s×s square, x rightwards and y downwards, in replica order")
            .c_str())("level", po::value(&o_.level)->value_name("R"),
                      "the fractal's level r: n = s^r cells a side, k^r cells in all")(
        "steps", po::value(&o_.steps)->value_name("T"), "generations to run (0 or more)")(
        "rule", po::value(&o_.rule)->default_value("B3/S23")->value_name("B../S.."),
        "birth and survival counts of live neighbours, as in Golly: B3/S23 is Conway's Life")(
        "init", po::value(&o_.init)->default_value("random:0.5:1")->value_name("SPEC"),
        "random:DENSITY:SEED: each cell alive with probability DENSITY (a hash of SEED and the "
        "cell's compact index: the same start on every layout and backend)")(
        "input", po::value(&o_.input)->value_name("FILE.h5:/DSET"),
        "start from a state instead: a 1-D integer dataset of k^r values 0/1 in compact order, or "
        "a 2-D one such as a run's /states (its last snapshot written)")(
        "snapshot-every", po::value(&o_.snapshot_every)->default_value(0)->value_name("K"),
        "also write the state every K steps (0: only at step 0 and step T)")(
        "layout", po::value(&layout_)->value_name("L"),
        "compact (k^r bytes; with --map nu, the default) or embedded (n×n bytes; with --map bb "
        "or lambda)")("map", po::value(&map_)->value_name("M"),
                      "nu: a block per coarse cell of the compact layout, λ to place it and ν to "
                      "find its neighbours (default); lambda: the same grid over the embedded "
                      "layout; bb: a bounding box over the whole embedding")(
        "rho", po::value(&o_.engine.rho)->default_value(0)->value_name("RHO"),
        "side of a coarse cell: a power of s up to 64 (0: the largest up to 32 the level allows)")(
        "tensor-cores", po::bool_switch(&o_.engine.tensor_cores),
        "CUDA, --map nu: form the coarse maps' sums (eqs. 7-8) with tensor-core MMA; the same "
        "coordinates as without")("backend",
                                  po::value(&c_.backend)->default_value("auto")->value_name("B"),
                                  "auto (cuda when a GPU is visible, else cpu), cpu or cuda")(
        "threads", po::value(&o_.engine.threads)->default_value(0)->value_name("N"),
        "CPU threads, 0 to 4096 (0: OMP_NUM_THREADS or all cores)")(
        "device", po::value(&o_.engine.device)->default_value(-1)->value_name("D"),
        "GPU to use (-1: the first)")(
        "bench", po::bool_switch(&o_.bench),
        "time the steps from the --init state instead of writing a file (no --output)")(
        "repeat", po::value(&o_.repeat)->default_value(3)->value_name("R"),
        "with --bench: runs of T steps to take the median of (after one warm-up)")(
        "csv", po::value(&o_.csv)->value_name("FILE"), "with --bench: append one row to FILE");
    all.add(f);
    all.add(
        cli::output_group(o_.out, "result file: /states, /steps, /live, /replicas", false,
                          "continue the unfinished FILE.h5.partial of the same job from its last "
                          "snapshot (any backend or strategy); when FILE.h5 is already complete, "
                          "say so and exit 0; with neither, start a new run"));
    po::options_description misc = cli::run_group(
        o_.run, c_, "none: no line per snapshot; auto, bar and log: a line per snapshot");
    misc.add_options()("help,h", "show this help");
    all.add(misc);
  }

  void check(const cli::po::options_description& all, const cli::po::variables_map& vm, int argc,
             char** argv) override {
    std::string &layout = layout_, &map = map_;
    if (o_.shape.empty()) throw UsageError("--shape is required (see tdsolve fractal --help)");
    if (!vm.count("level")) throw UsageError("--level R is required");
    if (!vm.count("steps")) throw UsageError("--steps T is required");
    if (o_.steps < 0 || o_.steps > 100'000'000)
      throw UsageError("--steps must be from 0 to 100000000 (/live holds a count per step)");
    if (o_.snapshot_every < 0) throw UsageError("--snapshot-every must be 0 or more");
    if (o_.snapshot_every > 0 && o_.steps / o_.snapshot_every > 1000000)
      throw UsageError("--snapshot-every: more than a million snapshots; take fewer");
    const Shape shape = parse_shape(o_.shape);
    const Fractal fr = make_fractal(shape, o_.level);
    parse_rule(o_.rule);
    if (vm.count("input") && !vm["init"].defaulted())
      throw UsageError("--init and --input both give the start; give one");
    if (o_.input.empty()) parse_random_init(o_.init);
    if (!layout.empty()) cli::check_choice("--layout", layout, {"compact", "embedded"});
    if (!map.empty()) cli::check_choice("--map", map, {"nu", "lambda", "bb"});
    if (map.empty()) map = layout == "embedded" ? "lambda" : "nu";
    if (layout.empty()) layout = map == "nu" ? "compact" : "embedded";
    if ((layout == "compact") != (map == "nu"))
      throw UsageError("--layout " + layout + " does not go with --map " + map +
                       ": the compact layout is read through ν (--map nu); the embedded one with "
                       "--map bb or lambda");
    o_.engine.strategy = map == "nu"       ? Strategy::nu
                         : map == "lambda" ? Strategy::lambda
                                           : Strategy::bb;
    if (o_.engine.rho) make_blocking(fr, o_.engine.rho);
    if (o_.engine.tensor_cores && o_.engine.strategy != Strategy::nu)
      throw UsageError("--tensor-cores goes with --map nu (the coarse maps of the compact layout)");
    cli::check_choice("--backend", c_.backend, {"auto", "cpu", "cuda"});
    o_.backend = c_.backend == "cpu"    ? BackendKind::cpu
                 : c_.backend == "cuda" ? BackendKind::cuda
                                        : BackendKind::automatic;
    cli::check_threads(o_.engine.threads);
    cli::check_device(o_.engine.device, o_.backend);
    if (o_.bench) {
      if (!o_.out.output.empty()) throw UsageError("--bench writes no file: leave out --output");
      if (!o_.input.empty()) throw UsageError("--bench starts from --init random:...; not --input");
      if (o_.steps < 1) throw UsageError("--bench needs --steps 1 or more");
      if (o_.repeat < 1 || o_.repeat > 1000)
        throw UsageError("--repeat must be between 1 and 1000");
    } else {
      if (o_.out.output.empty()) throw UsageError("--output FILE.h5 is required");
      if (o_.out.resume && o_.out.overwrite)
        throw UsageError(
            "--resume and --overwrite do not go together: --resume continues an "
            "unfinished run (or reports a finished one), --overwrite starts over");
      if (!o_.csv.empty() || !vm["repeat"].defaulted())
        throw UsageError("--repeat and --csv go with --bench");
    }
    cli::finish_run(o_.run, c_, all, vm, argc, argv);
    o_.run.effective = cli::effective_options(all, vm);
  }

 private:
  FractalOptions o_;
  cli::Choices c_;
  std::string layout_, map_;
};

}  // namespace

}  // namespace tdsolve::fractal

namespace tdsolve {

std::unique_ptr<Command> make_fractal_command() {
  return std::make_unique<fractal::FractalCommand>();
}

}  // namespace tdsolve
