// Clean stops (docs/usage.md, "Stopping and resuming"): SIGTERM, SIGINT and
// SIGUSR1 only set a flag; the driver loop looks at it at each chunk
// boundary, where the ranks agree to stop, finish their writes and leave a
// resumable file (exit code kStoppedExitCode). A second signal restores the
// default action and re-raises it: the process ends at once, and the file
// still reads as incomplete.
#pragma once

#include <csignal>

namespace tdsolve {

// "Stopped cleanly, resumable": EX_TEMPFAIL of sysexits.h (try again later).
constexpr int kStoppedExitCode = 75;

void install_stop_signals();
// A run inside another program (solver/commands/in_process.hpp): for its lifetime
// SIGINT (Ctrl-C) asks for the clean stop, a second one ends the process;
// then the program's own handler is back and the flag cleared.
class StopOnInterrupt {
 public:
  StopOnInterrupt();
  ~StopOnInterrupt();
  StopOnInterrupt(const StopOnInterrupt&) = delete;
  StopOnInterrupt& operator=(const StopOnInterrupt&) = delete;

 private:
  struct sigaction* old_;
};
// The first stop signal received (0: none).
int stop_signal();
// "SIGTERM", "SIGUSR1", ...
const char* signal_name(int sig);

}  // namespace tdsolve
