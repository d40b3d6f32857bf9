// The environment variables tdsolve reads for itself (not MPI's, Slurm's or
// OMP_NUM_THREADS), parsed one way: unset or empty is "not set"; any other
// value outside what the variable takes is a usage error naming the
// variable and its values (exit 2, before any output exists). docs/design.md
// ("Knobs and test hooks") lists every one; test hooks are named
// TDSOLVE_TEST_*.
#pragma once

#include <cerrno>
#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <string>

#include "core/error.hpp"

namespace tdsolve::knobs {

// The value of `name`, or nullopt when unset or empty.
inline std::optional<std::string> text(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

// The index of the value of `name` in `options`, or -1 when unset.
inline int choice(const char* name, std::initializer_list<const char*> options) {
  const auto v = text(name);
  if (!v) return -1;
  std::string list;
  int i = 0;
  for (const char* o : options) {
    if (*v == o) return i;
    list += (i == 0 ? "" : (i + 1 == static_cast<int>(options.size()) ? " or " : ", "));
    list += o;
    ++i;
  }
  throw UsageError(std::string(name) + " must be " + list + ", not '" + *v + "'");
}

// An integer in [lo, hi], or nullopt when unset.
inline std::optional<long long> integer(const char* name, long long lo, long long hi) {
  const auto v = text(name);
  if (!v) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(v->c_str(), &end, 10);
  if (*end || errno || x < lo || x > hi)
    throw UsageError(std::string(name) + " must be an integer from " + std::to_string(lo) + " to " +
                     std::to_string(hi) + ", not '" + *v + "'");
  return x;
}

// A number in (lo, hi], or nullopt when unset.
inline std::optional<double> number(const char* name, double lo, double hi) {
  const auto v = text(name);
  if (!v) return std::nullopt;
  char* end = nullptr;
  const double x = std::strtod(v->c_str(), &end);
  if (*end || !(x > lo && x <= hi))
    throw UsageError(std::string(name) + " must be a number above " + std::to_string(lo) +
                     " and at most " + std::to_string(hi) + ", not '" + *v + "'");
  return x;
}

// A switch that takes 1 (on) or 0 (off); false when unset.
inline bool flag(const char* name) {
  return choice(name, {"0", "1"}) == 1;
}

// Every variable above, parsed once when a run starts (main.cpp, inside
// all_agree), so that a bad value is refused before any output exists,
// whichever path would read it later. docs/design.md has the table.
inline void check_all() {
  text("TDSOLVE_TEST_FAULT");  // its syntax: arm_faults (solver/fault.cpp)
  integer("TDSOLVE_TEST_SLOW_MS", 0, 600000);
  number("TDSOLVE_TEST_CHECKPOINT_S", 0, 1e9);
  choice("TDSOLVE_TEST_LOCK", {"heartbeat"});
  integer("TDSOLVE_TEST_LOCK_DELAY_MS", 0, 600000);
  integer("TDSOLVE_TEST_CULL_CAP", 1, 1ll << 31);
  flag("TDSOLVE_TEST_MASKED_ONLY");
  choice("TDSOLVE_TEST_STORE_SCHEDULE", {"strips", "lanes"});
  choice("TDSOLVE_STRIP_ROWS", {"8", "16", "32", "64", "128"});
  choice("TDSOLVE_LAMBDA2_ORDER", {"long", "short"});
  choice("TDSOLVE_HIST_COPIES", {"1", "2", "4", "8"});
  flag("TDSOLVE_HIST_EXACT_ALWAYS");
  choice("TDSOLVE_TRIPLET_NI", {"16", "32"});
  number("TDSOLVE_READ_TIMEOUT_S", 0, 1e6);
}

}  // namespace tdsolve::knobs
