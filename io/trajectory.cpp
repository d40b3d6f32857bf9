#include "io/trajectory.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <numeric>
#include <sstream>
#include <unordered_map>

#include <sys/stat.h>

#include "core/error.hpp"
#include "io/h5.hpp"

namespace tdsolve::io {

namespace {

bool dump_name(const std::string& l) {
  return ends_with(l, ".dump") || ends_with(l, ".lammpstrj") || ends_with(l, ".lammpsdump");
}
bool xyz_name(const std::string& l) {
  return ends_with(l, ".xyz") || ends_with(l, ".extxyz");
}

// White space as `>>` and isspace see it in the C locale.
bool blank(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

// The words of a line, split at white space as `>>` splits them; without a
// stream a line (a trajectory's atom lines are most of its reading).
std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> w;
  const size_t n = line.size();
  for (size_t i = 0; i < n;) {
    while (i < n && blank(line[i]))
      ++i;
    const size_t start = i;
    while (i < n && !blank(line[i]))
      ++i;
    if (i > start) w.emplace_back(line, start, i - start);
  }
  return w;
}

bool number(const std::string& s, double* v) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  *v = std::strtod(s.c_str(), &end);
  return *end == '\0' && errno != ERANGE;
}

bool integer(const std::string& s, long long* v) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  *v = std::strtoll(s.c_str(), &end, 10);
  return *end == '\0' && errno != ERANGE;
}

std::string g17(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// Names for messages: "id type x y z".
std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& name : names)
    s += (s.empty() ? "" : " ") + name;
  return s;
}

// A text trajectory: the byte offset of each frame, found by one pass.
class TextTrajectory : public Trajectory {
 public:
  index_t frames() const override { return offsets_.size(); }
  // As indexed; a count the index could not read: reading the frame says why.
  index_t atoms(index_t k) override { return atoms_[k] == kUnknown ? read(k).points.n : atoms_[k]; }

 protected:
  static constexpr index_t kUnknown = ~index_t(0);
  void open_file(const std::string& path) {
    source_ = path;
    in_.open(path, std::ios::binary);
    if (!in_) throw InputError("cannot open input '" + path + "': " + std::strerror(errno));
  }
  // The next line of frame k (its line number for messages); false at the end.
  bool line(std::string* s) {
    if (!std::getline(in_, *s)) return false;
    if (!s->empty() && s->back() == '\r') s->pop_back();
    ++line_no_;
    return true;
  }
  void seek(index_t k) {
    in_.clear();
    in_.seekg(static_cast<std::streamoff>(offsets_[k]));
    line_no_ = line_numbers_[k] - 1;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError("input '" + source_ + "' line " + std::to_string(line_no_) + ": " + what);
  }
  void check_same(const PointSet& p, index_t k) const {
    if (k == 0 || atoms_[0] == kUnknown) return;
    if (p.n != atoms_[0])
      throw InputError("input '" + source_ + "': frame " + std::to_string(k) + " has " +
                       std::to_string(p.n) + " atoms where frame 0 has " +
                       std::to_string(atoms_[0]) +
                       " (tdsolve reads trajectories of a fixed number of atoms)");
  }

  std::ifstream in_;
  std::vector<std::uint64_t> offsets_;
  std::vector<index_t> line_numbers_;
  std::vector<index_t> atoms_;  // each frame's number of atoms, as indexed (kUnknown)
  index_t line_no_ = 0;
};

// ---- LAMMPS text dump ----------------------------------------------------------------

class DumpTrajectory final : public TextTrajectory {
 public:
  explicit DumpTrajectory(const std::string& path) {
    format_ = "a LAMMPS dump";
    open_file(path);
    std::string s;
    std::uint64_t at = 0;
    index_t no = 0;
    int box_lines = 0;  // the box's own lines still to keep (cell())
    bool count_next = false;
    while (std::getline(in_, s)) {
      ++no;
      if (count_next) {
        long long n = -1;
        const std::vector<std::string> w = words(s);
        atoms_.back() = !w.empty() && integer(w[0], &n) && n >= 0 ? index_t(n) : kUnknown;
        count_next = false;
      } else if (box_lines > 0) {
        boxes_.back()[4 - box_lines--] = s;
      } else if (s.rfind("ITEM: TIMESTEP", 0) == 0) {
        offsets_.push_back(at);
        line_numbers_.push_back(no);
        boxes_.emplace_back();
        atoms_.push_back(kUnknown);
      } else if (s.rfind("ITEM: NUMBER OF ATOMS", 0) == 0 && !atoms_.empty()) {
        count_next = true;
      } else if (s.rfind("ITEM: BOX BOUNDS", 0) == 0 && !boxes_.empty()) {
        boxes_.back()[0] = s;
        box_lines = 3;
      }
      at += s.size() + 1;
    }
    if (offsets_.empty())
      throw InputError("input '" + path +
                       "' is no LAMMPS dump: it has no 'ITEM: TIMESTEP' line (tdsolve reads "
                       "text dumps, not binary ones)");
    read(0);  // a file whose first frame does not read is refused when opened
  }

  Frame read(index_t k) override {
    const Head h = head(k);
    Frame f;
    f.step = h.step;
    f.time = NAN;
    double lo[3];
    Cell& c = f.cell;
    c = parse_box(h.box, lo);
    int xyz[3] = {-1, -1, -1};
    bool scaled = false;
    for (const auto& names : {std::vector<const char*>{"x", "y", "z"},
                              {"xu", "yu", "zu"},
                              {"xs", "ys", "zs"},
                              {"xsu", "ysu", "zsu"}}) {
      int found[3] = {h.col(names[0]), h.col(names[1]), h.col(names[2])};
      if (found[0] >= 0 && found[1] >= 0 && found[2] >= 0) {
        std::copy(found, found + 3, xyz);
        scaled = names[0][1] == 's';
        break;
      }
    }
    if (xyz[0] < 0)
      fail("the dump's columns '" + h.line.substr(std::min<size_t>(h.line.size(), 12)) +
           "' hold no coordinates (x y z, xu yu zu, xs ys zs or xsu ysu zsu)");
    const int id = h.col("id");
    const size_t need = static_cast<size_t>(std::max({xyz[0], xyz[1], xyz[2], id})) + 1;
    PointSet& p = f.points;
    p.n = static_cast<index_t>(h.atoms);
    p.d = 3;
    p.source = source_;
    p.values.resize(p.n * 3);
    std::vector<long long> ids(id >= 0 ? p.n : 0);
    for (index_t i = 0; i < p.n; ++i) {
      const std::vector<std::string> w = atom(h, i, need);
      double v[3];
      for (int a = 0; a < 3; ++a)
        if (!number(w[xyz[a]], &v[a])) fail("'" + w[xyz[a]] + "' is not a number");
      if (scaled) {  // LAMMPS's fractional coordinates
        const double x = lo[0] + v[0] * c.lengths[0] + v[1] * c.tilt[0] + v[2] * c.tilt[1];
        const double y = lo[1] + v[1] * c.lengths[1] + v[2] * c.tilt[2];
        const double z = lo[2] + v[2] * c.lengths[2];
        v[0] = x;
        v[1] = y;
        v[2] = z;
      }
      std::copy(v, v + 3, &p.values[i * 3]);
      if (id >= 0) ids[i] = atom_id(w[id]);
    }
    if (id >= 0) {
      const std::vector<index_t> order = id_order(ids, k);
      std::vector<double> sorted(p.values.size());
      for (index_t i = 0; i < p.n; ++i)
        std::copy_n(&p.values[order[i] * 3], 3, &sorted[i * 3]);
      p.values.swap(sorted);
    }
    p.cell = c;
    check_same(p, k);
    return f;
  }

