#include "io/input.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <sys/stat.h>

#include "core/error.hpp"
#include "io/h5.hpp"
#include "io/random.hpp"
#include "io/spheres.hpp"

namespace tdsolve::io {

std::string lower(std::string s) {
  for (char& c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

namespace {

std::string shape_text(const std::vector<std::uint64_t>& dims) {
  std::string s = "(";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + (dims.size() == 1 ? ",)" : ")");
}

// vector: a 1-D array is read as one row (--weights, --variance).
void need_2d(std::vector<std::uint64_t>& dims, const std::string& what, bool vector) {
  if (vector && dims.size() == 1) dims.insert(dims.begin(), 1);
  if (dims.size() != 2) {
    throw InputError(what + " is " + std::to_string(dims.size()) + "-D with shape " +
                     shape_text(dims) + "; tdsolve needs a 2-D array of n points × d features");
  }
}

// ---------------------------------------------------------------- HDF5
herr_t list_datasets(hid_t group, const char* name, const H5L_info_t*, void* out) {
  auto* names = static_cast<std::vector<std::string>*>(out);
  const hid_t obj = H5Oopen(group, name, H5P_DEFAULT);
  if (obj >= 0) {
    if (H5Iget_type(obj) == H5I_DATASET && names->size() < 8)
      names->push_back(std::string("/") + name);
    H5Oclose(obj);
  }
  return 0;
}

std::string dataset_hint(hid_t file) {
  std::vector<std::string> names;
  H5Lvisit(file, H5_INDEX_NAME, H5_ITER_NATIVE, list_datasets, &names);
  H5Eclear2(H5E_DEFAULT);
  if (names.empty()) return " (the file holds no dataset)";
  std::string s = " (datasets in the file: ";
  for (size_t i = 0; i < names.size(); ++i)
    s += (i ? ", " : "") + names[i];
  return s + ")";
}

PointSet read_hdf5(const std::string& path, const std::string& dataset, const std::string& spec,
                   bool vector) {
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    std::ifstream probe(path);
    if (!probe) throw InputError("cannot open input '" + path + "': " + std::strerror(errno));
    throw InputError("input '" + path + "' is not an HDF5 file");
  }
  Hid file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.valid())
    throw InputError("cannot open HDF5 input '" + path + "': " + hdf5_error_text());
  if (dataset.empty()) {
    throw InputError("name the dataset to read: --input " + path + ":/DATASET" +
                     dataset_hint(file));
  }
  if (H5Lexists(file, dataset.c_str(), H5P_DEFAULT) <= 0 ||
      H5Oexists_by_name(file, dataset.c_str(), H5P_DEFAULT) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    throw InputError("input '" + path + "' has no dataset '" + dataset + "'" + dataset_hint(file));
  }
  Hid dset(H5Dopen2(file, dataset.c_str(), H5P_DEFAULT), H5Dclose);
  if (!dset.valid()) {
    throw InputError("'" + dataset + "' in '" + path + "' is not a dataset" + dataset_hint(file));
  }
  Hid type = type_handle(H5Dget_type(dset), "H5Dget_type");
  const H5T_class_t cls = H5Tget_class(type);
  // An enum of integers is read as its values: h5py stores NumPy bools so
  // (FALSE = 0, TRUE = 1).
  if (cls != H5T_FLOAT && cls != H5T_INTEGER && cls != H5T_ENUM) {
    throw InputError("dataset '" + dataset + "' in '" + path +
                     "' does not hold numbers (tdsolve reads floats, integers and bools)");
  }
  const std::vector<hsize_t> h = dataset_shape(dset);
  std::vector<std::uint64_t> dims(h.begin(), h.end());
  need_2d(dims, "dataset '" + dataset + "' in '" + path + "'", vector);
  PointSet p;
  p.n = dims[0];
  p.d = dims[1];
  p.source = spec;
  check_shape(p.n, p.d, p.source);
  // Refused before anything is allocated for it.
  const Written w = written(dset);
  if (w != Written::all)
    throw InputError("dataset '" + dataset + "' in '" + path + "' claims " + shape_text(dims) +
                     " values, but " +
                     (w == Written::none ? "none of them was" : "only part of them was") +
                     " ever written (HDF5 would read the unwritten values as its fill value)");
  p.values.resize(p.n * p.d);
  check_status(H5Dread(dset, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, p.values.data()),
               "reading '" + dataset + "' from '" + path + "'");
  return p;
}

// ---------------------------------------------------------------- .npy
// Format: "\x93NUMPY", major, minor, header length (2 bytes in v1, 4 in v2/3),
// then a Python dict literal: {'descr': '<f8', 'fortran_order': False, 'shape': (n, d), }.
std::string dict_value(const std::string& header, const std::string& key) {
  const size_t k = header.find("'" + key + "'");
  if (k == std::string::npos) return "";
  size_t v = header.find(':', k);
  if (v == std::string::npos) return "";
  ++v;
  while (v < header.size() && header[v] == ' ')
    ++v;
  size_t e = v;
  if (header[v] == '(') {
    e = header.find(')', v);
    return e == std::string::npos ? "" : header.substr(v, e - v + 1);
  }
  if (header[v] == '\'') {
    e = header.find('\'', v + 1);
    return e == std::string::npos ? "" : header.substr(v + 1, e - v - 1);
  }
  while (e < header.size() && header[e] != ',' && header[e] != '}')
    ++e;
  return header.substr(v, e - v);
}

template <typename S>
void convert(const char* raw, bool swap, index_t count, double* out) {
  for (index_t i = 0; i < count; ++i) {
    unsigned char b[sizeof(S)];
    std::memcpy(b, raw + i * sizeof(S), sizeof(S));
    if (swap) {
      for (size_t a = 0, z = sizeof(S) - 1; a < z; ++a, --z)
        std::swap(b[a], b[z]);
    }
    S v;
    std::memcpy(&v, b, sizeof(S));
    out[i] = static_cast<double>(v);
  }
}

PointSet read_npy(const std::string& path, bool vector) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot open input '" + path + "': " + std::strerror(errno));
  char magic[8] = {};
  in.read(magic, 8);
  if (!in || std::memcmp(magic, "\x93NUMPY", 6) != 0)
    throw InputError("input '" + path + "' is not a NumPy .npy file");
  const int major = static_cast<unsigned char>(magic[6]);
  std::uint32_t hlen = 0;
  unsigned char lb[4] = {};
  in.read(reinterpret_cast<char*>(lb), major == 1 ? 2 : 4);
  hlen = lb[0] | (lb[1] << 8) | (major == 1 ? 0 : (lb[2] << 16) | (std::uint32_t(lb[3]) << 24));
  std::string header(hlen, '\0');
  in.read(header.data(), hlen);
  if (!in) throw InputError("input '" + path + "' has a truncated .npy header");

  const std::string descr = dict_value(header, "descr");
  const bool fortran = dict_value(header, "fortran_order").find("True") != std::string::npos;
  const std::string shape = dict_value(header, "shape");
  if (descr.size() < 3 || shape.empty())
    throw InputError("input '" + path + "' has a .npy header tdsolve cannot read: " + header);
  // The shape: a tuple of non-negative integers, "(n, d)" (a 1-tuple has a
  // trailing comma). Anything else is refused, not read around.
  std::vector<std::uint64_t> dims;
  {
    const std::string inner = shape.substr(1, shape.size() - 2);
    size_t i = 0;
    while (i < inner.size()) {
      while (i < inner.size() && inner[i] == ' ')
        ++i;
      if (i >= inner.size()) break;
      size_t j = i;
      while (j < inner.size() && std::isdigit(static_cast<unsigned char>(inner[j])))
        ++j;
      const std::string token = inner.substr(i, j - i);
      while (j < inner.size() && inner[j] == ' ')
        ++j;
      if (token.empty() || (j < inner.size() && inner[j] != ','))
        throw InputError("input '" + path + "' has a .npy shape tdsolve cannot read: " + shape +
                         " (dimensions must be non-negative integers)");
      errno = 0;
      const unsigned long long v = std::strtoull(token.c_str(), nullptr, 10);
      if (errno == ERANGE)
        throw InputError("input '" + path + "' has a .npy shape dimension too large: " + token);
      dims.push_back(v);
      i = j + 1;
    }
  }
  need_2d(dims, "array in '" + path + "'", vector);

  const char order = descr[0];
  const char kind = descr[1];
  const int size = std::atoi(descr.c_str() + 2);
  const bool little =
      order == '<' || order == '|' || (order == '=' && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__);
  const bool swap = little != (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__);
  const bool known =
      (kind == 'f' && (size == 4 || size == 8)) || (kind == 'b' && size == 1) ||
      ((kind == 'i' || kind == 'u') && (size == 1 || size == 2 || size == 4 || size == 8));
  if (!known)
    throw InputError("array in '" + path + "' has dtype '" + descr +
                     "'; tdsolve reads float32/float64, integer and bool arrays");

  PointSet p;
  p.n = dims[0];
  p.d = dims[1];
  p.source = path;
  check_shape(p.n, p.d, p.source);
  // Sizes checked before anything is allocated: n × d × size must not
  // overflow, and the file must hold that many bytes after its header.
  index_t count = 0, bytes = 0;
  if (__builtin_mul_overflow(p.n, p.d, &count) ||
      __builtin_mul_overflow(count, static_cast<index_t>(size), &bytes))
    throw InputError("input '" + path + "' has a .npy shape " + shape +
                     " whose size overflows 64 bits: the header is damaged");
  const std::streamoff start = in.tellg();
  in.seekg(0, std::ios::end);
  const std::streamoff end = in.tellg();
  in.seekg(start);
  const index_t held = end > start ? static_cast<index_t>(end - start) : 0;
  if (!in || held < bytes)
    throw InputError("input '" + path + "' is truncated: its header promises " +
                     std::to_string(bytes) + " bytes of data (shape " + shape +
                     ") but the file holds " + std::to_string(held));
  std::vector<char> raw(bytes);
  in.read(raw.data(), static_cast<std::streamsize>(raw.size()));
  if (static_cast<size_t>(in.gcount()) != raw.size())
    throw InputError("input '" + path + "' is truncated: its header promises " +
                     std::to_string(raw.size()) + " bytes of data");
  std::vector<double> flat(count);
  double* o = flat.data();
  const char* r = raw.data();
  if (kind == 'f') {
    size == 4 ? convert<float>(r, swap, count, o) : convert<double>(r, swap, count, o);
  } else if (kind == 'i') {
    if (size == 1) convert<std::int8_t>(r, swap, count, o);
    if (size == 2) convert<std::int16_t>(r, swap, count, o);
    if (size == 4) convert<std::int32_t>(r, swap, count, o);
    if (size == 8) convert<std::int64_t>(r, swap, count, o);
  } else {  // 'u', and 'b': NumPy's bools are bytes 0 and 1
    if (size == 1) convert<std::uint8_t>(r, swap, count, o);
    if (size == 2) convert<std::uint16_t>(r, swap, count, o);
    if (size == 4) convert<std::uint32_t>(r, swap, count, o);
    if (size == 8) convert<std::uint64_t>(r, swap, count, o);
  }
  if (fortran) {  // column-major on disk
    p.values.resize(count);
    for (index_t i = 0; i < p.n; ++i)
      for (index_t k = 0; k < p.d; ++k)
        p.values[i * p.d + k] = flat[k * p.n + i];
  } else {
    p.values = std::move(flat);
  }
  return p;
}

// ---------------------------------------------------------------- CSV / text
// Comma, semicolon, tab or blank separated numbers, one point per line. Blank
// lines and lines starting with '#' are skipped; a first line that is not
// numeric is taken as a header.
bool parse_row(const std::string& line, std::vector<double>* row) {
  row->clear();
  const char* s = line.c_str();
  const char* end = s + line.size();
  bool expect_value = true;
  while (s < end) {
    while (s < end && (*s == ' ' || *s == '\t' || *s == '\r'))
      ++s;
    if (s >= end) break;
    if (*s == ',' || *s == ';') {
      if (expect_value) return false;  // empty field
      expect_value = true;
      ++s;
      continue;
    }
    char* stop = nullptr;
    errno = 0;
    const double v = std::strtod(s, &stop);
    if (stop == s) return false;
    row->push_back(v);
    s = stop;
    expect_value = false;
    if (s < end && !(*s == ' ' || *s == '\t' || *s == '\r' || *s == ',' || *s == ';')) return false;
  }
  return !(expect_value && !row->empty());
}

// A header names its columns: no field is empty and none is a number.
bool looks_like_header(const std::string& line) {
  std::string field;
  std::vector<std::string> fields;
  for (char c : line + ",") {
    if (c == ',' || c == ';' || c == '\t') {
      fields.push_back(field);
      field.clear();
    } else if (c != '\r') {
      field += c;
    }
  }
  for (std::string& f : fields) {
    const size_t a = f.find_first_not_of(' '), b = f.find_last_not_of(' ');
    if (a == std::string::npos) return false;
    f = f.substr(a, b - a + 1);
    char* stop = nullptr;
    std::strtod(f.c_str(), &stop);
    if (stop != f.c_str()) return false;
  }
  return true;
}

PointSet read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError("cannot open input '" + path + "': " + std::strerror(errno));
  PointSet p;
  p.source = path;
  std::string line;
  std::vector<double> row;
  index_t line_no = 0;
  bool first = true;
  while (std::getline(in, line)) {
    ++line_no;
    // A UTF-8 byte-order mark (Excel's "CSV UTF-8", Windows editors) is not
    // part of the first value: left in, it made the first row a "header".
    if (line_no == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);
    const size_t nb = line.find_first_not_of(" \t\r");
    if (nb == std::string::npos || line[nb] == '#') continue;
    if (!parse_row(line, &row)) {
      if (first && looks_like_header(line)) {
        first = false;
        continue;
      }
      throw InputError("input '" + path + "' line " + std::to_string(line_no) +
                       " is not a row of numbers: '" + line.substr(0, 60) + "'");
    }
    first = false;
    if (p.n == 0) p.d = row.size();
    if (row.size() != p.d)
      throw InputError("input '" + path + "' line " + std::to_string(line_no) + " has " +
                       std::to_string(row.size()) + " values where earlier rows have " +
                       std::to_string(p.d));
    p.values.insert(p.values.end(), row.begin(), row.end());
    ++p.n;
  }
  check_shape(p.n, p.d, p.source);
  return p;
}

}  // namespace

