// Input points: HDF5 (FILE.h5:/dataset), NumPy .npy, CSV/text, or a
// synthetic generator. Everything is read as float64 on one rank and checked
// there; the driver converts to the compute precision and broadcasts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/types.hpp"

namespace tdsolve::io {

// A frame's simulation cell (io/trajectory.hpp), LAMMPS's layout: a = (lx,
// 0, 0), b = (xy, ly, 0), c = (xz, yz, lz).
struct Cell {
  bool present = false;   // the input recorded a cell
  bool periodic = false;  // ... periodic along every axis
  std::string boundary;   // what the input says of its boundaries, for messages
  double lengths[3] = {}, tilt[3] = {};
};

struct PointSet {
  index_t n = 0, d = 0;
  std::vector<double> values;  // n × d, row-major
  std::string source;          // what to record in the file's `input` attribute
  Cell cell;                   // a trajectory frame's cell (else none)
  // A run over a trajectory's frames (hist --frames): the frames it takes,
  // in order; these points are the first's.
  std::vector<index_t> frames;
  index_t frame = 0;  // the trajectory frame these points are (0: not a trajectory)
};

// Reads FILE.h5:/dataset, FILE.npy or FILE.csv (or .txt/.tsv). Throws
// InputError naming the file and the problem.
// vector: a 1-D array is read as one row (a vector option, not points).
PointSet read_points(const std::string& spec, bool vector = false);

// In-memory inputs (the Python extension, solver/commands/in_process.hpp): --input
// memory:NAME reads the n × d float64 values (row-major) registered under
// NAME. The caller keeps them alive until the run is over and clears them
// after; `source` is what the file records as its input.
void set_memory_points(const std::string& name, const double* values, index_t n, index_t d,
                       const std::string& source);
void clear_memory_points();
constexpr const char* kMemoryPrefix = "memory:";
// Whether `spec` is memory:NAME (an in-memory input, or a Python call's
// --output), and its NAME.
inline bool is_memory_spec(const std::string& spec) {
  return spec.rfind(kMemoryPrefix, 0) == 0;
}
inline std::string memory_name(const std::string& spec) {
  return spec.substr(std::string(kMemoryPrefix).size());
}

// An --input spec split into its file and, for FILE.h5:/dataset (or
// FILE.h5:dataset), the dataset with its leading slash ("" when there is
// none).
struct InputSpec {
  std::string path, dataset;
};
InputSpec split_input_spec(const std::string& spec);

// --generate uniform:N:D[:SEED]: points uniform in [0,1)^D. Value (r, k) is a
// pure function of (SEED, r, k) (SplitMix64), so it never depends on ranks.
struct GeneratorSpec {
  std::string kind;
  index_t n = 0, d = 0;
  std::uint64_t seed = 0;
};
GeneratorSpec parse_generator(const std::string& spec);  // throws UsageError
PointSet generate_points(const GeneratorSpec& g);

// --columns LIST: 0-based column indices and ranges A:B (B excluded, as in
// Python), comma-separated, in the order to use, e.g. "1:4" or "0,2,5:7".
// Throws UsageError for bad syntax, an empty range or a repeated column.
std::vector<index_t> parse_columns(const std::string& text);
// --transpose (the stored array is d × n: one point per column, as
// column-major writers such as MATLAB and Julia store an n × d array),
// then --columns (empty: all). InputError for a column past the input's d.
void arrange_points(PointSet& p, bool transpose, const std::vector<index_t>& columns);

// A file name's lower case, and whether it ends with a suffix (the readers
// tell formats by their names).
std::string lower(std::string s);
bool ends_with(const std::string& s, const std::string& suffix);

// Shape checks shared by every source: n >= 1, d >= 1.
void check_shape(index_t n, index_t d, const std::string& source);
// Pairs of one set need n >= 2.
void check_pairs(index_t n, const std::string& source);
// Every value finite, else InputError naming the first bad row and column.
void check_finite(const PointSet& p);

}  // namespace tdsolve::io
