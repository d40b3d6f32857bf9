// Trajectories: inputs of several frames, each n points in 3-D (or d), with
// the frame's simulation cell. Read one frame at a time:
//
// - LAMMPS text dump (FILE.dump, FILE.lammpstrj; `dump atom` or `custom`
//   with id and x y z, xu yu zu or scaled xs ys zs), orthorhombic or
//   triclinic (its bounds and tilt factors), atoms sorted by id (as
//   MDAnalysis reads a dump);
// - extended XYZ (FILE.xyz, FILE.extxyz): Lattice="ax ay az bx by bz cx cy
//   cz", Properties=...:pos:R:3, pbc="T T T" (a plain XYZ has no cell);
// - H5MD (FILE.h5 holding /h5md, FILE.h5:/particles/GROUP): position/value
//   frames × n × d, box/edges (fixed, or a value per frame), boundary;
// - an HDF5 dataset of 3 dimensions, frames × n × d (no cell).
//
// A cell is LAMMPS's: a = (lx, 0, 0), b = (xy, ly, 0), c = (xz, yz, lz).
//
// Per-atom labels (hist's --types, --exclude) are a column of a dump's
// ATOMS line, a one-column property of an XYZ file (a plain one's species),
// or an H5MD element of the particles group (species, id, ...): fixed (a
// dataset of n) or time dependent (value, frames × n).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/input.hpp"

namespace tdsolve::io {

struct Frame {
  PointSet points;
  Cell cell;
  std::int64_t step = -1;  // the frame's time step, -1: none recorded
  double time = 0;         // its time, NaN when none recorded
};

class Trajectory {
 public:
  virtual ~Trajectory() = default;
  virtual index_t frames() const = 0;
  // Frame k (0 <= k < frames()); InputError for one that is damaged or
  // differs from the first in its number of points or features.
  virtual Frame read(index_t k) = 0;
  // Frame k's cell alone (a dump's or XYZ file's as indexed: no atom read).
  virtual Cell cell(index_t k) { return read(k).cell; }
  // Frame k's number of points (as indexed; an HDF5 file's are all alike).
  virtual index_t atoms(index_t k) { return read(k).points.n; }
  // Frame k's values of a per-atom column (a dump's `type` or `mol`, an XYZ
  // file's `species`, an H5MD element), as text, in the order read(k)
  // returns the atoms (a dump's by id). InputError for a column it lacks.
  virtual std::vector<std::string> labels(index_t k, const std::string& column) = 0;
  // The columns labels() takes, for messages (frame 0's; none for a 3-D
  // dataset).
  virtual std::vector<std::string> columns() = 0;
  const std::string& source() const { return source_; }
  // What the file is, for messages: "a LAMMPS dump", "a 3-D dataset (frames
  // × n × d)", ...
  const std::string& format() const { return format_; }

 protected:
  [[noreturn]] void no_column(const std::string& column,
                              const std::vector<std::string>& columns) const;
  std::string source_, format_;
};

// Whether --input `spec` is a trajectory (one of the formats above). Does
// not throw for a file it cannot open (read_points says why).
bool is_trajectory(const std::string& spec);

// Opens `spec` (is_trajectory) and indexes its frames. InputError naming the
// file and the problem.
std::unique_ptr<Trajectory> open_trajectory(const std::string& spec);
// The process's one open_trajectory of `spec`: opened (a text file indexed)
// at the first call, the same object at the next while the file's size and
// modification time are unchanged — the input's reader, its labels and a
// run's later frames share one index pass.
std::shared_ptr<Trajectory> shared_trajectory(const std::string& spec);
// Forgets them (a run's end: the files closed while HDF5 is up).
void release_trajectories();

// The labels of --types or --exclude (`option`) SRC, one per atom of the
// input's `n`: a column of frame `frame` (as frame_index gives it) when
// `input` is a trajectory with that column, else FILE.h5:/dataset (a 1-D
// dataset of integers or strings; floats are read too) or a text file of
// labels separated by white space (`#` starts a comment). InputError when SRC is neither, for a
// count other than n, and for a label that is empty or holds '-' or ',' (they separate --pairs
// A-B,C-D).
std::vector<std::string> read_labels(const std::string& src, const std::string& input,
                                     index_t frame, index_t n, const char* option);

// The distinct labels of read_labels in order (as integers where all are:
// LAMMPS's types 1, 2, ..., 10; else as text), each point's code (its
// label's place among them) and the points of each.
struct LabelCodes {
  std::vector<std::string> names;
  std::vector<std::int32_t> code;
  std::vector<index_t> sizes;
};
LabelCodes code_labels(const std::vector<std::string>& labels);

// --frame K of F frames: 0 <= K < F, or -F <= K < 0 counted from the end (as
// Python); InputError otherwise.
index_t frame_index(std::int64_t k, index_t frames, const std::string& source);

// --frames START:STOP[:STEP], Python's slice (each part may be empty; STEP
// not 0): the frames it selects of `frames`, in order. UsageError for bad
// syntax, InputError when it selects none.
std::vector<index_t> select_frames(const std::string& range, index_t frames,
                                   const std::string& source);
// Checks the syntax alone (before any file is read).
void check_frame_range(const std::string& range);

}  // namespace tdsolve::io
