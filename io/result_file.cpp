#include "io/result_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hdf5_hl.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

#include "core/error.hpp"

namespace tdsolve::io {

namespace {

hid_t file_type(ValueType t) {
  switch (t) {
    case ValueType::f32:
      return H5T_IEEE_F32LE;
    case ValueType::f64:
      return H5T_IEEE_F64LE;
    case ValueType::i64:
      return H5T_STD_I64LE;
  }
  return H5T_IEEE_F32LE;
}

hid_t memory_type(ValueType t) {
  switch (t) {
    case ValueType::f32:
      return H5T_NATIVE_FLOAT;
    case ValueType::f64:
      return H5T_NATIVE_DOUBLE;
    case ValueType::i64:
      return H5T_NATIVE_INT64;
  }
  return H5T_NATIVE_FLOAT;
}

// Large objects start on 1 MiB boundaries (stripe-friendly on Lustre/GPFS).
void set_alignment(hid_t fapl) {
  check_status(H5Pset_alignment(fapl, 1 << 16, 1 << 20), "H5Pset_alignment");
}

Hid make_parallel_fapl(MPI_Comm comm) {
  Hid fapl = plist_handle(H5Pcreate(H5P_FILE_ACCESS), "H5Pcreate(file access)");
  check_status(H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL), "H5Pset_fapl_mpio");
  // Metadata is read and written collectively: no rank storms the file system.
  check_status(H5Pset_all_coll_metadata_ops(fapl, true), "H5Pset_all_coll_metadata_ops");
  check_status(H5Pset_coll_metadata_write(fapl, true), "H5Pset_coll_metadata_write");
  set_alignment(fapl);
  return fapl;
}

// Contiguous; `fill` = false writes no fill pass. Allocated late: the image
// built in memory holds metadata only, and parallel HDF5 allocates a
// dataset's storage when the file is opened for writing with MPI-IO (an
// unallocated dataset reads as its fill value, 0, so flags read "not done").
Hid make_dcpl(bool fill) {
  Hid dcpl = plist_handle(H5Pcreate(H5P_DATASET_CREATE), "H5Pcreate(dataset create)");
  check_status(H5Pset_layout(dcpl, H5D_CONTIGUOUS), "H5Pset_layout");
  check_status(H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_LATE), "H5Pset_alloc_time");
  check_status(H5Pset_fill_time(dcpl, fill ? H5D_FILL_TIME_ALLOC : H5D_FILL_TIME_NEVER),
               "H5Pset_fill_time");
  return dcpl;
}

Hid create_dataset(hid_t loc, const std::string& name, hid_t type, const std::vector<index_t>& dims,
                   bool fill) {
  std::vector<hsize_t> h(dims.begin(), dims.end());
  Hid space = dims.empty()
                  ? space_handle(H5Screate(H5S_SCALAR), "H5Screate(scalar) for " + name)
                  : space_handle(H5Screate_simple(static_cast<int>(h.size()), h.data(), nullptr),
                                 "H5Screate_simple for " + name);
  Hid dcpl =
      dims.empty() ? plist_handle(H5Pcopy(H5P_DATASET_CREATE_DEFAULT), "H5Pcopy") : make_dcpl(fill);
  return dataset_handle(H5Dcreate2(loc, name.c_str(), type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT),
                        "H5Dcreate " + name);
}

// A dataset of 0 rows that grows: chunked, first dimension unlimited, no
// fill (write_list writes every row it adds).
Hid create_list(hid_t loc, const std::string& name, hid_t type, const std::vector<index_t>& dims) {
  std::vector<hsize_t> now(dims.begin(), dims.end()), most(dims.begin(), dims.end()),
      chunk(dims.begin(), dims.end());
  now[0] = 0;
  most[0] = H5S_UNLIMITED;
  chunk[0] = dims.size() > 1 ? (1 << 16) : (1 << 17);
  Hid space = space_handle(H5Screate_simple(static_cast<int>(now.size()), now.data(), most.data()),
                           "H5Screate_simple for " + name);
  Hid dcpl = plist_handle(H5Pcreate(H5P_DATASET_CREATE), "H5Pcreate(dataset create)");
  check_status(H5Pset_chunk(dcpl, static_cast<int>(chunk.size()), chunk.data()), "H5Pset_chunk");
  check_status(H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER), "H5Pset_fill_time");
  // Parallel HDF5 writes only chunks that exist: allocated when the extent
  // grows (collectively), never lazily inside a write.
  check_status(H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY), "H5Pset_alloc_time");
  return dataset_handle(H5Dcreate2(loc, name.c_str(), type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT),
                        "H5Dcreate " + name);
}

