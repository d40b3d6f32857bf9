// The three-body potentials `tdsolve triplet --potential` knows: one runtime
// enum, the parameters of each (PotentialSpec: what the options, the file
// and the job identity hold), and dispatch_potential, the one place that
// turns the enum into an evaluator type (potentials/terms.hpp) for the CPU
// tile loop and the CUDA kernels.
#pragma once

#include <stdexcept>
#include <utility>

#include "solver/potentials/atm.hpp"
#include "solver/potentials/sw.hpp"

namespace tdsolve {

enum class Potential { atm, sw };

inline const char* potential_name(Potential p) {
  return p == Potential::sw ? "sw" : "atm";
}

struct PotentialSpec {
  Potential kind = Potential::atm;
  AtmParams atm;  // --potential atm
  SwParams sw;    // --potential sw
};

// Calls f(E<T>(params)) with the evaluator of s.kind; ATM with types
// (s.atm.types > 0): AtmTypedEvaluator over `typed` (host or device memory,
// as the caller's tiles read it).
template <typename T, typename F>
decltype(auto) dispatch_potential(const PotentialSpec& s, const AtmTypeTable<T>& typed, F&& f) {
  if (s.kind == Potential::sw) return f(SwEvaluator<T>(s.sw));
  if (s.atm.types > 0) {
    if (typed.count != s.atm.types || !typed.types || !typed.nu)
      throw std::logic_error("dispatch_potential: typed ATM without its type table");
    return f(AtmTypedEvaluator<T>(s.atm, typed));
  }
  return f(AtmEvaluator<T>(s.atm));
}

// The untyped potentials (a typed ATM spec throws: it needs its table).
template <typename T, typename F>
decltype(auto) dispatch_potential(const PotentialSpec& s, F&& f) {
  return dispatch_potential<T>(s, AtmTypeTable<T>{}, std::forward<F>(f));
}

}  // namespace tdsolve