  std::vector<std::string> labels(index_t k, const std::string& column) override {
    const Head h = head(k);
    const int c = h.col(column.c_str()), id = h.col("id");
    if (c < 0) no_column(column, h.cols);
    std::vector<std::string> out(h.atoms);
    std::vector<long long> ids(id >= 0 ? out.size() : 0);
    for (index_t i = 0; i < out.size(); ++i) {
      std::vector<std::string> w = atom(h, i, static_cast<size_t>(std::max(c, id)) + 1);
      if (id >= 0) ids[i] = atom_id(w[id]);
      out[i] = std::move(w[c]);
    }
    if (id < 0) return out;
    const std::vector<index_t> order = id_order(ids, k);
    std::vector<std::string> sorted(out.size());
    for (index_t i = 0; i < out.size(); ++i)
      sorted[i] = std::move(out[order[i]]);
    return sorted;
  }

  std::vector<std::string> columns() override { return head(0).cols; }

  Cell cell(index_t k) override {
    if (boxes_[k][0].empty()) return read(k).cell;  // a frame the index could not follow
    line_no_ = line_numbers_[k] + 4;
    double lo[3];
    return parse_box(boxes_[k], lo);
  }

 private:
  // ITEM: BOX BOUNDS [xy xz yz] B B B and its three lines: the cell, and
  // the origin (lo) of the scaled coordinates.
  Cell parse_box(const std::array<std::string, 4>& box, double lo[3]) const {
    std::vector<std::string> head = words(box[0].substr(16));
    const bool tilted = head.size() >= 3 && head[0] == "xy" && head[1] == "xz" && head[2] == "yz";
    if (tilted) head.erase(head.begin(), head.begin() + 3);
    double hi[3], tilt[3] = {0, 0, 0};
    for (int a = 0; a < 3; ++a) {
      const std::vector<std::string> w = words(box[a + 1]);
      if (w.size() < (tilted ? 3u : 2u) || !number(w[0], &lo[a]) || !number(w[1], &hi[a]) ||
          (tilted && !number(w[2], &tilt[a])))
        fail("a box bounds line is not " + std::string(tilted ? "'lo hi tilt'" : "'lo hi'") +
             ": '" + box[a + 1].substr(0, 60) + "'");
    }
    // A triclinic dump gives the bounding box of the tilted cell and the
    // tilt factors (LAMMPS's Howto triclinic).
    if (tilted) {
      const double xy = tilt[0], xz = tilt[1], yz = tilt[2];
      lo[0] -= std::min({0.0, xy, xz, xy + xz});
      hi[0] -= std::max({0.0, xy, xz, xy + xz});
      lo[1] -= std::min(0.0, yz);
      hi[1] -= std::max(0.0, yz);
    }
    Cell c;
    c.present = true;
    c.periodic = head.size() == 3 && head[0] == "pp" && head[1] == "pp" && head[2] == "pp";
    c.boundary = head.empty() ? "unknown"
                              : head[0] + (head.size() > 1 ? " " + head[1] : "") +
                                    (head.size() > 2 ? " " + head[2] : "");
    for (int a = 0; a < 3; ++a) {
      c.lengths[a] = hi[a] - lo[a];
      if (!(c.lengths[a] > 0)) fail("the box has a length <= 0 along axis " + std::to_string(a));
      c.tilt[a] = tilt[a];
    }
    return c;
  }

  std::vector<std::array<std::string, 4>> boxes_;  // each frame's box lines, as indexed

  // Frame k's lines before its atoms.
  struct Head {
    long long step = 0, atoms = 0;
    std::array<std::string, 4> box;  // ITEM: BOX BOUNDS and its three lines
    std::string line;                // ITEM: ATOMS ...
    std::vector<std::string> cols;   // the names it gives the columns
    int col(const char* name) const {
      const auto it = std::find(cols.begin(), cols.end(), name);
      return it == cols.end() ? -1 : static_cast<int>(it - cols.begin());
    }
  };
  Head head(index_t k) {
    seek(k);
    Head h;
    std::string s;
    line(&s);  // ITEM: TIMESTEP
    if (!line(&s) || !integer(words(s).empty() ? "" : words(s)[0], &h.step))
      fail("no time step after ITEM: TIMESTEP");
    if (!line(&s) || s.rfind("ITEM: NUMBER OF ATOMS", 0) != 0)
      fail("expected 'ITEM: NUMBER OF ATOMS'");
    if (!line(&s) || !integer(words(s).empty() ? "" : words(s)[0], &h.atoms) || h.atoms < 1)
      fail("no positive number of atoms");
    if (!line(&h.box[0]) || h.box[0].rfind("ITEM: BOX BOUNDS", 0) != 0)
      fail("expected 'ITEM: BOX BOUNDS'");
    for (int a = 1; a < 4; ++a)
      if (!line(&h.box[a])) fail("the box bounds end early");
    if (!line(&h.line) || h.line.rfind("ITEM: ATOMS", 0) != 0) fail("expected 'ITEM: ATOMS'");
    h.cols = words(h.line.substr(11));
    return h;
  }

  // The next atom line of a frame (atom i of `h`'s): its words, at least `need`.
  std::vector<std::string> atom(const Head& h, index_t i, size_t need) {
    std::string s;
    if (!line(&s))
      fail("the file ends after " + std::to_string(i) + " of the frame's " +
           std::to_string(h.atoms) + " atoms");
    std::vector<std::string> w = words(s);
    if (w.size() < need)
      fail("an atom line has " + std::to_string(w.size()) + " columns where the ATOMS line names " +
           std::to_string(h.cols.size()));
    return w;
  }
  long long atom_id(const std::string& w) const {
    long long v = 0;
    if (!integer(w, &v)) fail("atom id '" + w + "' is not an integer");
    return v;
  }