// A 2-D dataset of 0 columns that grows (write_extra_columns; up to dims[1],
// which readers check): chunked a column at a time (2^16 rows a chunk),
// allocated when it grows. The axis is unlimited, so its netCDF dimension
// is too (0 long; readers take the dataset's length).
Hid create_columns(hid_t loc, const std::string& name, hid_t type,
                   const std::vector<index_t>& dims) {
  const hsize_t now[2] = {dims[0], 0}, most[2] = {dims[0], H5S_UNLIMITED},
                chunk[2] = {std::max<hsize_t>(1, std::min<hsize_t>(dims[0], 1 << 16)), 1};
  Hid space = space_handle(H5Screate_simple(2, now, most), "H5Screate_simple for " + name);
  Hid dcpl = plist_handle(H5Pcreate(H5P_DATASET_CREATE), "H5Pcreate(dataset create)");
  check_status(H5Pset_chunk(dcpl, 2, chunk), "H5Pset_chunk");
  check_status(H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER), "H5Pset_fill_time");
  check_status(H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY), "H5Pset_alloc_time");
  return dataset_handle(H5Dcreate2(loc, name.c_str(), type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT),
                        "H5Dcreate " + name);
}

void write_attrs(hid_t obj, const std::vector<Attr>& attrs) {
  for (const Attr& a : attrs)
    std::visit([&](const auto& v) { write_attr(obj, a.name.c_str(), v); }, a.value);
}

// Writes `count` elements at flattened `offset` of a 1-D or 2-D dataset
// (2-D: whole rows). count = 0 writes nothing but still takes part in the
// collective call.
void write_range(hid_t dset, hid_t mem_type, hid_t xfer, index_t offset, index_t count,
                 const void* data, const std::string& what) {
  Hid fspace = space_handle(H5Dget_space(dset), "H5Dget_space " + what);
  const int rank = H5Sget_simple_extent_ndims(fspace);
  hsize_t dims[2] = {0, 0};
  H5Sget_simple_extent_dims(fspace, dims, nullptr);
  const hsize_t n = count > 0 ? count : 1;
  // The memory space has the file selection's shape: a 1-D one against a
  // 2-D selection made HDF5 walk the two element by element (10x slower:
  // 200 against 2700 MB/s for (n, 2) int64 rows into /dev/shm).
  const bool rows = rank == 2 && count > 0;
  const hsize_t shape[2] = {rows ? count / dims[1] : n, dims[1]};
  Hid mspace = space_handle(H5Screate_simple(rows ? 2 : 1, shape, nullptr), "H5Screate_simple");
  if (count > 0) {
    if (rank == 2) {
      const hsize_t start[2] = {offset / dims[1], 0}, block[2] = {count / dims[1], dims[1]};
      check_status(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, nullptr, block, nullptr),
                   "H5Sselect_hyperslab " + what);
    } else {
      const hsize_t start = offset;
      check_status(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &start, nullptr, &n, nullptr),
                   "H5Sselect_hyperslab " + what);
    }
  } else {
    check_status(H5Sselect_none(fspace), "H5Sselect_none");
    check_status(H5Sselect_none(mspace), "H5Sselect_none");
  }
  static const unsigned char dummy = 0;
  check_status(H5Dwrite(dset, mem_type, mspace, fspace, xfer, count > 0 ? data : &dummy),
               "H5Dwrite " + what);
}

// Rank 0 writes all of a small dataset; the others select nothing.
void write_whole(hid_t dset, hid_t mem_type, hid_t xfer, const void* data,
                 const std::string& what) {
  Hid fspace = space_handle(H5Dget_space(dset), "H5Dget_space " + what);
  Hid mspace = space_handle(H5Dget_space(dset), "H5Dget_space " + what);
  static const unsigned char dummy[16] = {};
  if (!data) {
    check_status(H5Sselect_none(fspace), "H5Sselect_none");
    check_status(H5Sselect_none(mspace), "H5Sselect_none");
  }
  check_status(H5Dwrite(dset, mem_type, mspace, fspace, xfer, data ? data : dummy),
               "H5Dwrite " + what);
}

std::vector<std::string> dimensions_of(const ResultLayout& L, const std::string& name) {
  const auto it = L.dimensions.find(name);
  return it == L.dimensions.end() ? std::vector<std::string>{} : it->second;
}

// A 1-D dataset written whole at creation: values (float64) or strings
// (x.text); a coordinate variable is then made the dimension scale of its
// own name.
Hid create_filled(hid_t file, const DatasetSpec& x, bool coordinate) {
  const bool text = !x.text.empty();
  Hid type;
  if (text) {
    type = Hid(H5Tcopy(H5T_C_S1), H5Tclose);
    check_status(H5Tset_size(type, H5T_VARIABLE), "H5Tset_size");
    check_status(H5Tset_cset(type, H5T_CSET_UTF8), "H5Tset_cset");
  }
  const hsize_t length = text ? x.text.size() : x.initial.size();
  Hid sp = space_handle(H5Screate_simple(1, &length, nullptr), "H5Screate_simple /" + x.name);
  Hid d = dataset_handle(H5Dcreate2(file, x.name.c_str(), text ? hid_t(type) : file_type(x.type),
                                    sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                         "H5Dcreate /" + x.name);
  if (text) {
    std::vector<const char*> words;
    for (const std::string& w : x.text)
      words.push_back(w.c_str());
    check_status(H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, words.data()),
                 "H5Dwrite /" + x.name);
  } else {
    check_status(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, x.initial.data()),
                 "H5Dwrite /" + x.name);
  }
  write_attrs(d, x.attrs);
  if (coordinate) check_status(H5DSset_scale(d, x.name.c_str()), "H5DSset_scale /" + x.name);
  return d;
}

