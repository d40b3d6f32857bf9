// The sinks of the commands that write a result file (solver/sink.hpp is
// the interface): the packed values into the file (ArraySink), the pairs that
// pass a test kept to the end (PairListSink: RadiusSink, OverlapSink), the
// counts of a histogram (HistogramSink), the exact sums of triplets
// (TripletSink).
//
// Every collective call on the file (a write, a flush, the close) is one
// step_together (solver/driver.hpp): the ranks agree on its outcome before
// any of them enters the next one, so a rank that failed (a full disk) never
// leaves the others inside a collective call it does not enter.
#pragma once

#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "io/result_file.hpp"
#include "mapping/simplex.hpp"
#include "solver/bucket_sort.hpp"
#include "solver/driver.hpp"
#include "solver/exact_sum.hpp"
#include "solver/exact_window.hpp"
#include "solver/mpi_util.hpp"
#include "solver/options.hpp"
#include "solver/problem.hpp"
#include "solver/sink.hpp"

namespace tdsolve {

constexpr double kPi = 3.141592653589793238462643383279502884;

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
    step_together(w_.comm(), [&] { w_.write(at, values, r.values); });
    if (companion_) step_together(w_.comm(), [&] { w_.write_companion(at, values, r.indices); });
  }
  void mark(bool has, index_t chunk) override {
    step_together(w_.comm(), [&] { w_.flush(); });
    step_together(w_.comm(), [&] { w_.mark_done(has, chunk); });
  }
  void close(const std::vector<unsigned char>&) override {
    step_together(w_.comm(), [&] { w_.close(); });
  }

 private:
  io::ResultWriter& w_;
  index_t per_, take_;
  bool companion_;
};

// Values in packed order into a caller's buffer (--output memory:NAME, the
// Python calls): a chunk's values at its offset (where a backend that
// computes into the buffer, Backend::write_into, already put them),
// nothing to flag or close.
template <typename T>
class MemorySink final : public Sink<T> {
 public:
  explicit MemorySink(T* out) : out_(out) {}
  void write(bool has, index_t, index_t offset, index_t count, const ChunkResult<T>& r) override {
    if (has && count && r.values != out_ + offset)
      std::memcpy(out_ + offset, r.values, count * sizeof(T));
  }
  void mark(bool, index_t) override {}
  void close(const std::vector<unsigned char>&) override {}

 private:
  T* out_;
};

