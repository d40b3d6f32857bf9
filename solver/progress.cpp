#include "solver/progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "core/error.hpp"

namespace tdsolve {

ProgressMode parse_progress(const std::string& s) {
  if (s == "bar") return ProgressMode::bar;
  if (s == "log") return ProgressMode::log;
  if (s == "none") return ProgressMode::none;
  if (s == "auto") return isatty(STDERR_FILENO) ? ProgressMode::bar : ProgressMode::log;
  throw UsageError("--progress must be auto, bar, log or none, not '" + s + "'");
}

std::string human_bytes(double b) {
  const char* unit[] = {"B", "KB", "MB", "GB", "TB", "PB", "EB"};
  int u = 0;
  while (b >= 1000 && u < 6) {
    b /= 1000;
    ++u;
  }
  char s[32];
  std::snprintf(s, sizeof s, u == 0 ? "%.0f %s" : "%.2f %s", b, unit[u]);
  return s;
}

std::string human_seconds(double s) {
  char buf[32];
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%.2f s", s);
  } else {
    const long t = static_cast<long>(s + 0.5);
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
  }
  return buf;
}

Progress::Progress(ProgressMode mode, index_t total, index_t bytes_per_item, index_t base,
                   const char* unit)
    : mode_(mode),
      total_(total),
      item_bytes_(bytes_per_item),
      base_(base),
      unit_(unit),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

void Progress::update(index_t done) {
  if (mode_ == ProgressMode::none) return;
  const auto now = std::chrono::steady_clock::now();
  const double since = std::chrono::duration<double>(now - last_).count();
  // A bar redraws at most 10 times a second; a log line every 10 seconds.
  if (since < (mode_ == ProgressMode::bar ? 0.1 : 10.0) && done < total_) return;
  last_ = now;
  draw(done);
}

void Progress::finish() {
  if (mode_ == ProgressMode::bar && drawn_) std::fputc('\n', stderr);
  std::fflush(stderr);
}

void Progress::draw(index_t done) {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double frac = total_ ? static_cast<double>(done) / total_ : 1.0;
  // Rate and time left from this run's work only (a resume starts at base_).
  const double now = done > base_ ? static_cast<double>(done - base_) : 0;
  const double items = elapsed > 0 ? now / elapsed : 0;
  const double rate = items * static_cast<double>(item_bytes_);
  char per_s[48];
  if (item_bytes_ > 0) {
    std::snprintf(per_s, sizeof per_s, "%s/s", human_bytes(rate).c_str());
  } else {
    std::snprintf(per_s, sizeof per_s, "%.3g %s/s", items, unit_);
  }
  const double left = static_cast<double>(total_ - std::min(done, total_));
  const double eta = now > 0 ? elapsed * left / now : 0;
  if (mode_ == ProgressMode::bar) {
    const int width = 30, filled = static_cast<int>(frac * width);
    std::fprintf(stderr, "\r[%.*s%*s] %5.1f%%  %s  eta %s   ", filled,
                 "##############################", width - filled, "", 100 * frac, per_s,
                 human_seconds(eta).c_str());
  } else {
    std::fprintf(stderr, "tdsolve: progress %5.1f%% (%llu of %llu %s) %s, elapsed %s, eta %s\n",
                 100 * frac, static_cast<unsigned long long>(done),
                 static_cast<unsigned long long>(total_), unit_, per_s,
                 human_seconds(elapsed).c_str(), human_seconds(eta).c_str());
  }
  std::fflush(stderr);
  drawn_ = true;
}

}  // namespace tdsolve