void build_structure(hid_t file, const ResultLayout& L) {
  write_attrs(file, L.root_attrs);
  for (const DatasetSpec& x : L.coordinates)
    create_filled(file, x, true);
  if (!L.result.name.empty()) {
    Hid values =
        create_dataset(file, L.result.name, file_type(L.result.type), L.result.dims, false);
    write_attrs(values, L.result.attrs);
    attach_dimensions(file, values, dimensions_of(L, L.result.name));
  }
  if (!L.companion.name.empty()) {
    Hid c = create_dataset(file, L.companion.name, file_type(L.companion.type), L.companion.dims,
                           false);
    write_attrs(c, L.companion.attrs);
    attach_dimensions(file, c, dimensions_of(L, L.companion.name));
  }
  for (const DatasetSpec& x : L.lists) {
    Hid d = create_list(file, x.name, file_type(x.type), x.dims);
    write_attrs(d, x.attrs);
    attach_dimensions(file, d, dimensions_of(L, x.name));
  }
  Hid progress = group_handle(H5Gcreate2(file, "progress", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                              "H5Gcreate /progress");
  const index_t chunks = L.chunk_offsets.size() - 1;
  write_attr(progress, "chunks", static_cast<std::uint64_t>(chunks));
  write_attr(progress, "dataset", L.result.name.empty() ? std::string() : "/" + L.result.name);
  write_attr(progress, "elements", static_cast<std::uint64_t>(L.chunk_offsets.back()));
  write_attrs(progress, L.progress_attrs);
  {
    Hid done = create_dataset(progress, "done", H5T_STD_U8LE, {chunks}, true);
    attach_dimensions(file, done, {"progress/chunk"});
  }
  Hid offsets = create_dataset(progress, "offsets", H5T_STD_U64LE, {chunks + 1}, true);
  attach_dimensions(file, offsets, {"progress/chunk_edge"});
  static_assert(sizeof(index_t) == sizeof(std::uint64_t), "64-bit offsets");
  check_status(
      H5Dwrite(offsets, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, L.chunk_offsets.data()),
      "H5Dwrite /progress/offsets");
  // Extras may live in /progress (the triplets' exact sums).
  for (const DatasetSpec& x : L.extras) {
    if (!x.text.empty()) {  // strings, written whole
      Hid d = create_filled(file, x, false);
      attach_dimensions(file, d, dimensions_of(L, x.name));
      continue;
    }
    Hid d = x.columns_grow ? create_columns(file, x.name, file_type(x.type), x.dims)
                           : create_dataset(file, x.name, file_type(x.type), x.dims, true);
    write_attrs(d, x.attrs);
    attach_dimensions(file, d, dimensions_of(L, x.name));
    if (!x.initial.empty())
      check_status(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, x.initial.data()),
                   "H5Dwrite " + x.name);
  }
  if (L.store_points) {
    Hid points =
        create_dataset(file, "points", file_type(L.points_type), {L.points, L.features}, false);
    attach_dimensions(file, points, {"point", "feature"});
  }
}

// Writes the whole of `data` to a new file at `path` and syncs it; on any
// failure removes what it wrote and throws naming the cause.
void write_new_file(const std::string& path, const std::vector<char>& data) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) throw H5Error("cannot create output file '" + path + "': " + std::strerror(errno));
  const char* p = data.data();
  size_t left = data.size();
  int err = 0;
  while (left > 0 && !err) {
    const ssize_t w = ::write(fd, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      err = w < 0 ? errno : EIO;
      break;
    }
    p += w;
    left -= static_cast<size_t>(w);
  }
  if (!err && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && !err) err = errno;
  if (err) {
    ::unlink(path.c_str());
    throw H5Error("cannot write output file '" + path + "': " + std::strerror(err));
  }
}

}  // namespace

