// A small strict JSON reader (RFC 8259) for the one JSON file tdsolve reads:
// the result-file schema (python/tdsolve/schema.json, embedded by the build).
// Whole documents only: no comments, no trailing commas, no duplicate keys,
// no control characters in strings, nesting at most 64 deep. Objects keep
// their members in file order (the schema's orders mean something).
#pragma once

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tdsolve::io {

struct JsonError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Json {
 public:
  enum class Type { null, boolean, number, string, array, object };

  // Throws JsonError naming the byte offset of the first thing wrong.
  static Json parse(const std::string& text);

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::null; }
  bool is_bool() const { return type_ == Type::boolean; }
  bool is_number() const { return type_ == Type::number; }
  bool is_string() const { return type_ == Type::string; }
  bool is_array() const { return type_ == Type::array; }
  bool is_object() const { return type_ == Type::object; }

  // The value as that type; JsonError if it is another.
  bool boolean() const;
  double number() const;
  const std::string& str() const;
  const std::vector<Json>& items() const;
  const std::vector<std::pair<std::string, Json>>& members() const;

  // Object member `key`, or nullptr (also when this is no object).
  const Json* find(const std::string& key) const;
  // Object member `key`; JsonError if there is none.
  const Json& at(const std::string& key) const;

 private:
  friend class JsonParser;
  void need(Type t) const;
  Type type_ = Type::null;
  bool bool_ = false;
  double number_ = 0;
  std::string string_;
  std::vector<Json> items_;
  std::vector<std::pair<std::string, Json>> members_;
};

}  // namespace tdsolve::io
