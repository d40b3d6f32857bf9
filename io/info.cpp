#include "io/info.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <vector>

#include "core/error.hpp"
#include "io/h5.hpp"
#include "io/output_files.hpp"
#include "mapping/simplex.hpp"

namespace tdsolve::io {

namespace {

std::string type_name(hid_t dset) {
  Hid t = type_handle(H5Dget_type(dset), "H5Dget_type");
  const size_t size = H5Tget_size(t);
  switch (H5Tget_class(t)) {
    case H5T_FLOAT:
      return "float" + std::to_string(8 * size);
    case H5T_INTEGER:
      return std::string(H5Tget_sign(t) == H5T_SGN_NONE ? "uint" : "int") +
             std::to_string(8 * size);
    case H5T_STRING:
      return "string";
    default:
      return "other";
  }
}

std::string shape_of(hid_t dset) {
  std::string s = "[";
  const auto dims = dataset_shape(dset);
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? " x " : "") + std::to_string(dims[i]);
  return s + "]";
}

// "name=value" for every attribute of obj.
herr_t attr_text(hid_t obj, const char* name, const H5A_info_t*, void* out) {
  auto* s = static_cast<std::string*>(out);
  Hid attr(H5Aopen(obj, name, H5P_DEFAULT), H5Aclose);
  if (!attr.valid()) return 0;
  Hid type(H5Aget_type(attr), H5Tclose);
  // Dimension scale bookkeeping (DIMENSION_LIST: references) is no value to show.
  const H5T_class_t cls = H5Tget_class(type);
  if (cls != H5T_STRING && cls != H5T_INTEGER && cls != H5T_FLOAT) return 0;
  *s += std::string(" ") + name + "=";
  const hssize_t count = attr_values(attr);
  if (count != 1) {  // never read an array into one value
    *s += "[" + std::to_string(count) + " values]";
  } else if (H5Tget_class(type) == H5T_STRING) {
    *s += read_attr_string(obj, name);
  } else if (H5Tget_class(type) == H5T_INTEGER) {
    *s += std::to_string(read_attr_u64(obj, name));
  } else {
    double v = 0;
    H5Aread(attr, H5T_NATIVE_DOUBLE, &v);
    std::ostringstream o;
    o << v;
    *s += o.str();
  }
  return 0;
}

std::string attributes(hid_t obj) {
  std::string s;
  hsize_t idx = 0;
  H5Aiterate2(obj, H5_INDEX_CRT_ORDER, H5_ITER_NATIVE, &idx, attr_text, &s);
  H5Eclear2(H5E_DEFAULT);
  if (s.empty()) {
    idx = 0;
    H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_NATIVE, &idx, attr_text, &s);
  }
  return s;
}

std::string root_attr(hid_t file, const char* name) {
  return has_attr(file, name) ? read_attr_string(file, name) : "(not recorded)";
}

// Ranges of missing chunks, "3, 5-9".
std::string missing_ranges(const std::vector<unsigned char>& done) {
  std::string s;
  int shown = 0;
  for (size_t c = 0; c < done.size();) {
    if (done[c]) {
      ++c;
      continue;
    }
    size_t e = c;
    while (e + 1 < done.size() && !done[e + 1])
      ++e;
    if (shown++ == 8) return s + ", ...";
    s += (s.empty() ? "" : ", ") + std::to_string(c) + (e > c ? "-" + std::to_string(e) : "");
    c = e + 1;
  }
  return s;
}