void attach_dimensions(hid_t file, hid_t dset, const std::vector<std::string>& names) {
  if (names.empty()) return;
  Hid space = space_handle(H5Dget_space(dset), "H5Dget_space (dimension scales)");
  const int rank = H5Sget_simple_extent_ndims(space);
  std::vector<hsize_t> dims(rank > 0 ? rank : 0), maxdims(dims.size());
  if (rank > 0) H5Sget_simple_extent_dims(space, dims.data(), maxdims.data());
  if (names.size() != dims.size())
    throw H5Error("dimension names for a " + std::to_string(dims.size()) +
                  "-D dataset: " + std::to_string(names.size()));
  for (size_t a = 0; a < names.size(); ++a) {
    const std::string& name = names[a];
    const bool unlimited = maxdims[a] == H5S_UNLIMITED;
    const hsize_t length = unlimited ? 0 : dims[a];
    Hid scale;
    if (H5Lexists(file, name.c_str(), H5P_DEFAULT) > 0) {
      scale = dataset_handle(H5Dopen2(file, name.c_str(), H5P_DEFAULT), "H5Dopen /" + name);
      const auto have = dataset_shape(scale);
      if (have != std::vector<hsize_t>{length})
        throw H5Error("dimension /" + name + " has another length than an axis named after it");
    } else {
      // netCDF-4's pure dimension: a float32 scale that holds no values.
      const hsize_t max = unlimited ? H5S_UNLIMITED : length;
      Hid sp = space_handle(H5Screate_simple(1, &length, &max), "H5Screate_simple /" + name);
      Hid dcpl = plist_handle(H5Pcreate(H5P_DATASET_CREATE), "H5Pcreate(dataset create)");
      if (unlimited) {
        const hsize_t chunk = 1024;
        check_status(H5Pset_chunk(dcpl, 1, &chunk), "H5Pset_chunk /" + name);
      }
      check_status(H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_LATE), "H5Pset_alloc_time");
      check_status(H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER), "H5Pset_fill_time");
      scale = dataset_handle(
          H5Dcreate2(file, name.c_str(), H5T_IEEE_F32BE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT),
          "H5Dcreate /" + name);
      char text[96];
      std::snprintf(text, sizeof text,
                    "This is a netCDF dimension but not a netCDF variable.%10llu",
                    static_cast<unsigned long long>(length));
      check_status(H5DSset_scale(scale, text), "H5DSset_scale /" + name);
    }
    check_status(H5DSattach_scale(dset, scale, static_cast<unsigned>(a)),
                 "H5DSattach_scale /" + name);
  }
}

void create_file_image(const std::string& path, const std::function<void(hid_t)>& build,
                       bool aligned) {
  std::vector<char> image;
  {
    Hid fapl = plist_handle(H5Pcreate(H5P_FILE_ACCESS), "H5Pcreate(file access)");
    check_status(H5Pset_fapl_core(fapl, 1 << 16, false), "H5Pset_fapl_core");
    if (aligned) set_alignment(fapl);
    Hid file = file_handle(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl),
                           "cannot build the structure of '" + path + "' in memory");
    build(file);
    check_status(H5Fflush(file, H5F_SCOPE_GLOBAL), "H5Fflush (in memory)");
    const ssize_t size = H5Fget_file_image(file, nullptr, 0);
    if (size <= 0) check(H5I_INVALID_HID, "H5Fget_file_image");
    image.resize(static_cast<size_t>(size));
    if (H5Fget_file_image(file, image.data(), image.size()) != size)
      check(H5I_INVALID_HID, "H5Fget_file_image");
    file.close("H5Fclose (in memory)");
  }
  write_new_file(path, image);
}

void create_result_file(const ResultLayout& L) {
  create_file_image(
      L.path, [&](hid_t file) { build_structure(file, L); }, true);
}

ResultWriter::ResultWriter(MPI_Comm comm, const ResultLayout& L,
                           const std::function<void(MPI_File)>& on_open)
    : layout_(L), comm_(comm) {
  MPI_Comm_rank(comm, &rank_);
  mem_type_ = memory_type(L.result.type);
  Hid fapl = make_parallel_fapl(comm);
  file_ = file_handle(H5Fopen(L.path.c_str(), H5F_ACC_RDWR, fapl),
                      "cannot open output file '" + L.path + "' for writing");
  if (on_open) {
    void* handle = nullptr;  // the MPI-IO driver's MPI_File
    check_status(H5Fget_vfd_handle(file_, fapl, &handle), "H5Fget_vfd_handle");
    if (handle) on_open(*static_cast<MPI_File*>(handle));
  }
  xfer_ = plist_handle(H5Pcreate(H5P_DATASET_XFER), "H5Pcreate(transfer)");
  check_status(H5Pset_dxpl_mpio(xfer_, H5FD_MPIO_COLLECTIVE), "H5Pset_dxpl_mpio");
  if (!L.result.name.empty())
    values_ = dataset_handle(H5Dopen2(file_, L.result.name.c_str(), H5P_DEFAULT),
                             "H5Dopen /" + L.result.name);
  if (!L.companion.name.empty())
    companion_ = dataset_handle(H5Dopen2(file_, L.companion.name.c_str(), H5P_DEFAULT),
                                "H5Dopen /" + L.companion.name);
  done_ = dataset_handle(H5Dopen2(file_, "progress/done", H5P_DEFAULT), "H5Dopen /progress/done");
  if (L.store_points)
    points_ = dataset_handle(H5Dopen2(file_, "points", H5P_DEFAULT), "H5Dopen /points");
}

void ResultWriter::write(index_t offset, index_t count, const void* data) {
  write_range(values_, mem_type_, xfer_, offset, count, data, "/" + layout_.result.name);
}

void ResultWriter::write_companion(index_t offset, index_t count, const void* data) {
  write_range(companion_, memory_type(layout_.companion.type), xfer_, offset, count, data,
              "/" + layout_.companion.name);
}