  // The order of frame k's atoms by id (read() and labels() alike).
  std::vector<index_t> id_order(const std::vector<long long>& ids, index_t k) const {
    std::vector<index_t> order(ids.size());
    std::iota(order.begin(), order.end(), index_t(0));
    std::stable_sort(order.begin(), order.end(),
                     [&](index_t a, index_t b) { return ids[a] < ids[b]; });
    for (index_t i = 1; i < order.size(); ++i)
      if (ids[order[i]] == ids[order[i - 1]])
        throw InputError("input '" + source_ + "': frame " + std::to_string(k) + " holds atom id " +
                         std::to_string(ids[order[i]]) + " twice");
    return order;
  }
};

// ---- (extended) XYZ --------------------------------------------------------------------

// key=value and key="a b c" pairs of an extended XYZ comment line.
std::map<std::string, std::string> xyz_keys(const std::string& s) {
  std::map<std::string, std::string> kv;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i])))
      ++i;
    const size_t k0 = i;
    while (i < s.size() && s[i] != '=' && !std::isspace(static_cast<unsigned char>(s[i])))
      ++i;
    std::string key = s.substr(k0, i - k0), value;
    if (i < s.size() && s[i] == '=') {
      ++i;
      if (i < s.size() && (s[i] == '"' || s[i] == '\'')) {
        const char q = s[i++];
        const size_t v0 = i;
        while (i < s.size() && s[i] != q)
          ++i;
        value = s.substr(v0, i - v0);
        if (i < s.size()) ++i;
      } else {
        const size_t v0 = i;
        while (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i])))
          ++i;
        value = s.substr(v0, i - v0);
      }
    }
    if (!key.empty()) kv[lower(key)] = value;
  }
  return kv;
}

class XyzTrajectory final : public TextTrajectory {
 public:
  explicit XyzTrajectory(const std::string& path) {
    format_ = "an XYZ file";
    open_file(path);
    std::string s;
    std::uint64_t at = 0;
    index_t no = 0;
    while (std::getline(in_, s)) {
      ++no;
      const std::vector<std::string> w = words(s);
      if (w.empty()) {  // blank lines between frames (or at the end)
        at += s.size() + 1;
        continue;
      }
      long long n = 0;
      if (w.size() != 1 || !integer(w[0], &n) || n < 1)
        throw InputError("input '" + path + "' line " + std::to_string(no) +
                         ": expected a frame's number of atoms, got '" + s.substr(0, 60) + "'");
      offsets_.push_back(at);
      line_numbers_.push_back(no);
      atoms_.push_back(static_cast<index_t>(n));
      at += s.size() + 1;
      for (long long i = 0; i < n + 1; ++i) {
        if (!std::getline(in_, s))
          throw InputError("input '" + path + "': the frame that starts at line " +
                           std::to_string(line_numbers_.back()) + " ends after " +
                           std::to_string(std::max(0LL, i - 1)) + " of its " + std::to_string(n) +
                           " atoms");
        ++no;
        at += s.size() + 1;
        if (i == 0) comments_.push_back(s);
      }
    }
    if (offsets_.empty()) throw InputError("input '" + path + "' holds no XYZ frame");
    read(0);  // a file whose first frame does not read is refused when opened
  }

  Cell cell(index_t k) override {
    line_no_ = line_numbers_[k] + 1;
    return cell_of(xyz_keys(comments_[k]));
  }
  Cell cell_of(const std::map<std::string, std::string>& kv) const {
    Cell c;
    if (const auto it = kv.find("lattice"); it != kv.end()) {
      std::vector<double> v;
      for (const std::string& w : words(it->second)) {
        double x;
        if (!number(w, &x)) fail("Lattice=\"" + it->second + "\" is not 9 numbers");
        v.push_back(x);
      }
      if (v.size() != 9) fail("Lattice=\"" + it->second + "\" is not 9 numbers");
      if (v[1] != 0 || v[2] != 0 || v[5] != 0)
        fail("Lattice=\"" + it->second +
             "\": tdsolve takes a cell with a along x and b in the xy plane (ay = az = bz = 0), "
             "as LAMMPS lays one out");
      c.present = true;
      c.lengths[0] = v[0];
      c.lengths[1] = v[4];
      c.lengths[2] = v[8];
      c.tilt[0] = v[3];
      c.tilt[1] = v[6];
      c.tilt[2] = v[7];
      if (!(v[0] > 0 && v[4] > 0 && v[8] > 0))
        fail("Lattice=\"" + it->second + "\" is a degenerate cell (ax, by, cz must be > 0)");
      const auto pbc = kv.find("pbc");
      c.boundary = pbc == kv.end() ? "T T T" : pbc->second;
      const std::vector<std::string> b = words(c.boundary);
      c.periodic = b.size() == 3 && std::all_of(b.begin(), b.end(), [](const std::string& x) {
                     const std::string l = lower(x);
                     return l == "t" || l == "true" || l == "1";
                   });
    }
    return c;
  }

  std::vector<std::string> comments_;  // each frame's comment line, as indexed

  Frame read(index_t k) override {
    const std::map<std::string, std::string> kv = head(k);
    Frame f;
    f.time = NAN;
    std::string s;
    size_t pos = 0;
    bool found = false;
    for (const Property& q : properties(kv))
      if (lower(q.name) == "pos") {
        if (q.count != 3)
          fail("Properties: pos has " + std::to_string(q.count) + " columns, not 3");
        pos = q.column;
        found = true;
        break;
      }
    if (!found) fail("Properties='" + kv.at("properties") + "' has no pos:R:3");
    f.cell = cell_of(kv);
    if (const auto it = kv.find("time"); it != kv.end()) number(it->second, &f.time);
    if (const auto it = kv.find("step"); it != kv.end()) {
      long long st;
      if (integer(it->second, &st)) f.step = st;
    }
    PointSet& p = f.points;
    p.n = atoms_[k];
    p.d = 3;
    p.source = source_;
    p.values.resize(p.n * 3);
    for (index_t i = 0; i < p.n; ++i) {
      line(&s);
      const std::vector<std::string> w = words(s);
      if (w.size() < pos + 3)
        fail("an atom line has " + std::to_string(w.size()) + " columns; its position needs " +
             std::to_string(pos + 3));
      for (int a = 0; a < 3; ++a)
        if (!number(w[pos + a], &p.values[i * 3 + a])) fail("'" + w[pos + a] + "' is not a number");
    }
    p.cell = f.cell;
    check_same(p, k);
    return f;
  }

