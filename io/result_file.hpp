// The result file, written collectively by every rank (DESIGN §4).
//
//   /                 attrs: software, version, command, created, input
//   /distances        1-D, C(n,2) values in itertools.combinations order;
//                     attrs: n, k, layout, metric, precision, features, block
//   /progress/done    uint8[K]: 1 once chunk c's bytes are written
//   /progress/offsets uint64[K+1]: packed offset where each chunk starts
//   /points           (optional) the n × d input as computed with
//
// The file's structure is created and flushed before any data is written, so
// a run killed at any point leaves a readable file whose progress says which
// chunks are missing; readers call a file complete only when every chunk is.
#pragma once

#include <mpi.h>

#include <string>
#include <utility>
#include <vector>

#include "io/h5.hpp"
#include "mapping/hd.hpp"

namespace tdsolve::io {

struct ResultLayout {
  std::string path;
  bool overwrite = false;
  bool is_double = false;
  index_t n = 0, features = 0, block = 0;
  std::string metric, precision;
  std::vector<index_t> chunk_offsets;  // K+1 packed offsets, last = C(n,2)
  bool store_points = false;           // create /points (n × features)
  // Root attributes (identical on every rank).
  std::string version, command, created, input;
};

class ResultWriter {
 public:
  ResultWriter(MPI_Comm comm, const ResultLayout& layout);  // collective
  ResultWriter(const ResultWriter&) = delete;
  ResultWriter& operator=(const ResultWriter&) = delete;

  // Collective: every rank calls it once per round, with count = 0 when it
  // has nothing this round.
  void write(index_t offset, index_t count, const void* data);
  // Collective: record chunk `chunk` of this rank as complete (has = false: none).
  void mark_done(bool has, index_t chunk);
  // Collective: rank 0 supplies n × d values, the others pass nullptr.
  void write_points(const void* data, index_t n, index_t d);
  // Collective; flushes and reports failure.
  void close();

 private:
  Hid file_, values_, done_, points_, xfer_;
  hid_t mem_type_;
};

}  // namespace tdsolve::io
