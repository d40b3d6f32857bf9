#include "solver/fault.hpp"

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "core/error.hpp"

namespace tdsolve {

namespace {
struct Armed {
  bool on = false;
  Stage stage = Stage::read;
  index_t first_chunk = 0;
};
Armed armed;

const char* stage_name(Stage s) {
  switch (s) {
    case Stage::read:
      return "read";
    case Stage::compute:
      return "compute";
    case Stage::copy:
      return "copy";
    case Stage::write:
      return "write";
    case Stage::mark:
      return "mark";
  }
  return "?";
}
}  // namespace

void arm_faults(int rank) {
  armed = Armed{};
  const char* env = std::getenv("TDSOLVE_FAULT");
  if (!env || !*env) return;
  const std::string s = env;
  const size_t a = s.find(':'), b = a == std::string::npos ? a : s.find(':', a + 1);
  const auto bad = [&] {
    return UsageError("TDSOLVE_FAULT='" + s +
                      "': want RANK:CHUNK:STAGE, STAGE one of read, compute, copy, write, mark");
  };
  if (b == std::string::npos) throw bad();
  const std::string r = s.substr(0, a), c = s.substr(a + 1, b - a - 1), st = s.substr(b + 1);
  char* end = nullptr;
  const long which = std::strtol(r.c_str(), &end, 10);
  if (r.empty() || *end || which < 0) throw bad();
  index_t chunk = 0;
  if (c != "*") {
    const unsigned long long v = std::strtoull(c.c_str(), &end, 10);
    if (c.empty() || *end) throw bad();
    chunk = v;
  }
  for (Stage k : {Stage::read, Stage::compute, Stage::copy, Stage::write, Stage::mark}) {
    if (st == stage_name(k)) {
      if (which == rank) armed = Armed{true, k, chunk};
      return;
    }
  }
  throw bad();
}

void fault_point(Stage stage, index_t chunk) {
  if (!armed.on || stage != armed.stage || chunk < armed.first_chunk) return;
  throw std::runtime_error(std::string("injected fault: ") + stage_name(stage) +
                           (stage == Stage::read ? "" : " of chunk " + std::to_string(chunk)) +
                           " (TDSOLVE_FAULT)");
}

}  // namespace tdsolve
