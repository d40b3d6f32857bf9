// The triplet problem on the GPU: one block per 32×32×32 tile of the block
// tetrahedron (λ3: only the tiles with I <= J <= K are launched; BB-3D: the
// m² × layers box, with the other blocks leaving at once), two chunks in
// flight as in the pair backend.
//
// A block (256 threads, 8 warps) unranks its tile once, stages the three
// strips of 32 points in shared memory and computes the tile's two ρ×ρ sets
// of pair terms it reads in the inner loop, r² and 1/r² of (I, J) and (I, K);
// thread (warp w, lane k) handles the column pairs (j, k) for j = w, w+8,
// w+16, w+24 and computes the (J, K) term of its pair itself. For each (j, k)
// it runs over the 32 values of i with the pair terms from shared memory:
//   ∂E/∂r²_jk  summed over i in a register (W_JK, no reduction);
//   ∂E/∂r²_ik  summed over j in 32 registers per thread, then over the warps
//              in a fixed tree through shared memory (W_IK);
//   ∂E/∂r²_ij  summed over k across the warp's lanes by a transposing
//              butterfly (31 shuffles for 32 values: lane i ends with the sum
//              for i) (W_IJ), and the energies the same way.
// Every reduction has a fixed order, so a tile's sums are the same bits on
// every run. The tile's forces follow from the pair weights in float64,
// F_p = −2 Σ_q W_pq (x_p − x_q), and each of its 96 points adds its energy
// and force to exact accumulators in global memory (64-bit integer atomics,
// solver/exact_sum.hpp): sums that do not depend on which tile came first.
//
// The kernel is a template on the potential's evaluator (solver/potentials/:
// ATM, SW), picked once per launch by dispatch_potential, as on the CPU.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <type_traits>

#include "core/knobs.hpp"
#include "solver/cpu/cpu_backend.hpp"
#include "solver/cuda/cuda_backend.hpp"
#include "solver/cuda/cuda_check.hpp"
#include "solver/cuda/cuda_resources.cuh"
#include "solver/exact_sum.hpp"
#include "solver/fault.hpp"
#include "solver/potentials/potential.hpp"