namespace {
// The layout's dataset `name` among `specs` (its lists or extras: `what`).
const DatasetSpec& spec_named(const std::vector<DatasetSpec>& specs, const std::string& name,
                              const char* what) {
  for (const DatasetSpec& x : specs)
    if (x.name == name) return x;
  throw H5Error(std::string("no ") + what + " dataset /" + name + " in the layout");
}
}  // namespace

void ResultWriter::write_list(const std::string& name, index_t total, index_t at, index_t rows,
                              const void* data) {
  const DatasetSpec* spec = &spec_named(layout_.lists, name, "list");
  Hid d = dataset_handle(H5Dopen2(file_, name.c_str(), H5P_DEFAULT), "H5Dopen /" + name);
  std::vector<hsize_t> dims(spec->dims.begin(), spec->dims.end());
  dims[0] = total;
  check_status(H5Dset_extent(d, dims.data()), "H5Dset_extent /" + name);
  const index_t width = dims.size() > 1 ? dims[1] : 1;
  write_range(d, memory_type(spec->type), xfer_, at * width, rows * width, data, "/" + name);
  d.close("H5Dclose /" + name);
}

void ResultWriter::flush() {
  check_status(H5Fflush(file_, H5F_SCOPE_GLOBAL), "H5Fflush (syncing the output file)");
}

void ResultWriter::mark_done(bool has, index_t chunk) {
  const unsigned char one = 1;
  write_range(done_, H5T_NATIVE_UINT8, xfer_, chunk, has ? 1 : 0, &one, "/progress/done");
}

void ResultWriter::set_done(const unsigned char* mask) {
  write_whole(done_, H5T_NATIVE_UINT8, xfer_, mask, "/progress/done");
}

void ResultWriter::write_extra(const std::string& name, const void* data) {
  ValueType type = layout_.result.type;
  if (name != layout_.result.name) {
    for (const DatasetSpec& x : layout_.extras)
      if (x.name == name) type = x.type;
  }
  Hid d = dataset_handle(H5Dopen2(file_, name.c_str(), H5P_DEFAULT), "H5Dopen /" + name);
  write_whole(d, memory_type(type), xfer_, data, "/" + name);
}

void ResultWriter::write_extra_columns(const std::string& name, index_t cols,
                                       const std::vector<Attr>& attrs, const void* data) {
  const DatasetSpec* spec = &spec_named(layout_.extras, name, "extra");
  Hid d = dataset_handle(H5Dopen2(file_, name.c_str(), H5P_DEFAULT), "H5Dopen /" + name);
  const std::vector<hsize_t> dims = dataset_shape(d);
  if (dims.size() != 2) throw H5Error("/" + name + " is not 2-D");
  if (dims[1] != cols) {
    const hsize_t want[2] = {dims[0], cols};
    check_status(H5Dset_extent(d, want), "H5Dset_extent /" + name);
  }
  for (const Attr& a : attrs)
    if (H5Aexists(d, a.name.c_str()) > 0)
      check_status(H5Adelete(d, a.name.c_str()), "H5Adelete " + a.name);
  write_attrs(d, attrs);
  // A column at a time, each from a contiguous copy: one chunk column of the
  // file and one run of memory a write. (The row-major whole in one write
  // reached MPI-IO as 8-byte pieces, one a value: 2·10^7 of them at n = 10^6,
  // most of a GPU triplet run's time.)
  const hid_t type = memory_type(spec->type);
  const size_t size = H5Tget_size(type);
  const hsize_t rows = dims[0];
  std::vector<unsigned char> column(data ? rows * size : 0);
  static const unsigned char dummy[16] = {};
  for (index_t c = 0; c < cols; ++c) {
    Hid fspace = space_handle(H5Dget_space(d), "H5Dget_space /" + name);
    const hsize_t shape[2] = {rows, 1};  // the selection's shape (see write_range)
    Hid mspace = space_handle(H5Screate_simple(2, shape, nullptr), "H5Screate_simple");
    if (data) {
      const unsigned char* in = static_cast<const unsigned char*>(data);
      for (hsize_t r = 0; r < rows; ++r)
        std::memcpy(&column[r * size], in + (r * cols + c) * size, size);
      const hsize_t start[2] = {0, c}, count[2] = {rows, 1};
      check_status(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, nullptr, count, nullptr),
                   "H5Sselect_hyperslab /" + name);
    } else {
      check_status(H5Sselect_none(fspace), "H5Sselect_none");
      check_status(H5Sselect_none(mspace), "H5Sselect_none");
    }
    check_status(H5Dwrite(d, type, mspace, fspace, xfer_, data ? column.data() : dummy),
                 "H5Dwrite /" + name);
  }
  d.close("H5Dclose /" + name);
}

void ResultWriter::write_points(const void* data) {
  write_whole(points_, memory_type(layout_.points_type), xfer_, data, "/points");
}

