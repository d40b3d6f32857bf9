// The commands that write a result file: edm (packed pair distances), cross
// (the M × K matrix of two sets), hist (binned pair distances) and triplet
// (three-body energies and forces). Each is a domain, an epilogue, a file
// layout and a sink; the rest is the one driver.
#include "solver/commands.hpp"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <limits>
#include <tuple>

#include "core/error.hpp"
#include "io/info.hpp"
#include "io/input.hpp"
#include "io/output_files.hpp"
#include "io/result_file.hpp"
#include "io/spheres.hpp"
#include "mapping/simplex.hpp"
#include "solver/bench_csv.hpp"
#include "solver/cpu/cpu_backend.hpp"  // available_host_bytes
#include "solver/driver.hpp"
#include "solver/exact_sum.hpp"
#include "solver/fault.hpp"
#include "solver/mpi_util.hpp"
#include "solver/signals.hpp"
#include "version.hpp"

namespace tdsolve {

// tdsolve info checks /progress/sums' shape without the solver's headers.
static_assert(io::kTripletSumLimbs == kExactLimbs, "io/info.hpp and solver/exact_sum.hpp disagree");

namespace {

constexpr double kPi = 3.141592653589793238462643383279502884;

// Histogram chunks buffer nothing, so their size serves progress and
// balance only: about 1/256 of the pairs (at least a block row), at most
// 2^30. Like every plan, it depends on the problem alone.
index_t hist_chunk_pairs(index_t total) {
  return std::min<index_t>(index_t(1) << 30, std::max<index_t>(1, total / 256));
}

// A chunk holds at least one layer of tiles, and a point's exact sums take
// one addition per tile of the chunk that holds it: up to m²/2 for m = n/32
// blocks, which must stay below the limbs' 2^31 additions of carry room
// (m < 65536). 2,000,000 points keep that (and C(n,3) < 2^62).
constexpr index_t kMaxTripletPoints = 2000000;

// Triplet chunks buffer no values unless --store-triplets: each carries the
// exact sums of its reductions (2.2 kB per point) to the host, so there are
// few: 1/64 of the triplets (at least a layer), at most 2^43 (about 30 s of
// one GPU), so a stop signal is honoured within a chunk.
index_t triplet_chunk_elements(index_t total) {
  return std::min<index_t>(index_t(1) << 43, std::max<index_t>(1, total / 64));
}

const char* command_name(CommandKind k) {
  switch (k) {
    case CommandKind::triplet:
      return "triplet";
    case CommandKind::edm:
      return "edm";
    case CommandKind::hist:
      return "hist";
    case CommandKind::cross:
      return "cross";
    case CommandKind::knn:
      return "knn";
    case CommandKind::collide:
      return "collide";
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

// A path that may not exist yet, made absolute through its folder (so
// "d.h5" and "./d.h5" compare equal).
std::string absolute(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  char* dir = realpath(directory_of(path).c_str(), nullptr);
  if (!dir) return path;
  const std::string out = std::string(dir) + (std::string(dir) == "/" ? "" : "/") + base;
  std::free(dir);
  return out;
}

bool same_path(const std::string& a, const std::string& b) {
  return absolute(a) == absolute(b) || same_file(a, b);
}

// Every path the run writes (the output, its .partial, .lock and .creating
// companions, --stats), checked against each other and the inputs before
// anything is read or computed.
void check_paths(const CommandOptions& o) {
  const std::string& out = o.out.output;
  if (out.empty()) throw UsageError("--output FILE.h5 is required");
  std::vector<std::pair<std::string, std::string>> inputs;
  if (!o.in.input.empty()) inputs.push_back({io::split_input_spec(o.in.input).path, "the input"});
  if (!o.with.input.empty())
    inputs.push_back({io::split_input_spec(o.with.input).path, "the --with input"});
  const std::vector<std::pair<std::string, std::string>> written = {
      {out, "--output '" + out + "'"},
      {io::partial_path(out), "the unfinished output '" + io::partial_path(out) + "'"},
      {io::lock_path(out), "the output's lock file '" + io::lock_path(out) + "'"},
      {io::creating_path(out), "the output's temporary '" + io::creating_path(out) + "'"}};
  for (const auto& [path, what] : written)
    for (const auto& [in, which] : inputs)
      if (same_path(path, in))
        throw UsageError(what + " is " + which + " file; choose another --output");
  struct stat st {};
  if (stat(out.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw UsageError("--output '" + out + "' is a directory");
    if (!S_ISREG(st.st_mode))
      throw UsageError("--output '" + out + "' exists and is not a regular file");
    if (!o.out.overwrite && !o.out.resume)
      throw UsageError("output '" + out +
                       "' exists; pass --overwrite to replace it (it stays until the new result "
                       "is complete)");
  }
  check_writable_dir(out, "--output");
  if (!o.run.stats.empty()) {
    const std::string& stats = o.run.stats;
    for (const auto& [path, what] : written)
      if (same_path(stats, path))
        throw UsageError("--stats '" + stats + "' is " + what + "; choose another name");
    for (const auto& [in, which] : inputs)
      if (same_path(stats, in))
        throw UsageError("--stats '" + stats + "' is " + which + " file; choose another name");
    if (stat(stats.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
      throw UsageError("--stats '" + stats + "' is a directory");
    check_writable_dir(stats, "--stats");
  }
}

// The old output stays until the new one is complete, so it does not count
// as free; an unfinished .partial is either continued or replaced, so it does.
void check_disk_space(const std::string& output, double bytes) {
  struct statvfs fs {};
  if (statvfs(directory_of(output).c_str(), &fs) != 0) return;  // cannot tell: let HDF5 try
  double free = static_cast<double>(fs.f_bavail) * fs.f_frsize;
  struct stat st {};
  if (stat(io::partial_path(output).c_str(), &st) == 0) free += static_cast<double>(st.st_size);
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
  if (kind == CommandKind::triplet) {
    const unsigned __int128 t = static_cast<unsigned __int128>(rows) * (rows - 1) * (rows - 2) / 6;
    if (rows > (index_t(1) << 32) || t >= (static_cast<unsigned __int128>(1) << 62))
      throw InputError("n = " + std::to_string(rows) + " points (" + source +
                       ") give more triplets than tdsolve indexes (C(n,3) must stay below 2^62)");
    total = static_cast<index_t>(t);
  } else if (kind == CommandKind::cross || (kind == CommandKind::knn && value_bytes == 0)) {
    if (__builtin_mul_overflow(rows, cols, &total) || total >= (index_t(1) << 62))
      throw InputError(std::to_string(rows) + " × " + std::to_string(cols) +
                       " distances are more than tdsolve indexes (2^62)");
  } else if (!mapping::checked_pair_count(rows, &total) || total >= (index_t(1) << 62)) {
    throw InputError("n = " + std::to_string(rows) + " points (" + source +
                     ") give more pairs than tdsolve indexes (C(n,2) must stay below 2^62)");
  }
  if (kind != CommandKind::hist && kind != CommandKind::triplet && kind != CommandKind::knn &&
      kind != CommandKind::collide &&
      (__builtin_mul_overflow(total, value_bytes, &bytes) || bytes >= (index_t(1) << 63))) {
    throw InputError(source + " gives an output larger than a file can hold (" +
                     std::to_string(total) + " values of " + std::to_string(value_bytes) +
                     " bytes)");
  }
  return total;
}

// Reads or generates a point set; `check(n, d, source)` vets its size
// before a generator allocates anything. transpose_note: say when d > n
// that the array may be stored transposed (not for collide's spheres,
// whose 2 or 4 columns are the format).
template <typename Check>
io::PointSet load_points(const InputOptions& in, double host_bytes, std::vector<std::string>* notes,
                         Check&& check, bool transpose_note = true) {
  if (io::is_spheres_spec(in.generate)) {
    const io::SpheresSpec g = io::parse_spheres(in.generate);
    check(g.n, g.dim + 1, in.generate);
    check_points_fit(g.n, g.dim + 1, in.generate, host_bytes);
    return io::generate_spheres(g);  // finite, radii > 0, by construction
  }
  if (!in.generate.empty()) {
    const io::GeneratorSpec g = io::parse_generator(in.generate);
    check(g.n, g.d, in.generate);
    check_points_fit(g.n, g.d, in.generate, host_bytes);
    return io::generate_points(g);  // finite by construction
  }
  io::PointSet pts = io::read_points(in.input);
  io::arrange_points(pts, in.transpose, in.columns);
  check(pts.n, pts.d, pts.source);
  check_points_fit(pts.n, pts.d, pts.source, host_bytes);
  io::check_finite(pts);
  if (pts.d > pts.n && transpose_note)
    notes->push_back("'" + pts.source + "' has more features than points (n = " +
                     std::to_string(pts.n) + " rows of d = " + std::to_string(pts.d) +
                     " columns); if it stores one point per column (as MATLAB and Julia write an "
                     "n × d array), add --transpose");
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
  std::string a, b;            // what the `input` and `with` attributes record
  std::string a_hash, b_hash;  // FNV-1a 64 of the points as read (hex)
};

// FNV-1a (64-bit) of the points' float64 values, little-endian, row-major:
// the input's identity for --resume, whatever file or generator it came from.
// (Python: functools.reduce over numpy.ascontiguousarray(X, '<f8').tobytes().)
std::string content_hash(const io::PointSet& pts) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  const auto* bytes = reinterpret_cast<const unsigned char*>(pts.values.data());
  const size_t size = pts.values.size() * sizeof(double);
  for (size_t i = 0; i < size; ++i) {
    h ^= bytes[i];
    h *= 0x100000001b3ull;
  }
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

// --store-triplets writes C(n,3) values: refused above --store-limit-gb,
// so a forgotten option never fills a file system.
template <typename T>
void triplet_store_fits(const CommandOptions& o, index_t n, const std::string& source) {
  if (!o.triplet.store_triplets) return;
  const double bytes = double(mapping::triplet_count(n)) * sizeof(T);
  const double limit = o.triplet.store_limit_gb * 1e9;
  if (limit > 0 && bytes > limit) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", o.triplet.store_limit_gb);
    throw UsageError("--store-triplets: n = " + std::to_string(n) + " (" + source + ") gives " +
                     std::to_string(mapping::triplet_count(n)) + " triplet energies, " +
                     human_bytes(bytes) + ", above --store-limit-gb " + buf +
                     "; raise the limit (0: none) or leave out --store-triplets");
  }
}

// Coincident points have r = 0: their three-body energy is infinite.
// Checked in the compute precision (float32 may merge close points).
template <typename T>
void check_distinct(const std::vector<T>& x, index_t n, const std::string& source) {
  std::vector<index_t> order(n);
  for (index_t i = 0; i < n; ++i)
    order[i] = i;
  const auto key = [&](index_t i) { return std::make_tuple(x[3 * i], x[3 * i + 1], x[3 * i + 2]); };
  std::sort(order.begin(), order.end(), [&](index_t a, index_t b) { return key(a) < key(b); });
  for (index_t k = 1; k < n; ++k)
    if (key(order[k - 1]) == key(order[k])) {
      const index_t a = std::min(order[k - 1], order[k]), b = std::max(order[k - 1], order[k]);
      throw InputError("points " + std::to_string(a) + " and " + std::to_string(b) + " of '" +
                       source + "' coincide" + (sizeof(T) == 4 ? " (in float32)" : "") +
                       ": r = 0, where the three-body energy is infinite");
    }
}

// A --weights or --variance vector: an inline list, or a file holding one
// row or one column (any --input format). InputError for a file's problems.
std::vector<double> read_vector(const std::string& spec, const std::string& what, index_t d) {
  std::vector<double> v;
  if (!parse_number_list(spec, &v)) {
    const io::PointSet s = io::read_points(spec, true);
    if (s.n != 1 && s.d != 1)
      throw InputError(what + " '" + spec + "' is " + std::to_string(s.n) + " × " +
                       std::to_string(s.d) + "; it needs one row or one column");
    v = s.values;
  }
  if (v.size() != d)
    throw InputError(what + " gives " + std::to_string(v.size()) + " value" +
                     (v.size() == 1 ? "" : "s") + " but the points have d = " + std::to_string(d) +
                     " features");
  return v;
}

// The metric's weights and (seuclidean) variances; V defaults to the
// variance of each feature over the points (ddof = 1; cross: both sets
// stacked, as scipy's cdist).
MetricVectors metric_vectors(const ComputeOptions& c, const io::PointSet& a,
                             const io::PointSet* b) {
  MetricVectors mv;
  const index_t d = a.d;
  if (!c.weights.empty()) {
    mv.weights = read_vector(c.weights, "--weights", d);
    check_weights(mv.weights, "--weights", false);
  }
  if (c.metric != Metric::seuclidean) return mv;
  if (!c.variance.empty()) {
    mv.variance = read_vector(c.variance, "--variance", d);
    check_variance(mv.variance, "--variance", false);
    return mv;
  }
  const index_t n = a.n + (b ? b->n : 0);
  if (n < 2)
    throw InputError(
        "seuclidean needs at least 2 points to estimate the variances; give "
        "--variance");
  std::vector<double> mean(d, 0.0);
  mv.variance.assign(d, 0.0);
  for (const io::PointSet* s : {&a, b})
    if (s)
      for (index_t i = 0; i < s->n; ++i)
        for (index_t k = 0; k < d; ++k)
          mean[k] += s->values[i * d + k];
  for (index_t k = 0; k < d; ++k)
    mean[k] /= static_cast<double>(n);
  for (const io::PointSet* s : {&a, b})
    if (s)
      for (index_t i = 0; i < s->n; ++i)
        for (index_t k = 0; k < d; ++k) {
          const double e = s->values[i * d + k] - mean[k];
          mv.variance[k] += e * e;
        }
  for (index_t k = 0; k < d; ++k) {
    mv.variance[k] /= static_cast<double>(n - 1);
    if (!(mv.variance[k] > 0))
      throw InputError("feature " + std::to_string(k) + " of '" + a.source +
                       "' is constant (variance 0): seuclidean divides by its variance; give "
                       "--variance");
  }
  return mv;
}

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// collide: rank 0 splits the spheres (n × (DIM + 1): centres, then the
// radius) into the centres, which stay the points, and the radii; every
// radius must be >= 0 (check_finite has refused NaN and inf).
std::vector<double> split_radii(io::PointSet* a) {
  const index_t n = a->n, w = a->d, dim = w - 1;
  std::vector<double> r(n);
  for (index_t i = 0; i < n; ++i) {
    r[i] = a->values[i * w + dim];
    if (!(r[i] >= 0))
      throw InputError("input '" + a->source + "' has the negative radius " + number_text(r[i]) +
                       " at row " + std::to_string(i) + " (column " + std::to_string(dim) +
                       ", the last); radii must be >= 0");
    for (index_t k = 0; k < dim; ++k)
      a->values[i * dim + k] = a->values[i * w + k];
  }
  a->values.resize(n * dim);
  a->d = dim;
  return r;
}

// Rank 0 reads or generates the points and checks everything that can be
// checked before a file exists; all ranks then receive the same problem.
// collide: *radii receives the spheres' radii (the points are the centres).
template <typename T>
Problem<T> load_problem(const CommandOptions& o, MPI_Comm comm, Sources* src,
                        std::vector<double>* radii = nullptr) {
  Problem<T> p;
  const bool collide = o.kind == CommandKind::collide;
  const bool triplet = o.kind == CommandKind::triplet;
  const bool knn = o.kind == CommandKind::knn && o.knn.k > 0;  // not --radius
  p.domain = o.kind == CommandKind::cross || knn ? DomainKind::rect
             : triplet                           ? DomainKind::triplets
                                                 : DomainKind::pairs;
  p.metric = o.compute.metric;
  p.mp = make_metric_params(p.metric, o.compute.p, o.compute.base, 0);  // bits: below
  p.map = o.compute.map;
  p.rho = o.compute.block;
  p.epilogue = o.kind == CommandKind::hist            ? EpilogueKind::histogram
               : triplet && !o.triplet.store_triplets ? EpilogueKind::reduce
               : knn                                  ? EpilogueKind::topk
                                                      : EpilogueKind::store;
  p.k = knn ? o.knn.k : 0;
  if (triplet) {
    p.atm.kernel = o.triplet.kernel;
    p.atm.nu = o.triplet.nu;
    p.atm.cutoff = o.triplet.cutoff;
    p.atm.cutoff_triple = o.triplet.cutoff_triple;
  }
  const bool bench = o.out.output.empty();
  std::vector<std::string> notes;  // printed once the problem has passed every check
  on_root(comm, [&] {
    const double host = static_cast<double>(cpu::available_host_bytes(1));
    const auto pair_sizes = [&](index_t n, index_t d, const std::string& source) {
      if (triplet) {
        if (d != 3)
          throw InputError("input '" + source + "' has d = " + std::to_string(d) +
                           " features; triplet needs points in 3-D (d = 3)");
        if (n < 3)
          throw InputError("input '" + source + "' has " + std::to_string(n) + " point" +
                           (n == 1 ? "" : "s") + "; triplets need at least 3");
        if (n > kMaxTripletPoints)
          throw InputError("input '" + source + "' has " + std::to_string(n) +
                           " points; tdsolve triplet takes at most " +
                           std::to_string(kMaxTripletPoints) +
                           " (beyond, one chunk's exact sums could overflow their carry room)");
        checked_total(o.kind, n, n, sizeof(T), source);
        triplet_store_fits<T>(o, n, source);
      } else if (knn) {
        if (o.knn.k >= n)
          throw InputError("--k " + std::to_string(o.knn.k) + " needs more than K points, but '" +
                           source + "' has " + std::to_string(n) +
                           " (each point's neighbours are " + "the other n - 1)");
        if (n >= (index_t(1) << 31))
          throw InputError("'" + source + "' has " + std::to_string(n) +
                           " points; tdsolve knn takes fewer than 2^31");
        checked_total(o.kind, n, n, 0, source);
      } else if (collide) {
        if (d != 2 && d != 4)
          throw InputError("input '" + source + "' has " + std::to_string(d) +
                           " columns; collide needs spheres as n × 2 (x, r) or n × 4 (x, y, z, r)");
        io::check_pairs(n, source);
        checked_total(o.kind, n, n, 0, source);
      } else if (p.domain == DomainKind::pairs) {
        io::check_pairs(n, source);
        checked_total(o.kind, n, n, sizeof(T), source);
      }
    };
    io::PointSet a = load_points(o.in, host, &notes, pair_sizes, !collide);
    src->a = a.source;
    if (!bench) src->a_hash = content_hash(a);  // collide: the radii included
    if (collide) *radii = split_radii(&a);
    p.d = a.d;
    p.rows = a.n;
    io::PointSet b;
    // knn: the points against themselves (no second set, no transform of one).
    const bool rect = p.domain == DomainKind::rect && !knn;
    if (rect) {
      b = load_points(o.with, host, &notes, [](index_t, index_t, const std::string&) {});
      src->b = b.source;
      if (!bench) src->b_hash = content_hash(b);
      if (b.d != a.d)
        throw InputError("--input has d = " + std::to_string(a.d) +
                         " features but --with has d = " + std::to_string(b.d) +
                         "; both sets need the same d");
      p.cols = b.n;
    } else {
      p.cols = a.n;
    }
    // The metric's vectors, then its host-side transforms of the points.
    if (!triplet) {
      if (o.out.store_points) p.stored_points = convert_points<T>(a);  // as given
      const MetricVectors mv = metric_vectors(o.compute, a, rect ? &b : nullptr);
      p.weights = mv.weights;
      p.variance = mv.variance;
      prepare_points(&p, &a, rect ? &b : nullptr, mv);
      if (is_boolean(p.metric)) {
        p.a = pack_points<T>(a);
        if (rect) p.b = pack_points<T>(b);
      } else if (rect) {
        p.b = convert_points<T>(b);
        if (sizeof(T) == 4) check_float32_range(a, &b, p.metric, p.mp.p);
      }
    } else {
      p.features = a.d;
    }
    const index_t total =
        checked_total(o.kind, p.rows, p.cols, knn || collide ? 0 : sizeof(T), a.source);
    if (o.kind == CommandKind::knn || collide) {
      // --radius, collide: the pairs found are not known in advance; a few
      // bytes a point at least.
      if (!bench)
        check_disk_space(o.out.output,
                         knn ? double(p.rows) * double(o.knn.k) * (sizeof(T) + 8) : 1 << 20);
    } else if (o.kind == CommandKind::hist) {
      if (o.hist.box_dims > 0 && static_cast<index_t>(o.hist.box_dims) != a.d)
        throw UsageError("--box gives " + std::to_string(o.hist.box_dims) + " lengths but '" +
                         a.source + "' has d = " + std::to_string(a.d) + " features");
    } else if (triplet) {
      if (!bench)
        check_disk_space(o.out.output, (p.stores_values() ? double(total) * sizeof(T) : 0.0) +
                                           double(triplet_sum_slots(p.rows)) * kExactLimbs * 8 +
                                           double(p.rows) * 32);
    } else if (!bench) {
      check_disk_space(o.out.output, double(total) * sizeof(T));
    }
    if (!is_boolean(p.metric)) p.a = convert_points<T>(a);
    if (knn) p.b = p.a;
    if (triplet) check_distinct(p.a, p.rows, a.source);
    if (sizeof(T) == 4 && !triplet && !rect && !is_boolean(p.metric))
      check_float32_range(a, nullptr, p.metric, p.mp.p);
  });
  bcast_u64(comm, &p.rows);
  bcast_u64(comm, &p.cols);
  bcast_u64(comm, &p.d);
  bcast_u64(comm, &p.features);
  bcast_vector(comm, &p.weights);
  bcast_vector(comm, &p.variance);
  bcast_vector(comm, &p.kernel_weights);
  p.mp = make_metric_params(p.metric, o.compute.p, o.compute.base, p.features);
  bcast_string(comm, &src->a);
  bcast_string(comm, &src->b);
  bcast_string(comm, &src->a_hash);
  bcast_string(comm, &src->b_hash);
  bcast_vector(comm, &p.a);
  bcast_vector(comm, &p.b);
  if (collide) bcast_vector(comm, radii);
  all_agree(comm, [&] { fault_point(Stage::read, 0); });
  complete_problem(&p);
  on_root(comm, [&] { check_norms(p, src->a, src->b); });
  if (!o.run.quiet)
    for (const std::string& note : notes)
      std::fprintf(stderr, "tdsolve: note: %s\n", note.c_str());
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
const char* kAtmFormula =
    "E = nu (1 + 3 cos g1 cos g2 cos g3) / (r12 r23 r31)^3 per triplet i<j<k, counted when "
    "r12, r23, r31 <= cutoff and r12 r23 r31 <= cutoff_triple^3 (LAMMPS pair_style atm)";
const char* kSumsText =
    "exact sums of the flagged chunks (resume state): row p < n the energy of point p times 3, "
    "rows n+3p+x the force component x on point p, row 4n the total energy; each row the "
    "integer sum_i limb[i] 2^(32 i - 1074), limbs 0..67 in [0, 2^32), the last signed";
const char* kOverlap =
    "spheres i < j overlap when the euclidean distance of their centres is < r_i + r_j, in "
    "float64: sqrt(fma(dz, dz, fma(dy, dy, dx * dx))) < r_i + r_j (1-D: sqrt(dx * dx)); "
    "touching spheres (distance == r_i + r_j) do not";
const char* kKnnOrder =
    "row i: the K nearest points j != i by distance, ties broken by the smaller j";
const char* kBinning =
    "numpy.histogram: edges = numpy.linspace(range_lo, range_hi, bins + 1); bins half-open "
    "[edges[b], edges[b+1]), the last closed; distances below range_lo in /underflow, above "
    "range_hi in /overflow";

std::string vector_hash(const std::vector<double>& v) {
  io::PointSet s;
  s.values = v;
  return content_hash(s);
}

// The metric's parameters as (key, text): minkowski's p, jensenshannon's
// base, the FNV-1a 64 hashes of the weights and variances used.
template <typename T>
std::vector<std::pair<std::string, std::string>> metric_parameters(const CommandOptions& o,
                                                                   const Problem<T>& p) {
  std::vector<std::pair<std::string, std::string>> kv;
  if (p.metric == Metric::minkowski) kv.push_back({"p", number_text(o.compute.p)});
  if (p.metric == Metric::jensenshannon)
    kv.push_back({"base", o.compute.base > 0 ? number_text(o.compute.base) : "e"});
  if (!p.weights.empty()) kv.push_back({"weights_fnv1a64", vector_hash(p.weights)});
  if (!p.variance.empty()) kv.push_back({"variance_fnv1a64", vector_hash(p.variance)});
  return kv;
}

// The result dataset's attributes for the metric's parameters, and the
// datasets /weights and /variance (float64[d]) they name.
template <typename T>
void add_metric_attrs(const CommandOptions& o, const Problem<T>& p, io::ResultLayout* L) {
  using io::Attr;
  std::vector<Attr>& a = L->result.attrs;
  if (p.metric == Metric::minkowski) a.push_back(Attr{"p", o.compute.p});
  if (p.metric == Metric::jensenshannon && o.compute.base > 0)
    a.push_back(Attr{"base", o.compute.base});
  if (!p.weights.empty()) {
    a.push_back(Attr{"weights", std::string("/weights")});
    L->extras.push_back(
        {"weights", io::ValueType::f64, {index_t(p.weights.size())}, {}, p.weights});
  }
  if (!p.variance.empty()) {
    a.push_back(Attr{"variance", std::string("/variance")});
    L->extras.push_back(
        {"variance", io::ValueType::f64, {index_t(p.variance.size())}, {}, p.variance});
  }
}

// What makes two runs the same job (--resume compares it key by key; the
// version separately): the command, the input's content, every parameter
// that changes a value or the chunk plan. Not the backend, map, rank count
// or chunk size: those give the same bytes (a resumed run keeps the file's
// plan).
template <typename T>
std::string job_identity(const CommandOptions& o, const Problem<T>& p, const Sources& src) {
  char num[64];
  std::string s = std::string("command=") + command_name(o.kind) + "\n";
  const auto add = [&](const std::string& k, const std::string& v) { s += k + "=" + v + "\n"; };
  add("input_fnv1a64", src.a_hash);
  if (o.kind == CommandKind::cross) add("with_fnv1a64", src.b_hash);
  add("rows", std::to_string(p.rows));
  add("cols", std::to_string(p.cols));
  add("features", std::to_string(p.features));
  add("metric", metric_name(p.metric));
  // The metric's parameters, only where they apply (older files' jobs stay
  // as they were).
  for (const auto& [k, v] : metric_parameters(o, p))
    add(k, v);
  add("precision", sizeof(T) == 8 ? "float64" : "float32");
  add("block", std::to_string(p.rho));
  if (o.kind == CommandKind::hist) {
    add("bins", std::to_string(o.hist.bins));
    std::snprintf(num, sizeof num, "%.17g:%.17g", o.hist.lo, o.hist.hi);
    add("range", num);
    add("box", o.hist.box_dims > 0 ? box_text(o.hist) : "none");
  }
  if (o.kind == CommandKind::edm) add("store_points", o.out.store_points ? "yes" : "no");
  if (o.kind == CommandKind::knn) {
    if (o.knn.k > 0) add("neighbors", std::to_string(o.knn.k));
    if (o.knn.k == 0) add("radius", number_text(o.knn.radius));
  }
  if (o.kind == CommandKind::triplet) {
    add("potential", "atm");
    add("nu", number_text(o.triplet.nu));
    add("cutoff", o.triplet.cutoff > 0 ? number_text(o.triplet.cutoff) : "none");
    add("cutoff_triple",
        o.triplet.cutoff_triple > 0 ? number_text(o.triplet.cutoff_triple) : "none");
    add("store_triplets", o.triplet.store_triplets ? "yes" : "no");
  }
  return s;
}

// "metric: cosine in the file, euclidean now; rows: ..." or "" when equal.
std::string job_differences(const std::string& file, const std::string& now) {
  const auto parse = [](const std::string& text) {
    std::vector<std::pair<std::string, std::string>> kv;
    size_t at = 0;
    while (at < text.size()) {
      const size_t end = std::min(text.find('\n', at), text.size());
      const std::string line = text.substr(at, end - at);
      const size_t eq = line.find('=');
      if (eq != std::string::npos) kv.push_back({line.substr(0, eq), line.substr(eq + 1)});
      at = end + 1;
    }
    return kv;
  };
  const auto f = parse(file), n = parse(now);
  const auto find = [](const std::vector<std::pair<std::string, std::string>>& kv,
                       const std::string& k) {
    for (const auto& [key, v] : kv)
      if (key == k) return v;
    return std::string("(not recorded)");
  };
  std::string diff;
  for (const auto& [k, v] : n) {
    const std::string theirs = find(f, k);
    if (theirs != v)
      diff += (diff.empty() ? "" : "; ") + k + ": " + theirs + " in the file, " + v + " now";
  }
  return diff;
}

// The axis names of a result's datasets, as HDF5 dimension scales (xarray and
// h5netcdf name the axes by them; docs/output.md lists them). Unknown
// datasets, and scalars, get none.
std::vector<std::string> axis_names(CommandKind kind, const io::DatasetSpec& d) {
  using V = std::vector<std::string>;
  const std::string& name = d.name;
  V v;
  if (name == "distances")  // edm: 1-D; cross: M x K; knn --k: n x K; knn --radius: 1-D, m
    v = d.dims.size() == 1           ? V{"pair"}
        : kind == CommandKind::cross ? V{"row", "column"}
                                     : V{"point", "neighbor"};
  else if (name == "indices")
    v = {"point", "neighbor"};
  else if (name == "pairs")
    v = {"pair", "pair_end"};
  else if (name == "counts" || name == "rdf")
    v = {"bin"};
  else if (name == "edges")
    v = {"edge"};
  else if (name == "triplet_energy")
    v = {"triplet"};
  else if (name == "energy_per_point")
    v = {"point"};
  else if (name == "forces")
    v = {"point", "axis"};
  else if (name == "progress/sums")
    v = {"progress/sum_row", "progress/limb"};
  return v.size() == d.dims.size() ? v : V{};
}

template <typename T>
io::ResultLayout make_layout(const CommandOptions& o, const Problem<T>& p,
                             const mapping::ChunkPlan& plan, const Sources& src,
                             const std::string& created) {
  using io::Attr;
  io::ResultLayout L;
  L.path = io::creating_path(o.out.output);
  L.chunk_offsets = plan.offsets();
  L.root_attrs = {Attr{"software", std::string("tdsolve")},
                  Attr{"version", std::string(TDSOLVE_VERSION)},
                  Attr{"command", o.run.command},
                  Attr{"created", created},
                  Attr{"input", src.a},
                  Attr{"job", job_identity(o, p, src)}};
  L.root_attrs.push_back(Attr{"options", o.run.effective});
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
                   Attr{"precision", precision}, Attr{"features", std::uint64_t(p.features)},
                   Attr{"block", std::uint64_t(p.rho)}},
                  {}};
      break;
    case CommandKind::cross:
      L.result = {"distances",
                  vt,
                  {p.rows, p.cols},
                  {Attr{"rows", std::uint64_t(p.rows)}, Attr{"cols", std::uint64_t(p.cols)},
                   Attr{"layout", std::string("matrix")}, Attr{"metric", metric},
                   Attr{"precision", precision}, Attr{"features", std::uint64_t(p.features)},
                   Attr{"block", std::uint64_t(p.rho)}},
                  {}};
      break;
    case CommandKind::knn:
      if (p.knn()) {
        // Offsets count the values of /distances (n × K), not the n × n
        // comparisons of the plan: every chunk is a band of whole rows.
        for (index_t& off : L.chunk_offsets)
          off = off / p.cols * p.k;
        const std::vector<Attr> common = {Attr{"n", std::uint64_t(p.rows)},
                                          Attr{"neighbors", std::uint64_t(p.k)},
                                          Attr{"layout", std::string("knn")}};
        std::vector<Attr> a = common;
        for (Attr x : {Attr{"metric", metric}, Attr{"precision", precision},
                       Attr{"features", std::uint64_t(p.d)}, Attr{"block", std::uint64_t(p.rho)},
                       Attr{"order", std::string(kKnnOrder)}})
          a.push_back(x);
        L.result = {"distances", vt, {p.rows, p.k}, a, {}};
        L.companion = {"indices", io::ValueType::i64, {p.rows, p.k}, common, {}};
      } else {
        L.result = {"", vt, {}, {}, {}};
        L.lists.push_back({"pairs",
                           io::ValueType::i64,
                           {0, 2},
                           {Attr{"n", std::uint64_t(p.rows)}, Attr{"radius", o.knn.radius},
                            Attr{"layout", std::string("pairs")}, Attr{"metric", metric},
                            Attr{"precision", precision}, Attr{"features", std::uint64_t(p.d)},
                            Attr{"block", std::uint64_t(p.rho)}},
                           {}});
        L.lists.push_back({"distances",
                           vt,
                           {0},
                           {Attr{"layout", std::string("pairs")}, Attr{"metric", metric},
                            Attr{"precision", precision}},
                           {}});
      }
      break;
    case CommandKind::collide:
      L.root_attrs.push_back(Attr{"n", std::uint64_t(p.rows)});
      L.root_attrs.push_back(Attr{"dim", std::uint64_t(p.d)});
      L.result = {"", vt, {}, {}, {}};
      L.lists.push_back(
          {"pairs",
           io::ValueType::i64,
           {0, 2},
           {Attr{"n", std::uint64_t(p.rows)}, Attr{"dim", std::uint64_t(p.d)},
            Attr{"layout", std::string("pairs")}, Attr{"criterion", std::string("overlap")},
            Attr{"definition", std::string(kOverlap)}, Attr{"metric", metric},
            Attr{"precision", precision}, Attr{"features", std::uint64_t(p.d)},
            Attr{"block", std::uint64_t(p.rho)}},
           {}});
      L.lists.push_back({"distances",
                         vt,
                         {0},
                         {Attr{"layout", std::string("pairs")}, Attr{"metric", metric},
                          Attr{"precision", precision},
                          Attr{"what", std::string("the distance of the two centres")}},
                         {}});
      L.extras.push_back(
          {"count",
           io::ValueType::i64,
           {},
           {Attr{"what", std::string("the number of overlapping pairs (rows of /pairs); written "
                                     "with them when the run ends")}},
           {}});
      break;
    case CommandKind::hist: {
      std::vector<Attr> a = {Attr{"n", std::uint64_t(p.rows)},
                             Attr{"k", std::uint64_t(2)},
                             Attr{"metric", metric},
                             Attr{"precision", precision},
                             Attr{"features", std::uint64_t(p.features)},
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
    case CommandKind::triplet: {
      const double inf = std::numeric_limits<double>::infinity();
      const std::vector<Attr> a = {
          Attr{"n", std::uint64_t(p.rows)},
          Attr{"k", std::uint64_t(3)},
          Attr{"potential", std::string("atm")},
          Attr{"nu", o.triplet.nu},
          Attr{"cutoff", o.triplet.cutoff > 0 ? o.triplet.cutoff : inf},
          Attr{"cutoff_triple", o.triplet.cutoff_triple > 0 ? o.triplet.cutoff_triple : inf},
          Attr{"triplets", std::uint64_t(plan.total())},
          Attr{"precision", precision},
          Attr{"block", std::uint64_t(p.rho)},
          Attr{"formula", std::string(kAtmFormula)}};
      if (p.stores_values()) {
        L.result = {"triplet_energy",
                    vt,
                    {plan.total()},
                    {Attr{"n", std::uint64_t(p.rows)}, Attr{"k", std::uint64_t(3)},
                     Attr{"layout", std::string("combinations")}, Attr{"precision", precision}},
                    {}};
      } else {
        L.result = {"", vt, {}, {}, {}};
      }
      L.extras.push_back({"energy", io::ValueType::f64, {}, a, {}});
      L.extras.push_back(
          {"energy_per_point",
           io::ValueType::f64,
           {p.rows},
           {Attr{"split", std::string("each triplet's energy / 3 to each of its points")}},
           {}});
      L.extras.push_back({"forces",
                          io::ValueType::f64,
                          {p.rows, 3},
                          {Attr{"definition", std::string("-dE/dx, the analytic gradient")}},
                          {}});
      L.extras.push_back({"progress/sums",
                          io::ValueType::i64,
                          {triplet_sum_slots(p.rows), index_t(kExactLimbs)},
                          {Attr{"what", std::string(kSumsText)}},
                          {}});
      break;
    }
  }
  if (o.kind != CommandKind::triplet) add_metric_attrs(o, p, &L);
  if (o.out.store_points) {
    L.store_points = true;
    L.points = p.rows;
    L.features = p.features;
    L.points_type = vt;
  }
  L.dimensions[L.result.name] = axis_names(o.kind, L.result);
  if (!L.companion.name.empty()) L.dimensions[L.companion.name] = axis_names(o.kind, L.companion);
  for (const io::DatasetSpec& x : L.extras)
    L.dimensions[x.name] = axis_names(o.kind, x);
  for (const io::DatasetSpec& x : L.lists)
    L.dimensions[x.name] = axis_names(o.kind, x);
  return L;
}

// Values in packed order straight into the file; a chunk's flag only after
// its data is synced to the storage. knn writes rows of K values (and their
// companion, the indices) where the domain has rows of n comparisons: a
// chunk's offset and count scale by K / n (per = n, take = K).
template <typename T>
class ArraySink final : public Sink<T> {
 public:
  explicit ArraySink(io::ResultWriter& w, index_t per = 1, index_t take = 1, bool companion = false)
      : w_(w), per_(per), take_(take), companion_(companion) {}
  void write(bool has, index_t, index_t offset, index_t count, const ChunkResult<T>& r) override {
    const index_t at = has ? offset / per_ * take_ : 0, values = has ? count / per_ * take_ : 0;
    w_.write(at, values, r.values);
    if (companion_) w_.write_companion(at, values, r.indices);
  }
  void mark(bool has, index_t chunk) override {
    w_.flush();
    w_.mark_done(has, chunk);
  }
  void close(const std::vector<unsigned char>&) override { w_.close(); }

 private:
  io::ResultWriter& w_;
  index_t per_, take_;
  bool companion_;
};

// The pairs (i, j) of each chunk's packed values that pass a test (knn
// --radius: within the radius; collide: spheres that overlap), kept in this
// rank's memory (its chunks are contiguous and in order, and the packed
// order is (i, j) order, so its pairs are sorted); at the end the ranks
// agree on where each one's pairs go, write /pairs and /distances (and
// /count, where the layout has it) at once and set every flag. A run
// stopped before that keeps nothing (every flag stays 0). The list has no
// bound known in advance: it grows as the pairs come.
template <typename T>
class PairListSink : public Sink<T> {
 public:
  void write(bool has, index_t, index_t offset, index_t count, const ChunkResult<T>& r) override {
    if (has) collect_chunk(offset, count, r.values);
  }
  void mark(bool, index_t) override {}
  void close(const std::vector<unsigned char>& done) override {
    if (std::all_of(done.begin(), done.end(), [](unsigned char d) { return d; })) {
      const std::uint64_t mine = dist_.size();
      std::uint64_t before = 0, total = 0;
      check_mpi(MPI_Exscan(&mine, &before, 1, MPI_UINT64_T, MPI_SUM, comm_), "MPI_Exscan");
      if (comm_rank(comm_) == 0) before = 0;
      check_mpi(MPI_Allreduce(&mine, &total, 1, MPI_UINT64_T, MPI_SUM, comm_), "MPI_Allreduce");
      // Every rank writes at once, so a full disk fails them all: the
      // first that failed reports it (one line) and ends the job.
      std::string why;
      try {
        w_.write_list("pairs", total, before, mine, pairs_.data());
        w_.write_list("distances", total, before, mine, dist_.data());
        const std::int64_t m = static_cast<std::int64_t>(total);
        if (count_dataset_) w_.write_extra("count", comm_rank(comm_) == 0 ? &m : nullptr);
      } catch (const std::exception& e) {
        why = e.what();
      }
      const int me = why.empty() ? comm_size(comm_) : comm_rank(comm_);
      int first = 0;
      check_mpi(MPI_Allreduce(&me, &first, 1, MPI_INT, MPI_MIN, comm_), "MPI_Allreduce");
      if (first < comm_size(comm_)) {
        if (me == first) abort_run(comm_, why);
        MPI_Barrier(comm_);  // never returns: rank `first` aborts the job
      }
      w_.flush();
      w_.set_done(comm_rank(comm_) == 0 ? done.data() : nullptr);
      w_.flush();
      count_ = total;
    }
    w_.close();
  }
  std::uint64_t count() const { return count_; }

 protected:
  PairListSink(io::ResultWriter& w, MPI_Comm comm, index_t n, bool count_dataset)
      : w_(w), comm_(comm), n_(n), count_dataset_(count_dataset) {}
  // Calls this->collect with the command's test.
  virtual void collect_chunk(index_t offset, index_t count, const T* values) = 0;
  // Keeps (i, j, value) of the chunk's values for which keep(i, j, value).
  template <typename Keep>
  void collect(index_t offset, index_t count, const T* values, Keep keep) {
    const mapping::Pair first = mapping::pair_unrank(n_, offset);
    index_t i = first.i, j = first.j;
    for (index_t e = 0; e < count; ++e) {
      if (keep(i, j, values[e])) {
        pairs_.push_back(static_cast<std::int64_t>(i));
        pairs_.push_back(static_cast<std::int64_t>(j));
        dist_.push_back(values[e]);
      }
      if (++j == n_) {
        ++i;
        j = i + 1;
      }
    }
  }

 private:
  io::ResultWriter& w_;
  MPI_Comm comm_;
  index_t n_;
  bool count_dataset_;
  std::vector<std::int64_t> pairs_;
  std::vector<T> dist_;
  std::uint64_t count_ = 0;
};

// knn --radius: the pairs within the radius (d <= R).
template <typename T>
class RadiusSink final : public PairListSink<T> {
 public:
  RadiusSink(io::ResultWriter& w, MPI_Comm comm, index_t n, double radius)
      : PairListSink<T>(w, comm, n, false), radius_(static_cast<T>(radius)) {
    // The largest T <= radius: d <= R in double is d <= that in T.
    if (static_cast<double>(radius_) > radius)
      radius_ = std::nextafter(radius_, -std::numeric_limits<T>::infinity());
  }

 private:
  void collect_chunk(index_t offset, index_t count, const T* values) override {
    const T r = radius_;
    this->collect(offset, count, values, [r](index_t, index_t, T d) { return d <= r; });
  }
  T radius_;
};

// collide: the spheres that overlap, d < r_i + r_j in float64 (d the
// euclidean distance of the centres; touching spheres, d == r_i + r_j, do
// not count).
template <typename T>
class OverlapSink final : public PairListSink<T> {
 public:
  OverlapSink(io::ResultWriter& w, MPI_Comm comm, index_t n, const std::vector<double>& radii)
      : PairListSink<T>(w, comm, n, true), r_(radii) {}

 private:
  void collect_chunk(index_t offset, index_t count, const T* values) override {
    const double* r = r_.data();
    this->collect(offset, count, values,
                  [r](index_t i, index_t j, T d) { return static_cast<double>(d) < r[i] + r[j]; });
  }
  const std::vector<double>& r_;
};

// Partial counts summed per rank (integers: the same sum in any order),
// reduced to rank 0 at the end, at a clean stop and at each checkpoint, and
// written with the flags of the chunks they cover. Rank 0 starts from the counts a stopped run left
// (`initial`, in slot order). The flags are cleared before the counts are
// rewritten and set after, so a kill at any point leaves counts that match
// the flags, or no flag at all (then a resume starts from zero).
template <typename T>
class HistogramSink final : public Sink<T> {
 public:
  HistogramSink(io::ResultWriter& w, MPI_Comm comm, const Problem<T>& p, const HistOptions& h,
                const std::vector<std::uint64_t>& initial)
      : w_(w), comm_(comm), p_(p), h_(h), sum_(p.hist.slots(), 0) {
    if (comm_rank(comm) == 0 && initial.size() == sum_.size()) sum_ = initial;
  }
  void write(bool has, index_t, index_t, index_t, const ChunkResult<T>& r) override {
    if (!has) return;
    for (index_t s = 0; s < sum_.size(); ++s)
      sum_[s] += r.counts[s];
  }
  void mark(bool, index_t) override {}
  void checkpoint(const std::vector<unsigned char>& done) override { write_partial(done); }
  void close(const std::vector<unsigned char>& done) override {
    write_partial(done);
    w_.close();
  }

 private:
  // The counts of the chunks `done` so far (all of them at the end).
  void write_partial(const std::vector<unsigned char>& done) {
    std::vector<std::uint64_t> total(sum_.size(), 0);
    check_mpi(MPI_Reduce(sum_.data(), total.data(), static_cast<int>(sum_.size()), MPI_UINT64_T,
                         MPI_SUM, 0, comm_),
              "MPI_Reduce (histogram)");
    const bool root = comm_rank(comm_) == 0;
    const bool complete = std::all_of(done.begin(), done.end(), [](unsigned char d) { return d; });
    const index_t bins = p_.hist.bins;
    std::vector<std::int64_t> counts(bins);
    std::int64_t under = 0, over = 0;
    std::vector<double> rdf;
    if (root) {
      under = static_cast<std::int64_t>(total[0]);
      over = static_cast<std::int64_t>(total[bins + 1]);
      for (index_t b = 0; b < bins; ++b)
        counts[b] = static_cast<std::int64_t>(total[b + 1]);
      if (h_.box_dims > 0 && complete) {
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
    const std::vector<unsigned char> none(done.size(), 0);
    w_.set_done(root ? none.data() : nullptr);
    w_.flush();
    w_.write_extra("counts", root ? counts.data() : nullptr);
    w_.write_extra("underflow", root ? &under : nullptr);
    w_.write_extra("overflow", root ? &over : nullptr);
    if (h_.box_dims > 0 && complete) w_.write_extra("rdf", root ? rdf.data() : nullptr);
    w_.flush();
    w_.set_done(root ? done.data() : nullptr);
    w_.flush();
  }

  io::ResultWriter& w_;
  MPI_Comm comm_;
  const Problem<T>& p_;
  const HistOptions& h_;
  std::vector<std::uint64_t> sum_;
};

// Triplet energies (with --store-triplets) straight into the file; the
// chunks' exact sums added up per rank (integers: the same in any order),
// reduced to rank 0 at each checkpoint, at a clean stop and at the end, and
// written as /progress/sums with the flags of the chunks they cover (flags
// cleared first, set after, as for histograms: so a chunk's flag is set only
// at a checkpoint, once its triplet energies are synced and its sums
// written). When every chunk is done, rank 0 reads the sums out: /energy,
// /energy_per_point (each point's sum / 3) and /forces.
template <typename T>
class TripletSink final : public Sink<T> {
 public:
  TripletSink(io::ResultWriter& w, MPI_Comm comm, const Problem<T>& p,
              const std::vector<std::int64_t>& initial)
      : w_(w),
        comm_(comm),
        n_(p.rows),
        store_(p.stores_values()),
        slots_(triplet_sum_slots(p.rows)),
        sum_(slots_ * kExactLimbs, 0) {
    if (comm_rank(comm) == 0 && initial.size() == sum_.size()) sum_ = initial;
  }
  bool wants_results() const override { return true; }
  void write(bool has, index_t, index_t offset, index_t count, const ChunkResult<T>& r) override {
    if (store_) w_.write(has ? offset : 0, has ? count : 0, r.values);
    if (!has) return;
    // A chunk's limbs are normalised (below 2^32 each, the top one signed)
    // before they are added, so the running sums grow by less than 2^32 a
    // limb per chunk and need normalising only every 2^30 chunks. Slots are
    // independent integer sums: threads do not change a bit.
    const std::int64_t* in = r.sums;
    std::int64_t* acc = sum_.data();
#pragma omp parallel for schedule(static)
    for (index_t slot = 0; slot < slots_; ++slot) {
      std::int64_t limbs[kExactLimbs];
      bool any = false;
      for (int l = 0; l < kExactLimbs; ++l) {
        limbs[l] = in[slot * kExactLimbs + l];
        any = any || limbs[l] != 0;
      }
      if (!any) continue;
      exact_normalise(limbs);
      for (int l = 0; l < kExactLimbs; ++l)
        acc[slot * kExactLimbs + l] += limbs[l];
    }
    if (++added_ >= (index_t(1) << 30)) {
      for (index_t slot = 0; slot < slots_; ++slot)
        exact_normalise(&sum_[slot * kExactLimbs]);
      added_ = 0;
    }
  }
  void mark(bool, index_t) override {
    if (store_) w_.flush();
  }
  void checkpoint(const std::vector<unsigned char>& done) override {
    write_partial(done);
  }
  void close(const std::vector<unsigned char>& done) override {
    write_partial(done);
    w_.close();
  }

 private:
  void write_partial(const std::vector<unsigned char>& done) {
    for (index_t slot = 0; slot < slots_; ++slot)
      exact_normalise(&sum_[slot * kExactLimbs]);
    added_ = 0;
    std::vector<std::int64_t> total(sum_.size(), 0);
    check_mpi(MPI_Reduce(sum_.data(), total.data(), static_cast<int>(sum_.size()), MPI_INT64_T,
                         MPI_SUM, 0, comm_),
              "MPI_Reduce (triplet sums)");
    const bool root = comm_rank(comm_) == 0;
    const bool complete = std::all_of(done.begin(), done.end(), [](unsigned char d) { return d; });
    std::vector<double> energy(root ? n_ : 0), forces(root ? 3 * n_ : 0);
    double e_total = 0;
    if (root) {
      for (index_t slot = 0; slot < slots_; ++slot)
        exact_normalise(&total[slot * kExactLimbs]);
      if (complete) {
        for (index_t q = 0; q < n_; ++q) {
          energy[q] = exact_value(&total[q * kExactLimbs]) / 3;
          for (int c = 0; c < 3; ++c)
            forces[3 * q + c] = exact_value(&total[(n_ + 3 * q + c) * kExactLimbs]);
        }
        e_total = exact_value(&total[4 * n_ * kExactLimbs]);
      }
    }
    const std::vector<unsigned char> none(done.size(), 0);
    w_.set_done(root ? none.data() : nullptr);
    w_.flush();
    w_.write_extra("progress/sums", root ? total.data() : nullptr);
    if (complete) {
      w_.write_extra("energy", root ? &e_total : nullptr);
      w_.write_extra("energy_per_point", root ? energy.data() : nullptr);
      w_.write_extra("forces", root ? forces.data() : nullptr);
    }
    w_.flush();
    w_.set_done(root ? done.data() : nullptr);
    w_.flush();
  }

  io::ResultWriter& w_;
  MPI_Comm comm_;
  index_t n_;
  bool store_;
  index_t slots_;
  std::vector<std::int64_t> sum_;
  index_t added_ = 0;  // chunks added since sum_ was last normalised
};

// Seconds between the checkpoints of histograms and triplets (their partial
// counts or sums, so a killed run keeps them): 300, or TDSOLVE_CHECKPOINT_S
// (tests).
double checkpoint_seconds() {
  const char* v = std::getenv("TDSOLVE_CHECKPOINT_S");
  return v && std::atof(v) > 0 ? std::atof(v) : 300.0;
}

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

// --stats' "bytes": the size of the results the output holds. Packed values
// (edm, cross); a pair list's pairs (2 int64) and distances (collide, knn
// --radius; nothing when the run stopped: it keeps none); neighbours'
// distances and indices (knn --k); 0 for hist and triplet, whose results
// are a few counts or sums.
template <typename T>
double result_bytes(const Problem<T>& p, const mapping::ChunkPlan& plan,
                    const PairListSink<T>* list) {
  if (list) return double(list->count()) * double(2 * sizeof(std::int64_t) + sizeof(T));
  if (p.knn()) return double(p.rows) * double(p.k) * double(sizeof(std::int64_t) + sizeof(T));
  return p.stores_values() ? double(plan.total()) * sizeof(T) : 0.0;
}

template <typename T>
void write_stats(const CommandOptions& o, const Problem<T>& p, const mapping::ChunkPlan& plan,
                 double bytes, const std::string& kind, int ranks, double total,
                 const double worst[3], bool complete) {
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
               "\"compute_s\": %.6f, \"transfer_s\": %.6f, \"write_s\": %.6f, \"complete\": %s}\n",
               command_name(o.kind), (unsigned long long)p.rows, (unsigned long long)p.cols,
               (unsigned long long)p.d, (unsigned long long)plan.total(), bytes,
               metric_name(p.metric), sizeof(T) == 8 ? "float64" : "float32", kind.c_str(), ranks,
               (unsigned long long)plan.chunks(), (unsigned long long)p.rho, total, worst[0],
               worst[1], worst[2], complete ? "true" : "false");
  std::fclose(f);
}

// What rank 0 found at the output's names, once it holds the lock.
enum class Start : index_t { fresh, resume, complete };

struct Existing {
  Start start = Start::fresh;
  std::vector<index_t> offsets;
  std::vector<unsigned char> done;
  std::vector<std::uint64_t> slots;  // hist: counts a stopped run left, in slot order
  std::vector<std::int64_t> sums;    // triplet: the exact sums a stopped run left
};

// Rank 0, holding the lock: start fresh, continue the .partial, or report
// the output complete; refuses what would lose or mix up work.
template <typename T>
Existing inspect_output(const CommandOptions& o, const Problem<T>& p, const Sources& src) {
  const std::string& out = o.out.output;
  const std::string partial = io::partial_path(out);
  const std::string identity = job_identity(o, p, src);
  struct stat st {};
  Existing e;
  const auto same_job = [&](const io::ExistingResult& r, const std::string& path) {
    std::string diff = job_differences(r.job, identity);
    if (r.version != TDSOLVE_VERSION)
      diff = "version: " + r.version + " in the file, " TDSOLVE_VERSION " now" +
             (diff.empty() ? "" : "; " + diff);
    if (!diff.empty())
      throw InputError("--resume: '" + path + "' is a different job (" + diff +
                       "); rerun it as it was, or start over without --resume (with --overwrite)");
  };
  if (stat(partial.c_str(), &st) == 0) {
    if (!o.out.resume) {
      if (!o.out.overwrite)
        throw UsageError("an unfinished run of this output exists ('" + partial +
                         "'): pass --resume to continue it, or --overwrite to start over");
      if (::unlink(partial.c_str()) != 0)
        throw InputError("cannot remove '" + partial + "': " + std::strerror(errno));
      return e;
    }
    io::ExistingResult r;
    try {
      r = io::read_existing(partial);
    } catch (const std::exception& x) {
      throw InputError(std::string("cannot resume: ") + x.what() +
                       "; start over with --overwrite (without --resume)");
    }
    same_job(r, partial);
    e.start = Start::resume;
    e.offsets = r.offsets;
    e.done = r.done;
    if (p.epilogue == EpilogueKind::histogram && r.chunks_done() > 0) {
      const index_t bins = p.hist.bins;
      if (r.counts.size() != bins + 2)
        throw InputError("'" + partial + "': /counts has the wrong size");
      e.slots.assign(bins + 2, 0);
      e.slots[0] = static_cast<std::uint64_t>(r.counts[bins]);
      e.slots[bins + 1] = static_cast<std::uint64_t>(r.counts[bins + 1]);
      for (index_t b = 0; b < bins; ++b)
        e.slots[b + 1] = static_cast<std::uint64_t>(r.counts[b]);
    }
    if (p.triplets() && r.chunks_done() > 0) {
      if (r.sums_shape != std::vector<index_t>{triplet_sum_slots(p.rows), index_t(kExactLimbs)})
        throw InputError("'" + partial + "': /progress/sums is missing or has the wrong shape");
      e.sums = r.sums;
    }
    return e;
  }
  if (o.out.resume && stat(out.c_str(), &st) == 0) {
    io::ExistingResult r;
    try {
      r = io::read_existing(out);
    } catch (const std::exception& x) {
      throw InputError(std::string("--resume: ") + x.what());
    }
    same_job(r, out);
    if (!r.complete())
      throw InputError("--resume: '" + out + "' is incomplete but not a run tdsolve can continue " +
                       "(written in place by an older version?); start over with --overwrite");
    e.start = Start::complete;
  }
  return e;
}

void bcast_existing(MPI_Comm comm, Existing* e) {
  index_t start = static_cast<index_t>(e->start);
  bcast_u64(comm, &start);
  e->start = static_cast<Start>(start);
  bcast_vector(comm, &e->offsets);
  bcast_vector(comm, &e->done);
}

// Makes the new file so that every interruption leaves no .partial or a
// whole one: rank 0 writes the structure to FILE.h5.creating, all ranks
// open it (parallel HDF5 allocates the datasets then), and only then is it
// renamed to FILE.h5.partial. TDSOLVE_FAULT=0:STEP:create kills rank 0 at
// each step, 0 to 4.
std::unique_ptr<io::ResultWriter> create_output(MPI_Comm comm, const io::ResultLayout& layout,
                                                const std::string& partial) {
  const bool root = comm_rank(comm) == 0;
  if (root) fault_point(Stage::create, 0);
  on_root(comm, [&] { io::create_result_file(layout); });
  if (root) fault_point(Stage::create, 1);
  std::unique_ptr<io::ResultWriter> writer = open_writer(comm, layout);
  if (root) fault_point(Stage::create, 2);
  contain(comm, [&] { writer->flush(); });
  if (root) fault_point(Stage::create, 3);
  contain(comm, [&] {
    if (root) io::rename_durably(layout.path, partial);
  });
  MPI_Barrier(comm);
  if (root) fault_point(Stage::create, 4);
  return writer;
}

template <typename T>
int run_typed(const CommandOptions& o, MPI_Comm comm) {
  const double t_start = MPI_Wtime();
  const int rank = comm_rank(comm), ranks = comm_size(comm);
  const char* name = command_name(o.kind);
  const std::string& out = o.out.output;
  const std::string partial = io::partial_path(out);

  // Up front, before any input is read: the paths, then the output's lock.
  std::unique_ptr<io::OutputLock> lock;
  on_root(comm, [&] {
    check_paths(o);
    lock = std::make_unique<io::OutputLock>(out, o.run.command);
    io::remove_stale_creating(out);
  });
  Sources src;
  std::vector<double> radii;  // collide
  const Problem<T> p = load_problem<T>(o, comm, &src, &radii);
  Existing ex;
  on_root(comm, [&] { ex = inspect_output(o, p, src); });
  bcast_existing(comm, &ex);
  if (ex.start == Start::complete) {
    if (rank == 0 && !o.run.quiet)
      std::printf("tdsolve %s: '%s' is already complete (the same job); nothing to do\n", name,
                  out.c_str());
    return 0;
  }
  const bool resuming = ex.start == Start::resume;

  std::string kind;
  std::unique_ptr<Backend<T>> backend = make_backend<T>(o.compute, p, comm, o.run.quiet, &kind);
  mapping::ChunkPlan plan;
  if (resuming) {
    all_agree(comm, [&] {
      try {
        std::vector<index_t> offsets = ex.offsets;
        if (p.knn())  // the file counts values of /distances: rows × K
          for (index_t& off : offsets) {
            if (off % p.k != 0)
              throw std::invalid_argument("an offset is not a multiple of K = " +
                                          std::to_string(p.k));
            off = off / p.k * p.cols;
          }
        plan = plan_from_offsets(p, offsets);
      } catch (const std::invalid_argument& e) {
        throw InputError("cannot resume '" + partial +
                         "': its chunk plan does not fit: " + e.what());
      }
      reserve_for_plan(p, *backend, plan, comm);
    });
  } else {
    // knn: --chunk-mb bounds the chunk's rows of K distances and indices.
    const index_t knn_rows =
        p.knn() ? std::max<index_t>(1, static_cast<index_t>(o.compute.chunk_mb * (1 << 20)) /
                                           (p.k * (sizeof(T) + 8)))
                : 0;
    const index_t bound = o.kind == CommandKind::hist          ? hist_chunk_pairs(p.total())
                          : p.epilogue == EpilogueKind::reduce ? triplet_chunk_elements(p.total())
                          : p.knn()
                              ? knn_rows * p.cols
                              : static_cast<index_t>(o.compute.chunk_mb * (1 << 20)) / sizeof(T);
    plan = agree_plan(p, *backend, bound, comm);
  }
  index_t already = 0, chunks_before = 0;
  for (index_t c = 0; c < ex.done.size() && c < plan.chunks(); ++c)
    if (ex.done[c]) {
      already += plan.elements(c);
      ++chunks_before;
    }

  std::string created = utc_now();
  bcast_string(comm, &created);
  io::ResultLayout layout = make_layout(o, p, plan, src, created);

  if (rank == 0 && !o.run.quiet) {
    const double bytes = p.stores_values() ? double(plan.total()) * sizeof(T) : 0;
    if (o.kind == CommandKind::collide) {
      std::printf(
          "tdsolve %s: %llu spheres in %llu-D, %llu pairs tested (overlap: distance < r_i + "
          "r_j), float64, block %llu\n",
          name, (unsigned long long)p.rows, (unsigned long long)p.d,
          (unsigned long long)plan.total(), (unsigned long long)p.rho);
    } else if (o.kind == CommandKind::knn) {
      std::printf("tdsolve %s: %llu points, d = %llu, %s, %s %s, block %llu\n", name,
                  (unsigned long long)p.rows, (unsigned long long)p.d,
                  p.knn() ? ("the " + std::to_string(p.k) + " nearest of each").c_str()
                          : ("every pair within " + number_text(o.knn.radius)).c_str(),
                  metric_name(p.metric), sizeof(T) == 8 ? "float64" : "float32",
                  (unsigned long long)p.rho);
    } else if (p.triplets()) {
      std::printf(
          "tdsolve %s: %llu points in 3-D, %llu triplets%s, atm (nu %g, cutoff %s, "
          "cutoff-triple %s), %s, block %llu\n",
          name, (unsigned long long)p.rows, (unsigned long long)plan.total(),
          bytes > 0 ? (" (" + human_bytes(bytes) + " stored)").c_str() : "", p.atm.nu,
          p.atm.cutoff > 0 ? number_text(p.atm.cutoff).c_str() : "none",
          p.atm.cutoff_triple > 0 ? number_text(p.atm.cutoff_triple).c_str() : "none",
          sizeof(T) == 8 ? "float64" : "float32", (unsigned long long)p.rho);
    } else {
      std::printf("tdsolve %s: %llu × %llu points, d = %llu, %llu %s%s, %s %s, block %llu\n", name,
                  (unsigned long long)p.rows, (unsigned long long)p.cols, (unsigned long long)p.d,
                  (unsigned long long)plan.total(),
                  p.domain == DomainKind::rect ? "distances" : "pairs",
                  bytes > 0 ? (" (" + human_bytes(bytes) + ")").c_str() : "", metric_name(p.metric),
                  sizeof(T) == 8 ? "float64" : "float32", (unsigned long long)p.rho);
    }
    std::printf("tdsolve %s: %d rank%s, %s, %llu chunk%s -> %s\n", name, ranks,
                ranks > 1 ? "s" : "", backend->describe().c_str(),
                (unsigned long long)plan.chunks(), plan.chunks() > 1 ? "s" : "", out.c_str());
    if (resuming)
      std::printf("tdsolve %s: resuming '%s': %llu of %llu chunks already done\n", name,
                  partial.c_str(), (unsigned long long)chunks_before,
                  (unsigned long long)plan.chunks());
    std::fflush(stdout);
  }

  std::unique_ptr<io::ResultWriter> writer;
  if (resuming) {
    layout.path = partial;
    writer = open_writer(comm, layout);
  } else {
    writer = create_output(comm, layout, partial);
  }
  const std::string resume_cmd =
      o.run.command + (o.run.command.find(" --resume") == std::string::npos ? " --resume" : "");
  set_abort_hint(
      "the finished chunks are kept in '" + partial +
      "'; to continue, run the same job again with --resume (any rank count): " + resume_cmd);

  // From here on the file exists: a failure on one rank ends the job at once.
  std::unique_ptr<Sink<T>> sink;
  PairListSink<T>* list = nullptr;  // knn --radius, collide
  LoopResult res;
  contain(comm, [&] {
    if (o.kind == CommandKind::collide || (o.kind == CommandKind::knn && !p.knn())) {
      set_abort_hint(std::string("the finished chunks of a ") +
                     (o.kind == CommandKind::collide ? "collide" : "--radius") +
                     " run are not kept (it writes its pairs at its end); run the same job again "
                     "with --resume to start it over: " +
                     resume_cmd);
      std::unique_ptr<PairListSink<T>> l;
      if (o.kind == CommandKind::collide)
        l = std::make_unique<OverlapSink<T>>(*writer, comm, p.rows, radii);
      else
        l = std::make_unique<RadiusSink<T>>(*writer, comm, p.rows, o.knn.radius);
      list = l.get();
      sink = std::move(l);
    } else if (p.knn()) {
      sink = std::make_unique<ArraySink<T>>(*writer, p.cols, p.k, true);
    } else if (o.kind == CommandKind::hist) {
      sink = std::make_unique<HistogramSink<T>>(*writer, comm, p, o.hist, ex.slots);
    } else if (p.triplets()) {
      sink = std::make_unique<TripletSink<T>>(*writer, comm, p, ex.sums);
    } else {
      sink = std::make_unique<ArraySink<T>>(*writer);
    }
    if (o.out.store_points)
      writer->write_points(rank != 0                 ? nullptr
                           : p.stored_points.empty() ? p.a.data()
                                                     : p.stored_points.data());
    Progress progress(rank == 0 ? o.run.progress : ProgressMode::none, plan.total(),
                      p.stores_values() && !list ? sizeof(T) : 0, already,
                      p.domain == DomainKind::rect ? "distances"
                      : p.triplets()               ? "triplets"
                                                   : "pairs");
    StopPolicy stop;
    if (o.run.max_hours > 0) stop.deadline = t_start + o.run.max_hours * 3600.0;
    if (o.kind == CommandKind::hist || p.triplets()) stop.checkpoint_every = checkpoint_seconds();
    if (rank == 0) stop.beat = [&] { lock->heartbeat(); };
    res = run_chunks(plan, ex.done, *backend, *sink, comm, &progress, &stop);
    const double w0 = MPI_Wtime();
    sink->close(res.done);
    res.time.sink += MPI_Wtime() - w0;
  });
  // A stopped --radius or collide run kept no pairs: no chunk of it counts
  // as done.
  if (list && !std::all_of(res.done.begin(), res.done.end(), [](unsigned char d) { return d; }))
    std::fill(res.done.begin(), res.done.end(), 0);
  index_t chunks_done = 0, elements_done = 0;
  for (index_t c = 0; c < plan.chunks(); ++c)
    if (res.done[c]) {
      ++chunks_done;
      elements_done += plan.elements(c);
    }
  const bool complete = chunks_done == plan.chunks();
  // Only a complete result takes the output's name (replacing an old one).
  if (complete)
    contain(comm, [&] {
      if (rank == 0) io::rename_durably(partial, out);
    });
  set_abort_hint("");
  if (rank == 0) lock.reset();

  const LoopTiming& t = res.time;
  double mine[3] = {t.compute, t.transfer, t.sink}, worst[3] = {0, 0, 0};
  check_mpi(MPI_Reduce(mine, worst, 3, MPI_DOUBLE, MPI_MAX, 0, comm), "MPI_Reduce");
  const double total = MPI_Wtime() - t_start;
  if (rank != 0) return complete ? 0 : kStoppedExitCode;
  if (!complete) {
    // Always printed, also with --quiet: the log must say how to go on.
    std::fprintf(stderr,
                 "tdsolve %s: stopped cleanly (%s) after %s: %llu of %llu chunks done (%.1f%%), "
                 "kept in '%s'. Resume with the same job and --resume (any rank count): %s\n",
                 name, res.signal ? signal_name(res.signal) : "--max-hours reached",
                 human_seconds(total).c_str(), (unsigned long long)chunks_done,
                 (unsigned long long)plan.chunks(),
                 plan.total() ? 100.0 * double(elements_done) / double(plan.total()) : 100.0,
                 partial.c_str(), resume_cmd.c_str());
    std::fflush(stderr);
  } else if (!o.run.quiet) {
    const char* what = p.domain == DomainKind::rect ? "distances"
                       : p.triplets()               ? "triplets"
                                                    : "pairs";
    const index_t now = plan.total() - already;
    if (o.kind == CommandKind::collide) {
      std::printf("tdsolve %s: found %llu overlapping pairs among %llu pairs in %s (%.3g pairs/s",
                  name, (unsigned long long)list->count(), (unsigned long long)now,
                  human_seconds(total).c_str(), double(now) / total);
    } else if (o.kind == CommandKind::knn) {
      const std::string found =
          p.knn() ? std::to_string(p.rows) + " × " + std::to_string(p.k) + " neighbours"
                  : std::to_string(list ? list->count() : 0) + " pairs within " +
                        number_text(o.knn.radius);
      std::printf("tdsolve %s: found %s among %llu distances in %s (%.3g distances/s", name,
                  found.c_str(), (unsigned long long)now, human_seconds(total).c_str(),
                  double(now) / total);
    } else if (p.stores_values()) {
      const double bytes = double(now) * sizeof(T);
      std::printf("tdsolve %s: wrote %s (%llu %s) in %s (%s/s, %.3g %s/s", name,
                  human_bytes(bytes).c_str(), (unsigned long long)now, what,
                  human_seconds(total).c_str(), human_bytes(bytes / total).c_str(),
                  double(now) / total, what);
    } else {
      std::printf("tdsolve %s: %s %llu %s in %s (%.3g %s/s", name,
                  p.triplets() ? "summed" : "binned", (unsigned long long)now, what,
                  human_seconds(total).c_str(), double(now) / total, what);
    }
    std::printf("); per rank at most: compute %s", human_seconds(worst[0]).c_str());
    if (kind == "cuda") std::printf(", device-to-host %s", human_seconds(worst[1]).c_str());
    std::printf(", write %s\n", human_seconds(worst[2]).c_str());
  }
  if (!o.run.stats.empty())
    write_stats(o, p, plan, result_bytes(p, plan, list), kind, ranks, total, worst, complete);
  return complete ? 0 : kStoppedExitCode;
}

template <typename T>
void bench_typed(const BenchOptions& b, MPI_Comm comm) {
  const CommandOptions& o = b.cmd;
  Sources src;
  const Problem<T> p = load_problem<T>(o, comm, &src);
  std::string kind;
  std::unique_ptr<Backend<T>> backend = make_backend<T>(o.compute, p, comm, true, &kind);
  backend->keep_on_device(true);
  const index_t bound = o.kind == CommandKind::hist          ? hist_chunk_pairs(p.total())
                        : p.epilogue == EpilogueKind::reduce ? triplet_chunk_elements(p.total())
                        : o.compute.chunk_mb > 0
                            ? static_cast<index_t>(o.compute.chunk_mb * (1 << 20)) / sizeof(T)
                            : ~index_t(0);
  const mapping::ChunkPlan plan = agree_plan(p, *backend, bound, comm);
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
  const char* problem = !p.triplets()                          ? command_name(o.kind)
                        : p.atm.kernel == TripletKernel::dummy ? "dummy3"
                                                               : "atm";
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
    const CsvFile f = open_bench_csv(
        b.csv,
        "device,problem,backend,map,n,cols,d,metric,precision,block,launches,pairs,bytes,repeat,"
        "median_ms,min_ms,pairs_per_s,gbytes_per_s,memset_ms,memset_gbytes_per_s,store_ms,"
        "store_gbytes_per_s,fraction_of_memset\n");
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
  }
}

}  // namespace

void check_output_paths(const CommandOptions& options) {
  check_paths(options);
}
void check_output_space(const std::string& output, double bytes) {
  check_disk_space(output, bytes);
}

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

int run_command(const CommandOptions& o, MPI_Comm comm) {
  // collide computes in float64 always: its pair set is that of a float64
  // reference.
  const bool fp64 = o.compute.fp64 || o.kind == CommandKind::collide;
  return fp64 ? run_typed<double>(o, comm) : run_typed<float>(o, comm);
}

}  // namespace tdsolve
