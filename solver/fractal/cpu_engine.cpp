// The CPU engine: the same coarse cells and local tables as the CUDA
// kernels, one OpenMP iteration per coarse cell (bb: per embedding row).
#include <omp.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "solver/fractal/fractal.hpp"

namespace tdsolve::fractal {

namespace {

class CpuEngine final : public Engine {
 public:
  CpuEngine(const Fractal& f, const Rule& rule, const EngineOptions& o)
      : f_(f),
        rule_(rule),
        o_(o),
        blk_(make_blocking(f, o.rho ? o.rho : default_rho(f))),
        tables_(local_tables(f, blk_)) {
    const std::uint64_t size = o.strategy == Strategy::nu ? f.cells : f.n * f.n;
    try {
      cur_.assign(size, o.strategy == Strategy::nu ? 0 : kOff);
      next_.assign(size, o.strategy == Strategy::nu ? 0 : kOff);
    } catch (const std::bad_alloc&) {
      throw InputError("not enough host memory for the state (" + std::to_string(2 * size) +
                       " bytes)");
    }
  }

  void set_state(std::uint64_t c0, std::uint64_t count, const std::uint8_t* v) override {
    if (o_.strategy == Strategy::nu) {
      std::memcpy(cur_.data() + c0, v, count);
      return;
    }
#pragma omp parallel for num_threads(o_.threads) schedule(static)
    for (std::int64_t i = 0; i < std::int64_t(count); ++i)
      cur_[embedded(c0 + i)] = v[i];
  }

  void set_random(const RandomInit& init) override {
    const std::uint64_t thr = init.threshold();
#pragma omp parallel for num_threads(o_.threads) schedule(static)
    for (std::int64_t c = 0; c < std::int64_t(f_.cells); ++c) {
      const std::uint8_t v = random_cell(init.seed, thr, std::uint64_t(c));
      cur_[o_.strategy == Strategy::nu ? std::uint64_t(c) : embedded(c)] = v;
    }
  }

  void get_state(std::uint64_t c0, std::uint64_t count, std::uint8_t* v) override {
    if (o_.strategy == Strategy::nu) {
      std::memcpy(v, cur_.data() + c0, count);
      return;
    }
#pragma omp parallel for num_threads(o_.threads) schedule(static)
    for (std::int64_t i = 0; i < std::int64_t(count); ++i)
      v[i] = cur_[embedded(c0 + i)];
  }

  std::uint64_t live() override {
    std::uint64_t sum = 0;
    const std::int64_t size = std::int64_t(cur_.size());
#pragma omp parallel for num_threads(o_.threads) reduction(+ : sum) schedule(static)
    for (std::int64_t i = 0; i < size; ++i)
      sum += cur_[i] == 1;
    return sum;
  }

  void step(int steps, std::uint64_t* live_after) override {
    const auto t0 = std::chrono::steady_clock::now();
    for (int s = 0; s < steps; ++s) {
      switch (o_.strategy) {
        case Strategy::nu:
          live_after[s] = step_nu();
          break;
        case Strategy::lambda:
          live_after[s] = step_lambda();
          break;
        case Strategy::bb:
          live_after[s] = step_bb();
          break;
      }
      cur_.swap(next_);
    }
    seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  double seconds() override {
    return seconds_;
  }
  std::uint64_t device_bytes() const override {
    return 2 * cur_.size();
  }
  std::string describe() const override {
    return "cpu (" + std::to_string(o_.threads) + " thread" + (o_.threads > 1 ? "s" : "") + ")";
  }

 private:
  std::uint64_t embedded(std::uint64_t c) const {
    std::uint64_t x, y;
    mapping::fractal_lambda(f_, c, f_.levels, &x, &y);
    return y * f_.n + x;
  }

  std::uint64_t step_nu() {
    const std::uint8_t* cur = cur_.data();
    std::uint8_t* next = next_.data();
    const int rho = int(blk_.rho), window = (rho + 2) * (rho + 2);
    std::uint64_t sum = 0;
#pragma omp parallel num_threads(o_.threads) reduction(+ : sum)
    {
      std::vector<std::uint8_t> win(window);
#pragma omp for schedule(dynamic, 64)
      for (std::int64_t cc = 0; cc < std::int64_t(blk_.coarse); ++cc) {
        std::int64_t nb[9];
        coarse_neighbourhood(f_, blk_, std::uint64_t(cc), nb);
        for (int i = 0; i < window; ++i)
          win[i] = window_value(cur, i, rho, nb, tables_.nu.data(), blk_.local);
        const std::uint64_t base = std::uint64_t(cc) * blk_.local;
        for (std::uint64_t l = 0; l < blk_.local; ++l) {
          const std::uint8_t v = window_next(win.data(), rho, tables_.lx[l], tables_.ly[l], rule_);
          next[base + l] = v;
          sum += v;
        }
      }
    }
    return sum;
  }

  std::uint64_t step_lambda() {
    const std::uint8_t* cur = cur_.data();
    std::uint8_t* next = next_.data();
    std::uint64_t sum = 0;
#pragma omp parallel for num_threads(o_.threads) schedule(dynamic, 64) reduction(+ : sum)
    for (std::int64_t cc = 0; cc < std::int64_t(blk_.coarse); ++cc) {
      std::uint64_t X, Y;
      mapping::fractal_lambda(f_, std::uint64_t(cc), blk_.coarse_levels, &X, &Y);
      for (std::uint64_t l = 0; l < blk_.local; ++l) {
        const std::uint64_t x = X * blk_.rho + tables_.lx[l], y = Y * blk_.rho + tables_.ly[l];
        const std::uint8_t v = rule_.next(cur[y * f_.n + x], embedded_neighbours(cur, f_.n, x, y));
        next[y * f_.n + x] = v;
        sum += v;
      }
    }
    return sum;
  }

  std::uint64_t step_bb() {
    const std::uint8_t* cur = cur_.data();
    std::uint8_t* next = next_.data();
    const std::uint64_t n = f_.n;
    std::uint64_t sum = 0;
#pragma omp parallel for num_threads(o_.threads) schedule(static) reduction(+ : sum)
    for (std::int64_t y = 0; y < std::int64_t(n); ++y)
      for (std::uint64_t x = 0; x < n; ++x) {
        const std::uint8_t v = cur[y * n + x];
        if (v == kOff) continue;  // next holds kOff there too
        const std::uint8_t w = rule_.next(v, embedded_neighbours(cur, n, x, std::uint64_t(y)));
        next[y * n + x] = w;
        sum += w;
      }
    return sum;
  }

  Fractal f_;
  Rule rule_;
  EngineOptions o_;
  Blocking blk_;
  LocalTables tables_;
  std::vector<std::uint8_t> cur_, next_;
  double seconds_ = 0;
};

}  // namespace

std::unique_ptr<Engine> make_cpu_engine(const Fractal& f, const Rule& rule,
                                        const EngineOptions& o) {
  return std::make_unique<CpuEngine>(f, rule, o);
}

}  // namespace tdsolve::fractal