void check_shape(index_t n, index_t d, const std::string& source) {
  if (n == 0 || d == 0) {
    throw InputError("input '" + source + "' is empty (" + std::to_string(n) + " points × " +
                     std::to_string(d) + " features)");
  }
}

void check_pairs(index_t n, const std::string& source) {
  if (n < 2)
    throw InputError("input '" + source + "' has " + std::to_string(n) +
                     " point; pairs need at least 2");
}

void check_finite(const PointSet& p) {
  index_t bad = 0, first = 0;
  for (index_t i = 0; i < p.values.size(); ++i) {
    if (!std::isfinite(p.values[i]) && bad++ == 0) first = i;
  }
  if (bad > 0) {
    std::ostringstream s;
    s << "input '" << p.source << "' has " << bad << " non-finite value" << (bad > 1 ? "s" : "")
      << "; the first, " << p.values[first] << ", is at row " << first / p.d << ", column "
      << first % p.d << " (0-based)";
    throw InputError(s.str());
  }
}

std::vector<index_t> parse_columns(const std::string& text) {
  const std::string what = "--columns '" + text + "': ";
  const auto number = [&](const std::string& t) {
    if (t.empty() || t.size() > 9 || t.find_first_not_of("0123456789") != std::string::npos)
      throw UsageError(
          what + "'" + t +
          "' is not a column number (0-based indices and ranges A:B, comma-separated)");
    return index_t(std::stoull(t));
  };
  std::vector<index_t> cols;
  std::set<index_t> seen;
  std::string item;
  std::istringstream in(text);
  bool any = false;
  while (std::getline(in, item, ',')) {
    any = true;
    const size_t colon = item.find(':');
    index_t a = 0, b = 0;
    if (colon == std::string::npos) {
      a = number(item);
      b = a + 1;
    } else {
      a = number(item.substr(0, colon));
      b = number(item.substr(colon + 1));
      if (b <= a) throw UsageError(what + "the range " + item + " is empty (A:B takes A..B-1)");
    }
    for (index_t c = a; c < b; ++c) {
      if (!seen.insert(c).second)
        throw UsageError(what + "column " + std::to_string(c) + " is selected twice");
      cols.push_back(c);
    }
  }
  if (!any || text.back() == ',') throw UsageError(what + "name at least one column, e.g. 1:4");
  return cols;
}

