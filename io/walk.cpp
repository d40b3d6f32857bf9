#include "io/walk.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

#include "core/knobs.hpp"
#include "io/h5.hpp"
#include "io/output_files.hpp"

extern char** environ;

namespace tdsolve::io {

namespace {

// Chunk lookups per dataset: a legitimate file has far fewer chunks; a
// damaged shape may claim any number.
constexpr hsize_t kWalkChunkLookups = hsize_t(1) << 20;
// An attribute claiming more than this is damaged (HDF5 keeps attributes of
// at most 64 KiB in the object header).
constexpr double kWalkAttrBytes = 64.0 * 1024 * 1024;

class Walker {
 public:
  Walker(hid_t file, const std::string& path) : file_(file), path_(path) {}

  void run() {
    Hid fcpl(H5Fget_create_plist(file_), H5Pclose);
    size_t sizeof_size = 0;
    if (!fcpl.valid() || H5Pget_sizes(fcpl, &address_bytes_, &sizeof_size) < 0)
      fail("the size of its addresses cannot be read");
    // The end of the file: its size, or where its superblock says its
    // allocated space ends (EOA), whichever comes first. HDF5 reads stored
    // values past the EOA from its sieve buffer's stale bytes, without an
    // error (a changed byte of the EOA: the last row of /points garbage).
    haddr_t eoa = HADDR_UNDEF;
    if (H5Fget_filesize(file_, &eof_) < 0 || H5Fget_eoa(file_, &eoa) < 0)
      fail("its size cannot be read");
    eof_ = std::min<hsize_t>(eof_, eoa);
    std::vector<std::string> names;
    // Every object reachable by hard links, each once ("." the root),
    // with all of H5Oget_info's fields (which reads the groups' and chunk
    // indexes' sizes), as h5py's visit does.
    if (H5Ovisit2(file_, H5_INDEX_NAME, H5_ITER_INC, collect, &names, H5O_INFO_ALL) < 0)
      fail("the objects cannot be listed");
    for (const std::string& name : names)
      object(name);
    storage();
  }

 private:
  static herr_t collect(hid_t, const char* name, const H5O_info_t*, void* data) {
    static_cast<std::vector<std::string>*>(data)->emplace_back(name);
    return 0;
  }
  static herr_t collect_attr(hid_t, const char* name, const H5A_info_t*, void* data) {
    static_cast<std::vector<std::string>*>(data)->emplace_back(name);
    return 0;
  }

  // Where the stored values of a dataset (or one chunk of it) lie.
  struct Extent {
    haddr_t addr;
    hsize_t size;
    std::string where;
  };

  // Types HDF5 would not write: a string's character set or padding that
  // is none of HDF5's, a number whose bits HDF5's own setters refuse
  // (H5Tset_precision, H5Tset_offset, H5Tset_fields: HDF5 converts such a
  // float, reading bits that are no part of it, into a wrong value).
  // Whatever else a type holds, HDF5 reads as it is.
  void sane_type(hid_t type, const std::string& what) {
    const H5T_class_t cls = H5Tget_class(type);
    if (cls == H5T_INTEGER || cls == H5T_FLOAT || cls == H5T_BITFIELD) {
      const size_t size = H5Tget_size(type), precision = H5Tget_precision(type);
      const int offset = H5Tget_offset(type);
      if (size == 0 || precision == 0 || offset < 0 || size_t(offset) + precision > 8 * size)
        fail(what + ": a number of " + std::to_string(precision) + " bits at bit " +
             std::to_string(offset) + " of " + std::to_string(size) + " bytes");
      if (cls == H5T_FLOAT) {
        size_t spos = 0, epos = 0, esize = 0, mpos = 0, msize = 0;
        H5Tget_fields(type, &spos, &epos, &esize, &mpos, &msize);
        const auto inside = [](size_t bit, size_t pos, size_t n) {
          return bit >= pos && bit < pos + n;
        };
        if (epos + esize > precision || mpos + msize > precision || spos >= precision ||
            inside(spos, epos, esize) || inside(spos, mpos, msize) ||
            (mpos < epos && mpos + msize > epos) || (epos < mpos && epos + esize > mpos))
          fail(what + ": a float whose sign, exponent and mantissa (bits " + std::to_string(spos) +
               ", " + std::to_string(epos) + "+" + std::to_string(esize) + ", " +
               std::to_string(mpos) + "+" + std::to_string(msize) + ") do not fit its " +
               std::to_string(precision) + " bits");
      }
    } else if (cls == H5T_STRING) {
      const H5T_cset_t cset = H5Tget_cset(type);
      const H5T_str_t pad = H5Tget_strpad(type);
      if (cset != H5T_CSET_ASCII && cset != H5T_CSET_UTF8)
        fail(what + ": a string of character set " + std::to_string(int(cset)));
      if (pad != H5T_STR_NULLTERM && pad != H5T_STR_NULLPAD && pad != H5T_STR_SPACEPAD)
        fail(what + ": a string of padding " + std::to_string(int(pad)));
    } else if (cls == H5T_COMPOUND) {
      const int n = H5Tget_nmembers(type);
      if (n < 0) fail(what + ": its members cannot be read");
      for (int i = 0; i < n; ++i) {
        Hid member(H5Tget_member_type(type, unsigned(i)), H5Tclose);
        if (!member.valid()) fail(what + ": its members cannot be read");
        sane_type(member, what);
      }
    } else if (cls == H5T_VLEN || cls == H5T_ARRAY) {
      Hid base(H5Tget_super(type), H5Tclose);
      if (!base.valid()) fail(what + ": its base type cannot be read");
      sane_type(base, what);
    } else if (cls < 0) {
      fail(what + ": its type cannot be read");
    }
  }

