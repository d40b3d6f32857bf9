#include "solver/cpu/edm_cpu.hpp"

namespace tdsolve::cpu {

namespace generic {
template <typename T>
void compute(const EdmView<T>&, index_t, index_t, T*, int);
}
#if defined(TDS_HAVE_AVX2_VARIANT)
namespace avx2 {
template <typename T>
void compute(const EdmView<T>&, index_t, index_t, T*, int);
}
#endif

namespace {
bool use_avx2() {
#if defined(TDS_HAVE_AVX2_VARIANT)
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
#else
  return false;
#endif
}
}  // namespace

const char* cpu_variant() {
  return use_avx2() ? "avx2+fma" : "generic";
}

bool cpu_variant_available(CpuVariant v) {
  return v != CpuVariant::avx2 || use_avx2();
}

template <typename T>
void compute_block_rows(const EdmView<T>& v, index_t row_begin, index_t row_end, T* out,
                        int threads, CpuVariant variant) {
  if (variant == CpuVariant::best) variant = use_avx2() ? CpuVariant::avx2 : CpuVariant::generic;
#if defined(TDS_HAVE_AVX2_VARIANT)
  if (variant == CpuVariant::avx2 && use_avx2())
    return avx2::compute<T>(v, row_begin, row_end, out, threads);
#endif
  generic::compute<T>(v, row_begin, row_end, out, threads);
}

template void compute_block_rows<float>(const EdmView<float>&, index_t, index_t, float*, int,
                                        CpuVariant);
template void compute_block_rows<double>(const EdmView<double>&, index_t, index_t, double*, int,
                                         CpuVariant);

}  // namespace tdsolve::cpu
