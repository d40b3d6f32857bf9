// SplitMix64 (Steele, Lea & Flood 2014): the generators' value of (SEED, k),
// the same on every machine and rank count.
#pragma once

#include <cstdint>

namespace tdsolve::io {

inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The top 53 bits of splitmix64(x) as a double in [0, 1).
inline double unit_double(std::uint64_t x) {
  return static_cast<double>(splitmix64(x) >> 11) * 0x1.0p-53;
}

}  // namespace tdsolve::io
