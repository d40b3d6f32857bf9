// The three-body potentials `tdsolve triplet --potential` knows: one runtime
// enum, the parameters of each (PotentialSpec: what the options, the file
// and the job identity hold), and dispatch_potential, the one place that
// turns the enum into an evaluator type (potentials/terms.hpp) for the CPU
// tile loop and the CUDA kernels.
#pragma once

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

// Calls f(E<T>(params)) with the evaluator of s.kind.
template <typename T, typename F>
decltype(auto) dispatch_potential(const PotentialSpec& s, F&& f) {
  if (s.kind == Potential::sw) return f(SwEvaluator<T>(s.sw));
  return f(AtmEvaluator<T>(s.atm));
}

}  // namespace tdsolve