void ResultWriter::close() {
  points_.reset();
  done_.close("H5Dclose /progress/done");
  if (values_.valid()) values_.close("H5Dclose /" + layout_.result.name);
  if (companion_.valid()) companion_.close("H5Dclose /" + layout_.companion.name);
  xfer_.reset();
  file_.close("H5Fclose (flushing the output file)");
}

namespace {

std::string type_text(hid_t t) {
  const std::pair<hid_t, const char*> known[] = {{H5T_IEEE_F32LE, "float32"},
                                                 {H5T_IEEE_F64LE, "float64"},
                                                 {H5T_STD_I64LE, "int64"},
                                                 {H5T_STD_U8LE, "uint8"},
                                                 {H5T_STD_U64LE, "uint64"}};
  for (const auto& [type, name] : known)
    if (H5Tequal(t, type) > 0) return name;
  H5Eclear2(H5E_DEFAULT);
  return "another type";
}

std::string dims_text(const std::vector<hsize_t>& dims, bool list) {
  if (dims.empty()) return "a scalar";
  std::string s;
  for (size_t a = 0; a < dims.size(); ++a)
    s += (a ? " × " : "") + (list && a == 0 ? std::string("m") : std::to_string(dims[a]));
  return s;
}

}  // namespace

std::vector<hsize_t> check_dataset(hid_t file, const ExpectedDataset& e) {
  const std::string what = "/" + e.name;
  const std::vector<hsize_t> want(e.dims.begin(), e.dims.end());
  const std::string wants = dims_text(want, e.list) + " " + type_text(e.type);
  // Each link of the path, so that a missing group is "missing", not an error.
  for (size_t at = e.name.find('/'); at != std::string::npos; at = e.name.find('/', at + 1))
    if (H5Lexists(file, e.name.substr(0, at).c_str(), H5P_DEFAULT) <= 0) {
      H5Eclear2(H5E_DEFAULT);
      throw InputError(what + " is missing (the job writes " + wants + ")");
    }
  if (H5Lexists(file, e.name.c_str(), H5P_DEFAULT) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    throw InputError(what + " is missing (the job writes " + wants + ")");
  }
  Hid d(H5Dopen2(file, e.name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!d.valid()) {
    H5Eclear2(H5E_DEFAULT);
    throw InputError(what + " is not a dataset that can be read (the job writes " + wants + ")");
  }
  Hid type(H5Dget_type(d), H5Tclose);
  Hid space(H5Dget_space(d), H5Sclose);
  const int rank = space.valid() ? H5Sget_simple_extent_ndims(space) : -1;
  if (!type.valid() || rank < 0) {
    H5Eclear2(H5E_DEFAULT);
    throw InputError(what + " cannot be read (the job writes " + wants + ")");
  }
  std::vector<hsize_t> dims(static_cast<size_t>(rank)), most(dims.size());
  if (rank > 0) H5Sget_simple_extent_dims(space, dims.data(), most.data());
  bool same = H5Tequal(type, e.type) > 0 && dims.size() == want.size();
  for (size_t a = 0; same && a < dims.size(); ++a)
    same = e.list && a == 0      ? most[0] == H5S_UNLIMITED
           : e.columns && a == 1 ? dims[a] <= want[a]
                                 : dims[a] == want[a];
  H5Eclear2(H5E_DEFAULT);
  if (!same)
    throw InputError(what + " is " + dims_text(dims, false) + " " + type_text(type) +
                     ", the job writes " + wants);
  return dims;
}

std::vector<unsigned char> read_flags(hid_t file, const std::string& name) {
  Hid d = dataset_handle(H5Dopen2(file, name.c_str(), H5P_DEFAULT), "H5Dopen /" + name);
  const std::vector<hsize_t> k = dataset_shape(d);
  std::vector<unsigned char> v(k.empty() ? 0 : k[0]);
  check_status(H5Dread(d, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()),
               "reading /" + name);
  for (size_t c = 0; c < v.size(); ++c)
    if (v[c] > 1)
      throw InputError("/" + name + " holds " + std::to_string(v[c]) + " for chunk " +
                       std::to_string(c) + " (a flag is 0 or 1)");
  return v;
}

// A dataset written whole at creation (create_filled) holds the job's
// values or strings.
void check_filled(hid_t file, const DatasetSpec& x) {
  if (x.text.empty()) {
    check_dataset(file, {x.name, file_type(x.type), x.dims});
    Hid d = dataset_handle(H5Dopen2(file, x.name.c_str(), H5P_DEFAULT), "H5Dopen /" + x.name);
    std::vector<double> v(x.initial.size());
    check_status(H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()),
                 "reading /" + x.name);
    if (std::memcmp(v.data(), x.initial.data(), v.size() * sizeof(double)) != 0)
      throw InputError("/" + x.name + " does not hold the job's values");
    return;
  }
  if (H5Lexists(file, x.name.c_str(), H5P_DEFAULT) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    throw InputError("/" + x.name + " is missing (the job writes " + std::to_string(x.text.size()) +
                     " strings)");
  }
  Hid d = dataset_handle(H5Dopen2(file, x.name.c_str(), H5P_DEFAULT), "H5Dopen /" + x.name);
  Hid type(H5Dget_type(d), H5Tclose);
  const bool vlen =
      type.valid() && H5Tget_class(type) == H5T_STRING && H5Tis_variable_str(type) > 0;
  if (!vlen || dataset_shape(d) != std::vector<hsize_t>{x.text.size()}) {
    H5Eclear2(H5E_DEFAULT);
    throw InputError("/" + x.name + " is not the job's " + std::to_string(x.text.size()) +
                     " strings");
  }
  Hid mem(H5Tcopy(H5T_C_S1), H5Tclose);
  check_status(H5Tset_size(mem, H5T_VARIABLE), "H5Tset_size");
  std::vector<char*> words(x.text.size(), nullptr);
  check_status(H5Dread(d, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, words.data()), "reading /" + x.name);
  bool same = true;
  for (size_t i = 0; i < words.size(); ++i) {
    same = same && words[i] && x.text[i] == words[i];
    H5free_memory(words[i]);
  }
  if (!same) throw InputError("/" + x.name + " does not hold the job's strings");
}

