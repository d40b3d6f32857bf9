#include "solver/cuda/select_sort.cuh"

#include <algorithm>
#include <cub/device/device_radix_sort.cuh>

#include "mapping/simplex.hpp"
#include "solver/cuda/cuda_check.hpp"

namespace tdsolve::cuda {

template <typename T>
size_t select_sort_bytes(index_t capacity) {
  size_t bytes = 0;
  check(cub::DeviceRadixSort::SortPairs(
            nullptr, bytes, static_cast<const unsigned long long*>(nullptr),
            static_cast<unsigned long long*>(nullptr), static_cast<const T*>(nullptr),
            static_cast<T*>(nullptr), static_cast<std::int64_t>(capacity), 0, 64),
        "cub::DeviceRadixSort (scratch size)");
  return bytes;
}

template <typename T>
void select_sort(void* scratch, size_t scratch_bytes, const unsigned long long* keys_in,
                 unsigned long long* keys_out, const T* values_in, T* values_out, index_t count,
                 int bits, cudaStream_t stream) {
  if (count == 0) return;
  check(cub::DeviceRadixSort::SortPairs(scratch, scratch_bytes, keys_in, keys_out, values_in,
                                        values_out, static_cast<std::int64_t>(count), 0, bits,
                                        stream),
        "cub::DeviceRadixSort (the selected pairs)");
}

namespace {
__global__ void select_pairs_kernel(const unsigned long long* __restrict__ keys, index_t count,
                                    index_t n, index_t first, long long* __restrict__ pairs) {
  for (index_t q = blockIdx.x * static_cast<index_t>(blockDim.x) + threadIdx.x; q < count;
       q += static_cast<index_t>(gridDim.x) * blockDim.x) {
    const mapping::Pair ij = mapping::pair_unrank(n, first + keys[q]);
    pairs[2 * q] = static_cast<long long>(ij.i);
    pairs[2 * q + 1] = static_cast<long long>(ij.j);
  }
}
}  // namespace

void select_pairs(const unsigned long long* keys, index_t count, index_t n, index_t first,
                  long long* pairs, cudaStream_t stream) {
  if (count == 0) return;
  const index_t blocks = std::min<index_t>((count + 255) / 256, 65535);
  select_pairs_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(keys, count, n, first,
                                                                         pairs);
  check(cudaGetLastError(), "select_pairs_kernel launch");
}

template size_t select_sort_bytes<float>(index_t);
template size_t select_sort_bytes<double>(index_t);
template void select_sort<float>(void*, size_t, const unsigned long long*, unsigned long long*,
                                 const float*, float*, index_t, int, cudaStream_t);
template void select_sort<double>(void*, size_t, const unsigned long long*, unsigned long long*,
                                  const double*, double*, index_t, int, cudaStream_t);

}  // namespace tdsolve::cuda
