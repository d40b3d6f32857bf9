// The commands that write a result file: edm (packed pair distances), cross
// (the M × K matrix of two sets) and hist (binned pair distances). Each is a
// domain, an epilogue, a file layout and a sink; the rest is the one driver.
#include "solver/commands.hpp"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "core/error.hpp"
#include "io/input.hpp"
#include "io/result_file.hpp"
#include "solver/cpu/cpu_backend.hpp"  // available_host_bytes
#include "solver/driver.hpp"
#include "solver/fault.hpp"
#include "solver/mpi_util.hpp"
#include "version.hpp"

namespace tdsolve {

namespace {

constexpr double kPi = 3.141592653589793238462643383279502884;

// Histogram chunks buffer nothing, so their size serves progress and
// balance only: about 1/256 of the pairs (at least a block row), at most
// 2^30. Like every plan, it depends on the problem alone.
index_t hist_chunk_pairs(index_t total) {
  return std::min<index_t>(index_t(1) << 30, std::max<index_t>(1, total / 256));
}

const char* command_name(CommandKind k) {
  switch (k) {
    case CommandKind::edm:
      return "edm";
    case CommandKind::hist:
      return "hist";
    case CommandKind::cross:
      return "cross";
  }
  return "?";
}

std::string directory_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  return stat(a.c_str(), &sa) == 0 && stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

void check_writable_dir(const std::string& path, const char* option) {
  struct stat st {};
  const std::string dir = directory_of(path);
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw UsageError(std::string(option) + ": cannot write '" + path + "': directory '" + dir +
                     "' does not exist");
  if (access(dir.c_str(), W_OK) != 0)
    throw UsageError(std::string(option) + ": cannot write '" + path + "': directory '" + dir +
                     "' is not writable");
}

// Every path the run writes, checked against each other and the inputs
// before anything exists.
void check_paths(const CommandOptions& o) {
  const std::string& out = o.out.output;
  if (out.empty()) throw UsageError("--output FILE.h5 is required");
  std::vector<std::pair<std::string, const char*>> inputs;
  if (!o.in.input.empty()) inputs.push_back({io::split_input_spec(o.in.input).path, "the input"});
  if (!o.with.input.empty())
    inputs.push_back({io::split_input_spec(o.with.input).path, "the --with input"});
  struct stat st {};
  if (stat(out.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw UsageError("--output '" + out + "' is a directory");
    for (const auto& [in, what] : inputs)
      if (same_file(out, in))
        throw UsageError("--output '" + out + "' is " + what + " file; choose another name");
    if (!S_ISREG(st.st_mode))
      throw UsageError("--output '" + out + "' exists and is not a regular file");
    if (!o.out.overwrite)
      throw UsageError("output '" + out + "' exists; pass --overwrite to replace it");
  }
  check_writable_dir(out, "--output");
  if (!o.run.stats.empty()) {
    const std::string& stats = o.run.stats;
    if (stats == out || same_file(stats, out))
      throw UsageError("--stats '" + stats + "' is the output file; choose another name");
    for (const auto& [in, what] : inputs)
      if (same_file(stats, in))
        throw UsageError("--stats '" + stats + "' is " + what + " file; choose another name");
    check_writable_dir(stats, "--stats");
  }
}

void check_disk_space(const std::string& output, bool overwrite, double bytes) {
  struct statvfs fs {};
  if (statvfs(directory_of(output).c_str(), &fs) != 0) return;  // cannot tell: let HDF5 try
  double free = static_cast<double>(fs.f_bavail) * fs.f_frsize;
  struct stat st {};
  if (overwrite && stat(output.c_str(), &st) == 0) free += static_cast<double>(st.st_size);
  if (bytes > free) {
    throw InputError("the output needs " + human_bytes(bytes) + " but '" + directory_of(output) +
                     "' has " + human_bytes(free) + " free");
  }
}

// Sizes that would overflow an index, the file, or the machine.
void check_points_fit(index_t n, index_t d, const std::string& source, double host_bytes) {
  index_t points = 0;
  if (__builtin_mul_overflow(n, d, &points) || double(points) * 8 > host_bytes) {
    throw InputError("n × d = " + std::to_string(n) + " × " + std::to_string(d) + " points (" +
                     source + ") do not fit in this node's available memory");
  }
}

index_t checked_total(CommandKind kind, index_t rows, index_t cols, index_t value_bytes,
                      const std::string& source) {
  index_t total = 0, bytes = 0;
  if (kind == CommandKind::cross) {
    if (__builtin_mul_overflow(rows, cols, &total) || total >= (index_t(1) << 62))
      throw InputError(std::to_string(rows) + " × " + std::to_string(cols) +
                       " distances are more than tdsolve indexes (2^62)");
  } else if (!mapping::checked_pair_count(rows, &total) || total >= (index_t(1) << 62)) {
    throw InputError("n = " + std::to_string(rows) + " points (" + source +
                     ") give more pairs than tdsolve indexes (C(n,2) must stay below 2^62)");
  }
  if (kind != CommandKind::hist &&
      (__builtin_mul_overflow(total, value_bytes, &bytes) || bytes >= (index_t(1) << 63))) {
    throw InputError(source + " gives an output larger than a file can hold (" +
                     std::to_string(total) + " values of " + std::to_string(value_bytes) +
                     " bytes)");
  }
  return total;
}

// Reads or generates a point set; `check(n, d, source)` vets its size
// before a generator allocates anything.
template <typename Check>
io::PointSet load_points(const InputOptions& in, double host_bytes, Check&& check) {
  if (!in.generate.empty()) {
    const io::GeneratorSpec g = io::parse_generator(in.generate);
    check(g.n, g.d, in.generate);
    check_points_fit(g.n, g.d, in.generate, host_bytes);
    return io::generate_points(g);  // finite by construction
  }
  io::PointSet pts = io::read_points(in.input);
  check(pts.n, pts.d, pts.source);
  check_points_fit(pts.n, pts.d, pts.source, host_bytes);
  io::check_finite(pts);
  return pts;
}

std::string utc_now() {
  char buf[32];
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

template <typename T>
void bcast_vector(MPI_Comm comm, std::vector<T>* v) {
  index_t n = v->size();
  bcast_u64(comm, &n);
  v->resize(n);
  bcast_bytes(comm, v->data(), n * sizeof(T));
}

struct Sources {
  std::string a, b;
};

// Rank 0 reads or generates the points and checks everything that can be
// checked before a file exists; all ranks then receive the same problem.
template <typename T>
Problem<T> load_problem(const CommandOptions& o, MPI_Comm comm, Sources* src) {
  Problem<T> p;
  p.domain = o.kind == CommandKind::cross ? DomainKind::rect : DomainKind::pairs;
  p.metric = o.compute.metric;
  p.map = o.compute.map;
  p.rho = o.compute.block;
  p.epilogue = o.kind == CommandKind::hist ? EpilogueKind::histogram : EpilogueKind::store;
  const bool bench = o.out.output.empty();
  on_root(comm, [&] {
    if (!bench) check_paths(o);
    const double host = static_cast<double>(cpu::available_host_bytes(1));
    const auto pair_sizes = [&](index_t n, index_t, const std::string& source) {
      if (p.domain == DomainKind::pairs) {
        io::check_pairs(n, source);
        checked_total(o.kind, n, n, sizeof(T), source);
      }
    };
    io::PointSet a = load_points(o.in, host, pair_sizes);
    src->a = a.source;
    p.d = a.d;
    p.rows = a.n;
    if (p.domain == DomainKind::rect) {
      io::PointSet b = load_points(o.with, host, [](index_t, index_t, const std::string&) {});
      src->b = b.source;
      if (b.d != a.d)
        throw InputError("--input has d = " + std::to_string(a.d) +
                         " features but --with has d = " + std::to_string(b.d) +
                         "; both sets need the same d");
      p.cols = b.n;
      p.b = convert_points<T>(b);
    } else {
      p.cols = a.n;
    }
    const index_t total = checked_total(o.kind, p.rows, p.cols, sizeof(T), a.source);
    if (o.kind == CommandKind::hist) {
      if (o.hist.box_dims > 0 && static_cast<index_t>(o.hist.box_dims) != a.d)
        throw UsageError("--box gives " + std::to_string(o.hist.box_dims) + " lengths but '" +
                         a.source + "' has d = " + std::to_string(a.d) + " features");
    } else if (!bench) {
      check_disk_space(o.out.output, o.out.overwrite, double(total) * sizeof(T));
    }
    p.a = convert_points<T>(a);
  });
  bcast_u64(comm, &p.rows);
  bcast_u64(comm, &p.cols);
  bcast_u64(comm, &p.d);
  bcast_string(comm, &src->a);
  bcast_string(comm, &src->b);
  bcast_vector(comm, &p.a);
  bcast_vector(comm, &p.b);
  all_agree(comm, [&] { fault_point(Stage::read, 0); });
  complete_problem(&p);
  on_root(comm, [&] { check_norms(p, src->a, src->b); });
  if (o.kind == CommandKind::hist) {
    p.hist = make_hist_spec(o.hist.lo, o.hist.hi, o.hist.bins);
    p.box_dims = o.hist.box_dims;
    for (int k = 0; k < o.hist.box_dims; ++k)
      p.box[k] = static_cast<T>(o.hist.box[k]);
  }
  return p;
}

std::string box_text(const HistOptions& h) {
  std::string s;
  char buf[32];
  for (int k = 0; k < h.box_dims; ++k) {
    std::snprintf(buf, sizeof buf, "%.17g", h.box[k]);
    s += (k ? "," : "") + std::string(buf);
  }
  return s;
}

double box_volume(const HistOptions& h) {
  double v = 1;
  for (int k = 0; k < h.box_dims; ++k)
    v *= h.box[k];
  return v;
}

const char* kRdfFormula =
    "rdf[b] = counts[b] / ((4/3) pi (edges[b+1]^3 - edges[b]^3) n (n-1) / (2 volume)), "
    "as MDAnalysis InterRDF(g, g, exclusion_block=(1, 1)) for one frame";
const char* kBinning =
    "numpy.histogram: edges = numpy.linspace(range_lo, range_hi, bins + 1); bins half-open "
    "[edges[b], edges[b+1]), the last closed; distances below range_lo in /underflow, above "
    "range_hi in /overflow";

template <typename T>
io::ResultLayout make_layout(const CommandOptions& o, const Problem<T>& p,
                             const mapping::ChunkPlan& plan, const Sources& src,
                             const std::string& created) {
  using io::Attr;
  io::ResultLayout L;
  L.path = o.out.output;
  L.overwrite = o.out.overwrite;
  L.chunk_offsets = plan.offsets();
  L.root_attrs = {Attr{"software", std::string("tdsolve")},
                  Attr{"version", std::string(TDSOLVE_VERSION)}, Attr{"command", o.run.command},
                  Attr{"created", created}, Attr{"input", src.a}};
  if (o.kind == CommandKind::cross) L.root_attrs.push_back(Attr{"with", src.b});
  const std::string precision = sizeof(T) == 8 ? "float64" : "float32";
  const io::ValueType vt = sizeof(T) == 8 ? io::ValueType::f64 : io::ValueType::f32;
  const std::string metric = metric_name(p.metric);
  switch (o.kind) {
    case CommandKind::edm:
      L.result = {"distances",
                  vt,
                  {plan.total()},
                  {Attr{"n", std::uint64_t(p.rows)}, Attr{"k", std::uint64_t(2)},
                   Attr{"layout", std::string("combinations")}, Attr{"metric", metric},
                   Attr{"precision", precision}, Attr{"features", std::uint64_t(p.d)},
                   Attr{"block", std::uint64_t(p.rho)}},
                  {}};
      break;
    case CommandKind::cross:
      L.result = {"distances",
                  vt,
                  {p.rows, p.cols},
                  {Attr{"rows", std::uint64_t(p.rows)}, Attr{"cols", std::uint64_t(p.cols)},
                   Attr{"layout", std::string("matrix")}, Attr{"metric", metric},
                   Attr{"precision", precision}, Attr{"features", std::uint64_t(p.d)},
                   Attr{"block", std::uint64_t(p.rho)}},
                  {}};
      break;
    case CommandKind::hist: {
      std::vector<Attr> a = {Attr{"n", std::uint64_t(p.rows)},
                             Attr{"k", std::uint64_t(2)},
                             Attr{"metric", metric},
                             Attr{"precision", precision},
                             Attr{"features", std::uint64_t(p.d)},
                             Attr{"bins", std::uint64_t(p.hist.bins)},
                             Attr{"range_lo", p.hist.lo},
                             Attr{"range_hi", p.hist.hi},
                             Attr{"pairs", std::uint64_t(plan.total())},
                             Attr{"binning", std::string(kBinning)}};
      if (o.hist.box_dims > 0) a.push_back(Attr{"box", box_text(o.hist)});
      L.result = {"counts", io::ValueType::i64, {p.hist.bins}, a, {}};
      L.extras.push_back({"edges", io::ValueType::f64, {p.hist.bins + 1}, {}, p.hist.edges});
      L.extras.push_back({"underflow", io::ValueType::i64, {}, {}, {}});
      L.extras.push_back({"overflow", io::ValueType::i64, {}, {}, {}});
      if (o.hist.box_dims > 0)
        L.extras.push_back(
            {"rdf",
             io::ValueType::f64,
             {p.hist.bins},
             {Attr{"volume", box_volume(o.hist)}, Attr{"formula", std::string(kRdfFormula)},
              Attr{"n", std::uint64_t(p.rows)}},
             {}});
      break;
    }
  }
  if (o.out.store_points) {
    L.store_points = true;
    L.points = p.rows;
    L.features = p.d;
    L.points_type = vt;
  }
  return L;
}

// Values in packed order straight into the file; a chunk's flag only after
// its data is synced to the storage.
template <typename T>
class ArraySink final : public Sink<T> {
 public:
  explicit ArraySink(io::ResultWriter& w) : w_(w) {}
  void write(bool has, index_t, index_t offset, index_t count, const ChunkResult<T>& r) override {
    w_.write(has ? offset : 0, has ? count : 0, r.values);
  }
  void mark(bool has, index_t chunk) override {
    w_.flush();
    w_.mark_done(has, chunk);
  }
  void close() override { w_.close(); }

 private:
  io::ResultWriter& w_;
};

// Partial counts summed per rank (integers: the same sum in any order),
// reduced to rank 0 at the end, written once, then every flag.
template <typename T>
class HistogramSink final : public Sink<T> {
 public:
  HistogramSink(io::ResultWriter& w, MPI_Comm comm, const Problem<T>& p, const HistOptions& h)
      : w_(w), comm_(comm), p_(p), h_(h), sum_(p.hist.slots(), 0) {}
  void write(bool has, index_t, index_t, index_t, const ChunkResult<T>& r) override {
    if (!has) return;
    for (index_t s = 0; s < sum_.size(); ++s)
      sum_[s] += r.counts[s];
  }
  void mark(bool, index_t) override {}
  void close() override {
    std::vector<std::uint64_t> total(sum_.size(), 0);
    check_mpi(MPI_Reduce(sum_.data(), total.data(), static_cast<int>(sum_.size()), MPI_UINT64_T,
                         MPI_SUM, 0, comm_),
              "MPI_Reduce (histogram)");
    const bool root = comm_rank(comm_) == 0;
    const index_t bins = p_.hist.bins;
    std::vector<std::int64_t> counts(bins);
    std::int64_t under = 0, over = 0;
    std::vector<double> rdf;
    if (root) {
      under = static_cast<std::int64_t>(total[0]);
      over = static_cast<std::int64_t>(total[bins + 1]);
      for (index_t b = 0; b < bins; ++b)
        counts[b] = static_cast<std::int64_t>(total[b + 1]);
      if (h_.box_dims > 0) {
        const double n = static_cast<double>(p_.rows), volume = box_volume(h_);
        const double density = n * (n - 1) / (2 * volume);
        const std::vector<double>& e = p_.hist.edges;
        rdf.resize(bins);
        for (index_t b = 0; b < bins; ++b) {
          const double shell =
              4.0 / 3.0 * kPi * (e[b + 1] * e[b + 1] * e[b + 1] - e[b] * e[b] * e[b]);
          rdf[b] = static_cast<double>(counts[b]) / (shell * density);
        }
      }
    }
    w_.write_extra("counts", root ? counts.data() : nullptr);
    w_.write_extra("underflow", root ? &under : nullptr);
    w_.write_extra("overflow", root ? &over : nullptr);
    if (h_.box_dims > 0) w_.write_extra("rdf", root ? rdf.data() : nullptr);
    w_.flush();
    w_.mark_all_done();
    w_.close();
  }

 private:
  io::ResultWriter& w_;
  MPI_Comm comm_;
  const Problem<T>& p_;
  const HistOptions& h_;
  std::vector<std::uint64_t> sum_;
};

// Opens the file on every rank. If only some ranks fail, those that hold it
// cannot close it (a collective close would wait for the others): abort.
std::unique_ptr<io::ResultWriter> open_writer(MPI_Comm comm, const io::ResultLayout& L) {
  std::unique_ptr<io::ResultWriter> w;
  std::string why;
  try {
    w = std::make_unique<io::ResultWriter>(comm, L);
  } catch (const std::exception& e) {
    why = e.what();
  }
  int ok = w ? 1 : 0, all = 0, any = 0;
  check_mpi(MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
  check_mpi(MPI_Allreduce(&ok, &any, 1, MPI_INT, MPI_MAX, comm), "MPI_Allreduce");
  if (all) return w;
  if (any) {
    if (!w) abort_run(comm, why);
    w.release();  // let go of it without a collective close; a failing rank aborts the job
    MPI_Barrier(comm);
  }
  agree(comm, w ? 0 : 1, why);  // every rank failed: one clean error
  return w;
}

template <typename T>
void write_stats(const CommandOptions& o, const Problem<T>& p, const mapping::ChunkPlan& plan,
                 const std::string& kind, int ranks, double total, const double worst[3]) {
  std::FILE* f = std::fopen(o.run.stats.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "tdsolve: warning: cannot write --stats file '%s': %s\n",
                 o.run.stats.c_str(), std::strerror(errno));
    return;
  }
  std::fprintf(f,
               "{\"command\": \"%s\", \"n\": %llu, \"cols\": %llu, \"d\": %llu, \"pairs\": %llu, "
               "\"bytes\": %.0f, \"metric\": \"%s\", \"precision\": \"%s\", \"backend\": \"%s\", "
               "\"ranks\": %d, \"chunks\": %llu, \"block\": %llu, \"total_s\": %.6f, "
               "\"compute_s\": %.6f, \"transfer_s\": %.6f, \"write_s\": %.6f}\n",
               command_name(o.kind), (unsigned long long)p.rows, (unsigned long long)p.cols,
               (unsigned long long)p.d, (unsigned long long)plan.total(),
               p.stores_values() ? double(plan.total()) * sizeof(T) : 0.0, metric_name(p.metric),
               sizeof(T) == 8 ? "float64" : "float32", kind.c_str(), ranks,
               (unsigned long long)plan.chunks(), (unsigned long long)p.rho, total, worst[0],
               worst[1], worst[2]);
  std::fclose(f);
}

template <typename T>
void run_typed(const CommandOptions& o, MPI_Comm comm) {
  const double t_start = MPI_Wtime();
  const int rank = comm_rank(comm), ranks = comm_size(comm);
  const char* name = command_name(o.kind);
  Sources src;
  const Problem<T> p = load_problem<T>(o, comm, &src);

  std::string kind;
  std::unique_ptr<Backend<T>> backend = make_backend<T>(o.compute, p, comm, o.run.quiet, &kind);
  const index_t bound = o.kind == CommandKind::hist
                            ? hist_chunk_pairs(p.total())
                            : static_cast<index_t>(o.compute.chunk_mb * (1 << 20)) / sizeof(T);
  const mapping::ChunkPlan plan = agree_plan(p, *backend, bound, comm);

  std::string created = utc_now();
  bcast_string(comm, &created);
  const io::ResultLayout layout = make_layout(o, p, plan, src, created);

  if (rank == 0 && !o.run.quiet) {
    const double bytes = p.stores_values() ? double(plan.total()) * sizeof(T) : 0;
    std::printf("tdsolve %s: %llu × %llu points, d = %llu, %llu %s%s, %s %s, block %llu\n", name,
                (unsigned long long)p.rows, (unsigned long long)p.cols, (unsigned long long)p.d,
                (unsigned long long)plan.total(),
                p.domain == DomainKind::rect ? "distances" : "pairs",
                bytes > 0 ? (" (" + human_bytes(bytes) + ")").c_str() : "", metric_name(p.metric),
                sizeof(T) == 8 ? "float64" : "float32", (unsigned long long)p.rho);
    std::printf("tdsolve %s: %d rank%s, %s, %llu chunk%s -> %s\n", name, ranks,
                ranks > 1 ? "s" : "", backend->describe().c_str(),
                (unsigned long long)plan.chunks(), plan.chunks() > 1 ? "s" : "",
                o.out.output.c_str());
    std::fflush(stdout);
  }

  on_root(comm, [&] { io::create_result_file(layout); });
  std::unique_ptr<io::ResultWriter> writer = open_writer(comm, layout);

  // From here on the file exists: a failure on one rank ends the job at once.
  std::unique_ptr<Sink<T>> sink;
  LoopTiming t;
  contain(comm, [&] {
    if (o.kind == CommandKind::hist) {
      sink = std::make_unique<HistogramSink<T>>(*writer, comm, p, o.hist);
    } else {
      sink = std::make_unique<ArraySink<T>>(*writer);
    }
    if (o.out.store_points) writer->write_points(rank == 0 ? p.a.data() : nullptr);
    Progress progress(rank == 0 ? o.run.progress : ProgressMode::none, plan.total(),
                      p.stores_values() ? sizeof(T) : 0);
    t = run_chunks(plan, *backend, *sink, comm, &progress);
    const double w0 = MPI_Wtime();
    sink->close();
    t.sink += MPI_Wtime() - w0;
  });

  double mine[3] = {t.compute, t.transfer, t.sink}, worst[3] = {0, 0, 0};
  check_mpi(MPI_Reduce(mine, worst, 3, MPI_DOUBLE, MPI_MAX, 0, comm), "MPI_Reduce");
  const double total = MPI_Wtime() - t_start;
  if (rank != 0) return;
  if (!o.run.quiet) {
    const char* what = p.domain == DomainKind::rect ? "distances" : "pairs";
    if (p.stores_values()) {
      const double bytes = double(plan.total()) * sizeof(T);
      std::printf("tdsolve %s: wrote %s (%llu %s) in %s (%s/s, %.3g %s/s", name,
                  human_bytes(bytes).c_str(), (unsigned long long)plan.total(), what,
                  human_seconds(total).c_str(), human_bytes(bytes / total).c_str(),
                  double(plan.total()) / total, what);
    } else {
      std::printf("tdsolve %s: binned %llu %s in %s (%.3g %s/s", name,
                  (unsigned long long)plan.total(), what, human_seconds(total).c_str(),
                  double(plan.total()) / total, what);
    }
    std::printf("); per rank at most: compute %s", human_seconds(worst[0]).c_str());
    if (kind == "cuda") std::printf(", device-to-host %s", human_seconds(worst[1]).c_str());
    std::printf(", write %s\n", human_seconds(worst[2]).c_str());
  }
  if (!o.run.stats.empty()) write_stats(o, p, plan, kind, ranks, total, worst);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

template <typename T>
void bench_typed(const BenchOptions& b, MPI_Comm comm) {
  const CommandOptions& o = b.cmd;
  Sources src;
  const Problem<T> p = load_problem<T>(o, comm, &src);
  std::string kind;
  std::unique_ptr<Backend<T>> backend = make_backend<T>(o.compute, p, comm, true, &kind);
  backend->keep_on_device(true);
  const index_t bound = o.kind == CommandKind::hist ? hist_chunk_pairs(p.total())
                        : o.compute.chunk_mb > 0
                            ? static_cast<index_t>(o.compute.chunk_mb * (1 << 20)) / sizeof(T)
                            : ~index_t(0);
  const mapping::ChunkPlan plan = agree_plan(p, *backend, bound, comm);
  NullSink<T> sink;
  std::vector<double> ms;
  for (int r = 0; r <= b.repeat; ++r) {  // the first pass warms up
    const LoopTiming t = run_chunks(plan, *backend, sink, comm, nullptr);
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
  const char* problem = command_name(o.kind);
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
  } else {
    std::printf(" (%llu bins; nothing written per value, so no write ceiling)",
                (unsigned long long)p.hist.bins);
  }
  std::printf("\n");
  if (!b.csv.empty()) {
    struct stat st {};
    const bool fresh = stat(b.csv.c_str(), &st) != 0 || st.st_size == 0;
    std::FILE* f = std::fopen(b.csv.c_str(), "a");
    if (!f) throw InputError("cannot append to --csv '" + b.csv + "': " + std::strerror(errno));
    if (fresh)
      std::fprintf(f,
                   "device,problem,backend,map,n,cols,d,metric,precision,block,launches,pairs,"
                   "bytes,repeat,"
                   "median_ms,min_ms,pairs_per_s,gbytes_per_s,memset_ms,memset_gbytes_per_s,"
                   "store_ms,store_gbytes_per_s,fraction_of_memset\n");
    std::fprintf(f,
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
    std::fclose(f);
  }
}

}  // namespace

void run_bench(const BenchOptions& o, MPI_Comm comm) {
  // No file exists: every failure is an ordinary error (one line, exit 1/2).
  all_agree(comm, [&] {
    if (o.cmd.compute.fp64) {
      bench_typed<double>(o, comm);
    } else {
      bench_typed<float>(o, comm);
    }
  });
}

void run_command(const CommandOptions& o, MPI_Comm comm) {
  if (o.compute.fp64) {
    run_typed<double>(o, comm);
  } else {
    run_typed<float>(o, comm);
  }
}

}  // namespace tdsolve