namespace tdsolve::cuda {

namespace {

constexpr int kRho = 32;       // tile side: one lane per k
constexpr int kThreads = 256;  // 8 warps
constexpr int kWarps = kThreads / 32;
constexpr int kJPerWarp = kRho / kWarps;  // 4
constexpr int kPadded = kRho + 1;         // W matrices' row stride (no bank conflicts)

template <typename T>
struct TripletParams {
  const T* x = nullptr;  // n × 3
  mapping::TripletDomain dom;
  mapping::Grid grid;
  index_t out_offset = 0;
  T* out = nullptr;                    // store: the chunk's triplet energies
  unsigned long long* sums = nullptr;  // triplet_sum_slots(n) × kExactLimbs
  epilogue::Cell3<T> cell;             // --box: pairs' differences minimum-image
};

// Shared memory of a block, in elements of T.
constexpr int kXs = 3 * 3 * kRho;        // strips [s][c][p]
constexpr int kPairs = 4 * kRho * kRho;  // r²(I,J) [j][i], 1/r², (r², 1/r²)(I,K) [i][k]
constexpr int kW = 3 * kRho * kPadded;   // W_IJ [j][i], W_JK [j][k], W_IK [i][k]
constexpr int kSmall = 2 * kWarps * kRho + kRho;  // per-warp energies of i and k; of j
// Shared memory of the kernel that takes NI values of i at a time (its W_IK
// tree has a region of its own: 4 × NI × 32).
constexpr int shared_elements(int ni) {
  return kXs + kPairs + kWarps / 2 * ni * kRho + kW + kSmall;
}

__device__ __forceinline__ void exact_add_device(unsigned long long* limbs, double v) {
  if (v == 0) return;
  const ExactPieces p = exact_pieces(v);
#pragma unroll
  for (int q = 0; q < 3; ++q) {
    if (p.piece[q] == 0) continue;
    const unsigned long long x = p.piece[q];
    atomicAdd(&limbs[p.at + q], p.negative ? 0ull - x : x);  // two's complement
  }
}

// One butterfly step: lanes pair up across bit S; each keeps the half of
// v[0 .. 2S) its bit selects and adds its partner's copy of that half.
template <int S, int N, typename T>
__device__ __forceinline__ void transpose_step(T (&v)[N], int lane) {
  const bool upper = lane & S;
#pragma unroll
  for (int t = 0; t < S; ++t) {
    const T send = upper ? v[t] : v[t + S];
    const T keep = upper ? v[t + S] : v[t];
    v[t] = keep + __shfl_xor_sync(0xffffffffu, send, S);
  }
}

// Lane L returns the sum over the warp's 32 lanes of v[L mod N], N = 32 or
// 16 (31 shuffles for the N sums; for 16, lanes L and L+16 first add their
// arrays). v is clobbered. A fixed order: the same bits every time.
template <int N, typename T>
__device__ __forceinline__ T transpose_sum(T (&v)[N], int lane) {
  static_assert(N == 32 || N == 16, "a warp's worth");
  if constexpr (N == 32) {
    transpose_step<16>(v, lane);
  } else {
#pragma unroll
    for (int t = 0; t < 16; ++t)
      v[t] += __shfl_xor_sync(0xffffffffu, v[t], 16);
  }
  transpose_step<8>(v, lane);
  transpose_step<4>(v, lane);
  transpose_step<2>(v, lane);
  transpose_step<1>(v, lane);
  return v[0];
}

template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
#pragma unroll
  for (int s = 16; s >= 1; s >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, s);
  return v;
}

// Squared distances in [kTiny, kHuge) cannot overflow a·b·c, the product of
// the law of cosines (|(a+c-b)(a+b-c)(b+c-a)| <= 8 max³, below (largest T /
// 8)^(1/3): float 3.5e12, double 2.8e102) nor (abc)^(-5/2) (abc above
// float 1.6e-16, double 5e-124). Tiles within them skip the overflow test
// and atm_terms_fast's scaling (ATM without cutoffs: the evaluators with
// kUncutPaths).
template <typename T>
constexpr T kTiny = sizeof(T) == 4 ? T(1e-2) : T(1e-40);
template <typename T>
constexpr T kHuge = sizeof(T) == 4 ? T(1e12) : T(1e100);
template <typename T>
__device__ __forceinline__ bool unscaled_ok(T x) {
  return x >= kTiny<T> && x < kHuge<T>;
}

// Four consecutive values of a shared array in one or two wide loads.
template <typename T>
__device__ __forceinline__ void load4(const T* p, T (&v)[4]) {
  if constexpr (sizeof(T) == 4) {
    const float4 q = *reinterpret_cast<const float4*>(p);
    v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
  } else {
    const double2 a = *reinterpret_cast<const double2*>(p);
    const double2 b = *reinterpret_cast<const double2*>(p + 2);
    v[0] = a.x, v[1] = a.y, v[2] = b.x, v[3] = b.y;
  }
}

// The tile a block works on, unranked once by thread 0 (slot = iteration
// parity, so the next write never meets a late reader of this one).
struct SharedTile {
  mapping::Tile3 t[2];
  int ok[2];
};

template <typename Map>
__device__ __forceinline__ bool block_tile(const mapping::TripletDomain& dom,
                                           const mapping::Grid& g, index_t bx, index_t by,
                                           int parity, SharedTile& st, mapping::Tile3* t) {
  if (threadIdx.x == 0) st.ok[parity] = Map::tile(dom, g, bx, by, &st.t[parity]);
  __syncthreads();  // also: the previous tile's shared memory is free
  *t = st.t[parity];
  return st.ok[parity] != 0;
}

// One (j, k = lane) column pair of a tile against NI of its values of i,
// from i0: the pair terms of (I, J) and (I, K) from shared memory, W_JK and
// the energies in registers, ∂E/∂r²_ij into ea[i] (summed across lanes by
// the caller), ∂E/∂r²_ik into wc[i] and the energies of i into ei[i]
// (summed over this warp's values of j). kFull: an interior tile (I < J <
// K, all inside n), so no index masks; kCut: the evaluator's screen
// (counts), else (kUncutPaths evaluators without cutoffs) counts_uncut —
// kCheck = false: not even that (the tile's squared distances all lie in
// [kTiny, kHuge)), every triplet counts, and evaluate<false>. Typed
// evaluators (kTyped): ts holds the types of the tile's 3 × 32 points
// (strips I, J, K), and each triplet's terms are scaled by its ν.
template <typename T, typename Eval, int NI, bool kFull, bool kCut, typename E, bool kCheck = true>
__device__ __forceinline__ void potential_column(const TripletParams<T>& k, const Eval& ev,
                                                 const T* A, const T* iA, const T* CC,
                                                 const std::int32_t* ts, int i0, int j, int lane,
                                                 T b, T ib, bool jk, int ilim, index_t gi0,
                                                 index_t gj, index_t gk, T (&ea)[NI], T (&wc)[NI],
                                                 T (&ei)[NI], T& wb, T& ej, T& ek) {
#pragma unroll
  for (int i4 = 0; i4 < NI; i4 += 4) {
    T a4[4], ia4[4];
    load4(A + j * kRho + i0 + i4, a4);
    load4(iA + j * kRho + i0 + i4, ia4);
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int ii = i4 + u, i = i0 + ii;
      const T a = a4[u], ia = ia4[u];
      T c, ic;
      if constexpr (sizeof(T) == 4) {
        const float2 q = reinterpret_cast<const float2*>(CC)[i * kRho + lane];
        c = q.x, ic = q.y;
      } else {
        const double2 q = reinterpret_cast<const double2*>(CC)[i * kRho + lane];
        c = q.x, ic = q.y;
      }
      bool valid;
      if constexpr (kFull && !kCut && !kCheck) {
        valid = true;
      } else if constexpr (kFull && kCut) {
        valid = ev.counts(a, b, c);
      } else if constexpr (kFull) {
        valid = ev.counts_uncut(a, b, c);
      } else {
        valid = jk && i < ilim && ev.counts(a, b, c);
      }
      TripletTerms<T> r = ev.template evaluate<kCheck>(a, b, c, ia, ib, ic);
      if constexpr (Eval::kTyped)
        r = ev.scaled(r, ev.weight(ts[i], ts[kRho + j], ts[2 * kRho + lane]));
      const T e = valid ? r.e : T(0);
      ea[ii] = valid ? r.ea : T(0);
      wb += valid ? r.eb : T(0);
      wc[ii] += valid ? r.ec : T(0);
      ei[ii] += e;
      ej += e;
      ek += e;
      if constexpr (epi::traits<E>::kStores) {
        if (kFull || (jk && i < ilim))
          k.out[mapping::triplet_rank(k.dom.n, gi0 + i, gj, gk) - k.out_offset] = e;
      }
    }
  }
}

