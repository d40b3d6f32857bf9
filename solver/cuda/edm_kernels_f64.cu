// float64 instantiations.
#include "solver/cuda/edm_kernels.cuh"

template void tdsolve::cuda::launch_edm<double>(const EdmParams<double>&, Metric, cudaStream_t);
