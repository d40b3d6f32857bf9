// Built instead of the CUDA sources when CUDA is off.
#include "core/error.hpp"
#include "solver/cuda/cuda_backend.hpp"
#include "solver/fractal/fractal.hpp"

namespace tdsolve::cuda {

bool built_with_cuda() {
  return false;
}
int device_count() {
  return 0;
}
std::string no_device_reason() {
  return "this tdsolve was built without CUDA";
}

template <typename T>
std::unique_ptr<Backend<T>> make_cuda_backend(const Problem<T>&, const CudaOptions&) {
  throw UsageError(
      "--backend cuda: this tdsolve was built without CUDA (rebuild with the CUDA toolkit)");
}

template <typename T>
bool build_culled_on_device(const T*, index_t, index_t, index_t, const CullGeometry&, index_t,
                            const CudaOptions&, Culled*, bool*) {
  return false;
}
template bool build_culled_on_device<float>(const float*, index_t, index_t, index_t,
                                            const CullGeometry&, index_t, const CudaOptions&,
                                            Culled*, bool*);
template bool build_culled_on_device<double>(const double*, index_t, index_t, index_t,
                                             const CullGeometry&, index_t, const CudaOptions&,
                                             Culled*, bool*);

template std::unique_ptr<Backend<float>> make_cuda_backend(const Problem<float>&,
                                                           const CudaOptions&);
template std::unique_ptr<Backend<double>> make_cuda_backend(const Problem<double>&,
                                                            const CudaOptions&);

}  // namespace tdsolve::cuda

namespace tdsolve::fractal {
std::unique_ptr<Engine> make_cuda_engine(const Fractal&, const Rule&, const EngineOptions&) {
  throw UsageError(
      "--backend cuda: this tdsolve was built without CUDA (rebuild with the CUDA toolkit)");
}
std::vector<std::int64_t> cuda_coarse_maps(const Fractal&, const Blocking&, bool, std::uint64_t,
                                           std::uint64_t) {
  throw UsageError("this tdsolve was built without CUDA");
}
}  // namespace tdsolve::fractal
