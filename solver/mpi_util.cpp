#include "solver/mpi_util.hpp"

#include <algorithm>
#include <climits>

namespace tdsolve {

void check_mpi(int code, const char* what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  throw std::runtime_error(std::string(what) + " failed: " + std::string(text, len));
}

int exit_code_of(const std::exception& e) {
  if (dynamic_cast<const UsageError*>(&e)) return 2;
  if (auto* c = dynamic_cast<const CollectiveError*>(&e)) return c->exit_code;
  return 1;
}

void bcast_bytes(MPI_Comm c, void* data, index_t bytes) {
  auto* p = static_cast<char*>(data);
  const index_t step = index_t(1) << 30;
  for (index_t off = 0; off < bytes; off += step) {
    const int n = static_cast<int>(std::min(step, bytes - off));
    check_mpi(MPI_Bcast(p + off, n, MPI_BYTE, 0, c), "MPI_Bcast");
  }
}

void bcast_u64(MPI_Comm c, index_t* v) {
  check_mpi(MPI_Bcast(v, 1, MPI_UINT64_T, 0, c), "MPI_Bcast");
}

void bcast_string(MPI_Comm c, std::string* s) {
  index_t n = s->size();
  bcast_u64(c, &n);
  s->resize(n);
  bcast_bytes(c, s->data(), n);
}

void agree(MPI_Comm c, int code, const std::string& message) {
  // Lowest failing rank speaks for all: (failed ? rank : size) reduced by MIN.
  const int rank = comm_rank(c), size = comm_size(c);
  int mine = code != 0 ? rank : size, first = size;
  check_mpi(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, c), "MPI_Allreduce");
  if (first == size) return;
  int shared_code = code;
  std::string text = message;
  check_mpi(MPI_Bcast(&shared_code, 1, MPI_INT, first, c), "MPI_Bcast");
  index_t n = text.size();
  check_mpi(MPI_Bcast(&n, 1, MPI_UINT64_T, first, c), "MPI_Bcast");
  text.resize(n);
  check_mpi(MPI_Bcast(text.data(), static_cast<int>(n), MPI_CHAR, first, c), "MPI_Bcast");
  throw CollectiveError(text, shared_code);
}

}  // namespace tdsolve
