// The result file, written collectively by every rank (DESIGN §4).
//
//   /                 attrs: software, version, command, created, input, ...
//   /<dataset>        the result: 1-D or 2-D, in the domain's packed order
//                     (edm: /distances, C(n,2) values; cross: /distances,
//                     M × K; hist: /counts, written at checkpoints, stops and the end;
//                     triplet: /triplet_energy, C(n,3) values, or none)
//   /<extras>         small datasets of a result (hist: /edges, /underflow,
//                     /overflow, /rdf; triplet: /energy, /energy_per_point,
//                     /forces, /progress/sums), written by rank 0
//   /progress/done    uint8[K]: 1 once chunk c's data is written and flushed
//   /progress/offsets uint64[K+1]: where each chunk starts, in elements of
//                     the domain (the flattened result, when there is one);
//                     attrs chunks, dataset ("" when none), elements
//   /points           (optional) the n × d input as computed with
//
// Rank 0 builds the whole structure in memory and writes it as one file
// image with POSIX calls under a temporary name (FILE.h5.creating), so a
// failure there — a full disk, a device that is no file — is one rank's
// ordinary error, cleaned up by removing what it wrote; then every rank
// opens the file for collective writes (which allocates the datasets'
// storage), and only then is it renamed to FILE.h5.partial
// (io/output_files.hpp). A run killed at any point after that leaves a
// readable file whose progress says which chunks are missing; readers call a
// file complete only when every chunk is, and the run renames it to FILE.h5
// only then.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "core/types.hpp"
#include "io/h5.hpp"

namespace tdsolve::io {

enum class ValueType { f32, f64, i64 };

struct Attr {
  std::string name;
  std::variant<std::string, std::uint64_t, double> value;
};

struct DatasetSpec {
  std::string name;  // relative to the root, e.g. "distances"
  ValueType type = ValueType::f32;
  std::vector<index_t> dims;  // empty: a scalar
  std::vector<Attr> attrs;
  std::vector<double> initial;  // extras known up front (written at creation)
  // An extra of 2 dimensions whose second grows (write_extra_columns): created
  // chunked with 0 columns, up to dims[1].
  bool columns_grow = false;
  // Strings (variable-length UTF-8), one per element of a 1-D dataset (a
  // coordinate, or an extra written whole at creation), in place of
  // `initial`.
  std::vector<std::string> text{};
};

struct ResultLayout {
  std::string path;    // where create_result_file writes and ResultWriter opens
  DatasetSpec result;  // the chunked result (name "": none, only extras)
  // A second dataset of the result's shape, written with the same ranges
  // (knn: /indices beside /distances); name "": none.
  DatasetSpec companion;
  // Results of a length known only at the end (knn --radius: /pairs,
  // /distances): created chunked and extensible with 0 rows (dims[0] is
  // ignored), grown and written once by write_list.
  std::vector<DatasetSpec> lists;
  std::vector<DatasetSpec> extras;  // small datasets of the result
  // 1-D datasets that are the coordinates of the axes named after them
  // (netCDF coordinate variables: hist's /r, /pair): written whole at
  // creation, before anything is attached to them.
  std::vector<DatasetSpec> coordinates;
  std::vector<index_t> chunk_offsets;  // K+1 offsets into the flattened result
  std::vector<Attr> root_attrs;        // identical on every rank
  std::vector<Attr> progress_attrs;    // on /progress, after chunks, dataset, elements
  bool store_points = false;           // create /points (points × features)
  index_t points = 0, features = 0;
  ValueType points_type = ValueType::f32;
  // The axis names of the result and the extras (attach_dimensions), by
  // dataset name; a dataset not named here gets none. /progress/done and
  // /progress/offsets are "progress/chunk" and "progress/chunk_edge", /points
  // ("point", "feature").
  std::map<std::string, std::vector<std::string>> dimensions;
};

// Names the axes of dataset `dset` with HDF5 dimension scales, as netCDF-4
// does for a dimension without coordinate values, so that xarray and
// h5netcdf open the file without phony_dims: axis a gets the scale dataset
// names[a] (a path from the root, e.g. "pair" or "progress/chunk"), created
// on first use as a "pure dimension" (float32 of the axis' length, never
// written, so it takes no storage; 0 long and unlimited where the axis is,
// its length then being that of the datasets on it) and attached to the
// axis. Only while building a file in memory (create_file_image): the
// parallel writer never opens the scale datasets. Throws H5Error when a
// scale of that name exists with another length.
void attach_dimensions(hid_t file, hid_t dset, const std::vector<std::string>& names);

// Creates the file and its structure (one process: rank 0). On failure it
// removes what it wrote and throws H5Error. Refuses to replace a file.
void create_result_file(const ResultLayout& layout);

// Builds a new HDF5 file in memory (HDF5's core driver, no backing store)
// with build(file), then writes it to `path` (which must not exist) as one
// image with plain POSIX calls and syncs it. A full disk or a refusing file
// system is then an ordinary H5Error that leaves nothing behind, never a
// half-closed HDF5 file (HDF5 would close it again inside MPI_Finalize and
// crash there). aligned: the result files' alignment for parallel writes.
void create_file_image(const std::string& path, const std::function<void(hid_t file)>& build,
                       bool aligned);

// What an existing result (or a stopped run's .partial) records: enough to
// tell whether a new run is the same job, and where it stopped. Throws
// InputError naming the file when it cannot be read or is not a result.
struct ExistingResult {
  std::string version, command, job, dataset;
  std::int64_t schema_version = 0;  // the file's (0: none recorded)
  std::vector<index_t> offsets;     // K+1
  std::vector<unsigned char> done;  // K flags
  bool has_points = false;
  // hist: /counts (a grouped run's G × bins), then /underflow, /overflow (G each)
  std::vector<std::int64_t> counts;
  std::vector<hsize_t> counts_shape;
  std::vector<std::int64_t> frame_counts;  // hist --frames --per-frame: /frame_counts
  std::vector<std::int64_t> sums;          // triplets: /progress/sums, row-major
  std::vector<index_t> sums_shape;         // its shape (slots, limbs kept)
  std::int64_t sums_first = 0;             // its `first_limb` attribute (0 when absent)
  std::vector<double> frame_energy;        // triplet --frames: /frame_energy
  index_t chunks_done() const;
  bool complete() const { return chunks_done() == done.size(); }
};
ExistingResult read_existing(const std::string& path);

// One dataset of an existing file as a job expects it (--resume).
struct ExpectedDataset {
  std::string name;              // from the root: "distances", "progress/done"
  hid_t type = H5I_INVALID_HID;  // its type in the file (H5Tequal), e.g. H5T_IEEE_F32LE
  std::vector<index_t> dims;     // empty: a scalar
  bool list = false;             // a list: the first axis unlimited, of any length
  bool columns = false;          // columns_grow: the second axis 0 .. dims[1]
};
// The dataset `e.name` of `file` exists and has e's type and shape; returns
// its dimensions. Throws InputError naming it (and what it is, what the job
// writes) otherwise. Reads only.
std::vector<hsize_t> check_dataset(hid_t file, const ExpectedDataset& e);
// The flags of `name` (uint8, checked by check_dataset first): InputError
// naming the first that is neither 0 nor 1 (a damaged byte), else the flags.
std::vector<unsigned char> read_flags(hid_t file, const std::string& name);

// --resume, before anything is written: every dataset of an existing result
// against the job's layout (as make_layout gives it for the file's plan):
// the result, its companion, the lists, the extras (those with values known
// up front, as /edges or /weights, hold them), /points, /progress/done (each
// flag 0 or 1) and /progress/offsets (the plan's). InputError naming the
// first dataset that differs. Reads only.
struct ResumableFile {
  std::vector<unsigned char> done;  // the flags, each 0 or 1
  // The rows every list holds when every flag is set (they are checked to
  // agree, with /count where the layout has one); -1 when the layout has no
  // lists or some flag is 0.
  std::int64_t list_rows = -1;
};
ResumableFile check_resumable(const std::string& path, const ResultLayout& layout);

class ResultWriter {
 public:
  // Collective: opens the file create_result_file made, for writing.
  // on_open (if given) gets the file's MPI-IO handle as soon as it is open,
  // before anything is written to it (the caller watches its writes:
  // guard_output_file, solver/driver.hpp).
  ResultWriter(MPI_Comm comm, const ResultLayout& layout,
               const std::function<void(MPI_File)>& on_open = {});
  ResultWriter(const ResultWriter&) = delete;
  ResultWriter& operator=(const ResultWriter&) = delete;