void arrange_points(PointSet& p, bool transpose, const std::vector<index_t>& columns) {
  if (transpose) {
    std::vector<double> t(p.values.size());
    for (index_t i = 0; i < p.n; ++i)
      for (index_t k = 0; k < p.d; ++k)
        t[k * p.n + i] = p.values[i * p.d + k];
    p.values.swap(t);
    std::swap(p.n, p.d);
    p.source += " (transposed)";
  }
  if (columns.empty()) return;
  for (index_t c : columns)
    if (c >= p.d)
      throw InputError("--columns: the input '" + p.source + "' has " + std::to_string(p.d) +
                       " columns (0 to " + std::to_string(p.d - 1) + "), no column " +
                       std::to_string(c));
  std::vector<double> v(p.n * columns.size());
  for (index_t i = 0; i < p.n; ++i)
    for (size_t k = 0; k < columns.size(); ++k)
      v[i * columns.size() + k] = p.values[i * p.d + columns[k]];
  p.values.swap(v);
  p.d = columns.size();
  std::string list;
  for (size_t k = 0; k < columns.size(); ++k)
    list += (k ? "," : "") + std::to_string(columns[k]);
  p.source += " (columns " + list + ")";
}

namespace {

bool hdf5_name(const std::string& path) {
  const std::string l = lower(path);
  return ends_with(l, ".h5") || ends_with(l, ".hdf5") || ends_with(l, ".hdf") ||
         ends_with(l, ".he5");
}

bool is_file(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

InputSpec split_input_spec(const std::string& spec) {
  // FILE:/dataset, or FILE:dataset (as h5py names it) where FILE is an HDF5
  // file's name or an existing file; a spec that is itself a file is that
  // file (a colon in its name).
  const size_t colon = spec.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == spec.size() || is_file(spec))
    return InputSpec{spec, ""};
  const std::string path = spec.substr(0, colon), dataset = spec.substr(colon + 1);
  if (dataset[0] == '/') return InputSpec{path, dataset};
  if (hdf5_name(path) || is_file(path)) return InputSpec{path, "/" + dataset};
  return InputSpec{spec, ""};
}

namespace {

struct MemoryPoints {
  const double* values = nullptr;
  index_t n = 0, d = 0;
  std::string source;
};
std::map<std::string, MemoryPoints>& memory_points() {
  static std::map<std::string, MemoryPoints> m;
  return m;
}

}  // namespace

void set_memory_points(const std::string& name, const double* values, index_t n, index_t d,
                       const std::string& source) {
  memory_points()[name] = MemoryPoints{values, n, d, source};
}

void clear_memory_points() {
  memory_points().clear();
}

PointSet read_points(const std::string& spec, bool vector) {
  if (is_memory_spec(spec)) {
    const auto it = memory_points().find(memory_name(spec));
    if (it == memory_points().end())
      throw InputError("input '" + spec + "': no such array given to this run");
    const MemoryPoints& m = it->second;
    check_shape(m.n, m.d, m.source);
    PointSet p;
    p.n = m.n;
    p.d = m.d;
    p.values.assign(m.values, m.values + m.n * m.d);
    p.source = m.source;
    return p;
  }
  const InputSpec in = split_input_spec(spec);
  const std::string lspec = lower(spec);
  if (!in.dataset.empty()) return read_hdf5(in.path, in.dataset, spec, vector);
  if (ends_with(lspec, ".npy")) return read_npy(spec, vector);
  if (ends_with(lspec, ".csv") || ends_with(lspec, ".txt") || ends_with(lspec, ".tsv") ||
      ends_with(lspec, ".dat"))
    return read_text(spec);
  if (hdf5_name(spec)) return read_hdf5(spec, "", spec, vector);
  std::ifstream probe(spec);
  if (!probe) throw InputError("cannot open input '" + spec + "': " + std::strerror(errno));
  throw InputError("cannot tell the format of input '" + spec +
                   "': use FILE.h5:/dataset, FILE.npy or FILE.csv");
}

namespace {

std::vector<std::string> split_spec(const std::string& spec) {
  std::vector<std::string> parts;
  std::stringstream ss(spec);
  for (std::string part; std::getline(ss, part, ':');)
    parts.push_back(part);
  // getline drops a last empty field: "uniform:5:3:" must not read as
  // "uniform:5:3" (seed 0) but as an empty SEED.
  if (!spec.empty() && spec.back() == ':') parts.emplace_back();
  return parts;
}

// A non-negative integer field of a --generate spec; UsageError (usage and
// what is wrong) otherwise.
std::uint64_t spec_number(const std::string& s, const char* what, const std::string& usage) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos)
    throw UsageError(usage + " (" + what + " is not a non-negative integer)");
  errno = 0;
  const unsigned long long v = std::strtoull(s.c_str(), nullptr, 10);
  if (errno == ERANGE) throw UsageError(usage + " (" + what + " is too large)");
  return v;
}

}  // namespace

