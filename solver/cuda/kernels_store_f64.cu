// double kernels that store values: pairs (λ2 and bounding box) and rectangles.
// One file per epilogue and precision so that they compile in parallel.
#include "solver/cuda/block_kernels.cuh"

namespace tdsolve::cuda {
template void launch_family<double, mapping::Lambda2Map, false, false>(const KernelParams<double>&,
                                                                       cudaStream_t);
template void launch_family<double, mapping::BoundingBoxMap, false, false>(
    const KernelParams<double>&, cudaStream_t);
template void launch_family<double, mapping::RectMap, false, false>(const KernelParams<double>&,
                                                                    cudaStream_t);
}  // namespace tdsolve::cuda