// Dispatches potential_column on the tile's kind (uniform across the
// block); only evaluators with kUncutPaths have the paths without cutoffs.
template <typename T, typename Eval, int NI, typename E>
__device__ __forceinline__ void potential_column_any(
    bool full, bool cut, bool big, const TripletParams<T>& k, const Eval& ev, const T* A,
    const T* iA, const T* CC, const std::int32_t* ts, int i0, int j, int lane, T b, T ib, bool jk,
    int ilim, index_t gi0, index_t gj, index_t gk, T (&ea)[NI], T (&wc)[NI], T (&ei)[NI], T& wb,
    T& ej, T& ek) {
  if constexpr (Eval::kUncutPaths) {
    if (full && !cut && big) {
      potential_column<T, Eval, NI, true, false, E>(k, ev, A, iA, CC, ts, i0, j, lane, b, ib, jk,
                                                    ilim, gi0, gj, gk, ea, wc, ei, wb, ej, ek);
      return;
    }
    if (full && !cut) {
      potential_column<T, Eval, NI, true, false, E, false>(
          k, ev, A, iA, CC, ts, i0, j, lane, b, ib, jk, ilim, gi0, gj, gk, ea, wc, ei, wb, ej, ek);
      return;
    }
  }
  if (full) {
    potential_column<T, Eval, NI, true, true, E>(k, ev, A, iA, CC, ts, i0, j, lane, b, ib, jk, ilim,
                                                 gi0, gj, gk, ea, wc, ei, wb, ej, ek);
  } else {
    potential_column<T, Eval, NI, false, true, E>(k, ev, A, iA, CC, ts, i0, j, lane, b, ib, jk,
                                                  ilim, gi0, gj, gk, ea, wc, ei, wb, ej, ek);
  }
}

