#include "io/json.hpp"

#include <cstdlib>
#include <cstring>

namespace tdsolve::io {

class JsonParser {
 public:
  explicit JsonParser(const std::string& s) : s_(s) {}

  Json document() {
    Json v = value(0);
    space();
    if (at_ != s_.size()) fail("text after the document");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw JsonError("JSON: " + what + " at byte " + std::to_string(at_));
  }
  void space() {
    while (at_ < s_.size() && std::strchr(" \t\r\n", s_[at_]) && s_[at_] != '\0')
      ++at_;
  }
  char peek() const { return at_ < s_.size() ? s_[at_] : '\0'; }
  void expect(char c) {
    if (peek() != c) fail(std::string("'") + c + "' expected");
    ++at_;
  }
  void word(const char* w) {
    const size_t n = std::strlen(w);
    if (s_.compare(at_, n, w) != 0) fail("unknown word");
    at_ += n;
  }

  Json value(int depth) {
    if (depth >= 64) fail("nesting deeper than 64");
    space();
    Json v;
    const char c = peek();
    if (c == '{') {
      v.type_ = Json::Type::object;
      ++at_;
      space();
      if (peek() == '}') {
        ++at_;
        return v;
      }
      for (;;) {
        space();
        if (peek() != '"') fail("a member name (a string) expected");
        std::string key = string();
        for (const auto& m : v.members_)
          if (m.first == key) fail("member \"" + key + "\" given twice");
        space();
        expect(':');
        v.members_.emplace_back(std::move(key), value(depth + 1));
        space();
        if (peek() == ',') {
          ++at_;
          continue;
        }
        expect('}');
        return v;
      }
    }
    if (c == '[') {
      v.type_ = Json::Type::array;
      ++at_;
      space();
      if (peek() == ']') {
        ++at_;
        return v;
      }
      for (;;) {
        v.items_.push_back(value(depth + 1));
        space();
        if (peek() == ',') {
          ++at_;
          continue;
        }
        expect(']');
        return v;
      }
    }
    if (c == '"') {
      v.type_ = Json::Type::string;
      v.string_ = string();
      return v;
    }
    if (c == 't' || c == 'f') {
      v.type_ = Json::Type::boolean;
      v.bool_ = c == 't';
      word(v.bool_ ? "true" : "false");
      return v;
    }
    if (c == 'n') {
      word("null");
      return v;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      v.type_ = Json::Type::number;
      v.number_ = number();
      return v;
    }
    fail(at_ < s_.size() ? "a value expected" : "unexpected end");
  }

  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  double number() {
    const size_t start = at_;
    const auto digits = [&] {
      const size_t from = at_;
      while (peek() >= '0' && peek() <= '9')
        ++at_;
      if (at_ == from) fail("a digit expected");
    };
    if (peek() == '-') ++at_;
    if (peek() == '0')
      ++at_;
    else
      digits();
    if (peek() == '.') {
      ++at_;
      digits();
    }
    if (peek() == 'e' || peek() == 'E') {
      ++at_;
      if (peek() == '+' || peek() == '-') ++at_;
      digits();
    }
    return std::strtod(s_.substr(start, at_ - start).c_str(), nullptr);
  }

  unsigned hex4() {
    unsigned u = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = peek();
      const int d = h >= '0' && h <= '9'   ? h - '0'
                    : h >= 'a' && h <= 'f' ? h - 'a' + 10
                    : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                           : -1;
      if (d < 0) fail("four hex digits expected after \\u");
      u = u * 16 + unsigned(d);
      ++at_;
    }
    return u;
  }

  static void utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xC0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += char(0xE0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    } else {
      out += char(0xF0 | (cp >> 18));
      out += char(0x80 | ((cp >> 12) & 0x3F));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    }
  }

  std::string string() {
    expect('"');
    std::string out;
    for (;;) {
      if (at_ >= s_.size()) fail("unterminated string");
      const char c = s_[at_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("a control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      const char e = peek();
      ++at_;
      static const char kEscaped[] = "\"\\/bfnrt", kMeant[] = "\"\\/\b\f\n\r\t";
      if (const char* x = e ? std::strchr(kEscaped, e) : nullptr) {
        out += kMeant[x - kEscaped];
        continue;
      }
      if (e != 'u') {
        --at_;
        fail("an unknown escape");
      }
      unsigned cp = hex4();
      if (cp >= 0xD800 && cp < 0xDC00) {  // a surrogate pair
        if (peek() != '\\' || at_ + 1 >= s_.size() || s_[at_ + 1] != 'u') fail("a lone surrogate");
        at_ += 2;
        const unsigned lo = hex4();
        if (lo < 0xDC00 || lo >= 0xE000) fail("a lone surrogate");
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
      } else if (cp >= 0xDC00 && cp < 0xE000) {
        fail("a lone surrogate");
      }
      utf8(out, cp);
    }
  }

  const std::string& s_;
  size_t at_ = 0;
};

Json Json::parse(const std::string& text) {
  return JsonParser(text).document();
}

namespace {
const char* type_name(Json::Type t) {
  static const char* names[] = {"null",     "a boolean", "a number",
                                "a string", "an array",  "an object"};
  return names[static_cast<int>(t)];
}
}  // namespace

void Json::need(Type t) const {
  if (type_ != t)
    throw JsonError(std::string("JSON: ") + type_name(t) + " expected, not " + type_name(type_));
}

bool Json::boolean() const {
  need(Type::boolean);
  return bool_;
}
double Json::number() const {
  need(Type::number);
  return number_;
}
const std::string& Json::str() const {
  need(Type::string);
  return string_;
}
const std::vector<Json>& Json::items() const {
  need(Type::array);
  return items_;
}
const std::vector<std::pair<std::string, Json>>& Json::members() const {
  need(Type::object);
  return members_;
}

const Json* Json::find(const std::string& key) const {
  if (type_ != Type::object) return nullptr;
  for (const auto& m : members_)
    if (m.first == key) return &m.second;
  return nullptr;
}

const Json& Json::at(const std::string& key) const {
  const Json* v = find(key);
  if (!v) throw JsonError("JSON: no member \"" + key + "\"");
  return *v;
}

}  // namespace tdsolve::io
