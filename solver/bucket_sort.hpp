// A parallel sort for large arrays whose order starts with a key that
// spreads them (Morton codes, tile rows): one scatter into buckets by that
// key, then each bucket sorted on its own, all on the OpenMP team. The
// result is std::sort's: the bucket must be monotone with the order
// (a < b implies bucket(a) <= bucket(b)) and the order total.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace tdsolve {

// An array of n trivially constructible values left uninitialised, so that
// the loop that first writes it (in parallel) is the one that faults its
// pages in: a std::vector zeroes them on one thread first.
template <typename V>
std::unique_ptr<V[]> uninitialised(std::size_t n) {
  return std::unique_ptr<V[]>(new V[n]);
}

// A std::vector allocator that leaves trivially constructible elements
// uninitialised on resize (a vector<T, DefaultInit<T>> grows without the
// one-thread zeroing; its values are written after, in parallel).
template <typename T>
struct DefaultInit : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = DefaultInit<U>;
  };
  DefaultInit() = default;
  template <typename U>
  DefaultInit(const DefaultInit<U>&) noexcept {}
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... A>
  void construct(U* p, A&&... a) {
    ::new (static_cast<void*>(p)) U(std::forward<A>(a)...);
  }
};

// Sorts v[0, n) into out[0, n) (v is left in any order).
template <typename V, typename Bucket>
void bucket_sort(V* v, std::size_t n, V* out, std::size_t buckets, Bucket bucket) {
  const int team = omp_get_max_threads();
  if (team <= 1 || n < (std::size_t(1) << 16) || buckets < 2) {
    std::sort(v, v + n);
    std::copy(v, v + n, out);
    return;
  }
  // count[t * buckets + b]: thread t's elements of bucket b, then where its
  // first one goes.
  std::vector<std::size_t> count(std::size_t(team) * buckets, 0);
  std::vector<std::size_t> start(buckets + 1, 0);
#pragma omp parallel num_threads(team)
  {
    const int t = omp_get_thread_num(), threads = omp_get_num_threads();
    const std::size_t lo = n * t / threads, hi = n * (t + 1) / threads;
    std::size_t* mine = &count[std::size_t(t) * buckets];
    for (std::size_t q = lo; q < hi; ++q)
      ++mine[bucket(v[q])];
#pragma omp barrier
#pragma omp single
    {
      std::size_t at = 0;
      for (std::size_t b = 0; b < buckets; ++b) {
        start[b] = at;
        for (int u = 0; u < threads; ++u) {
          const std::size_t c = count[std::size_t(u) * buckets + b];
          count[std::size_t(u) * buckets + b] = at;
          at += c;
        }
      }
      start[buckets] = at;
    }
    for (std::size_t q = lo; q < hi; ++q)
      out[mine[bucket(v[q])]++] = v[q];
#pragma omp barrier
#pragma omp for schedule(dynamic, 64)
    for (std::size_t b = 0; b < buckets; ++b)
      std::sort(out + start[b], out + start[b + 1]);
  }
}

// The same for a vector, sorted in place.
template <typename V, typename Alloc, typename Bucket>
void bucket_sort(std::vector<V, Alloc>* v, std::size_t buckets, Bucket bucket) {
  std::unique_ptr<V[]> out = uninitialised<V>(v->size());
  bucket_sort(v->data(), v->size(), out.get(), buckets, bucket);
  const std::size_t n = v->size();
#pragma omp parallel for schedule(static)
  for (std::size_t q = 0; q < n; ++q)
    (*v)[q] = out[q];
}

}  // namespace tdsolve
