// Options shared by the commands, parsed once (solver/cli/options.cpp) into these
// structs and enums; the commands never see strings they must re-check.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.hpp"

#include "solver/problem.hpp"
#include "solver/progress.hpp"

namespace tdsolve {

enum class BackendKind { automatic, cpu, cuda };

// --input SRC | --generate SPEC (and for cross, --with | --with-generate).
struct InputOptions {
  std::string input, generate;
  bool transpose = false;        // the stored array is d × n
  std::vector<index_t> columns;  // the columns to use (empty: all)
  // --frame K of a trajectory (io/trajectory.hpp); negative: from the end.
  std::int64_t frame = 0;
  bool frame_given = false;
  bool frame_if_trajectory = false;  // --with: --frame applies when it is a trajectory
  std::string frames;                // --frames START:STOP[:STEP] (hist): "" none
  const std::string& spec() const { return input.empty() ? generate : input; }
};

struct OutputOptions {
  std::string output;
  bool overwrite = false;
  bool resume = false;  // continue FILE.h5.partial (or report FILE.h5 complete)
  bool store_points = false;
};

struct ComputeOptions {
  Metric metric = Metric::euclidean;
  // The metric's parameters (main.cpp checks which metric takes which).
  double p = 2;          // --p: minkowski's order, > 0 (inf allowed)
  double base = 0;       // --base: jensenshannon's logarithm base (0: natural)
  std::string weights;   // --weights: a vector source or an inline list ("": none)
  std::string variance;  // --variance: seuclidean's V, the same forms ("": computed)
  std::string vi;        // --vi: mahalanobis's VI, a d × d matrix file ("": computed)
  bool fp64 = false;
  BackendKind backend = BackendKind::automatic;
  MapKind map = MapKind::lambda;
  index_t block = 128;
  bool block_given = false;     // --block on the command line or in a config
  double chunk_mb = 64;         // bench: 0 = as large as memory allows
  bool chunk_mb_given = false;  // --chunk-mb on the command line or in a config
  int threads = 0;              // 0: OMP_NUM_THREADS, else cores / node-local ranks
  int device = -1;
  CullMode cull = CullMode::off;  // --cull (commands with a cutoff; others: off)
};

struct RunOptions {
  ProgressMode progress = ProgressMode::log;
  bool quiet = false;
  double max_hours = 0;  // stop cleanly before this much wall time (0: no limit)
  std::string stats;     // JSON timing summary path, or ""
  std::string command;   // argv as one line, recorded in the file
  // argv without --overwrite and with --resume: the line that continues
  // this run, for the hints of a run that stops or fails.
  std::string resume_command;
  std::string config;  // the --config file, or ""
  // Every option's final value, as a config file; recorded in the file.
  std::string effective;
};

// A periodic box (--box, --tilt): hist, knn --radius, collide, triplet.
// Orthorhombic: one length a coordinate, minimum image per coordinate.
// Triclinic (3-D, euclidean and sqeuclidean): LAMMPS's cell a = (lx, 0, 0),
// b = (xy, ly, 0), c = (xz, yz, lz), minimum image as LAMMPS's
// Domain::minimum_image (z, then y, then x: exact for every pair closer than
// half the cell's shortest width, which the commands require of a cutoff).
struct BoxOptions {
  int dims = 0;  // 0: none
  double lengths[kMaxBoxDims] = {};
  bool triclinic = false;  // a tilt is not 0
  double tilt[3] = {};     // xy, xz, yz
  double volume() const {
    double v = 1;
    for (int k = 0; k < dims; ++k)
      v *= lengths[k];
    return v;
  }
  // The distance between the cell's opposite faces across axis k (an
  // orthorhombic box: its length), as the culled domain takes it.
  double width(int k) const {
    if (!triclinic) return lengths[k];
    const double cell[6] = {lengths[0], lengths[1], lengths[2], tilt[0], tilt[1], tilt[2]};
    double n[3][3], w[3];
    cell_normals(cell, n, w);
    return w[k];
  }
  // Half the shortest width: the largest cutoff whose pairs have one image.
  double half_width() const {
    double w = INFINITY;
    for (int k = 0; k < dims; ++k)
      w = std::min(w, width(k));
    return w / 2;
  }
};

struct HistOptions {
  index_t bins = 0;
  double lo = 0, hi = 0;
  BoxOptions box;
  // Without --box: a trajectory frame's periodic cell is the box (--box
  // none: no box whatever the input says).
  bool input_box = true;
  std::string frames;      // --frames: a run over a trajectory's frames ("" none)
  bool per_frame = false;  // --per-frame: each frame's counts too (/frame_counts)
  // Partial histograms: --types SRC (each point's type), --pairs A-B,... (the
  // type pairs, "" every one), --exclude SRC (each point's molecule) or
  // --exclude-block N (molecules of N consecutive points; 0: none).
  std::string types, pairs, exclude;
  index_t exclude_block = 0;
  std::string norm;  // --norm rdf|density|none ("": rdf where there is a box)
  bool grouped() const { return !types.empty() || !exclude.empty() || exclude_block > 0; }
};

// triplet: the three-body potential and what to store.
// atm --nu-types: ν of one unordered type triple, as named (types as text).
struct NuTriple {
  std::string a, b, c;
  double nu = 0;
};

struct TripletOptions {
  PotentialSpec potential;         // --potential and its parameters (atm: cutoffs 0 = none)
  std::string types;               // atm --types SRC: each point's type (with --nu-types)
  std::vector<NuTriple> nu_types;  // atm --nu-types, as given (empty: one ν, --nu)
  bool store_triplets = false;
  double store_limit_gb = 16;  // --store-triplets refused above this many GB (0: no limit)
  bool input_box = true;       // without --box: a trajectory frame's periodic cell (--box none: no)
  std::string frames;          // --frames ("": one point set)
  TripletKernel kernel = TripletKernel::potential;  // bench: dummy3 is TripletKernel::dummy
};

// knn: the k nearest other points of every point, or (radius > 0) every
// pair within a distance.
struct KnnOptions {
  index_t k = 0;       // 0: --radius
  double radius = -1;  // < 0: --k
};

// "1,0.5,2": true and the numbers when every comma-separated part is a
// number (an inline --weights or --variance); false for a file name.
inline bool parse_number_list(const std::string& text, std::vector<double>* out) {
  out->clear();
  size_t at = 0;
  while (at <= text.size()) {
    const size_t end = std::min(text.find(',', at), text.size());
    const std::string part = text.substr(at, end - at);
    char* stop = nullptr;
    const double v = std::strtod(part.c_str(), &stop);
    if (part.empty() || *stop) return false;
    out->push_back(v);
    at = end + 1;
  }
  return true;
}

// Weights: finite, >= 0, not all 0; variances: finite and > 0. UsageError
// (usage: an inline list) or InputError (a file's), naming `what`.
inline void vector_error(const std::string& msg, bool usage) {
  if (usage) throw UsageError(msg);
  throw InputError(msg);
}
inline void check_weights(const std::vector<double>& w, const std::string& what, bool usage) {
  bool any = false;
  for (size_t k = 0; k < w.size(); ++k) {
    if (!std::isfinite(w[k]) || w[k] < 0)
      vector_error(what + ": weight " + std::to_string(k) + " is " + std::to_string(w[k]) +
                       "; weights must be finite and >= 0",
                   usage);
    any = any || w[k] > 0;
  }
  if (!any) vector_error(what + ": every weight is 0", usage);
}
inline void check_variance(const std::vector<double>& v, const std::string& what, bool usage) {
  for (size_t k = 0; k < v.size(); ++k)
    if (!std::isfinite(v[k]) || !(v[k] > 0))
      vector_error(what + ": variance " + std::to_string(k) + " is " + std::to_string(v[k]) +
                       "; seuclidean divides by sqrt(V), so every V must be finite and > 0",
                   usage);
}

// adf: LAMMPS compute adf's ADFs. One per --triples entry (I, J, K: a
// type label of --types or "*", every type), or with --cutoff RC one of
// every type, both legs within [0, RC].
struct AdfTriple {
  std::string i, j, k;
  double rj_in = 0, rj_out = 0, rk_in = 0, rk_out = 0;
};

struct AdfOptions {
  index_t bins = 0;
  std::string ordinate = "degree";  // degree, radian or cosine (LAMMPS's ordinate)
  std::vector<AdfTriple> triples;   // as given, or the one of --cutoff
  bool typed = false;               // --triples given (2-D /counts, /triple)
  std::string types;                // --types SRC ("": one type)
  BoxOptions box;
  bool input_box = true;   // without --box: a trajectory frame's periodic cell (--box none: no)
  std::string frames;      // --frames ("": one point set)
  bool per_frame = false;  // --per-frame: each frame's counts too (/frame_counts)
  double outer() const {
    double r = 0;
    for (const AdfTriple& t : triples)
      r = std::max(r, std::max(t.rj_out, t.rk_out));
    return r;
  }
};

// What one command of the pair and triplet family asks for
// (solver/commands/pairs.hpp); each reads the groups it offers.
struct CommandOptions {
  InputOptions in, with;  // `with`: cross only
  OutputOptions out;
  ComputeOptions compute;
  RunOptions run;
  HistOptions hist;        // hist only
  TripletOptions triplet;  // triplet only
  AdfOptions adf;          // adf only
  KnnOptions knn;          // knn only
  BoxOptions box;          // knn --radius, collide (hist has its own, in hist)
};

// bench --problem dummy|edm|collide: the map laboratory (solver/lab/lab.hpp).
struct LabOptions {
  bool active = false;
  std::string problem;            // dummy, edm or collide
  std::vector<std::string> maps;  // names, as given (checked by run_lab)
  std::vector<index_t> sizes;     // n
  std::vector<int> features;      // edm: 1-4; collide: the dimension, 1 or 3; empty: default
  int block = 16;                 // B: B × B threads a block
  bool check = true;              // the coverage check after the timing
  bool map_once = false;          // the map evaluated by one thread a block
  BackendKind backend = BackendKind::automatic;
};

}  // namespace tdsolve
