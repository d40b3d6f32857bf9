#include "solver/cpu/adf.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "solver/adf_bins.hpp"

namespace tdsolve::cpu {

namespace {

// One neighbour of a centre: its leg d = x_centre − x_neighbour (minimum
// image), 1/r, and the ADFs whose J and K lists take it.
template <typename T>
struct Leg {
  T d[3];
  T ir;
  unsigned j, k;
};

}  // namespace

template <typename T>
void adf_centres(const Problem<T>& p, const CellView& cells, index_t begin, index_t end,
                 const index_t* centres, std::uint64_t* counts, int threads) {
  const AdfSpec& spec = p.adf;
  const index_t row = spec.bins + 2, slots = spec.count * row;
  const AdfTable table = spec.table();
  const AdfBinner binner(static_cast<int>(spec.bins), spec.ordinate == AdfOrdinate::cosine);
  const epilogue::Cell3<T> cell = p.cell3();
  const T* x = p.a.data();
  const std::int32_t* type = spec.type.data();
  const double outer2 = spec.outer * spec.outer;
#pragma omp parallel num_threads(threads)
  {
    std::vector<std::uint64_t> hist(slots, 0);
    std::vector<Leg<T>> legs;
#pragma omp for schedule(dynamic, 16)
    for (index_t q = begin; q < end; ++q) {
      const index_t i = centres ? centres[q] : q;
      const unsigned centre = table.centre(type[i]);
      if (!centre) continue;
      legs.clear();
      cells.for_each_candidate(i, [&](index_t o) {
        if (o == i) return;
        T d[3] = {x[3 * i] - x[3 * o], x[3 * i + 1] - x[3 * o + 1], x[3 * i + 2] - x[3 * o + 2]};
        cell.image(d[0], d[1], d[2]);
        const T r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
        if (!(static_cast<double>(r2) <= outer2)) return;
        Leg<T> l;
        table.neighbour(type[o], static_cast<double>(r2), &l.j, &l.k);
        l.j &= centre;
        l.k &= centre;
        if (!(l.j | l.k)) return;
        std::copy(d, d + 3, l.d);
        l.ir = T(1) / std::sqrt(r2);
        legs.push_back(l);
      });
      const size_t m = legs.size();
      for (size_t a = 0; a < m; ++a) {
        const Leg<T>& u = legs[a];
        for (size_t b = a + 1; b < m; ++b) {
          const Leg<T>& v = legs[b];
          unsigned adfs = adf_counted(centre, u.j, u.k, v.j, v.k);
          if (!adfs) continue;
          const T cs = (u.d[0] * v.d[0] + u.d[1] * v.d[1] + u.d[2] * v.d[2]) * (u.ir * v.ir);
          const index_t slot = static_cast<index_t>(binner.bin(static_cast<double>(cs)) + 1);
          for (; adfs; adfs &= adfs - 1)
            ++hist[index_t(__builtin_ctz(adfs)) * row + slot];
        }
      }
    }
    for (index_t s = 0; s < slots; ++s)  // integers: any order
      if (hist[s]) __atomic_fetch_add(&counts[s], hist[s], __ATOMIC_RELAXED);
  }
}

template void adf_centres<float>(const Problem<float>&, const CellView&, index_t, index_t,
                                 const index_t*, std::uint64_t*, int);
template void adf_centres<double>(const Problem<double>&, const CellView&, index_t, index_t,
                                  const index_t*, std::uint64_t*, int);

}  // namespace tdsolve::cpu
