// A run over the frames of a trajectory (hist and adf --frames): which
// frames, the box each frame's periodic cell gives (an NPT run's change
// from frame to frame: each frame is taken in its own, and hist's /rdf
// divides by their mean volume, as MDAnalysis InterRDF does), the checks
// that every frame has the first's atoms (and a cell where it has one), and
// reading frame q. Shared by the commands that accumulate frames into one
// result.
#pragma once

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "io/trajectory.hpp"
#include "solver/commands/pairs.hpp"

namespace tdsolve {

class FrameRun {
 public:
  // Vets the box a frame's cell gives (the command's reach: a cutoff or
  // range within which the minimum image is certain); `where` names the
  // cell ("the triclinic cell of frame 3 of 'x.dump'").
  using CellCheck = std::function<void(const BoxOptions&, const std::string& where)>;

  // What the command calls its run ("hist --frames bins", "adf --frames
  // takes") in the message naming a frame that differs.
  explicit FrameRun(const char* doing) : doing_(doing) {}

  // Rank 0, each point set take_input sees: false for a later frame of a
  // run over frames (already checked before the run: nothing to take);
  // else true, and for load_problem's first frame of such a run the frames
  // (`per_frame` elements each: InputError beyond what tdsolve indexes).
  bool first(const io::PointSet& a, index_t per_frame) {
    if (a.frames.empty()) return frames_.empty();
    frames_ = a.frames;
    if (per_frame > 0 && frames_.size() > (index_t(1) << 62) / per_frame)
      throw InputError(std::to_string(frames_.size()) + " frames of " + std::to_string(per_frame) +
                       " elements each are more than tdsolve indexes (2^62)");
    return true;
  }

  // Rank 0, the first points: `box` becomes their frame's periodic cell
  // where none is given (input_box: --box none was not given), vetted by
  // check_cell. refuse: what the command says when it cannot take that
  // cell ("": it can; the caller looks at it with tilted()).
  void take_cell(const io::PointSet& a, BoxOptions* box, bool input_box, const std::string& refuse,
                 bool quiet, const CellCheck& check_cell) {
    const io::Cell& c = a.cell;
    if (box->dims > 0 || !input_box || !c.present) return;
    if (!c.periodic) {
      if (!quiet)
        std::fprintf(stderr,
                     "tdsolve: note: '%s' has a cell that is not periodic on every axis "
                     "(boundaries %s): taken without a box\n",
                     a.source.c_str(), c.boundary.c_str());
      return;
    }
    if (!refuse.empty()) throw InputError(refuse);
    *box = box_of(c);
    from_cell_ = true;
    cell_ = c;
    check_cell(*box, cell_name(c, "'" + a.source + "'"));
  }
  static bool tilted(const io::Cell& c) {
    return c.tilt[0] != 0 || c.tilt[1] != 0 || c.tilt[2] != 0;
  }
  // The box of a periodic cell.
  static BoxOptions box_of(const io::Cell& c) {
    BoxOptions b;
    b.dims = 3;
    std::copy(c.lengths, c.lengths + 3, b.lengths);
    std::copy(c.tilt, c.tilt + 3, b.tilt);
    b.triclinic = tilted(c);
    return b;
  }
  // Whether two boxes are one cell (the same lengths and tilts).
  static bool same_cell(const BoxOptions& a, const BoxOptions& b) {
    return a.dims == b.dims && std::equal(a.lengths, a.lengths + 3, b.lengths) &&
           std::equal(a.tilt, a.tilt + 3, b.tilt);
  }
  // "(lx,ly,lz; tilt xy,xz,yz)", for messages.
  static std::string cell_text(const BoxOptions& b) {
    return "(" + box_text(b) + "; tilt " + tilt_text(b) + ")";
  }

  // Rank 0, a later frame of a run over frames (take_input's points): the
  // box becomes its cell where the boxes are the frames' cells.
  void next_cell(const io::PointSet& a, BoxOptions* box) const {
    if (from_cell_ && a.cell.present && a.cell.periodic) *box = box_of(a.cell);
  }

  // The volume /rdf divides by: the mean of the frames' cells' volumes
  // where the boxes are the frames' cells and differ, else box's.
  double volume(const BoxOptions& box) const {
    if (volumes_.empty()) return box.volume();
    double sum = 0;
    for (double v : volumes_)
      sum += v;
    return sum / double(volumes_.size());
  }

