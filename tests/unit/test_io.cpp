// Input readers and the result file on one rank.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "io/h5.hpp"
#include "io/info.hpp"
#include "io/input.hpp"
#include "io/output_files.hpp"
#include "io/result_file.hpp"
#include "io/spheres.hpp"

using namespace tdsolve;
using namespace tdsolve::io;

namespace {

std::string tmp(const std::string& name) {
  return "/tmp/tdsolve_unit_" + std::to_string(getpid()) + "_" + name;
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A .npy file: version 1 header padded to 64 bytes.
std::string npy(const std::string& descr, const std::string& shape, bool fortran,
                const std::string& data) {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
                     ", 'shape': " + shape + ", }";
  while ((10 + dict.size() + 1) % 64)
    dict += ' ';
  dict += '\n';
  std::string s = "\x93NUMPY";
  s += '\x01';
  s += '\x00';
  s += static_cast<char>(dict.size() & 0xff);
  s += static_cast<char>(dict.size() >> 8);
  return s + dict + data;
}

template <typename T>
std::string raw(std::initializer_list<T> v, bool swap = false) {
  std::string s;
  for (T x : v) {
    char b[sizeof(T)];
    std::memcpy(b, &x, sizeof(T));
    if (swap) std::reverse(b, b + sizeof(T));
    s.append(b, sizeof(T));
  }
  return s;
}

std::string error_of(const std::string& spec) {
  try {
    read_points(spec);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Npy, ReadsFloatIntEndianAndFortranOrder) {
  const std::string f = tmp("a.npy");
  write_file(f, npy("<f8", "(2, 3)", false, raw<double>({1, 2, 3, 4, 5, 6})));
  PointSet p = read_points(f);
  EXPECT_EQ(p.n, 2u);
  EXPECT_EQ(p.d, 3u);
  EXPECT_EQ(p.values, (std::vector<double>{1, 2, 3, 4, 5, 6}));

  write_file(f, npy(">f4", "(2, 3)", false, raw<float>({1, 2, 3, 4, 5, 6}, true)));
  EXPECT_EQ(read_points(f).values, (std::vector<double>{1, 2, 3, 4, 5, 6}));

  write_file(f, npy("<f8", "(2, 3)", true, raw<double>({1, 4, 2, 5, 3, 6})));
  EXPECT_EQ(read_points(f).values, (std::vector<double>{1, 2, 3, 4, 5, 6}));

  write_file(f, npy("<i8", "(3, 1)", false, raw<std::int64_t>({-1, 0, 7})));
  EXPECT_EQ(read_points(f).values, (std::vector<double>{-1, 0, 7}));
  std::remove(f.c_str());
}

TEST(Npy, RejectsWrongShapesTypesAndTruncation) {
  const std::string f = tmp("b.npy");
  write_file(f, npy("<f8", "(4,)", false, raw<double>({1, 2, 3, 4})));
  EXPECT_NE(error_of(f).find("1-D"), std::string::npos) << error_of(f);
  write_file(f, npy("<f8", "(2, 1, 2)", false, raw<double>({1, 2, 3, 4})));
  EXPECT_NE(error_of(f).find("3-D"), std::string::npos) << error_of(f);
  write_file(f, npy("<c16", "(1, 1)", false, std::string(16, '\0')));
  EXPECT_NE(error_of(f).find("dtype"), std::string::npos) << error_of(f);
  write_file(f, npy("<f8", "(3, 2)", false, raw<double>({1, 2, 3})));
  EXPECT_NE(error_of(f).find("truncated"), std::string::npos) << error_of(f);
  // One point is a valid set (cross takes it); pairs of one set need two.
  write_file(f, npy("<f8", "(1, 2)", false, raw<double>({1, 2})));
  EXPECT_EQ(read_points(f).n, 1u);
  try {
    check_pairs(1, f);
    ADD_FAILURE() << "one point accepted for pairs";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("at least 2"), std::string::npos) << e.what();
  }
  write_file(f, npy("<f8", "(5, 0)", false, ""));
  EXPECT_NE(error_of(f).find("empty"), std::string::npos) << error_of(f);
  write_file(f, "not numpy");
  EXPECT_NE(error_of(f).find("not a NumPy"), std::string::npos) << error_of(f);
  std::remove(f.c_str());
}

TEST(Csv, HeaderCommentsAndSeparators) {
  const std::string f = tmp("c.csv");
  write_file(f, "x,y\n# a comment\n1,2\n\n3.5, -4e-1\n");
  PointSet p = read_points(f);
  EXPECT_EQ(p.n, 2u);
  EXPECT_EQ(p.d, 2u);
  EXPECT_EQ(p.values, (std::vector<double>{1, 2, 3.5, -0.4}));
  const std::string t = tmp("c.txt");
  write_file(t, "1 2 3\n4\t5\t6\n");
  EXPECT_EQ(read_points(t).values, (std::vector<double>{1, 2, 3, 4, 5, 6}));
  std::remove(f.c_str());
  std::remove(t.c_str());
}

TEST(Csv, RaggedRowsAndBadValuesNameTheLine) {
  const std::string f = tmp("d.csv");
  write_file(f, "1,2\n3,4\n5\n");
  EXPECT_NE(error_of(f).find("line 3 has 1 values"), std::string::npos) << error_of(f);
  write_file(f, "1,2\n3,abc\n");
  EXPECT_NE(error_of(f).find("line 2"), std::string::npos) << error_of(f);
  write_file(f, "1,,2\n3,4,5\n");
  EXPECT_NE(error_of(f).find("line 1"), std::string::npos) << error_of(f);
  std::remove(f.c_str());
}

// Only the first row may be a header: a line of words further down (a
// second file pasted under the first, a stray label) is refused, naming its
// line, not skipped as another header (jobs/mutate.py:
// readers.header-anywhere).
TEST(Csv, OnlyTheFirstRowMayBeAHeader) {
  const std::string f = tmp("h.csv");
  write_file(f, "x,y\n1,2\nx,y\n3,4\n");
  EXPECT_NE(error_of(f).find("line 3 is not a row of numbers"), std::string::npos) << error_of(f);
  write_file(f, "# comment\n1,2\nlabel\n");
  EXPECT_NE(error_of(f).find("line 3 is not a row of numbers"), std::string::npos) << error_of(f);
  std::remove(f.c_str());
}

TEST(Input, NonFiniteValuesAreNamed) {
  const std::string f = tmp("e.csv");
  write_file(f, "1,2\n3,nan\ninf,4\n");
  PointSet p = read_points(f);
  try {
    check_finite(p);
    FAIL() << "NaN accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("2 non-finite values"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("row 1, column 1"), std::string::npos) << e.what();
  }
  std::remove(f.c_str());
}

TEST(Input, MissingFilesAndUnknownFormats) {
  EXPECT_NE(error_of("/nonexistent/x.npy").find("No such file"), std::string::npos);
  EXPECT_NE(error_of("/nonexistent/x.h5:/points").find("No such file"), std::string::npos);
  const std::string f = tmp("f.bin");
  write_file(f, "abc");
  EXPECT_NE(error_of(f).find("cannot tell the format"), std::string::npos) << error_of(f);
  std::remove(f.c_str());
}

TEST(Hdf5Input, ReadsAndNamesMissingDatasets) {
  const std::string f = tmp("g.h5");
  {
    Hid file = file_handle(H5Fcreate(f.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), "create");
    const hsize_t dims[2] = {3, 2}, dims1[1] = {4};
    Hid s2 = space_handle(H5Screate_simple(2, dims, nullptr), "s");
    Hid s1 = space_handle(H5Screate_simple(1, dims1, nullptr), "s");
    Hid d2 = dataset_handle(
        H5Dcreate2(file, "pts", H5T_IEEE_F32LE, s2, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), "d");
    Hid d1 = dataset_handle(
        H5Dcreate2(file, "flat", H5T_IEEE_F64LE, s1, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), "d");
    const float v[6] = {1, 2, 3, 4, 5, 6};
    const double w[4] = {1, 2, 3, 4};
    H5Dwrite(d2, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
    H5Dwrite(d1, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, w);
  }
  PointSet p = read_points(f + ":/pts");
  EXPECT_EQ(p.n, 3u);
  EXPECT_EQ(p.values, (std::vector<double>{1, 2, 3, 4, 5, 6}));
  EXPECT_NE(error_of(f + ":/nope").find("no dataset '/nope'"), std::string::npos)
      << error_of(f + ":/nope");
  EXPECT_NE(error_of(f + ":/nope").find("/pts"), std::string::npos);
  EXPECT_NE(error_of(f + ":/flat").find("1-D"), std::string::npos) << error_of(f + ":/flat");
  EXPECT_NE(error_of(f).find("name the dataset"), std::string::npos) << error_of(f);
  const std::string csv = tmp("h.csv");
  write_file(csv, "1,2\n");
  EXPECT_NE(error_of(csv + ":/x").find("not an HDF5 file"), std::string::npos)
      << error_of(csv + ":/x");
  std::remove(csv.c_str());
  std::remove(f.c_str());
}

// Golden values: value k of uniform:N:D:SEED is splitmix64(splitmix64(SEED) +
// k) >> 11, times 2^-53. Computed on 2026-11-22 with an independent Python
// SplitMix64 (Vigna's splitmix64.c, first checked against its published
// sequence for seed 1234567: 6457827717110365317, 3203168211198807973, ...):
//   M = 2**64 - 1
//   def mix(x):
//       z = (x + 0x9E3779B97F4A7C15) & M
//       z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
//       z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
//       return z ^ (z >> 31)
//   base = mix(seed)
//   [float(mix((base + k) & M) >> 11) * 2.0**-53 for k in range(count)]
// run with /usr/bin/python3 and printed with float.hex().
TEST(Generator, MatchesGoldenSplitMix64Values) {
  const PointSet p = generate_points(parse_generator("uniform:4:3:7"));
  EXPECT_EQ(p.n, 4u);
  EXPECT_EQ(p.d, 3u);
  const std::vector<double> seed7 = {
      0x1.7169852efd579p-1, 0x1.3f45640f3de1cp-3, 0x1.bfac8aa3c5c30p-1, 0x1.ea745344d2aaep-1,
      0x1.b4c1de5e26070p-4, 0x1.ad49d832d480cp-1, 0x1.c587252fde5ccp-2, 0x1.08b8122842a93p-1,
      0x1.d5485ae8ed420p-3, 0x1.0e1dad8392addp-1, 0x1.11c2580cf5426p-1, 0x1.01b386872340cp-3};
  EXPECT_EQ(p.values, seed7);
  // The default seed is 0.
  const std::vector<double> seed0 = {0x1.4e0dba5e9a32fp-1, 0x1.54c7a80d79bf4p-3,
                                     0x1.050edc389e168p-1, 0x1.f37e223c76821p-1};
  EXPECT_EQ(generate_points(parse_generator("uniform:2:2")).values, seed0);
  EXPECT_EQ(generate_points(parse_generator("uniform:1:4:0")).values, seed0);
  // The largest seed (base + k wraps around 2^64).
  const std::vector<double> seed_max = {0x1.77082a9eca89cp-2, 0x1.a18c75e7bab64p-2,
                                        0x1.46c0754f289f8p-2, 0x1.74fa17ccee4c0p-7};
  EXPECT_EQ(generate_points(parse_generator("uniform:4:1:18446744073709551615")).values, seed_max);
}

TEST(Generator, ParsesAndRejects) {
  const GeneratorSpec g = parse_generator("uniform:100:3:7");
  EXPECT_EQ(g.kind, "uniform");
  EXPECT_EQ(g.n, 100u);
  EXPECT_EQ(g.d, 3u);
  EXPECT_EQ(g.seed, 7u);
  const PointSet a = generate_points(g);
  ASSERT_EQ(a.values.size(), 300u);
  for (double v : a.values) {
    EXPECT_GE(v, 0.0);
    EXPECT_LT(v, 1.0);
  }
  EXPECT_EQ(parse_generator("uniform:5:2").seed, 0u);
  for (const char* bad :
       {"uniform:10", "normal:10:3", "uniform:x:3", "uniform:10:3:1:2", "uniform:-5:3",
        "uniform:0:3", "uniform:10:0", "uniform:99999999999999999999999:3",
        "uniform:10:3:18446744073709551616"}) {
    EXPECT_THROW(parse_generator(bad), std::runtime_error) << bad;
  }
}

TEST(Generator, SpheresAreUniformPointsAndRadiiInZeroToRmax) {
  const SpheresSpec s = parse_spheres("spheres:500:3:7:0.25");
  EXPECT_EQ(s.n, 500u);
  EXPECT_EQ(s.dim, 3u);
  EXPECT_EQ(s.seed, 7u);
  EXPECT_EQ(s.rmax, 0.25);
  const PointSet p = generate_spheres(s);
  ASSERT_EQ(p.d, 4u);
  EXPECT_EQ(p.source, "spheres:500:3:7:0.25");
  const PointSet c = generate_points(parse_generator("uniform:500:3:7"));
  for (index_t i = 0; i < p.n; ++i) {
    for (index_t k = 0; k < 3; ++k)
      EXPECT_EQ(p.values[i * 4 + k], c.values[i * 3 + k]) << i;
    EXPECT_GT(p.values[i * 4 + 3], 0.0) << i;
    EXPECT_LE(p.values[i * 4 + 3], 0.25) << i;
  }
  // The default RMAX: two expected partners a sphere.
  EXPECT_EQ(parse_spheres("spheres:101:1:0").rmax, 0.01);
  EXPECT_DOUBLE_EQ(parse_spheres("spheres:1001:3:0").rmax,
                   std::cbrt(1.0 / (3.141592653589793 * 1000)));
  EXPECT_TRUE(is_spheres_spec("spheres:10:1:0"));
  EXPECT_FALSE(is_spheres_spec("uniform:10:1:0"));
  for (const char* bad : {"spheres:10:2:1", "spheres:10:3", "spheres:10:3:1:0", "spheres:10:3:1:-1",
                          "spheres:10:3:1:nan", "spheres:10:3:1:inf", "spheres:10:3:1:1e-301",
                          "spheres:1:3:1", "spheres:10:3:1:2:3", "uniform:10:3:1"})
    EXPECT_THROW(parse_spheres(bad), std::runtime_error) << bad;
}

TEST(ResultFile, WritesSchemaAndProgressThatInfoReads) {
  const std::string f = tmp("r.h5");
  ResultLayout L;
  L.path = f;
  L.result = {"distances",
              ValueType::f32,
              {10},
              {Attr{"n", std::uint64_t(5)}, Attr{"k", std::uint64_t(2)},
               Attr{"layout", std::string("combinations")},
               Attr{"metric", std::string("euclidean")}, Attr{"precision", std::string("float32")},
               Attr{"features", std::uint64_t(2)}, Attr{"block", std::uint64_t(2)}},
              {}};
  L.chunk_offsets = {0, 7, 10};
  L.root_attrs = {Attr{"software", std::string("tdsolve")}, Attr{"version", std::string("test")},
                  Attr{"command", std::string("tdsolve edm ...")},
                  Attr{"created", std::string("2026-01-01T00:00:00Z")},
                  Attr{"input", std::string("unit")}};
  std::vector<float> values(10);
  for (int i = 0; i < 10; ++i)
    values[i] = static_cast<float>(i);
  create_result_file(L);
  {
    ResultWriter w(MPI_COMM_SELF, L);
    w.write(0, 7, values.data());
    w.flush();
    w.mark_done(true, 0);
    w.close();
  }
  std::ostringstream out;
  EXPECT_EQ(describe_result(f, out), kInfoIncomplete) << out.str();
  EXPECT_NE(out.str().find("INCOMPLETE: 1 of 2 chunks"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("missing chunks 1"), std::string::npos) << out.str();

  // What --resume reads back: the plan, the flags, the dataset.
  const ExistingResult r = read_existing(f);
  EXPECT_EQ(r.offsets, (std::vector<index_t>{0, 7, 10}));
  EXPECT_EQ(r.done, (std::vector<unsigned char>{1, 0}));
  EXPECT_EQ(r.chunks_done(), 1u);
  EXPECT_FALSE(r.complete());
  EXPECT_EQ(r.dataset, "/distances");
  EXPECT_EQ(r.version, "test");

  // Existing file: never replaced (the run writes a new name and renames).
  EXPECT_THROW(create_result_file(L), H5Error);
  EXPECT_TRUE(std::ifstream(f).good()) << "a refused creation must leave the old file alone";
  std::remove(f.c_str());
  create_result_file(L);
  {
    ResultWriter w(MPI_COMM_SELF, L);
    w.write(0, 7, values.data());
    w.mark_done(true, 0);
    w.write(7, 3, values.data() + 7);
    w.mark_done(true, 1);
    w.close();
  }
  std::ostringstream out2;
  EXPECT_EQ(describe_result(f, out2), kInfoComplete) << out2.str();
  EXPECT_NE(out2.str().find("complete (2 of 2 chunks)"), std::string::npos) << out2.str();
  EXPECT_NE(out2.str().find("metric=euclidean"), std::string::npos) << out2.str();
  Hid file = file_handle(H5Fopen(f.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "open");
  Hid d = dataset_handle(H5Dopen2(file, "distances", H5P_DEFAULT), "open");
  std::vector<float> back(10);
  H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, back.data());
  EXPECT_EQ(back, values);
  EXPECT_EQ(read_attr_u64(d, "n"), 5u);
  EXPECT_EQ(read_attr_string(d, "layout"), "combinations");
  EXPECT_EQ(read_attr_string(file, "software"), "tdsolve");
  std::remove(f.c_str());
}

// A second process cannot take an output's lock while the first holds it,
// and is told who holds it; once released, it can.
TEST(OutputLock, ExcludesASecondProcessAndNamesTheHolder) {
  const std::string out = tmp("locked.h5");
  auto other_process_locks = [&](std::string* message) {
    int pipefd[2];
    if (pipe(pipefd) != 0) return -1;
    const pid_t pid = fork();
    if (pid == 0) {
      close(pipefd[0]);
      std::string m = "ok";
      int code = 0;
      try {
        OutputLock second(out, "second");
      } catch (const std::exception& e) {
        m = e.what();
        code = 1;
      }
      if (write(pipefd[1], m.data(), m.size()) < 0) code = 2;
      _exit(code);
    }
    close(pipefd[1]);
    char buf[1024] = {};
    const ssize_t got = read(pipefd[0], buf, sizeof buf - 1);
    close(pipefd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    *message = got > 0 ? std::string(buf, got) : "";
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  std::string message;
  {
    OutputLock first(out, "tdsolve edm --output locked.h5");
    EXPECT_EQ(other_process_locks(&message), 1);
    EXPECT_NE(message.find("being written by another tdsolve run"), std::string::npos) << message;
    EXPECT_NE(message.find("pid " + std::to_string(getpid())), std::string::npos) << message;
    const LockHolder h = read_lock(out);
    EXPECT_TRUE(h.present);
    EXPECT_EQ(h.pid, getpid());
    EXPECT_EQ(h.command, "tdsolve edm --output locked.h5");
  }
  EXPECT_EQ(other_process_locks(&message), 0) << message;
  EXPECT_FALSE(read_lock(out).present) << "a released lock removes its file";
}

// The command tdsolve info prints to continue a run: the recorded command
// line without its --overwrite words and with --resume, quoting kept.
TEST(ResumeCommand, LeavesOutOverwriteAndAddsResume) {
  EXPECT_EQ(resume_command_of("tdsolve edm --output d.h5 --overwrite --quiet"),
            "tdsolve edm --output d.h5 --quiet --resume");
  EXPECT_EQ(resume_command_of("tdsolve edm --resume --output d.h5"),
            "tdsolve edm --resume --output d.h5");
  // A quoted word that merely holds the text stays.
  EXPECT_EQ(resume_command_of("tdsolve edm --output 'it'\\''s --overwrite.h5'"),
            "tdsolve edm --output 'it'\\''s --overwrite.h5' --resume");
}

// A lock file that is a symbolic link is refused, and its target is never
// written; a lock this process holds is removed only while the name still
// means its file.
TEST(OutputLock, RefusesALinkAndRemovesOnlyItsOwnFile) {
  const std::string out = tmp("linked.h5"), target = tmp("linked-target.txt");
  std::remove(lock_path(out).c_str());
  { std::ofstream(target) << "precious\n"; }
  ASSERT_EQ(symlink(target.c_str(), lock_path(out).c_str()), 0);
  try {
    OutputLock lock(out, "test");
    ADD_FAILURE() << "a symbolic link was taken as the lock file";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("symbolic link"), std::string::npos) << e.what();
  }
  std::string text;
  std::getline(std::ifstream(target), text);
  EXPECT_EQ(text, "precious");
  std::remove(lock_path(out).c_str());
  {
    OutputLock lock(out, "test");
    // Someone else's file now has the name: it stays when this lock goes.
    ASSERT_EQ(std::rename(lock_path(out).c_str(), target.c_str()), 0);
    { std::ofstream(lock_path(out)) << "another run's lock\n"; }
  }
  EXPECT_TRUE(read_lock(out).present) << "released a lock file it did not hold";
  std::remove(lock_path(out).c_str());
  std::remove(target.c_str());
}