  // Collective: every rank calls it once per round, with count = 0 when it
  // has nothing this round. offset and count are in flattened elements; for
  // a 2-D result they cover whole rows.
  void write(index_t offset, index_t count, const void* data);
  // Collective: the same for the companion dataset.
  void write_companion(index_t offset, index_t count, const void* data);
  // Collective: list `name` grows to `total` rows and this rank writes
  // `rows` of them at row `at` (rows = 0: none).
  void write_list(const std::string& name, index_t total, index_t at, index_t rows,
                  const void* data);
  // Collective: data written so far reaches the storage (MPI_File_sync).
  void flush();
  // Collective: record chunk `chunk` of this rank as complete (has = false: none).
  void mark_done(bool has, index_t chunk);
  // Collective: rank 0 sets every flag to mask[c] (the others pass nullptr).
  void set_done(const unsigned char* mask);
  // Collective: rank 0 writes a whole extra dataset (the others pass nullptr).
  void write_extra(const std::string& name, const void* data);
  // Collective: the columns_grow extra `name` gets `cols` columns (every rank
  // passes the same; an older file's fixed shape must already have them),
  // its attributes `attrs` (every rank the same values), then rank 0 writes
  // all of it (the others pass nullptr).
  void write_extra_columns(const std::string& name, index_t cols, const std::vector<Attr>& attrs,
                           const void* data);
  // Collective: rank 0 supplies n × d values, the others pass nullptr.
  void write_points(const void* data);
  // Collective; flushes and reports failure.
  void close();
  // The ranks that write the file.
  MPI_Comm comm() const { return comm_; }

 private:
  ResultLayout layout_;
  MPI_Comm comm_;
  int rank_ = 0;
  Hid file_, values_, companion_, done_, points_, xfer_;
  hid_t mem_type_;
};

}  // namespace tdsolve::io
