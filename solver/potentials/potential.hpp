// The three-body potentials `tdsolve triplet --potential` knows: one runtime
// enum, the parameters of each (PotentialSpec: what the options, the file
// and the job identity hold), and dispatch_potential, the one place that
// turns the enum into an evaluator type (potentials/terms.hpp) for the CPU
// tile loop and the CUDA kernels.
#pragma once

#include "solver/potentials/atm.hpp"

namespace tdsolve {

enum class Potential { atm };

inline const char* potential_name(Potential) {
  return "atm";
}

struct PotentialSpec {
  Potential kind = Potential::atm;
  AtmParams atm;  // --potential atm
};

// Calls f(E<T>(params)) with the evaluator of s.kind.
template <typename T, typename F>
decltype(auto) dispatch_potential(const PotentialSpec& s, F&& f) {
  return f(AtmEvaluator<T>(s.atm));
}

}  // namespace tdsolve
