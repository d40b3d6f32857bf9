#include "io/info.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <vector>

#include "core/error.hpp"
#include "io/h5.hpp"
#include "io/json.hpp"
#include "io/output_files.hpp"
#include "io/schema.hpp"
#include "io/walk.hpp"

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

// The schema's name of a dataset's type ("float32", ...: HDF5's standard
// types, either byte order; "string": any string, of fixed or variable
// length), "" for any other (_verdict.py _dtype_name).
std::string dtype_name(hid_t dset) {
  Hid t(H5Dget_type(dset), H5Tclose);
  if (!t.valid()) return "";
  if (H5Tget_class(t) == H5T_STRING) return "string";
  const std::pair<const char*, std::pair<hid_t, hid_t>> known[] = {
      {"uint8", {H5T_STD_U8LE, H5T_STD_U8BE}},
      {"int64", {H5T_STD_I64LE, H5T_STD_I64BE}},
      {"uint64", {H5T_STD_U64LE, H5T_STD_U64BE}},
      {"float32", {H5T_IEEE_F32LE, H5T_IEEE_F32BE}},
      {"float64", {H5T_IEEE_F64LE, H5T_IEEE_F64BE}}};
  for (const auto& [name, types] : known)
    if (H5Tequal(t, types.first) > 0 || H5Tequal(t, types.second) > 0) return name;
  H5Eclear2(H5E_DEFAULT);
  return "";
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

// A number the checks read (read_attr_u64, or with `floats`
// read_attr_f64): one of HDF5's standard integer types (with `floats`, or
// IEEE float types), all a tdsolve writes, else AttrShapeError. Another
// type (a 33-byte integer, a float of another exponent bias: a changed
// byte of its type) converts to some value, which is no record
// (_verdict.py _attr_number).
void require_standard_number(hid_t obj, const char* name, bool floats) {
  Hid attr = attr_handle(H5Aopen(obj, name, H5P_DEFAULT), std::string("H5Aopen ") + name);
  Hid type = type_handle(H5Aget_type(attr), std::string("H5Aget_type ") + name);
  const hid_t integers[] = {H5T_STD_I8LE,  H5T_STD_I8BE,  H5T_STD_I16LE, H5T_STD_I16BE,
                            H5T_STD_I32LE, H5T_STD_I32BE, H5T_STD_I64LE, H5T_STD_I64BE,
                            H5T_STD_U8LE,  H5T_STD_U8BE,  H5T_STD_U16LE, H5T_STD_U16BE,
                            H5T_STD_U32LE, H5T_STD_U32BE, H5T_STD_U64LE, H5T_STD_U64BE};
  const hid_t ieee[] = {H5T_IEEE_F32LE, H5T_IEEE_F32BE, H5T_IEEE_F64LE, H5T_IEEE_F64BE};
  for (const hid_t t : integers)
    if (H5Tequal(type, t) > 0) return;
  if (floats)
    for (const hid_t t : ieee)
      if (H5Tequal(type, t) > 0) return;
  H5Eclear2(H5E_DEFAULT);
  throw AttrShapeError(std::string("attribute '") + name + "' is of no standard " +
                       (floats ? "number" : "integer") + " type");
}

std::uint64_t record_u64(hid_t obj, const char* name) {
  const std::uint64_t v = read_attr_u64(obj, name);
  require_standard_number(obj, name, false);
  return v;
}

double record_f64(hid_t obj, const char* name) {
  const double v = read_attr_f64(obj, name);
  require_standard_number(obj, name, true);
  return v;
}

bool exists(hid_t file, const char* name) {
  const bool yes = H5Lexists(file, name, H5P_DEFAULT) > 0;
  H5Eclear2(H5E_DEFAULT);
  return yes;
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

// The total energy of a complete triplet file, for show only: a value that
// cannot be read changes no verdict.
void print_energy(hid_t file, std::ostream& out) {
  double e = 0;
  Hid energy(H5Dopen2(file, "energy", H5P_DEFAULT), H5Dclose);
  if (energy.valid() && H5Dread(energy, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, &e) >= 0)
    out << "energy:    " << number(e)
        << (exists(file, "frame_energy")
                ? " (the mean over the frames of the total, /energy; each frame's: /frame_energy)\n"
                : " (the total, /energy)\n");
  else
    out << "energy:    (cannot be read as a number)\n";
  H5Eclear2(H5E_DEFAULT);
}

// --- what the file says it is ----------------------------------------------

// The root's `kind` and `schema_version` (files of older versions have
// neither). problem: the two disagree with each other or have the wrong
// type (INCONSISTENT). A newer schema_version, or a kind this build does not
// know, is a file it cannot read: InputError (exit 1).
struct Recorded {
  bool has = false;
  std::string kind;
  std::uint64_t version = 0;
  std::string problem;
};

// Whether attribute `name` of obj holds one value of HDF5 class `cls`.
bool one_of_class(hid_t obj, const char* name, H5T_class_t cls) {
  Hid attr(H5Aopen(obj, name, H5P_DEFAULT), H5Aclose);
  Hid type(attr.valid() ? H5Aget_type(attr) : H5I_INVALID_HID, H5Tclose);
  H5Eclear2(H5E_DEFAULT);
  return type.valid() && H5Tget_class(type) == cls && attr_values(attr) == 1;
}

Recorded read_recorded(hid_t file, const std::string& path) {
  Recorded r;
  const bool has_kind = has_attr(file, "kind"), has_version = has_attr(file, "schema_version");
  H5Eclear2(H5E_DEFAULT);
  if (!has_kind && !has_version) return r;
  r.has = true;
  if (!has_version) {
    r.problem = "the root has a `kind` attribute but no `schema_version`";
    return r;
  }
  if (!one_of_class(file, "schema_version", H5T_INTEGER)) {
    r.problem = "the root's `schema_version` attribute is not one integer";
    return r;
  }
  r.version = record_u64(file, "schema_version");
  if (r.version == 0) {
    r.problem = "the root's `schema_version` attribute is 0 (versions start at 1)";
    return r;
  }
  if (r.version > schema_version())
    throw InputError("'" + path + "' was written by a newer tdsolve: its schema_version is " +
                     std::to_string(r.version) + ", this tdsolve reads files up to " +
                     std::to_string(schema_version()));
  if (!has_kind) {
    r.problem = "the root has a `schema_version` attribute but no `kind`";
    return r;
  }
  if (!one_of_class(file, "kind", H5T_STRING)) {
    r.problem = "the root's `kind` attribute is not one string";
    return r;
  }
  r.kind = read_attr_text(file, "kind");
  if (!schema_kind(r.kind))
    throw InputError("'" + path + "' says it is of kind '" + r.kind +
                     "', which this tdsolve (schema_version " + std::to_string(schema_version()) +
                     ") does not know: written by a newer tdsolve?");
  return r;
}

// Whether /distances is a kNN result: /indices beside it, or `layout` = "knn"
// (read only when it is one string; the Python package decides alike).
bool is_knn(hid_t file, hid_t values) {
  if (exists(file, "indices")) return true;
  if (!has_attr(values, "layout")) return false;
  if (!one_of_class(values, "layout", H5T_STRING)) return false;
  return read_attr_string(values, "layout") == "knn";
}

// The kind of a file that does not record one (written before files did),
// told by its datasets as readers always did; "" when it is no tdsolve
// result (*why says so).
std::string guess_kind(hid_t file, std::string* why) {
  if (exists(file, "states")) {  // tdsolve fractal: its own records (no /progress/offsets)
    if (exists(file, "progress") && exists(file, "progress/done")) return "fractal";
    *why = "not a tdsolve result (/states without /progress/done)";
    return "";
  }
  const bool has_progress =
      exists(file, "progress") && exists(file, "progress/done") && exists(file, "progress/offsets");
  // The result dataset is the one /progress names: /distances (edm, cross,
  // knn), /counts (hist, adf), /triplet_energy or "" (triplet), "" (radius, collide).
  std::string name = "distances";
  if (has_progress) {
    Hid progress = group_handle(H5Gopen2(file, "progress", H5P_DEFAULT), "H5Gopen /progress");
    if (has_attr(progress, "dataset")) name = read_attr_text(progress, "dataset");
    if (!name.empty() && name[0] == '/') name.erase(0, 1);
  }
  H5Eclear2(H5E_DEFAULT);
  const bool radius =
      has_progress && name.empty() && exists(file, "pairs") && !exists(file, "energy");
  const bool triplet = has_progress && !radius && (name.empty() || name == "triplet_energy");
  if (!has_progress ||
      (radius    ? false
       : triplet ? !exists(file, "energy")
                 : (name != "distances" && name != "counts") || !exists(file, name.c_str()))) {
    *why = "not a tdsolve result (no /distances, /counts, /pairs or /energy with /progress)";
    return "";
  }
  if (triplet) return "triplet";
  if (radius) name = "pairs";
  Hid values = dataset_handle(H5Dopen2(file, name.c_str(), H5P_DEFAULT), "H5Dopen /" + name);
  if (radius) return has_attr(values, "criterion") ? "collide" : "radius";
  if (name == "counts") return exists(file, "dropped") ? "adf" : "hist";  // adf: /dropped
  if (is_knn(file, values)) return "knn";
  return dataset_shape(values).size() == 2 ? "cross" : "edm";
}

std::string strip_slash(std::string s) {
  if (!s.empty() && s[0] == '/') s.erase(0, 1);
  return s;
}

// Why a file that records `kind` is not one (its datasets say `guessed`,
// "" for none): a dataset the kind needs is missing, /progress names
// another dataset, or the datasets are another kind's.
std::string contradiction(hid_t file, const std::string& kind, const std::string& guessed) {
  for (const Json* d : schema_datasets(kind)) {
    const Json* required = d->find("required");
    const std::string& name = d->at("name").str();
    if (required && required->boolean() && !exists(file, name.c_str())) return "no /" + name;
  }
  const Json& allowed = schema_kind(kind)->at("progress").at("dataset");
  Hid progress = group_handle(H5Gopen2(file, "progress", H5P_DEFAULT), "H5Gopen /progress");
  if (has_attr(progress, "dataset")) {
    const std::string named = read_attr_text(progress, "dataset");
    bool ok = false;
    std::string list;
    for (const Json& a : allowed.items()) {
      ok = ok || strip_slash(a.str()) == strip_slash(named);
      list += (list.empty() ? "\"" : " or \"") + a.str() + "\"";
    }
    if (!ok) return "the `dataset` attribute of /progress is \"" + named + "\", not " + list;
  }
  return "the file says it is of kind " + kind + ", but its datasets are " +
         (guessed.empty() ? "not those of kind " + kind : "those of kind " + guessed);
}

// --- the checks (schema.json "checks"; python/tdsolve/_schema.py is their twin) ---

// What the checks of a file found: the first record that disagrees (""
// none), the sizes they named, and /progress's flags and offsets.
struct Outcome {
  std::string problem;
  std::map<std::string, std::uint64_t> vars;
  std::vector<unsigned char> done;
  std::vector<std::uint64_t> offsets;
};

// Runs a kind's checks in their order: each step binds a size or checks a
// record, and the first record that disagrees ends them (only the reading
// of /progress still happens, as it always did). HDF5 errors (a value that
// cannot be read or converted, a group where a dataset belongs) throw
// H5Error or InputError; an attribute of several values where one belongs
// throws AttrShapeError.
class Checker {
 public:
  Checker(hid_t file, const std::string& path, const std::string& kind)
      : file_(file), path_(path), kind_(kind), spec_(*schema_kind(kind)) {}

  Outcome run() {
    for (const Json& st : spec_.at("checks").items()) {
      const bool progress = st.find("progress") != nullptr;
      if (!o_.problem.empty() && !progress) continue;
      if (const Json* when = st.find("when"))
        if (!o_.problem.empty() || eval(when->str()) == 0) continue;
      if (!progress)
        step(st);
      else if (!read_progress())
        break;
    }
    return std::move(o_);
  }

 private:
  std::uint64_t eval(const std::string& e) {
    const ExprVar var = [&](const std::string& name, std::uint64_t* v) {
      const auto it = o_.vars.find(name);
      if (it == o_.vars.end()) return false;
      *v = it->second;
      return true;
    };
    const ExprFile fn = [&](const std::string& f, const std::vector<std::string>& a) {
      return call(f, a);
    };
    return eval_expr(e, var, fn);
  }

  std::uint64_t call(const std::string& f, const std::vector<std::string>& a) {
    if (f == "exists") return exists(file_, a[0].c_str());
    if (f == "named") return named(a[0]);
    if (f == "attr") {
      Hid obj = open(a[0]);
      return record_u64(obj, a[1].c_str());
    }
    Hid d = dataset(a[0]);
    if (f == "dim") {
      const auto dims = dataset_shape(d);
      const std::uint64_t axis = std::strtoull(a[1].c_str(), nullptr, 10);
      return axis < dims.size() ? dims[axis] : 0;
    }
    if (f == "at" || f == "rowsum") {  // i: a number or a size
      std::uint64_t i = 0;
      if (std::isdigit(static_cast<unsigned char>(a[1][0]))) {
        i = std::strtoull(a[1].c_str(), nullptr, 10);
      } else {
        const auto it = o_.vars.find(a[1]);
        if (it == o_.vars.end()) throw SchemaError("the size '" + a[1] + "' is not known here");
        i = it->second;
      }
      const auto dims = dataset_shape(d);
      auto cached = values_.find(a[0]);
      if (cached == values_.end()) {
        hsize_t count = 1;
        for (const hsize_t x : dims)
          count *= x;
        std::vector<std::int64_t> v(count);
        if (count)
          check_status(H5Dread(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()),
                       "reading /" + a[0]);
        cached = values_.emplace(a[0], std::move(v)).first;
      }
      const std::vector<std::int64_t>& v = cached->second;
      if (f == "at") return i < v.size() ? static_cast<std::uint64_t>(v[i]) : 0;
      if (dims.empty() || i >= dims[0]) return 0;
      const size_t row = v.size() / dims[0];
      std::uint64_t s = 0;
      for (size_t j = i * row; j < (i + 1) * row; ++j)
        s += static_cast<std::uint64_t>(v[j]);
      return s;
    }
    // sum: every value as int64, added modulo 2^64.
    hsize_t count = 1;
    for (const hsize_t x : dataset_shape(d))
      count *= x;
    std::vector<std::int64_t> v(count);
    if (count)
      check_status(H5Dread(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()),
                   "reading /" + a[0]);
    std::uint64_t s = 0;
    for (const std::int64_t x : v)
      s += static_cast<std::uint64_t>(x);
    return s;
  }

  // Whether /progress's `dataset` attribute names D (without it: the kind's
  // first, as a file of this kind writes it).
  bool named(const std::string& d) {
    Hid progress = group_handle(H5Gopen2(file_, "progress", H5P_DEFAULT), "H5Gopen /progress");
    const std::string name = has_attr(progress, "dataset")
                                 ? read_attr_text(progress, "dataset")
                                 : spec_.at("progress").at("dataset").items().at(0).str();
    return strip_slash(name) == strip_slash(d);
  }

  Hid dataset(const std::string& name) {
    return dataset_handle(H5Dopen2(file_, name.c_str(), H5P_DEFAULT), "H5Dopen /" + name);
  }
  // A dataset, a group (the schema says which) or "" the root.
  Hid open(const std::string& name) {
    if (name.empty()) return Hid(H5Gopen2(file_, "/", H5P_DEFAULT), H5Gclose);
    for (const Json* d : schema_datasets(kind_))
      if (d->at("name").str() == name && d->find("group") && d->at("group").boolean())
        return group_handle(H5Gopen2(file_, name.c_str(), H5P_DEFAULT), "H5Gopen /" + name);
    return dataset(name);
  }

  // An attribute as the schema types it: one uint64 or float64 (HDF5
  // converting), or one string. t: its type.
  void read_typed(hid_t obj, const std::string& t, const std::string& name) {
    if (t == "uint64")
      record_u64(obj, name.c_str());
    else if (t == "float64")
      record_f64(obj, name.c_str());
    else
      read_attr_text(obj, name.c_str());
  }

  void step(const Json& st) {
    const auto message = [&] { o_.problem = st.at("message").str(); };
    if (const Json* names = st.find("open")) {
      for (const Json& n : names->items())
        if (exists(file_, n.str().c_str())) dataset(n.str());
      return;
    }
    if (const Json* r = st.find("read")) {
      Hid obj = open(r->str());
      // A dataset of variants: its picking attribute says which (an
      // attribute of another variant is not read).
      const std::string by = schema_variant_by(kind_, r->str());
      const std::string variant =
          by.empty() ? ""
                     : schema_variant(kind_, r->str(),
                                      has_attr(obj, by.c_str()) ? read_attr_text(obj, by.c_str())
                                                                : std::string());
      for (const Json& a : st.at("attrs").items()) {
        const std::string t = schema_attr_type(kind_, r->str(), a.str(), variant);
        if (!t.empty() && has_attr(obj, a.str().c_str())) read_typed(obj, t, a.str());
      }
      return;
    }
    if (const Json* let = st.find("let")) {
      std::uint64_t v = 0;
      if (const Json* e = st.find("expr")) {
        v = eval(e->str());
      } else if (const Json* ref = st.find("attr")) {
        const std::string& s = ref->str();
        const size_t at = s.find('@');
        Hid obj = open(s.substr(0, at));
        const std::string name = s.substr(at + 1);
        if (has_attr(obj, name.c_str()))
          v = record_u64(obj, name.c_str());
        else if (const Json* d = st.find("default"))
          v = eval(d->str());
        else
          return message();
      } else {
        std::int64_t x = 0;
        if (!read_scalar_i64(file_, st.at("scalar").str().c_str(), &x)) return message();
        v = static_cast<std::uint64_t>(x);
      }
      o_.vars[let->str()] = v;
      return;
    }
    const std::string check = st.at("check").str();
    if (check == "true") {
      if (eval(st.at("expr").str()) == 0) message();
    } else if (check == "exists") {
      if (!exists(file_, st.at("of").str().c_str())) message();
    } else if (check == "rank") {
      Hid d = dataset(st.at("of").str());
      if (dataset_shape(d).size() != static_cast<size_t>(st.at("rank").number())) message();
    } else if (check == "shape") {
      const std::string& name = st.at("of").str();
      if (!exists(file_, name.c_str())) {
        const Json* missing = st.find("missing");
        o_.problem = missing ? missing->str() : st.at("message").str();
        return;
      }
      Hid d = dataset(name);
      const auto dims = dataset_shape(d);
      const auto& want = st.at("shape").items();
      bool ok = dims.size() == want.size();
      for (size_t i = 0; ok && i < want.size(); ++i)
        ok = want[i].str() == "*" || dims[i] == eval(want[i].str());
      if (!ok) return message();
      if (st.find("values")) {  // the values must read as float64
        hsize_t count = 1;
        for (const hsize_t x : dims)
          count *= x;
        std::vector<double> v(count);
        if (count)
          check_status(H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()),
                       "reading /" + name);
      }
    } else if (check == "attr") {
      const std::string& s = st.at("attr").str();
      const size_t at = s.find('@');
      Hid obj = open(s.substr(0, at));
      const std::string name = s.substr(at + 1);
      if (has_attr(obj, name.c_str()) &&
          record_u64(obj, name.c_str()) != eval(st.at("equals").str()))
        message();
    } else if (check == "rising") {  // 0, strictly increasing, up to `to`
      const std::string& name = st.at("of").str();
      Hid d = dataset(name);
      hsize_t count = 1;
      for (const hsize_t x : dataset_shape(d))
        count *= x;
      std::vector<std::int64_t> at(count);
      if (count)
        check_status(H5Dread(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, at.data()),
                     "reading /" + name);
      bool rising = !at.empty() && at[0] == 0;
      for (size_t i = 1; rising && i < at.size(); ++i)
        rising = at[i] > at[i - 1];
      if (!rising || static_cast<std::uint64_t>(at.back()) != eval(st.at("to").str())) message();
    } else if (check == "offsets") {  // one more than the flags, up to `to`, non-decreasing
      const auto& off = o_.offsets;
      if (off.size() != o_.done.size() + 1 || off.back() != eval(st.at("to").str()) ||
          !std::is_sorted(off.begin(), off.end()))
        message();
    } else if (check == "dtype") {  // where it exists, one of the dtypes its declaration allows
      const std::string& name = st.at("of").str();
      if (!exists(file_, name.c_str())) return;
      const std::string t = dtype_name(dataset(name));
      bool ok = false;
      for (const Json* d : schema_datasets(kind_))
        if (d->at("name").str() == name)
          for (const Json& a : d->at("dtype").items())
            ok = ok || a.str() == t;
      if (!ok) message();
    } else if (check == "offsets_multiple") {
      const std::uint64_t k = eval(st.at("of").str());
      if (k == 0 || std::any_of(o_.offsets.begin(), o_.offsets.end(),
                                [&](std::uint64_t x) { return x % k != 0; }))
        message();
    } else if (check == "each") {  // expr holds for every index 0 .. count-1; the first that fails
      const std::string& index = st.at("index").str();
      const std::uint64_t count = eval(st.at("count").str());
      const auto before = o_.vars.find(index);
      const bool had = before != o_.vars.end();
      const std::uint64_t kept = had ? before->second : 0;
      for (std::uint64_t i = 0; i < count; ++i) {
        o_.vars[index] = i;
        if (eval(st.at("expr").str()) == 0) {
          o_.problem = st.at("message").str() + " (" + index + " = " + std::to_string(i) + ")";
          break;
        }
      }
      if (had)
        o_.vars[index] = kept;
      else
        o_.vars.erase(index);
    } else {
      throw SchemaError("schema.json: unknown check \"" + check + "\"");
    }
  }

  // /progress/done (and /progress/offsets, unless the kind has none), each
  // read whole into a 1-D buffer: a scalar cannot be read so (exit 1), a
  // shape with more values than its first dimension (K x 2, 2 x K) is not
  // what tdsolve writes (INCONSISTENT; K x 1 reads as K). Binds chunks,
  // finished (flags that are 1), complete (all are) and covered (the
  // elements of the chunks flagged anything but 0, as readers always counted
  // them). False when the checks end here.
  bool read_progress() {
    const Json* offsets = spec_.at("progress").find("offsets");
    const bool with_offsets = !offsets || offsets->boolean();
    std::vector<std::string> names = {"progress/done"};
    if (with_offsets) names.push_back("progress/offsets");
    std::vector<Hid> ds;
    std::vector<std::vector<hsize_t>> shapes;
    for (const std::string& n : names) {
      ds.push_back(dataset(n));
      shapes.push_back(dataset_shape(ds.back()));
      if (shapes.back().empty()) throw InputError("'" + path_ + "': /" + n + " is a scalar");
    }
    for (size_t i = 0; i < names.size(); ++i) {
      hsize_t values = 1;
      for (const hsize_t x : shapes[i])
        values *= x;
      if (values != shapes[i][0]) {
        if (o_.problem.empty()) o_.problem = "/" + names[i] + " is not 1-D";
        return false;
      }
    }
    o_.done.resize(shapes[0][0]);
    check_status(H5Dread(ds[0], H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, o_.done.data()),
                 "reading /progress/done");
    if (with_offsets) {
      o_.offsets.resize(shapes[1][0]);
      check_status(
          H5Dread(ds[1], H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, o_.offsets.data()),
          "reading /progress/offsets");
    }
    std::uint64_t finished = 0, covered = 0;
    for (size_t c = 0; c < o_.done.size(); ++c) {
      finished += o_.done[c] == 1;
      if (o_.done[c] && c + 1 < o_.offsets.size()) covered += o_.offsets[c + 1] - o_.offsets[c];
    }
    o_.vars["chunks"] = o_.done.size();
    o_.vars["finished"] = finished;
    o_.vars["complete"] = finished == o_.done.size();
    o_.vars["covered"] = covered;
    return true;
  }

  hid_t file_;
  const std::string& path_;
  std::string kind_;
  const Json& spec_;
  Outcome o_;
  std::map<std::string, std::vector<std::int64_t>> values_;  // at, rowsum: a dataset's values
};

// --- what info shows of each kind (for show only: it changes no verdict) ---

std::string text_attr(hid_t obj, const char* a) {
  return has_attr(obj, a) ? read_attr_text(obj, a) : std::string("(not recorded)");
}

// The values of a 1-D string dataset (fixed or variable length), for show.
std::vector<std::string> read_strings(hid_t file, const char* name) {
  Hid d = dataset_handle(H5Dopen2(file, name, H5P_DEFAULT), std::string("H5Dopen /") + name);
  Hid ftype = type_handle(H5Dget_type(d), std::string("H5Dget_type /") + name);
  const auto dims = dataset_shape(d);
  if (H5Tget_class(ftype) != H5T_STRING || dims.size() != 1) return {};
  std::vector<std::string> out;
  Hid mtype = type_handle(H5Tcopy(H5T_C_S1), "H5Tcopy");
  check_status(H5Tset_cset(mtype, H5Tget_cset(ftype)), "H5Tset_cset");
  if (H5Tis_variable_str(ftype) > 0) {
    check_status(H5Tset_size(mtype, H5T_VARIABLE), "H5Tset_size");
    std::vector<char*> p(dims[0], nullptr);
    if (!p.empty())
      check_status(H5Dread(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, p.data()),
                   std::string("reading /") + name);
    for (char* x : p)
      out.emplace_back(x ? x : "");
    Hid space = space_handle(H5Dget_space(d), "H5Dget_space");
    if (!p.empty()) H5Dvlen_reclaim(mtype, space, H5P_DEFAULT, p.data());
    return out;
  }
  const size_t size = H5Tget_size(ftype) + 1;  // room for the terminating NUL
  check_status(H5Tset_size(mtype, size), "H5Tset_size");
  std::vector<char> buf(dims[0] * size, '\0');
  if (!buf.empty())
    check_status(H5Dread(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()),
                 std::string("reading /") + name);
  for (hsize_t i = 0; i < dims[0]; ++i)
    out.emplace_back(buf.data() + i * size, strnlen(buf.data() + i * size, size));
  return out;
}

// The values of a 1-D int64 dataset, for show.
std::vector<std::int64_t> read_i64(hid_t file, const char* name) {
  Hid d = dataset_handle(H5Dopen2(file, name, H5P_DEFAULT), std::string("H5Dopen /") + name);
  const auto dims = dataset_shape(d);
  if (dims.size() != 1) return {};
  std::vector<std::int64_t> v(dims[0]);
  if (!v.empty())
    check_status(H5Dread(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()),
                 std::string("reading /") + name);
  return v;
}

std::string dataset_line(hid_t file, const char* name) {
  Hid d = dataset_handle(H5Dopen2(file, name, H5P_DEFAULT), std::string("H5Dopen /") + name);
  return std::string("/") + name + " " + type_name(d) + shape_of(d);
}

// The lines of a consistent file of `kind` between its dataset and its
// progress, from its records and the sizes its checks named.
void show(hid_t file, const std::string& kind, const std::map<std::string, std::uint64_t>& v,
          std::ostream& out) {
  const auto at = [&](const char* name) {
    const auto it = v.find(name);
    return it == v.end() ? std::uint64_t(0) : it->second;
  };
  if (kind == "cross") {
    out << "matrix:    " << at("rows") << " rows x " << at("cols") << " cols\n";
  } else if (kind == "hist") {
    Hid counts = dataset_handle(H5Dopen2(file, "counts", H5P_DEFAULT), "H5Dopen /counts");
    out << "histogram: " << at("bins") << " bins";
    if (has_attr(counts, "with_n"))
      out << " of the " << at("n") << " x " << at("with_n") << " pairs of two sets (--with)";
    if (has_attr(counts, "range_lo") && has_attr(counts, "range_hi"))
      out << " over [" << number(read_attr_f64(counts, "range_lo")) << ", "
          << number(read_attr_f64(counts, "range_hi")) << "]";
    out << (has_attr(counts, "box")
                ? " (periodic box " + read_attr_text(counts, "box") +
                      (has_attr(counts, "tilt") ? ", tilt " + read_attr_text(counts, "tilt") : "") +
                      ")"
                : "")
        << "\n";
    // A run with --types: a histogram per type pair (/pair, /pair_total), of
    // the types /types, /type_sizes. At most 8 of each are shown.
    const auto listed = [](const std::vector<std::string>& names, const auto& value,
                           const char* unit) {
      std::string s;
      for (size_t i = 0; i < names.size() && i < 8; ++i)
        s += (i ? ", " : "") + names[i] + " " + value(i);
      return s + (names.size() > 8 ? ", ..." : "") + unit;
    };
    if (at("groups") > 0) {
      const auto types = read_strings(file, "types");
      const auto sizes = read_i64(file, "type_sizes");
      out << "types:     " << at("T") << " types"
          << (has_attr(counts, "type_source") ? " (" + read_attr_text(counts, "type_source") + ")"
                                              : std::string())
          << ": "
          << listed(
                 types, [&](size_t i) { return i < sizes.size() ? std::to_string(sizes[i]) : "?"; },
                 " atoms")
          << "\n";
      const auto pairs = read_strings(file, "pair");
      const auto totals = read_i64(file, "pair_total");
      out << "pairs:     " << at("groups") << " type pairs, a histogram each: "
          << listed(
                 pairs,
                 [&](size_t i) { return i < totals.size() ? std::to_string(totals[i]) : "?"; },
                 " pairs a frame")
          << "\n";
    }
    if (has_attr(counts, "excluded") || has_attr(counts, "exclude"))
      out << "excluded:  " << at("excluded") << " pairs a frame"
          << (has_attr(counts, "exclude") ? " (" + read_attr_text(counts, "exclude") + ")"
                                          : std::string())
          << "\n";
    const auto under = static_cast<std::int64_t>(at("under"));
    const auto over = static_cast<std::int64_t>(at("over"));
    out << "counts:    " << at("binned") - at("under") - at("over") << " in range, underflow "
        << under << ", overflow " << over << " (of " << at("counted") << " pairs"
        << (at("groups") > 0 ? ", over the type pairs" : "") << ")\n";
    if (exists(file, "rdf")) {
      Hid rdf = dataset_handle(H5Dopen2(file, "rdf", H5P_DEFAULT), "H5Dopen /rdf");
      out << "rdf:       /rdf " << type_name(rdf) << shape_of(rdf) << attributes(rdf) << "\n";
    } else {
      out << "rdf:       none (written with --box, or with --norm density or none)\n";
    }
    if (exists(file, "cumulative")) {
      Hid c = dataset_handle(H5Dopen2(file, "cumulative", H5P_DEFAULT), "H5Dopen /cumulative");
      out << "cumulative: /cumulative " << type_name(c) << shape_of(c) << attributes(c) << "\n";
    }
  } else if (kind == "adf") {
    Hid counts = dataset_handle(H5Dopen2(file, "counts", H5P_DEFAULT), "H5Dopen /counts");
    out << "angles:    " << at("adfs") << " ADF" << (at("adfs") == 1 ? "" : "s") << " ("
        << text_attr(counts, "triples") << "), " << at("bins") << " bins in "
        << text_attr(counts, "ordinate") << "s"
        << (has_attr(counts, "box")
                ? " (periodic box " + read_attr_text(counts, "box") +
                      (has_attr(counts, "tilt") ? ", tilt " + read_attr_text(counts, "tilt") : "") +
                      ")"
                : "")
        << "\n";
    out << "centres:   " << dataset_line(file, "centres") << "\n";
    out << "dropped:   " << dataset_line(file, "dropped") << "\n";
    for (const char* name : {"pdf", "cumulative"})
      if (exists(file, name)) {
        Hid d = dataset_handle(H5Dopen2(file, name, H5P_DEFAULT), std::string("H5Dopen /") + name);
        out << name << (name[0] == 'p' ? ":       /" : ": /") << name << " " << type_name(d)
            << shape_of(d) << "\n";
      }
  } else if (kind == "knn") {
    Hid d = dataset_handle(H5Dopen2(file, "distances", H5P_DEFAULT), "H5Dopen /distances");
    out << "knn:       " << at("n") << " points, the " << at("K") << " nearest of each (metric "
        << text_attr(d, "metric") << ", precision " << text_attr(d, "precision") << ")\n";
    out << "indices:   " << dataset_line(file, "indices") << "\n";
  } else if (kind == "radius" || kind == "collide") {
    Hid pairs = dataset_handle(H5Dopen2(file, "pairs", H5P_DEFAULT), "H5Dopen /pairs");
    if (kind == "collide")
      out << "collide:   " << at("m") << " overlapping pairs (" << text_attr(pairs, "criterion")
          << ") of " << at("n") << " spheres in "
          << (has_attr(pairs, "dim") ? std::to_string(read_attr_u64(pairs, "dim")) : "?")
          << "-D (of " << at("total") << " pairs; precision " << text_attr(pairs, "precision")
          << ")\n";
    else
      out << "radius:    " << at("m") << " pairs within "
          << (has_attr(pairs, "radius") ? number(read_attr_f64(pairs, "radius")) : "(not recorded)")
          << " of " << at("n") << " points (of " << at("total") << " pairs; metric "
          << text_attr(pairs, "metric") << ", precision " << text_attr(pairs, "precision") << ")\n";
    out << "distances: " << dataset_line(file, "distances") << "\n";
    if (kind == "collide") out << "count:     /count = " << std::int64_t(at("count")) << "\n";
  } else if (kind == "triplet") {
    Hid energy = dataset_handle(H5Dopen2(file, "energy", H5P_DEFAULT), "H5Dopen /energy");
    const std::uint64_t frames = at("frames");
    out << "triplets:  " << at("n") << " points in 3-D, "
        << (frames ? at("total") / frames : at("total")) << " triplets i<j<k (C(n,3))";
    if (frames)
      out << " in each of " << frames << " frames (/frames; " << at("total")
          << " in all), each frame's energy in /frame_energy";
    out << "\n";
    const auto length = [&](const char* a) {
      if (!has_attr(energy, a)) return std::string("(not recorded)");
      const double x = read_attr_f64(energy, a);
      return std::isinf(x) ? std::string("none") : number(x);
    };
    // The potential's parameters, those the schema gives its variant of
    // /energy (atm's nu and cutoffs, inf when not given; sw's, the columns of
    // a LAMMPS .sw file), in its order.
    const std::string potential = text_attr(energy, "potential");
    std::string parameters;
    for (const auto& [a, type] :
         schema_variant_attrs(kind, "energy", schema_variant(kind, "energy", potential))) {
      // Optional ones (atm --nu-types: nu_types, type_names, type_source;
      // no nu) only where the file has them, text as text.
      if (!type.empty() && type.back() == '?' && !has_attr(energy, a.c_str())) continue;
      if (type.rfind("string", 0) == 0) {
        parameters +=
            (parameters.empty() ? "" : ", ") + a + " " + read_attr_text(energy, a.c_str());
        continue;
      }
      const bool cutoff = a.rfind("cutoff", 0) == 0;
      const std::string v = cutoff                        ? length(a.c_str())
                            : has_attr(energy, a.c_str()) ? number(read_attr_f64(energy, a.c_str()))
                                                          : std::string("(not recorded)");
      parameters += (parameters.empty() ? "" : ", ") + a + " " + v;
    }
    out << "potential: " << potential << " (" << parameters << "), precision "
        << text_attr(energy, "precision") << ", block "
        << (has_attr(energy, "block") ? std::to_string(read_attr_u64(energy, "block"))
                                      : "(not recorded)")
        << "\n";
    if (has_attr(energy, "formula"))
      out << "formula:   " << read_attr_text(energy, "formula") << "\n";
    out << "datasets:  /energy " << type_name(energy) << shape_of(energy);
    for (const char* b : {"energy_per_point", "forces", "progress/sums"})
      out << ", " << dataset_line(file, b);
    {  // the sums' limb window (output.md): first_limb and the columns
      Hid sums =
          dataset_handle(H5Dopen2(file, "progress/sums", H5P_DEFAULT), "H5Dopen /progress/sums");
      const auto shape = dataset_shape(sums);
      const std::uint64_t first =
          has_attr(sums, "first_limb") ? read_attr_u64(sums, "first_limb") : 0;
      if (shape.size() == 2 && shape[1] > 0)
        out << " (limbs " << first << ".." << first + shape[1] - 1 << " of 69)";
    }
    out << "\n";
    if (exists(file, "triplet_energy")) {
      Hid values =
          dataset_handle(H5Dopen2(file, "triplet_energy", H5P_DEFAULT), "H5Dopen /triplet_energy");
      out << "stored:    /triplet_energy " << type_name(values) << shape_of(values)
          << attributes(values) << "\n";
    } else {
      out << "stored:    no triplet energies (tdsolve triplet --store-triplets writes "
             "/triplet_energy)\n";
    }
  } else if (kind == "fractal") {
    Hid states = dataset_handle(H5Dopen2(file, "states", H5P_DEFAULT), "H5Dopen /states");
    out << "fractal:   " << text_attr(states, "shape") << " (table " << text_attr(states, "table")
        << "): s = " << at("s") << ", k = " << at("k") << " replicas, level " << at("level") << ": "
        << at("side") << " x " << at("side") << " embedding, " << at("cells") << " cells\n";
    out << "rule:      " << text_attr(states, "rule") << ", init " << text_attr(states, "init")
        << "\n";
    out << "strategy:  layout " << text_attr(states, "layout") << ", map "
        << text_attr(states, "map") << ", rho "
        << (has_attr(states, "rho") ? std::to_string(read_attr_u64(states, "rho"))
                                    : "(not recorded)")
        << "\n";
    const std::uint64_t rows = at("rows");
    Hid steps = dataset_handle(H5Dopen2(file, "steps", H5P_DEFAULT), "H5Dopen /steps");
    std::vector<std::int64_t> s(rows);
    check_status(H5Dread(steps, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, s.data()),
                 "reading /steps");
    out << "steps:     " << at("steps") << ", " << rows << " snapshots (steps " << s[0];
    for (size_t i = 1; i < s.size() && i < 6; ++i)
      out << ", " << s[i];
    out << (s.size() > 6 ? ", ..., " + std::to_string(s.back()) : std::string()) << ")\n";
  }
}

// The last line before "complete" or "INCOMPLETE", where a kind has one.
void show_end(hid_t file, const std::string& kind, bool complete, std::ostream& out) {
  if (kind == "triplet") {
    if (complete)
      print_energy(file, out);
    else
      out << "energy:    not yet: /energy, /energy_per_point and /forces are written when every "
             "chunk is done\n";
  } else if (kind == "fractal" && complete) {
    // The live cells at the last step: a value that cannot be read changes no verdict.
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
  }
}

// One file: what it holds and whether it is complete. *command: the
// command line it records.
// *agree: false when its records disagree or it is no tdsolve result.
int describe_file(const std::string& path, std::ostream& out, std::string* command, bool* agree) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0)
    throw InputError("cannot open '" + path + "': " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw InputError(not_regular(path, st.st_mode));
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    throw InputError("'" + path + "' is not an HDF5 file");
  }
  Hid file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.valid()) throw InputError("cannot open '" + path + "': " + hdf5_error_text());
  // Everything of it a reader might read, before any of it is shown:
  // what HDF5 cannot read is a damaged file (exit 1), not a verdict.
  walk_objects(file, path);

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

  const auto inconsistent = [&](const std::string& why) {
    out << "progress:  INCONSISTENT: " << one_line(why) << "\n";
    *agree = false;
    return kInfoIncomplete;
  };
  // An attribute of the wrong shape (an array where one value belongs) makes
  // the records disagree: INCONSISTENT, as the Python package says too.
  try {
    // What the file says it is; only files without a `kind` are told by
    // their datasets, then checked alike.
    const Recorded rec = read_recorded(file, path);
    if (!rec.problem.empty()) return inconsistent(rec.problem);
    std::string why;
    const std::string guessed = guess_kind(file, &why);
    if (!rec.has && guessed.empty()) {
      out << "status:    " << why << "\n";
      *agree = false;
      return kInfoIncomplete;
    }
    const std::string kind = rec.has ? rec.kind : guessed;
    if (rec.has)
      out << "kind:      " << kind << " (schema_version " << rec.version << ")\n";
    else
      out << "kind:      " << kind
          << " (not recorded: a file of an older tdsolve, known by its datasets)\n";
    if (rec.has && guessed != rec.kind) return inconsistent(contradiction(file, kind, guessed));

    const Json& spec = *schema_kind(kind);
    if (kind != "triplet") {  // triplet: /energy and its kin, shown with the checks
      const std::string result = spec.at("result").str();
      Hid values =
          dataset_handle(H5Dopen2(file, result.c_str(), H5P_DEFAULT), "H5Dopen /" + result);
      out << "dataset:   /" << result << " " << type_name(values) << shape_of(values)
          << attributes(values) << "\n";
    }
    if (kind != "fractal" && exists(file, "points")) {
      Hid points = dataset_handle(H5Dopen2(file, "points", H5P_DEFAULT), "H5Dopen /points");
      out << "points:    /points " << type_name(points) << shape_of(points) << "\n";
    }

    const Outcome o = Checker(file, path, kind).run();
    if (!o.problem.empty()) return inconsistent(o.problem);
    try {
      show(file, kind, o.vars, out);
    } catch (const H5Error&) {  // for show only: the checks have read what it reads
      H5Eclear2(H5E_DEFAULT);
    }
    const Json& progress = spec.at("progress");
    const std::string chunk = progress.at("chunk").str();
    const std::uint64_t chunks = o.vars.at("chunks"), finished = o.vars.at("finished");
    const bool complete = finished == chunks;
    show_end(file, kind, complete, out);
    if (complete) {
      out << "progress:  complete (" << finished << " of " << chunks << " " << chunk << "s)\n";
      return kInfoComplete;
    }
    out << "progress:  INCOMPLETE: " << finished << " of " << chunks << " " << chunk << "s written";
    if (const Json* unit = progress.find("unit")) {
      const std::uint64_t total = o.vars.count("total") ? o.vars.at("total") : 0;
      char pct[32];
      std::snprintf(pct, sizeof pct, "%.1f",
                    total ? 100.0 * double(o.vars.at("covered")) / double(total) : 0.0);
      out << " (" << pct << "% of " << unit->str() << ")";
    }
    out << "; missing " << chunk << "s " << missing_ranges(o.done) << "\n";
    return kInfoIncomplete;
  } catch (const AttrShapeError& e) {
    return inconsistent(e.what());
  }
}

}  // namespace