// The tile kernel. NI = 32: each thread runs over all 32 values of i at
// once (most registers, one block per SM); NI = 16: in two halves of 16
// (fewer registers, two blocks per SM, more shuffles per triplet). Eval: the
// potential's evaluator (solver/potentials/terms.hpp); cut: its has_cutoff().
template <typename T, typename Map, typename Eval, typename E, int NI>
__global__ void __launch_bounds__(kThreads, NI == 16 ? 2 : 1)
    triplet_kernel(const TripletParams<T> k, const Eval ev, bool cut) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  __shared__ SharedTile st;
  // Typed evaluators: the types of the tile's strips I, J, K (0 past n).
  __shared__ std::int32_t ts[Eval::kTyped ? 3 * kRho : 1];
  T* smem = reinterpret_cast<T*>(smem_raw);
  T* xs = smem;                          // [3][3][32]
  T* A = xs + kXs;                       // r²(I_i, J_j) at [j][i]
  T* iA = A + kRho * kRho;               // 1/r²
  T* CC = iA + kRho * kRho;              // (r², 1/r²) of (I_i, K_k) at [i][k]
  T* red = A + kPairs;                   // the W_IK tree: 4 × NI × 32
  T* WA = red + kWarps / 2 * NI * kRho;  // W_IJ [j][i], stride 33
  T* WB = WA + kRho * kPadded;           // W_JK [j][k]
  T* WC = WB + kRho * kPadded;           // W_IK [i][k]
  T* Ei = WC + kRho * kPadded;           // per-warp energy sums of i: [w][i]
  T* Ek = Ei + kWarps * kRho;            // of k: [w][k]
  T* Ej = Ek + kWarps * kRho;            // of j: [j]

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const index_t n = k.dom.n;
  const mapping::Grid g = k.grid;
  int parity = 0;
  for (index_t by = blockIdx.y; by < g.y; by += gridDim.y)
    for (index_t bx = blockIdx.x; bx < g.x; bx += gridDim.x) {
      mapping::Tile3 t;
      const bool ok = block_tile<Map>(k.dom, g, bx, by, parity, st, &t);
      parity ^= 1;
      if (!ok) continue;  // the same for the whole block
      const index_t g0[3] = {t.layer * kRho, t.row * kRho, t.col * kRho};
      if (tid < 3 * kRho) {
        const int s = tid / kRho, p = tid % kRho;
        const index_t gp = g0[s] + p;
#pragma unroll
        for (int c = 0; c < 3; ++c)
          xs[(s * 3 + c) * kRho + p] = gp < n ? k.x[gp * 3 + c] : T(0);
        if constexpr (Eval::kTyped) ts[tid] = gp < n ? ev.types[gp] : 0;
      }
      __syncthreads();
      int large = 0;  // a squared distance outside [kTiny, kHuge): the careful path
      for (int e = tid; e < kRho * kRho; e += kThreads) {
        const int hi = e / kRho, lo = e % kRho;
        // A[j][i]: j = hi, i = lo. CC[i][k]: i = hi, k = lo. (J_hi, K_lo) for the check.
        T u[3], v[3], w[3];
#pragma unroll
        for (int c = 0; c < 3; ++c) {
          u[c] = xs[(0 * 3 + c) * kRho + lo] - xs[(1 * 3 + c) * kRho + hi];
          v[c] = xs[(0 * 3 + c) * kRho + hi] - xs[(2 * 3 + c) * kRho + lo];
          w[c] = xs[(1 * 3 + c) * kRho + hi] - xs[(2 * 3 + c) * kRho + lo];
        }
        if (k.cell.kind) {  // uniform
          k.cell.image(u[0], u[1], u[2]);
          k.cell.image(v[0], v[1], v[2]);
          k.cell.image(w[0], w[1], w[2]);
        }
        T da = 0, dc = 0, db = 0;
#pragma unroll
        for (int c = 0; c < 3; ++c) {
          da += u[c] * u[c];
          dc += v[c] * v[c];
          db += w[c] * w[c];
        }
        A[e] = da;
        iA[e] = T(1) / da;
        CC[2 * e] = dc;
        CC[2 * e + 1] = T(1) / dc;
        large |= !(unscaled_ok(da) && unscaled_ok(dc) && unscaled_ok(db));
      }
      const bool big = __syncthreads_or(large) != 0;

      const bool full = t.layer < t.row && t.row < t.col && g0[2] + kRho <= n;
      const index_t gk = g0[2] + lane;
      T ek = 0;  // this lane's energies as k
#pragma unroll 1
      for (int i0 = 0; i0 < kRho; i0 += NI) {
        T wc[NI], ei[NI];  // per i: Σ over this warp's j of ∂E/∂r²_ik (k = lane), of E
#pragma unroll
        for (int ii = 0; ii < NI; ++ii)
          wc[ii] = ei[ii] = 0;
#pragma unroll 1
        for (int q = 0; q < kJPerWarp; ++q) {
          const int j = warp + kWarps * q;
          const index_t gj = g0[1] + j;
          T u[3];
#pragma unroll
          for (int c = 0; c < 3; ++c)
            u[c] = xs[(1 * 3 + c) * kRho + j] - xs[(2 * 3 + c) * kRho + lane];
          if (k.cell.kind) k.cell.image(u[0], u[1], u[2]);
          T b = 0;
#pragma unroll
          for (int c = 0; c < 3; ++c)
            b += u[c] * u[c];
          const T ib = T(1) / b;
          const bool jk = gj < gk && gk < n;
          // gi < gj <=> i < gj - g0[0]
          const int ilim = gj <= g0[0] ? 0 : static_cast<int>(min(gj - g0[0], index_t(kRho)));
          T ea[NI];
          T wb = 0, ej = 0;
          potential_column_any<T, Eval, NI, E>(full, cut, big, k, ev, A, iA, CC, ts, i0, j, lane, b,
                                               ib, jk, ilim, g0[0], gj, gk, ea, wc, ei, wb, ej, ek);
          // (j, lane) and Ej[j] have one owner: the halves add in order.
          WB[j * kPadded + lane] = (i0 == 0 ? T(0) : WB[j * kPadded + lane]) + wb;
          const T sa = transpose_sum(ea, lane);  // Σ_k ∂E/∂r²_ij for i = i0 + lane mod NI
          if (lane < NI) WA[j * kPadded + i0 + lane] = sa;
          const T sj = warp_sum(ej);
          if (lane == 0) Ej[j] = (i0 == 0 ? T(0) : Ej[j]) + sj;
        }
        const T se = transpose_sum(ei, lane);  // Σ_{j of this warp, k} E for i = i0 + lane
        if (lane < NI) Ei[warp * kRho + i0 + lane] = se;
          // W_IK: warps 4..7 hand theirs to 0..3, then 2..3 to 0..1, then 1 to 0.
#pragma unroll 1
        for (int half = kWarps / 2; half >= 1; half /= 2) {
          __syncthreads();
          if (warp >= half && warp < 2 * half) {
#pragma unroll
            for (int ii = 0; ii < NI; ++ii)
              red[((warp - half) * NI + ii) * kRho + lane] = wc[ii];
          }
          __syncthreads();
          if (warp < half) {
#pragma unroll
            for (int ii = 0; ii < NI; ++ii)
              wc[ii] += red[(warp * NI + ii) * kRho + lane];
          }
        }
        if (warp == 0) {
#pragma unroll
          for (int ii = 0; ii < NI; ++ii)
            WC[(i0 + ii) * kPadded + lane] = wc[ii];
        }
      }
      Ek[warp * kRho + lane] = ek;
      __syncthreads();

      // Per point of the tile: its energy and force, in float64.
      if (tid < 3 * kRho) {
        const int s = tid / kRho, p = tid % kRho;
        const index_t gp = g0[s] + p;
        if (gp < n) {
          double energy = 0;
          if (s == 1) {
            energy = static_cast<double>(Ej[p]);
          } else {
            const T* E = s == 0 ? Ei : Ek;
            for (int w = 0; w < kWarps; ++w)
              energy += static_cast<double>(E[w * kRho + p]);
          }
          double f[3] = {0, 0, 0};
          double xp[3];
#pragma unroll
          for (int c = 0; c < 3; ++c)
            xp[c] = static_cast<double>(xs[(s * 3 + c) * kRho + p]);
            // The two other strips and the W of each pair with this point.
#pragma unroll
          for (int o = 0; o < 2; ++o) {
            const int s2 = s == 0 ? 1 + o : s == 1 ? 2 * o : o;  // (1,2) (0,2) (0,1)
            for (int r = 0; r < kRho; ++r) {
              double w;
              if (s == 0) {
                w = s2 == 1 ? WA[r * kPadded + p] : WC[p * kPadded + r];
              } else if (s == 1) {
                w = s2 == 0 ? WA[p * kPadded + r] : WB[p * kPadded + r];
              } else {
                w = s2 == 0 ? WC[r * kPadded + p] : WB[r * kPadded + p];
              }
              if (w == 0) continue;
              if (k.cell.kind) {
                // The image the pair's r² had: the difference in T, as the CPU tiles.
                T dv[3];
#pragma unroll
                for (int c = 0; c < 3; ++c)
                  dv[c] = xs[(s * 3 + c) * kRho + p] - xs[(s2 * 3 + c) * kRho + r];
                k.cell.image(dv[0], dv[1], dv[2]);
#pragma unroll
                for (int c = 0; c < 3; ++c)
                  f[c] -= 2 * w * static_cast<double>(dv[c]);
                continue;
              }
#pragma unroll
              for (int c = 0; c < 3; ++c)
                f[c] -= 2 * w * (xp[c] - static_cast<double>(xs[(s2 * 3 + c) * kRho + r]));
            }
          }
          exact_add_device(k.sums + gp * kExactLimbs, energy);
#pragma unroll
          for (int c = 0; c < 3; ++c)
            exact_add_device(k.sums + (n + 3 * gp + c) * kExactLimbs, f[c]);
        }
      } else if (warp == kWarps - 1) {
        // The tile's total: Σ_j of the energies of j, in a fixed order.
        const double total = warp_sum(static_cast<double>(Ej[lane]));
        if (lane == 0) exact_add_device(k.sums + 4 * n * kExactLimbs, total);
      }
    }
}