  // No two stored values overlap, and all lie inside the file: HDF5 never
  // allocates so, and a changed address (an object header's, a chunk
  // index's) shows so where it points into other values.
  void storage() {
    const hsize_t eof = eof_;
    std::sort(extents_.begin(), extents_.end(),
              [](const Extent& a, const Extent& b) { return a.addr < b.addr; });
    for (size_t i = 0; i < extents_.size(); ++i) {
      const Extent& e = extents_[i];
      if (e.size > eof || e.addr > eof - e.size)
        fail("the values of " + e.where + " lie past the end of the file");
      if (i > 0 && extents_[i - 1].addr + extents_[i - 1].size > e.addr)
        fail("the values of " + extents_[i - 1].where + " and " + e.where + " overlap");
    }
  }

  [[noreturn]] void fail(const std::string& what) const {
    const std::string why = hdf5_error_text();
    throw DamagedFile("damaged: '" + path_ + "': " + what + (why.empty() ? "" : ": " + why));
  }

  static std::string shown(const std::string& name) { return name == "." ? "/" : "/" + name; }

  // Elements of a dataspace (0 for a null one); -1 when it cannot tell.
  static double elements(hid_t space) {
    if (H5Sget_simple_extent_type(space) == H5S_NULL) return 0;
    const hssize_t n = H5Sget_simple_extent_npoints(space);
    return n < 0 ? -1 : static_cast<double>(n);
  }

  // Reads `count` elements through `read` into a buffer of `type` itself
  // (as H5Aget_type and H5Dget_type give it, in memory form: no conversion,
  // as the package's walk reads), and frees what HDF5 allocated for
  // variable-length values.
  template <typename Read>
  void read_values(hid_t type, hid_t space, double count, double limit, const std::string& what,
                   Read&& read) {
    const size_t size = H5Tget_size(type);
    if (size == 0) fail(what + ": its type has no size");
    if (count * double(size) > limit)
      fail(what + " claims " + std::to_string(static_cast<unsigned long long>(count)) +
           " values of " + std::to_string(size) + " bytes");
    if (count == 0) return;
    std::vector<unsigned char> buf(static_cast<size_t>(count) * size);
    if (read(type, buf.data()) < 0) fail(what + " cannot be read");
    if (H5Tdetect_class(type, H5T_VLEN) > 0 ||
        (H5Tget_class(type) == H5T_STRING && H5Tis_variable_str(type) > 0))
      H5Dvlen_reclaim(type, space, H5P_DEFAULT, buf.data());
  }

