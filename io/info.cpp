#include "io/info.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>
#include <vector>

#include "io/error.hpp"
#include "io/h5.hpp"
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
  *s += std::string(" ") + name + "=";
  if (H5Tget_class(type) == H5T_STRING) {
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

}  // namespace

int describe_result(const std::string& path, std::ostream& out) {
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
  out << "input:     " << root_attr(file, "input") << "\n";

  const bool has_values = H5Lexists(file, "distances", H5P_DEFAULT) > 0;
  const bool has_points = H5Lexists(file, "points", H5P_DEFAULT) > 0;
  const bool has_progress = H5Lexists(file, "progress", H5P_DEFAULT) > 0 &&
                            H5Lexists(file, "progress/done", H5P_DEFAULT) > 0 &&
                            H5Lexists(file, "progress/offsets", H5P_DEFAULT) > 0;
  H5Eclear2(H5E_DEFAULT);
  if (!has_values || !has_progress) {
    out << "status:    not a tdsolve result (no /distances with /progress)\n";
    return kInfoIncomplete;
  }
  Hid values = dataset_handle(H5Dopen2(file, "distances", H5P_DEFAULT), "H5Dopen /distances");
  out << "dataset:   /distances " << type_name(values) << shape_of(values) << attributes(values)
      << "\n";
  if (has_points) {
    Hid points = dataset_handle(H5Dopen2(file, "points", H5P_DEFAULT), "H5Dopen /points");
    out << "points:    /points " << type_name(points) << shape_of(points) << "\n";
  }

  Hid done_ds =
      dataset_handle(H5Dopen2(file, "progress/done", H5P_DEFAULT), "H5Dopen /progress/done");
  Hid off_ds =
      dataset_handle(H5Dopen2(file, "progress/offsets", H5P_DEFAULT), "H5Dopen /progress/offsets");
  const auto chunks = dataset_shape(done_ds), offs = dataset_shape(off_ds),
             len = dataset_shape(values);
  std::vector<unsigned char> done(chunks.empty() ? 0 : chunks[0]);
  std::vector<std::uint64_t> offsets(offs.empty() ? 0 : offs[0]);
  check_status(H5Dread(done_ds, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, done.data()),
               "reading /progress/done");
  check_status(H5Dread(off_ds, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, offsets.data()),
               "reading /progress/offsets");

  // The file is complete only if its own records agree with each other.
  std::string problem;
  const std::uint64_t n = has_attr(values, "n") ? read_attr_u64(values, "n") : 0;
  if (len.size() != 1)
    problem = "/distances is not 1-D";
  else if (len[0] != mapping::pair_count(n))
    problem = "/distances length is not C(n,2)";
  else if (offsets.size() != done.size() + 1 || offsets.empty() || offsets.back() != len[0] ||
           !std::is_sorted(offsets.begin(), offsets.end()))
    problem = "/progress/offsets does not cover /distances";

  const size_t complete = static_cast<size_t>(std::count(done.begin(), done.end(), 1));
  std::uint64_t pairs_done = 0;
  for (size_t c = 0; c < done.size() && c + 1 < offsets.size(); ++c)
    if (done[c]) pairs_done += offsets[c + 1] - offsets[c];
  if (!problem.empty()) {
    out << "progress:  INCONSISTENT: " << problem << "\n";
    return kInfoIncomplete;
  }
  if (complete == done.size()) {
    out << "progress:  complete (" << complete << " of " << done.size() << " chunks)\n";
    return kInfoComplete;
  }
  char pct[32];
  std::snprintf(pct, sizeof pct, "%.1f", len[0] ? 100.0 * pairs_done / len[0] : 0.0);
  out << "progress:  INCOMPLETE: " << complete << " of " << done.size() << " chunks written ("
      << pct << "% of pairs); missing chunks " << missing_ranges(done) << "\n";
  return kInfoIncomplete;
}

}  // namespace tdsolve::io