  std::vector<std::string> labels(index_t k, const std::string& column) override {
    const std::vector<Property> props = properties(head(k));
    const auto q = std::find_if(props.begin(), props.end(),
                                [&](const Property& x) { return x.name == column; });
    if (q == props.end()) no_column(column, label_names(props));
    if (q->count != 1) {
      const std::vector<std::string> names = label_names(props);
      throw InputError("input '" + source_ + "': property '" + column + "' has " +
                       std::to_string(q->count) + " columns where a label column has one (" +
                       (names.empty() ? "it has none" : "its columns: " + joined(names)) + ")");
    }
    std::vector<std::string> out(atoms_[k]);
    std::string s;
    for (std::string& label : out) {
      line(&s);
      std::vector<std::string> w = words(s);
      if (w.size() <= q->column)
        fail("an atom line has " + std::to_string(w.size()) + " columns; its " + column +
             " needs " + std::to_string(q->column + 1));
      label = std::move(w[q->column]);
    }
    return out;
  }

  std::vector<std::string> columns() override {
    line_no_ = line_numbers_[0] + 1;
    return label_names(properties(xyz_keys(comments_[0])));
  }

 private:
  // Frame k's comment line's keys (the file positioned at its first atom).
  std::map<std::string, std::string> head(index_t k) {
    seek(k);
    std::string s;
    line(&s);
    line(&s);
    return xyz_keys(s);
  }

  // A column of Properties=NAME:TYPE:COLS:...: its first column and count.
  struct Property {
    std::string name;
    size_t column, count;
  };
  std::vector<Property> properties(const std::map<std::string, std::string>& kv) const {
    const auto it = kv.find("properties");
    if (it == kv.end()) return {{"species", 0, 1}, {"pos", 1, 3}};  // a plain XYZ file
    std::vector<std::string> parts;
    std::stringstream ss(it->second);
    for (std::string p; std::getline(ss, p, ':');)
      parts.push_back(p);
    if (parts.size() % 3 != 0) fail("Properties='" + it->second + "' is not NAME:TYPE:COLS, ...");
    std::vector<Property> props;
    size_t column = 0;
    for (size_t q = 0; q < parts.size(); q += 3) {
      long long cols = 0;
      if (!integer(parts[q + 2], &cols) || cols < 1)
        fail("Properties='" + it->second + "' has a column count that is not a number");
      props.push_back({parts[q], column, static_cast<size_t>(cols)});
      column += static_cast<size_t>(cols);
    }
    return props;
  }
  // The properties of one column: those labels() takes.
  static std::vector<std::string> label_names(const std::vector<Property>& props) {
    std::vector<std::string> names;
    for (const Property& q : props)
      if (q.count == 1) names.push_back(q.name);
    return names;
  }
};

// ---- HDF5: H5MD and frames × n × d datasets -------------------------------------------

bool has_link(hid_t loc, const std::string& name) {
  const htri_t r = H5Lexists(loc, name.c_str(), H5P_DEFAULT);
  H5Eclear2(H5E_DEFAULT);
  return r > 0;
}

H5O_type_t object_type(hid_t loc, const std::string& name) {
  H5O_info_t info;
  if (!has_link(loc, name) || H5Oget_info_by_name(loc, name.c_str(), &info, H5P_DEFAULT) < 0) {
    H5Eclear2(H5E_DEFAULT);
    return H5O_TYPE_UNKNOWN;
  }
  return info.type;
}

std::vector<std::string> members(hid_t group) {
  std::vector<std::string> names;
  H5Literate(
      group, H5_INDEX_NAME, H5_ITER_INC, nullptr,
      [](hid_t, const char* name, const H5L_info_t*, void* out) -> herr_t {
        static_cast<std::vector<std::string>*>(out)->push_back(name);
        return 0;
      },
      &names);
  H5Eclear2(H5E_DEFAULT);
  return names;
}

// Rows [first, first + count) of the leading axis of `dset` (any numeric
// type), as float64: count × (the product of the other axes) values.
std::vector<double> read_rows(hid_t dset, const std::vector<hsize_t>& shape, hsize_t first,
                              hsize_t count, const std::string& what) {
  std::vector<hsize_t> start(shape.size(), 0), size = shape;
  size[0] = count;
  start[0] = first;
  hsize_t total = 1;
  for (hsize_t s : size)
    total *= s;
  std::vector<double> v(total);
  Hid file_space(check(H5Dget_space(dset), "H5Dget_space"), H5Sclose);
  check_status(
      H5Sselect_hyperslab(file_space, H5S_SELECT_SET, start.data(), nullptr, size.data(), nullptr),
      "selecting " + what);
  Hid mem(check(H5Screate_simple(static_cast<int>(size.size()), size.data(), nullptr),
                "H5Screate_simple"),
          H5Sclose);
  check_status(H5Dread(dset, H5T_NATIVE_DOUBLE, mem, file_space, H5P_DEFAULT, v.data()),
               "reading " + what);
  return v;
}