  void attributes(hid_t obj, const std::string& where) {
    std::vector<std::string> names;
    hsize_t idx = 0;
    // In creation order first, as info and h5py list them where it is
    // tracked (elsewhere it fails: nothing to read then).
    H5Aiterate2(obj, H5_INDEX_CRT_ORDER, H5_ITER_INC, &idx, collect_attr, &names);
    H5Eclear2(H5E_DEFAULT);
    names.clear();
    idx = 0;
    if (H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_INC, &idx, collect_attr, &names) < 0)
      fail("the attributes of " + where + " cannot be listed");
    for (const std::string& a : names) {
      const std::string what = "attribute '" + a + "' of " + where;
      Hid attr(H5Aopen(obj, a.c_str(), H5P_DEFAULT), H5Aclose);
      if (!attr.valid()) fail(what + " cannot be opened");
      Hid space(H5Aget_space(attr), H5Sclose);
      Hid type(H5Aget_type(attr), H5Tclose);
      if (!space.valid() || !type.valid()) fail(what + ": its shape or type cannot be read");
      sane_type(type, what);
      const double n = elements(space);
      if (n < 0) fail(what + ": its shape cannot be read");
      // A variable-length value is stored as its length and where it lies
      // (4 + an address + 4 bytes); a type of another size in the file makes
      // HDF5 read past the attribute (H5Aget_type gives the type as in
      // memory, so its stored size is the one witness).
      if (H5Tget_class(type) == H5T_VLEN || H5Tis_variable_str(type) > 0) {
        const double stored = double(H5Aget_storage_size(attr));
        if (stored != n * double(8 + address_bytes_))
          fail(what + ": its variable-length values take " +
               std::to_string(static_cast<unsigned long long>(stored)) + " bytes, not " +
               std::to_string(static_cast<unsigned long long>(n * double(8 + address_bytes_))));
      }
      H5Eclear2(H5E_DEFAULT);
      read_values(type, space, n, kWalkAttrBytes, what,
                  [&](hid_t mem, void* buf) { return H5Aread(attr, mem, buf); });
    }
  }