// knn --k culled (solver/cull.hpp: build_culled_knn): a chunk is block rows
// of the run's (Morton) order, so its rows are scattered over the file.
// Like PairListSink, each rank keeps its rows (K values and K indices, the
// input's) in memory; at the end the ranks send every row to the rank whose
// band of the file (input order) holds it, write /distances and /indices
// at once, sync them, and only then set every flag. So a file's flags are
// all 0 (a stopped run keeps nothing: --resume starts over) or all 1.
template <typename T>
class KnnRowsSink final : public Sink<T> {
 public:
  KnnRowsSink(io::ResultWriter& w, const Culled& c, index_t k)
      : w_(w), c_(c), k_(k), one_rank_(comm_size(w.comm()) == 1) {}
  void write(bool has, index_t, index_t offset, index_t count, const ChunkResult<T>& r) override {
    if (!has) return;
    // The chunk's block rows, from the comparisons before them.
    const index_t I0 = c_.block_row_at(offset), I1 = c_.block_row_at(offset + count);
    const index_t q0 = I0 * c_.rho, q1 = std::min(I1 * c_.rho, c_.n), k = k_;
    computed_ = true;
    if (q1 <= q0) return;
    if (one_rank_) {
      // One rank holds the whole file: each row straight to its input row
      // (every row comes once; the arrays are not zeroed first).
      if (dist_.empty()) {
        dist_.resize(c_.n * k);
        idx_.resize(c_.n * k);
      }
#pragma omp parallel for schedule(static) if (q1 - q0 > 4096)
      for (index_t q = q0; q < q1; ++q) {
        const index_t at = c_.order[q] * k;
        std::memcpy(dist_.data() + at, r.values + (q - q0) * k, k * sizeof(T));
        std::memcpy(idx_.data() + at, r.indices + (q - q0) * k, k * sizeof(std::int64_t));
      }
      return;
    }
    const index_t kept = rows_.size(), add = q1 - q0;
    rows_.resize(kept + add);
    dist_.resize((kept + add) * k);
    idx_.resize((kept + add) * k);
#pragma omp parallel for schedule(static) if (add > 4096)
    for (index_t q = q0; q < q1; ++q) {
      const index_t at = kept + (q - q0);
      rows_[at] = static_cast<std::int64_t>(c_.order[q]);
      std::memcpy(dist_.data() + at * k, r.values + (q - q0) * k, k * sizeof(T));
      std::memcpy(idx_.data() + at * k, r.indices + (q - q0) * k, k * sizeof(std::int64_t));
    }
  }
  void mark(bool, index_t) override {}
  void close(const std::vector<unsigned char>& done) override {
    const MPI_Comm comm = w_.comm();
    const bool complete = std::all_of(done.begin(), done.end(), [](unsigned char d) { return d; });
    int any = computed_ ? 1 : 0;
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, comm), "MPI_Allreduce");
    // Nothing computed: a resumed file that was complete already keeps its bytes.
    if (complete && any) {
      index_t first = 0, rows = c_.n;
      if (!one_rank_) gather_band(comm, &first, &rows);
      step_together(comm, [&] { w_.write(first * k_, rows * k_, dist_.data()); });
      step_together(comm, [&] { w_.write_companion(first * k_, rows * k_, idx_.data()); });
      step_together(comm, [&] { w_.flush(); });
      step_together(comm, [&] { w_.set_done(comm_rank(comm) == 0 ? done.data() : nullptr); });
      step_together(comm, [&] { w_.flush(); });
    }
    step_together(comm, [&] { w_.close(); });
  }

 private:
  template <typename V>
  using Buffer = std::vector<V, DefaultInit<V>>;  // filled in parallel, never zeroed

  // Rank r's band of the file: input rows [r n / P, (r + 1) n / P).
  index_t band_start(int r, int ranks) const {
    return static_cast<index_t>((static_cast<unsigned __int128>(c_.n) * r) / ranks);
  }
  // Every kept row to the rank whose band holds it (one record a row: its
  // input index, K values, K indices); dist_ and idx_ become the band's rows.
  void gather_band(MPI_Comm comm, index_t* first, index_t* rows) {
    const int ranks = comm_size(comm), me = comm_rank(comm);
    const index_t k = k_;
    const size_t rec = sizeof(std::int64_t) + k * (sizeof(T) + sizeof(std::int64_t));
    const index_t mine = rows_.size();
    std::vector<index_t> starts(ranks + 1);
    for (int r = 0; r <= ranks; ++r)
      starts[r] = band_start(r, ranks);
    std::vector<int> dest(mine), send(ranks, 0), recv(ranks, 0), sdisp(ranks, 0), rdisp(ranks, 0);
    for (index_t q = 0; q < mine; ++q) {
      dest[q] = static_cast<int>(
          std::upper_bound(starts.begin(), starts.end(), static_cast<index_t>(rows_[q])) -
          starts.begin() - 1);
      ++send[dest[q]];
    }
    check_mpi(MPI_Alltoall(send.data(), 1, MPI_INT, recv.data(), 1, MPI_INT, comm),
              "MPI_Alltoall (row counts)");
    index_t incoming = 0;
    for (int r = 0; r < ranks; ++r) {
      sdisp[r] = r ? sdisp[r - 1] + send[r - 1] : 0;
      rdisp[r] = r ? rdisp[r - 1] + recv[r - 1] : 0;
      incoming += recv[r];
    }
    // Each row's slot among the records (rows in order within a rank).
    std::vector<index_t> slot(mine);
    {
      std::vector<index_t> at(sdisp.begin(), sdisp.end());
      for (index_t q = 0; q < mine; ++q)
        slot[q] = at[dest[q]]++;
    }
    Buffer<unsigned char> out(mine * rec), in;
#pragma omp parallel for schedule(static) if (mine > 4096)
    for (index_t q = 0; q < mine; ++q) {
      unsigned char* p = out.data() + slot[q] * rec;
      std::memcpy(p, &rows_[q], sizeof(std::int64_t));
      std::memcpy(p + 8, dist_.data() + q * k, k * sizeof(T));
      std::memcpy(p + 8 + k * sizeof(T), idx_.data() + q * k, k * sizeof(std::int64_t));
    }
    Buffer<std::int64_t>().swap(rows_);
    step_together(comm, [&] { in.resize(incoming * rec); });
    MPI_Datatype type;
    check_mpi(MPI_Type_contiguous(static_cast<int>(rec), MPI_BYTE, &type), "MPI_Type_contiguous");
    MPI_Type_commit(&type);
    const int rc = MPI_Alltoallv(out.data(), send.data(), sdisp.data(), type, in.data(),
                                 recv.data(), rdisp.data(), type, comm);
    MPI_Type_free(&type);
    check_mpi(rc, "MPI_Alltoallv (knn rows)");
    Buffer<unsigned char>().swap(out);
    *first = starts[me];
    *rows = starts[me + 1] - starts[me];
    if (incoming != *rows)
      throw std::logic_error("knn --k culled: a band did not get each of its rows once");
    Buffer<T>().swap(dist_);  // the kept rows are in `in` now: no copy of them on resize
    Buffer<std::int64_t>().swap(idx_);
    dist_.resize(*rows * k);
    idx_.resize(*rows * k);
    const index_t band = *first;
    // Each band row comes once (checked by the count above and the file's
    // rows: a row twice would leave another unwritten).
#pragma omp parallel for schedule(static) if (incoming > 4096)
    for (index_t q = 0; q < incoming; ++q) {
      const unsigned char* p = in.data() + q * rec;
      std::int64_t row;
      std::memcpy(&row, p, sizeof row);
      const index_t at_row = static_cast<index_t>(row) - band;
      std::memcpy(dist_.data() + at_row * k, p + 8, k * sizeof(T));
      std::memcpy(idx_.data() + at_row * k, p + 8 + k * sizeof(T), k * sizeof(std::int64_t));
    }
  }

  io::ResultWriter& w_;
  const Culled& c_;
  index_t k_;
  bool one_rank_;
  bool computed_ = false;
  Buffer<std::int64_t> rows_;  // several ranks: input index of each kept row
  Buffer<T> dist_;             // one rank: the file's rows (n × K); several: the kept rows'
  Buffer<std::int64_t> idx_;
};

