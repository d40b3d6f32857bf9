#include "io/h5.hpp"

#include <cstdlib>
#include <cstring>

namespace tdsolve::io {

void quiet_hdf5_errors() {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

namespace {
herr_t collect(unsigned n, const H5E_error2_t* e, void* data) {
  auto* lines = static_cast<std::vector<std::string>*>(data);
  (void)n;
  if (e->desc && *e->desc) lines->emplace_back(e->desc);
  return 0;
}
}  // namespace

std::string hdf5_error_text() {
  std::vector<std::string> lines;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect, &lines);
  H5Eclear2(H5E_DEFAULT);
  if (lines.empty()) return "";
  // The outermost message says what failed, the innermost why.
  std::string text = lines.front();
  if (lines.size() > 1 && lines.back() != lines.front()) text += " (" + lines.back() + ")";
  // HDF5's messages can hold a newline (a ctime() inside); errors are one line.
  for (char& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  return text;
}

hid_t check(hid_t id, const std::string& what) {
  if (id < 0) {
    const std::string why = hdf5_error_text();
    throw H5Error(what + (why.empty() ? "" : ": " + why));
  }
  return id;
}

void check_status(herr_t status, const std::string& what) {
  if (status < 0) check(H5I_INVALID_HID, what);
}

namespace {
Hid scalar_space() {
  return space_handle(H5Screate(H5S_SCALAR), "H5Screate(scalar)");
}

void write_scalar_attr(hid_t obj, const char* name, hid_t file_type, hid_t mem_type,
                       const void* value) {
  const std::string what = std::string("attribute '") + name + "'";
  if (H5Aexists(obj, name) > 0) check_status(H5Adelete(obj, name), "H5Adelete " + what);
  Hid space = scalar_space();
  Hid attr = attr_handle(H5Acreate2(obj, name, file_type, space, H5P_DEFAULT, H5P_DEFAULT),
                         "H5Acreate " + what);
  check_status(H5Awrite(attr, mem_type, value), "H5Awrite " + what);
}
}  // namespace

void write_attr(hid_t obj, const char* name, const std::string& value) {
  // Variable-length UTF-8: h5py returns a str, not bytes.
  Hid type = type_handle(H5Tcopy(H5T_C_S1), "H5Tcopy");
  check_status(H5Tset_size(type, H5T_VARIABLE), "H5Tset_size");
  check_status(H5Tset_cset(type, H5T_CSET_UTF8), "H5Tset_cset");
  const char* p = value.c_str();
  write_scalar_attr(obj, name, type, type, &p);
}

void write_attr(hid_t obj, const char* name, std::uint64_t value) {
  write_scalar_attr(obj, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, &value);
}

void write_attr(hid_t obj, const char* name, double value) {
  write_scalar_attr(obj, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value);
}

bool has_attr(hid_t obj, const char* name) {
  return H5Aexists(obj, name) > 0;
}

std::string read_attr_string(hid_t obj, const char* name) {
  const std::string what = std::string("attribute '") + name + "'";
  Hid attr = attr_handle(H5Aopen(obj, name, H5P_DEFAULT), "H5Aopen " + what);
  Hid ftype = type_handle(H5Aget_type(attr), "H5Aget_type " + what);
  if (H5Tget_class(ftype) != H5T_STRING) return "(not a string)";
  if (H5Tis_variable_str(ftype) > 0) {
    Hid mtype = type_handle(H5Tcopy(H5T_C_S1), "H5Tcopy");
    check_status(H5Tset_size(mtype, H5T_VARIABLE), "H5Tset_size");
    check_status(H5Tset_cset(mtype, H5Tget_cset(ftype)), "H5Tset_cset");
    char* p = nullptr;
    check_status(H5Aread(attr, mtype, &p), "H5Aread " + what);
    std::string s = p ? p : "";
    Hid space = space_handle(H5Aget_space(attr), "H5Aget_space");
    H5Dvlen_reclaim(mtype, space, H5P_DEFAULT, &p);
    return s;
  }
  const size_t size = H5Tget_size(ftype);
  std::string s(size, '\0');
  Hid mtype = type_handle(H5Tcopy(H5T_C_S1), "H5Tcopy");
  check_status(H5Tset_size(mtype, size), "H5Tset_size");
  check_status(H5Aread(attr, mtype, s.data()), "H5Aread " + what);
  s.resize(std::strlen(s.c_str()));
  return s;
}

hssize_t attr_values(hid_t attr) {
  Hid space(H5Aget_space(attr), H5Sclose);
  return space.valid() ? H5Sget_simple_extent_npoints(space) : -1;
}

std::uint64_t read_attr_u64(hid_t obj, const char* name) {
  const std::string what = std::string("attribute '") + name + "'";
  Hid attr = attr_handle(H5Aopen(obj, name, H5P_DEFAULT), "H5Aopen " + what);
  // One value only: reading an array attribute into one would overrun it.
  const hssize_t count = attr_values(attr);
  if (count != 1)
    throw AttrShapeError(what + " holds " + std::to_string(count) + " values, not one");
  std::uint64_t v = 0;
  check_status(H5Aread(attr, H5T_NATIVE_UINT64, &v), "H5Aread " + what);
  return v;
}

std::vector<hsize_t> dataset_shape(hid_t dset) {
  Hid space = space_handle(H5Dget_space(dset), "H5Dget_space");
  const int rank = H5Sget_simple_extent_ndims(space);
  if (rank < 0) check(H5I_INVALID_HID, "H5Sget_simple_extent_ndims");
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  if (rank > 0) H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  return dims;
}

Written written(hid_t dset) {
  H5D_space_status_t status = H5D_SPACE_STATUS_ERROR;
  check_status(H5Dget_space_status(dset, &status), "H5Dget_space_status");
  return status == H5D_SPACE_STATUS_ALLOCATED       ? Written::all
         : status == H5D_SPACE_STATUS_NOT_ALLOCATED ? Written::none
                                                    : Written::part;
}

}  // namespace tdsolve::io