  void dataset(hid_t dset, const std::string& where) {
    Hid space(H5Dget_space(dset), H5Sclose);
    Hid type(H5Dget_type(dset), H5Tclose);
    Hid dcpl(H5Dget_create_plist(dset), H5Pclose);
    if (!space.valid() || !type.valid() || !dcpl.valid())
      fail(where + ": its shape, type or creation properties cannot be read");
    sane_type(type, where);
    const double n = elements(space);
    if (n < 0) fail(where + ": its shape cannot be read");
    const H5D_layout_t layout = H5Pget_layout(dcpl);
    if (layout < 0) fail(where + ": its layout cannot be read");
    if (layout == H5D_CONTIGUOUS) {
      const haddr_t addr = H5Dget_offset(dset);
      H5Eclear2(H5E_DEFAULT);
      if (addr != HADDR_UNDEF) extents_.push_back({addr, H5Dget_storage_size(dset), where});
    }
    const bool small = n * double(H5Tget_size(type)) <= kWalkReadBytes;
    if (layout == H5D_CHUNKED && n > 0) chunks(dset, space, dcpl, type, small, where);
    // The values of a small dataset, as its readers read them all; a large
    // one's are not read (where its index is sound, they are only bytes).
    if (small)
      read_values(type, space, n, kWalkReadBytes, where, [&](hid_t mem, void* buf) {
        return H5Dread(dset, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
      });
  }

  // Looks up every chunk of the dataset's extent in its index (up to
  // kWalkChunkLookups), in row-major order.
  // A chunk index that holds more chunks than the shape has room for, or
  // (without filters) a chunk of another size than a chunk's values, was
  // not written by HDF5 (a changed chunk shape shows so).
  // small: each chunk is also read as it is stored (another way through
  // the index, which a changed key can make disagree with the first).
  void chunks(hid_t dset, hid_t space, hid_t dcpl, hid_t type, bool small,
              const std::string& where) {
    const int rank = H5Sget_simple_extent_ndims(space);
    if (rank <= 0 || rank > H5S_MAX_RANK) fail(where + ": its rank cannot be read");
    std::vector<hsize_t> dims(rank), chunk(rank), at(rank, 0);
    if (H5Sget_simple_extent_dims(space, dims.data(), nullptr) < 0 ||
        H5Pget_chunk(dcpl, rank, chunk.data()) != rank)
      fail(where + ": its chunk shape cannot be read");
    double room = 1, bytes = double(H5Tget_size(type));
    for (int a = 0; a < rank; ++a) {
      if (chunk[a] == 0) fail(where + ": a chunk of size 0");
      room *= std::ceil(double(dims[a]) / double(chunk[a]));
      bytes *= double(chunk[a]);
    }
    hsize_t stored = 0;
    if (H5Dget_num_chunks(dset, space, &stored) < 0)
      fail(where + ": its chunk index cannot be read");
    if (double(stored) > room)
      fail(where + ": its chunk index holds " + std::to_string(stored) +
           " chunks, more than its shape has room for");
    const int filters = H5Pget_nfilters(dcpl);
    if (filters < 0) fail(where + ": its filters cannot be read");
    hsize_t found = 0;
    for (hsize_t lookups = 0; lookups < kWalkChunkLookups; ++lookups) {
      unsigned mask = 0;
      haddr_t addr = 0;
      hsize_t size = 0;
      if (H5Dget_chunk_info_by_coord(dset, at.data(), &mask, &addr, &size) < 0)
        fail(where + ": its chunk index cannot be read");
      if (addr != HADDR_UNDEF) {
        if (filters == 0 && double(size) != bytes)
          fail(where + ": a chunk holds " + std::to_string(size) + " bytes, not " +
               std::to_string(static_cast<unsigned long long>(bytes)));
        extents_.push_back({addr, size, where});
        ++found;
        // Before a chunk is read into memory: a changed size may claim any.
        if (size > eof_ || addr > eof_ - size)
          fail("the values of " + where + " lie past the end of the file");
        if (small) {
          hsize_t stored_size = 0;
          std::uint32_t mask32 = 0;
          std::vector<unsigned char> raw(size);
          if (H5Dget_chunk_storage_size(dset, at.data(), &stored_size) < 0 || stored_size != size ||
              H5Dread_chunk(dset, H5P_DEFAULT, at.data(), &mask32, raw.data()) < 0)
            fail(where + ": a chunk cannot be read as it is stored");
        }
      }
      int a = rank - 1;  // the next chunk, row-major
      for (; a >= 0; --a) {
        at[a] += chunk[a];
        if (at[a] < dims[a]) break;
        at[a] = 0;
      }
      if (a >= 0) continue;
      // Every chunk of the shape looked up: the index holds no other (HDF5
      // drops those outside when a shape shrinks; a changed key shows so).
      if (found != stored)
        fail(where + ": its chunk index holds " + std::to_string(stored) + " chunks, " +
             std::to_string(stored - found) + " of them at no place of its shape");
      return;
    }
  }

  void object(const std::string& name) {
    const std::string where = shown(name);
    Hid obj(H5Oopen(file_, name.c_str(), H5P_DEFAULT), H5Oclose);
    if (!obj.valid()) fail(where + " cannot be opened");
    attributes(obj, where);
    if (H5Iget_type(obj) == H5I_DATASET) dataset(obj, where);
  }

  hid_t file_;
  const std::string& path_;
  std::vector<Extent> extents_;
  size_t address_bytes_ = 8;  // the file's addresses (its superblock says)
  hsize_t eof_ = 0;           // the file's end (its size, or its EOA if less)
};

std::string signal_text(int sig) {
  const char* s = strsignal(sig);
  return "signal " + std::to_string(sig) + (s ? std::string(": ") + s : std::string());
}

// Shortest text that reads back as v ("120", "0.5").
std::string seconds_text(double v) {
  char buf[64];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

// Reads what is there on fd into *to; false at its end.
bool drain(int fd, std::string* to) {
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      to->append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK;
  }
}

}  // namespace

void walk_objects(hid_t file, const std::string& path) {
  Walker(file, path).run();
  H5Eclear2(H5E_DEFAULT);
}

void bound_walk_memory() {
  // VmData: what RLIMIT_DATA counts (heap and private writable mappings).
  std::ifstream status("/proc/self/status");
  double held = -1;
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmData:", 0) == 0) held = std::strtod(line.c_str() + 7, nullptr) * 1024;
  struct rlimit rl {};
  if (held < 0 || getrlimit(RLIMIT_DATA, &rl) != 0) return;
  rlim_t want = static_cast<rlim_t>(held + kWalkMemoryBytes);
  if (rl.rlim_max != RLIM_INFINITY && want > rl.rlim_max) want = rl.rlim_max;
  if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur <= want) return;
  rl.rlim_cur = want;
  setrlimit(RLIMIT_DATA, &rl);
}

double read_timeout_s() {
  return knobs::number("TDSOLVE_READ_TIMEOUT_S", 0, 1e6).value_or(120);
}

