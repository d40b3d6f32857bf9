#include "solver/edm.hpp"

#include <omp.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <thread>

#include "io/error.hpp"
#include "io/input.hpp"
#include "io/result_file.hpp"
#include "mapping/partition.hpp"
#include "solver/cpu/cpu_backend.hpp"
#include "solver/cuda/cuda_backend.hpp"
#include "solver/mpi_util.hpp"
#include "solver/problem.hpp"
#include "solver/progress.hpp"
#include "version.hpp"

namespace tdsolve {

namespace {

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

void check_output_path(const EdmOptions& o) {
  if (o.output.empty()) throw UsageError("--output FILE.h5 is required");
  struct stat st {};
  if (stat(o.output.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw UsageError("--output '" + o.output + "' is a directory");
    if (!o.input.empty() && same_file(o.output, io::split_input_spec(o.input).path))
      throw UsageError("--output '" + o.output + "' is the input file; choose another name");
    if (!o.overwrite)
      throw UsageError("output '" + o.output + "' exists; pass --overwrite to replace it");
  }
  const std::string dir = directory_of(o.output);
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw UsageError("cannot write '" + o.output + "': directory '" + dir + "' does not exist");
  if (access(dir.c_str(), W_OK) != 0)
    throw UsageError("cannot write '" + o.output + "': directory '" + dir + "' is not writable");
}

// Sizes that would overflow an index, the file, or the machine.
void check_sizes(index_t n, index_t d, index_t value_bytes, const std::string& source) {
  index_t pairs = 0, points = 0, bytes = 0;
  if (!mapping::checked_pair_count(n, &pairs) || pairs >= (index_t(1) << 62)) {
    throw InputError("n = " + std::to_string(n) + " points (" + source +
                     ") give more pairs than tdsolve indexes (C(n,2) must stay below 2^62)");
  }
  if (__builtin_mul_overflow(pairs, value_bytes, &bytes) || bytes >= (index_t(1) << 63)) {
    throw InputError("n = " + std::to_string(n) + " points (" + source +
                     ") give an output larger than a file can hold (" + std::to_string(pairs) +
                     " values of " + std::to_string(value_bytes) + " bytes)");
  }
  if (__builtin_mul_overflow(n, d, &points) || points > cpu::available_host_bytes(1) / 8) {
    throw InputError("n × d = " + std::to_string(n) + " × " + std::to_string(d) + " points (" +
                     source + ") do not fit in this node's available memory");
  }
}

void check_disk_space(const std::string& output, bool overwrite, index_t bytes) {
  struct statvfs fs {};
  if (statvfs(directory_of(output).c_str(), &fs) != 0) return;  // cannot tell: let HDF5 try
  double free = static_cast<double>(fs.f_bavail) * fs.f_frsize;
  struct stat st {};
  if (overwrite && stat(output.c_str(), &st) == 0) free += static_cast<double>(st.st_size);
  if (static_cast<double>(bytes) > free) {
    throw InputError("the output needs " + human_bytes(bytes) + " but '" + directory_of(output) +
                     "' has " + human_bytes(free) + " free");
  }
}

std::string utc_now() {
  char buf[32];
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

int local_rank_info(MPI_Comm comm, int* local_ranks) {
  MPI_Comm node;
  check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node),
            "MPI_Comm_split_type");
  const int r = comm_rank(node);
  *local_ranks = comm_size(node);
  MPI_Comm_free(&node);
  return r;
}

// CPUs this process may run on: mpirun binds each rank to one core by
// default (np <= 2), and threads beyond that would share it.
int allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  return CPU_COUNT(&set);
}

int default_threads(int local_ranks) {
  // OMP_NUM_THREADS wins; otherwise share the node's cores among its ranks,
  // within the CPUs this rank is bound to.
  if (std::getenv("OMP_NUM_THREADS")) return std::max(1, omp_get_max_threads());
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  const int share = std::max(1, (cores > 0 ? cores : 1) / std::max(1, local_ranks));
  const int allowed = allowed_cpus();
  return allowed > 0 ? std::min(share, allowed) : share;
}

// Rank 0 reads or generates the points and checks everything that can be
// checked before a file exists; all ranks then receive the same points.
template <typename T>
void load_problem(const EdmOptions& o, MPI_Comm comm, EdmProblem<T>* p, std::string* source) {
  on_root(comm, [&] {
    check_output_path(o);
    io::PointSet pts;
    if (!o.generate.empty()) {
      const io::GeneratorSpec g = io::parse_generator(o.generate);
      check_sizes(g.n, g.d, sizeof(T), o.generate);
      check_disk_space(o.output, o.overwrite, mapping::pair_count(g.n) * sizeof(T));
      pts = io::generate_points(g);
    } else {
      pts = io::read_points(o.input);
      check_sizes(pts.n, pts.d, sizeof(T), o.input);
      check_disk_space(o.output, o.overwrite, mapping::pair_count(pts.n) * sizeof(T));
    }
    io::check_finite(pts);
    p->n = pts.n;
    p->d = pts.d;
    p->points = convert_points<T>(pts);
    *source = pts.source;
  });
  bcast_u64(comm, &p->n);
  bcast_u64(comm, &p->d);
  bcast_string(comm, source);
  p->points.resize(p->n * p->d);
  bcast_bytes(comm, p->points.data(), p->points.size() * sizeof(T));
  complete_problem(p, o.metric, o.block);
  on_root(comm, [&] { check_norms(*p, *source); });
}

template <typename T>
std::unique_ptr<EdmBackend<T>> make_backend(const EdmOptions& o, const EdmProblem<T>& p,
                                            MPI_Comm comm, std::string* kind) {
  int local_ranks = 1;
  const int local_rank = local_rank_info(comm, &local_ranks);
  std::unique_ptr<EdmBackend<T>> b;
  int threads = 0;
  all_agree(comm, [&] {
    std::string which = o.backend;
    if (which == "auto") which = cuda::device_count() > 0 ? "cuda" : "cpu";
    if (which == "cuda") {
      if (cuda::device_count() == 0)
        throw UsageError("--backend cuda: no GPU available (" + cuda::no_device_reason() + ")");
      cuda::CudaOptions co;
      co.device = o.device;
      co.bounding_box = o.map == "bb";
      co.local_rank = local_rank;
      co.local_ranks = local_ranks;
      b = cuda::make_cuda_backend<T>(p, co);
    } else {
      if (o.map != "lambda") throw UsageError("--map " + o.map + " applies to --backend cuda only");
      threads = o.threads > 0 ? o.threads : default_threads(local_ranks);
      b = cpu::make_cpu_backend<T>(p, threads, local_ranks);
    }
    *kind = which;
  });
  // Threads asked for beyond the CPUs a rank is bound to only share them.
  const int allowed = allowed_cpus();
  int crowded = allowed > 0 && threads > allowed ? threads : 0, worst = 0;
  check_mpi(MPI_Allreduce(&crowded, &worst, 1, MPI_INT, MPI_MAX, comm), "MPI_Allreduce");
  if (worst > 0 && comm_rank(comm) == 0 && !o.quiet) {
    std::fprintf(stderr,
                 "tdsolve: note: %d threads per rank, but the launcher bound ranks to fewer CPUs; "
                 "use mpirun --map-by slot:PE=%d (or --bind-to none) to spread them\n",
                 worst, worst);
  }
  return b;
}

struct Timing {
  double total = 0, compute = 0, transfer = 0, write = 0;
};

template <typename T>
void run_typed(const EdmOptions& o, MPI_Comm comm) {
  const double t_start = MPI_Wtime();
  const int rank = comm_rank(comm), ranks = comm_size(comm);
  const ProgressMode progress_mode = o.quiet ? ProgressMode::none : parse_progress(o.progress);

  EdmProblem<T> p;
  std::string source;
  load_problem(o, comm, &p, &source);

  std::string kind;
  std::unique_ptr<EdmBackend<T>> backend = make_backend<T>(o, p, comm, &kind);

  // Chunk size: --chunk-mb, capped by what every rank's backend can hold.
  const index_t hard = backend->max_chunk_elements();
  index_t limit = static_cast<index_t>(o.chunk_mb * (1 << 20)) / sizeof(T);
  limit = std::max<index_t>(1, std::min(limit, hard));
  index_t agreed = limit;
  check_mpi(MPI_Allreduce(&limit, &agreed, 1, MPI_UINT64_T, MPI_MIN, comm), "MPI_Allreduce");
  const mapping::ChunkPlan plan(p.tiling, agreed);
  all_agree(comm, [&] {
    if (plan.largest_chunk() > hard)
      throw InputError("one block row of n = " + std::to_string(p.n) + " with --block " +
                       std::to_string(o.block) + " holds " +
                       human_bytes(double(plan.largest_chunk()) * sizeof(T)) + ", more than the " +
                       human_bytes(double(hard) * sizeof(T)) +
                       " this rank can buffer; use a smaller --block");
    backend->reserve(plan.largest_chunk());
  });

  std::vector<index_t> offsets(plan.chunks() + 1);
  for (index_t c = 0; c < plan.chunks(); ++c)
    offsets[c] = plan.offset(c);
  offsets.back() = plan.total();

  io::ResultLayout layout;
  layout.path = o.output;
  layout.overwrite = o.overwrite;
  layout.is_double = sizeof(T) == 8;
  layout.n = p.n;
  layout.features = p.d;
  layout.block = o.block;
  layout.metric = metric_name(o.metric);
  layout.precision = sizeof(T) == 8 ? "float64" : "float32";
  layout.chunk_offsets = offsets;
  layout.store_points = o.store_points;
  layout.version = TDSOLVE_VERSION;
  layout.command = o.command;
  layout.created = utc_now();
  layout.input = source;
  bcast_string(comm, &layout.created);
  bcast_string(comm, &layout.command);

  if (rank == 0 && !o.quiet) {
    std::printf("tdsolve edm: n = %llu points × d = %llu, %llu pairs (%s), %s %s, block %llu\n",
                (unsigned long long)p.n, (unsigned long long)p.d, (unsigned long long)plan.total(),
                human_bytes(double(plan.total()) * sizeof(T)).c_str(), layout.metric.c_str(),
                layout.precision.c_str(), (unsigned long long)o.block);
    std::printf("tdsolve edm: %d rank%s, %s, %llu chunk%s of up to %s -> %s\n", ranks,
                ranks > 1 ? "s" : "", backend->describe().c_str(),
                (unsigned long long)plan.chunks(), plan.chunks() > 1 ? "s" : "",
                human_bytes(double(plan.largest_chunk()) * sizeof(T)).c_str(), o.output.c_str());
    std::fflush(stdout);
  }

  std::unique_ptr<io::ResultWriter> writer;
  all_agree(comm, [&] { writer = std::make_unique<io::ResultWriter>(comm, layout); });
  if (o.store_points) writer->write_points(rank == 0 ? p.points.data() : nullptr, p.n, p.d);

  // Every rank knows every rank's chunk range, so rank 0 can count global
  // progress after each round without communication.
  std::vector<mapping::BlockRange> owned(ranks);
  index_t rounds = 0;
  for (int r = 0; r < ranks; ++r) {
    owned[r] = plan.rank_chunks(r, ranks);
    rounds = std::max(rounds, owned[r].size());
  }
  const mapping::BlockRange mine = owned[rank];
  auto job = [&](index_t c) {
    return ChunkJob{plan.row_begin(c), plan.row_end(c), plan.elements(c)};
  };

  Progress progress(rank == 0 ? progress_mode : ProgressMode::none, plan.total(), sizeof(T));
  Timing t;
  // Pipeline: chunk t+1 computes while chunk t is written.
  if (mine.size() > 0) backend->submit(job(mine.begin));
  for (index_t round = 0; round < rounds; ++round) {
    const bool has = round < mine.size();
    const index_t c = mine.begin + round;
    if (round + 1 < mine.size()) backend->submit(job(c + 1));
    const T* data = has ? backend->wait() : nullptr;
    const double w0 = MPI_Wtime();
    writer->write(has ? plan.offset(c) : 0, has ? plan.elements(c) : 0, data);
    writer->mark_done(has, c);
    t.write += MPI_Wtime() - w0;
    if (rank == 0) {
      index_t done = 0;
      for (int r = 0; r < ranks; ++r) {
        const index_t last = std::min(owned[r].end, owned[r].begin + round + 1);
        if (last > owned[r].begin)
          done += plan.offset(last - 1) + plan.elements(last - 1) - plan.offset(owned[r].begin);
      }
      progress.update(done);
    }
  }
  progress.finish();
  const double w0 = MPI_Wtime();
  writer->close();
  t.write += MPI_Wtime() - w0;
  t.compute = backend->compute_seconds();
  t.transfer = backend->transfer_seconds();

  Timing worst;
  double mine_t[3] = {t.compute, t.transfer, t.write}, max_t[3] = {0, 0, 0};
  check_mpi(MPI_Reduce(mine_t, max_t, 3, MPI_DOUBLE, MPI_MAX, 0, comm), "MPI_Reduce");
  worst.total = MPI_Wtime() - t_start;
  worst.compute = max_t[0];
  worst.transfer = max_t[1];
  worst.write = max_t[2];
  if (rank != 0) return;
  const double bytes = double(plan.total()) * sizeof(T);
  if (!o.quiet) {
    std::printf("tdsolve edm: wrote %s in %s (%s/s, %.3g pairs/s); per rank at most: compute %s",
                human_bytes(bytes).c_str(), human_seconds(worst.total).c_str(),
                human_bytes(bytes / worst.total).c_str(), double(plan.total()) / worst.total,
                human_seconds(worst.compute).c_str());
    if (kind == "cuda") std::printf(", device-to-host %s", human_seconds(worst.transfer).c_str());
    std::printf(", write %s\n", human_seconds(worst.write).c_str());
  }
  if (!o.stats.empty()) {
    std::FILE* f = std::fopen(o.stats.c_str(), "w");
    if (!f)
      throw std::runtime_error("cannot write --stats file '" + o.stats +
                               "': " + std::strerror(errno));
    std::fprintf(f,
                 "{\"n\": %llu, \"d\": %llu, \"pairs\": %llu, \"bytes\": %.0f, \"metric\": \"%s\", "
                 "\"precision\": \"%s\", \"backend\": \"%s\", \"ranks\": %d, \"chunks\": %llu, "
                 "\"block\": %llu, \"total_s\": %.6f, \"compute_s\": %.6f, \"transfer_s\": %.6f, "
                 "\"write_s\": %.6f}\n",
                 (unsigned long long)p.n, (unsigned long long)p.d, (unsigned long long)plan.total(),
                 bytes, layout.metric.c_str(), layout.precision.c_str(), kind.c_str(), ranks,
                 (unsigned long long)plan.chunks(), (unsigned long long)o.block, worst.total,
                 worst.compute, worst.transfer, worst.write);
    std::fclose(f);
  }
}

}  // namespace

void run_edm(const EdmOptions& o, MPI_Comm comm) {
  if (o.fp64) {
    run_typed<double>(o, comm);
  } else {
    run_typed<float>(o, comm);
  }
}

}  // namespace tdsolve
