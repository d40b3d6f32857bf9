// The laboratory's tables, its data and its CPU engine (solver/lab/lab.hpp).
#include "solver/lab/lab.hpp"

#include <chrono>
#include <cmath>

#include "core/error.hpp"

namespace tdsolve::lab {

const char* problem_name(LabProblem p) {
  return p == LabProblem::dummy ? "dummy" : p == LabProblem::edm ? "edm" : "collide";
}

const std::vector<MapInfo>& maps() {
  static const std::vector<MapInfo> table = {
      {MapId::bb, "bb", "bounding box, blocks below the diagonal leave at once"},
      {MapId::ltm_x, "ltm-x", "λ with sqrtf + the papers' ε"},
      {MapId::ltm_n, "ltm-n", "λ with Newton from 0x5f3759df + ε"},
      {MapId::ltm_r, "ltm-r", "λ with rsqrtf + ε"},
      {MapId::ltm_x_raw, "ltm-x-raw", "λ with sqrtf, no fix"},
      {MapId::ltm_n_raw, "ltm-n-raw", "λ with Newton, no fix"},
      {MapId::ltm_r_raw, "ltm-r-raw", "λ with rsqrtf, no fix"},
      {MapId::ltm_x_exact, "ltm-x-exact", "λ with sqrtf + the product's exact correction"},
      {MapId::ltm_n_exact, "ltm-n-exact", "λ with Newton + the product's exact correction"},
      {MapId::ltm, "ltm", "tdsolve's own λ2 (Lambda2Map::tile: tri_root, labels reversed)"},
      {MapId::ltm_x_nodiag, "ltm-x-nodiag", "λ_X + ε on the strict triangle, a diagonal pass"},
      {MapId::ltm_n_nodiag, "ltm-n-nodiag", "λ_N + ε on the strict triangle, a diagonal pass"},
      {MapId::ltm_r_nodiag, "ltm-r-nodiag", "λ_R + ε on the strict triangle, a diagonal pass"},
      {MapId::ltm_nodiag, "ltm-nodiag", "exact λ on the strict triangle, a diagonal pass"},
      {MapId::rb, "rb", "rectangular box (Jung & O'Leary)"},
      {MapId::rec, "rec", "recursive partition (Ries et al.), 1 + ceil(log2 m) passes"},
      {MapId::utm, "utm", "upper-triangular map (Avril et al.), as published"},
      {MapId::utm_exact, "utm-exact", "UTM with exact integer argument and steps"},
      {MapId::utm_nodiag, "utm-nodiag", "published UTM on the strict triangle, a diagonal pass"},
  };
  return table;
}

MapId parse_map(const std::string& name) {
  std::string names;
  for (const MapInfo& m : maps()) {
    if (name == m.name) return m.id;
    names += names.empty() ? "" : ", ";
    names += m.name;
  }
  throw UsageError("--maps: unknown map '" + name + "' (maps: " + names + ", or all)");
}

const char* map_name(MapId id) {
  for (const MapInfo& m : maps())
    if (m.id == id) return m.name;
  return "?";
}

std::vector<MapId> default_maps() {
  return {MapId::bb,  MapId::ltm_x, MapId::ltm_n, MapId::ltm_r,
          MapId::ltm, MapId::rb,    MapId::rec,   MapId::utm};
}

index_t launched_blocks(MapId map, index_t m) {
  return dispatch_lab_map(map, [&](auto M) { return lab_launch<decltype(M)>(m).blocks(); });
}

namespace {

// splitmix64 of (seed, index) scaled to [0, 1): the same data on any engine.
float uniform(std::uint64_t seed, std::uint64_t index) {
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + index + 0x632BE59BD9B4E019ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  x ^= x >> 31;
  return static_cast<float>(static_cast<double>(x >> 40) * 0x1p-24);
}

}  // namespace

std::vector<float> lab_data(const LabCase& c) {
  std::vector<float> data;
  if (c.problem == LabProblem::edm) {
    data.resize(c.n * c.features);
    for (index_t e = 0; e < data.size(); ++e)
      data[e] = uniform(14, e);
  } else if (c.problem == LabProblem::collide) {
    // Expected partners of a sphere with radii uniform in (0, R]: 2πnR³ in
    // 3-D, 2nR in 1-D (E[(r_i + r_j)^3] = 1.5 R³); R for about 2.
    const double n = static_cast<double>(c.n);
    const float rmax = static_cast<float>(c.features == 3 ? std::cbrt(1.0 / (M_PI * n)) : 1.0 / n);
    const int stride = c.features + 1;
    data.resize(c.n * stride);
    for (index_t i = 0; i < c.n; ++i) {
      for (int k = 0; k < c.features; ++k)
        data[i * stride + k] = uniform(15, i * stride + k);
      data[i * stride + c.features] = rmax * (1.0f - uniform(16, i));  // (0, rmax]
    }
  }
  return data;
}

namespace {

// The CPU engine: the same passes, blocks and threads, one after another.
// For checking the maps and the problems where there is no GPU; its times
// say nothing about the maps.
class CpuLab final : public LabEngine {
 public:
  std::string describe() const override { return "cpu (the laboratory's reference loops)"; }