GeneratorSpec parse_generator(const std::string& spec) {
  const std::string usage =
      "--generate expects uniform:N:D[:SEED], e.g. uniform:100000:3:42; got '" + spec + "'";
  const std::vector<std::string> parts = split_spec(spec);
  if (parts.size() < 3 || parts.size() > 4 || parts[0] != "uniform") throw UsageError(usage);
  GeneratorSpec g;
  g.kind = parts[0];
  g.n = spec_number(parts[1], "N", usage);
  g.d = spec_number(parts[2], "D", usage);
  g.seed = parts.size() == 4 ? spec_number(parts[3], "SEED", usage) : 0;
  check_shape(g.n, g.d, spec);
  return g;
}

PointSet generate_points(const GeneratorSpec& g) {
  PointSet p;
  p.n = g.n;
  p.d = g.d;
  p.source =
      g.kind + ":" + std::to_string(g.n) + ":" + std::to_string(g.d) + ":" + std::to_string(g.seed);
  p.values.resize(g.n * g.d);
  const std::uint64_t base = splitmix64(g.seed);
  const index_t size = p.values.size();
  double* v = p.values.data();
#pragma omp parallel for schedule(static)
  for (index_t i = 0; i < size; ++i)
    v[i] = unit_double(base + i);
  return p;
}

