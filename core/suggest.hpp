// "Did you mean ...?" for a misspelt choice (a metric, a precision, ...):
// the closest of the valid names by edit distance, when it is close enough
// to be a slip of the keyboard.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

namespace tdsolve {

// The edit distance of a and b (insertions, deletions, substitutions and
// swaps of two neighbours, one edit each), case-insensitive (ASCII).
inline std::size_t edit_distance(const std::string& a, const std::string& b) {
  const auto low = [](char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; };
  const std::size_t w = b.size() + 1;
  std::vector<std::size_t> d((a.size() + 1) * w);
  for (std::size_t i = 0; i <= a.size(); ++i)
    d[i * w] = i;
  for (std::size_t j = 0; j <= b.size(); ++j)
    d[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = low(a[i - 1]) != low(b[j - 1]) ? 1 : 0;
      std::size_t e =
          std::min({d[(i - 1) * w + j] + 1, d[i * w + j - 1] + 1, d[(i - 1) * w + j - 1] + cost});
      if (i > 1 && j > 1 && low(a[i - 1]) == low(b[j - 2]) && low(a[i - 2]) == low(b[j - 1]))
        e = std::min(e, d[(i - 2) * w + j - 2] + 1);
      d[i * w + j] = e;
    }
  return d[a.size() * w + b.size()];
}

// The name among `names` closest to `word`, if it is at most a quarter of
// the word's letters away (at least 1, and never a name of 1 or 2 letters:
// those are aliases no typo means); "" when none is.
inline std::string closest_name(const std::string& word, const std::vector<std::string>& names) {
  if (word.size() < 3) return "";
  const std::size_t most = std::max<std::size_t>(1, word.size() / 4);
  std::string best;
  std::size_t least = most + 1;
  for (const std::string& n : names) {
    if (n.size() < 3) continue;
    const std::size_t e = edit_distance(word, n);
    if (e < least) {
      least = e;
      best = n;
    }
  }
  return best;
}

// " (did you mean X?)" for closest_name(word, names), or "".
inline std::string did_you_mean(const std::string& word, const std::vector<std::string>& names) {
  const std::string near = closest_name(word, names);
  return near.empty() ? "" : " (did you mean " + near + "?)";
}

}  // namespace tdsolve
