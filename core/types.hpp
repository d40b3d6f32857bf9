// Core types every layer shares: the 64-bit index and the host/device macro.
// Depends on nothing (DESIGN §1: core <- mapping <- io <- solver).
#pragma once

#if defined(__CUDACC__)
#define TDS_HD __host__ __device__ __forceinline__
#else
#define TDS_HD inline
#endif

#include <cstdint>

namespace tdsolve {
// Every element and block index is 64-bit: C(n,2) passes 2^32 at n = 92682.
using index_t = std::uint64_t;
}  // namespace tdsolve
