// What the commands of the pair and triplet family share (pairs.hpp): the
// problem from the input, the job's identity, the file's layout, what an
// existing output holds, and the run: the output lifecycle around the
// driver loop.
#include "solver/commands/pairs.hpp"

#include <omp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <future>
#include <limits>
#include <memory>
#include <stdexcept>

#include "core/error.hpp"
#include "core/fnv.hpp"
#include "core/knobs.hpp"
#include "io/output_files.hpp"
#include "io/schema.hpp"
#include "io/spheres.hpp"
#include "io/trajectory.hpp"
#include "mapping/simplex.hpp"
#include "solver/commands/in_process.hpp"
#include "solver/cpu/cpu_backend.hpp"  // available_host_bytes
#include "solver/cuda/cuda_backend.hpp"
#include "solver/driver.hpp"
#include "solver/exact_sum.hpp"
#include "solver/exact_window.hpp"
#include "solver/fault.hpp"
#include "solver/progress.hpp"
#include "solver/setup_clock.hpp"
#include "solver/signals.hpp"
#include "version.hpp"

namespace tdsolve {

namespace {

// Sizes that would overflow an index, the file, or the machine.
void check_points_fit(index_t n, index_t d, const std::string& source, double host_bytes) {
  index_t points = 0;
  if (__builtin_mul_overflow(n, d, &points) || double(points) * 8 > host_bytes) {
    throw InputError("n × d = " + std::to_string(n) + " × " + std::to_string(d) + " points (" +
                     source + ") do not fit in this node's available memory");
  }
}

// --input SRC: a file's points, or one frame of a trajectory (--frame K;
// required where it holds several).
io::PointSet read_input(const InputOptions& in) {
  if (!io::is_trajectory(in.input)) {
    if (!in.frames.empty() || (in.frame_given && !in.frame_if_trajectory))
      throw InputError(std::string(in.frames.empty() ? "--frame" : "--frames") +
                       " applies to a trajectory (LAMMPS dump, extended XYZ, H5MD, or an HDF5 "
                       "dataset frames × n × d); '" +
                       in.input + "' holds one point set");
    return io::read_points(in.input);
  }
  std::shared_ptr<io::Trajectory> t = io::shared_trajectory(in.input);
  const index_t frames = t->frames();
  if (!in.frames.empty()) {
    const std::vector<index_t> take = io::select_frames(in.frames, frames, in.input);
    io::Frame f = t->read(take[0]);
    f.points.source = in.input + ", frames " + in.frames;
    f.points.frames = take;
    f.points.frame = take[0];
    return std::move(f.points);
  }
  if (frames > 1 && !in.frame_given)
    throw InputError("'" + in.input + "', " + t->format() + ", holds " + std::to_string(frames) +
                     " frames: choose one with --frame K");
  const index_t k = io::frame_index(in.frame, frames, in.input);
  io::Frame f = t->read(k);
  f.points.source = in.input + (frames > 1 ? ", frame " + std::to_string(k) : "");
  f.points.frame = k;
  return std::move(f.points);
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
  io::PointSet pts = read_input(in);
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

// FNV-1a (64-bit) of the points' float64 values, little-endian, row-major:
// the input's identity for --resume, whatever file or generator it came from.
// (Python: functools.reduce over numpy.ascontiguousarray(X, '<f8').tobytes().)
std::string content_hash(const io::PointSet& pts) {
  Fnv1a64 h;
  h.add(pts.values.data(), pts.values.size() * sizeof(double));
  return h.hex();
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

// The mean of each feature over a and b stacked.
std::vector<double> feature_means(const io::PointSet& a, const io::PointSet* b) {
  const index_t d = a.d, n = a.n + (b ? b->n : 0);
  std::vector<double> mean(d, 0.0);
  for (const io::PointSet* s : {&a, b})
    if (s)
      for (index_t i = 0; i < s->n; ++i)
        for (index_t k = 0; k < d; ++k)
          mean[k] += s->values[i * d + k];
  for (index_t k = 0; k < d; ++k)
    mean[k] /= static_cast<double>(n);
  return mean;
}

// The lower Cholesky factor of the symmetric s (d × d, row-major): s = L Lᵀ;
// false when s is not (numerically) positive definite: a pivot that is not
// above 1e-12 of its diagonal element.
bool cholesky(const std::vector<double>& s, index_t d, std::vector<double>* l) {
  l->assign(d * d, 0.0);
  std::vector<double>& L = *l;
  for (index_t j = 0; j < d; ++j) {
    double pivot = s[j * d + j];
    for (index_t k = 0; k < j; ++k)
      pivot -= L[j * d + k] * L[j * d + k];
    if (!(pivot > 1e-12 * s[j * d + j])) return false;
    const double ljj = std::sqrt(pivot);
    L[j * d + j] = ljj;
    for (index_t i = j + 1; i < d; ++i) {
      double t = s[i * d + j];
      for (index_t k = 0; k < j; ++k)
        t -= L[i * d + k] * L[j * d + k];
      L[i * d + j] = t / ljj;
    }
  }
  return true;
}

// mahalanobis: VI as given (--vi) or inv(cov) of the points (both sets
// stacked, ddof = 1, as SciPy), and M with |M δ|² = δᵀ VI δ: Lᵀ of VI's
// symmetric part = L Lᵀ, or L⁻¹ of cov = L Lᵀ.
void mahalanobis_vectors(const ComputeOptions& c, const io::PointSet& a, const io::PointSet* b,
                         MetricVectors* mv) {
  const index_t d = a.d;
  std::vector<double> l;
  if (!c.vi.empty()) {
    const io::PointSet s = io::read_points(c.vi, true);
    if (s.n != d || s.d != d)
      throw InputError("--vi '" + c.vi + "' is " + std::to_string(s.n) + " × " +
                       std::to_string(s.d) + "; mahalanobis needs d × d = " + std::to_string(d) +
                       " × " + std::to_string(d));
    mv->vi = s.values;
    std::vector<double> sym(d * d);
    for (index_t i = 0; i < d; ++i)
      for (index_t k = 0; k < d; ++k)
        sym[i * d + k] = (s.values[i * d + k] + s.values[k * d + i]) / 2;
    if (!cholesky(sym, d, &l))
      throw InputError("--vi '" + c.vi +
                       "' is not positive definite: mahalanobis takes the square root of "
                       "(u - v)ᵀ VI (u - v), which can be negative (SciPy gives nan there)");
    mv->transform.assign(d * d, 0.0);
    for (index_t r = 0; r < d; ++r)
      for (index_t k = r; k < d; ++k)
        mv->transform[r * d + k] = l[k * d + r];
    return;
  }
  const index_t n = a.n + (b ? b->n : 0);
  if (n <= d)
    throw InputError("mahalanobis without --vi estimates the covariance of the " +
                     std::to_string(n) + " points, singular in d = " + std::to_string(d) +
                     " (at least " + std::to_string(d + 1) + " points are needed); give --vi");
  const std::vector<double> mean = feature_means(a, b);
  std::vector<double> cov(d * d, 0.0), e(d);
  for (const io::PointSet* s : {&a, b})
    if (s)
      for (index_t i = 0; i < s->n; ++i) {
        for (index_t k = 0; k < d; ++k)
          e[k] = s->values[i * d + k] - mean[k];
        for (index_t r = 0; r < d; ++r)
          for (index_t k = 0; k <= r; ++k)
            cov[r * d + k] += e[r] * e[k];
      }
  for (index_t r = 0; r < d; ++r)
    for (index_t k = 0; k <= r; ++k)
      cov[k * d + r] = cov[r * d + k] /= static_cast<double>(n - 1);
  if (!cholesky(cov, d, &l))
    throw InputError("the covariance of the points of '" + a.source +
                     "' is singular (a feature is constant, or a combination of others): "
                     "mahalanobis needs its inverse; give --vi");
  // M = L⁻¹ (lower), by forward substitution, column by column.
  std::vector<double>& m = mv->transform;
  m.assign(d * d, 0.0);
  for (index_t col = 0; col < d; ++col)
    for (index_t i = col; i < d; ++i) {
      double t = i == col ? 1.0 : 0.0;
      for (index_t k = col; k < i; ++k)
        t -= l[i * d + k] * m[k * d + col];
      m[i * d + col] = t / l[i * d + i];
    }
  // VI = Mᵀ M, recorded in the file.
  mv->vi.assign(d * d, 0.0);
  for (index_t r = 0; r < d; ++r)
    for (index_t c2 = 0; c2 < d; ++c2) {
      double t = 0;
      for (index_t k = 0; k < d; ++k)
        t += m[k * d + r] * m[k * d + c2];
      mv->vi[r * d + c2] = t;
    }
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
  if (c.metric == Metric::mahalanobis) mahalanobis_vectors(c, a, b, &mv);
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
  const std::vector<double> mean = feature_means(a, b);
  mv.variance.assign(d, 0.0);
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
  if (!p.vi.empty()) kv.push_back({"vi_fnv1a64", vector_hash(p.vi)});
  return kv;
}

// A job identity's keys and values (job_identity's "key=value" lines).
std::vector<std::pair<std::string, std::string>> job_keys(const std::string& text) {
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
}

// The value of `key` in a job identity's keys, or `none`.
std::string job_value(const std::vector<std::pair<std::string, std::string>>& kv,
                      const std::string& key, const std::string& none) {
  for (const auto& [k, v] : kv)
    if (k == key) return v;
  return none;
}

// "metric: cosine in the file, euclidean now; rows: ..." or "" when equal.
std::string job_differences(const std::string& file, const std::string& now) {
  const auto f = job_keys(file), n = job_keys(now);
  std::string diff;
  for (const auto& [k, v] : n) {
    const std::string theirs = job_value(f, k, "(not recorded)");
    if (theirs != v)
      diff += (diff.empty() ? "" : "; ") + k + ": " + theirs + " in the file, " + v + " now";
  }
  return diff;
}

// Seconds between the checkpoints of histograms and triplets (their partial
// counts or sums, so a killed run keeps them): 300, or
// TDSOLVE_TEST_CHECKPOINT_S (tests).
double checkpoint_seconds() {
  return knobs::number("TDSOLVE_TEST_CHECKPOINT_S", 0, 1e9).value_or(300.0);
}

// Opens the file on every rank, its writes guarded (guard_output_file: a
// failed write ends the job, naming `output`). If only some ranks fail,
// those that hold it cannot close it (a collective close would wait for the
// others): abort.
std::unique_ptr<io::ResultWriter> open_writer(MPI_Comm comm, const io::ResultLayout& L,
                                              const std::string& output) {
  std::unique_ptr<io::ResultWriter> w;
  std::string why;
  try {
    w = std::make_unique<io::ResultWriter>(
        comm, L, [&](MPI_File file) { guard_output_file(comm, file, L.path, output); });
  } catch (const std::exception& e) {
    why = e.what();
  }
  // A rank that failed waits only so long for the others (they may be inside
  // the collective open it left): then it ends the job.
  const int ok[2] = {w ? 1 : 0, w ? -1 : 0};
  int agreed[2] = {0, 0};
  agree_min(comm, ok, agreed, 2, why);
  const bool all = agreed[0] == 1, any = agreed[1] == -1;
  if (all) return w;
  if (any) {
    if (!w) abort_run(comm, why);
    w.release();  // let go of it without a collective close; a failing rank aborts the job
    MPI_Barrier(comm);
  }
  agree(comm, w ? 0 : 1, why);  // every rank failed: one clean error
  return w;
}

// What makes two runs the same job (--resume compares it key by key; the
// version separately): the command, the input's content, every parameter
// that changes a value or the chunk plan. Not the backend, map, rank count
// or chunk size: those give the same bytes (a resumed run keeps the file's
// plan).
template <typename T>
std::string job_identity(const PairCommand<T>& cmd, const Problem<T>& p, const Sources& src) {
  const CommandOptions& o = cmd.options();
  std::string s = std::string("command=") + cmd.name() + "\n";
  const AddKey add = [&](const std::string& k, const std::string& v) { s += k + "=" + v + "\n"; };
  add("input_fnv1a64", src.a_hash);
  if (cmd.second_set()) add("with_fnv1a64", src.b_hash);
  const auto [rows, cols] = cmd.sizes(p);
  add("rows", std::to_string(rows));
  add("cols", std::to_string(cols));
  add("features", std::to_string(p.features));
  add("metric", metric_name(p.metric));
  // The metric's parameters, only where they apply (older files' jobs stay
  // as they were).
  for (const auto& [k, v] : metric_parameters(o, p))
    add(k, v);
  add("precision", precision_name<T>());
  add("block", std::to_string(p.rho));
  // A culled domain has its own plan (runs with no cutoff have no key).
  if (!p.cull_note.empty()) add("cull", p.culled ? "on" : "off");
  cmd.identity(p, add);
  return s;
}

// The axis names of a result's datasets, as HDF5 dimension scales (xarray and
// h5netcdf name the axes by them): the dims the schema gives the dataset in a
// file of this kind (python/tdsolve/schema.json; docs/output.md lists them),
// of its form of this rank whose coordinates (dims named after a dataset of
// the kind: hist's /r, /pair) the layout creates. Undeclared datasets, and
// scalars, get none.
std::vector<std::string> axis_names(const std::string& kind, const io::DatasetSpec& d,
                                    const io::ResultLayout& L) {
  const auto created = [&](const std::string& name) {
    if (name == L.result.name || name == L.companion.name) return true;
    for (const io::DatasetSpec& x : L.coordinates)
      if (x.name == name) return true;
    for (const io::DatasetSpec& x : L.extras)
      if (x.name == name) return true;
    for (const io::DatasetSpec& x : L.lists)
      if (x.name == name) return true;
    return false;
  };
  return io::schema_dims(kind, d.name, d.dims.size(), created);
}

template <typename T>
io::ResultLayout make_layout(const PairCommand<T>& cmd, const Problem<T>& p,
                             const mapping::ChunkPlan& plan, const Sources& src,
                             const std::string& created) {
  using io::Attr;
  const CommandOptions& o = cmd.options();
  io::ResultLayout L;
  L.path = io::creating_path(o.out.output);
  L.chunk_offsets = plan.offsets();
  const std::string kind = cmd.kind(p);  // what the file is (the schema's kind)
  L.root_attrs = {Attr{"software", std::string("tdsolve")},
                  Attr{"version", std::string(TDSOLVE_VERSION)},
                  Attr{"kind", kind},
                  Attr{"schema_version", io::schema_version()},
                  Attr{"command", o.run.command},
                  Attr{"created", created},
                  Attr{"input", src.a},
                  Attr{"job", job_identity(cmd, p, src)}};
  L.root_attrs.push_back(Attr{"options", o.run.effective});
  if (cmd.second_set()) L.root_attrs.push_back(Attr{"with", src.b});
  cmd.layout(L, p, plan);
  // A run over frames culls each frame: its file's chunks are the frames.
  if (!p.cull_note.empty() && cmd.frame_count() == 0) {
    L.progress_attrs.push_back(Attr{"culled", std::uint64_t(p.culled ? 1 : 0)});
    L.progress_attrs.push_back(Attr{"cull", p.cull_note});
  }
  if (o.out.store_points) {
    L.store_points = true;
    L.points = p.rows;
    L.features = p.features;
    L.points_type = value_type<T>();
  }
  for (const io::DatasetSpec* x : {&L.result, &L.companion})
    if (!x->name.empty()) L.dimensions[x->name] = axis_names(kind, *x, L);
  for (const io::DatasetSpec& x : L.extras)
    L.dimensions[x.name] = axis_names(kind, x, L);
  for (const io::DatasetSpec& x : L.lists)
    L.dimensions[x.name] = axis_names(kind, x, L);
  return L;
}

// The plan a file's /progress/offsets describe (knn --k counts values of
// /distances there, K a row; the plan counts comparisons, n a row, or a
// culled run's, those of its block rows' tiles).
// std::invalid_argument when they are not block-row boundaries of `p`.
template <typename T>
mapping::ChunkPlan plan_of_file(const Problem<T>& p, std::vector<index_t> offsets) {
  if (p.knn())
    for (index_t& off : offsets) {
      if (off % p.k != 0)
        throw std::invalid_argument("an offset is not a multiple of K = " + std::to_string(p.k));
      if (!p.culled) {
        off = off / p.k * p.cols;
        continue;
      }
      // culled: rows of the run's order, at block rows (knn.cpp's layout)
      const index_t rows = off / p.k;
      if (rows > p.rows || (rows % p.rho != 0 && rows != p.rows))
        throw std::invalid_argument("an offset is not at a block row");
      off = p.cull.before[(rows + p.rho - 1) / p.rho];
    }
  return plan_from_offsets(p, offsets);
}

// A run over frames (hist and adf --frames): its file's block row r is
// frame r, each C(n,2) pairs (adf: n centres), so that its chunks are the
// frames.
struct FrameDomain {
  index_t frames = 0, per_frame = 0;
  index_t block_rows() const { return frames; }
  index_t total() const { return frames * per_frame; }
  index_t largest_block_row() const { return per_frame; }
  index_t elements_before(index_t r) const { return r * per_frame; }
};
template <typename T>
FrameDomain frame_domain(index_t frames, const Problem<T>& p) {
  return {frames, p.triplets()  ? mapping::triplet_count(p.rows)
                  : p.centres() ? p.rows
                                : mapping::pair_count(p.rows)};
}

// The plan of a file's /progress/offsets for cmd's run (plan_of_file; a
// run over frames: a chunk a frame). std::invalid_argument when they do not
// fit it.
template <typename T>
mapping::ChunkPlan file_plan(const PairCommand<T>& cmd, const Problem<T>& p,
                             const std::vector<index_t>& offsets) {
  if (const index_t frames = cmd.frame_count())
    return mapping::ChunkPlan::from_offsets(frame_domain(frames, p), offsets);
  return plan_of_file(p, offsets);
}

// Rank 0, holding the lock: start fresh, continue the .partial, or report
// the output complete; refuses what would lose or mix up work.
template <typename T>
Existing inspect_output(const PairCommand<T>& cmd, const Problem<T>& p, const Sources& src) {
  const CommandOptions& o = cmd.options();
  const std::string& out = o.out.output;
  const std::string partial = io::partial_path(out);
  const std::string identity = job_identity(cmd, p, src);
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
  // The same job's file, before anything is written: every dataset of it
  // against what this job writes in its plan (type, shape, flags 0 or 1).
  const auto check_file = [&](const io::ExistingResult& r, const std::string& path) {
    mapping::ChunkPlan plan;
    try {
      plan = file_plan(cmd, p, r.offsets);
    } catch (const std::invalid_argument& x) {
      throw InputError("cannot resume '" + path + "': its chunk plan does not fit: " + x.what());
    }
    try {
      return io::check_resumable(path, make_layout(cmd, p, plan, src, ""));
    } catch (const InputError& x) {
      // An older layout of the same job is no damage: say which.
      const std::int64_t now = static_cast<std::int64_t>(io::schema_version());
      const std::string why = r.schema_version > 0 && r.schema_version < now
                                  ? ": it was written by an older tdsolve (schema_version " +
                                        std::to_string(r.schema_version) + "; this one writes " +
                                        std::to_string(now) + ")"
                                  : ": the file is damaged";
      throw InputError("cannot resume '" + path + "': " + x.what() + why +
                       "; start over with --overwrite (without --resume)");
    }
  };
  if (stat(partial.c_str(), &st) == 0) {
    if (!o.out.resume) {  // --overwrite (the lifecycle refused neither)
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
    const io::ResumableFile f = check_file(r, partial);
    e.start = Start::resume;
    e.offsets = r.offsets;
    e.done = f.done;
    // A list run (knn --radius, collide) writes its pairs, syncs them, then
    // sets every flag at once: a file with every flag set holds every pair
    // (the run ended between the flags and the rename), one without holds
    // none that a resume can use, and every chunk is computed again.
    if (cmd.list_run()) {
      if (f.list_rows >= 0)
        e.held_pairs = f.list_rows;
      else
        e.done.assign(e.done.size(), 0);
    }
    if (p.epilogue == EpilogueKind::histogram && r.chunks_done() > 0) {
      // The file's counts, underflows and overflows back in the slots' rows
      // (per histogram: underflow, bins, overflow).
      const index_t bins = p.hist.bins, rows = p.hist.histograms();
      if (r.counts.size() != p.hist.slots())
        throw InputError("'" + partial + "': /counts has the wrong size");
      e.slots.assign(p.hist.slots(), 0);
      for (index_t g = 0; g < rows; ++g) {
        std::uint64_t* row = &e.slots[g * (bins + 2)];
        row[0] = static_cast<std::uint64_t>(r.counts[rows * bins + g]);
        row[bins + 1] = static_cast<std::uint64_t>(r.counts[rows * (bins + 1) + g]);
        for (index_t b = 0; b < bins; ++b)
          row[b + 1] = static_cast<std::uint64_t>(r.counts[g * bins + b]);
      }
      e.frame_counts = r.frame_counts;
    }
    if (p.triplets()) {
      // The limb window the file keeps (an older tdsolve's: all 69, no
      // first_limb); a resumed run's window never narrows.
      const index_t slots = triplet_sum_slots(p.rows);
      const std::vector<index_t>& shape = r.sums_shape;
      const bool fits = shape.size() == 2 && shape[0] == slots && shape[1] <= kExactLimbs &&
                        r.sums_first >= 0 &&
                        r.sums_first + static_cast<std::int64_t>(shape[1]) <= kExactLimbs;
      if (!fits || (r.chunks_done() > 0 && shape[1] == 0))
        throw InputError("'" + partial + "': /progress/sums is missing or has the wrong shape");
      e.sums_width = shape[1];
      if (r.chunks_done() > 0) {
        const LimbWindow w{static_cast<int>(r.sums_first), static_cast<int>(shape[1])};
        e.sums.assign(slots * kExactLimbs, 0);
        if (!unpack_limbs(r.sums.data(), slots, w, e.sums.data()))
          throw InputError("'" + partial + "': /progress/sums holds a limb outside [0, 2^32)");
      }
      e.frame_energy = r.frame_energy;
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
    check_file(r, out);
    if (!r.complete())
      throw InputError("--resume: '" + out + "' is incomplete but not a run tdsolve can continue " +
                       "(written in place by an older version?); start over with --overwrite");
    e.start = Start::complete;
  }
  return e;
}

// One run of a command of the family, as the output lifecycle asks for it.
template <typename T>
class PairRun final : public OutputRun {
 public:
  PairRun(PairCommand<T>& cmd, MPI_Comm comm)
      : cmd_(cmd),
        o_(cmd.options()),
        comm_(comm),
        rank_(comm_rank(comm)),
        ranks_(comm_size(comm)),
        t_start_(MPI_Wtime()) {
    setup_start();
  }

  void load() override { p_ = load_problem<T>(cmd_, comm_, &src_); }

  Start inspect() override {
    ex_ = inspect_output(cmd_, p_, src_);
    return ex_.start;
  }

  void share(Start start) override {
    ex_.start = start;
    bcast_vector(comm_, &ex_.offsets);
    bcast_vector(comm_, &ex_.done);
    index_t held = static_cast<index_t>(ex_.held_pairs + 1);
    bcast_u64(comm_, &held);
    ex_.held_pairs = static_cast<std::int64_t>(held) - 1;
  }

  void prepare(bool resuming) override {
    const char* name = cmd_.name();
    setup_mark("inspect");
    backend_ = make_backend<T>(o_.compute, p_, comm_, o_.run.quiet, &kind_);
    setup_mark("backend");
    const std::string partial = io::partial_path(o_.out.output);
    if (const index_t frames = cmd_.frame_count()) {  // rank 0 checked a resumed file's
      const FrameDomain fd = frame_domain(frames, p_);
      all_agree(comm_, [&] {
        plan_ = resuming ? file_plan(cmd_, p_, ex_.offsets) : mapping::ChunkPlan(fd, fd.per_frame);
      });
    } else if (resuming) {
      all_agree(comm_, [&] {
        try {
          plan_ = plan_of_file(p_, ex_.offsets);  // rank 0 checked it (inspect_output)
        } catch (const std::invalid_argument& e) {
          throw InputError("cannot resume '" + partial +
                           "': its chunk plan does not fit: " + e.what());
        }
        reserve_for_plan(p_, *backend_, plan_, comm_);
      });
    } else {
      plan_ = agree_plan(p_, *backend_, cmd_.chunk_bound(p_), comm_);
    }
    setup_mark("plan");
    index_t chunks_before = 0;
    for (index_t c = 0; c < ex_.done.size() && c < plan_.chunks(); ++c)
      if (ex_.done[c]) {
        already_ += plan_.elements(c);
        ++chunks_before;
      }

    std::string created = utc_now();
    bcast_string(comm_, &created);
    layout_ = make_layout(cmd_, p_, plan_, src_, created);

    if (rank_ == 0 && !o_.run.quiet) {
      cmd_.print_before(p_, plan_);
      if (!p_.cull_note.empty()) std::printf("tdsolve %s: %s\n", name, p_.cull_note.c_str());
      std::printf("tdsolve %s: %d rank%s, %s, %llu chunk%s -> %s\n", name, ranks_,
                  ranks_ > 1 ? "s" : "", backend_->describe().c_str(),
                  (unsigned long long)plan_.chunks(), plan_.chunks() > 1 ? "s" : "",
                  o_.out.output.c_str());
      if (resuming)
        std::printf("tdsolve %s: resuming '%s': %llu of %llu chunks already done\n", name,
                    partial.c_str(), (unsigned long long)chunks_before,
                    (unsigned long long)plan_.chunks());
      std::fflush(stdout);
    }
  }

  void make(const std::string& creating) override {
    layout_.path = creating;
    io::create_result_file(layout_);
  }
  void open(const std::string& path) override {
    layout_.path = path;
    writer_ = open_writer(comm_, layout_, o_.out.output);
  }
  void flush() override { writer_->flush(); }

  std::string abort_hint(const std::string& partial, const std::string& resume_cmd) const override {
    return "the finished chunks are kept in '" + partial +
           "'; to continue, run the same job again with --resume (any rank count): " + resume_cmd;
  }

  bool loop(const OutputContext& context) override {
    partial_ = context.partial;
    resume_cmd_ = context.resume_command;
    // From here on the file exists: a failure on one rank ends the job at once.
    const char* list = cmd_.list_run();  // knn --radius, collide
    contain(comm_, [&] {
      if (list)
        set_abort_hint(std::string("the finished chunks of a ") + list +
                       " run are not kept (it writes its pairs at its end); run the same job "
                       "again with --resume to start it over: " +
                       resume_cmd_);
      if (memory_) {
        T* const base = static_cast<T*>(memory_->data);
        backend_->write_into(base);  // the CPU's loops write there; a GPU's values are copied
        sink_ = cmd_.make_memory_sink(base);
      } else {
        sink_ = cmd_.make_sink(*writer_, comm_, p_, ex_);
      }
      if (o_.out.store_points && writer_)
        step_together(comm_, [&] {
          writer_->write_points(rank_ != 0                 ? nullptr
                                : p_.stored_points.empty() ? p_.a.data()
                                                           : p_.stored_points.data());
        });
      Progress progress(rank_ == 0 ? o_.run.progress : ProgressMode::none, plan_.total(),
                        p_.stores_values() && !list ? sizeof(T) : 0, already_, element_name(p_));
      StopPolicy stop;
      if (o_.run.max_hours > 0) stop.deadline = t_start_ + o_.run.max_hours * 3600.0;
      if (cmd_.checkpoints()) stop.checkpoint_every = checkpoint_seconds();
      if (rank_ == 0) stop.beat = [&] { context.heartbeat(); };
      setup_mark("file");
      res_ = cmd_.frame_count()
                 ? run_frames(&progress, stop)
                 : run_chunks(plan_, ex_.done, *backend_, *sink_, comm_, &progress, &stop);
      const double w0 = MPI_Wtime();
      sink_->close(res_.done);
      res_.time.sink += MPI_Wtime() - w0;
    });
    // A list run's pairs are in the file now, flagged: a failure from here on
    // (the rename) leaves a .partial that a resume finishes as it is.
    if (list && std::all_of(res_.done.begin(), res_.done.end(), [](unsigned char d) { return d; }))
      set_abort_hint(abort_hint(partial_, resume_cmd_));
    // A stopped --radius or collide run kept no pairs: no chunk of it counts
    // as done.
    if (list && !std::all_of(res_.done.begin(), res_.done.end(), [](unsigned char d) { return d; }))
      std::fill(res_.done.begin(), res_.done.end(), 0);
    for (index_t c = 0; c < plan_.chunks(); ++c)
      if (res_.done[c]) {
        ++chunks_done_;
        elements_done_ += plan_.elements(c);
      }
    return chunks_done_ == plan_.chunks();
  }

  // A run over frames: each frame not done, in order, a whole run of the
  // driver loop (its own culled domain, plan and backend) into the one sink,
  // which takes the frame at its end. A stop (a signal, the deadline) is
  // agreed between frames as between rounds; one inside a frame drops that
  // frame. The sink saves the frames done every checkpoint interval.
  LoopResult run_frames(Progress* progress, const StopPolicy& outer) {
    LoopResult out;
    out.done = ex_.done;
    out.done.resize(plan_.chunks(), 0);
    StopPolicy inner = outer;
    inner.checkpoint_every = 0;  // the frames are the file's chunks: saved between them
    double last_save = MPI_Wtime();
    index_t elements = already_;
    for (index_t q = 0; q < plan_.chunks(); ++q) {
      if (out.done[q]) continue;
      if (q != 0) {  // frame 0 is load_problem's
        load_frame(cmd_, p_, q, comm_, src_);
        backend_ = make_backend<T>(o_.compute, p_, comm_, true, &kind_);
      }
      const mapping::ChunkPlan frame_plan = agree_plan(p_, *backend_, cmd_.chunk_bound(p_), comm_);
      const LoopResult r = run_chunks(frame_plan, {}, *backend_, *sink_, comm_,
                                      static_cast<Progress*>(nullptr), &inner);
      out.time.compute += r.time.compute;
      out.time.transfer += r.time.transfer;
      out.time.sink += r.time.sink;
      sink_->end_frame(q, !r.stopped);
      if (r.stopped) {
        out.stopped = true;
        out.signal = r.signal;
        break;
      }
      out.done[q] = 1;
      elements += plan_.elements(q);
      if (rank_ == 0) progress->update(elements);
      if (q + 1 == plan_.chunks()) break;
      const StopVerdict v = agree_stop(outer, 0, last_save, comm_);
      if (v.checkpoint) {
        const double w0 = MPI_Wtime();
        sink_->checkpoint(out.done);
        out.time.sink += MPI_Wtime() - w0;
        last_save = MPI_Wtime();
      }
      if (v.signal || v.deadline) {
        out.stopped = true;
        out.signal = v.signal;
        break;
      }
    }
    if (rank_ == 0) progress->finish();
    return out;
  }

  void finish(bool complete) override {
    const char* name = cmd_.name();
    const LoopTiming& t = res_.time;
    double mine[3] = {t.compute, t.transfer, t.sink};
    check_mpi(MPI_Reduce(mine, worst_, 3, MPI_DOUBLE, MPI_MAX, 0, comm_), "MPI_Reduce");
    total_ = MPI_Wtime() - t_start_;
    if (rank_ != 0) return;
    if (!complete && memory_) {
      std::fprintf(stderr,
                   "tdsolve %s: stopped cleanly (%s) after %s: %llu of %llu chunks done; an "
                   "in-memory result keeps nothing\n",
                   name, res_.signal ? signal_name(res_.signal) : "--max-hours reached",
                   human_seconds(total_).c_str(), (unsigned long long)chunks_done_,
                   (unsigned long long)plan_.chunks());
      std::fflush(stderr);
    } else if (!complete) {
      // Always printed, also with --quiet: the log must say how to go on.
      std::fprintf(stderr,
                   "tdsolve %s: stopped cleanly (%s) after %s: %llu of %llu chunks done (%.1f%%), "
                   "kept in '%s'. Resume with the same job and --resume (any rank count): %s\n",
                   name, res_.signal ? signal_name(res_.signal) : "--max-hours reached",
                   human_seconds(total_).c_str(), (unsigned long long)chunks_done_,
                   (unsigned long long)plan_.chunks(),
                   plan_.total() ? 100.0 * double(elements_done_) / double(plan_.total()) : 100.0,
                   partial_.c_str(), resume_cmd_.c_str());
      std::fflush(stderr);
    } else if (!o_.run.quiet) {
      cmd_.print_after(p_, plan_.total() - already_, total_);
      std::printf("); per rank at most: compute %s", human_seconds(worst_[0]).c_str());
      if (kind_ == "cuda") std::printf(", device-to-host %s", human_seconds(worst_[1]).c_str());
      std::printf(", write %s\n", human_seconds(worst_[2]).c_str());
    }
  }

  // --output memory:NAME (a Python call, one process): the lifecycle
  // without a file: no lock, nothing to inspect or resume, no rename; the
  // values go into the caller's buffer, which must hold the whole result.
  int run_in_memory(const MemoryOutput& m) {
    memory_ = &m;
    load();
    prepare(false);
    const index_t bytes = plan_.total() * sizeof(T);
    if (m.item != int(sizeof(T)) || m.bytes != bytes)
      throw UsageError("--output " + o_.out.output + ": the buffer holds " +
                       std::to_string(m.bytes) + " bytes of " + std::to_string(m.item) +
                       "-byte values; the result is " + std::to_string(bytes) + " bytes of " +
                       std::to_string(sizeof(T)) + "-byte values");
    const bool complete = loop(OutputContext{comm_, o_.out.output, "", "", nullptr});
    finish(complete);
    return complete ? 0 : kStoppedExitCode;
  }

  // A culled run's list: its tiles, where it was built and its FNV-1a (of
  // the tiles' 32-bit indices as words): the CPU and GPU builders' lists
  // compare by it.
  std::string cull_stats() const {
    if (!p_.culled) return "";
    const std::vector<std::uint32_t>& t = p_.cull.tiles;
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (std::uint32_t w : t)
      h = (h ^ w) * 0x100000001b3ull;
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "\"cull\": {\"tiles\": %llu, \"tested\": %llu, \"built_on\": \"%s\", "
                  "\"list_fnv\": \"%016llx\"}, ",
                  (unsigned long long)p_.cull.tile_count(), (unsigned long long)p_.cull.tested(),
                  p_.cull.built_on, (unsigned long long)h);
    return buf;
  }

  void write_stats(std::FILE* f, bool complete) const override {
    std::fprintf(f,
                 "{\"command\": \"%s\", \"n\": %llu, \"cols\": %llu, \"d\": %llu, \"pairs\": %llu, "
                 "\"bytes\": %.0f, \"metric\": \"%s\", \"precision\": \"%s\", \"backend\": \"%s\", "
                 "\"ranks\": %d, \"chunks\": %llu, \"block\": %llu, \"total_s\": %.6f, "
                 "\"compute_s\": %.6f, \"transfer_s\": %.6f, \"write_s\": %.6f, \"setup_s\": %s, "
                 "%s\"complete\": %s}\n",
                 cmd_.name(), (unsigned long long)cmd_.sizes(p_).first,
                 (unsigned long long)cmd_.sizes(p_).second, (unsigned long long)p_.d,
                 (unsigned long long)plan_.total(), cmd_.result_bytes(p_, plan_),
                 metric_name(p_.metric), precision_name<T>(), kind_.c_str(), ranks_,
                 (unsigned long long)plan_.chunks(), (unsigned long long)p_.rho, total_, worst_[0],
                 worst_[1], worst_[2], setup_json().c_str(), cull_stats().c_str(),
                 complete ? "true" : "false");
  }

 private:
  PairCommand<T>& cmd_;
  const CommandOptions& o_;
  MPI_Comm comm_;
  int rank_, ranks_;
  double t_start_;
  Sources src_;
  Problem<T> p_;
  Existing ex_;
  std::string kind_;  // the backend: "cpu" or "cuda"
  std::unique_ptr<Backend<T>> backend_;
  mapping::ChunkPlan plan_;
  index_t already_ = 0;  // elements done by an earlier run
  io::ResultLayout layout_;
  std::unique_ptr<io::ResultWriter> writer_;
  const MemoryOutput* memory_ = nullptr;  // --output memory:NAME
  std::unique_ptr<Sink<T>> sink_;
  std::string partial_, resume_cmd_;
  LoopResult res_;
  index_t chunks_done_ = 0, elements_done_ = 0;
  double worst_[3] = {0, 0, 0}, total_ = 0;
};

}  // namespace

// ---- helpers -------------------------------------------------------------------

index_t pair_total(index_t n, const std::string& source) {
  index_t total = 0;
  if (!mapping::checked_pair_count(n, &total) || total >= (index_t(1) << 62))
    throw InputError("n = " + std::to_string(n) + " points (" + source +
                     ") give more pairs than tdsolve indexes (C(n,2) must stay below 2^62)");
  return total;
}

std::vector<std::string> split_on(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t at = 0;
  for (size_t next; (next = s.find(sep, at)) != std::string::npos; at = next + 1)
    out.push_back(s.substr(at, next - at));
  out.push_back(s.substr(at));
  return out;
}

std::string joined(const std::vector<std::string>& v, const char* sep) {
  std::string t;
  for (size_t i = 0; i < v.size(); ++i)
    t += (i ? sep : "") + v[i];
  return t;
}

void bcast_strings(MPI_Comm comm, std::vector<std::string>* v) {
  index_t count = v->size();
  bcast_u64(comm, &count);
  v->resize(count);
  for (std::string& s : *v)
    bcast_string(comm, &s);
}

index_t triplet_total(index_t n, const std::string& source) {
  const unsigned __int128 t = static_cast<unsigned __int128>(n) * (n - 1) * (n - 2) / 6;
  if (n > (index_t(1) << 32) || t >= (static_cast<unsigned __int128>(1) << 62))
    throw InputError("n = " + std::to_string(n) + " points (" + source +
                     ") give more triplets than tdsolve indexes (C(n,3) must stay below 2^62)");
  return static_cast<index_t>(t);
}

index_t rect_total(index_t rows, index_t cols) {
  index_t total = 0;
  if (__builtin_mul_overflow(rows, cols, &total) || total >= (index_t(1) << 62))
    throw InputError(std::to_string(rows) + " × " + std::to_string(cols) +
                     " distances are more than tdsolve indexes (2^62)");
  return total;
}

void check_file_bytes(index_t total, index_t value_bytes, const std::string& source) {
  index_t bytes = 0;
  if (__builtin_mul_overflow(total, value_bytes, &bytes) || bytes >= (index_t(1) << 63))
    throw InputError(source + " gives an output larger than a file can hold (" +
                     std::to_string(total) + " values of " + std::to_string(value_bytes) +
                     " bytes)");
}

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
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
  if (!p.vi.empty()) {
    const index_t d = p.features;
    a.push_back(Attr{"VI", std::string("/VI")});
    L->extras.push_back({"VI", io::ValueType::f64, {d, d}, {}, p.vi});
  }
}

// ---- the problem -----------------------------------------------------------------

template <typename T>
void settle_problem(PairCommand<T>& cmd, Problem<T>& p, MPI_Comm comm, const Sources& src,
                    const std::vector<std::string>& notes);

// What rank 0's prepare (metric_vectors, prepare_points) decided about the
// metric, to every rank: the vectors as used, the kernel's weights, and the
// boolean family's choice of bits or values with its weight sum. One list
// for the run's first points and each later frame's.
template <typename T>
void bcast_metric_data(MPI_Comm comm, Problem<T>* p) {
  bcast_vector(comm, &p->weights);
  bcast_vector(comm, &p->variance);
  bcast_vector(comm, &p->vi);
  bcast_vector(comm, &p->kernel_weights);
  double v[2] = {p->bool_values ? 1.0 : 0.0, p->weight_sum};
  check_mpi(MPI_Bcast(v, 2, MPI_DOUBLE, 0, comm), "MPI_Bcast");
  p->bool_values = v[0] != 0.0;
  p->weight_sum = v[1];
}

template <typename T>
Problem<T> load_problem(PairCommand<T>& cmd, MPI_Comm comm, Sources* src) {
  const CommandOptions& o = cmd.options();
  Problem<T> p;
  p.metric = o.compute.metric;
  p.mp = make_metric_params(p.metric, o.compute.p, o.compute.base, 0);  // bits: below
  p.map = o.compute.map;
  p.rho = o.compute.block;
  cmd.configure(p);  // domain, epilogue and the command's parameters
  const bool bench = o.out.output.empty();
  // The set-up's loops (generating, converting, ordering and culling the
  // points) take the CPU backend's thread count on every backend.
  const NodeInfo node = node_info(comm);
  omp_set_num_threads(cpu_threads(o.compute, node.local_ranks));
  std::vector<std::string> notes;  // printed once the problem has passed every check
  // The input's hash (FNV-1a, one byte at a time: 2-3 s for 10^8 points in
  // 3-D) on a thread of its own, of a copy taken as read, while the points
  // are converted, shared and culled.
  std::future<std::string> a_hash;
  on_root(comm, [&] {
    const double host = static_cast<double>(cpu::available_host_bytes(1));
    const auto check_size = [&](index_t n, index_t d, const std::string& source) {
      cmd.check_size(n, d, source);
    };
    io::PointSet a = load_points(o.in, host, &notes, check_size, cmd.transpose_note());
    setup_mark("input");
    src->a = a.source;
    if (!bench) {  // collide: the radii included
      auto read = std::make_shared<io::PointSet>();
      read->values = a.values;
      a_hash = std::async(std::launch::async, [read] { return content_hash(*read); });
    }
    setup_mark("hash");
    if (a.cell.present && a.cell.periodic && !cmd.takes_cell())
      notes.push_back("'" + a.source + "' has a periodic cell; tdsolve " + cmd.name() +
                      " does not apply it (give --box where the command takes one)");
    cmd.take_input(a);
    p.d = a.d;
    p.rows = a.n;
    io::PointSet b;
    const bool rect = cmd.second_set();
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
    cmd.prepare(p, a, rect ? &b : nullptr);
    cmd.check_output(p, a, bench);
    if (!p.packed()) p.a = convert_points<T>(a);
    cmd.check_points(p, a);
    setup_mark("convert");
  });
  bcast_u64(comm, &p.rows);
  bcast_u64(comm, &p.cols);
  bcast_u64(comm, &p.d);
  bcast_u64(comm, &p.features);
  bcast_metric_data(comm, &p);
  p.mp = make_metric_params(p.metric, o.compute.p, o.compute.base, p.features);
  bcast_string(comm, &src->a);
  bcast_string(comm, &src->b);
  bcast_string(comm, &src->b_hash);
  bcast_vector(comm, &p.a);
  bcast_vector(comm, &p.b);
  cmd.broadcast(comm);
  setup_mark("share");
  all_agree(comm, [&] { fault_point(Stage::read, 0); });
  settle_problem(cmd, p, comm, *src, notes);
  if (a_hash.valid()) src->a_hash = a_hash.get();
  bcast_string(comm, &src->a_hash);
  setup_mark("hash_wait");
  return p;
}

// Every rank, the points shared: the norms, the command's last parts, the
// culled domain (a run over frames: for each frame).
template <typename T>
void settle_problem(PairCommand<T>& cmd, Problem<T>& p, MPI_Comm comm, const Sources& src,
                    const std::vector<std::string>& notes) {
  const CommandOptions& o = cmd.options();
  const NodeInfo node = node_info(comm);
  complete_problem(&p);
  on_root(comm, [&] { check_norms(p, src.a, src.b); });
  if (!o.run.quiet)
    for (const std::string& note : notes)
      std::fprintf(stderr, "tdsolve: note: %s\n", note.c_str());
  cmd.complete(p);
  CullGeometry g;
  setup_mark("check");
  if (cmd.cull_geometry(p, &g)) {
    // A CUDA run builds its pair list on its GPU (the host's list, faster).
    CullBuilder<T> on_device;
    const bool cuda_run = o.compute.backend == BackendKind::cuda ||
                          (o.compute.backend == BackendKind::automatic && cuda::device_count() > 0);
    if (cuda_run) {
      cuda::CudaOptions co;
      co.device = o.compute.device;
      co.local_rank = node.local_rank;
      co.local_ranks = node.local_ranks;
      on_device = [co](const T* pts, index_t n, index_t d, index_t rho, const CullGeometry& geo,
                       index_t max_tiles, Culled* c, bool* built) {
        return cuda::build_culled_on_device<T>(pts, n, d, rho, geo, max_tiles, co, c, built);
      };
    }
    // knn --k culled on the CPU without --block: smaller tiles. Its rows
    // stop at their lists' worst, and a list ordered by smaller boxes fills
    // with near points sooner (2 cores, n = 10^6, d = 3, K = 16: compute
    // 5.1 s at ρ = 128, 2.8 s at 32; performance.md). A GPU keeps 128 (a
    // CUDA block of 128 rows), a dense run too.
    // Where those do not cull (their list past its cap, or auto's choice),
    // the run is as with the default.
    bool small_tiles = p.knn() && !cuda_run && !o.compute.block_given && p.d <= 4;
    // --resume without --block: the tiles of the run that made the file (a
    // culled knn --k stopped on a GPU, at 128, goes on on the CPU at 128).
    index_t file_block = 0;
    if (small_tiles && o.out.resume)
      on_root(comm, [&] {
        for (const std::string& path : {o.out.output + ".partial", o.out.output}) {
          if (access(path.c_str(), F_OK) != 0) continue;
          try {
            file_block =
                std::stoull(job_value(job_keys(io::read_existing(path).job), "block", "0"));
          } catch (const std::exception&) {  // damaged: the lifecycle says so, with the default
          }
          break;
        }
      });
    bcast_u64(comm, &file_block);
    if (file_block > 0) {
      small_tiles = false;
      p.rho = static_cast<index_t>(file_block);
    }
    // The list's cap, the least over ranks: every rank decides alike.
    unsigned long long cap = cull_tile_cap(node.local_ranks), least = cap;
    check_mpi(MPI_Allreduce(&cap, &least, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, comm),
              "MPI_Allreduce");
    all_agree(comm, [&] {
      if (small_tiles && o.compute.cull != CullMode::off) {
        p.rho = p.d <= 3 ? 32 : 64;
        try {
          apply_cull(&p, o.compute.cull, g, on_device, least);
        } catch (const InputError&) {  // --cull on: the list past its cap
        }
        if (p.culled) return;
        p.rho = o.compute.block;
      }
      apply_cull(&p, o.compute.cull, g, on_device, least);
    });
  }
}

template <typename T>
void load_frame(PairCommand<T>& cmd, Problem<T>& p, index_t q, MPI_Comm comm, const Sources& src) {
  on_root(comm, [&] {
    io::PointSet a = cmd.read_frame(q);
    // p.features: the input's d (p.d is the packed words of a boolean
    // metric, the features kept by weighted chebyshev).
    if (a.n != p.rows || a.d != p.features)
      throw InputError("frame " + std::to_string(q) + " of the run ('" + a.source + "') has " +
                       std::to_string(a.n) + " × " + std::to_string(a.d) +
                       " values where its first has " + std::to_string(p.rows) + " × " +
                       std::to_string(p.features));
    cmd.take_input(a);
    cmd.prepare(p, a, nullptr);
    if (!p.packed()) p.a = convert_points<T>(a);
    cmd.check_points(p, a);
  });
  bcast_metric_data(comm, &p);
  bcast_u64(comm, &p.d);  // a frame may take bits where the last took values, or the reverse
  bcast_vector(comm, &p.a);
  cmd.broadcast(comm);
  settle_problem(cmd, p, comm, src, {});
}

// ---- the defaults of a typed piece (edm's) ---------------------------------------

template <typename T>
void PairCommand<T>::check_size(index_t n, index_t d, const std::string& source) const {
  io::check_pairs(n, source);
  checked_total(n, n, sizeof(T), source);
}

template <typename T>
index_t PairCommand<T>::checked_total(index_t rows, index_t cols, index_t value_bytes,
                                      const std::string& source) const {
  const index_t total = pair_total(rows, source);
  check_file_bytes(total, value_bytes, source);
  return total;
}

// The metric's vectors, then its host-side transforms of the points.
template <typename T>
void PairCommand<T>::prepare(Problem<T>& p, io::PointSet& a, io::PointSet* b) const {
  const CommandOptions& o = options();
  if (o.out.store_points) p.stored_points = convert_points<T>(a);  // as given
  const MetricVectors mv = metric_vectors(o.compute, a, b);
  p.weights = mv.weights;
  p.variance = mv.variance;
  p.vi = mv.vi;
  prepare_points(&p, &a, b, mv);
  if (p.packed()) {
    p.a = pack_points<T>(a);
    if (b) p.b = pack_points<T>(*b);
  } else if (b) {
    p.b = convert_points<T>(*b);
    if (sizeof(T) == 4) check_float32_range(a, b, p.metric, p.mp.p);
  }
}

template <typename T>
void PairCommand<T>::check_output(const Problem<T>& p, const io::PointSet& a, bool bench) const {
  const index_t total = checked_total(p.rows, p.cols, sizeof(T), a.source);
  if (!bench && !io::is_memory_spec(options().out.output))
    check_output_space(options().out.output, double(total) * sizeof(T));
}

template <typename T>
void PairCommand<T>::check_points(Problem<T>& p, const io::PointSet& a) const {
  if (sizeof(T) == 4 && !second_set() && !p.packed())
    check_float32_range(a, nullptr, p.metric, p.mp.p);
}

index_t select_chunk_pairs(index_t total, const ComputeOptions& o, index_t value_bytes) {
  if (o.chunk_mb_given && o.chunk_mb > 0)
    return static_cast<index_t>(o.chunk_mb * (1 << 20)) / value_bytes;
  return std::min<index_t>(index_t(1) << 28, std::max<index_t>(1, total / 256));
}

std::string box_text(int dims, const double* lengths) {
  std::string s;
  char buf[32];
  for (int k = 0; k < dims; ++k) {
    std::snprintf(buf, sizeof buf, "%.17g", lengths[k]);
    s += (k ? "," : "") + std::string(buf);
  }
  return s;
}

void check_box_dims(int dims, index_t d, const std::string& source) {
  if (dims > 0 && static_cast<index_t>(dims) != d)
    throw UsageError("--box gives " + std::to_string(dims) + " length" + (dims == 1 ? "" : "s") +
                     " but '" + source + "' has d = " + std::to_string(d) + " coordinates");
}

template <typename T>
index_t PairCommand<T>::chunk_bound(const Problem<T>& p) const {
  const double mb = options().compute.chunk_mb;  // bench: 0 = as large as memory allows
  return mb > 0 ? static_cast<index_t>(mb * (1 << 20)) / sizeof(T) : ~index_t(0);
}

template <typename T>
void PairCommand<T>::print_before(const Problem<T>& p, const mapping::ChunkPlan& plan) const {
  const double bytes = p.stores_values() ? double(plan.total()) * sizeof(T) : 0;
  std::printf("tdsolve %s: %llu × %llu points, d = %llu, %llu %s%s, %s %s, block %llu\n", name(),
              (unsigned long long)sizes(p).first, (unsigned long long)sizes(p).second,
              (unsigned long long)p.d, (unsigned long long)plan.total(),
              p.domain == DomainKind::rect ? "distances" : "pairs",
              bytes > 0 ? (" (" + human_bytes(bytes) + ")").c_str() : "", metric_name(p.metric),
              precision_name<T>(), (unsigned long long)p.rho);
}

template <typename T>
void PairCommand<T>::print_after(const Problem<T>& p, index_t now, double total) const {
  const char* what = element_name(p);
  const double bytes = double(now) * sizeof(T);
  std::printf("tdsolve %s: wrote %s (%llu %s) in %s (%s/s, %.3g %s/s", name(),
              human_bytes(bytes).c_str(), (unsigned long long)now, what,
              human_seconds(total).c_str(), human_bytes(bytes / total).c_str(), double(now) / total,
              what);
}

// --stats' "bytes": packed values (edm, cross, triplet's energies); 0 for
// results that are a few counts or sums.
template <typename T>
double PairCommand<T>::result_bytes(const Problem<T>& p, const mapping::ChunkPlan& plan) const {
  return p.stores_values() ? double(plan.total()) * sizeof(T) : 0.0;
}

// ---- the run -----------------------------------------------------------------------

std::vector<std::pair<std::string, std::string>> files_read(const CommandOptions& o) {
  const auto file = [](const std::string& spec) { return io::split_input_spec(spec).path; };
  const auto vector_file = [&](const std::string& spec) {
    std::vector<double> inline_list;
    return parse_number_list(spec, &inline_list) ? std::string() : file(spec);
  };
  return {{file(o.in.input), "the input"},
          {file(o.with.input), "the --with input"},
          {vector_file(o.compute.weights), "the --weights"},
          {vector_file(o.compute.variance), "the --variance"},
          {file(o.compute.vi), "the --vi"},
          {o.run.config, "the --config"}};
}

template <typename T>
int run_pairs(PairCommand<T>& cmd, MPI_Comm comm) {
  const CommandOptions& o = cmd.options();
  OutputRequest r;
  r.name = cmd.name();
  r.paths.output = o.out.output;
  r.paths.overwrite = o.out.overwrite;
  r.paths.resume = o.out.resume;
  r.paths.stats = o.run.stats;
  r.paths.inputs = files_read(o);
  r.command = o.run.command;
  r.resume_command = o.run.resume_command;
  r.quiet = o.run.quiet;
  PairRun<T> run(cmd, comm);
  if (io::is_memory_spec(o.out.output)) {
    const MemoryOutput* m = memory_output(o.out.output);  // check() saw it
    if (comm_size(comm) != 1)  // Python under mpirun: each rank's array would hold its part
      throw UsageError("--output memory:NAME is for one process, not " +
                       std::to_string(comm_size(comm)) + " ranks");
    return run.run_in_memory(*m);
  }
  return run_output(comm, r, run);
}

// ---- the command line ----------------------------------------------------------------

void PairFamilyCommand::add_options(cli::po::options_description& all) {
  all.add(cli::input_group(o_.in, info_.second_set ? &o_.with : nullptr, info_.spheres));
  all.add(cli::output_group(o_.out, info_.output_help, info_.store_points));
  add_groups(all);
  all.add(cli::compute_group(o_.compute, c_, info_.compute_flags));
  cli::po::options_description misc = cli::run_group(o_.run, c_);
  misc.add_options()("help,h", "show this help");
  all.add(misc);
}

void PairFamilyCommand::check(const cli::po::options_description& all,
                              const cli::po::variables_map& vm, int argc, char** argv) {
  // A command whose second set is optional (hist) checks --with's group
  // when any of it is given.
  const bool with = info_.second_set &&
                    (!second_set_optional() || !o_.with.input.empty() ||
                     !o_.with.generate.empty() || o_.with.transpose || vm.count("with-columns"));
  cli::finish_input(o_.in, "input", "generate", !with, vm, info_.spheres);
  if (with) cli::finish_input(o_.with, "with", "with-generate", false, vm);
  if (o_.out.output.empty()) throw UsageError("--output FILE.h5 is required");
  if (io::is_memory_spec(o_.out.output)) {
    // A Python call's result (edm and cross), kept nowhere else.
    if (info_.name != std::string("edm") && info_.name != std::string("cross"))
      throw UsageError("--output memory:NAME is for edm and cross; tdsolve " +
                       std::string(info_.name) + " writes a file");
    if (o_.out.resume || o_.out.store_points || !o_.run.stats.empty())
      throw UsageError(
          "--output memory:NAME keeps no file: --resume, --store-points and --stats need one");
    if (!memory_output(o_.out.output))
      throw UsageError("--output " + o_.out.output +
                       ": no such in-memory result (memory:NAME is for the Python calls)");
  }
  if (o_.out.resume && o_.out.overwrite)
    throw UsageError(
        "--resume and --overwrite do not go together: --resume continues an unfinished run (or "
        "reports a finished one), --overwrite starts over");
  cli::finish_compute(o_.compute, c_, info_.compute_flags);
  o_.compute.chunk_mb_given = vm.count("chunk-mb") > 0 && !vm["chunk-mb"].defaulted();
  o_.compute.block_given = vm.count("block") > 0 && !vm["block"].defaulted();
  check_groups(vm);
  cli::finish_run(o_.run, c_, all, vm, argc, argv);
  o_.run.effective = cli::effective_options(all, vm, unused_options());
}

int PairFamilyCommand::run(MPI_Comm comm) {
  // The run's trajectories (io::shared_trajectory) are closed at its end.
  struct Release {
    ~Release() { io::release_trajectories(); }
  } release;
  // collide computes in float64 always (finish_compute sets fp64): its pair
  // set is that of a float64 reference.
  if (o_.compute.fp64) return run_pairs(*piece<double>(o_), comm);
  return run_pairs(*piece<float>(o_), comm);
}

template class PairCommand<float>;
template class PairCommand<double>;
#define TDS_INSTANTIATE(T)                                                                        \
  template void add_metric_attrs<T>(const CommandOptions&, const Problem<T>&, io::ResultLayout*); \
  template Problem<T> load_problem<T>(PairCommand<T>&, MPI_Comm, Sources*);                       \
  template int run_pairs<T>(PairCommand<T>&, MPI_Comm);
TDS_INSTANTIATE(float)
TDS_INSTANTIATE(double)
#undef TDS_INSTANTIATE

}  // namespace tdsolve