std::string shape_text(const std::vector<hsize_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

// Labels from a dataset of one value per atom: all of a 1-D one, or row
// `row` of a 2-D one (frames × n). Integers (and enums: H5MD's species may
// be one) in decimal, strings as stored, floats in the fewest digits that
// read back the same (a mass, a charge).
std::vector<std::string> text_values(hid_t dset, const std::vector<hsize_t>& shape, hsize_t row,
                                     const std::string& what) {
  if (written(dset) != Written::all)
    throw InputError(what +
                     " was not written whole (HDF5 would read unwritten values as its fill "
                     "value)");
  const hsize_t n = shape.back();
  Hid file_space = space_handle(H5Dget_space(dset), "H5Dget_space");
  if (shape.size() == 2) {
    const hsize_t start[2] = {row, 0}, count[2] = {1, n};
    check_status(H5Sselect_hyperslab(file_space, H5S_SELECT_SET, start, nullptr, count, nullptr),
                 "selecting row " + std::to_string(row) + " of " + what);
  }
  Hid mem = space_handle(H5Screate_simple(1, &n, nullptr), "H5Screate_simple");
  Hid type = type_handle(H5Dget_type(dset), "H5Dget_type");
  const auto read = [&](hid_t mem_type, void* buf) {
    check_status(H5Dread(dset, mem_type, mem, file_space, H5P_DEFAULT, buf), "reading " + what);
  };
  std::vector<std::string> out(n);
  switch (H5Tget_class(type)) {
    case H5T_INTEGER:
    case H5T_ENUM: {
      Hid base = type_handle(H5Tget_class(type) == H5T_ENUM ? H5Tget_super(type) : H5Tcopy(type),
                             "H5Tget_super");
      if (H5Tget_sign(base) == H5T_SGN_NONE) {
        std::vector<unsigned long long> v(n);
        read(H5T_NATIVE_ULLONG, v.data());
        for (hsize_t i = 0; i < n; ++i)
          out[i] = std::to_string(v[i]);
      } else {
        std::vector<long long> v(n);
        read(H5T_NATIVE_LLONG, v.data());
        for (hsize_t i = 0; i < n; ++i)
          out[i] = std::to_string(v[i]);
      }
      break;
    }
    case H5T_FLOAT: {
      std::vector<double> v(n);
      read(H5T_NATIVE_DOUBLE, v.data());
      char buf[32];
      for (hsize_t i = 0; i < n; ++i) {
        for (int digits = 1; digits <= 17; ++digits) {
          std::snprintf(buf, sizeof buf, "%.*g", digits, v[i]);
          if (std::strtod(buf, nullptr) == v[i]) break;
        }
        out[i] = buf;
      }
      break;
    }
    case H5T_STRING:
      if (H5Tis_variable_str(type) > 0) {
        std::vector<char*> v(n, nullptr);
        Hid mt = type_handle(H5Tcopy(H5T_C_S1), "H5Tcopy");
        check_status(H5Tset_size(mt, H5T_VARIABLE), "H5Tset_size");
        check_status(H5Tset_cset(mt, H5Tget_cset(type)), "H5Tset_cset");
        read(mt, v.data());
        for (hsize_t i = 0; i < n; ++i)
          out[i] = v[i] ? v[i] : "";
        H5Dvlen_reclaim(mt, mem, H5P_DEFAULT, v.data());
      } else {
        const size_t size = H5Tget_size(type);
        std::vector<char> buf(size * n);
        read(type, buf.data());
        for (hsize_t i = 0; i < n; ++i) {
          std::string& t = out[i];
          t.assign(&buf[i * size], size);
          t.resize(std::min(t.size(), t.find('\0')));
          while (!t.empty() && t.back() == ' ')  // Fortran's padding
            t.pop_back();
        }
      }
      break;
    default:
      throw InputError(what + " holds neither numbers nor strings (labels are either)");
  }
  return out;
}

class Hdf5Trajectory final : public Trajectory {
 public:
  // dataset: "" (an H5MD file with one particles group), /particles/GROUP,
  // or a 3-D dataset.
  Hdf5Trajectory(const std::string& spec, const std::string& path, const std::string& dataset)
      : path_(path) {
    source_ = spec;
    file_ = Hid(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
    if (!file_.valid())
      throw InputError("cannot open HDF5 input '" + path + "': " + hdf5_error_text());
    std::string group = dataset;
    if (group.empty() || object_type(file_, group) == H5O_TYPE_GROUP) {
      if (group.empty()) {
        if (object_type(file_, "/particles") != H5O_TYPE_GROUP)
          throw InputError("input '" + path +
                           "' is no H5MD file (no /particles): name the dataset");
        Hid particles(H5Gopen2(file_, "/particles", H5P_DEFAULT), H5Gclose);
        const std::vector<std::string> g = members(particles);
        if (g.size() != 1) {
          std::string list;
          for (const std::string& name : g)
            list += (list.empty() ? "" : ", ") + ("/particles/" + name);
          throw InputError("input '" + path + "' holds " + std::to_string(g.size()) +
                           " particle groups (" + list + "): name one, --input " + path +
                           ":/particles/GROUP");
        }
        group = "/particles/" + g[0];
      }
      open_h5md(group);
      format_ = "an H5MD file";
    } else {
      format_ = "a 3-D dataset (frames × n × d)";
      positions_ = dataset_handle(H5Dopen2(file_, dataset.c_str(), H5P_DEFAULT),
                                  "opening '" + dataset + "' in '" + path + "'");
      shape_ = dataset_shape(positions_);
      what_ = "'" + dataset + "' in '" + path + "'";
    }
    if (shape_.size() != 3 || shape_[0] < 1 || shape_[1] < 1 || shape_[2] < 1)
      throw InputError(what_ + " is not frames × n × d (its shape has " +
                       std::to_string(shape_.size()) + " dimensions)");
    Hid type(check(H5Dget_type(positions_), "H5Dget_type"), H5Tclose);
    const H5T_class_t cls = H5Tget_class(type);
    if (cls != H5T_FLOAT && cls != H5T_INTEGER) throw InputError(what_ + " does not hold numbers");
    if (written(positions_) != Written::all)
      throw InputError(what_ +
                       " was not written whole (HDF5 would read unwritten values as its "
                       "fill value)");
  }

  index_t frames() const override { return shape_[0]; }
  Cell cell(index_t k) override { return box_ ? cell_of(k) : Cell{}; }
  index_t atoms(index_t) override { return shape_[1]; }

  Frame read(index_t k) override {
    Frame f;
    f.time = NAN;
    f.points.n = shape_[1];
    f.points.d = shape_[2];
    f.points.source = source_;
    f.points.values =
        read_rows(positions_, shape_, k, 1, "frame " + std::to_string(k) + " of " + what_);
    if (box_) {
      f.cell = cell_of(k);
      if (f.points.d != 3 && f.cell.present)
        throw InputError(what_ + ": tdsolve takes an H5MD box in 3-D only (d = " +
                         std::to_string(f.points.d) + ")");
    }
    if (step_.valid()) f.step = static_cast<std::int64_t>(series(step_, step_shape_, k));
    if (time_.valid()) f.time = series(time_, time_shape_, k);
    f.points.cell = f.cell;
    return f;
  }

  std::vector<std::string> labels(index_t k, const std::string& column) override {
    bool timed = false;
    const std::string name = element(column, &timed);
    if (name.empty()) no_column(column, columns());
    Hid d = dataset_handle(H5Dopen2(file_, name.c_str(), H5P_DEFAULT), "opening " + name);
    const std::vector<hsize_t> shape = dataset_shape(d);
    const std::string what = "'" + name + "' in '" + path_ + "'";
    if (!per_atom(shape, timed))
      throw InputError(what + " has shape " + shape_text(shape) + " where a label column is (" +
                       std::to_string(shape_[1]) + ",)" +
                       (timed ? " or, per frame, (" + std::to_string(shape_[0]) + ", " +
                                    std::to_string(shape_[1]) + ")"
                              : ""));
    if (shape.size() == 2 && shape[0] != shape_[0])
      throw InputError(what + " holds " + std::to_string(shape[0]) + " frames where " + what_ +
                       " holds " + std::to_string(shape_[0]) +
                       " (tdsolve takes labels sampled with the positions)");
    return text_values(d, shape, k, what);
  }

  std::vector<std::string> columns() override {
    std::vector<std::string> out;
    if (group_.empty()) return out;
    Hid g = group_handle(H5Gopen2(file_, group_.c_str(), H5P_DEFAULT), "opening " + group_);
    for (const std::string& name : members(g)) {
      bool timed = false;
      const std::string e = element(name, &timed);
      if (e.empty()) continue;
      Hid d = dataset_handle(H5Dopen2(file_, e.c_str(), H5P_DEFAULT), "opening " + e);
      if (per_atom(dataset_shape(d), timed)) out.push_back(name);
    }
    return out;
  }

 private:
  // The dataset of H5MD element `column` of the particles group: the
  // element itself (fixed in time) or its value (timed: a group of step,
  // time and value); "" when there is none.
  std::string element(const std::string& column, bool* timed) const {
    if (group_.empty()) return "";
    const std::string e = group_ + "/" + column;
    const H5O_type_t t = object_type(file_, e);
    *timed = t == H5O_TYPE_GROUP && object_type(file_, e + "/value") == H5O_TYPE_DATASET;
    return t == H5O_TYPE_DATASET ? e : *timed ? e + "/value" : "";
  }
  // One value per atom: n, or frames × n for a time-dependent value (a
  // value of n: one not time dependent after all).
  bool per_atom(const std::vector<hsize_t>& shape, bool timed) const {
    return (shape.size() == 1 && shape[0] == shape_[1]) ||
           (timed && shape.size() == 2 && shape[1] == shape_[1]);
  }

  void open_h5md(const std::string& group) {
    const std::string pos = group + "/position/value";
    if (object_type(file_, pos) != H5O_TYPE_DATASET)
      throw InputError("input '" + path_ + "': " + group + " has no position/value dataset (H5MD)");
    positions_ = dataset_handle(H5Dopen2(file_, pos.c_str(), H5P_DEFAULT), "opening " + pos);
    shape_ = dataset_shape(positions_);
    what_ = "'" + pos + "' in '" + path_ + "'";
    group_ = group;
    for (const char* s : {"step", "time"}) {
      const std::string name = group + "/position/" + s;
      if (object_type(file_, name) != H5O_TYPE_DATASET) continue;
      Hid d = dataset_handle(H5Dopen2(file_, name.c_str(), H5P_DEFAULT), "opening " + name);
      std::vector<hsize_t> sh = dataset_shape(d);
      if (!(sh.empty() || (sh.size() == 1 && sh[0] == shape_[0]))) continue;
      (s[0] == 's' ? step_shape_ : time_shape_) = sh;
      (s[0] == 's' ? step_ : time_) = std::move(d);
    }
    const std::string box = group + "/box";
    if (object_type(file_, box) != H5O_TYPE_GROUP) return;
    box_ = true;
    boundary_ = boundary_of(box);
    const std::string edges = box + "/edges";
    const H5O_type_t t = object_type(file_, edges);
    if (t == H5O_TYPE_DATASET) {
      edges_ = dataset_handle(H5Dopen2(file_, edges.c_str(), H5P_DEFAULT), "opening " + edges);
      fixed_ = true;
    } else if (t == H5O_TYPE_GROUP && object_type(file_, edges + "/value") == H5O_TYPE_DATASET) {
      const std::string v = edges + "/value";
      edges_ = dataset_handle(H5Dopen2(file_, v.c_str(), H5P_DEFAULT), "opening " + v);
      fixed_ = false;
    } else {
      box_ = false;  // a box without edges: boundaries "none"
      return;
    }
    edges_shape_ = dataset_shape(edges_);
    const size_t rank = edges_shape_.size() - (fixed_ ? 0 : 1);
    if ((!fixed_ && (edges_shape_.empty() || edges_shape_[0] != shape_[0])) ||
        !(rank == 1 || rank == 2))
      throw InputError("input '" + path_ + "': " + edges +
                       " is neither d edges nor a d × d cell (per frame: frames × ...)");
  }

  std::string boundary_of(const std::string& box) {
    Hid g(H5Gopen2(file_, box.c_str(), H5P_DEFAULT), H5Gclose);
    if (H5Aexists(g, "boundary") <= 0) {
      H5Eclear2(H5E_DEFAULT);
      return "";
    }
    Hid a(H5Aopen(g, "boundary", H5P_DEFAULT), H5Aclose);
    Hid type(H5Aget_type(a), H5Tclose);
    Hid space(H5Aget_space(a), H5Sclose);
    const hssize_t count = H5Sget_simple_extent_npoints(space);
    if (H5Tget_class(type) != H5T_STRING || count < 1 || count > 16) return "unreadable";
    std::string out;
    if (H5Tis_variable_str(type) > 0) {
      std::vector<char*> v(count, nullptr);
      Hid mt(H5Tcopy(H5T_C_S1), H5Tclose);
      H5Tset_size(mt, H5T_VARIABLE);
      if (H5Aread(a, mt, v.data()) >= 0)
        for (char* s : v)
          out += (out.empty() ? "" : " ") + std::string(s ? s : "");
      H5Dvlen_reclaim(mt, space, H5P_DEFAULT, v.data());
    } else {
      const size_t size = H5Tget_size(type);
      std::vector<char> buf(size * count + 1, '\0');
      if (H5Aread(a, type, buf.data()) >= 0)
        for (hssize_t i = 0; i < count; ++i) {
          std::string s(&buf[i * size], size);
          s = s.substr(0, s.find('\0'));
          while (!s.empty() && s.back() == ' ')
            s.pop_back();
          out += (out.empty() ? "" : " ") + s;
        }
    }
    H5Eclear2(H5E_DEFAULT);
    return out;
  }

  Cell cell_of(index_t k) {
    std::vector<hsize_t> shape = edges_shape_;
    std::vector<double> e;
    if (fixed_) {
      hsize_t total = 1;
      for (hsize_t s : shape)
        total *= s;
      e.resize(total);
      check_status(H5Dread(edges_, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, e.data()),
                   "reading the box edges of '" + path_ + "'");
    } else {
      e = read_rows(edges_, shape, k, 1, "the box edges of frame " + std::to_string(k));
      shape.erase(shape.begin());
    }
    Cell c;
    c.present = true;
    c.boundary = boundary_.empty() ? "periodic periodic periodic" : boundary_;
    const std::vector<std::string> b = words(c.boundary);
    c.periodic = !b.empty() && std::all_of(b.begin(), b.end(),
                                           [](const std::string& x) { return x == "periodic"; });
    if (shape.size() == 1) {
      if (shape[0] != 3)
        throw InputError("input '" + path_ + "': the box has " + std::to_string(shape[0]) +
                         " edges; tdsolve takes 3");
      std::copy(e.begin(), e.begin() + 3, c.lengths);
    } else {
      if (shape[0] != 3 || shape[1] != 3)
        throw InputError("input '" + path_ + "': the box is not a 3 × 3 cell");
      if (e[1] != 0 || e[2] != 0 || e[5] != 0)
        throw InputError("input '" + path_ + "': frame " + std::to_string(k) +
                         "'s cell is not LAMMPS's layout (a along x, b in the xy plane)");
      c.lengths[0] = e[0];
      c.lengths[1] = e[4];
      c.lengths[2] = e[8];
      c.tilt[0] = e[3];
      c.tilt[1] = e[6];
      c.tilt[2] = e[7];
    }
    if (c.periodic)
      for (int a = 0; a < 3; ++a)
        if (!(c.lengths[a] > 0) || !std::isfinite(c.lengths[a]))
          throw InputError("input '" + path_ + "': frame " + std::to_string(k) +
                           "'s box has a length that is not > 0 (" + g17(c.lengths[a]) + ")");
    return c;
  }

  double series(hid_t d, const std::vector<hsize_t>& shape, index_t k) {
    double v = NAN;
    if (shape.empty()) {
      H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v);
      H5Eclear2(H5E_DEFAULT);
      return v;
    }
    return read_rows(d, shape, k, 1, "a frame's step or time")[0];
  }

  std::string path_, what_, boundary_;
  std::string group_;  // an H5MD file's particles group ("": a 3-D dataset)
  Hid file_, positions_, edges_, step_, time_;
  std::vector<hsize_t> shape_, edges_shape_, step_shape_, time_shape_;
  bool box_ = false, fixed_ = true;
};

// An HDF5 spec's file and dataset (FILE.h5, FILE.h5:/name).
bool hdf5_parts(const std::string& spec, std::string* path, std::string* dataset) {
  const InputSpec in = split_input_spec(spec);
  const std::string l = lower(in.path);
  if (in.dataset.empty() && !(ends_with(l, ".h5") || ends_with(l, ".hdf5") ||
                              ends_with(l, ".h5md") || ends_with(l, ".hdf")))
    return false;
  *path = in.path;
  *dataset = in.dataset;
  return true;
}

}  // namespace