  // Rank 0, a run over frames: every frame's number of atoms is the first
  // frame's, and unless --box gives the box (or --box none drops it) each
  // has a periodic cell where the first has one, and none where it has
  // none, each cell passing check_cell (the command's reach; `where` names
  // the frame): an InputError before the file exists, naming the first
  // frame that fails. Cells that differ (an NPT run's) are each frame's box.
  void check(index_t n, const InputOptions& in, const BoxOptions& box, bool input_box,
             const CellCheck& check_cell) {
    volumes_.clear();
    if (frames_.size() < 2) return;
    const bool cells = input_box && (from_cell_ || box.dims == 0);
    open(in);
    bool differ = false;
    std::vector<double> volumes = {box.volume()};
    const auto differs = [&](index_t q, const std::string& has, const std::string& first,
                             const char* what) {
      return InputError("frame " + std::to_string(frames_[q]) + " of '" + in.input + "' has " +
                        has + " where its frame " + std::to_string(frames_[0]) + " has " + first +
                        ": " + doing_ + " frames of " + what);
    };
    for (size_t q = 1; q < frames_.size(); ++q) {
      if (const index_t m = trajectory_->atoms(frames_[q]); m != n)
        throw differs(q, std::to_string(m) + " atoms", std::to_string(n), "one set of atoms");
      if (!cells) continue;
      const io::Cell c = trajectory_->cell(frames_[q]);
      const bool periodic = c.present && c.periodic;
      if (from_cell_ != periodic)
        throw differs(q, periodic ? "the cell " + cell_text(c) : std::string("no periodic cell"),
                      from_cell_ ? cell_text(cell_) : std::string("none"),
                      "periodic cells throughout or none (give --box to take them all in one "
                      "box, or --box none)");
      if (!periodic) continue;
      const BoxOptions b = box_of(c);
      check_cell(b, cell_name(c, "frame " + std::to_string(frames_[q]) + " of '" + in.input + "'"));
      volumes.push_back(b.volume());
      differ = differ || !same_cell(b, box_of(cell_));
    }
    if (differ) volumes_ = volumes;
  }

  // Rank 0: the points of the run's frame q, as read.
  io::PointSet read(index_t q, const InputOptions& in) {
    open(in);
    io::Frame f = trajectory_->read(frames_[q]);
    f.points.source = in.input + ", frame " + std::to_string(frames_[q]);
    io::arrange_points(f.points, in.transpose, in.columns);
    io::check_finite(f.points);
    return std::move(f.points);
  }

  void broadcast(MPI_Comm comm) {
    bcast_vector(comm, &frames_);
    bcast_vector(comm, &volumes_);
  }
  index_t count() const { return frames_.size(); }
  const std::vector<index_t>& frames() const { return frames_; }

  // "F frames of the input: K0, K1, K2, ..., the last three": what the
  // identity records (a slice's frames are its first, its step and its count).
  std::string text() const {
    std::string t = std::to_string(frames_.size()) + " frames of the input: ";
    for (size_t i = 0; i < frames_.size(); ++i) {
      if (i == 3 && frames_.size() > 6) {
        t += "..., ";
        i = frames_.size() - 3;
      }
      t += std::to_string(frames_[i]) + (i + 1 < frames_.size() ? ", " : "");
    }
    return t;
  }

 private:
  void open(const InputOptions& in) {
    if (!trajectory_) trajectory_ = io::shared_trajectory(in.input);  // the input's index
  }
  // "the (triclinic) cell of WHAT", for messages.
  static std::string cell_name(const io::Cell& c, const std::string& what) {
    return std::string(tilted(c) ? "the triclinic cell of " : "the cell of ") + what;
  }
  static std::string cell_text(const io::Cell& c) { return cell_text(box_of(c)); }

  const char* doing_;
  std::vector<index_t> frames_;                 // the input's frames the run takes, in order
  std::shared_ptr<io::Trajectory> trajectory_;  // rank 0, a run over frames
  bool from_cell_ = false;                      // the box is the first frame's cell
  io::Cell cell_;                               // ... that cell
  std::vector<double> volumes_;  // the frames' cells' volumes, where they differ (else none)
};

}  // namespace tdsolve
