// Shapes, rules and the blocking of a fractal run: parsed and checked here,
// once, so the engines only see values that are known to be sound.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "solver/fractal/fractal.hpp"

namespace tdsolve::fractal {

const std::vector<std::pair<std::string, std::string>>& presets() {
  static const std::vector<std::pair<std::string, std::string>> p = {
      {"sierpinski-triangle", "2:0,0/0,1/1,1"},
      {"sierpinski-carpet", "3:0,0/1,0/2,0/0,1/2,1/0,2/1,2/2,2"},
      {"vicsek", "3:1,0/0,1/1,1/2,1/1,2"},
      {"x-fractal", "3:0,0/2,0/1,1/0,2/2,2"},
      {"h-fractal", "3:0,0/2,0/0,1/1,1/2,1/0,2/2,2"},
      {"cantor-dust", "3:0,0/2,0/0,2/2,2"},
  };
  return p;
}

namespace {

bool parse_int(const std::string& t, long lo, long hi, long* v) {
  if (t.empty() || t.size() > 6) return false;
  for (char ch : t)
    if (ch < '0' || ch > '9') return false;
  *v = std::strtol(t.c_str(), nullptr, 10);
  return *v >= lo && *v <= hi;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep))
    out.push_back(cur);
  if (!s.empty() && s.back() == sep) out.emplace_back();
  return out;
}

std::string preset_names() {
  std::string all;
  for (const auto& [name, table] : presets())
    all += (all.empty() ? "" : ", ") + name;
  return all;
}

}  // namespace

Shape parse_shape(const std::string& text) {
  std::string table = text;
  Shape shape;
  shape.name = text;
  const auto preset = std::find_if(presets().begin(), presets().end(),
                                   [&](const auto& p) { return p.first == text; });
  if (preset != presets().end()) {
    table = preset->second;
  } else if (text.find(':') == std::string::npos) {
    throw UsageError("--shape '" + text + "': no such preset (presets: " + preset_names() +
                     "; or give a table S:x,y/x,y/...)");
  }
  const std::string what = "--shape '" + text + "': ";
  const size_t colon = table.find(':');
  long s = 0;
  if (!parse_int(table.substr(0, colon), 2, kMaxFractalSide, &s))
    throw UsageError(what + "the side S (before ':') must be an integer from 2 to " +
                     std::to_string(kMaxFractalSide));
  shape.s = int(s);
  const std::string cells = table.substr(colon + 1);
  if (cells.empty())
    throw UsageError(what + "no filled sub-square: an NBB fractal needs at least one");
  std::set<std::pair<int, int>> seen;
  for (const std::string& cell : split(cells, '/')) {
    const auto xy = split(cell, ',');
    long x = 0, y = 0;
    if (xy.size() != 2 || !parse_int(xy[0], 0, 1 << 20, &x) || !parse_int(xy[1], 0, 1 << 20, &y))
      throw UsageError(what + "'" + cell + "' is not a sub-square x,y (two integers)");
    if (x >= s || y >= s)
      throw UsageError(what + "sub-square " + cell + " lies outside the " + std::to_string(s) +
                       "×" + std::to_string(s) + " square (x and y run from 0 to " +
                       std::to_string(s - 1) + ")");
    if (!seen.insert({int(x), int(y)}).second)
      throw UsageError(what + "sub-square " + cell +
                       " is listed twice: replicas of an NBB fractal must not overlap");
    shape.cells.emplace_back(int(x), int(y));
  }
  return shape;
}

std::string shape_table(const Shape& shape) {
  std::string t = std::to_string(shape.s) + ":";
  for (size_t i = 0; i < shape.cells.size(); ++i)
    t += (i ? "/" : "") + std::to_string(shape.cells[i].first) + "," +
         std::to_string(shape.cells[i].second);
  return t;
}

int max_level(const Shape& shape) {
  int r = 0;
  std::uint64_t n = 1;
  while (n * std::uint64_t(shape.s) <= (std::uint64_t(1) << 31)) {
    n *= std::uint64_t(shape.s);
    ++r;
  }
  return r;
}