ResumableFile check_resumable(const std::string& path, const ResultLayout& L) {
  Hid file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.valid()) {
    H5Eclear2(H5E_DEFAULT);
    throw InputError("it cannot be opened");
  }
  const index_t chunks = L.chunk_offsets.size() - 1;
  ResumableFile out;
  check_dataset(file, {"progress/done", H5T_STD_U8LE, {chunks}});
  check_dataset(file, {"progress/offsets", H5T_STD_U64LE, {chunks + 1}});
  try {
    out.done = read_flags(file, "progress/done");
    std::vector<index_t> offsets(chunks + 1);
    static_assert(sizeof(index_t) == sizeof(std::uint64_t), "64-bit offsets");
    Hid d = dataset_handle(H5Dopen2(file, "progress/offsets", H5P_DEFAULT), "H5Dopen");
    check_status(H5Dread(d, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, offsets.data()),
                 "reading /progress/offsets");
    if (offsets != L.chunk_offsets)
      throw InputError("/progress/offsets are not the chunk plan they describe");
    if (!L.result.name.empty())
      check_dataset(file, {L.result.name, file_type(L.result.type), L.result.dims});
    if (!L.companion.name.empty())
      check_dataset(file, {L.companion.name, file_type(L.companion.type), L.companion.dims});
    const bool all = std::all_of(out.done.begin(), out.done.end(), [](auto f) { return f == 1; });
    for (const DatasetSpec& x : L.lists) {
      const std::vector<hsize_t> dims =
          check_dataset(file, {x.name, file_type(x.type), x.dims, true});
      const auto rows = static_cast<std::int64_t>(dims[0]);
      if (all && out.list_rows >= 0 && rows != out.list_rows)
        throw InputError("/" + x.name + " has " + std::to_string(rows) + " rows, /" +
                         L.lists[0].name + " " + std::to_string(out.list_rows) +
                         ", with every chunk flagged done");
      if (all) out.list_rows = rows;
    }
    for (const DatasetSpec& x : L.coordinates)
      check_filled(file, x);
    for (const DatasetSpec& x : L.extras) {
      if (!x.text.empty() || !x.initial.empty()) {  // written whole at creation
        check_filled(file, x);
        continue;
      }
      check_dataset(file, {x.name, file_type(x.type), x.dims, false, x.columns_grow});
      if (!(x.name == "count" && out.list_rows >= 0)) continue;
      // a list's /count, written with it
      Hid d = dataset_handle(H5Dopen2(file, x.name.c_str(), H5P_DEFAULT), "H5Dopen /" + x.name);
      std::int64_t m = -1;
      check_status(H5Dread(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &m),
                   "reading /count");
      if (m != out.list_rows)
        throw InputError("/count says " + std::to_string(m) + ", /" + L.lists[0].name + " has " +
                         std::to_string(out.list_rows) + " rows, with every chunk flagged done");
    }
    if (L.store_points)
      check_dataset(file, {"points", file_type(L.points_type), {L.points, L.features}});
  } catch (const H5Error& e) {
    H5Eclear2(H5E_DEFAULT);
    throw InputError(e.what());
  }
  return out;
}

index_t ExistingResult::chunks_done() const {
  index_t k = 0;
  for (const unsigned char d : done)
    k += d == 1;
  return k;
}