// bench's dummy: each block unranks its tile once (thread 0, shared with the
// block, as the potential kernel does) and does nothing else; a sum nobody reads
// keeps the map from being optimised away.
template <typename T, typename Map>
__global__ void __launch_bounds__(kThreads) dummy3_kernel(const TripletParams<T> k) {
  __shared__ SharedTile st;
  index_t acc = 0;
  const mapping::Grid g = k.grid;
  int parity = 0;
  for (index_t by = blockIdx.y; by < g.y; by += gridDim.y)
    for (index_t bx = blockIdx.x; bx < g.x; bx += gridDim.x) {
      mapping::Tile3 t;
      const bool ok = block_tile<Map>(k.dom, g, bx, by, parity, st, &t);
      parity ^= 1;
      if (ok) acc += t.layer + t.row + t.col + threadIdx.x;
    }
  if (acc == ~index_t(0)) k.sums[0] = acc;
}

// Propagates the carries of `slots` sums (exact_normalise), so the next
// chunk's additions have their room again.
__global__ void normalise_sums(unsigned long long* limbs, index_t slots) {
  const index_t s = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (s < slots) exact_normalise(reinterpret_cast<std::int64_t*>(limbs + s * kExactLimbs));
}

// The launch of a map's grid: at most CUDA's limits in x and y (the kernels
// stride over the rest).
dim3 launch_grid(const mapping::Grid& g) {
  return dim3(static_cast<unsigned>(std::min<index_t>(g.x, 0x7fffffff)),
              static_cast<unsigned>(std::min<index_t>(g.y, 65535)));
}

