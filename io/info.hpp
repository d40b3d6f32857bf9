// `tdsolve info FILE.h5`: what a result file holds and whether it is complete.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

namespace tdsolve::io {

// Exit codes: 0 complete, 3 readable but incomplete, inconsistent or not a
// tdsolve result; throws InputError when the file cannot be read at all (or
// was written by a newer tdsolve). A file's `kind` (or, in files written
// before they recorded one, its datasets) picks its checks from the schema
// (io/schema.hpp).
constexpr int kInfoComplete = 0;
constexpr int kInfoIncomplete = 3;

// In this process: what `tdsolve info --isolated-walk` runs. Throws
// DamagedFile (io/walk.hpp) when HDF5 cannot read every object of the file.
// *agree (when given): false when the file is INCONSISTENT or no tdsolve
// result (exit 3 too), true otherwise.
int describe_result(const std::string& path, std::ostream& out, bool* agree = nullptr);

// `tdsolve info`: the same, run in a child process (io/walk.hpp) whose
// output is passed on to out and err once it ended by itself. A file that is
// no regular file (a FIFO, a device, a directory, a socket) is refused
// before anything opens it; one whose walk crashes or runs past the time
// limit throws DamagedFile. Returns the exit status.
int describe_isolated(const std::string& path, std::ostream& out, std::ostream& err);

// The file `tdsolve info path` reads: path, or path.partial when only that
// exists.
std::string file_to_read(const std::string& path);
// "'PATH' is a FIFO (named pipe), not a result file", ... for a file of that mode.
std::string not_regular(const std::string& path, unsigned mode);

}  // namespace tdsolve::io