  void prepare(const LabCase& c, const std::vector<float>& data, bool check) override {
    c_ = c;
    data_ = data;
    if (c.problem == LabProblem::edm) out_.assign(c.n * c.n, 0.0f);
    if (check) cover_.assign(c.n * c.n, 0u);
  }

  std::vector<double> time(MapId map, int repeat) override {
    std::vector<double> ms;
    for (int r = 0; r <= repeat; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      run(map, false);
      const auto t1 = std::chrono::steady_clock::now();
      if (r > 0) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    return ms;
  }

  LabCheck check(MapId map) override {
    LabCheck k;
    k.done = true;
    std::fill(cover_.begin(), cover_.end(), 0u);
    k.count = run(map, true);
    const index_t n = c_.n;
    for (index_t r = 0; r < n; ++r)
      for (index_t c = 0; c < n; ++c)
        k.wrong += cover_[r * n + c] != (r < c ? 1u : 0u);
    if (c_.problem == LabProblem::collide) {
      const int s = c_.features + 1;
      for (index_t r = 0; r < n; ++r)
        for (index_t c = r + 1; c < n; ++c)
          k.reference += c_.features == 1 ? spheres_overlap<1>(&data_[r * s], &data_[c * s])
                                          : spheres_overlap<3>(&data_[r * s], &data_[c * s]);
    }
    return k;
  }

  void release() override {
    data_.clear();
    out_.clear();
    cover_.clear();
  }

 private:
  // One launch of every pass; returns collide's count.
  std::uint64_t run(MapId map, bool cover) {
    return dispatch_lab_map(map, [&](auto M) {
      using Map = decltype(M);
      const index_t m = c_.m(), b = static_cast<index_t>(c_.block), n = c_.n;
      const v::Launch l = lab_launch<Map>(m);
      std::uint64_t count = 0;
      for (int p = 0; p < l.count; ++p) {
        const v::Pass& pass = l.pass[p];
        for (index_t by = 0; by < pass.y; ++by)
          for (index_t bx = 0; bx < pass.x; ++bx) {
            index_t i, j;
            if (!lab_tile<Map>(m, pass, bx, by, &i, &j)) continue;
            for (index_t ty = 0; ty < b; ++ty)
              for (index_t tx = 0; tx < b; ++tx) {
                const index_t r = i * b + ty, c = j * b + tx;
                if (!(r < c && c < n)) continue;
                if (cover) ++cover_[r * n + c];
                count += element(r, c);
              }
          }
      }
      return count;
    });
  }

  std::uint64_t element(index_t r, index_t c) {
    switch (c_.problem) {
      case LabProblem::dummy:
        if (r + c == kDummyNever) out_.push_back(0.0f);  // never
        return 0;
      case LabProblem::edm:
        out_[r * c_.n + c] = edm(r, c);
        return 0;
      case LabProblem::collide: {
        const int s = c_.features + 1;
        return c_.features == 1 ? spheres_overlap<1>(&data_[r * s], &data_[c * s])
                                : spheres_overlap<3>(&data_[r * s], &data_[c * s]);
      }
    }
    return 0;
  }

  float edm(index_t r, index_t c) const {
    switch (c_.features) {
      case 1:
        return edm_value<1>(data_.data(), r, c);
      case 2:
        return edm_value<2>(data_.data(), r, c);
      case 3:
        return edm_value<3>(data_.data(), r, c);
      default:
        return edm_value<4>(data_.data(), r, c);
    }
  }

  LabCase c_;
  std::vector<float> data_, out_;
  std::vector<unsigned> cover_;
};

}  // namespace

std::unique_ptr<LabEngine> make_cpu_lab() {
  return std::make_unique<CpuLab>();
}

}  // namespace tdsolve::lab