// The two-halves kernel (NI = 16) is the faster one on an H100
// (docs/performance.md); TDSOLVE_TRIPLET_NI=32 picks the other, to measure it.
int triplet_ni() {
  return knobs::choice("TDSOLVE_TRIPLET_NI", {"16", "32"}) == 1 ? 32 : 16;
}

template <typename T, typename Map, typename Eval, typename E, int NI>
void launch_potential_ni(const TripletParams<T>& k, const Eval& ev, cudaStream_t s) {
  const size_t shared = shared_elements(NI) * sizeof(T);
  static bool configured = false;
  if (!configured) {
    check(
        cudaFuncSetAttribute(triplet_kernel<T, Map, Eval, E, NI>,
                             cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared)),
        "cudaFuncSetAttribute (triplet kernel shared memory)");
    configured = true;
  }
  const dim3 grid = launch_grid(k.grid);
  if (grid.x == 0 || grid.y == 0) return;
  triplet_kernel<T, Map, Eval, E, NI><<<grid, kThreads, shared, s>>>(k, ev, ev.has_cutoff());
}

template <typename T, typename Map, typename Eval, typename E>
void launch_potential(const TripletParams<T>& k, const Eval& ev, cudaStream_t s) {
  static const int ni = triplet_ni();
  if (ni == 32) return launch_potential_ni<T, Map, Eval, E, 32>(k, ev, s);
  launch_potential_ni<T, Map, Eval, E, 16>(k, ev, s);
}

template <typename T>
void launch_triplets(const Problem<T>& p, const TripletParams<T>& k, const AtmTypeTable<T>& typed,
                     cudaStream_t s) {
  dispatch_map3(p.map, [&](auto map) {
    using Map = decltype(map);
    if (p.three_body.kernel == TripletKernel::dummy) {
      const dim3 grid = launch_grid(k.grid);
      if (grid.x > 0 && grid.y > 0) dummy3_kernel<T, Map><<<grid, kThreads, 0, s>>>(k);
      return;
    }
    dispatch_potential<T>(p.three_body.potential, typed, [&](const auto& ev) {
      using Eval = std::decay_t<decltype(ev)>;
      epi::dispatch_triplet(p.epilogue,
                            [&](auto e) { launch_potential<T, Map, Eval, decltype(e)>(k, ev, s); });
    });
  });
}