// Shortest text that reads back as v ("0.1", "2.5", "1e-05").
std::string number(double v) {
  char buf[64];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

// A string attribute of at most one value (an array would overrun read_attr_string).
std::string read_attr_text(hid_t obj, const char* name) {
  Hid attr = attr_handle(H5Aopen(obj, name, H5P_DEFAULT), std::string("H5Aopen ") + name);
  if (attr_values(attr) > 1)
    throw AttrShapeError(std::string("attribute '") + name + "' does not hold one value");
  return read_attr_string(obj, name);
}

double read_attr_f64(hid_t obj, const char* name) {
  Hid attr = attr_handle(H5Aopen(obj, name, H5P_DEFAULT), std::string("H5Aopen ") + name);
  if (attr_values(attr) != 1)
    throw AttrShapeError(std::string("attribute '") + name + "' does not hold one value");
  double v = 0;
  check_status(H5Aread(attr, H5T_NATIVE_DOUBLE, &v), std::string("H5Aread ") + name);
  return v;
}

bool exists(hid_t file, const char* name) {
  const bool yes = H5Lexists(file, name, H5P_DEFAULT) > 0;
  H5Eclear2(H5E_DEFAULT);
  return yes;
}

// A whole 1-D dataset of `want` values (/edges, /counts: at most a million),
// or nothing when it is not one.
template <typename T>
std::vector<T> read_small(hid_t file, const char* name, hid_t mem_type, hsize_t want) {
  Hid ds = dataset_handle(H5Dopen2(file, name, H5P_DEFAULT), std::string("H5Dopen /") + name);
  const auto dims = dataset_shape(ds);
  if (dims.size() != 1 || dims[0] != want) return {};
  std::vector<T> v(want);
  check_status(H5Dread(ds, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()),
               std::string("reading /") + name);
  return v;
}

// The value of a scalar int64 dataset (/underflow, /overflow, /count); false if it is not one.
bool read_scalar_i64(hid_t file, const char* name, std::int64_t* v) {
  if (!exists(file, name)) return false;
  Hid ds = dataset_handle(H5Dopen2(file, name, H5P_DEFAULT), std::string("H5Dopen /") + name);
  if (!dataset_shape(ds).empty()) return false;
  check_status(H5Dread(ds, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v),
               std::string("reading /") + name);
  return true;
}

enum class Kind { edm, hist, cross, triplet, knn, radius };

// What a hist file says beyond its /counts line; sets *problem when its
// records disagree. *total is the number of pairs the chunks cover.
void describe_hist(hid_t file, hid_t counts, std::ostream& out, std::string* problem,
                   std::uint64_t* total, std::uint64_t* binned) {
  const auto dims = dataset_shape(counts);
  const std::uint64_t n = has_attr(counts, "n") ? read_attr_u64(counts, "n") : 0;
  *total = mapping::pair_count(n);
  const hsize_t bins = dims.size() == 1 ? dims[0] : 0;
  if (dims.size() != 1) {
    *problem = "/counts is not 1-D";
    return;
  }
  if (has_attr(counts, "bins") && read_attr_u64(counts, "bins") != bins) {
    *problem = "/counts does not have `bins` values";
    return;
  }
  if (has_attr(counts, "pairs") && read_attr_u64(counts, "pairs") != *total) {
    *problem = "the `pairs` attribute is not C(n,2)";
    return;
  }
  out << "histogram: " << bins << " bins";
  if (has_attr(counts, "range_lo") && has_attr(counts, "range_hi"))
    out << " over [" << number(read_attr_f64(counts, "range_lo")) << ", "
        << number(read_attr_f64(counts, "range_hi")) << "]";
  out << (has_attr(counts, "box") ? " (periodic box " + read_attr_string(counts, "box") + ")" : "")
      << "\n";

  std::int64_t under = 0, over = 0;
  const std::vector<double> edges =
      exists(file, "edges") ? read_small<double>(file, "edges", H5T_NATIVE_DOUBLE, bins + 1)
                            : std::vector<double>{};
  if (edges.empty()) {
    *problem = "/edges does not hold bins+1 values";
    return;
  }
  if (!read_scalar_i64(file, "underflow", &under) || !read_scalar_i64(file, "overflow", &over)) {
    *problem = "no scalar /underflow and /overflow";
    return;
  }
  const auto values = read_small<std::int64_t>(file, "counts", H5T_NATIVE_INT64, bins);
  std::uint64_t sum = 0;
  for (const std::int64_t c : values)
    sum += static_cast<std::uint64_t>(c);
  *binned = sum + static_cast<std::uint64_t>(under) + static_cast<std::uint64_t>(over);
  out << "counts:    " << sum << " in range, underflow " << under << ", overflow " << over
      << " (of " << *total << " pairs)\n";
  if (exists(file, "rdf")) {
    Hid rdf = dataset_handle(H5Dopen2(file, "rdf", H5P_DEFAULT), "H5Dopen /rdf");
    out << "rdf:       /rdf " << type_name(rdf) << shape_of(rdf) << attributes(rdf) << "\n";
  } else {
    out << "rdf:       none (written only with --box)\n";
  }
}

// What a triplet file says (/energy's attributes, the datasets beside it);
// sets *problem when their shapes disagree with n. *total is C(n,3), the
// triplets the chunks cover. name: the dataset /progress names ("" or
// "triplet_energy").
void describe_triplet(hid_t file, const std::string& name, std::ostream& out, std::string* problem,
                      std::uint64_t* total) {
  Hid energy = dataset_handle(H5Dopen2(file, "energy", H5P_DEFAULT), "H5Dopen /energy");
  if (!has_attr(energy, "n")) {
    *problem = "/energy has no `n` attribute";
    return;
  }
  const std::uint64_t n = read_attr_u64(energy, "n");
  *total = mapping::triplet_count(n);
  if (!dataset_shape(energy).empty()) {
    *problem = "/energy is not a scalar";
    return;
  }
  if (has_attr(energy, "k") && read_attr_u64(energy, "k") != 3) {
    *problem = "the `k` attribute of /energy is not 3";
    return;
  }
  if (has_attr(energy, "triplets") && read_attr_u64(energy, "triplets") != *total) {
    *problem = "the `triplets` attribute is not C(n,3)";
    return;
  }
  out << "triplets:  " << n << " points in 3-D, " << *total << " triplets i<j<k (C(n,3))\n";
  // The potential as recorded, read in this order (the Python package's too).
  const auto text = [&](const char* a) {
    return has_attr(energy, a) ? read_attr_text(energy, a) : std::string("(not recorded)");
  };
  const auto length = [&](const char* a) {
    if (!has_attr(energy, a)) return std::string("(not recorded)");
    const double v = read_attr_f64(energy, a);
    return std::isinf(v) ? std::string("none") : number(v);
  };
  const auto value = [&](const char* a) {
    return has_attr(energy, a) ? number(read_attr_f64(energy, a)) : std::string("(not recorded)");
  };
  const std::string potential = text("potential");
  std::string parameters;  // atm's, or (potential sw) the columns of a LAMMPS .sw file
  if (potential == "sw") {
    for (const char* a : {"epsilon", "sigma", "a", "lambda", "gamma", "costheta0"})
      parameters += std::string(parameters.empty() ? "" : ", ") + a + " " + value(a);
  } else {
    const std::string nu = value("nu");
    const std::string cutoff = length("cutoff");
    const std::string cutoff_triple = length("cutoff_triple");
    parameters = "nu " + nu + ", cutoff " + cutoff + ", cutoff_triple " + cutoff_triple;
  }
  const std::string precision = text("precision");
  const std::string block =
      has_attr(energy, "block") ? std::to_string(read_attr_u64(energy, "block")) : "(not recorded)";
  out << "potential: " << potential << " (" << parameters << "), precision " << precision
      << ", block " << block << "\n";
  if (has_attr(energy, "formula"))
    out << "formula:   " << read_attr_text(energy, "formula") << "\n";

  // The datasets beside /energy: listed first, then checked in this order.
  struct Beside {
    const char* name;
    std::vector<hsize_t> dims;
    const char* wrong;
  };
  const Beside beside[] = {
      {"energy_per_point", {n}, "/energy_per_point does not hold n values"},
      {"forces", {n, 3}, "/forces is not n x 3"},
      {"progress/sums", {4 * n + 1, kTripletSumLimbs}, "/progress/sums is not (4n+1) x 69"}};
  std::vector<hsize_t> shapes[3];
  bool found[3] = {};
  out << "datasets:  /energy " << type_name(energy) << shape_of(energy);
  for (int i = 0; i < 3; ++i) {
    found[i] = exists(file, beside[i].name);
    out << ", /" << beside[i].name;
    if (!found[i]) {
      out << " (missing)";
      continue;
    }
    Hid d = dataset_handle(H5Dopen2(file, beside[i].name, H5P_DEFAULT),
                           std::string("H5Dopen /") + beside[i].name);
    shapes[i] = dataset_shape(d);
    out << " " << type_name(d) << shape_of(d);
  }
  out << "\n";
  for (int i = 0; i < 3; ++i) {
    if (!found[i] || shapes[i] != beside[i].dims) {
      *problem = found[i] ? beside[i].wrong : std::string("no /") + beside[i].name;
      return;
    }
  }

  // The triplet energies themselves, with --store-triplets.
  const bool stored = exists(file, "triplet_energy");
  if (name.empty()) {
    if (stored) {
      *problem = "/triplet_energy is there, but /progress does not name it";
      return;
    }
    out << "stored:    no triplet energies (tdsolve triplet --store-triplets writes "
           "/triplet_energy)\n";
    return;
  }
  if (!stored) {
    *problem = "/progress names /triplet_energy, which is missing";
    return;
  }
  Hid values =
      dataset_handle(H5Dopen2(file, "triplet_energy", H5P_DEFAULT), "H5Dopen /triplet_energy");
  out << "stored:    /triplet_energy " << type_name(values) << shape_of(values)
      << attributes(values) << "\n";
  const auto dims = dataset_shape(values);
  if (dims.size() != 1 || dims[0] != *total)
    *problem = "/triplet_energy length is not C(n,3)";
  else if (has_attr(values, "n") && read_attr_u64(values, "n") != n)
    *problem = "the `n` attribute of /triplet_energy is not /energy's";
}

// Whether /distances is a kNN result: /indices beside it, or `layout` = "knn"
// (read only when it is one string; the Python package decides alike).
bool is_knn(hid_t file, hid_t values) {
  if (exists(file, "indices")) return true;
  if (!has_attr(values, "layout")) return false;
  Hid attr(H5Aopen(values, "layout", H5P_DEFAULT), H5Aclose);
  Hid type(attr.valid() ? H5Aget_type(attr) : H5I_INVALID_HID, H5Tclose);
  H5Eclear2(H5E_DEFAULT);
  if (!type.valid() || H5Tget_class(type) != H5T_STRING || attr_values(attr) != 1) return false;
  return read_attr_string(values, "layout") == "knn";
}

// What a `tdsolve knn --k K` file says (/distances and /indices, n x K);
// sets *problem when its records disagree. *total: n·K, the values the
// chunks cover; *row: K (every offset is a whole row).
void describe_knn(hid_t file, hid_t values, std::ostream& out, std::string* problem,
                  std::uint64_t* total, std::uint64_t* row) {
  const auto dims = dataset_shape(values);
  if (dims.size() != 2) {
    *problem = "/distances is not 2-D";
    return;
  }
  for (const char* a : {"n", "neighbors"}) {
    if (!has_attr(values, a)) {
      *problem = std::string("/distances has no `") + a + "` attribute";
      return;
    }
  }
  const std::uint64_t n = read_attr_u64(values, "n"), k = read_attr_u64(values, "neighbors");
  *total = n * k;
  *row = k;
  const auto text = [&](const char* a) {
    return has_attr(values, a) ? read_attr_text(values, a) : std::string("(not recorded)");
  };
  const std::string metric = text("metric"), precision = text("precision");
  out << "knn:       " << n << " points, the " << k << " nearest of each (metric " << metric
      << ", precision " << precision << ")\n";
  if (dims[0] != n || dims[1] != k) {
    *problem = "/distances is not n x K";
    return;
  }
  if (k < 1 || k >= n) {
    *problem = "the `neighbors` attribute is not in 1..n-1";
    return;
  }
  if (!exists(file, "indices")) {
    *problem = "no /indices";
    return;
  }
  Hid indices = dataset_handle(H5Dopen2(file, "indices", H5P_DEFAULT), "H5Dopen /indices");
  out << "indices:   /indices " << type_name(indices) << shape_of(indices) << "\n";
  if (dataset_shape(indices) != dims) {
    *problem = "/indices is not n x K";
    return;
  }
  if ((has_attr(indices, "n") && read_attr_u64(indices, "n") != n) ||
      (has_attr(indices, "neighbors") && read_attr_u64(indices, "neighbors") != k))
    *problem = "the `n` or `neighbors` attribute of /indices is not that of /distances";
}

// What a `tdsolve knn --radius R` file says (/pairs m x 2, /distances m),
// or a `tdsolve collide` file (/pairs with a `criterion`, and /count = m);
// sets *problem when its records disagree. *total: C(n,2), the pairs the
// chunks cover.
void describe_radius(hid_t file, hid_t pairs, std::ostream& out, std::string* problem,
                     std::uint64_t* total) {
  const auto dims = dataset_shape(pairs);
  if (!has_attr(pairs, "n")) {
    *problem = "/pairs has no `n` attribute";
    return;
  }
  const std::uint64_t n = read_attr_u64(pairs, "n");
  *total = mapping::pair_count(n);
  const std::string radius =
      has_attr(pairs, "radius") ? number(read_attr_f64(pairs, "radius")) : "(not recorded)";
  const auto text = [&](const char* a) {
    return has_attr(pairs, a) ? read_attr_text(pairs, a) : std::string("(not recorded)");
  };
  const std::string metric = text("metric"), precision = text("precision");
  if (dims.size() != 2 || dims[1] != 2) {
    *problem = "/pairs is not m x 2";
    return;
  }
  const std::uint64_t m = dims[0];
  const bool collide = has_attr(pairs, "criterion");
  if (collide)
    out << "collide:   " << m << " overlapping pairs (" << text("criterion") << ") of " << n
        << " spheres in "
        << (has_attr(pairs, "dim") ? std::to_string(read_attr_u64(pairs, "dim")) : std::string("?"))
        << "-D (of " << *total << " pairs; precision " << precision << ")\n";
  else
    out << "radius:    " << m << " pairs within " << radius << " of " << n << " points (of "
        << *total << " pairs; metric " << metric << ", precision " << precision << ")\n";
  if (m > *total) {
    *problem = "/pairs holds more than C(n,2) pairs";
    return;
  }
  if (!exists(file, "distances")) {
    *problem = "no /distances";
    return;
  }
  Hid distances = dataset_handle(H5Dopen2(file, "distances", H5P_DEFAULT), "H5Dopen /distances");
  out << "distances: /distances " << type_name(distances) << shape_of(distances) << "\n";
  if (dataset_shape(distances) != std::vector<hsize_t>{m}) {
    *problem = "/distances does not hold one value per row of /pairs";
    return;
  }
  if (!collide) return;
  // /count is written with the pairs (0 until then, as /pairs is empty).
  std::int64_t count = 0;
  if (!read_scalar_i64(file, "count", &count)) {
    *problem = "no scalar /count";
    return;
  }
  out << "count:     /count = " << count << "\n";
  if (count < 0 || static_cast<std::uint64_t>(count) != m)
    *problem = "/count is not the number of rows of /pairs";
}

// The total energy of a complete triplet file, for show only: a value that
// cannot be read changes no verdict.
void print_energy(hid_t file, std::ostream& out) {
  double e = 0;
  Hid energy(H5Dopen2(file, "energy", H5P_DEFAULT), H5Dclose);
  if (energy.valid() && H5Dread(energy, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, &e) >= 0)
    out << "energy:    " << number(e) << " (the total, /energy)\n";
  else
    out << "energy:    (cannot be read as a number)\n";
  H5Eclear2(H5E_DEFAULT);
}

// What a `tdsolve fractal` file says (/states and its attributes, /steps,
// /live, /replicas, /progress/done); the verdict. Its checks stop at the
// first record that disagrees, in this order (the Python package's too).
int describe_fractal(hid_t file, std::ostream& out) {
  if (!exists(file, "progress") || !exists(file, "progress/done")) {
    out << "status:    not a tdsolve result (/states without /progress/done)\n";
    return kInfoIncomplete;
  }
  Hid states = dataset_handle(H5Dopen2(file, "states", H5P_DEFAULT), "H5Dopen /states");
  Hid progress = group_handle(H5Gopen2(file, "progress", H5P_DEFAULT), "H5Gopen /progress");
  const auto dims = dataset_shape(states);
  out << "dataset:   /states " << type_name(states) << shape_of(states) << attributes(states)
      << "\n";

  std::string problem;
  std::uint64_t rows = 0;  // snapshots: rows of /states
  try {
    const auto records = [&]() -> std::string {
      if (has_attr(progress, "dataset")) {
        std::string name = read_attr_text(progress, "dataset");
        if (!name.empty() && name[0] == '/') name.erase(0, 1);
        if (name != "states") return "the `dataset` attribute of /progress does not name /states";
      }
      for (const char* a : {"k", "s", "level", "steps"})
        if (!has_attr(states, a)) return std::string("/states has no `") + a + "` attribute";
      const std::uint64_t k = read_attr_u64(states, "k"), s = read_attr_u64(states, "s");
      const std::uint64_t level = read_attr_u64(states, "level");
      const std::uint64_t steps = read_attr_u64(states, "steps");
      if (s < 2 || s > 16) return "the `s` attribute of /states is not in 2..16";
      if (k < 1 || k > s * s) return "the `k` attribute of /states is not in 1..s^2";
      // n = s^level up to 2^31 (64-bit cell indices); then k^level <= n^2 fits.
      std::uint64_t n = 1, cells = 1;
      for (std::uint64_t l = 0; l < level; ++l) {
        n *= s;
        cells *= k;
        if (n > (std::uint64_t(1) << 31)) return "the embedding s^level is larger than 2^31";
      }
      if (has_attr(states, "n") && read_attr_u64(states, "n") != n)
        return "the `n` attribute of /states is not s^level";
      if (has_attr(states, "cells") && read_attr_u64(states, "cells") != cells)
        return "the `cells` attribute of /states is not k^level";
      // The run's parameters as recorded, read in this order.
      const auto text = [&](const char* a) {
        return has_attr(states, a) ? read_attr_text(states, a) : std::string("(not recorded)");
      };
      const std::string shape = text("shape"), table = text("table"), rule = text("rule");
      const std::string init = text("init"), layout = text("layout"), map = text("map");
      const std::string rho =
          has_attr(states, "rho") ? std::to_string(read_attr_u64(states, "rho")) : "(not recorded)";
      out << "fractal:   " << shape << " (table " << table << "): s = " << s << ", k = " << k
          << " replicas, level " << level << ": " << n << " x " << n << " embedding, " << cells
          << " cells\n";
      out << "rule:      " << rule << ", init " << init << "\n";
      out << "strategy:  layout " << layout << ", map " << map << ", rho " << rho << "\n";
      if (dims.size() != 2) return "/states is not 2-D";
      if (dims[1] != cells) return "/states does not hold k^level cells per row";
      rows = dims[0];
      if (rows == 0) return "/states has no rows";
      if (!exists(file, "steps")) return "no /steps";
      Hid steps_ds = dataset_handle(H5Dopen2(file, "steps", H5P_DEFAULT), "H5Dopen /steps");
      if (dataset_shape(steps_ds) != std::vector<hsize_t>{rows})
        return "/steps does not hold one value per row of /states";
      std::vector<std::int64_t> at(rows);
      check_status(H5Dread(steps_ds, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, at.data()),
                   "reading /steps");
      bool rising = at[0] == 0;
      for (size_t i = 1; i < at.size(); ++i)
        rising = rising && at[i] > at[i - 1];
      if (!rising || static_cast<std::uint64_t>(at.back()) != steps)
        return "/steps does not run from 0 to the `steps` attribute, increasing";
      out << "steps:     " << steps << ", " << rows << " snapshots (steps " << at[0];
      for (size_t i = 1; i < at.size() && i < 6; ++i)
        out << ", " << at[i];
      out << (at.size() > 6 ? ", ..., " + std::to_string(at.back()) : std::string()) << ")\n";
      if (!exists(file, "live")) return "no /live";
      Hid live = dataset_handle(H5Dopen2(file, "live", H5P_DEFAULT), "H5Dopen /live");
      if (dataset_shape(live) != std::vector<hsize_t>{steps + 1})
        return "/live does not hold steps+1 values";
      if (!exists(file, "replicas")) return "no /replicas";
      Hid replicas = dataset_handle(H5Dopen2(file, "replicas", H5P_DEFAULT), "H5Dopen /replicas");
      if (dataset_shape(replicas) != std::vector<hsize_t>{k, 2}) return "/replicas is not k x 2";
      if (has_attr(progress, "chunks") && read_attr_u64(progress, "chunks") != rows)
        return "the `chunks` attribute of /progress is not the rows of /states";
      if (has_attr(progress, "elements") && read_attr_u64(progress, "elements") != rows)
        return "the `elements` attribute of /progress is not the rows of /states";
      return "";
    };
    problem = records();
  } catch (const AttrShapeError& e) {
    out << "progress:  INCONSISTENT: " << one_line(e.what()) << "\n";
    return kInfoIncomplete;
  }

  Hid done_ds =
      dataset_handle(H5Dopen2(file, "progress/done", H5P_DEFAULT), "H5Dopen /progress/done");
  const auto chunks = dataset_shape(done_ds);
  if (chunks.empty()) throw InputError("/progress/done is a scalar");
  hsize_t values = 1;
  for (const hsize_t x : chunks)
    values *= x;
  if (values != chunks[0]) {  // K × 2, 2 × K: not what tdsolve writes (K × 1 reads as K)
    out << "progress:  INCONSISTENT: /progress/done is not 1-D\n";
    return kInfoIncomplete;
  }
  std::vector<unsigned char> done(chunks[0]);
  check_status(H5Dread(done_ds, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, done.data()),
               "reading /progress/done");
  if (problem.empty() && done.size() != rows)
    problem = "/progress/done does not hold one flag per row of /states";
  if (!problem.empty()) {
    out << "progress:  INCONSISTENT: " << problem << "\n";
    return kInfoIncomplete;
  }
  const size_t complete = static_cast<size_t>(std::count(done.begin(), done.end(), 1));
  if (complete == done.size()) {
    // The live cells at the last step, for show only: a value that cannot be
    // read changes no verdict.
    std::int64_t last = 0;
    Hid live(H5Dopen2(file, "live", H5P_DEFAULT), H5Dclose);
    Hid space(live.valid() ? H5Dget_space(live) : H5I_INVALID_HID, H5Sclose);
    const hsize_t one = 1, at = space.valid() ? H5Sget_simple_extent_npoints(space) - 1 : 0;
    Hid mem(H5Screate_simple(1, &one, nullptr), H5Sclose);
    if (space.valid() &&
        H5Sselect_hyperslab(space, H5S_SELECT_SET, &at, nullptr, &one, nullptr) >= 0 &&
        H5Dread(live, H5T_NATIVE_INT64, mem, space, H5P_DEFAULT, &last) >= 0)
      out << "live:      " << last << " cells at the last step\n";
    H5Eclear2(H5E_DEFAULT);
    out << "progress:  complete (" << complete << " of " << done.size() << " snapshots)\n";
    return kInfoComplete;
  }
  out << "progress:  INCOMPLETE: " << complete << " of " << done.size()
      << " snapshots written; missing snapshots " << missing_ranges(done) << "\n";
  return kInfoIncomplete;
}

// One file: what it holds and whether it is complete. *command: the
// command line it records.
int describe_file(const std::string& path, std::ostream& out, std::string* command) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0)
    throw InputError("cannot open '" + path + "': " + std::strerror(errno));
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    throw InputError("'" + path + "' is not an HDF5 file");
  }
  Hid file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.valid()) throw InputError("cannot open '" + path + "': " + hdf5_error_text());

  out << "file:      " << path << " (" << st.st_size << " bytes)\n";
  out << "software:  " << root_attr(file, "software") << " " << root_attr(file, "version") << "\n";
  out << "created:   " << root_attr(file, "created") << "\n";
  out << "command:   " << root_attr(file, "command") << "\n";
  if (has_attr(file, "command")) *command = read_attr_string(file, "command");
  if (has_attr(file, "options")) {
    out << "options:   (the effective options, usable as --config)\n";
    std::istringstream options(read_attr_string(file, "options"));
    for (std::string line; std::getline(options, line);)
      out << "  " << line << "\n";
  }
  out << "input:     " << root_attr(file, "input") << "\n";
  if (has_attr(file, "with")) out << "with:      " << read_attr_string(file, "with") << "\n";
  // tdsolve fractal: its own records (no /progress/offsets).
  if (exists(file, "states")) return describe_fractal(file, out);

  const bool has_progress =
      exists(file, "progress") && exists(file, "progress/done") && exists(file, "progress/offsets");
  // The result dataset is the one /progress names: /distances (edm, cross),
  // /counts (hist), /triplet_energy or "" (triplet: /energy and its kin).
  std::string name = "distances";
  if (has_progress) {
    Hid progress = group_handle(H5Gopen2(file, "progress", H5P_DEFAULT), "H5Gopen /progress");
    try {
      if (has_attr(progress, "dataset")) name = read_attr_text(progress, "dataset");
    } catch (const AttrShapeError& e) {
      out << "progress:  INCONSISTENT: " << one_line(e.what()) << "\n";
      return kInfoIncomplete;
    }
    if (!name.empty() && name[0] == '/') name.erase(0, 1);
  }
  H5Eclear2(H5E_DEFAULT);
  // `tdsolve knn --radius` and `collide`: /pairs, and /progress names
  // nothing (no /energy).
  const bool radius =
      has_progress && name.empty() && exists(file, "pairs") && !exists(file, "energy");
  const bool triplet = has_progress && !radius && (name.empty() || name == "triplet_energy");
  if (!has_progress ||
      (radius    ? false
       : triplet ? !exists(file, "energy")
                 : (name != "distances" && name != "counts") || !exists(file, name.c_str()))) {
    out << "status:    not a tdsolve result (no /distances, /counts, /pairs or /energy with "
           "/progress)\n";
    return kInfoIncomplete;
  }
  if (radius) name = "pairs";
  const bool has_points = exists(file, "points");
  Hid values;
  std::vector<hsize_t> len;
  Kind kind = Kind::triplet;
  if (!triplet) {
    values = dataset_handle(H5Dopen2(file, name.c_str(), H5P_DEFAULT), "H5Dopen /" + name);
    len = dataset_shape(values);
    kind = radius                 ? Kind::radius
           : name == "counts"     ? Kind::hist
           : is_knn(file, values) ? Kind::knn
           : len.size() == 2      ? Kind::cross
                                  : Kind::edm;
    out << "dataset:   /" << name << " " << type_name(values) << shape_of(values)
        << attributes(values) << "\n";
  }
  if (has_points) {
    Hid points = dataset_handle(H5Dopen2(file, "points", H5P_DEFAULT), "H5Dopen /points");
    out << "points:    /points " << type_name(points) << shape_of(points) << "\n";
  }

  // The file is complete only if its own records agree with each other.
  std::string problem;
  // What the chunks cover: pairs (edm, hist) or matrix entries (cross).
  std::uint64_t total = 0, binned = 0;
  std::uint64_t row = 0;  // kNN: K, the values of one row (every offset is a multiple)
  const char* unit = "pairs";
  // An attribute of the wrong shape (an array where one value belongs) makes
  // the records disagree: INCONSISTENT, as the Python package says too.
  try {
    if (kind == Kind::edm) {
      const std::uint64_t n = has_attr(values, "n") ? read_attr_u64(values, "n") : 0;
      total = len.size() == 1 ? len[0] : 0;
      if (len.size() != 1)
        problem = "/distances is not 1-D";
      else if (len[0] != mapping::pair_count(n))
        problem = "/distances length is not C(n,2)";
    } else if (kind == Kind::cross) {
      unit = "values";
      total = len[0] * len[1];
      out << "matrix:    " << len[0] << " rows x " << len[1] << " cols\n";
      if ((has_attr(values, "rows") && read_attr_u64(values, "rows") != len[0]) ||
          (has_attr(values, "cols") && read_attr_u64(values, "cols") != len[1]))
        problem = "/distances is not rows x cols";
    } else if (kind == Kind::hist) {
      describe_hist(file, values, out, &problem, &total, &binned);
    } else if (kind == Kind::knn) {
      unit = "values";
      describe_knn(file, values, out, &problem, &total, &row);
    } else if (kind == Kind::radius) {
      describe_radius(file, values, out, &problem, &total);
    } else {
      unit = "triplets";
      describe_triplet(file, name, out, &problem, &total);
    }
    // Newer files record how many elements the chunks cover.
    Hid progress = group_handle(H5Gopen2(file, "progress", H5P_DEFAULT), "H5Gopen /progress");
    if (problem.empty() && has_attr(progress, "elements") &&
        read_attr_u64(progress, "elements") != total)
      problem = std::string("the `elements` attribute of /progress is not the ") + unit +
                " the chunks cover";
  } catch (const AttrShapeError& e) {
    out << "progress:  INCONSISTENT: " << one_line(e.what()) << "\n";
    return kInfoIncomplete;
  }

  Hid done_ds =
      dataset_handle(H5Dopen2(file, "progress/done", H5P_DEFAULT), "H5Dopen /progress/done");
  Hid off_ds =
      dataset_handle(H5Dopen2(file, "progress/offsets", H5P_DEFAULT), "H5Dopen /progress/offsets");
  const auto chunks = dataset_shape(done_ds), offs = dataset_shape(off_ds);
  // Read whole into 1-D buffers: a shape with more values than its first
  // dimension (K × 2, 2 × K) is not what tdsolve writes (K × 1 reads as K).
  const auto flat = [](const std::vector<hsize_t>& d) {
    hsize_t p = 1;
    for (const hsize_t x : d)
      p *= x;
    return !d.empty() && p == d[0];
  };
  if (chunks.empty() || offs.empty())
    throw InputError("'" + path + "': /progress/done or /progress/offsets is a scalar");
  if (!flat(chunks) || !flat(offs)) {
    out << "progress:  INCONSISTENT: /progress/done and /progress/offsets are not 1-D\n";
    return kInfoIncomplete;
  }
  std::vector<unsigned char> done(chunks[0]);
  std::vector<std::uint64_t> offsets(offs[0]);
  check_status(H5Dread(done_ds, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, done.data()),
               "reading /progress/done");
  check_status(H5Dread(off_ds, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, offsets.data()),
               "reading /progress/offsets");

  if (problem.empty() &&
      (offsets.size() != done.size() + 1 || offsets.empty() || offsets.back() != total ||
       !std::is_sorted(offsets.begin(), offsets.end())))
    problem = std::string("/progress/offsets does not cover ") +
              (kind == Kind::hist || kind == Kind::radius ? "the C(n,2) pairs"
               : kind == Kind::triplet                    ? "the C(n,3) triplets"
                                                          : "/distances");
  if (problem.empty() && kind == Kind::knn &&
      std::any_of(offsets.begin(), offsets.end(), [&](std::uint64_t o) { return o % row != 0; }))
    problem = "/progress/offsets are not whole rows of /distances (multiples of K)";

  const size_t complete = static_cast<size_t>(std::count(done.begin(), done.end(), 1));
  std::uint64_t pairs_done = 0;
  for (size_t c = 0; c < done.size() && c + 1 < offsets.size(); ++c)
    if (done[c]) pairs_done += offsets[c + 1] - offsets[c];
  // A finished histogram accounts for every pair.
  if (problem.empty() && kind == Kind::hist && complete == done.size() && binned != total)
    problem = "counts + underflow + overflow is not C(n,2)";
  if (!problem.empty()) {
    out << "progress:  INCONSISTENT: " << problem << "\n";
    return kInfoIncomplete;
  }
  if (complete == done.size()) {
    if (kind == Kind::triplet) print_energy(file, out);
    out << "progress:  complete (" << complete << " of " << done.size() << " chunks)\n";
    return kInfoComplete;
  }
  // A stopped histogram's counts cover exactly its finished chunks.
  if (kind == Kind::hist && complete > 0 && binned != pairs_done) {
    out << "progress:  INCONSISTENT: counts + underflow + overflow do not match the finished "
           "chunks\n";
    return kInfoIncomplete;
  }
  if (kind == Kind::triplet)
    out << "energy:    not yet: /energy, /energy_per_point and /forces are written when every "
           "chunk is done\n";
  char pct[32];
  std::snprintf(pct, sizeof pct, "%.1f", total ? 100.0 * pairs_done / total : 0.0);
  out << "progress:  INCOMPLETE: " << complete << " of " << done.size() << " chunks written ("
      << pct << "% of " << unit << "); missing chunks " << missing_ranges(done) << "\n";
  return kInfoIncomplete;
}

}  // namespace

