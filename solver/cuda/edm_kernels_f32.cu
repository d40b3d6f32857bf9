// float32 instantiations (one file per precision so the two compile in parallel).
#include "solver/cuda/edm_kernels.cuh"

template void tdsolve::cuda::launch_edm<float>(const EdmParams<float>&, Metric, cudaStream_t);
