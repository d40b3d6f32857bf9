#include "solver/fault.hpp"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

#include "core/error.hpp"
#include "core/knobs.hpp"

namespace tdsolve {

namespace {
struct Armed {
  bool on = false;
  int slow_ms = 0;
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
    case Stage::kill:
      return "kill";
    case Stage::create:
      return "create";
    case Stage::rename:
      return "rename";
  }
  return "?";
}
}  // namespace

void arm_faults(int rank) {
  armed = Armed{};
  armed.slow_ms = static_cast<int>(knobs::integer("TDSOLVE_TEST_SLOW_MS", 0, 600000).value_or(0));
  const std::optional<std::string> env = knobs::text("TDSOLVE_TEST_FAULT");
  if (!env) return;
  const std::string s = *env;
  const size_t a = s.find(':'), b = a == std::string::npos ? a : s.find(':', a + 1);
  const auto bad = [&] {
    return UsageError(
        "TDSOLVE_TEST_FAULT='" + s +
        "': want RANK:CHUNK:STAGE, STAGE one of read, compute, copy, write, mark, kill, create, "
        "rename");
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
  for (Stage k : {Stage::read, Stage::compute, Stage::copy, Stage::write, Stage::mark, Stage::kill,
                  Stage::create, Stage::rename}) {
    if (st == stage_name(k)) {
      if (which == rank) armed = Armed{true, armed.slow_ms, k, chunk};
      return;
    }
  }
  throw bad();
}

void fault_point(Stage stage, index_t chunk) {
  if (armed.slow_ms > 0 && stage == Stage::write)
    std::this_thread::sleep_for(std::chrono::milliseconds(armed.slow_ms));
  if (!armed.on || stage != armed.stage) return;
  if (stage == Stage::create ? chunk != armed.first_chunk
                             : stage != Stage::rename && chunk < armed.first_chunk)
    return;
  if (stage == Stage::kill || stage == Stage::create || stage == Stage::rename) {
    std::fprintf(stderr, "tdsolve: injected SIGKILL at %s %llu (TDSOLVE_TEST_FAULT)\n",
                 stage_name(stage), static_cast<unsigned long long>(chunk));
    std::fflush(stderr);
    std::raise(SIGKILL);
  }
  throw std::runtime_error(std::string("injected fault: ") + stage_name(stage) +
                           (stage == Stage::read ? "" : " of chunk " + std::to_string(chunk)) +
                           " (TDSOLVE_TEST_FAULT)");
}

}  // namespace tdsolve
