// double kernels that bin values (pairs, λ2 and bounding box, with and without
// a periodic box).
#include "solver/cuda/block_kernels.cuh"

namespace tdsolve::cuda {
template void launch_family<double, mapping::Lambda2Map, true, false>(const KernelParams<double>&,
                                                                      cudaStream_t);
template void launch_family<double, mapping::Lambda2Map, true, true>(const KernelParams<double>&,
                                                                     cudaStream_t);
template void launch_family<double, mapping::BoundingBoxMap, true, false>(
    const KernelParams<double>&, cudaStream_t);
template void launch_family<double, mapping::BoundingBoxMap, true, true>(
    const KernelParams<double>&, cudaStream_t);
}  // namespace tdsolve::cuda
