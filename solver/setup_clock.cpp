#include "solver/setup_clock.hpp"

#include <chrono>
#include <cstdio>

namespace tdsolve {

namespace {

using Clock = std::chrono::steady_clock;

struct State {
  Clock::time_point last = Clock::now();
  std::vector<std::pair<std::string, double>> phases;
};

State& state() {
  static State s;
  return s;
}

}  // namespace

void setup_start() {
  state().last = Clock::now();
  state().phases.clear();
}

void setup_mark(const char* name) {
  State& s = state();
  const Clock::time_point now = Clock::now();
  const double dt = std::chrono::duration<double>(now - s.last).count();
  s.last = now;
  for (auto& [n, t] : s.phases)
    if (n == name) {
      t += dt;
      return;
    }
  s.phases.emplace_back(name, dt);
}

const std::vector<std::pair<std::string, double>>& setup_phases() {
  return state().phases;
}

std::string setup_json() {
  std::string s = "{";
  for (const auto& [n, t] : state().phases) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%s\"%s\": %.6f", s.size() > 1 ? ", " : "", n.c_str(), t);
    s += buf;
  }
  return s + "}";
}

}  // namespace tdsolve