// The pairs (i, j) of each chunk that passed a test in the backend (the
// select epilogue: knn --radius: within the radius; collide: spheres that
// overlap; solver/select.hpp), with their values, kept in this rank's
// memory (its chunks are contiguous and in order, and each chunk's pairs
// come in packed order, (i, j) order, so its pairs are sorted); at the end
// the ranks agree on where each one's pairs go, write /pairs and /distances
// (and /count, where the layout has it) at once, sync them, and only then
// set every flag. So a file's flags are all 0 (it holds no pairs a resume
// can use: a stopped run keeps nothing) or all 1 (it holds every pair). A
// culled run (solver/cull.hpp) meets its pairs in the Morton order: each
// is taken back to the input's indices (i < j) as it comes, and at the end
// the ranks sort them together (sort_globally) before they write. The
// list has no bound known in advance: it grows as the pairs come.
//
// held: a resumed file whose flags were all set already holds its `held`
// pairs (the run stopped between the flags and the rename): nothing is
// computed and nothing rewritten, so the file stays as that run wrote it.
template <typename T>
class PairListSink : public Sink<T> {
 public:
  void write(bool has, index_t, index_t, index_t, const ChunkResult<T>& r) override {
    if (!has || r.selected == 0) return;
    if (order_) {
      // Each pair back to input indices, on the OpenMP team, into records
      // the resize left unwritten (zeroed, then mapped, on one thread, they
      // were 3.5 s of knn --radius's 11 s of list handling at n = 10^7).
      const size_t at = recs_.size();
      recs_.resize(at + r.selected);
      const index_t count = r.selected;
      Rec* out = recs_.data() + at;
      const index_t* order = order_;
#pragma omp parallel for schedule(static) if (count > (index_t(1) << 16))
      for (index_t q = 0; q < count; ++q) {
        const std::int64_t a = static_cast<std::int64_t>(order[r.pairs[2 * q]]);
        const std::int64_t b = static_cast<std::int64_t>(order[r.pairs[2 * q + 1]]);
        out[q] = Rec{std::min(a, b), std::max(a, b), r.values[q]};
      }
      return;
    }
    pairs_.insert(pairs_.end(), r.pairs, r.pairs + 2 * r.selected);
    dist_.insert(dist_.end(), r.values, r.values + r.selected);
  }
  void mark(bool, index_t) override {}
  void close(const std::vector<unsigned char>& done) override {
    const MPI_Comm comm = w_.comm();
    const bool complete = std::all_of(done.begin(), done.end(), [](unsigned char d) { return d; });
    if (held_ < 0 && complete && order_) sort_globally(comm);
    if (held_ >= 0) {
      count_ = static_cast<std::uint64_t>(held_);
    } else if (complete) {
      const std::uint64_t mine = dist_.size();
      std::uint64_t before = 0, total = 0;
      check_mpi(MPI_Exscan(&mine, &before, 1, MPI_UINT64_T, MPI_SUM, comm), "MPI_Exscan");
      if (comm_rank(comm) == 0) before = 0;
      check_mpi(MPI_Allreduce(&mine, &total, 1, MPI_UINT64_T, MPI_SUM, comm), "MPI_Allreduce");
      // Every rank writes at once, so a full disk may fail some of them (or
      // all): the first that failed reports it (one line) and ends the job,
      // before any rank goes on to the next write.
      step_together(comm, [&] { w_.write_list("pairs", total, before, mine, pairs_.data()); });
      step_together(comm, [&] { w_.write_list("distances", total, before, mine, dist_.data()); });
      const std::int64_t m = static_cast<std::int64_t>(total);
      if (count_dataset_)
        step_together(comm, [&] { w_.write_extra("count", comm_rank(comm) == 0 ? &m : nullptr); });
      step_together(comm, [&] { w_.flush(); });
      step_together(comm, [&] { w_.set_done(comm_rank(comm) == 0 ? done.data() : nullptr); });
      step_together(comm, [&] { w_.flush(); });
      count_ = total;
    }
    step_together(comm, [&] { w_.close(); });
  }
  std::uint64_t count() const {
    return count_;
  }

 protected:
  // order: a culled run's order (input index of each point of the run), or
  // null; n: the points. A culled run's pairs are sorted on the OpenMP team
  // (--threads, as load_problem set it).
  PairListSink(io::ResultWriter& w, bool count_dataset, std::int64_t held, const index_t* order,
               index_t n)
      : w_(w), count_dataset_(count_dataset), held_(held), order_(order), n_(n) {}