int describe_result(const std::string& path, std::ostream& out) {
  const std::string of_partial = output_of_partial(path);
  const bool is_partial = !of_partial.empty();
  const std::string output = is_partial ? of_partial : path;
  const std::string partial = partial_path(output);
  struct stat st {};
  std::string file = path;
  if (!is_partial && stat(path.c_str(), &st) != 0 && stat(partial.c_str(), &st) == 0) {
    out << "note:      '" << path << "' does not exist yet: the run that writes it is unfinished\n";
    file = partial;
  }
  std::string command;
  const int code = describe_file(file, out, &command);
  if (file == output) {
    if (stat(partial.c_str(), &st) == 0)
      out << "note:      an unfinished newer run of this output is in '" << partial << "'\n";
    return code;
  }
  // An unfinished run: is someone still writing it?
  const LockHolder h = read_lock(output);
  if (h.locked) {
    out << "writer:    RUNNING (" << h.describe() << ")"
        << (h.can_tell ? "" : " [no file locks here: judged by the heartbeat]") << "\n";
  } else {
    const bool again = command.find(" --resume") != std::string::npos;
    out << "writer:    none: the run stopped or was killed; continue it (any rank count) with\n"
        << "           " << (command.empty() ? "the same command" : command)
        << (again || command.empty() ? "" : " --resume") << (command.empty() ? " and --resume" : "")
        << "\n";
  }
  return code == kInfoComplete ? kInfoIncomplete : code;
}

}  // namespace tdsolve::io