template <typename T>
class CudaTripletBackend final : public Backend<T> {
 public:
  CudaTripletBackend(const Problem<T>& p, const CudaOptions& o)
      : p_(p),
        o_(o),
        device_(pick_device(o)),
        store_(p.stores_values()),
        sum_words_(triplet_sum_slots(p.rows) * kExactLimbs) {
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, device_), "cudaGetDeviceProperties");
    name_ = prop.name;
    if (p.rho != kRho)
      throw UsageError("--backend cuda computes triplets in tiles of 32 (--block 32)");
    x_.upload(p.a, "the points");
    if (p.culled) tiles_.upload(p.cull.tiles, "the culled domain's tiles");
    if (p.three_body.potential.atm.types > 0) {  // typed ATM: the points' types and ν in T
      types_.upload(p.three_body.types, "the points' types");
      nu_.upload(std::vector<T>(p.three_body.nu.begin(), p.three_body.nu.end()), "the nu table");
      typed_ = AtmTypeTable<T>{types_.get(), nu_.get(), p.three_body.potential.atm.types};
    }
    // The running sums stay on the device (every chunk adds to them, then
    // they are normalised); each chunk's snapshot of them, taken on the
    // compute stream before the next chunk adds, goes to the host. So the
    // host adds nothing a chunk, and a checkpoint's sums are exactly those
    // of the chunks handed over (a chunk in flight is in the other buffer).
    running_.allocate(sum_words_, "the triplet sums");
    check(cudaMemset(running_.get(), 0, sum_words_ * sizeof(unsigned long long)),
          "cudaMemset (triplet sums)");
    for (int s = 0; s < 2; ++s) {
      device_sums_[s].allocate(sum_words_, "the triplet sums");
      host_sums_[s].allocate(sum_words_, "the triplet sums");
    }
  }
  ~CudaTripletBackend() override { cudaDeviceSynchronize(); }

  std::string describe() const override {
    return "cuda (" + name_ + ", device " + std::to_string(device_) + ", " +
           (p_.map == MapKind::bb ? "bounding-cube (BB-3D)" : "λ3") + " grid)";
  }
  index_t max_chunk_elements() const override {
    return chunk_limit(o_, keep_on_device_, sizeof(T));
  }
  void reserve(index_t elements) override {
    if (!store_) return;
    for (int s = 0; s < 2; ++s) {
      device_out_[s].allocate(elements, "a chunk of triplet energies");
      if (!keep_on_device_) host_out_[s].allocate(elements, "a chunk of triplet energies");
    }
  }
  void keep_on_device(bool keep) override { keep_on_device_ = keep; }

  void submit(const ChunkJob& job) override {
    fault_point(Stage::compute, job.chunk);
    const int s = static_cast<int>(submitted_++ % 2);
    chunk_[s] = job.chunk;
    TripletParams<T> k;
    k.x = x_.get();
    k.dom = p_.triplet_domain();
    if (p_.culled) {  // Lambda3Map walks the list: the tiles on the device, the starts here
      k.dom.tiles = tiles_.get();
      k.dom.tile_start = p_.cull.tile_start.data();
    }
    dispatch_map3(
        p_.map, [&](auto map) { k.grid = decltype(map)::grid(k.dom, job.row_begin, job.row_end); });
    k.out_offset = k.dom.elements_before(job.row_begin);
    k.out = store_ ? device_out_[s].get() : nullptr;
    k.sums = running_.get();
    k.cell = p_.cell3();
    check(cudaStreamWaitEvent(compute_.s, copied_[s].e, 0), "cudaStreamWaitEvent");
    check(cudaEventRecord(kernel_start_[s].e, compute_.s), "cudaEventRecord");
    launch_triplets<T>(p_, k, typed_, compute_.s);
    check(cudaGetLastError(), "kernel launch");
    const index_t slots = sum_words_ / kExactLimbs;
    normalise_sums<<<static_cast<unsigned>((slots + 255) / 256), 256, 0, compute_.s>>>(
        running_.get(), slots);
    check(cudaGetLastError(), "kernel launch (normalise sums)");
    check(cudaMemcpyAsync(device_sums_[s].get(), running_.get(),
                          sum_words_ * sizeof(unsigned long long), cudaMemcpyDeviceToDevice,
                          compute_.s),
          "cudaMemcpyAsync (triplet sums snapshot)");
    check(cudaEventRecord(kernel_stop_[s].e, compute_.s), "cudaEventRecord");
    check(cudaStreamWaitEvent(copy_.s, kernel_stop_[s].e, 0), "cudaStreamWaitEvent");
    check(cudaEventRecord(copy_start_[s].e, copy_.s), "cudaEventRecord");
    if (!keep_on_device_) {
      check(
          cudaMemcpyAsync(host_sums_[s].get(), device_sums_[s].get(),
                          sum_words_ * sizeof(unsigned long long), cudaMemcpyDeviceToHost, copy_.s),
          "cudaMemcpyAsync (triplet sums to host)");
      if (store_)
        check(cudaMemcpyAsync(host_out_[s].get(), device_out_[s].get(), job.elements * sizeof(T),
                              cudaMemcpyDeviceToHost, copy_.s),
              "cudaMemcpyAsync (device to host)");
    }
    check(cudaEventRecord(copied_[s].e, copy_.s), "cudaEventRecord");
  }

  ChunkResult<T> wait() override {
    const int s = static_cast<int>(waited_++ % 2);
    check(cudaEventSynchronize(copied_[s].e), "waiting for a chunk (kernel or copy failed)");
    float kernel_ms = 0, copy_ms = 0;
    check(cudaEventElapsedTime(&kernel_ms, kernel_start_[s].e, kernel_stop_[s].e),
          "cudaEventElapsedTime");
    check(cudaEventElapsedTime(&copy_ms, copy_start_[s].e, copied_[s].e), "cudaEventElapsedTime");
    kernel_s_ += kernel_ms * 1e-3;
    copy_s_ += copy_ms * 1e-3;
    fault_point(Stage::copy, chunk_[s]);
    ChunkResult<T> r;
    if (!keep_on_device_) {
      r.sums = reinterpret_cast<const std::int64_t*>(host_sums_[s].get());
      r.sums_running = true;
      if (store_) r.values = host_out_[s].get();
    }
    return r;
  }

  double compute_seconds() const override { return kernel_s_; }
  double transfer_seconds() const override { return copy_s_; }
  void reset_timers() override { kernel_s_ = copy_s_ = 0; }
  std::vector<typename Backend<T>::Ceiling> write_ceilings(const std::vector<index_t>&) override {
    return {};
  }

 private:
  const Problem<T>& p_;
  CudaOptions o_;
  int device_;
  bool store_;
  index_t sum_words_;
  std::string name_;
  bool keep_on_device_ = false;
  DeviceBuffer<T> x_;
  DeviceBuffer<std::uint32_t> tiles_;  // a culled domain's list
  DeviceBuffer<std::int32_t> types_;   // typed ATM: each point's type
  DeviceBuffer<T> nu_;                 // ... and the ν table
  AtmTypeTable<T> typed_;
  DeviceBuffer<T> device_out_[2];
  PinnedBuffer<T> host_out_[2];
  DeviceBuffer<unsigned long long> running_;         // every chunk's sums so far
  DeviceBuffer<unsigned long long> device_sums_[2];  // a chunk's snapshot of running_
  PinnedBuffer<unsigned long long> host_sums_[2];
  Stream compute_, copy_;
  Event kernel_start_[2] = {Event(true), Event(true)}, kernel_stop_[2] = {Event(true), Event(true)};
  Event copy_start_[2] = {Event(true), Event(true)}, copied_[2] = {Event(true), Event(true)};
  index_t chunk_[2] = {0, 0};
  index_t submitted_ = 0, waited_ = 0;
  double kernel_s_ = 0, copy_s_ = 0;
};

}  // namespace

template <typename T>
std::unique_ptr<Backend<T>> make_cuda_triplet_backend(const Problem<T>& problem,
                                                      const CudaOptions& options) {
  return std::make_unique<CudaTripletBackend<T>>(problem, options);
}

template std::unique_ptr<Backend<float>> make_cuda_triplet_backend(const Problem<float>&,
                                                                   const CudaOptions&);
template std::unique_ptr<Backend<double>> make_cuda_triplet_backend(const Problem<double>&,
                                                                    const CudaOptions&);

}  // namespace tdsolve::cuda