std::string ChildWalk::damage(const std::string& path) const {
  if (timed_out)
    return "damaged: '" + path + "': HDF5 did not finish reading it within " +
           seconds_text(read_timeout_s()) +
           " s (TDSOLVE_READ_TIMEOUT_S): its metadata are damaged, or the file system is stuck";
  if (signal)
    return "damaged: '" + path + "': reading it with HDF5 crashed (" + signal_text(signal) +
           "): its metadata are damaged";
  if (exited && code == kWalkDamaged) {
    std::string line = err;  // "tdsolve: error: damaged: ..."
    const size_t at = line.find("damaged: ");
    line = at == std::string::npos ? "damaged: '" + path + "'" : line.substr(at);
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r'))
      line.pop_back();
    return one_line(line);
  }
  return "";
}

ChildWalk walk_in_child(const std::string& path) {
  ChildWalk w;
  const double limit = read_timeout_s();
  int out[2] = {-1, -1}, err[2] = {-1, -1};
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    w.error = std::string("pipe: ") + std::strerror(errno);
    for (int fd : {out[0], out[1], err[0], err[1]})
      if (fd >= 0) ::close(fd);
    return w;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  // Default dispositions and no blocked signals in the child, whatever
  // this process (an MPI rank with its stop handlers) has set.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::string self = "/proc/self/exe", info = "info", flag = "--isolated-walk", file = path;
  char* argv[] = {self.data(), info.data(), flag.data(), file.data(), nullptr};
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, self.c_str(), &actions, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(out[1]);
  ::close(err[1]);
  if (rc != 0) {
    w.error = std::string("cannot start a process to read it: ") + std::strerror(rc);
    ::close(out[0]);
    ::close(err[0]);
    return w;
  }
  w.ran = true;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit);
  fcntl(out[0], F_SETFL, O_NONBLOCK);
  fcntl(err[0], F_SETFL, O_NONBLOCK);
  bool open_out = true, open_err = true;
  while (open_out || open_err) {
    const double left =
        std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      w.timed_out = true;
      break;
    }
    pollfd fds[2] = {{open_out ? out[0] : -1, POLLIN, 0}, {open_err ? err[0] : -1, POLLIN, 0}};
    const int n = ::poll(fds, 2, static_cast<int>(std::min(left * 1000 + 1, 60000.0)));
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    if (open_out && fds[0].revents) open_out = drain(out[0], &w.out);
    if (open_err && fds[1].revents) open_err = drain(err[0], &w.err);
  }
  ::close(out[0]);
  ::close(err[0]);
  if (w.timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status) && !w.timed_out) w.signal = WTERMSIG(status);
  if (WIFEXITED(status)) {
    w.exited = true;
    w.code = WEXITSTATUS(status);
  }
  return w;
}

void refuse_damaged_resume(const std::string& output) {
  struct stat st {};
  std::string path = partial_path(output);
  if (stat(path.c_str(), &st) != 0) {
    path = output;
    if (stat(path.c_str(), &st) != 0) return;
  }
  const std::string advice = path == output ? "; choose another --output or pass --overwrite"
                                            : "; start over with --overwrite (without --resume)";
  if (!S_ISREG(st.st_mode))
    throw InputError("cannot resume: '" + path + "' is not a regular file" + advice);
  const ChildWalk w = walk_in_child(path);
  if (!w.ran) {  // no process can be started here: read it in this one, as before
    std::fprintf(stderr, "tdsolve: warning: '%s': %s; reading it unguarded\n", path.c_str(),
                 w.error.c_str());
    return;
  }
  const std::string damage = w.damage(path);
  if (!damage.empty()) throw InputError("cannot resume: " + damage + advice);
  if (!w.exited || (w.code != 0 && w.code != 3)) {
    // The child's verdict, in its words.
    std::string why = "it cannot be read";
    const std::string text = w.out + w.err;
    for (const char* lead : {"progress:  INCONSISTENT: ", "status:    ", "tdsolve: error: "}) {
      const size_t at = text.find(lead);
      if (at == std::string::npos) continue;
      why = text.substr(at + std::strlen(lead));
      why = why.substr(0, why.find('\n'));
      if (lead[0] == 'p') why = "its records disagree: " + why;
      break;
    }
    throw InputError("cannot resume '" + path + "': " + one_line(why) + advice);
  }
}

}  // namespace tdsolve::io
