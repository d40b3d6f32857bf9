// What the driver needs from a compute backend: fill a chunk buffer with the
// values of a range of block rows, asynchronously, two chunks in flight.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "mapping/lambda2.hpp"
#include "solver/metrics.hpp"

namespace tdsolve {

// The problem every backend sees: points already in compute precision.
template <typename T>
struct EdmProblem {
  index_t n = 0, d = 0;
  std::vector<T> points;      // n × d, row-major
  std::vector<double> norms;  // n, filled when the metric needs them
  Metric metric = Metric::euclidean;
  mapping::PairTiling tiling;
};

struct ChunkJob {
  index_t row_begin = 0, row_end = 0;  // block rows
  index_t elements = 0;                // pairs in them
};

// Protocol: submit(a); submit(b); wait() -> a; submit(c); wait() -> b; ...
// At most two jobs are outstanding; the buffer wait() returns stays valid
// until the second submit() after it.
template <typename T>
class EdmBackend {
 public:
  virtual ~EdmBackend() = default;
  virtual std::string describe() const = 0;
  // The largest chunk (pairs) whose buffers fit this backend's memory.
  virtual index_t max_chunk_elements() const = 0;
  // Allocate buffers for chunks of up to `elements` pairs.
  virtual void reserve(index_t elements) = 0;
  virtual void submit(const ChunkJob& job) = 0;
  virtual const T* wait() = 0;
  // Seconds spent computing (kernel or loop time), and moving results to the
  // host where that is a separate step.
  virtual double compute_seconds() const = 0;
  virtual double transfer_seconds() const { return 0; }
};

}  // namespace tdsolve
