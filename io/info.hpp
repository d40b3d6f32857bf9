// `tdsolve info FILE.h5`: what a result file holds and whether it is complete.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

namespace tdsolve::io {

// Exit codes: 0 complete, 3 readable but incomplete, inconsistent or not a
// tdsolve result; throws InputError when the file cannot be read at all (or
// was written by a newer tdsolve). A file's `kind` (or, in files written
// before they recorded one, its datasets) picks its checks from the schema
// (io/schema.hpp).
constexpr int kInfoComplete = 0;
constexpr int kInfoIncomplete = 3;

int describe_result(const std::string& path, std::ostream& out);

}  // namespace tdsolve::io
