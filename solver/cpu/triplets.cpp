#include "solver/cpu/triplets.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "solver/cull_bound.hpp"
#include "solver/exact_sum.hpp"

namespace tdsolve::cpu {

template <typename T>
TripletView<T> triplet_view_of(const Problem<T>& p) {
  TripletView<T> v;
  v.x = p.a.data();
  v.n = p.rows;
  v.rho = p.rho;
  v.map = p.map;
  v.kernel = p.three_body.kernel;
  v.potential = p.three_body.potential;
  if (p.three_body.potential.atm.types > 0) {
    v.types = p.three_body.types.data();
    v.nu.assign(p.three_body.nu.begin(), p.three_body.nu.end());
  }
  v.epilogue = p.epilogue;
  if (p.culled) v.cull = &p.cull;
  v.cell = p.cell3();
  return v;
}

namespace {

// One thread's scratch for a tile: the three strips, the three ρ×ρ sets of
// pair terms (r² and 1/r²) and the tile's reductions.
template <typename T>
struct Scratch {
  explicit Scratch(index_t rho)
      : x(3 * rho * 3),
        r2(3 * rho * rho),
        inv(3 * rho * rho),
        w(3 * rho * rho),
        e(3 * rho),
        f(3 * rho * 3) {}
  std::vector<T> x;        // strips I, J, K: [s][p][3]
  std::vector<T> r2, inv;  // [IJ | JK | IK][ρ × ρ]
  std::vector<double> w;   // W: Σ ∂E/∂r² per pair, same layout
  std::vector<double> e;   // per-point energy sums, strips I, J, K
  std::vector<double> f;   // per-point forces [s][p][3]
};

template <typename T>
void add_point_sums(const TripletView<T>& v, index_t p, double energy, const double* force,
                    std::int64_t* sums) {
  exact_add_atomic(sums + p * kExactLimbs, energy);
  for (int c = 0; c < 3; ++c)
    exact_add_atomic(sums + (v.n + 3 * p + c) * kExactLimbs, force[c]);
}

template <typename T, typename E, typename Ev>
void potential_tile(const Ev& ev, const TripletView<T>& v, mapping::Tile3 t, index_t out_offset,
                    T* out, std::int64_t* sums, Scratch<T>& s) {
  const index_t rho = v.rho, n = v.n;
  const index_t g0[3] = {t.layer * rho, t.row * rho, t.col * rho};
  index_t len[3];
  for (int q = 0; q < 3; ++q) {
    len[q] = g0[q] < n ? std::min(rho, n - g0[q]) : 0;
    for (index_t p = 0; p < len[q]; ++p)
      for (int c = 0; c < 3; ++c)
        s.x[(q * rho + p) * 3 + c] = v.x[(g0[q] + p) * 3 + c];
  }
  if (len[0] == 0 || len[1] == 0 || len[2] == 0) return;
  // Pair terms: set 0 = (I, J), 1 = (J, K), 2 = (I, K).
  const int first[3] = {0, 1, 0}, second[3] = {1, 2, 2};
  for (int q = 0; q < 3; ++q) {
    const T* xa = &s.x[first[q] * rho * 3];
    const T* xb = &s.x[second[q] * rho * 3];
    for (index_t p = 0; p < len[first[q]]; ++p)
      for (index_t r = 0; r < len[second[q]]; ++r) {
        T dx = xa[p * 3] - xb[r * 3], dy = xa[p * 3 + 1] - xb[r * 3 + 1],
          dz = xa[p * 3 + 2] - xb[r * 3 + 2];
        v.cell.image(dx, dy, dz);
        const T d2 = dx * dx + dy * dy + dz * dz;
        const index_t at = q * rho * rho + p * rho + r;
        s.r2[at] = d2;
        s.inv[at] = T(1) / d2;
        s.w[at] = 0;
      }
  }
  std::fill(s.e.begin(), s.e.end(), 0.0);
  const T* A = &s.r2[0];
  const T* B = &s.r2[rho * rho];
  const T* C = &s.r2[2 * rho * rho];
  const T* iA = &s.inv[0];
  const T* iB = &s.inv[rho * rho];
  const T* iC = &s.inv[2 * rho * rho];
  double* WA = &s.w[0];
  double* WB = &s.w[rho * rho];
  double* WC = &s.w[2 * rho * rho];
  double* EI = &s.e[0];
  double* EJ = &s.e[rho];
  double* EK = &s.e[2 * rho];
  double total = 0;
  // A culled run knows its rule (solver/cull.hpp): only k whose pairs may be
  // within the cutoff (the margin added) can count, so the k of (i, j) are
  // the bits of a mask — ATM: k near both i and j, (i, j) near; SW: with
  // (i, j) near, k near either, else near both. The skipped k would not
  // count; the visited ones come in the same order: the same sums.
  const int rule = v.cull && rho <= 64 ? v.cull->geometry.triplet_rule : 0;
  std::uint64_t mik[64], mjk[64];
  double near2 = 0;
  if (rule) {
    const double near =
        cull::limit(v.cull->geometry.cutoff, v.cull->geometry.rel_tol, v.cull->scale);
    near2 = near * near;
    for (index_t p = 0; p < len[0]; ++p) {
      mik[p] = 0;
      for (index_t k = 0; k < len[2]; ++k)
        if (static_cast<double>(C[p * rho + k]) <= near2) mik[p] |= std::uint64_t(1) << k;
    }
    for (index_t p = 0; p < len[1]; ++p) {
      mjk[p] = 0;
      for (index_t k = 0; k < len[2]; ++k)
        if (static_cast<double>(B[p * rho + k]) <= near2) mjk[p] |= std::uint64_t(1) << k;
    }
  }
  for (index_t i = 0; i < len[0]; ++i) {
    const index_t gi = g0[0] + i;
    const index_t jb = t.row == t.layer ? i + 1 : 0;
    for (index_t j = jb; j < len[1]; ++j) {
      const index_t gj = g0[1] + j;
      const index_t kb = t.col == t.row ? j + 1 : 0;
      if (kb >= len[2]) continue;
      T* dst = nullptr;
      if constexpr (epi::traits<E>::kStores)
        dst = out + (mapping::triplet_rank(n, gi, gj, g0[2] + kb) - out_offset) - kb;
      const T a = A[i * rho + j], ia = iA[i * rho + j];
      // The screens are monotone (a triplet that counts still counts with
      // b or c smaller), so when not even (a, 0, 0) counts no k does: ATM's
      // pair beyond its cutoff skips the row of k (SW's never: its (j, k)
      // and (i, k) sides may carry the term). Stored values stay 0.
      if (!ev.counts(a, T(0), T(0))) {
        if (dst)
          for (index_t k = kb; k < len[2]; ++k)
            dst[k] = 0;
        continue;
      }
      double wa = 0, eij = 0;
      std::uint64_t ks = ~std::uint64_t(0);  // the k to visit (bits), from kb on
      if (rule) {
        const bool ij = static_cast<double>(a) <= near2;
        ks = rule == 3 ? (ij ? mik[i] & mjk[j] : 0) : (ij ? mik[i] | mjk[j] : mik[i] & mjk[j]);
      }
      ks &= (~std::uint64_t(0) << kb) & (~std::uint64_t(0) >> (64 - len[2]));
      for (std::uint64_t bits = ks; bits; bits &= bits - 1) {  // k rising
        const index_t k = static_cast<index_t>(__builtin_ctzll(bits));
        const T b = B[j * rho + k], c = C[i * rho + k];
        if (!ev.counts(a, b, c)) {
          if (dst) dst[k] = 0;
          continue;
        }
        TripletTerms<T> e = ev.evaluate(a, b, c, ia, iB[j * rho + k], iC[i * rho + k]);
        if constexpr (Ev::kTyped)
          e = ev.scaled(e, ev.weight(ev.types[gi], ev.types[gj], ev.types[g0[2] + k]));
        if (dst) dst[k] = e.e;
        wa += e.ea;
        WB[j * rho + k] += e.eb;
        WC[i * rho + k] += e.ec;
        eij += e.e;
        EK[k] += e.e;
      }
      WA[i * rho + j] = wa;
      total += eij;
      EI[i] += eij;
      EJ[j] += eij;
    }
  }
  // Forces from the pair weights: F_p = −2 Σ_q W_pq (x_p − x_q).
  std::fill(s.f.begin(), s.f.end(), 0.0);
  for (int q = 0; q < 3; ++q) {
    const int pa = first[q], pb = second[q];
    const T* xa = &s.x[pa * rho * 3];
    const T* xb = &s.x[pb * rho * 3];
    const double* W = &s.w[q * rho * rho];
    for (index_t p = 0; p < len[pa]; ++p)
      for (index_t r = 0; r < len[pb]; ++r) {
        const double wpr = W[p * rho + r];
        if (wpr == 0) continue;
        T dv[3] = {xa[p * 3] - xb[r * 3], xa[p * 3 + 1] - xb[r * 3 + 1],
                   xa[p * 3 + 2] - xb[r * 3 + 2]};
        v.cell.image(dv[0], dv[1], dv[2]);  // the image its r² had
        for (int c = 0; c < 3; ++c) {
          const double d = static_cast<double>(dv[c]);
          s.f[(pa * rho + p) * 3 + c] -= 2 * wpr * d;
          s.f[(pb * rho + r) * 3 + c] += 2 * wpr * d;
        }
      }
  }
  for (int q = 0; q < 3; ++q)
    for (index_t p = 0; p < len[q]; ++p)
      add_point_sums(v, g0[q] + p, s.e[q * rho + p], &s.f[(q * rho + p) * 3], sums);
  exact_add_atomic(sums + 4 * n * kExactLimbs, total);
}

// bench's dummy: walks the tiles and does nothing per triplet.
template <typename T>
void dummy_tile(const TripletView<T>& v, mapping::Tile3 t, std::int64_t* sums) {
  exact_add_atomic(sums + 4 * v.n * kExactLimbs, double(t.layer + t.row + t.col));
}

}  // namespace

template <typename T>
void compute_triplet_chunk(const TripletView<T>& v, index_t layer_begin, index_t layer_end, T* out,
                           std::int64_t* sums, int threads) {
  std::memset(sums, 0, triplet_sum_slots(v.n) * kExactLimbs * sizeof(std::int64_t));
  mapping::TripletDomain dom(v.n, v.rho);
  if (v.cull) {  // culled: Lambda3Map walks the list
    dom.tiles = v.cull->tiles.data();
    dom.tile_start = v.cull->tile_start.data();
  }
  const index_t out_offset = dom.elements_before(layer_begin);
  dispatch_map3(v.map, [&](auto map) {
    const AtmTypeTable<T> typed{v.types, v.nu.data(), v.potential.atm.types};
    dispatch_potential<T>(v.potential, typed, [&](const auto& ev) {
      epi::dispatch_triplet(v.epilogue, [&](auto e) {
        using Map = decltype(map);
        using E = decltype(e);
        const mapping::Grid g = Map::grid(dom, layer_begin, layer_end);
        const index_t blocks = g.blocks();
#pragma omp parallel num_threads(threads)
        {
          Scratch<T> s(v.rho);
#pragma omp for schedule(dynamic, 4)
          for (index_t b = 0; b < blocks; ++b) {
            mapping::Tile3 t;
            if (!Map::tile(dom, g, b % g.x, b / g.x, &t)) continue;
            if (v.kernel == TripletKernel::dummy) {
              dummy_tile(v, t, sums);
            } else {
              potential_tile<T, E>(ev, v, t, out_offset, out, sums, s);
            }
          }
        }
      });
    });
  });
}

template TripletView<float> triplet_view_of<float>(const Problem<float>&);
template TripletView<double> triplet_view_of<double>(const Problem<double>&);
template void compute_triplet_chunk<float>(const TripletView<float>&, index_t, index_t, float*,
                                           std::int64_t*, int);
template void compute_triplet_chunk<double>(const TripletView<double>&, index_t, index_t, double*,
                                            std::int64_t*, int);

}  // namespace tdsolve::cpu
