// `tdsolve info FILE.h5`: what a result file holds and whether it is complete.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

namespace tdsolve::io {

// Exit codes: 0 complete, 3 readable but incomplete (or not a tdsolve
// result); throws InputError when the file cannot be read at all.
constexpr int kInfoComplete = 0;
constexpr int kInfoIncomplete = 3;

// int64 limbs of each exact sum in a triplet file's /progress/sums (4n+1
// rows): kExactLimbs of solver/exact_sum.hpp, which io/ may not include.
constexpr std::uint64_t kTripletSumLimbs = 69;

int describe_result(const std::string& path, std::ostream& out);

}  // namespace tdsolve::io
