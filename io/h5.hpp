// Thin RAII over the HDF5 C API. Every call that can fail goes through
// check(), which turns HDF5's error stack into an H5Error naming the call and
// the cause. Destructors close quietly and never throw.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tdsolve::io {

struct H5Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// An attribute that holds several values where one belongs (a damaged file).
struct AttrShapeError : H5Error {
  using H5Error::H5Error;
};

// Stops HDF5 from printing its error stack; check() reports it instead.
void quiet_hdf5_errors();

// The innermost messages of HDF5's current error stack, or "".
std::string hdf5_error_text();

hid_t check(hid_t id, const std::string& what);
void check_status(herr_t status, const std::string& what);

class Hid {
 public:
  using Closer = herr_t (*)(hid_t);
  Hid() = default;
  Hid(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  Hid(const Hid&) = delete;
  Hid& operator=(const Hid&) = delete;
  Hid(Hid&& o) noexcept : id_(std::exchange(o.id_, H5I_INVALID_HID)), closer_(o.closer_) {}
  Hid& operator=(Hid&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = std::exchange(o.id_, H5I_INVALID_HID);
      closer_ = o.closer_;
    }
    return *this;
  }
  ~Hid() { reset(); }

  hid_t get() const { return id_; }
  operator hid_t() const { return id_; }  // NOLINT: handles pass straight to the C API
  bool valid() const { return id_ >= 0; }
  void reset() {
    if (id_ >= 0 && closer_) closer_(id_);
    id_ = H5I_INVALID_HID;
  }
  // Close now and report failure (a file close flushes and can fail).
  void close(const std::string& what) {
    if (id_ < 0) return;
    const hid_t id = std::exchange(id_, H5I_INVALID_HID);
    check_status(closer_(id), what);
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer closer_ = nullptr;
};

inline Hid file_handle(hid_t id, const std::string& what) {
  return Hid(check(id, what), H5Fclose);
}
inline Hid dataset_handle(hid_t id, const std::string& what) {
  return Hid(check(id, what), H5Dclose);
}
inline Hid group_handle(hid_t id, const std::string& what) {
  return Hid(check(id, what), H5Gclose);
}
inline Hid space_handle(hid_t id, const std::string& what) {
  return Hid(check(id, what), H5Sclose);
}
inline Hid plist_handle(hid_t id, const std::string& what) {
  return Hid(check(id, what), H5Pclose);
}
inline Hid type_handle(hid_t id, const std::string& what) {
  return Hid(check(id, what), H5Tclose);
}
inline Hid attr_handle(hid_t id, const std::string& what) {
  return Hid(check(id, what), H5Aclose);
}

// Scalar attributes; all ranks must call them with the same values in a
// parallel file (attribute writes are collective metadata operations).
void write_attr(hid_t obj, const char* name, const std::string& value);
void write_attr(hid_t obj, const char* name, std::uint64_t value);
void write_attr(hid_t obj, const char* name, double value);

bool has_attr(hid_t obj, const char* name);
std::string read_attr_string(hid_t obj, const char* name);
std::uint64_t read_attr_u64(hid_t obj, const char* name);  // H5Error unless one value
// Values an attribute holds (1 for a scalar; -1 if it cannot tell).
hssize_t attr_values(hid_t attr);

// Shape of a dataset.
std::vector<hsize_t> dataset_shape(hid_t dset);

// How much of what a dataset's shape claims was ever written: HDF5 reads
// the rest as the fill value, so a chunked dataset can claim any shape and
// hold nothing. Inputs are refused unless `all`.
enum class Written { all, part, none };
Written written(hid_t dset);

}  // namespace tdsolve::io
