// float kernels that bin values (pairs, λ2 and bounding box, with and without
// a periodic box).
#include "solver/cuda/block_kernels.cuh"

namespace tdsolve::cuda {
template void launch_family<float, mapping::Lambda2Map, true, false>(const KernelParams<float>&,
                                                                     cudaStream_t);
template void launch_family<float, mapping::Lambda2Map, true, true>(const KernelParams<float>&,
                                                                    cudaStream_t);
template void launch_family<float, mapping::BoundingBoxMap, true, false>(const KernelParams<float>&,
                                                                         cudaStream_t);
template void launch_family<float, mapping::BoundingBoxMap, true, true>(const KernelParams<float>&,
                                                                        cudaStream_t);
}  // namespace tdsolve::cuda