 private:
  struct Rec {
    std::int64_t i, j;
    T v;
    bool operator<(const Rec& o) const { return i != o.i ? i < o.i : j < o.j; }
  };
  using Recs = std::vector<Rec, DefaultInit<Rec>>;
  // recs by (i, j) on the OpenMP team: bucket_sort by row, buckets of about
  // 1024 pairs.
  void sort_recs(Recs* recs) const {
    const index_t m = recs->size(), rows = std::max<index_t>(n_, 1);
    if (m < 2) return;
    const index_t buckets = std::min<index_t>(std::max<index_t>(m / 1024, 1), rows);
    bucket_sort(recs, buckets, [&](const Rec& r) {
      return static_cast<index_t>(static_cast<unsigned __int128>(r.i) * buckets / rows);
    });
  }

  // Collective: every rank's pairs sorted by (i, j), rank r holding the r-th
  // part of the order (cut at rows i that share the pairs out evenly): what
  // the Exscan in close() then writes in turn.
  void sort_globally(MPI_Comm comm) {
    Recs recs;
    recs.swap(recs_);
    sort_recs(&recs);
    const int ranks = comm_size(comm);
    if (ranks > 1) {
      // Pairs a bucket of rows, summed over the ranks; rank r takes the
      // buckets where the running count passes r/ranks of them all.
      const index_t buckets = std::min<index_t>(std::max<index_t>(n_, 1), 1 << 16);
      const auto bucket_of = [&](std::int64_t i) {
        return static_cast<index_t>(static_cast<unsigned __int128>(i) * buckets /
                                    std::max<index_t>(n_, 1));
      };
      std::vector<std::uint64_t> mine(buckets, 0), all(buckets, 0);
      for (const Rec& r : recs)
        ++mine[bucket_of(r.i)];
      check_mpi(MPI_Allreduce(mine.data(), all.data(), static_cast<int>(buckets), MPI_UINT64_T,
                              MPI_SUM, comm),
                "MPI_Allreduce (pair buckets)");
      std::uint64_t total = 0;
      for (std::uint64_t c : all)
        total += c;
      std::vector<int> dest(buckets);
      std::uint64_t run = 0;
      for (index_t b = 0; b < buckets; ++b) {
        dest[b] = total ? static_cast<int>(std::min<unsigned __int128>(
                              static_cast<unsigned __int128>(run) * ranks / total, ranks - 1))
                        : 0;
        run += all[b];
      }
      std::vector<int> send(ranks, 0), recv(ranks, 0), sdisp(ranks, 0), rdisp(ranks, 0);
      std::vector<std::uint64_t> send64(ranks, 0);
      for (const Rec& r : recs)
        ++send64[dest[bucket_of(r.i)]];
      // MPI counts are int: a failure here is agreed on before the exchange.
      const char* too_many = "more than 2^31 pairs for one rank to sort: run on more ranks";
      std::string why;
      for (int k = 0; k < ranks; ++k) {
        if (send64[k] > static_cast<std::uint64_t>(std::numeric_limits<int>::max())) why = too_many;
        send[k] = static_cast<int>(send64[k]);
      }
      agree_step(comm, why);
      check_mpi(MPI_Alltoall(send.data(), 1, MPI_INT, recv.data(), 1, MPI_INT, comm),
                "MPI_Alltoall (pair counts)");
      std::uint64_t incoming = 0;
      for (int k = 0; k < ranks; ++k) {
        sdisp[k] = k ? sdisp[k - 1] + send[k - 1] : 0;
        rdisp[k] = k ? rdisp[k - 1] + recv[k - 1] : 0;
        incoming += static_cast<std::uint64_t>(recv[k]);
      }
      if (incoming > static_cast<std::uint64_t>(std::numeric_limits<int>::max())) why = too_many;
      agree_step(comm, why);
      Recs got;
      step_together(comm, [&] { got.resize(incoming); });
      MPI_Datatype rec;
      check_mpi(MPI_Type_contiguous(static_cast<int>(sizeof(Rec)), MPI_BYTE, &rec),
                "MPI_Type_contiguous");
      MPI_Type_commit(&rec);
      // Records bound for one rank are contiguous: recs is sorted by i and
      // the destination rises with i.
      const int rc = MPI_Alltoallv(recs.data(), send.data(), sdisp.data(), rec, got.data(),
                                   recv.data(), rdisp.data(), rec, comm);
      MPI_Type_free(&rec);
      check_mpi(rc, "MPI_Alltoallv (pairs)");
      sort_recs(&got);
      recs.swap(got);
    }
    const index_t m = recs.size();
    pairs_.resize(2 * m);
    dist_.resize(m);
#pragma omp parallel for schedule(static)
    for (index_t q = 0; q < m; ++q) {
      pairs_[2 * q] = recs[q].i;
      pairs_[2 * q + 1] = recs[q].j;
      dist_[q] = recs[q].v;
    }
  }

