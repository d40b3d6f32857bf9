// Reading a file that may be damaged. HDF5 trusts a file's metadata: a few
// changed bytes can make it read out of bounds (a crash) or loop, and no
// check done through HDF5 can come before that. So every reader of a
// result file (`tdsolve info`, `--resume`) first walks it in a child
// process, a re-exec of this program (`tdsolve info --isolated-walk FILE`):
// when that child dies by a signal or runs past the time limit, the file is
// damaged, and this process never lets HDF5 read it. docs/design.md,
// "Damaged files", says why a child and not a validator of our own.
#pragma once

#include <hdf5.h>

#include <string>

#include "core/error.hpp"

namespace tdsolve::io {

// A file HDF5 cannot read as a whole: the walk failed, crashed or did not
// end. what() is one line starting "damaged: 'FILE': ".
struct DamagedFile : InputError {
  using InputError::InputError;
};

// Reads, in this process, everything of an open file that a reader of it
// might: every object reachable from the root by hard links (its header),
// each one's attributes (their values, in the type HDF5 gives them), each
// dataset's type, shape and creation properties, the index of every chunk
// of a chunked dataset, and the values of every dataset of at most
// kWalkReadBytes (each of its chunks also read as stored). Throws
// DamagedFile naming what failed, or what HDF5 never writes: a string type
// of a character set or padding HDF5 does not have, a number whose bits
// HDF5's setters refuse (a float's fields outside its precision), an
// attribute of variable-length values stored in another size than HDF5
// stores them (it then reads past the attribute), a chunk index with
// more chunks than the shape has room for or with chunks at no place of
// it, a chunk without filters of another size than its values, stored
// values of two datasets or chunks that overlap or lie past the end of the
// file (its size, or the end of allocation its superblock records, if
// less). Never for a file
// HDF5 wrote: whatever it writes it reads back. python/tdsolve/_isolate.py
// walk() is its twin, step for step.
void walk_objects(hid_t file, const std::string& path);
constexpr double kWalkReadBytes = 16.0 * 1024 * 1024;

// The exit statuses of `tdsolve info --isolated-walk` that are never
// `tdsolve info`'s own: walk_objects threw (its message is on the child's
// stderr); the file is INCONSISTENT or no tdsolve result (info's 3).
constexpr int kWalkDamaged = 4;
constexpr int kWalkInconsistent = 5;

// The memory a walking child may take beyond what it holds when it starts
// (RLIMIT_DATA: its heap and private mappings): a damaged length makes
// HDF5 allocate and clear gigabytes (a variable-length value of 2^32
// elements), as fast as the machine can, until the time limit. A walk of
// a file HDF5 wrote needs far less (values of at most kWalkReadBytes a
// dataset, HDF5's caches, the checks' flags and offsets). Past it, HDF5's
// allocations fail (an HDF5 error: damaged).
constexpr double kWalkMemoryBytes = 1024.0 * 1024 * 1024;

// Lowers this process's RLIMIT_DATA to what it holds now plus
// kWalkMemoryBytes (never above the hard limit). For the child only:
// `tdsolve info --isolated-walk` calls it first.
void bound_walk_memory();

// Seconds a child may take to walk a file before it is called damaged:
// TDSOLVE_READ_TIMEOUT_S (default 120).
double read_timeout_s();

// What became of one isolated walk of `path`.
struct ChildWalk {
  bool ran = false;        // false: no child could be started (why: `error`)
  bool exited = false;     // it ended by itself, with `code`
  int code = 0;            // its exit status (when exited)
  int signal = 0;          // the signal that ended it (0: none)
  bool timed_out = false;  // killed at the time limit
  std::string out, err;    // what it printed
  std::string error;       // why it could not run
  // "damaged: 'FILE': ..." when the walk says the file is damaged (a
  // signal, the time limit, or kWalkDamaged); "" otherwise.
  std::string damage(const std::string& path) const;
};

// Runs `tdsolve info --isolated-walk path` (this program, re-executed
// through /proc/self/exe) with its output captured, and waits for it at
// most read_timeout_s().
ChildWalk walk_in_child(const std::string& path);

// For --resume, before anything of this process opens them with HDF5: the
// output's FILE.h5.partial (or, without one, FILE.h5) that --resume would
// read must be a regular file that survives the isolated walk and reads
// there as complete or incomplete. Throws InputError ("cannot resume:
// damaged: ...; start over with --overwrite", or the child's own verdict:
// inconsistent, unreadable) otherwise: HDF5 may survive a damaged file in
// one process and not in another, so a file whose records the child found
// disagreeing is not read here. Nothing to check: returns at once.
void refuse_damaged_resume(const std::string& output);

}  // namespace tdsolve::io
