// Distance metrics as small functors, one definition for the CPU loops and
// the CUDA kernels (cuVS-style: accumulate per feature, then an epilogue).
//
// The per-pair arithmetic is fixed: acc starts at 0, features are visited in
// order k = 0..d-1, and every multiply-add is an explicit fused fma. Both
// backends therefore produce the same bits (CPU code is built with
// -ffp-contract=off and GPU code with --fmad=false so no compiler contracts
// anything else; IEEE sqrt and division are correctly rounded on both). The
// logarithms and powers of minkowski and jensenshannon use metric::log_ and
// metric::exp_ below, built from +, -, *, fma, frexp and ldexp only, so they
// too give the same bits on both backends.
//
// Interface (for every caller: CPU tiles, CUDA kernels, kNN):
//
//   dispatch_metric<T>(const MetricParams& mp, f)  calls f(M(mp)) with the
//       functor type M for (mp.metric, mp, T): a functor OBJECT carrying the
//       run-time parameters (minkowski's p, jensenshannon's log base, the
//       boolean formula, canberra's weights). Build it wherever it is used
//       (`const M m(params)`; MetricParams is a trivially copyable POD that
//       travels in CpuView and KernelParams).
//   dispatch_metric<T>(Metric, f)  the same with default parameters (enough
//       for compile-time questions such as M::needs_norms).
//   M::acc_t                      the accumulator type (A(0) is the start value)
//   M::needs_norms                finalize reads |a|, |b| (metric::norm)
//   m.accumulate(acc, a, b, k)    one feature k (0-based) of the pair
//   m.finalize(acc, |a|, |b|)     the value, of type T
//   metric::traits<M>::small_d    kernels may specialise on d <= 8 (the older
//                                 metrics; new ones use the general-d loops
//                                 only, to keep compile time down)
//   metric::traits<M>::box        the metric of a periodic box's minimum-image
//                                 difference makes sense (accumulate(acc,
//                                 delta, 0, k)).
//
// Some metrics are others on transformed points (host side, solver/problem.cpp:
// prepare_points): seuclidean is euclidean on x / sqrt(V), correlation is
// cosine on centred points, weights scale the coordinates. Those resolve to
// the functor they run on here.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/types.hpp"