Fractal make_fractal(const Shape& shape, int level) {
  const int top = max_level(shape);
  if (level < 0 || level > top)
    throw UsageError("--level " + std::to_string(level) + ": the embedding of level r has (" +
                     std::to_string(shape.s) + "^r)² cells, which must keep 64-bit indices (" +
                     std::to_string(shape.s) + "^r <= 2^31); levels 0 to " + std::to_string(top) +
                     " fit");
  Fractal f;
  f.k = int(shape.cells.size());
  f.s = shape.s;
  f.levels = level;
  std::fill(std::begin(f.id), std::end(f.id), std::int16_t(-1));
  for (int i = 0; i < f.k; ++i) {
    f.cx[i] = std::uint8_t(shape.cells[i].first);
    f.cy[i] = std::uint8_t(shape.cells[i].second);
    f.id[shape.cells[i].first + f.s * shape.cells[i].second] = std::int16_t(i);
  }
  f.pk[0] = f.ps[0] = 1;
  for (int mu = 1; mu <= level; ++mu) {
    f.pk[mu] = f.pk[mu - 1] * std::uint64_t(f.k);
    f.ps[mu] = f.ps[mu - 1] * std::uint64_t(f.s);
  }
  f.n = f.ps[level];
  f.cells = f.pk[level];
  return f;
}

Rule parse_rule(const std::string& text) {
  const std::string what = "--rule '" + text + "': ";
  std::string t;
  for (char ch : text)
    t += char(std::toupper(static_cast<unsigned char>(ch)));
  const auto parts = split(t, '/');
  Rule r;
  bool have_b = false, have_s = false;
  if (parts.size() != 2)
    throw UsageError(what + "expected B<digits>/S<digits>, such as B3/S23 (Conway's Life)");
  for (const std::string& p : parts) {
    if (p.empty() || (p[0] != 'B' && p[0] != 'S'))
      throw UsageError(what + "expected B<digits>/S<digits>, such as B3/S23 (Conway's Life)");
    bool& have = p[0] == 'B' ? have_b : have_s;
    if (have) throw UsageError(what + "'" + p.substr(0, 1) + "' is given twice");
    have = true;
    std::uint16_t& mask = p[0] == 'B' ? r.birth : r.survive;
    for (size_t i = 1; i < p.size(); ++i) {
      if (p[i] < '0' || p[i] > '8')
        throw UsageError(what + "'" + std::string(1, p[i]) +
                         "' is no neighbour count (counts are the digits 0 to 8)");
      mask |= std::uint16_t(1u << (p[i] - '0'));
    }
  }
  return r;
}

std::string rule_text(const Rule& rule) {
  std::string t = "B";
  for (int c = 0; c <= 8; ++c)
    if (rule.birth >> c & 1) t += char('0' + c);
  t += "/S";
  for (int c = 0; c <= 8; ++c)
    if (rule.survive >> c & 1) t += char('0' + c);
  return t;
}

std::uint64_t RandomInit::threshold() const {
  return std::uint64_t(std::ldexp(density, 53));
}

const char* strategy_name(Strategy s) {
  switch (s) {
    case Strategy::bb:
      return "bb";
    case Strategy::lambda:
      return "lambda";
    case Strategy::nu:
      return "nu";
  }
  return "?";
}

Blocking make_blocking(const Fractal& f, std::uint64_t rho) {
  Blocking b;
  std::uint64_t side = 1;
  int levels = 0;
  while (side < rho && levels < f.levels) {
    side *= std::uint64_t(f.s);
    ++levels;
  }
  if (side != rho || rho > kMaxRho)
    throw UsageError("--rho " + std::to_string(rho) +
                     ": must be a power of s = " + std::to_string(f.s) + ", at most " +
                     std::to_string(kMaxRho) + " and no larger than n = " + std::to_string(f.n));
  b.b = levels;
  b.rho = rho;
  b.local = f.pk[levels];
  b.coarse_levels = f.levels - levels;
  b.coarse = f.pk[f.levels - levels];
  return b;
}

std::uint64_t default_rho(const Fractal& f) {
  std::uint64_t rho = 1;
  for (int l = 0; l < f.levels && rho * std::uint64_t(f.s) <= 32; ++l)
    rho *= std::uint64_t(f.s);
  return rho;
}

LocalTables local_tables(const Fractal& f, const Blocking& b) {
  LocalTables t;
  t.lx.resize(b.local);
  t.ly.resize(b.local);
  t.nu.assign(b.rho * b.rho, -1);
  for (std::uint64_t c = 0; c < b.local; ++c) {
    std::uint64_t x, y;
    mapping::fractal_lambda(f, c, b.b, &x, &y);
    t.lx[c] = std::uint16_t(x);
    t.ly[c] = std::uint16_t(y);
    t.nu[y * b.rho + x] = std::int32_t(c);
  }
  return t;
}

std::uint64_t state_bytes(const Fractal& f, Strategy s) {
  return 2 * (s == Strategy::nu ? f.cells : f.n * f.n);
}

}  // namespace tdsolve::fractal