  io::ResultWriter& w_;
  bool count_dataset_;
  std::int64_t held_;  // -1: none (a new file, or one whose flags are 0)
  const index_t* order_;
  index_t n_;
  Recs recs_;  // a culled run's pairs (input indices), until sorted
  std::vector<std::int64_t, DefaultInit<std::int64_t>> pairs_;
  std::vector<T, DefaultInit<T>> dist_;
  std::uint64_t count_ = 0;
};

// knn --radius: the pairs within the radius (d <= R).
template <typename T>
class RadiusSink final : public PairListSink<T> {
 public:
  RadiusSink(io::ResultWriter& w, std::int64_t held, const Problem<T>& p)
      : PairListSink<T>(w, false, held, p.culled ? p.cull.order.data() : nullptr, p.rows) {}
};

// collide: the spheres that overlap (with /count in the file).
template <typename T>
class OverlapSink final : public PairListSink<T> {
 public:
  OverlapSink(io::ResultWriter& w, std::int64_t held, const Problem<T>& p)
      : PairListSink<T>(w, true, held, p.culled ? p.cull.order.data() : nullptr, p.rows) {}
};

// What a histogram's file holds beside /counts: hist's /underflow and
// /overflow, /rdf and /cumulative (and --per-frame's rows); adf's /dropped
// (its rows' two outer slots together), /pdf and /cumulative.
struct HistOutputs {
  bool dropped = false;    // one /dropped per row instead of /underflow and /overflow
  bool per_frame = false;  // /frame_counts: every frame's rows
  // Rank 0, every chunk done: the datasets computed from the counts (rows
  // × bins), each a name and its values, in the order written.
  std::function<std::vector<std::pair<std::string, std::vector<double>>>(
      const std::vector<std::int64_t>& counts)>
      derive;
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
  // initial_complete: `initial` is a complete run's (every flag was set), so
  // it already holds a culled run's skipped pairs. frames: a run over that
  // many frames of a trajectory (0: one point set), whose counts are taken
  // a frame at a time (end_frame).
  HistogramSink(io::ResultWriter& w, MPI_Comm comm, const Problem<T>& p, HistOutputs out,
                const std::vector<std::uint64_t>& initial, bool initial_complete,
                index_t frames = 0, const std::vector<std::int64_t>* frame_counts = nullptr)
      : w_(w),
        comm_(comm),
        p_(p),
        out_(std::move(out)),
        frames_(frames),
        sum_(p.hist.slots(), 0),
        taken_(p.hist.slots(), 0) {
    if (comm_rank(comm) == 0 && initial.size() == sum_.size()) {
      (frames_ ? taken_ : sum_) = initial;
      skipped_added_ = initial_complete;
    }
    // --per-frame: rank 0 holds every frame's rows (a resumed run's rows of
    // the frames done before as it left them).
    if (comm_rank(comm) == 0 && out_.per_frame) {
      rows_.assign(frames_ * p.hist.histograms() * p.hist.bins, 0);
      if (frame_counts && frame_counts->size() == rows_.size()) rows_ = *frame_counts;
    }
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
    step_together(comm_, [&] { w_.close(); });
  }
  void end_frame(index_t q, bool complete) override {
    std::vector<std::uint64_t> frame(sum_.size(), 0);
    if (complete)
      check_mpi(MPI_Reduce(sum_.data(), frame.data(), static_cast<int>(sum_.size()), MPI_UINT64_T,
                           MPI_SUM, 0, comm_),
                "MPI_Reduce (histogram frame)");
    std::fill(sum_.begin(), sum_.end(), 0);
    if (!complete || comm_rank(comm_) != 0) return;
    settle_overflow(&frame, 1);
    for (index_t s = 0; s < taken_.size(); ++s)
      taken_[s] += frame[s];
    if (!rows_.empty()) {
      const index_t bins = p_.hist.bins, H = p_.hist.histograms();
      for (index_t g = 0; g < H; ++g)
        for (index_t b = 0; b < bins; ++b)
          rows_[(q * H + g) * bins + b] = static_cast<std::int64_t>(frame[g * (bins + 2) + b + 1]);
    }
  }