bool is_trajectory(const std::string& spec) {
  if (is_memory_spec(spec)) return false;
  const std::string l = lower(spec);
  if (dump_name(l) || xyz_name(l)) return true;
  std::string path, dataset;
  if (!hdf5_parts(spec, &path, &dataset)) return false;
  quiet_hdf5_errors();
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    return false;
  }
  Hid file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.valid()) {
    H5Eclear2(H5E_DEFAULT);
    return false;
  }
  if (dataset.empty()) return object_type(file, "/h5md") == H5O_TYPE_GROUP;
  const H5O_type_t t = object_type(file, dataset);
  if (t == H5O_TYPE_GROUP)
    return object_type(file, dataset + "/position/value") == H5O_TYPE_DATASET;
  if (t != H5O_TYPE_DATASET) return false;
  Hid d(H5Dopen2(file, dataset.c_str(), H5P_DEFAULT), H5Dclose);
  if (!d.valid()) {
    H5Eclear2(H5E_DEFAULT);
    return false;
  }
  Hid space(H5Dget_space(d), H5Sclose);
  const int rank = space.valid() ? H5Sget_simple_extent_ndims(space) : -1;
  H5Eclear2(H5E_DEFAULT);
  return rank == 3;
}

std::unique_ptr<Trajectory> open_trajectory(const std::string& spec) {
  const std::string l = lower(spec);
  if (dump_name(l)) return std::make_unique<DumpTrajectory>(spec);
  if (xyz_name(l)) return std::make_unique<XyzTrajectory>(spec);
  std::string path, dataset;
  hdf5_parts(spec, &path, &dataset);
  return std::make_unique<Hdf5Trajectory>(spec, path, dataset);
}

