#include "solver/signals.hpp"

#include <csignal>
#include <cstring>
#include <initializer_list>

namespace tdsolve {

namespace {

volatile std::sig_atomic_t g_stop = 0;

void on_signal(int sig) {
  if (g_stop != 0) {  // the second one: stop now
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  g_stop = sig;
}

}  // namespace

void install_stop_signals() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGTERM, SIGINT, SIGUSR1})
    sigaction(sig, &sa, nullptr);
}

StopOnInterrupt::StopOnInterrupt() : old_(new struct sigaction) {
  g_stop = 0;
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, old_);
}

StopOnInterrupt::~StopOnInterrupt() {
  sigaction(SIGINT, old_, nullptr);
  delete old_;
  g_stop = 0;
}

int stop_signal() {
  return g_stop;
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    case SIGUSR1:
      return "SIGUSR1";
    default:
      return "a signal";
  }
}

}  // namespace tdsolve
