// Morton codes (solver/cull.hpp's order), on the host and the device alike:
// the culled domain's builders on both must order the points the same.
#pragma once

#include <cstdint>

#include "core/types.hpp"

namespace tdsolve {

// The bits of x (below 2^21) spread to every third (second) bit.
TDS_HD std::uint64_t spread3(std::uint64_t x) {
  x &= 0x1fffff;
  x = (x | x << 32) & 0x1f00000000ffffull;
  x = (x | x << 16) & 0x1f0000ff0000ffull;
  x = (x | x << 8) & 0x100f00f00f00f00full;
  x = (x | x << 4) & 0x10c30c30c30c30c3ull;
  x = (x | x << 2) & 0x1249249249249249ull;
  return x;
}
TDS_HD std::uint64_t spread2(std::uint64_t x) {
  x &= 0x1fffff;
  x = (x | x << 16) & 0x0000ffff0000ffffull;
  x = (x | x << 8) & 0x00ff00ff00ff00ffull;
  x = (x | x << 4) & 0x0f0f0f0f0f0f0f0full;
  x = (x | x << 2) & 0x3333333333333333ull;
  x = (x | x << 1) & 0x5555555555555555ull;
  return x;
}

// The Morton code of cell coordinates q[0..dims) of `bits` bits each (bits ×
// dims <= 64): bit b of q[k] at b × dims + (dims − 1 − k), coordinate 0 the
// most significant of each group.
TDS_HD std::uint64_t morton_code(const std::uint64_t* q, int dims, int bits) {
  if (dims == 3 && bits <= 21) return spread3(q[0]) << 2 | spread3(q[1]) << 1 | spread3(q[2]);
  if (dims == 2 && bits <= 21) return spread2(q[0]) << 1 | spread2(q[1]);
  if (dims == 1) return q[0];
  std::uint64_t code = 0;
  for (int b = bits - 1; b >= 0; --b)
    for (int k = 0; k < dims; ++k)
      code = (code << 1) | ((q[k] >> b) & 1u);
  return code;
}

// The bits a coordinate of a Morton code of `dims` coordinates gets (63 in all at most).
TDS_HD int morton_bits(int dims) {
  const int b = 63 / dims;
  return b < 1 ? 1 : b > 21 ? 21 : b;
}

}  // namespace tdsolve
