// The select epilogue's list of a chunk, put in packed order on the device:
// the kernels append (key, value) in whatever order their warps pass (key =
// packed index − the chunk's first), so the backend sorts the list by key
// (CUB's radix sort over the key's bits only) and turns each key into its
// pair (i, j) before the list crosses to the host.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "core/types.hpp"

namespace tdsolve::cuda {

// Bytes of scratch select_sort needs for up to `capacity` items.
template <typename T>
size_t select_sort_bytes(index_t capacity);

// Sorts `count` (key, value) items by the low `bits` bits of the key (keys
// are below 2^bits) into keys_out / values_out.
template <typename T>
void select_sort(void* scratch, size_t scratch_bytes, const unsigned long long* keys_in,
                 unsigned long long* keys_out, const T* values_in, T* values_out, index_t count,
                 int bits, cudaStream_t stream);

// pairs[2q], pairs[2q + 1] = (i, j) of packed index first + keys[q], for n
// points.
void select_pairs(const unsigned long long* keys, index_t count, index_t n, index_t first,
                  long long* pairs, cudaStream_t stream);

}  // namespace tdsolve::cuda
