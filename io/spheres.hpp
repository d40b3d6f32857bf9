// Spheres for `tdsolve collide`: n rows of DIM centre coordinates and a
// radius (n × 2 for 1-D, n × 4 for 3-D), and their generator
// --generate spheres:N:DIM:SEED[:RMAX] (defined in input.cpp, beside
// uniform:N:D[:SEED]).
#pragma once

#include <cstdint>
#include <string>

#include "io/input.hpp"

namespace tdsolve::io {

struct SpheresSpec {
  index_t n = 0, dim = 0;  // dim: 1 or 3
  std::uint64_t seed = 0;
  double rmax = 0;  // as given, or default_rmax(n, dim)
};

// Whether a --generate spec names the spheres generator.
bool is_spheres_spec(const std::string& spec);

// The RMAX for which a sphere has 2 overlapping partners on average (away
// from the unit box's faces): 1/(n-1) in 1-D, (pi (n-1))^(-1/3) in 3-D.
double default_rmax(index_t n, index_t dim);

// spheres:N:DIM:SEED[:RMAX]: DIM 1 or 3, N >= 2, RMAX finite and >= 1e-300;
// UsageError otherwise.
SpheresSpec parse_spheres(const std::string& spec);

// n × (DIM + 1): the centres are the points of uniform:N:DIM:SEED, the
// radii RMAX (1 - u) for u uniform in [0, 1) from a second SplitMix64
// stream of SEED, so in (0, RMAX]. Row i depends on (SEED, i) alone. The
// source records RMAX (%.17g), so it names the exact spheres.
PointSet generate_spheres(const SpheresSpec& s);

}  // namespace tdsolve::io
