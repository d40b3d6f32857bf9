#include "solver/cpu/tiles.hpp"

namespace tdsolve::cpu {

namespace generic {
template <typename T>
void compute(const CpuView<T>&, index_t, index_t, T*, std::uint64_t*, SelectOut<T>*, int);
template <typename T>
void compute_knn(const CpuView<T>&, index_t, index_t, index_t, T*, std::int64_t*, int);
}  // namespace generic
#if defined(TDS_HAVE_AVX2_VARIANT)
namespace avx2 {
template <typename T>
void compute(const CpuView<T>&, index_t, index_t, T*, std::uint64_t*, SelectOut<T>*, int);
template <typename T>
void compute_knn(const CpuView<T>&, index_t, index_t, index_t, T*, std::int64_t*, int);
}  // namespace avx2
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
CpuView<T> view_of(const Problem<T>& p) {
  CpuView<T> v;
  v.a = p.a.data();
  v.b = p.col_points();
  v.norms_a = p.norms_a.empty() ? nullptr : p.norms_a.data();
  v.norms_b = p.col_norms().empty() ? nullptr : p.col_norms().data();
  v.rows = p.rows;
  v.cols = p.cols;
  v.d = p.d;
  v.rho = p.rho;
  v.domain = p.domain;
  v.map = p.map;
  v.epilogue = p.epilogue;
  v.mp = p.metric_params();
  v.mp.weights = p.kernel_weights.empty() ? nullptr : p.kernel_weights.data();
  v.box_dims = p.box_dims;
  for (int k = 0; k < kMaxBoxDims; ++k)
    v.box[k] = p.box[k];
  v.triclinic = p.triclinic;
  for (int k = 0; k < 3; ++k)
    v.tilt[k] = p.tilt[k];
  v.bins = p.hist.bins;
  v.lo = p.hist.lo;
  v.hi = p.hist.hi;
  v.norm = p.hist.bins > 0 ? static_cast<double>(p.hist.bins) / (p.hist.hi - p.hist.lo) : 0;
  v.edges = p.hist.edges.empty() ? nullptr : p.hist.edges.data();
  v.margin = p.hist.margin;
  v.fast32 = p.hist.fast32;
  const HistGroups& g = p.hist.groups;
  v.groups = g.count;
  v.types = g.types;
  v.type = g.type.empty() ? nullptr : g.type.data();
  v.table = g.table.empty() ? nullptr : g.table.data();
  v.molecule = g.molecule.empty() ? nullptr : g.molecule.data();
  v.select = p.select;
  v.select.radii = p.select_radii.empty() ? nullptr : p.select_radii.data();
  if (p.culled) v.cull = &p.cull;
  return v;
}

template <typename T>
void compute_chunk(const CpuView<T>& v, index_t row_begin, index_t row_end, T* out,
                   std::uint64_t* counts, int threads, CpuVariant variant, SelectOut<T>* sel) {
  if (variant == CpuVariant::best) variant = use_avx2() ? CpuVariant::avx2 : CpuVariant::generic;
#if defined(TDS_HAVE_AVX2_VARIANT)
  if (variant == CpuVariant::avx2 && use_avx2())
    return avx2::compute<T>(v, row_begin, row_end, out, counts, sel, threads);
#endif
  generic::compute<T>(v, row_begin, row_end, out, counts, sel, threads);
}

template <typename T>
void compute_knn_chunk(const CpuView<T>& v, index_t k, index_t r0, index_t r1, T* out_d,
                       std::int64_t* out_i, int threads, CpuVariant variant) {
  if (variant == CpuVariant::best) variant = use_avx2() ? CpuVariant::avx2 : CpuVariant::generic;
#if defined(TDS_HAVE_AVX2_VARIANT)
  if (variant == CpuVariant::avx2 && use_avx2())
    return avx2::compute_knn<T>(v, k, r0, r1, out_d, out_i, threads);
#endif
  generic::compute_knn<T>(v, k, r0, r1, out_d, out_i, threads);
}

template CpuView<float> view_of<float>(const Problem<float>&);
template CpuView<double> view_of<double>(const Problem<double>&);
template void compute_chunk<float>(const CpuView<float>&, index_t, index_t, float*, std::uint64_t*,
                                   int, CpuVariant, SelectOut<float>*);
template void compute_knn_chunk<float>(const CpuView<float>&, index_t, index_t, index_t, float*,
                                       std::int64_t*, int, CpuVariant);
template void compute_knn_chunk<double>(const CpuView<double>&, index_t, index_t, index_t, double*,
                                        std::int64_t*, int, CpuVariant);
template void compute_chunk<double>(const CpuView<double>&, index_t, index_t, double*,
                                    std::uint64_t*, int, CpuVariant, SelectOut<double>*);

}  // namespace tdsolve::cpu
