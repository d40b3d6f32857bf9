// What the driver needs from a compute backend: the results of a range of
// block rows (one chunk), asynchronously, two chunks in flight.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "solver/problem.hpp"

namespace tdsolve {

struct ChunkJob {
  index_t chunk = 0;                   // index in the plan (fault injection, messages)
  index_t row_begin = 0, row_end = 0;  // block rows
  index_t elements = 0;                // domain elements in them
  index_t offset = 0;                  // the chunk's first value in the whole result
};

// What a backend hands the sink for one chunk: the values in packed order
// (store epilogue) or the histogram slots [underflow, bins..., overflow];
// for triplets also the chunk's reductions, triplet_sum_slots(n) exact
// accumulators of kExactLimbs int64 limbs each (solver/exact_sum.hpp); for
// knn (topk) the chunk's rows of k distances (values) and indices; for
// select the `selected` pairs that passed, sorted by packed index: (i, j) at
// pairs[2q], pairs[2q + 1] and their values at values[q].
template <typename T>
struct ChunkResult {
  const T* values = nullptr;
  const std::int64_t* indices = nullptr;
  const std::uint64_t* counts = nullptr;
  const std::int64_t* sums = nullptr;
  // sums are the running sums of every chunk this backend has computed so
  // far (this one last), not this chunk's alone (the GPU's triplets keep
  // them on the device): the sink takes them as they are.
  bool sums_running = false;
  const std::int64_t* pairs = nullptr;
  index_t selected = 0;
};

// Protocol: submit(a); submit(b); wait() -> a; submit(c); wait() -> b; ...
// At most two jobs are outstanding; what wait() returns stays valid until
// the next submit() (which reuses its buffer).
template <typename T>
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string describe() const = 0;
  // The largest chunk (values) whose buffers fit this backend's memory;
  // a histogram buffers no values, so its chunks are bounded elsewhere.
  virtual index_t max_chunk_elements() const = 0;
  // The most comparisons (domain elements) a chunk of a top-k search
  // (knn --k) may hold so that it computes in about a second or less on
  // this backend, whatever n: the run checks for a stop request (a signal,
  // --max-hours) between chunks, and knn's chunks, bounded by their output
  // alone, would hold all n² comparisons. ~0: no bound (other epilogues).
  virtual index_t max_chunk_work() const { return ~index_t(0); }
  // Allocate buffers for chunks of up to `elements` values.
  virtual void reserve(index_t elements) = 0;
  // Results stay on the device (bench): no device-to-host copy.
  virtual void keep_on_device(bool) {}
  // An in-memory result of stored values (one process): compute each
  // chunk's values straight into base + its offset, where wait() then
  // points, instead of into a buffer of its own. False: not this backend
  // (or not this problem), the sink copies them there.
  virtual bool write_into(T* /*base*/) { return false; }
  virtual void submit(const ChunkJob& job) = 0;
  virtual ChunkResult<T> wait() = 0;
  // Seconds spent computing (kernel or loop time), and moving results to the
  // host where that is a separate step.
  virtual double compute_seconds() const = 0;
  virtual double transfer_seconds() const { return 0; }
  virtual void reset_timers() = 0;
  // Write ceilings for bench: seconds to fill the backend's buffer once per
  // chunk size given (memset; on a GPU also a plain 16-byte store kernel).
  struct Ceiling {
    std::string name;
    double seconds;
  };
  virtual std::vector<Ceiling> write_ceilings(const std::vector<index_t>& chunk_bytes) = 0;
};

}  // namespace tdsolve
