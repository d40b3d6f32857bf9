// Distance metrics as small functors, one definition for the CPU loops and
// the CUDA kernels (cuVS-style: accumulate per feature, then an epilogue).
//
// The per-pair arithmetic is fixed: acc starts at 0, features are visited in
// order k = 0..d-1, and every multiply-add is an explicit fused fma. Both
// backends therefore produce the same bits (CPU code is built with
// -ffp-contract=off and GPU code with --fmad=false so no compiler contracts
// anything else; IEEE sqrt and division are correctly rounded on both).
#pragma once

#include <cmath>
#include <stdexcept>
#include <string>

#include "core/types.hpp"

namespace tdsolve {

enum class Metric { euclidean, sqeuclidean, cityblock, chebyshev, cosine };

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
  }
  return "?";
}

// A metric by any of its names, case-insensitive: the canonical one, SciPy's
// aliases (scipy.spatial.distance: "e", "eu", "euclid", "c", "cb",
// "cblock", "ch", "cheb", "cheby", "chebychev", "sqe", "sqeuclid", "cos")
// and scikit-learn's ("l2", "l1", "manhattan", "linf", "infinity").
inline bool parse_metric(const std::string& s, Metric* m) {
  std::string t;
  for (char ch : s)
    t += char(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
  static const struct {
    const char* name;
    Metric metric;
  } kNames[] = {
      {"euclidean", Metric::euclidean}, {"e", Metric::euclidean},
      {"eu", Metric::euclidean},        {"euclid", Metric::euclidean},
      {"l2", Metric::euclidean},        {"sqeuclidean", Metric::sqeuclidean},
      {"sqe", Metric::sqeuclidean},     {"sqeuclid", Metric::sqeuclidean},
      {"cityblock", Metric::cityblock}, {"c", Metric::cityblock},
      {"cb", Metric::cityblock},        {"cblock", Metric::cityblock},
      {"l1", Metric::cityblock},        {"manhattan", Metric::cityblock},
      {"chebyshev", Metric::chebyshev}, {"ch", Metric::chebyshev},
      {"cheb", Metric::chebyshev},      {"cheby", Metric::chebyshev},
      {"chebychev", Metric::chebyshev}, {"linf", Metric::chebyshev},
      {"infinity", Metric::chebyshev},  {"cosine", Metric::cosine},
      {"cos", Metric::cosine},
  };
  for (const auto& n : kNames) {
    if (t == n.name) {
      *m = n.metric;
      return true;
    }
  }
  return false;
}

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

// Every functor: acc_t accumulate(acc, a, b) per feature, T finalize(acc,
// |a|, |b|) once per pair; the norms are only read where needs_norms is set.
template <typename T>
struct SqEuclidean {
  using acc_t = T;
  static constexpr bool needs_norms = false;
  TDS_HD static T accumulate(T acc, T a, T b) {
    const T d = a - b;
    return fused(d, d, acc);
  }
  TDS_HD static T finalize(T acc, double, double) { return acc; }
};

template <typename T>
struct Euclidean {
  using acc_t = T;
  static constexpr bool needs_norms = false;
  TDS_HD static T accumulate(T acc, T a, T b) { return SqEuclidean<T>::accumulate(acc, a, b); }
  TDS_HD static T finalize(T acc, double, double) { return root(acc); }
};

template <typename T>
struct Cityblock {
  using acc_t = T;
  static constexpr bool needs_norms = false;
  TDS_HD static T accumulate(T acc, T a, T b) { return acc + magnitude(a - b); }
  TDS_HD static T finalize(T acc, double, double) { return acc; }
};

template <typename T>
struct Chebyshev {
  using acc_t = T;
  static constexpr bool needs_norms = false;
  TDS_HD static T accumulate(T acc, T a, T b) {
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
  TDS_HD static double accumulate(double acc, T a, T b) {
    return fused(static_cast<double>(a), static_cast<double>(b), acc);
  }
  TDS_HD static T finalize(double acc, double na, double nb) {
    double c = acc / (na * nb);
    c = c > 1.0 ? 1.0 : (c < -1.0 ? -1.0 : c);
    return static_cast<T>(1.0 - c);
  }
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

// Calls f(Functor{}) with the functor type for (m, T).
template <typename T, typename F>
decltype(auto) dispatch_metric(Metric m, F&& f) {
  switch (m) {
    case Metric::euclidean:
      return f(metric::Euclidean<T>{});
    case Metric::sqeuclidean:
      return f(metric::SqEuclidean<T>{});
    case Metric::cityblock:
      return f(metric::Cityblock<T>{});
    case Metric::chebyshev:
      return f(metric::Chebyshev<T>{});
    case Metric::cosine:
      return f(metric::Cosine<T>{});
  }
  throw std::logic_error("unknown metric");
}

}  // namespace tdsolve