 private:
  // Rank 0, the complete counts of `frames` frames (their slots' rows):
  // the pairs a run never binned are overflow. A culled run never visits the
  // pairs beyond the range (solver/cull.hpp); a grouped run's overflow is
  // each histogram's pairs less those it binned below the top edge (its
  // kernels do not attribute the pairs they skip).
  void settle_overflow(std::vector<std::uint64_t>* slots, index_t frames) const {
    const index_t bins = p_.hist.bins;
    const HistGroups& g = p_.hist.groups;
    if (g.count > 0) {
      for (index_t h = 0; h < g.count; ++h) {
        std::uint64_t* row = slots->data() + h * (bins + 2);
        std::uint64_t binned = 0;
        for (index_t b = 0; b <= bins; ++b)
          binned += row[b];
        row[bins + 1] = static_cast<std::uint64_t>(g.pairs[h]) * frames - binned;
      }
    } else if (p_.culled) {
      slots->back() += (mapping::pair_count(p_.rows) - p_.cull.tested()) * frames;
    }
  }
  // The counts of the chunks (frames) `done` so far (all of them at the end).
  void write_partial(const std::vector<unsigned char>& done) {
    std::vector<std::uint64_t> total(sum_.size(), 0);
    if (frames_)
      total = taken_;  // rank 0's; the frames' counts were reduced as each ended
    else
      check_mpi(MPI_Reduce(sum_.data(), total.data(), static_cast<int>(sum_.size()), MPI_UINT64_T,
                           MPI_SUM, 0, comm_),
                "MPI_Reduce (histogram)");
    const bool root = comm_rank(comm_) == 0;
    const bool complete = std::all_of(done.begin(), done.end(), [](unsigned char d) { return d; });
    const index_t bins = p_.hist.bins, H = p_.hist.histograms();
    std::vector<std::int64_t> counts(H * bins), under(H), over(H);
    std::vector<std::pair<std::string, std::vector<double>>> derived;
    if (root) {
      if (complete && !frames_ && !skipped_added_) settle_overflow(&total, 1);
      for (index_t g = 0; g < H; ++g) {
        const std::uint64_t* row = &total[g * (bins + 2)];
        under[g] = static_cast<std::int64_t>(row[0]);
        over[g] = static_cast<std::int64_t>(row[bins + 1]);
        if (out_.dropped) over[g] += under[g];
        for (index_t b = 0; b < bins; ++b)
          counts[g * bins + b] = static_cast<std::int64_t>(row[b + 1]);
      }
      if (complete && out_.derive) derived = out_.derive(counts);
    }
    // Every rank makes the same calls: the names come from rank 0.
    index_t count = derived.size();
    bcast_u64(comm_, &count);
    std::vector<std::string> names(count);
    for (index_t k = 0; k < count; ++k) {
      if (root) names[k] = derived[k].first;
      bcast_string(comm_, &names[k]);
    }
    const std::vector<unsigned char> none(done.size(), 0);
    step_together(comm_, [&] { w_.set_done(root ? none.data() : nullptr); });
    step_together(comm_, [&] { w_.flush(); });
    step_together(comm_, [&] { w_.write_extra("counts", root ? counts.data() : nullptr); });
    if (out_.dropped) {
      step_together(comm_, [&] { w_.write_extra("dropped", root ? over.data() : nullptr); });
    } else {
      step_together(comm_, [&] { w_.write_extra("underflow", root ? under.data() : nullptr); });
      step_together(comm_, [&] { w_.write_extra("overflow", root ? over.data() : nullptr); });
    }
    for (index_t k = 0; k < count; ++k)
      step_together(comm_, [&] {
        w_.write_extra(names[k].c_str(), root ? derived[k].second.data() : nullptr);
      });
    if (out_.per_frame)
      step_together(comm_, [&] { w_.write_extra("frame_counts", root ? rows_.data() : nullptr); });
    step_together(comm_, [&] { w_.flush(); });
    step_together(comm_, [&] { w_.set_done(root ? done.data() : nullptr); });
    step_together(comm_, [&] { w_.flush(); });
  }