std::string file_to_read(const std::string& path) {
  const std::string of_partial = output_of_partial(path);
  struct stat st {};
  if (of_partial.empty() && stat(path.c_str(), &st) != 0 &&
      stat(partial_path(path).c_str(), &st) == 0)
    return partial_path(path);
  return path;
}

std::string not_regular(const std::string& path, unsigned mode) {
  const char* what = S_ISDIR(mode)    ? "a directory"
                     : S_ISFIFO(mode) ? "a FIFO (named pipe)"
                     : S_ISSOCK(mode) ? "a socket"
                     : S_ISCHR(mode)  ? "a character device"
                     : S_ISBLK(mode)  ? "a block device"
                                      : "no regular file";
  return "'" + path + "' is " + what + ", not a result file";
}

int describe_result(const std::string& path, std::ostream& out, bool* agree) {
  bool agree_here = true;
  if (!agree) agree = &agree_here;
  *agree = true;
  const std::string of_partial = output_of_partial(path);
  const bool is_partial = !of_partial.empty();
  const std::string output = is_partial ? of_partial : path;
  const std::string partial = partial_path(output);
  struct stat st {};
  const std::string file = file_to_read(path);
  if (file != path)
    out << "note:      '" << path << "' does not exist yet: the run that writes it is unfinished\n";
  std::string command;
  const int code = describe_file(file, out, &command, agree);
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
    out << "writer:    none: the run stopped or was killed; continue it (any rank count) with\n"
        << "           "
        << (command.empty() ? "the same command and --resume" : resume_command_of(command)) << "\n";
  }
  return code == kInfoComplete ? kInfoIncomplete : code;
}

int describe_isolated(const std::string& path, std::ostream& out, std::ostream& err) {
  const std::string file = file_to_read(path);
  struct stat st {};
  // Never opened when it is no regular file: a FIFO or a device would block.
  if (stat(file.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    throw InputError(not_regular(file, st.st_mode));
  const ChildWalk w = walk_in_child(path);
  if (!w.ran) {  // no process can be started here: read it in this one, as before
    err << "tdsolve: warning: '" << file << "': " << w.error << "; reading it unguarded\n";
    return describe_result(path, out);
  }
  const std::string damage = w.damage(file);
  if (!damage.empty()) throw DamagedFile(damage);
  out << w.out;
  err << w.err;
  if (!w.exited) return 1;
  return w.code == kWalkInconsistent ? kInfoIncomplete : w.code;
}

}  // namespace tdsolve::io
