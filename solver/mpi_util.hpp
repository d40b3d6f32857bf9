// MPI helpers that keep every rank's control flow in step. An error seen by
// one rank is turned into the same CollectiveError on all of them, so the run
// can end with a one-line message and a normal non-zero exit everywhere
// instead of one rank throwing while the others wait in a collective.
#pragma once

#include <mpi.h>

#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/types.hpp"

namespace tdsolve {

inline int comm_rank(MPI_Comm c) {
  int r = 0;
  MPI_Comm_rank(c, &r);
  return r;
}
inline int comm_size(MPI_Comm c) {
  int s = 1;
  MPI_Comm_size(c, &s);
  return s;
}

void check_mpi(int code, const char* what);

// Exit code for an exception: 2 for usage errors, 1 otherwise.
int exit_code_of(const std::exception& e);

// Broadcast helpers (from rank 0); payloads of any size.
void bcast_bytes(MPI_Comm c, void* data, index_t bytes);
void bcast_string(MPI_Comm c, std::string* s);
void bcast_u64(MPI_Comm c, index_t* v);

// Shares (code, message) of the first failing rank with all ranks; throws
// CollectiveError on every rank when any failed.
void agree(MPI_Comm c, int code, const std::string& message);

// Runs f on every rank; if it throws anywhere, every rank throws the message
// of the lowest failing rank.
template <typename F>
void all_agree(MPI_Comm c, F&& f) {
  int code = 0;
  std::string message;
  try {
    f();
  } catch (const CollectiveError&) {
    throw;
  } catch (const std::bad_alloc&) {
    code = 1;
    message =
        "out of memory: an allocation failed (the input, or the buffers the run needs, do not "
        "fit in this rank's memory; give each rank more memory, or run fewer ranks per node)";
  } catch (const std::exception& e) {
    code = exit_code_of(e);
    message = e.what();
  }
  agree(c, code, message);
}

// Runs f on rank 0 only; its failure becomes every rank's CollectiveError.
template <typename F>
void on_root(MPI_Comm c, F&& f) {
  all_agree(c, [&] {
    if (comm_rank(c) == 0) f();
  });
}

}  // namespace tdsolve
