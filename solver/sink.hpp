// Where a chunk's results go once a backend has them (FAISS's tile consumer):
// the packed values into the result file, the counts into a histogram, or
// nowhere (bench). Every call is collective: each rank calls it once per
// round, with has = false when it has no chunk that round.
#pragma once

#include <memory>
#include <vector>

#include "mapping/partition.hpp"
#include "solver/backend.hpp"

namespace tdsolve {

template <typename T>
class Sink {
 public:
  virtual ~Sink() = default;
  // Whether the backend must bring values (or counts) to the host at all.
  virtual bool wants_results() const { return true; }
  // Chunk c's results: values [offset, offset + count) of the flattened
  // result, or its partial counts.
  virtual void write(bool has, index_t chunk, index_t offset, index_t count,
                     const ChunkResult<T>& r) = 0;
  // Chunk c is complete: its data has reached the storage before its flag.
  virtual void mark(bool has, index_t chunk) = 0;
  // Collective, now and then during the loop: make what the sink holds
  // durable, for the chunks `done` (a histogram writes its partial counts).
  virtual void checkpoint(const std::vector<unsigned char>& /*done*/) {}
  // After the last round (or a clean stop): reductions combine, the file
  // closes. done[c]: chunk c is complete, now or in an earlier run.
  virtual void close(const std::vector<unsigned char>& done) = 0;
  // Collective, a run over the frames of a trajectory (hist --frames): the
  // chunks since the last call were one whole frame, the run's frame q
  // (complete: take it), or part of one a stop cut short (drop it).
  // checkpoint and close then take `done` per frame.
  virtual void end_frame(index_t /*q*/, bool /*complete*/) {}
};

// Drops everything: the driver loop alone, for `tdsolve bench`.
template <typename T>
class NullSink final : public Sink<T> {
 public:
  bool wants_results() const override { return false; }
  void write(bool, index_t, index_t, index_t, const ChunkResult<T>&) override {}
  void mark(bool, index_t) override {}
  void close(const std::vector<unsigned char>&) override {}
};

}  // namespace tdsolve