  io::ResultWriter& w_;
  MPI_Comm comm_;
  const Problem<T>& p_;
  HistOutputs out_;
  index_t frames_;
  std::vector<std::uint64_t> sum_;    // this rank's counts since the last reduction
  std::vector<std::uint64_t> taken_;  // frames: rank 0's counts of the frames done
  std::vector<std::int64_t> rows_;    // --per-frame: rank 0's frames × bins (0: not yet done)
  bool skipped_added_ = false;
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
  // initial: a resumed run's sums (else empty); width: the limbs a row of
  // its /progress/sums keeps (0: a new file). frames: a run over that many
  // frames of a trajectory (0: one point set), taken a frame at a time
  // (end_frame): its sums are the frames' in input order, /energy,
  // /energy_per_point and /forces their means, /frame_energy each frame's
  // total (frame_energy: what a stopped run left there).
  TripletSink(io::ResultWriter& w, MPI_Comm comm, const Problem<T>& p,
              const std::vector<std::int64_t>& initial, index_t width, index_t frames = 0,
              const std::vector<double>* frame_energy = nullptr)
      : width_(static_cast<int>(width)),
        w_(w),
        comm_(comm),
        p_(p),
        n_(p.rows),
        store_(p.stores_values()),
        order_(p.culled && !frames ? p.cull.order.data() : nullptr),
        frames_(frames),
        slots_(triplet_sum_slots(p.rows)),
        sum_(slots_ * kExactLimbs, 0),
        frame_(frames ? slots_ * kExactLimbs : 0, 0) {
    if (comm_rank(comm) == 0 && initial.size() == sum_.size()) sum_ = initial;
    if (comm_rank(comm) == 0 && frames_) {
      energies_.assign(frames_, std::numeric_limits<double>::quiet_NaN());
      if (frame_energy && frame_energy->size() == energies_.size()) energies_ = *frame_energy;
    }
  }
  bool wants_results() const override { return true; }
  void write(bool has, index_t, index_t offset, index_t count, const ChunkResult<T>& r) override {
    if (store_)
      step_together(comm_, [&] { w_.write(has ? offset : 0, has ? count : 0, r.values); });
    if (!has) return;
    // The GPU's running sums (every chunk of this rank so far): kept, not
    // added; valid until the backend's next submit, after any checkpoint
    // (a run over frames folds them into the frame's at its end).
    if (r.sums_running) {
      running_ = r.sums;
      return;
    }
    // A frame's sums are in its own order (a culled frame's Morton order)
    // until end_frame takes them.
    // A chunk's limbs are normalised (below 2^32 each, the top one signed)
    // before they are added, so the running sums grow by less than 2^32 a
    // limb per chunk and need normalising only every 2^30 chunks. Slots are
    // independent integer sums: threads do not change a bit.
    const std::int64_t* in = r.sums;
    std::int64_t* acc = frames_ ? frame_.data() : sum_.data();
    // A culled chunk adds to the points of its tiles only (the other slots
    // hold zeros): those slots, not all (4n + 1) × 69 limbs.
    const std::vector<index_t>* only = p_.culled ? &touched(offset, count) : nullptr;
    const index_t visits = only ? only->size() : slots_;
#pragma omp parallel for schedule(static)
    for (index_t v = 0; v < visits; ++v) {
      const index_t slot = only ? (*only)[v] : v;
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
        exact_normalise(&acc[slot * kExactLimbs]);
      added_ = 0;
    }
  }
  // A run over frames: frame q's sums (complete) join the run's, each
  // point's at its input index, and rank 0 keeps the frame's total energy
  // (the exact sum of the ranks' totals, rounded once); a frame a stop cut
  // short (not complete) is dropped.
  void end_frame(index_t q, bool complete) override {
    if (complete) {
      if (running_) {  // the GPU's sums of this frame (its backend ends with it)
#pragma omp parallel for schedule(static)
        for (index_t slot = 0; slot < slots_; ++slot)
          for (int l = 0; l < kExactLimbs; ++l)
            frame_[slot * kExactLimbs + l] += running_[slot * kExactLimbs + l];
      }
      const index_t* order = p_.culled ? p_.cull.order.data() : nullptr;
#pragma omp parallel for schedule(static)
      for (index_t slot = 0; slot < slots_; ++slot) {
        std::int64_t* f = &frame_[slot * kExactLimbs];
        exact_normalise(f);
        // Slot of point p (energy p, forces n + 3p + c) at its input index.
        index_t to = slot;
        if (order && slot < n_) to = order[slot];
        if (order && slot >= n_ && slot < 4 * n_)
          to = n_ + 3 * order[(slot - n_) / 3] + (slot - n_) % 3;
        std::int64_t* s = &sum_[to * kExactLimbs];
        for (int l = 0; l < kExactLimbs; ++l)
          s[l] += f[l];
        exact_normalise(s);
      }
      std::int64_t total[kExactLimbs];
      check_mpi(MPI_Reduce(&frame_[4 * n_ * kExactLimbs], total, kExactLimbs, MPI_INT64_T, MPI_SUM,
                           0, comm_),
                "MPI_Reduce (triplet frame energy)");
      if (comm_rank(comm_) == 0) energies_[q] = exact_value(total);
    }
    std::fill(frame_.begin(), frame_.end(), 0);
    running_ = nullptr;
    added_ = 0;
  }
  // The sum slots a culled chunk (its comparisons offset .. offset + count)
  // may add to: energy, forces of each point of a block in its tiles, and
  // the total.
  const std::vector<index_t>& touched(index_t offset, index_t count) {
    const Culled& c = p_.cull;
    // Layers without triplets (a last block of 1 or 2 points) may tie at
    // the ends: their tiles add nothing either way.
    const index_t I0 = c.block_row_at(offset), I1 = c.block_row_at(offset + count);
    hit_.assign(c.m, 0);
    for (index_t t = c.tile_start[I0]; t < c.tile_start[I1]; ++t)
      for (int q = 0; q < 3; ++q)
        hit_[c.tiles[3 * t + q]] = 1;
    slots_of_chunk_.clear();
    for (index_t B = 0; B < c.m; ++B) {
      if (!hit_[B]) continue;
      for (index_t p = B * c.rho; p < std::min(n_, (B + 1) * c.rho); ++p) {
        slots_of_chunk_.push_back(p);
        for (index_t k = 0; k < 3; ++k)
          slots_of_chunk_.push_back(n_ + 3 * p + k);
      }
    }
    slots_of_chunk_.push_back(4 * n_);
    return slots_of_chunk_;
  }
  void mark(bool, index_t) override {
    if (store_) step_together(comm_, [&] { w_.flush(); });
  }
  void checkpoint(const std::vector<unsigned char>& done) override {
    write_partial(done);
  }
  void close(const std::vector<unsigned char>& done) override {
    write_partial(done);
    step_together(comm_, [&] { w_.close(); });
  }

