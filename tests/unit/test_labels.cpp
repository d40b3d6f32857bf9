// Per-atom labels (hist's --types, --exclude): a trajectory's columns in the
// order read() returns its atoms, label files, and each refusal's message.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "io/h5.hpp"
#include "io/trajectory.hpp"

using namespace tdsolve;
using namespace tdsolve::io;

namespace {

using Labels = std::vector<std::string>;

std::string tmp(const std::string& name) {
  return "/tmp/tdsolve_unit_" + std::to_string(getpid()) + "_" + name;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// The message of the InputError `f` throws ("" if none).
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// Two frames of four atoms, ids shuffled differently in each; x = id.
const char* kDump =
    "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n4\nITEM: BOX BOUNDS pp pp pp\n0 10\n0 10\n0 10\n"
    "ITEM: ATOMS id mol type element x y z\n"
    "3 2 1 O 3 0 0\n1 1 1 O 1 0 0\n4 2 2 H 4 0 0\n2 1 2 H 2 0 0\n"
    "ITEM: TIMESTEP\n10\nITEM: NUMBER OF ATOMS\n4\nITEM: BOX BOUNDS pp pp pp\n0 10\n0 10\n0 10\n"
    "ITEM: ATOMS id mol type element x y z\n"
    "2 1 2 H 2 0 0\n4 2 2 H 4 0 0\n1 1 1 O 1 0 0\n3 2 1 O 3 0 0\n";

// Datasets as h5py writes them: str as variable-length UTF-8, NumPy bytes
// as fixed-length null-padded ASCII, int64, float64, bool as an enum of
// int8 (h5py 3.7's types, read back with h5dump -H).
Hid dataset(hid_t loc, const std::string& name, hid_t type, const std::vector<hsize_t>& dims) {
  Hid space = space_handle(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
                           "H5Screate_simple");
  Hid lcpl = plist_handle(H5Pcreate(H5P_LINK_CREATE), "H5Pcreate");
  H5Pset_create_intermediate_group(lcpl, 1);
  return dataset_handle(H5Dcreate2(loc, name.c_str(), type, space, lcpl, H5P_DEFAULT, H5P_DEFAULT),
                        name);
}
void write_ints(hid_t loc, const std::string& name, const std::vector<hsize_t>& dims,
                const std::vector<long long>& v) {
  Hid d = dataset(loc, name, H5T_STD_I64LE, dims);
  check_status(H5Dwrite(d, H5T_NATIVE_LLONG, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), name);
}
void write_doubles(hid_t loc, const std::string& name, const std::vector<hsize_t>& dims,
                   const std::vector<double>& v) {
  Hid d = dataset(loc, name, H5T_IEEE_F64LE, dims);
  check_status(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), name);
}
void write_strings(hid_t loc, const std::string& name, const std::vector<hsize_t>& dims,
                   const Labels& v) {
  Hid type = type_handle(H5Tcopy(H5T_C_S1), "H5Tcopy");
  H5Tset_size(type, H5T_VARIABLE);
  H5Tset_cset(type, H5T_CSET_UTF8);
  std::vector<const char*> p;
  for (const std::string& s : v)
    p.push_back(s.c_str());
  Hid d = dataset(loc, name, type, dims);
  check_status(H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, p.data()), name);
}
void write_fixed_strings(hid_t loc, const std::string& name, const Labels& v, size_t size) {
  Hid type = type_handle(H5Tcopy(H5T_C_S1), "H5Tcopy");
  H5Tset_size(type, size);
  H5Tset_strpad(type, H5T_STR_NULLPAD);
  std::string buf(v.size() * size, '\0');
  for (size_t i = 0; i < v.size(); ++i)
    buf.replace(i * size, v[i].size(), v[i]);
  Hid d = dataset(loc, name, type, {v.size()});
  check_status(H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()), name);
}
void write_bools(hid_t loc, const std::string& name, const std::vector<signed char>& v) {
  Hid type = type_handle(H5Tenum_create(H5T_NATIVE_SCHAR), "H5Tenum_create");
  signed char no = 0, yes = 1;
  H5Tenum_insert(type, "FALSE", &no);
  H5Tenum_insert(type, "TRUE", &yes);
  Hid d = dataset(loc, name, type, {v.size()});
  check_status(H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), name);
}