namespace {
// shared_trajectory's: each spec's object and its file's size and time.
struct Opened {
  std::shared_ptr<Trajectory> t;
  off_t size = 0;
  timespec mtime{};
};
// Never destroyed: an HDF5 trajectory's handles must not be closed after
// the library's own exit handler has run (release_trajectories, at the end
// of a run, closes them in time).
std::map<std::string, Opened>& opened_trajectories() {
  static auto* opened = new std::map<std::string, Opened>;
  return *opened;
}
}  // namespace

void release_trajectories() {
  opened_trajectories().clear();
}

std::shared_ptr<Trajectory> shared_trajectory(const std::string& spec) {
  std::map<std::string, Opened>& opened = opened_trajectories();
  struct stat st {};
  const bool seen = ::stat(split_input_spec(spec).path.c_str(), &st) == 0;
  const auto it = opened.find(spec);
  if (seen && it != opened.end() && it->second.size == st.st_size &&
      it->second.mtime.tv_sec == st.st_mtim.tv_sec &&
      it->second.mtime.tv_nsec == st.st_mtim.tv_nsec)
    return it->second.t;
  Opened o;
  o.t = open_trajectory(spec);
  if (seen) {
    o.size = st.st_size;
    o.mtime = st.st_mtim;
    opened[spec] = o;
  }
  return o.t;
}

void Trajectory::no_column(const std::string& column,
                           const std::vector<std::string>& columns) const {
  throw InputError("input '" + source_ + "' has no column '" + column + "' (" +
                   (columns.empty() ? format_ + " has none" : "its columns: " + joined(columns)) +
                   ")");
}

