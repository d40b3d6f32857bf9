#include "solver/cpu/adf.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "solver/adf_bins.hpp"
#include "solver/adf_legs.hpp"

namespace tdsolve::cpu {

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
    std::vector<AdfLeg<T>> legs;
#pragma omp for schedule(dynamic, 16)
    for (index_t q = begin; q < end; ++q) {
      const index_t i = centres ? centres[q] : q;
      const unsigned centre = table.centre(type[i]);
      if (!centre) continue;
      legs.clear();
      cells.for_each_candidate(i, [&](index_t o) {
        AdfLeg<T> l;
        if (o != i && adf_leg(x, i, o, type[o], cell, table, outer2, centre, &l)) legs.push_back(l);
      });
      const size_t m = legs.size();
      for (size_t a = 0; a < m; ++a) {
        const AdfLeg<T>& u = legs[a];
        for (size_t b = a + 1; b < m; ++b) {
          const AdfLeg<T>& v = legs[b];
          unsigned adfs = adf_counted(centre, u.j, u.k, v.j, v.k);
          if (!adfs) continue;
          const T cs = adf_cos(u.d, u.ir, v.d, v.ir);
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