 private:
  void write_partial(const std::vector<unsigned char>& done) {
    for (index_t slot = 0; slot < slots_; ++slot)
      exact_normalise(&sum_[slot * kExactLimbs]);
    added_ = 0;
    // With the GPU's running sums, this rank's are sum_ (a resumed run's, on
    // rank 0; else zeros) plus them.
    std::vector<std::int64_t> with_running;
    if (running_) {
      with_running = sum_;
      std::int64_t* acc = with_running.data();
      const std::int64_t* in = running_;
#pragma omp parallel for schedule(static)
      for (index_t slot = 0; slot < slots_; ++slot) {
        for (int l = 0; l < kExactLimbs; ++l)
          acc[slot * kExactLimbs + l] += in[slot * kExactLimbs + l];
        exact_normalise(&acc[slot * kExactLimbs]);
      }
    }
    const std::vector<std::int64_t>& mine = running_ ? with_running : sum_;
    std::vector<std::int64_t> total(sum_.size(), 0);
    check_mpi(MPI_Reduce(mine.data(), total.data(), static_cast<int>(sum_.size()), MPI_INT64_T,
                         MPI_SUM, 0, comm_),
              "MPI_Reduce (triplet sums)");
    const bool root = comm_rank(comm_) == 0;
    const bool complete = std::all_of(done.begin(), done.end(), [](unsigned char d) { return d; });
    std::vector<double> energy(root ? n_ : 0), forces(root ? 3 * n_ : 0);
    double e_total = 0;
    if (root) {
      for (index_t slot = 0; slot < slots_; ++slot)
        exact_normalise(&total[slot * kExactLimbs]);
      if (complete) {  // a culled run's point q is the input's order_[q]
        // A run over frames: the means over its frames (one more rounding).
        const double F = frames_ ? double(frames_) : 1.0;
        for (index_t q = 0; q < n_; ++q) {
          const index_t i = order_ ? order_[q] : q;
          energy[i] = exact_value(&total[q * kExactLimbs]) / 3 / F;
          for (int c = 0; c < 3; ++c)
            forces[3 * i + c] = exact_value(&total[(n_ + 3 * q + c) * kExactLimbs]) / F;
        }
        e_total = exact_value(&total[4 * n_ * kExactLimbs]) / F;
      }
    }
    // The sums' limb window (exact_window.hpp), chosen by rank 0 and never
    // narrower than the file's: 4 or 5 limbs of the 69 for ATM on a lattice,
    // 11 to 35 for SW (whose terms reach the smallest doubles).
    std::int64_t window[2] = {0, 0};
    std::vector<std::int64_t> packed;
    if (root) {
      const LimbWindow lw = limb_window(total.data(), slots_, width_);
      window[0] = lw.first;
      window[1] = lw.width;
      packed.resize(slots_ * lw.width);
      pack_limbs(total.data(), slots_, lw, packed.data());
    }
    check_mpi(MPI_Bcast(window, 2, MPI_INT64_T, 0, comm_), "MPI_Bcast (limb window)");
    width_ = static_cast<int>(window[1]);
    const std::vector<unsigned char> none(done.size(), 0);
    step_together(comm_, [&] { w_.set_done(root ? none.data() : nullptr); });
    step_together(comm_, [&] { w_.flush(); });
    step_together(comm_, [&] {
      w_.write_extra_columns("progress/sums", width_,
                             {io::Attr{"first_limb", static_cast<std::uint64_t>(window[0])},
                              io::Attr{"limbs", static_cast<std::uint64_t>(window[1])}},
                             root ? packed.data() : nullptr);
    });
    if (frames_)  // the frames done so far (NaN: not yet)
      step_together(comm_,
                    [&] { w_.write_extra("frame_energy", root ? energies_.data() : nullptr); });
    if (complete) {
      step_together(comm_, [&] { w_.write_extra("energy", root ? &e_total : nullptr); });
      step_together(comm_,
                    [&] { w_.write_extra("energy_per_point", root ? energy.data() : nullptr); });
      step_together(comm_, [&] { w_.write_extra("forces", root ? forces.data() : nullptr); });
    }
    step_together(comm_, [&] { w_.flush(); });
    step_together(comm_, [&] { w_.set_done(root ? done.data() : nullptr); });
    step_together(comm_, [&] { w_.flush(); });
  }

  int width_;  // the limbs a row of /progress/sums keeps (0: none yet)
  io::ResultWriter& w_;
  MPI_Comm comm_;
  const Problem<T>& p_;  // the run's (a run over frames: the frame's, culled or not)
  index_t n_;
  bool store_;
  // A culled run's order (progress/sums keep it); null: the input's (a run
  // over frames keeps its sums in input order).
  const index_t* order_;
  index_t frames_;                       // a run over frames: how many (0: none)
  std::vector<unsigned char> hit_;       // touched(): the blocks of a chunk's tiles
  std::vector<index_t> slots_of_chunk_;  // touched(): their slots
  index_t slots_;
  std::vector<std::int64_t> sum_;
  std::vector<std::int64_t> frame_;  // a run over frames: this frame's sums, in its order
  std::vector<double> energies_;  // rank 0, a run over frames: each frame's total (NaN: not done)
  index_t added_ = 0;             // chunks added since sum_ was last normalised
  const std::int64_t* running_ = nullptr;  // the GPU's running sums (ChunkResult::sums_running)
};

}  // namespace tdsolve