namespace tdsolve {

enum class Metric {
  euclidean,
  sqeuclidean,
  cityblock,
  chebyshev,
  cosine,
  minkowski,
  seuclidean,
  correlation,
  braycurtis,
  canberra,
  jensenshannon,
  mahalanobis,
  // boolean family (bit-packed inputs: nonzero is true)
  hamming,
  jaccard,
  dice,
  russellrao,
  rogerstanimoto,
  sokalmichener,
  sokalsneath,
  yule,
};

inline const char* metric_name(Metric m) {
  switch (m) {
    case Metric::euclidean:
      return "euclidean";
    case Metric::sqeuclidean:
      return "sqeuclidean";
    case Metric::cityblock:
      return "cityblock";
    case Metric::chebyshev:
      return "chebyshev";
    case Metric::cosine:
      return "cosine";
    case Metric::minkowski:
      return "minkowski";
    case Metric::seuclidean:
      return "seuclidean";
    case Metric::correlation:
      return "correlation";
    case Metric::braycurtis:
      return "braycurtis";
    case Metric::canberra:
      return "canberra";
    case Metric::jensenshannon:
      return "jensenshannon";
    case Metric::mahalanobis:
      return "mahalanobis";
    case Metric::hamming:
      return "hamming";
    case Metric::jaccard:
      return "jaccard";
    case Metric::dice:
      return "dice";
    case Metric::russellrao:
      return "russellrao";
    case Metric::rogerstanimoto:
      return "rogerstanimoto";
    case Metric::sokalmichener:
      return "sokalmichener";
    case Metric::sokalsneath:
      return "sokalsneath";
    case Metric::yule:
      return "yule";
  }
  return "?";
}

// The boolean family: computed on bit-packed points.
inline bool is_boolean(Metric m) {
  return m >= Metric::hamming;
}

// SciPy's pdist/cdist take weights w for these (scipy 1.10): all but
// seuclidean, jensenshannon and mahalanobis (the boolean family's weights
// run on unpacked points: metric::BoolValues).
inline bool takes_weights(Metric m) {
  return m != Metric::seuclidean && m != Metric::jensenshannon && m != Metric::mahalanobis;
}

// Every name of every metric: the canonical one, SciPy's aliases
// (scipy/spatial/distance.py, the `aka` sets of _METRIC_INFOS, scipy 1.10)
// and scikit-learn's ("l2", "l1", "manhattan", "linf", "infinity").
struct MetricName {
  const char* name;
  Metric metric;
};
inline const std::vector<MetricName>& metric_names() {
  static const std::vector<MetricName> kNames = {
      {"euclidean", Metric::euclidean},
      {"e", Metric::euclidean},
      {"eu", Metric::euclidean},
      {"euclid", Metric::euclidean},
      {"l2", Metric::euclidean},
      {"sqeuclidean", Metric::sqeuclidean},
      {"sqe", Metric::sqeuclidean},
      {"sqeuclid", Metric::sqeuclidean},
      {"cityblock", Metric::cityblock},
      {"c", Metric::cityblock},
      {"cb", Metric::cityblock},
      {"cblock", Metric::cityblock},
      {"l1", Metric::cityblock},
      {"manhattan", Metric::cityblock},
      {"chebyshev", Metric::chebyshev},
      {"ch", Metric::chebyshev},
      {"cheb", Metric::chebyshev},
      {"cheby", Metric::chebyshev},
      {"chebychev", Metric::chebyshev},
      {"linf", Metric::chebyshev},
      {"infinity", Metric::chebyshev},
      {"cosine", Metric::cosine},
      {"cos", Metric::cosine},
      {"minkowski", Metric::minkowski},
      {"mi", Metric::minkowski},
      {"m", Metric::minkowski},
      {"pnorm", Metric::minkowski},
      {"seuclidean", Metric::seuclidean},
      {"se", Metric::seuclidean},
      {"s", Metric::seuclidean},
      {"correlation", Metric::correlation},
      {"co", Metric::correlation},
      {"braycurtis", Metric::braycurtis},
      {"canberra", Metric::canberra},
      {"jensenshannon", Metric::jensenshannon},
      {"js", Metric::jensenshannon},
      {"mahalanobis", Metric::mahalanobis},
      {"mahal", Metric::mahalanobis},
      {"mah", Metric::mahalanobis},
      {"hamming", Metric::hamming},
      {"matching", Metric::hamming},
      {"hamm", Metric::hamming},
      {"ha", Metric::hamming},
      {"h", Metric::hamming},
      {"jaccard", Metric::jaccard},
      {"jacc", Metric::jaccard},
      {"ja", Metric::jaccard},
      {"j", Metric::jaccard},
      {"dice", Metric::dice},
      {"russellrao", Metric::russellrao},
      {"rogerstanimoto", Metric::rogerstanimoto},
      {"sokalmichener", Metric::sokalmichener},
      {"sokalsneath", Metric::sokalsneath},
      {"yule", Metric::yule},
  };
  return kNames;
}

// A metric by any of its names, case-insensitive.
inline bool parse_metric(const std::string& s, Metric* m) {
  std::string t;
  for (char ch : s)
    t += char(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
  for (const MetricName& n : metric_names()) {
    if (t == n.name) {
      *m = n.metric;
      return true;
    }
  }
  return false;
}

// What a functor needs at run time: a trivially copyable POD, copied into
// CpuView and KernelParams and turned into a functor where it is used.
struct MetricParams {
  Metric metric = Metric::euclidean;
  double p = 2;         // minkowski: the order (> 0; 1, 2 and inf run other functors)
  int int_p = 0;        // minkowski: p when it is an integer 3..64 (powers by products), else 0
  double log_base = 1;  // jensenshannon: log_(base) (1: natural logarithm)
  index_t bits = 0;     // boolean family: features of a point (bits, before packing)
  const double* weights = nullptr;  // canberra, BoolValues: d of them (host or device memory)
  // The boolean family on unpacked values (metric::BoolValues) instead of
  // bits: weights, or hamming/jaccard on values other than 0/1.
  bool values = false;
  double weight_sum = 0;  // BoolValues: hamming's and russellrao's sum of the weights
};

// log_ and exp_ are called, not inlined, in device code: inlined into
// every unrolled accumulator of every kernel they multiplied the kernels'
// compile time by four (docs/design.md).
#if defined(__CUDACC__)
#define TDS_HD_CALL __host__ __device__ __noinline__ inline
#else
#define TDS_HD_CALL inline
#endif

namespace metric {

TDS_HD float fused(float a, float b, float c) {
  return fmaf(a, b, c);
}
TDS_HD double fused(double a, double b, double c) {
  return fma(a, b, c);
}
TDS_HD float root(float a) {
  return sqrtf(a);
}
TDS_HD double root(double a) {
  return sqrt(a);
}
TDS_HD float magnitude(float a) {
  return fabsf(a);
}
TDS_HD double magnitude(double a) {
  return fabs(a);
}

// Natural logarithm of a finite x > 0 from +, -, *, /, fma, frexp and ldexp
// only, so that every backend gives the same bits (glibc's log and CUDA's
// may differ by an ulp). x = 2^e m with m in [sqrt(1/2), sqrt(2)); log m =
// 2 atanh(s), s = (m-1)/(m+1), |s| < 0.1716, by its series to s^25 (the
// next term is below 2^-60 of the sum). Within a few ulp of the exact value.
TDS_HD_CALL double log_(double x) {
  int e = 0;
  double m = frexp(x, &e);  // [0.5, 1)
  if (m < 0.70710678118654752440) {
    m = m + m;
    e = e - 1;
  }
  const double f = m - 1.0;  // exact (Sterbenz)
  const double s = f / (m + 1.0);
  const double s2 = s * s;
  double q = 1.0 / 25;
  q = fma(q, s2, 1.0 / 23);
  q = fma(q, s2, 1.0 / 21);
  q = fma(q, s2, 1.0 / 19);
  q = fma(q, s2, 1.0 / 17);
  q = fma(q, s2, 1.0 / 15);
  q = fma(q, s2, 1.0 / 13);
  q = fma(q, s2, 1.0 / 11);
  q = fma(q, s2, 1.0 / 9);
  q = fma(q, s2, 1.0 / 7);
  q = fma(q, s2, 1.0 / 5);
  q = fma(q, s2, 1.0 / 3);
  // log m = 2s + 2s·s²·q.
  const double two_s = s + s;
  const double logm = fma(two_s * s2, q, two_s);
  // e ln2, ln2 split so that e · kLn2Hi is exact (|e| < 1100).
  const double kLn2Hi = 6.93147180369123816490e-01;  // 0x3FE62E42FEE00000
  const double kLn2Lo = 1.90821492927058770002e-10;
  const double de = static_cast<double>(e);
  return fma(de, kLn2Hi, fma(de, kLn2Lo, logm));
}

// e^x with the same building blocks: x = k ln2 + r, |r| <= ln2/2, e^r by its
// Taylor series to r^14 (the next term is below 2^-62), then 2^k by ldexp.
// Overflows to inf above 709.78, underflows to 0 below -745.2.
TDS_HD_CALL double exp_(double x) {
  if (x > 709.782712893384) return HUGE_VAL;
  if (x < -745.2) return 0.0;
  const double kLog2e = 1.44269504088896338700;
  const double kLn2Hi = 6.93147180369123816490e-01;
  const double kLn2Lo = 1.90821492927058770002e-10;
  const double k = rint(x * kLog2e);
  const double r = fma(-k, kLn2Lo, fma(-k, kLn2Hi, x));
  double q = 1.0 / 87178291200.0;            // 1/14!
  q = fma(q, r, 1.0 / 6227020800.0);         // 1/13!
  q = fma(q, r, 1.0 / 479001600.0);          // 1/12!
  q = fma(q, r, 1.0 / 39916800.0);           // 1/11!
  q = fma(q, r, 1.0 / 3628800.0);            // 1/10!
  q = fma(q, r, 1.0 / 362880.0);             // 1/9!
  q = fma(q, r, 1.0 / 40320.0);              // 1/8!
  q = fma(q, r, 1.0 / 5040.0);               // 1/7!
  q = fma(q, r, 1.0 / 720.0);                // 1/6!
  q = fma(q, r, 1.0 / 120.0);                // 1/5!
  q = fma(q, r, 1.0 / 24.0);                 // 1/4!
  q = fma(q, r, 1.0 / 6.0);                  // 1/3!
  q = fma(q, r, 0.5);                        // 1/2!
  const double er = fma(q * r, r, r) + 1.0;  // 1 + r + r²(1/2 + ...)
  const int ki = static_cast<int>(k);
  // Two steps so that 2^k for k near ±1075 neither overflows early nor
  // loses the subnormal's rounding twice more than once.
  return ldexp(ldexp(er, ki / 2), ki - ki / 2);
}

// x^y for x >= 0 (0^y = 0 for y > 0), y > 0: exp_(y log_(x)).
TDS_HD double pow_(double x, double y) {
  if (x == 0.0) return 0.0;
  if (x == HUGE_VAL) return HUGE_VAL;
  return exp_(y * log_(x));
}

// x^n, n >= 1, by binary powering (the same products on every backend).
TDS_HD double powi_(double x, int n) {
  double r = 1.0, b = x;
  while (true) {
    if (n & 1) r = r * b;
    n >>= 1;
    if (!n) break;
    b = b * b;
  }
  return r;
}

// A quiet NaN with the same bits on every backend (0/0 gives the x86
// "default NaN", sign set, but the GPU's canonical NaN, sign clear).
template <typename T>
TDS_HD T quiet_nan() {
  if constexpr (sizeof(T) == 4) {
#if defined(__CUDA_ARCH__)
    return __int_as_float(0x7fc00000);
#else
    const std::uint32_t u = 0x7fc00000u;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
#endif
  } else {
#if defined(__CUDA_ARCH__)
    return __longlong_as_double(0x7ff8000000000000ll);
#else
    const std::uint64_t u = 0x7ff8000000000000ull;
    double f;
    std::memcpy(&f, &u, 8);
    return f;
#endif
  }
}

// Functors. The older ones hold no parameters (their members are static, so
// M::accumulate(...) also works); every functor can be built from
// MetricParams.
template <typename T>
struct SqEuclidean {
  using acc_t = T;
  static constexpr bool needs_norms = false;
  TDS_HD SqEuclidean() {}
  TDS_HD explicit SqEuclidean(const MetricParams&) {}
  // float64: SciPy's loop, s += d * d rounded twice (its pdist and cdist
  // have no fused step), so euclidean and sqeuclidean are SciPy's bits and a
  // float64 hist is numpy.histogram(pdist(X)) to the last count; float32
  // keeps the fused step (one instruction, no reference to match).
  TDS_HD static T accumulate(T acc, T a, T b, index_t = 0) {
    const T d = a - b;
    if constexpr (sizeof(T) == 8) {
      return acc + d * d;
    } else {
      return fused(d, d, acc);
    }
  }
  TDS_HD static T finalize(T acc, double, double) { return acc; }
};

template <typename T>
struct Euclidean {
  using acc_t = T;
  static constexpr bool needs_norms = false;
  TDS_HD Euclidean() {}
  TDS_HD explicit Euclidean(const MetricParams&) {}
  TDS_HD static T accumulate(T acc, T a, T b, index_t = 0) {
    return SqEuclidean<T>::accumulate(acc, a, b);
  }
  TDS_HD static T finalize(T acc, double, double) { return root(acc); }
};

template <typename T>
struct Cityblock {
  using acc_t = T;
  static constexpr bool needs_norms = false;
  TDS_HD Cityblock() {}
  TDS_HD explicit Cityblock(const MetricParams&) {}
  TDS_HD static T accumulate(T acc, T a, T b, index_t = 0) { return acc + magnitude(a - b); }
  TDS_HD static T finalize(T acc, double, double) { return acc; }
};

template <typename T>
struct Chebyshev {
  using acc_t = T;
  static constexpr bool needs_norms = false;
  TDS_HD Chebyshev() {}
  TDS_HD explicit Chebyshev(const MetricParams&) {}
  TDS_HD static T accumulate(T acc, T a, T b, index_t = 0) {
    const T d = magnitude(a - b);
    return d > acc ? d : acc;
  }
  TDS_HD static T finalize(T acc, double, double) { return acc; }
};

// 1 - <a,b> / (|a| |b|), the cosine clipped to [-1, 1] as SciPy does, so the
// distance stays in [0, 2] despite rounding. Norms come precomputed (norm()).
//
// Always accumulated in float64: 1 - cos cancels catastrophically for nearly
// parallel vectors, so a float32 dot product would leave small distances
// with no correct digit (absolute error ~1e-7 on values of ~1e-7). In float64
// the stored float32 value is the correctly rounded distance of the float32
// inputs to within an ulp; the cost is invisible in a memory-bound kernel.
template <typename T>
struct Cosine {
  using acc_t = double;
  static constexpr bool needs_norms = true;
  TDS_HD Cosine() {}
  TDS_HD explicit Cosine(const MetricParams&) {}
  TDS_HD static double accumulate(double acc, T a, T b, index_t = 0) {
    return fused(static_cast<double>(a), static_cast<double>(b), acc);
  }
  TDS_HD static T finalize(double acc, double na, double nb) {
    double c = acc / (na * nb);
    c = c > 1.0 ? 1.0 : (c < -1.0 ? -1.0 : c);
    return static_cast<T>(1.0 - c);
  }
};

// (sum |a-b|^p)^(1/p) for p other than 1, 2 and inf, in float64 (also in
// float32 runs: the powers leave float32's range far sooner than the
// distance does). Integer p by products, other p by exp_(p log_|a-b|).
template <typename T>
struct Minkowski {
  using acc_t = double;
  static constexpr bool needs_norms = false;
  double p = 2, inv_p = 0.5;
  int int_p = 2;
  TDS_HD Minkowski() {}
  TDS_HD explicit Minkowski(const MetricParams& mp) : p(mp.p), inv_p(1.0 / mp.p), int_p(mp.int_p) {}
  TDS_HD double accumulate(double acc, T a, T b, index_t = 0) const {
    const double d = fabs(static_cast<double>(a) - static_cast<double>(b));
    if (d == 0.0) return acc;
    return acc + (int_p > 0 ? powi_(d, int_p) : pow_(d, p));
  }
  TDS_HD T finalize(double acc, double, double) const { return static_cast<T>(pow_(acc, inv_p)); }
};

// Two sums accumulated side by side (braycurtis).
template <typename T>
struct Sums2 {
  T x, y;
  TDS_HD Sums2() {}
  TDS_HD Sums2(int v) : x(T(v)), y(T(v)) {}  // A(0): both zero
};

// sum |a-b| / sum |a+b| (0/0 is nan, as SciPy: quiet_nan, so that both
// backends write the same bits). Weights scale the points.
template <typename T>
struct BrayCurtis {
  using acc_t = Sums2<T>;
  static constexpr bool needs_norms = false;
  TDS_HD BrayCurtis() {}
  TDS_HD explicit BrayCurtis(const MetricParams&) {}
  TDS_HD static Sums2<T> accumulate(Sums2<T> acc, T a, T b, index_t = 0) {
    acc.x = acc.x + magnitude(a - b);
    acc.y = acc.y + magnitude(a + b);
    return acc;
  }
  TDS_HD static T finalize(Sums2<T> acc, double, double) {
    return acc.x == T(0) && acc.y == T(0) ? quiet_nan<T>() : acc.x / acc.y;
  }
};

// sum_k w_k |a-b| / (|a| + |b|), terms with 0/0 left out (SciPy's nansum),
// in float64. Weights are read per feature (a ratio is scale-free: no
// transform of the points can carry them).
template <typename T>
struct Canberra {
  using acc_t = double;
  static constexpr bool needs_norms = false;
  const double* w = nullptr;
  TDS_HD Canberra() {}
  TDS_HD explicit Canberra(const MetricParams& mp) : w(mp.weights) {}
  TDS_HD double accumulate(double acc, T a, T b, index_t k) const {
    const double x = static_cast<double>(a), y = static_cast<double>(b);
    const double den = fabs(x) + fabs(y);
    if (den == 0.0) return acc;  // also the zero padding of the GPU's feature strips
    const double t = fabs(x - y) / den;
    return w ? fma(w[k], t, acc) : acc + t;
  }
  TDS_HD static T finalize(double acc, double, double) { return static_cast<T>(acc); }
};

// sqrt((sum rel_entr(a, m) + rel_entr(b, m)) / log_base / 2), m = (a+b)/2,
// rel_entr(x, m) = x log(x/m) (0 for x = 0), in float64, on rows that the
// host normalised to sum 1. A row SciPy gives inf for (a negative value, or
// a sum of 0) comes as -1 in every feature (prepare_points): any pair with
// it is inf, as SciPy's HUGE_VAL. A sum that rounds below 0 gives 0.
template <typename T>
struct JensenShannon {
  using acc_t = double;
  static constexpr bool needs_norms = false;
  double log_base = 1;
  TDS_HD JensenShannon() {}
  TDS_HD explicit JensenShannon(const MetricParams& mp) : log_base(mp.log_base) {}
  TDS_HD static double accumulate(double acc, T a, T b, index_t = 0) {
    const double x = static_cast<double>(a), y = static_cast<double>(b);
    if (x < 0.0 || y < 0.0) return HUGE_VAL;
    const double m = (x + y) / 2.0;
    if (x > 0.0) acc = fma(x, log_(x / m), acc);
    if (y > 0.0) acc = fma(y, log_(y / m), acc);
    return acc;
  }
  TDS_HD T finalize(double acc, double, double) const {
    const double js = acc / log_base;
    return static_cast<T>(js > 0.0 ? sqrt(js / 2.0) : 0.0);
  }
};

// The bits of a packed word (a float holds 32 features, a double 64).
TDS_HD std::uint64_t word_bits(double v) {
#if defined(__CUDA_ARCH__)
  return static_cast<std::uint64_t>(__double_as_longlong(v));
#else
  std::uint64_t u;
  std::memcpy(&u, &v, 8);
  return u;
#endif
}
TDS_HD std::uint32_t word_bits(float v) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(v);
#else
  std::uint32_t u;
  std::memcpy(&u, &v, 4);
  return u;
#endif
}
TDS_HD unsigned popcount(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return static_cast<unsigned>(__popc(u));
#else
  return static_cast<unsigned>(__builtin_popcount(u));
#endif
}
TDS_HD unsigned popcount(std::uint64_t u) {
#if defined(__CUDA_ARCH__)
  return static_cast<unsigned>(__popcll(static_cast<unsigned long long>(u)));
#else
  return static_cast<unsigned>(__builtin_popcountll(u));
#endif
}

// Counts of (a, b) = (1,1), (1,0), (0,1) over the features.
struct BoolCounts {
  std::uint32_t tt, tf, ft;
  TDS_HD BoolCounts() {}
  TDS_HD BoolCounts(int v) : tt(v), tf(v), ft(v) {}  // A(0)
};

// The boolean family on bit-packed points: each T is a word of features
// (its bits, never its value: no arithmetic touches it). The formula is a
// run-time parameter, so the eight metrics are one functor. Counts are exact
// integers, each formula one float64 division (as SciPy's), the result
// rounded to T. 0/0 follows SciPy 1.10's pdist/cdist: jaccard 0, yule 0,
// dice and sokalsneath nan (quiet_nan: the same bits on both backends).
template <typename T>
struct Boolean {
  using acc_t = BoolCounts;
  static constexpr bool needs_norms = false;
  Metric formula = Metric::hamming;
  double n = 0;
  TDS_HD Boolean() {}
  TDS_HD explicit Boolean(const MetricParams& mp)
      : formula(mp.metric), n(static_cast<double>(mp.bits)) {}
  TDS_HD static BoolCounts accumulate(BoolCounts acc, T a, T b, index_t = 0) {
    const auto x = word_bits(a), y = word_bits(b);
    acc.tt += popcount(x & y);
    acc.tf += popcount(x & ~y);
    acc.ft += popcount(~x & y);
    return acc;
  }
  TDS_HD T finalize(BoolCounts c, double, double) const {
    const double tt = c.tt, diff = static_cast<double>(c.tf + c.ft);
    const double ff = n - tt - diff;
    double v = 0;
    switch (formula) {
      case Metric::jaccard:
        v = tt + diff == 0.0 ? 0.0 : diff / (tt + diff);
        break;
      case Metric::dice:
        if (2.0 * tt + diff == 0.0) return quiet_nan<T>();
        v = diff / (2.0 * tt + diff);
        break;
      case Metric::russellrao:
        v = (n - tt) * (1.0 / n);  // SciPy's C code multiplies by 1/n
        break;
      case Metric::rogerstanimoto:
      case Metric::sokalmichener:
        v = (2.0 * diff) / (tt + ff + 2.0 * diff);
        break;
      case Metric::sokalsneath:
        if (tt + 2.0 * diff == 0.0) return quiet_nan<T>();
        v = (2.0 * diff) / (tt + 2.0 * diff);
        break;
      case Metric::yule: {
        const double half_r = static_cast<double>(c.tf) * static_cast<double>(c.ft);
        v = half_r == 0.0 ? 0.0 : (2.0 * half_r) / (tt * ff + half_r);
        break;
      }
      default:  // hamming
        v = diff / n;
        break;
    }
    return static_cast<T>(v);
  }
};

// Four float64 sums side by side (BoolValues).
struct Sums4 {
  double s0, s1, s2, s3;
  TDS_HD Sums4() {}
  TDS_HD Sums4(int v) : s0(v), s1(v), s2(v), s3(v) {}  // A(0)
};

// The boolean family on values instead of bits (mp.values), as SciPy 1.10's
// pdist/cdist compute it where the bits do not: hamming and jaccard on
// values other than 0/1 (SciPy compares the values: hamming the weighted
// fraction of features where a != b, jaccard sum w [a != b] / sum w [a != 0
// or b != 0], 0 when that is 0), and every boolean metric with weights w
// (the other six on points the host made 0/1, nonzero true, as SciPy casts
// them to bool). Unweighted sums are exact counts. Weighted: hamming sums
// as the Debian SciPy's C loop (two lanes, features 0,2,4,... and 1,3,5,...,
// then an odd d's last), over mp.weight_sum = sum w in the same order (the
// host's); the other seven are SciPy's Python formulas over the four
// weighted counts summed in feature order (NumPy's sum is pairwise from 8
// features on: the last bit may differ there), russellrao over
// mp.weight_sum = numpy.sum(w). 0/0: jaccard and yule 0, dice, sokalsneath nan.
template <typename T>
struct BoolValues {
  using acc_t = Sums4;
  static constexpr bool needs_norms = false;
  Metric formula = Metric::hamming;
  index_t d = 0;
  double weight_sum = 0;
  const double* w = nullptr;
  TDS_HD BoolValues() {}
  TDS_HD explicit BoolValues(const MetricParams& mp)
      : formula(mp.metric), d(mp.bits), weight_sum(mp.weight_sum), w(mp.weights) {}
  TDS_HD Sums4 accumulate(Sums4 acc, T a, T b, index_t k) const {
    if (k >= d) return acc;  // the zero padding of the GPU's feature strips
    const double wk = w ? w[k] : 1.0;
    const bool x = a != T(0), y = b != T(0);
    switch (formula) {
      case Metric::hamming:
        if (a != b) {
          if ((d & 1) && k == d - 1)
            acc.s2 = wk;
          else if (k & 1)
            acc.s1 = acc.s1 + wk;
          else
            acc.s0 = acc.s0 + wk;
        }
        break;
      case Metric::jaccard:
        if (a != b) acc.s0 = acc.s0 + wk;
        if (x || y) acc.s1 = acc.s1 + wk;
        break;
      default:  // counts tt, tf, ft, ff
        if (x && y)
          acc.s0 = acc.s0 + wk;
        else if (x)
          acc.s1 = acc.s1 + wk;
        else if (y)
          acc.s2 = acc.s2 + wk;
        else
          acc.s3 = acc.s3 + wk;
        break;
    }
    return acc;
  }
  TDS_HD T finalize(Sums4 c, double, double) const {
    const double tt = c.s0, tf = c.s1, ft = c.s2, ff = c.s3;
    double v = 0;
    switch (formula) {
      case Metric::hamming:
        v = ((d & 1) ? (c.s0 + c.s1) + c.s2 : c.s0 + c.s1) / weight_sum;
        break;
      case Metric::jaccard:
        v = c.s1 != 0.0 ? c.s0 / c.s1 : 0.0;
        break;
      case Metric::dice: {
        const double den = (2.0 * tt + tf) + ft;
        if (den == 0.0) return quiet_nan<T>();
        v = (tf + ft) / den;
        break;
      }
      case Metric::russellrao:
        v = (weight_sum - tt) / weight_sum;
        break;
      case Metric::rogerstanimoto:
      case Metric::sokalmichener:
        v = (2.0 * (tf + ft)) / ((tt + ff) + 2.0 * (tf + ft));
        break;
      case Metric::sokalsneath: {
        const double den = tt + 2.0 * (tf + ft);
        if (den == 0.0) return quiet_nan<T>();
        v = (2.0 * (tf + ft)) / den;
        break;
      }
      default: {  // yule
        const double half_r = tf * ft;
        v = half_r == 0.0 ? 0.0 : (2.0 * half_r) / (tt * ff + half_r);
        break;
      }
    }
    return static_cast<T>(v);
  }
};

// Compile-time facts a kernel may specialise on (see the top of the file).
template <typename M>
struct traits {
  static constexpr bool small_d = false;
  static constexpr bool box = false;
};
template <typename T>
struct traits<SqEuclidean<T>> {
  static constexpr bool small_d = true, box = true;
};
template <typename T>
struct traits<Euclidean<T>> {
  static constexpr bool small_d = true, box = true;
};
template <typename T>
struct traits<Cityblock<T>> {
  static constexpr bool small_d = true, box = true;
};
template <typename T>
struct traits<Chebyshev<T>> {
  static constexpr bool small_d = true, box = true;
};
template <typename T>
struct traits<Cosine<T>> {
  static constexpr bool small_d = true, box = false;
};

// |x| in float64, with the same fused accumulation order on every backend.
template <typename T>
TDS_HD double norm(const T* x, index_t d) {
  double acc = 0;
  for (index_t k = 0; k < d; ++k)
    acc = fused(static_cast<double>(x[k]), static_cast<double>(x[k]), acc);
  return root(acc);
}

}  // namespace metric

// Calls f(M(mp)) with the functor for (mp.metric, mp.p, T). seuclidean and
// mahalanobis run euclidean and correlation cosine (on transformed points);
// minkowski with p = 1, 2, inf runs cityblock, euclidean, chebyshev; the
// boolean family runs on bits, or on values where mp.values.
template <typename T, typename F>
decltype(auto) dispatch_metric(const MetricParams& mp, F&& f) {
  switch (mp.metric) {
    case Metric::euclidean:
    case Metric::seuclidean:
    case Metric::mahalanobis:
      return f(metric::Euclidean<T>(mp));
    case Metric::sqeuclidean:
      return f(metric::SqEuclidean<T>(mp));
    case Metric::cityblock:
      return f(metric::Cityblock<T>(mp));
    case Metric::chebyshev:
      return f(metric::Chebyshev<T>(mp));
    case Metric::cosine:
    case Metric::correlation:
      return f(metric::Cosine<T>(mp));
    case Metric::minkowski:
      if (mp.p == 1.0) return f(metric::Cityblock<T>(mp));
      if (mp.p == 2.0) return f(metric::Euclidean<T>(mp));
      if (mp.p == HUGE_VAL) return f(metric::Chebyshev<T>(mp));
      return f(metric::Minkowski<T>(mp));
    case Metric::braycurtis:
      return f(metric::BrayCurtis<T>(mp));
    case Metric::canberra:
      return f(metric::Canberra<T>(mp));
    case Metric::jensenshannon:
      return f(metric::JensenShannon<T>(mp));
    case Metric::hamming:
    case Metric::jaccard:
    case Metric::dice:
    case Metric::russellrao:
    case Metric::rogerstanimoto:
    case Metric::sokalmichener:
    case Metric::sokalsneath:
    case Metric::yule:
      if (mp.values) return f(metric::BoolValues<T>(mp));
      return f(metric::Boolean<T>(mp));
  }
  throw std::logic_error("unknown metric");
}

// The same with default parameters (compile-time questions, tests).
template <typename T, typename F>
decltype(auto) dispatch_metric(Metric m, F&& f) {
  MetricParams mp;
  mp.metric = m;
  return dispatch_metric<T>(mp, std::forward<F>(f));
}

}  // namespace tdsolve