// An H5MD file of 3 frames × 4 atoms in /particles/all, species either fixed
// (a dataset of n) or time dependent (value, frames × n: frame k's species
// are S<k>).
void write_h5md(const std::string& path, bool timed_species) {
  Hid f = file_handle(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), path);
  group_handle(H5Gcreate2(f, "/h5md", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), "h5md");
  write_doubles(f, "/particles/all/position/value", {3, 4, 3}, std::vector<double>(36, 1.0));
  write_ints(f, "/particles/all/position/step", {3}, {0, 10, 20});
  write_doubles(f, "/particles/all/box/edges", {3}, {10, 10, 10});
  write_doubles(f, "/particles/all/image/value", {3, 4, 3}, std::vector<double>(36, 0.0));
  if (timed_species) {
    write_strings(f, "/particles/all/species/value", {3, 4},
                  {"S0", "S0", "S0", "S0", "S1", "S1", "S1", "S1", "S2", "S2", "S2", "S2"});
    write_ints(f, "/particles/all/species/step", {3}, {0, 10, 20});
  } else {
    write_strings(f, "/particles/all/species", {4}, {"Ar", "Ne", "Ar", "Ne"});
  }
  // id time dependent, charge an element whose value is not (shape n).
  write_ints(f, "/particles/all/id/value", {3, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  write_doubles(f, "/particles/all/charge/value", {4}, {0.5, 0.25, 1, 0.1});
  write_doubles(f, "/particles/all/mass", {4}, {12.011, 1.008, 12.011, 1.008});
  write_fixed_strings(f, "/particles/all/name", {"CA", "H", "CA", "H"}, 4);
  write_bools(f, "/particles/all/heavy", {1, 0, 1, 0});
  write_ints(f, "/particles/all/short/value", {2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  write_ints(f, "/particles/all/wide", {5}, {1, 2, 3, 4, 5});
}

}  // namespace

TEST(Labels, DumpColumnsInIdOrder) {
  const std::string f = tmp("labels.dump");
  write_file(f, kDump);
  const auto t = open_trajectory(f);
  EXPECT_EQ(t->columns(), (Labels{"id", "mol", "type", "element", "x", "y", "z"}));
  for (index_t k : {0, 1}) {
    // read(k)'s atoms by id: x = id.
    const Frame fr = t->read(k);
    for (index_t i = 0; i < 4; ++i)
      EXPECT_EQ(fr.points.values[i * 3], double(i + 1));
    EXPECT_EQ(t->labels(k, "id"), (Labels{"1", "2", "3", "4"}));
    EXPECT_EQ(t->labels(k, "type"), (Labels{"1", "2", "1", "2"}));
    EXPECT_EQ(t->labels(k, "mol"), (Labels{"1", "1", "2", "2"}));
    EXPECT_EQ(t->labels(k, "element"), (Labels{"O", "H", "O", "H"}));
    EXPECT_EQ(t->labels(k, "x"), (Labels{"1", "2", "3", "4"}));  // the word as written
  }
  EXPECT_EQ(error_of([&] { t->labels(0, "q"); }),
            "input '" + f + "' has no column 'q' (its columns: id mol type element x y z)");
  std::remove(f.c_str());
}

TEST(Labels, DumpWithoutIdsInFileOrder) {
  const std::string f = tmp("noid.dump");
  write_file(f,
             "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n3\nITEM: BOX BOUNDS pp pp pp\n0 1\n0 1\n"
             "0 1\nITEM: ATOMS type x y z\n2 0 0 0\n1 0 0 0\n3 0 0 0\n");
  EXPECT_EQ(open_trajectory(f)->labels(0, "type"), (Labels{"2", "1", "3"}));
  std::remove(f.c_str());
}

TEST(Labels, ExtendedAndPlainXyz) {
  const std::string f = tmp("labels.extxyz"), plain = tmp("plain.xyz");
  write_file(f,
             "3\nLattice=\"5 0 0 0 5 0 0 0 5\" Properties=species:S:1:pos:R:3:Z:I:1:mol:I:1\n"
             "O 0 0 0 8 1\nH 1 0 0 1 1\nH 0 1 0 1 1\n"
             "3\nProperties=species:S:1:pos:R:3:Z:I:1:mol:I:1\n"
             "O 0 0 0 8 2\nH 1 0 0 1 2\nC 0 1 0 6 3\n");
  const auto t = open_trajectory(f);
  EXPECT_EQ(t->columns(), (Labels{"species", "Z", "mol"}));
  EXPECT_EQ(t->labels(0, "species"), (Labels{"O", "H", "H"}));
  EXPECT_EQ(t->labels(1, "species"), (Labels{"O", "H", "C"}));
  EXPECT_EQ(t->labels(0, "Z"), (Labels{"8", "1", "1"}));
  EXPECT_EQ(t->labels(1, "mol"), (Labels{"2", "2", "3"}));
  EXPECT_EQ(error_of([&] { t->labels(0, "pos"); }),
            "input '" + f +
                "': property 'pos' has 3 columns where a label column has one (its columns: "
                "species Z mol)");
  EXPECT_EQ(error_of([&] { t->labels(0, "type"); }),
            "input '" + f + "' has no column 'type' (its columns: species Z mol)");

  write_file(plain, "2\ncomment\nAr 0 0 0\nNe 1 1 1\n");
  const auto p = open_trajectory(plain);
  EXPECT_EQ(p->columns(), (Labels{"species"}));
  EXPECT_EQ(p->labels(0, "species"), (Labels{"Ar", "Ne"}));
  std::remove(f.c_str());
  std::remove(plain.c_str());
}

TEST(Labels, H5mdElementsFixedAndTimeDependent) {
  const std::string fixed = tmp("fixed.h5"), timed = tmp("timed.h5");
  write_h5md(fixed, false);
  write_h5md(timed, true);
  const auto t = open_trajectory(fixed);
  // Per-atom elements only: not position, image (frames × n × 3), box or
  // wide (n + 1 values).
  EXPECT_EQ(t->columns(), (Labels{"charge", "heavy", "id", "mass", "name", "short", "species"}));
  EXPECT_EQ(t->labels(2, "species"), (Labels{"Ar", "Ne", "Ar", "Ne"}));
  EXPECT_EQ(t->labels(1, "id"), (Labels{"5", "6", "7", "8"}));
  EXPECT_EQ(t->labels(0, "charge"), (Labels{"0.5", "0.25", "1", "0.1"}));
  EXPECT_EQ(t->labels(0, "mass"), (Labels{"12.011", "1.008", "12.011", "1.008"}));
  EXPECT_EQ(t->labels(0, "name"), (Labels{"CA", "H", "CA", "H"}));
  EXPECT_EQ(t->labels(0, "heavy"), (Labels{"1", "0", "1", "0"}));
  const std::string all = "(its columns: charge heavy id mass name short species)";
  EXPECT_EQ(error_of([&] { t->labels(0, "type"); }),
            "input '" + fixed + "' has no column 'type' " + all);
  EXPECT_EQ(error_of([&] { t->labels(0, "box"); }),
            "input '" + fixed + "' has no column 'box' " + all);
  EXPECT_EQ(error_of([&] { t->labels(0, "position"); }),
            "'/particles/all/position/value' in '" + fixed +
                "' has shape (3, 4, 3) where a label column is (4,) or, per frame, (3, 4)");
  EXPECT_EQ(error_of([&] { t->labels(0, "wide"); }),
            "'/particles/all/wide' in '" + fixed + "' has shape (5,) where a label column is (4,)");
  EXPECT_EQ(error_of([&] { t->labels(0, "short"); }),
            "'/particles/all/short/value' in '" + fixed +
                "' holds 2 frames where '/particles/all/position/value' in '" + fixed +
                "' holds 3 (tdsolve takes labels sampled with the positions)");

  const auto u = open_trajectory(timed);
  for (index_t k : {0, 1, 2}) {
    const std::string s = "S" + std::to_string(k);
    EXPECT_EQ(u->labels(k, "species"), (Labels{s, s, s, s}));
  }
  std::remove(fixed.c_str());
  std::remove(timed.c_str());
}

TEST(Labels, A3dDatasetHasNoColumns) {
  const std::string f = tmp("frames.h5");
  {
    Hid file = file_handle(H5Fcreate(f.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), f);
    write_doubles(file, "/traj", {2, 3, 3}, std::vector<double>(18, 0.5));
  }
  const auto t = open_trajectory(f + ":/traj");
  EXPECT_TRUE(t->columns().empty());
  EXPECT_EQ(
      error_of([&] { t->labels(0, "species"); }),
      "input '" + f + ":/traj' has no column 'species' (a 3-D dataset (frames × n × d) has none)");
  EXPECT_EQ(error_of([&] { read_labels("species", f + ":/traj", 0, 3, "--types"); }),
            "--types 'species' is neither a column of '" + f + ":/traj' (it has none) nor a file");
  std::remove(f.c_str());
}

TEST(Labels, ReadLabelsFromColumnsAndFiles) {
  const std::string dump = tmp("rl.dump"), h5md = tmp("rl.h5"), text = tmp("types.txt"),
                    h5 = tmp("labels.h5");
  write_file(dump, kDump);
  write_h5md(h5md, true);
  write_file(text, "# one type per atom\nO H  # a comment\n\tO\nH\n");
  {
    Hid file = file_handle(H5Fcreate(h5.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), h5);
    write_ints(file, "/mol", {4}, {7, 7, 9, -1});
    write_strings(file, "/species", {4}, {"O", "H", "O", "H"});
    write_fixed_strings(file, "/fixed", {"Na", "Cl", "Na", "Cl"}, 8);
  }
  EXPECT_EQ(read_labels("type", dump, 0, 4, "--types"), (Labels{"1", "2", "1", "2"}));
  EXPECT_EQ(read_labels("mol", dump, 1, 4, "--exclude"), (Labels{"1", "1", "2", "2"}));
  EXPECT_EQ(read_labels("species", h5md, 1, 4, "--types"), (Labels{"S1", "S1", "S1", "S1"}));
  // Files: the input's columns are no matter to them.
  for (const std::string& input : {dump, tmp("points.csv"), std::string()}) {
    EXPECT_EQ(read_labels(text, input, 0, 4, "--types"), (Labels{"O", "H", "O", "H"}));
    EXPECT_EQ(read_labels(h5 + ":/species", input, 0, 4, "--types"), (Labels{"O", "H", "O", "H"}));
    EXPECT_EQ(read_labels(h5 + ":species", input, 0, 4, "--types"), (Labels{"O", "H", "O", "H"}));
    EXPECT_EQ(read_labels(h5 + ":/fixed", input, 0, 4, "--types"),
              (Labels{"Na", "Cl", "Na", "Cl"}));
  }
  std::remove(dump.c_str());
  std::remove(h5md.c_str());
  std::remove(text.c_str());
  std::remove(h5.c_str());
}

TEST(Labels, ReadLabelsRefusals) {
  const std::string dump = tmp("bad.dump"), text = tmp("bad.txt"), h5 = tmp("bad.h5");
  write_file(dump, kDump);
  {
    Hid file = file_handle(H5Fcreate(h5.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), h5);
    write_ints(file, "/mol", {4}, {7, 7, 9, -1});
    write_ints(file, "/grid", {2, 2}, {1, 2, 3, 4});
    write_strings(file, "/species", {4}, {"O", "H", "", "H"});
    write_doubles(file, "/mass", {4}, {1, 2, 3, 4});
    const unsigned char bits[4] = {1, 2, 3, 4};
    Hid b = dataset(file, "/bits", H5T_STD_B8LE, {4});
    H5Dwrite(b, H5T_NATIVE_B8, H5S_ALL, H5S_ALL, H5P_DEFAULT, bits);
    // Chunked and never written: HDF5 would read its fill value.
    Hid dcpl = plist_handle(H5Pcreate(H5P_DATASET_CREATE), "H5Pcreate");
    const hsize_t dims[1] = {4}, chunk[1] = {2};
    H5Pset_chunk(dcpl, 1, chunk);
    Hid space = space_handle(H5Screate_simple(1, dims, nullptr), "space");
    dataset_handle(H5Dcreate2(file, "/empty", H5T_STD_I64LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT),
                   "empty");
  }
  const auto error = [&](const std::string& src, const std::string& input,
                         const char* option = "--types") {
    return error_of([&] { read_labels(src, input, 0, 4, option); });
  };
  EXPECT_EQ(error("mols", dump, "--exclude"),
            "--exclude 'mols' is neither a column of '" + dump +
                "' (its columns: id mol type element x y z) nor a file");
  EXPECT_EQ(error("mols", tmp("points.csv"), "--exclude"), "--exclude 'mols' is not a file");
  EXPECT_EQ(error(h5 + ":/nope", dump, "--exclude"),
            "--exclude '" + h5 + ":/nope': '" + h5 + "' has no dataset '/nope'");
  EXPECT_EQ(error(h5, dump),
            "--types '" + h5 + "' is an HDF5 file: name the dataset, --types " + h5 + ":/DATASET");
  EXPECT_EQ(error(h5 + ":/grid", dump),
            "--types '" + h5 + ":/grid' has shape (2, 2); labels are a 1-D dataset, one per atom");
  EXPECT_EQ(error(h5 + ":/species", dump),
            "--types '" + h5 + ":/species': the label of atom 2 is empty");
  EXPECT_EQ(error(h5 + ":/mol", dump, "--exclude"),
            "--exclude '" + h5 +
                ":/mol': the label of atom 3, '-1', holds '-' ('-' and ',' separate --pairs "
                "A-B,C-D: a label holds neither)");
  EXPECT_EQ(read_labels(h5 + ":/mass", dump, 0, 4, "--types"), (Labels{"1", "2", "3", "4"}));
  EXPECT_EQ(error(h5 + ":/bits", dump),
            "--types '" + h5 + ":/bits' holds neither numbers nor strings (labels are either)");
  EXPECT_EQ(error(h5 + ":/empty", dump),
            "--types '" + h5 +
                ":/empty' was not written whole (HDF5 would read unwritten values as its fill "
                "value)");

  write_file(text, "O H O\n");
  EXPECT_EQ(error(text, dump), "--types '" + text + "' gives 3 labels where '" + dump +
                                   "' has 4 atoms (one label each)");
  EXPECT_EQ(error(text, ""),
            "--types '" + text + "' gives 3 labels where the input has 4 atoms (one label each)");
  write_file(text, "O H,C O H\n");
  EXPECT_EQ(error(text, dump),
            "--types '" + text +
                "': the label of atom 1, 'H,C', holds ',' ('-' and ',' separate --pairs A-B,C-D: "
                "a label holds neither)");
  write_file(text, "1 2 3 4\n");
  EXPECT_EQ(error(text + ":/x", dump),
            "--types '" + text + ":/x': '" + text + "' is not an HDF5 file");
  std::remove(dump.c_str());
  std::remove(text.c_str());
  std::remove(h5.c_str());
}
