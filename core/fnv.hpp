// FNV-1a, 64-bit: the content digests runs compare on --resume (a pair
// command's points, weights and variances; fractal's --input state). Bytes
// are fed in order; hex() is the 16-digit lowercase text the files record.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace tdsolve {

struct Fnv1a64 {
  std::uint64_t h = 0xcbf29ce484222325ull;

  void add(const void* data, std::size_t size) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < size; ++i)
      h = (h ^ bytes[i]) * 0x100000001b3ull;
  }

  std::string hex() const {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return buf;
  }
};

}  // namespace tdsolve
