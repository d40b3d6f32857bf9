#include "io/result_file.hpp"

namespace tdsolve::io {

namespace {

Hid make_fapl(MPI_Comm comm) {
  Hid fapl = plist_handle(H5Pcreate(H5P_FILE_ACCESS), "H5Pcreate(file access)");
  check_status(H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL), "H5Pset_fapl_mpio");
  // Metadata is read and written collectively: no rank storms the file system.
  check_status(H5Pset_all_coll_metadata_ops(fapl, true), "H5Pset_all_coll_metadata_ops");
  check_status(H5Pset_coll_metadata_write(fapl, true), "H5Pset_coll_metadata_write");
  // Large objects start on 1 MiB boundaries (stripe-friendly on Lustre/GPFS).
  check_status(H5Pset_alignment(fapl, 1 << 16, 1 << 20), "H5Pset_alignment");
  return fapl;
}

// Contiguous, allocated at creation; `fill` = false writes no fill pass.
Hid make_dcpl(bool fill) {
  Hid dcpl = plist_handle(H5Pcreate(H5P_DATASET_CREATE), "H5Pcreate(dataset create)");
  check_status(H5Pset_layout(dcpl, H5D_CONTIGUOUS), "H5Pset_layout");
  check_status(H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY), "H5Pset_alloc_time");
  check_status(H5Pset_fill_time(dcpl, fill ? H5D_FILL_TIME_ALLOC : H5D_FILL_TIME_NEVER),
               "H5Pset_fill_time");
  return dcpl;
}

Hid create_dataset(hid_t loc, const char* name, hid_t type, std::vector<hsize_t> dims, bool fill) {
  Hid space = space_handle(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
                           std::string("H5Screate_simple for ") + name);
  Hid dcpl = make_dcpl(fill);
  return dataset_handle(H5Dcreate2(loc, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT),
                        std::string("H5Dcreate ") + name);
}

// Writes `count` elements at `offset` of a 1-D dataset (count = 0: nothing,
// but still takes part in the collective call).
void write_range(hid_t dset, hid_t mem_type, hid_t xfer, index_t offset, index_t count,
                 const void* data, const char* what) {
  Hid fspace = space_handle(H5Dget_space(dset), std::string("H5Dget_space ") + what);
  const hsize_t start = offset, n = count > 0 ? count : 1;
  Hid mspace = space_handle(H5Screate_simple(1, &n, nullptr), "H5Screate_simple");
  if (count > 0) {
    check_status(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &start, nullptr, &n, nullptr),
                 std::string("H5Sselect_hyperslab ") + what);
  } else {
    check_status(H5Sselect_none(fspace), "H5Sselect_none");
    check_status(H5Sselect_none(mspace), "H5Sselect_none");
  }
  static const unsigned char dummy = 0;
  check_status(H5Dwrite(dset, mem_type, mspace, fspace, xfer, count > 0 ? data : &dummy),
               std::string("H5Dwrite ") + what);
}

}  // namespace

ResultWriter::ResultWriter(MPI_Comm comm, const ResultLayout& L) {
  mem_type_ = L.is_double ? H5T_NATIVE_DOUBLE : H5T_NATIVE_FLOAT;
  Hid fapl = make_fapl(comm);
  file_ = file_handle(
      H5Fcreate(L.path.c_str(), L.overwrite ? H5F_ACC_TRUNC : H5F_ACC_EXCL, H5P_DEFAULT, fapl),
      "cannot create output file '" + L.path + "'");
  xfer_ = plist_handle(H5Pcreate(H5P_DATASET_XFER), "H5Pcreate(transfer)");
  check_status(H5Pset_dxpl_mpio(xfer_, H5FD_MPIO_COLLECTIVE), "H5Pset_dxpl_mpio");

  write_attr(file_, "software", std::string("tdsolve"));
  write_attr(file_, "version", L.version);
  write_attr(file_, "command", L.command);
  write_attr(file_, "created", L.created);
  write_attr(file_, "input", L.input);

  const index_t total = L.chunk_offsets.back();
  values_ = create_dataset(file_, "distances", L.is_double ? H5T_IEEE_F64LE : H5T_IEEE_F32LE,
                           {total}, false);
  write_attr(values_, "n", static_cast<std::uint64_t>(L.n));
  write_attr(values_, "k", static_cast<std::uint64_t>(2));
  write_attr(values_, "layout", std::string("combinations"));
  write_attr(values_, "metric", L.metric);
  write_attr(values_, "precision", L.precision);
  write_attr(values_, "features", static_cast<std::uint64_t>(L.features));
  write_attr(values_, "block", static_cast<std::uint64_t>(L.block));

  Hid progress = group_handle(H5Gcreate2(file_, "progress", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                              "H5Gcreate /progress");
  const index_t chunks = L.chunk_offsets.size() - 1;
  write_attr(progress, "chunks", static_cast<std::uint64_t>(chunks));
  write_attr(progress, "dataset", std::string("/distances"));
  done_ = create_dataset(progress, "done", H5T_STD_U8LE, {chunks}, true);
  Hid offsets = create_dataset(progress, "offsets", H5T_STD_U64LE, {chunks + 1}, true);
  if (L.store_points) {
    points_ = create_dataset(file_, "points", L.is_double ? H5T_IEEE_F64LE : H5T_IEEE_F32LE,
                             {L.n, L.features}, false);
  }
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  write_range(offsets, H5T_NATIVE_UINT64, xfer_, 0, rank == 0 ? chunks + 1 : 0,
              L.chunk_offsets.data(), "/progress/offsets");
  // Everything but the values is now on disk: a run that dies from here on
  // leaves a file that opens and reads as incomplete.
  check_status(H5Fflush(file_, H5F_SCOPE_GLOBAL), "H5Fflush");
}

void ResultWriter::write(index_t offset, index_t count, const void* data) {
  write_range(values_, mem_type_, xfer_, offset, count, data, "/distances");
}

void ResultWriter::mark_done(bool has, index_t chunk) {
  const unsigned char one = 1;
  write_range(done_, H5T_NATIVE_UINT8, xfer_, chunk, has ? 1 : 0, &one, "/progress/done");
}

void ResultWriter::write_points(const void* data, index_t n, index_t d) {
  Hid fspace = space_handle(H5Dget_space(points_), "H5Dget_space /points");
  const hsize_t dims[2] = {n, d};
  Hid mspace = space_handle(H5Screate_simple(2, dims, nullptr), "H5Screate_simple");
  static const unsigned char dummy = 0;
  if (!data) {
    check_status(H5Sselect_none(fspace), "H5Sselect_none");
    check_status(H5Sselect_none(mspace), "H5Sselect_none");
  }
  check_status(H5Dwrite(points_, mem_type_, mspace, fspace, xfer_, data ? data : &dummy),
               "H5Dwrite /points");
}

void ResultWriter::close() {
  points_.reset();
  done_.close("H5Dclose /progress/done");
  values_.close("H5Dclose /distances");
  xfer_.reset();
  file_.close("H5Fclose (flushing the output file)");
}

}  // namespace tdsolve::io
