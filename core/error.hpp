// Exceptions that cross layers. main() turns them into one line and an exit
// code; which type is thrown says whether every rank knows about it.
#pragma once

#include <stdexcept>
#include <string>

namespace tdsolve {

// A problem with what the user asked for or gave us (bad option, bad input
// file, existing output): exit code 2 for usage, 1 for data.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Thrown with the same message on every rank at once, so the run can end with
// MPI_Finalize and a plain non-zero exit instead of MPI_Abort.
struct CollectiveError : std::runtime_error {
  CollectiveError(const std::string& what, int code) : std::runtime_error(what), exit_code(code) {}
  int exit_code;
};

// Errors are one line on stderr, whatever a library put in the text.
inline std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

}  // namespace tdsolve