namespace {

// A label file (read_labels): FILE.h5:/dataset, or text.
std::vector<std::string> file_labels(const InputSpec& in, const std::string& what,
                                     const char* option) {
  const bool hdf5 = H5Fis_hdf5(in.path.c_str()) > 0;
  H5Eclear2(H5E_DEFAULT);
  if (!hdf5 && in.dataset.empty()) {
    std::ifstream f(in.path, std::ios::binary);
    if (!f) throw InputError("cannot open " + what + ": " + std::strerror(errno));
    // The words of the file, '#' to the end of its line a comment: one scan
    // of the whole text (a stream a line took 2 s for 10^7 labels).
    const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::vector<std::string> out;
    for (size_t at = 0; at < text.size();) {
      const char c = text[at];
      if (c == '#') {
        const size_t eol = text.find('\n', at);
        at = eol == std::string::npos ? text.size() : eol + 1;
      } else if (blank(c)) {
        ++at;
      } else {
        size_t end = at;
        while (end < text.size() && !blank(text[end]) && text[end] != '#')
          ++end;
        out.emplace_back(text, at, end - at);
        at = end;
      }
    }
    return out;
  }
  if (!hdf5) throw InputError(what + ": '" + in.path + "' is not an HDF5 file");
  if (in.dataset.empty())
    throw InputError(what + " is an HDF5 file: name the dataset, " + option + " " + in.path +
                     ":/DATASET");
  Hid file(H5Fopen(in.path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.valid()) throw InputError("cannot open " + what + ": " + hdf5_error_text());
  if (object_type(file, in.dataset) != H5O_TYPE_DATASET)
    throw InputError(what + ": '" + in.path + "' has no dataset '" + in.dataset + "'");
  Hid d = dataset_handle(H5Dopen2(file, in.dataset.c_str(), H5P_DEFAULT), "opening " + what);
  const std::vector<hsize_t> shape = dataset_shape(d);
  if (shape.size() != 1)
    throw InputError(what + " has shape " + shape_text(shape) +
                     "; labels are a 1-D dataset, one per atom");
  return text_values(d, shape, 0, what);
}

}  // namespace

std::vector<std::string> read_labels(const std::string& src, const std::string& input,
                                     index_t frame, index_t n, const char* option) {
  const std::string what = std::string(option) + " '" + src + "'";
  std::vector<std::string> labels, columns;
  bool column = false;
  const bool trajectory = is_trajectory(input);
  if (trajectory) {
    const std::shared_ptr<Trajectory> t = shared_trajectory(input);
    columns = t->columns();
    column = std::find(columns.begin(), columns.end(), src) != columns.end();
    if (column) labels = t->labels(frame, src);
  }
  if (!column) {
    const InputSpec in = split_input_spec(src);
    struct stat st;
    if (::stat(in.path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
      throw InputError(
          what + (trajectory
                      ? " is neither a column of '" + input + "' (" +
                            (columns.empty() ? "it has none" : "its columns: " + joined(columns)) +
                            ") nor a file"
                      : " is not a file"));
    labels = file_labels(in, what, option);
  }
  if (labels.size() != n)
    throw InputError(what + " gives " + std::to_string(labels.size()) + " labels where " +
                     (input.empty() ? "the input" : "'" + input + "'") + " has " +
                     std::to_string(n) + " atoms (one label each)");
  for (size_t i = 0; i < labels.size(); ++i) {
    const std::string& l = labels[i];
    const size_t bad = l.find_first_of("-,");
    if (l.empty())
      throw InputError(what + ": the label of atom " + std::to_string(i) + " is empty");
    if (bad != std::string::npos)
      throw InputError(what + ": the label of atom " + std::to_string(i) + ", '" + l +
                       "', holds '" + l[bad] +
                       "' ('-' and ',' separate --pairs A-B,C-D: a label holds neither)");
  }
  return labels;
}

LabelCodes code_labels(const std::vector<std::string>& labels) {
  // Codes in order of first sight (one hash a point), then renumbered in
  // the labels' order.
  std::unordered_map<std::string, std::int32_t> seen;
  LabelCodes c;
  c.code.resize(labels.size());
  for (size_t i = 0; i < labels.size(); ++i) {
    const auto [it, added] = seen.emplace(labels[i], static_cast<std::int32_t>(c.names.size()));
    if (added) c.names.push_back(labels[i]);
    c.code[i] = it->second;
  }
  const auto canonical_integer = [](const std::string& x) {
    long long v;
    return integer(x, &v) && std::to_string(v) == x;
  };
  std::vector<std::int32_t> order(c.names.size());
  std::iota(order.begin(), order.end(), 0);
  const bool numbers = std::all_of(c.names.begin(), c.names.end(), canonical_integer);
  std::sort(order.begin(), order.end(), [&](std::int32_t x, std::int32_t y) {
    if (numbers) return std::stoll(c.names[x]) < std::stoll(c.names[y]);
    return c.names[x] < c.names[y];
  });
  std::vector<std::int32_t> place(order.size());
  std::vector<std::string> names(order.size());
  for (size_t k = 0; k < order.size(); ++k) {
    place[order[k]] = static_cast<std::int32_t>(k);
    names[k] = c.names[order[k]];
  }
  c.names = std::move(names);
  c.sizes.assign(c.names.size(), 0);
  for (std::int32_t& x : c.code) {
    x = place[x];
    ++c.sizes[x];
  }
  return c;
}

index_t frame_index(std::int64_t k, index_t frames, const std::string& source) {
  const std::int64_t f = static_cast<std::int64_t>(frames);
  if (k < -f || k >= f)
    throw InputError("--frame " + std::to_string(k) + " is out of range: '" + source + "' holds " +
                     std::to_string(frames) + " frame" + (frames == 1 ? "" : "s") + " (0 to " +
                     std::to_string(f - 1) + ", or -" + std::to_string(f) + " to -1 from the end)");
  return static_cast<index_t>(k < 0 ? k + f : k);
}

namespace {

struct FrameRange {
  bool start_given = false, stop_given = false;
  long long start = 0, stop = 0, step = 1;
};

FrameRange parse_frame_range(const std::string& text) {
  std::vector<std::string> parts;
  size_t from = 0;
  for (;;) {
    const size_t colon = text.find(':', from);
    parts.push_back(
        text.substr(from, colon == std::string::npos ? std::string::npos : colon - from));
    if (colon == std::string::npos) break;
    from = colon + 1;
  }
  if (parts.size() < 2 || parts.size() > 3)
    throw UsageError(
        "--frames wants START:STOP[:STEP] (Python's slice, e.g. 0:100 or ::10), "
        "not '" +
        text + "'");
  FrameRange r;
  const auto part = [&](size_t i, long long* v, bool* given) {
    if (i >= parts.size() || parts[i].empty()) return;
    if (!integer(parts[i], v))
      throw UsageError("--frames '" + text + "': '" + parts[i] + "' is not an integer");
    if (given) *given = true;
  };
  part(0, &r.start, &r.start_given);
  part(1, &r.stop, &r.stop_given);
  part(2, &r.step, nullptr);
  if (r.step == 0) throw UsageError("--frames '" + text + "': STEP must not be 0");
  return r;
}

}  // namespace

void check_frame_range(const std::string& range) {
  parse_frame_range(range);
}

std::vector<index_t> select_frames(const std::string& range, index_t frames,
                                   const std::string& source) {
  const FrameRange r = parse_frame_range(range);
  // Python's slice.indices.
  const long long f = static_cast<long long>(frames), step = r.step;
  const auto clamp = [&](long long v, bool given, long long dflt) {
    if (!given) return dflt;
    if (v < 0) v += f;
    return step > 0 ? std::clamp(v, 0LL, f) : std::clamp(v, -1LL, f - 1);
  };
  const long long start = clamp(r.start, r.start_given, step > 0 ? 0 : f - 1);
  const long long stop = clamp(r.stop, r.stop_given, step > 0 ? f : -1);
  std::vector<index_t> out;
  for (long long k = start; step > 0 ? k < stop : k > stop; k += step)
    out.push_back(static_cast<index_t>(k));
  if (out.empty())
    throw InputError("--frames " + range + " selects none of the " + std::to_string(frames) +
                     " frames of '" + source + "'");
  return out;
}

}  // namespace tdsolve::io
