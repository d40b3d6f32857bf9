// Clean stops (docs/usage.md, "Stopping and resuming"): SIGTERM, SIGINT and
// SIGUSR1 only set a flag; the driver loop looks at it at each chunk
// boundary, where the ranks agree to stop, finish their writes and leave a
// resumable file (exit code kStoppedExitCode). A second signal restores the
// default action and re-raises it: the process ends at once, and the file
// still reads as incomplete.
#pragma once

namespace tdsolve {

// "Stopped cleanly, resumable": EX_TEMPFAIL of sysexits.h (try again later).
constexpr int kStoppedExitCode = 75;

void install_stop_signals();
// The first stop signal received (0: none).
int stop_signal();
// "SIGTERM", "SIGUSR1", ...
const char* signal_name(int sig);

}  // namespace tdsolve