bool is_spheres_spec(const std::string& spec) {
  return spec.rfind("spheres:", 0) == 0;
}

double default_rmax(index_t n, index_t dim) {
  // Expected partners (n - 1) E[vol(r_i + r_j)] = 2, boundaries ignored:
  // 1-D E[2 (r_i + r_j)] = 2 RMAX; 3-D (4/3) pi E[(r_i + r_j)^3] = 2 pi RMAX^3.
  const double m = static_cast<double>(n > 1 ? n - 1 : 1);
  return dim == 1 ? 1.0 / m : std::cbrt(1.0 / (3.141592653589793 * m));
}

SpheresSpec parse_spheres(const std::string& spec) {
  const std::string usage =
      "--generate expects spheres:N:DIM:SEED[:RMAX] (DIM 1 or 3), e.g. spheres:100000:3:42; got "
      "'" +
      spec + "'";
  const std::vector<std::string> parts = split_spec(spec);
  if (parts.size() < 4 || parts.size() > 5 || parts[0] != "spheres") throw UsageError(usage);
  SpheresSpec s;
  s.n = spec_number(parts[1], "N", usage);
  s.dim = spec_number(parts[2], "DIM", usage);
  s.seed = spec_number(parts[3], "SEED", usage);
  if (s.dim != 1 && s.dim != 3) throw UsageError(usage + " (DIM must be 1 or 3)");
  check_pairs(s.n, spec);
  s.rmax = default_rmax(s.n, s.dim);
  if (parts.size() == 5) {
    char* end = nullptr;
    const double v = std::strtod(parts[4].c_str(), &end);
    // Below 1e-300, RMAX times the smallest draw (2^-53) would underflow to 0.
    if (parts[4].empty() || *end || !std::isfinite(v) || !(v >= 1e-300))
      throw UsageError(usage + " (RMAX must be a finite number > 0, at least 1e-300)");
    s.rmax = v;
  }
  return s;
}

PointSet generate_spheres(const SpheresSpec& s) {
  // The centres are the points of uniform:N:DIM:SEED; the radii a second
  // stream, so each value is a function of (SEED, row, column) alone.
  const PointSet c = generate_points(GeneratorSpec{"uniform", s.n, s.dim, s.seed});
  const index_t w = s.dim + 1;
  PointSet p;
  p.n = s.n;
  p.d = w;
  char rmax[32];
  std::snprintf(rmax, sizeof rmax, "%.17g", s.rmax);
  p.source = "spheres:" + std::to_string(s.n) + ":" + std::to_string(s.dim) + ":" +
             std::to_string(s.seed) + ":" + rmax;
  p.values.resize(s.n * w);
  const std::uint64_t base = splitmix64(splitmix64(s.seed) ^ 0x7261646969ull);  // "radii"
  const index_t n = s.n;
#pragma omp parallel for schedule(static)
  for (index_t i = 0; i < n; ++i) {
    for (index_t k = 0; k < s.dim; ++k)
      p.values[i * w + k] = c.values[i * s.dim + k];
    p.values[i * w + s.dim] = s.rmax * (1.0 - unit_double(base + i));  // (0, RMAX]
  }
  return p;
}

}  // namespace tdsolve::io
