// Where a run's time goes before its first chunk: each phase's wall seconds
// on this rank (rank 0's reach --stats as "setup_s"). A phase is the time
// since the previous mark (or since setup_start), so the marks need not nest.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace tdsolve {

// Restarts the clock (a run's start); the phases recorded so far are dropped.
void setup_start();
// Records the time since the previous mark as phase `name` (added to an
// earlier phase of that name).
void setup_mark(const char* name);
// The phases in the order first marked.
const std::vector<std::pair<std::string, double>>& setup_phases();
// {"name": seconds, ...}
std::string setup_json();

}  // namespace tdsolve