ExistingResult read_existing(const std::string& path) {
  ExistingResult r;
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    throw InputError("'" + path + "' is not a readable HDF5 file (truncated or damaged?)");
  }
  Hid file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.valid())
    throw InputError("cannot read '" + path + "' (truncated or damaged?): " + hdf5_error_text());
  try {
    const auto text = [&](const char* name) {
      return has_attr(file, name) ? read_attr_string(file, name) : std::string();
    };
    r.version = text("version");
    r.command = text("command");
    r.job = text("job");
    if (has_attr(file, "schema_version"))
      r.schema_version = static_cast<std::int64_t>(read_attr_u64(file, "schema_version"));
    Hid progress = group_handle(H5Gopen2(file, "progress", H5P_DEFAULT), "H5Gopen /progress");
    r.dataset = read_attr_string(progress, "dataset");
    Hid done = dataset_handle(H5Dopen2(progress, "done", H5P_DEFAULT), "H5Dopen /progress/done");
    Hid offs =
        dataset_handle(H5Dopen2(progress, "offsets", H5P_DEFAULT), "H5Dopen /progress/offsets");
    const auto k = dataset_shape(done), k1 = dataset_shape(offs);
    if (k.size() != 1 || k1.size() != 1 || k1[0] != k[0] + 1)
      throw InputError("/progress/done and /progress/offsets do not match");
    r.done.resize(k[0]);
    r.offsets.resize(k1[0]);
    check_status(H5Dread(done, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, r.done.data()),
                 "reading /progress/done");
    check_status(H5Dread(offs, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, r.offsets.data()),
                 "reading /progress/offsets");
    const std::string name =
        r.dataset.empty() || r.dataset[0] != '/' ? r.dataset : r.dataset.substr(1);
    Hid values;
    if (!name.empty())
      values = dataset_handle(H5Dopen2(file, name.c_str(), H5P_DEFAULT), "H5Dopen " + r.dataset);
    r.has_points = H5Lexists(file, "points", H5P_DEFAULT) > 0;
    if (H5Lexists(progress, "sums", H5P_DEFAULT) > 0) {
      Hid sums = dataset_handle(H5Dopen2(progress, "sums", H5P_DEFAULT), "H5Dopen /progress/sums");
      const auto shape = dataset_shape(sums);
      if (shape.size() != 2) throw InputError("/progress/sums is not 2-D");
      r.sums.resize(shape[0] * shape[1]);
      r.sums_shape = {shape[0], shape[1]};
      if (!r.sums.empty())
        check_status(H5Dread(sums, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, r.sums.data()),
                     "reading /progress/sums");
      if (H5Aexists(sums, "first_limb") > 0)
        r.sums_first = static_cast<std::int64_t>(read_attr_u64(sums, "first_limb"));
    }
    if (H5Lexists(file, "frame_energy", H5P_DEFAULT) > 0) {
      Hid x = dataset_handle(H5Dopen2(file, "frame_energy", H5P_DEFAULT), "H5Dopen /frame_energy");
      const auto shape = dataset_shape(x);
      if (shape.size() != 1) throw InputError("/frame_energy is not 1-D");
      r.frame_energy.resize(shape[0]);
      if (!r.frame_energy.empty())
        check_status(
            H5Dread(x, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, r.frame_energy.data()),
            "reading /frame_energy");
    }
    if (name == "counts") {
      // bins, or a grouped run's histograms × bins.
      const auto shape = dataset_shape(values);
      if (shape.size() != 1 && shape.size() != 2) throw InputError("/counts is not 1-D or 2-D");
      const index_t rows = shape.size() == 2 ? shape[0] : 1, bins = shape.back();
      r.counts_shape = shape;
      r.counts.resize(rows * (bins + 2));
      check_status(
          H5Dread(values, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, r.counts.data()),
          "reading /counts");
      // Each row's outer slots after the bins: hist's /underflow and
      // /overflow, or adf's one /dropped (the overflow slot; underflow 0).
      const std::vector<std::pair<const char*, index_t>> outer =
          H5Lexists(file, "dropped", H5P_DEFAULT) > 0
              ? std::vector<std::pair<const char*, index_t>>{{"dropped", 1}}
              : std::vector<std::pair<const char*, index_t>>{{"underflow", 0}, {"overflow", 1}};
      for (const auto& [extra, slot] : outer) {
        Hid x =
            dataset_handle(H5Dopen2(file, extra, H5P_DEFAULT), std::string("H5Dopen /") + extra);
        const auto xs = dataset_shape(x);
        if (shape.size() == 2 ? xs != std::vector<hsize_t>{rows} : !xs.empty())
          throw InputError(std::string("/") + extra + " does not match /counts");
        check_status(H5Dread(x, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                             &r.counts[rows * (bins + slot)]),
                     std::string("reading /") + extra);
      }
      if (H5Lexists(file, "frame_counts", H5P_DEFAULT) > 0) {
        Hid x =
            dataset_handle(H5Dopen2(file, "frame_counts", H5P_DEFAULT), "H5Dopen /frame_counts");
        const auto fs = dataset_shape(x);
        if (fs.size() != shape.size() + 1) throw InputError("/frame_counts does not match /counts");
        r.frame_counts.resize(fs[0] * rows * bins);
        if (!r.frame_counts.empty())
          check_status(
              H5Dread(x, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, r.frame_counts.data()),
              "reading /frame_counts");
      }
    }
  } catch (const std::exception& e) {
    H5Eclear2(H5E_DEFAULT);
    throw InputError("'" + path +
                     "' is not a tdsolve result it can continue (damaged?): " + e.what());
  }
  return r;
}

}  // namespace tdsolve::io
