// Progress on rank 0: a redrawn bar on a terminal, a line every few seconds
// in a batch log (where \r would pile up), or nothing.
#pragma once

#include <chrono>
#include <string>

#include "core/types.hpp"

namespace tdsolve {

enum class ProgressMode { bar, log, none };

// "auto" -> bar when stderr is a terminal, log otherwise.
ProgressMode parse_progress(const std::string& s);

class Progress {
 public:
  // `base` of `total` items were done before this run (a resume); `unit`
  // names the items ("pairs"). Without bytes per item the rate is in items.
  Progress(ProgressMode mode, index_t total, index_t bytes_per_item, index_t base = 0,
           const char* unit = "pairs");
  void update(index_t done);
  void finish();

 private:
  void draw(index_t done);
  ProgressMode mode_;
  index_t total_, item_bytes_, base_;
  const char* unit_;
  std::chrono::steady_clock::time_point start_, last_;
  bool drawn_ = false;
};

std::string human_bytes(double bytes);
std::string human_seconds(double s);

}  // namespace tdsolve
