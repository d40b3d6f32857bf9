#include "io/schema.hpp"

#include <cctype>
#include <limits>
#include <map>
#include <set>

#include "mapping/simplex.hpp"
#include "schema_json.hpp"  // generated from python/tdsolve/schema.json: kSchemaJson

namespace tdsolve::io {

const Json& schema() {
  static const Json s = [] {
    try {
      return Json::parse(kSchemaJson);
    } catch (const JsonError& e) {
      throw SchemaError(std::string("the embedded schema.json: ") + e.what());
    }
  }();
  return s;
}

std::uint64_t schema_version() {
  return static_cast<std::uint64_t>(schema().at("schema_version").number());
}

const Json* schema_kind(const std::string& kind) {
  return schema().at("kinds").find(kind);
}

std::vector<std::string> schema_kinds() {
  std::vector<std::string> v;
  for (const auto& m : schema().at("kinds").members())
    v.push_back(m.first);
  return v;
}

namespace {

std::vector<const Json*> datasets_of(const Json& s, const Json& kind) {
  std::vector<const Json*> v;
  if (const Json* parts = kind.find("parts"))
    for (const Json& p : parts->items())
      for (const Json& d : s.at("parts").at(p.str()).items())
        v.push_back(&d);
  if (const Json* own = kind.find("datasets"))
    for (const Json& d : own->items())
      v.push_back(&d);
  return v;
}

const Json* dataset_of(const Json& s, const Json& kind, const std::string& name) {
  for (const Json* d : datasets_of(s, kind))
    if (d->at("name").str() == name) return d;
  return nullptr;
}

}  // namespace

std::vector<const Json*> schema_datasets(const std::string& kind) {
  const Json* k = schema_kind(kind);
  return k ? datasets_of(schema(), *k) : std::vector<const Json*>{};
}

std::vector<std::string> schema_dims(const std::string& kind, const std::string& name) {
  std::vector<std::string> v;
  const Json* k = schema_kind(kind);
  const Json* d = k ? dataset_of(schema(), *k, name) : nullptr;
  if (const Json* dims = d ? d->find("dims") : nullptr)
    for (const Json& x : dims->items())
      v.push_back(x.str());
  return v;
}

std::vector<std::string> schema_dims(const std::string& kind, const std::string& name, size_t rank,
                                     const std::function<bool(const std::string&)>& exists) {
  const Json* k = schema_kind(kind);
  const Json* d = k ? dataset_of(schema(), *k, name) : nullptr;
  if (!d || !d->find("shape")) return {};
  std::vector<const Json*> forms = {d};  // its own, then its "forms"
  if (const Json* f = d->find("forms"))
    for (const Json& x : f->items())
      forms.push_back(&x);
  const auto dims_of = [](const Json* f) {
    std::vector<std::string> v;
    if (const Json* dims = f->find("dims"))
      for (const Json& x : dims->items())
        v.push_back(x.str());
    return v;
  };
  const Json* first = nullptr;
  for (const Json* f : forms) {
    if (f->at("shape").items().size() != rank) continue;
    if (!first) first = f;
    bool present = true;  // its coordinates: dims that name a dataset of the kind
    for (const std::string& x : dims_of(f))
      present = present && (!dataset_of(schema(), *k, x) || exists(x));
    if (present) return dims_of(f);
  }
  return first ? dims_of(first) : std::vector<std::string>{};
}

namespace {

// The "variants" of dataset `name` of `kind`, or nullptr.
const Json* variants_of(const std::string& kind, const std::string& name) {
  const Json* k = schema_kind(kind);
  const Json* d = k ? dataset_of(schema(), *k, name) : nullptr;
  return d ? d->find("variants") : nullptr;
}

}  // namespace

std::string schema_attr_type(const std::string& kind, const std::string& object,
                             const std::string& attr, const std::string& variant) {
  const Json* k = schema_kind(kind);
  if (!k) return "";
  const Json* t = nullptr;
  if (object.empty()) {
    t = schema().at("root").find(attr);
    if (!t && k->find("root")) t = k->at("root").find(attr);
  } else if (const Json* d = dataset_of(schema(), *k, object)) {
    if (const Json* a = d->find("attrs")) t = a->find(attr);
    const Json* v = d->find("variants");
    if (!t && v && !variant.empty())
      if (const Json* own = v->at("attrs").find(variant)) t = own->find(attr);
  }
  if (!t || !t->is_string()) return "";
  std::string s = t->str();
  if (!s.empty() && s.back() == '?') s.pop_back();
  return s;
}

std::string schema_variant_by(const std::string& kind, const std::string& dataset) {
  const Json* v = variants_of(kind, dataset);
  return v ? v->at("by").str() : std::string();
}

std::string schema_variant(const std::string& kind, const std::string& dataset,
                           const std::string& value) {
  const Json* v = variants_of(kind, dataset);
  if (!v) return "";
  return v->at("attrs").find(value) ? value : v->at("default").str();
}

std::vector<std::pair<std::string, std::string>> schema_variant_attrs(const std::string& kind,
                                                                      const std::string& dataset,
                                                                      const std::string& variant) {
  std::vector<std::pair<std::string, std::string>> out;
  const Json* v = variants_of(kind, dataset);
  const Json* own = v ? v->at("attrs").find(variant) : nullptr;
  if (own)
    for (const auto& [name, t] : own->members())
      out.emplace_back(name, t.str());
  return out;
}

// --- expressions ----------------------------------------------------------

namespace {

constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();

std::uint64_t saturating_pow(std::uint64_t b, std::uint64_t e) {
  std::uint64_t r = 1;
  while (e) {
    if (e & 1) r = (b != 0 && r > kMax / b) ? kMax : r * b;
    e >>= 1;
    if (e) b = (b != 0 && b > kMax / b) ? kMax : b * b;
  }
  return r;
}

bool file_function(const std::string& f) {
  return f == "dim" || f == "exists" || f == "named" || f == "sum" || f == "attr" || f == "at" ||
         f == "rowsum";
}

class ExprParser {
 public:
  ExprParser(const std::string& s, const ExprVar* var, const ExprFile* file)
      : s_(s), var_(var), file_(file), skip_(var == nullptr ? 1 : 0) {}

  std::uint64_t run() {
    const std::uint64_t v = disjunction();
    space();
    if (at_ != s_.size()) fail("unexpected '" + s_.substr(at_) + "'");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw SchemaError("expression \"" + s_ + "\": " + what);
  }
  void space() {
    while (at_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[at_])))
      ++at_;
  }
  bool take(const char* op) {
    space();
    const size_t n = std::char_traits<char>::length(op);
    if (s_.compare(at_, n, op) != 0) return false;
    // "<" is not the start of "<=", nor "!" of "!=".
    if (n == 1 && at_ + 1 < s_.size() && s_[at_ + 1] == '=' &&
        std::string("<>!=").find(op[0]) != std::string::npos)
      return false;
    at_ += n;
    return true;
  }
  bool name_char(char c, bool first) const {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_' ||
           (!first && (std::isdigit(static_cast<unsigned char>(c)) || c == '/'));
  }
  std::string name() {
    space();
    const size_t from = at_;
    if (at_ < s_.size() && name_char(s_[at_], true)) {
      ++at_;
      while (at_ < s_.size() && name_char(s_[at_], false))
        ++at_;
    }
    return s_.substr(from, at_ - from);
  }
  std::string integer_text() {
    space();
    const size_t from = at_;
    while (at_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[at_])))
      ++at_;
    return s_.substr(from, at_ - from);
  }
  std::uint64_t integer(const std::string& t) {
    std::uint64_t v = 0;
    for (const char c : t) {
      const std::uint64_t d = std::uint64_t(c - '0');
      if (v > (kMax - d) / 10) fail("the number " + t + " is past 2^64 - 1");
      v = v * 10 + d;
    }
    return v;
  }

  std::uint64_t disjunction() {
    std::uint64_t v = conjunction();
    while (take("||")) {
      const bool left = v != 0;
      skip_ += left;
      const std::uint64_t r = conjunction();
      skip_ -= left;
      v = left || r != 0;
    }
    return v;
  }
  std::uint64_t conjunction() {
    std::uint64_t v = comparison();
    while (take("&&")) {
      const bool left = v != 0;
      skip_ += !left;
      const std::uint64_t r = comparison();
      skip_ -= !left;
      v = left && r != 0;
    }
    return v;
  }
  std::uint64_t comparison() {
    const std::uint64_t a = sum();
    for (const char* op : {"==", "!=", "<=", ">=", "<", ">"}) {
      if (!take(op)) continue;
      const std::uint64_t b = sum();
      const std::string o = op;
      return o == "=="   ? a == b
             : o == "!=" ? a != b
             : o == "<=" ? a <= b
             : o == ">=" ? a >= b
             : o == "<"  ? a < b
                         : a > b;
    }
    return a;
  }
  std::uint64_t sum() {
    std::uint64_t v = product();
    for (;;) {
      if (take("+"))
        v += product();
      else if (take("-"))
        v -= product();
      else
        return v;
    }
  }
  std::uint64_t product() {
    std::uint64_t v = unary();
    while (take("*"))
      v *= unary();
    return v;
  }
  std::uint64_t unary() {
    if (take("!")) return unary() == 0;
    if (take("(")) {
      const std::uint64_t v = disjunction();
      if (!take(")")) fail("')' expected");
      return v;
    }
    const std::string digits = integer_text();
    if (!digits.empty()) return integer(digits);
    const std::string n = name();
    if (n.empty()) fail(at_ < s_.size() ? "unexpected '" + s_.substr(at_) + "'" : "unexpected end");
    if (!take("(")) {
      if (skip_) return 0;
      std::uint64_t v = 0;
      if (!(*var_)(n, &v)) fail("the size '" + n + "' is not known here");
      return v;
    }
    if (file_function(n)) {
      std::vector<std::string> args;
      do {
        std::string a = integer_text();
        if (a.empty()) a = name();
        if (a.empty()) fail("a name or a number expected as an argument of " + n + "()");
        args.push_back(a);
      } while (take(","));
      if (!take(")")) fail("')' expected");
      const size_t want = n == "dim" || n == "attr" || n == "at" || n == "rowsum" ? 2 : 1;
      if (args.size() != want) fail(n + "() takes " + std::to_string(want) + " arguments");
      return skip_ ? 0 : (*file_)(n, args);
    }
    std::vector<std::uint64_t> args;
    do
      args.push_back(disjunction());
    while (take(","));
    if (!take(")")) fail("')' expected");
    if (n == "C") {
      if (args.size() != 2) fail("C() takes 2 arguments");
      if (skip_) return 0;
      if (args[1] == 2) return mapping::pair_count(args[0]);
      if (args[1] == 3) return mapping::triplet_count(args[0]);
      fail("C(x, k) is known for k = 2 and 3");
    }
    if (n == "pow") {
      if (args.size() != 2) fail("pow() takes 2 arguments");
      return skip_ ? 0 : saturating_pow(args[0], args[1]);
    }
    fail("unknown function " + n + "()");
  }

  const std::string& s_;
  const ExprVar* var_;
  const ExprFile* file_;
  int skip_;
  size_t at_ = 0;
};

}  // namespace

std::uint64_t eval_expr(const std::string& expr, const ExprVar& var, const ExprFile& file) {
  return ExprParser(expr, &var, &file).run();
}

std::string expr_syntax(const std::string& expr) {
  try {
    ExprParser(expr, nullptr, nullptr).run();
    return "";
  } catch (const SchemaError& e) {
    return e.what();
  }
}

// --- the schema's own consistency ----------------------------------------

namespace {

const std::set<std::string> kDtypes = {"uint8", "int64", "uint64", "float32", "float64", "string"};
const std::set<std::string> kAttrTypes = {"uint64", "float64", "string"};

struct Lint {
  const Json& s;
  std::vector<std::string> out;

  void say(const std::string& where, const std::string& what) {
    out.push_back(where + ": " + what);
  }

  void expr(const std::string& where, const Json* e) {
    if (!e || !e->is_string()) return say(where, "an expression (a string) expected");
    const std::string p = expr_syntax(e->str());
    if (!p.empty()) say(where, p);
  }
  void types(const std::string& where, const Json& attrs) {
    if (!attrs.is_object()) return say(where, "attrs must be an object");
    for (const auto& [name, t] : attrs.members()) {
      std::string x = t.is_string() ? t.str() : "";
      if (!x.empty() && x.back() == '?') x.pop_back();
      if (!kAttrTypes.count(x)) say(where + "@" + name, "type must be uint64, float64 or string");
    }
  }
  // "variants": {"by": a string attribute of the dataset, "default": one of
  // them, "attrs": {variant: its own attributes}}, none also common.
  void variants(const std::string& where, const Json& d, const Json& v) {
    const std::string w = where + " variants";
    if (!v.is_object()) return say(w, "must be an object");
    for (const auto& m : v.members())
      if (m.first != "by" && m.first != "default" && m.first != "attrs")
        say(w, "unknown member \"" + m.first + "\"");
    const Json* common = d.find("attrs");
    const Json* by = v.find("by");
    const Json* decl =
        by && by->is_string() && common && common->is_object() ? common->find(by->str()) : nullptr;
    if (!decl || !decl->is_string() || decl->str() != "string")
      say(w, "\"by\" must name a string attribute the dataset declares");
    const Json* attrs = v.find("attrs");
    if (!attrs || !attrs->is_object() || attrs->members().empty())
      return say(w, "\"attrs\" (an object of the variants' attributes) expected");
    for (const auto& [name, own] : attrs->members()) {
      types(w + " " + name, own);
      if (own.is_object() && common && common->is_object())
        for (const auto& m : own.members())
          if (common->find(m.first)) say(w + " " + name, m.first + " is also a common attribute");
    }
    const Json* def = v.find("default");
    if (!def || !def->is_string() || !attrs->find(def->str()))
      say(w, "\"default\" must name one of the variants");
  }

  void dataset(const std::string& where, const Json& d) {
    const Json* name = d.find("name");
    if (!name || !name->is_string()) return say(where, "a dataset without a name");
    const std::string w = where + " /" + name->str();
    if (const Json* a = d.find("attrs")) types(w, *a);
    if (const Json* v = d.find("variants")) variants(w, d, *v);
    const Json* group = d.find("group");
    if (group && group->is_bool() && group->boolean()) return;
    const Json* dt = d.find("dtype");
    if (!dt || !dt->is_array() || dt->items().empty()) return say(w, "no dtype list");
    for (const Json& t : dt->items())
      if (!t.is_string() || !kDtypes.count(t.str())) say(w, "an unknown dtype");
    const Json* shape = d.find("shape");
    if (!shape || !shape->is_array()) return say(w, "no shape list");
    for (const Json& e : shape->items())
      if (!(e.is_string() && e.str() == "*")) expr(w + " shape", &e);
    if (const Json* dims = d.find("dims"))
      if (!dims->is_array() || dims->items().size() != shape->items().size())
        say(w, "dims must name every axis of the shape");
    // Other forms it may take: {"shape": [...], "dims": [...]}, as its own.
    if (const Json* forms = d.find("forms")) {
      if (!forms->is_array()) return say(w, "forms must be a list");
      for (const Json& f : forms->items()) {
        const Json* fs = f.is_object() ? f.find("shape") : nullptr;
        if (!fs || !fs->is_array()) {
          say(w + " form", "a form needs a shape list");
          continue;
        }
        for (const auto& m : f.members())
          if (m.first != "shape" && m.first != "dims")
            say(w + " form", "unknown member \"" + m.first + "\"");
        for (const Json& e : fs->items())
          if (!(e.is_string() && e.str() == "*")) expr(w + " form shape", &e);
        if (const Json* dims = f.find("dims"))
          if (!dims->is_array() || dims->items().size() != fs->items().size())
            say(w + " form", "dims must name every axis of the shape");
      }
    }
  }

  void step(const std::string& where, const Json& st, const Json& kind) {
    if (!st.is_object()) return say(where, "a step must be an object");
    const auto has = [&](const char* k) { return st.find(k) != nullptr; };
    const auto declared = [&](const std::string& ds) {
      if (!dataset_of(s, kind, ds)) say(where, "/" + ds + " is not declared by this kind");
    };
    const auto string = [&](const char* k) -> std::string {
      const Json* v = st.find(k);
      if (!v || !v->is_string()) {
        say(where, std::string("\"") + k + "\" (a string) expected");
        return "";
      }
      return v->str();
    };
    const auto attr_ref = [&](const char* k) {
      const std::string r = string(k);
      const size_t at = r.find('@');
      if (at == std::string::npos)
        return say(where, std::string("\"") + k + "\" must be DATASET@ATTRIBUTE");
      if (at > 0) declared(r.substr(0, at));
    };
    std::set<std::string> allowed = {"when"};
    if (has("when")) expr(where + " when", st.find("when"));
    if (has("let")) {
      allowed.insert({"let", "expr", "attr", "default", "scalar", "message"});
      string("let");
      if (has("expr")) {
        expr(where, st.find("expr"));
      } else if (has("attr")) {
        attr_ref("attr");
        if (has("default"))
          expr(where, st.find("default"));
        else
          string("message");
      } else if (has("scalar")) {
        declared(string("scalar"));
        string("message");
      } else {
        say(where, "a let needs expr, attr or scalar");
      }
    } else if (has("check")) {
      const std::string c = string("check");
      allowed.insert({"check", "message"});
      string("message");
      if (c == "rank" || c == "shape" || c == "exists" || c == "rising" || c == "dtype") {
        allowed.insert("of");
        declared(string("of"));
      }
      if (c == "dtype") {
        const Json* d = st.find("of") && st.at("of").is_string()
                            ? dataset_of(s, kind, st.at("of").str())
                            : nullptr;
        if (d && !d->find("dtype")) say(where, "/" + st.at("of").str() + " declares no dtype");
      }
      if (c == "rank") {
        allowed.insert("rank");
        if (!has("rank") || !st.at("rank").is_number()) say(where, "\"rank\" (a number) expected");
      } else if (c == "shape") {
        allowed.insert({"shape", "missing", "values"});
        const Json* shape = st.find("shape");
        if (!shape || !shape->is_array()) return say(where, "\"shape\" (a list) expected");
        for (const Json& e : shape->items())
          if (!(e.is_string() && e.str() == "*")) expr(where + " shape", &e);
        if (has("values") && !(st.at("values").is_string() && st.at("values").str() == "float64"))
          say(where, "\"values\" may only be \"float64\"");
      } else if (c == "attr") {
        allowed.insert({"attr", "equals"});
        attr_ref("attr");
        expr(where, st.find("equals"));
      } else if (c == "true") {
        allowed.insert("expr");
        expr(where, st.find("expr"));
      } else if (c == "rising" || c == "offsets") {
        allowed.insert("to");
        expr(where, st.find("to"));
      } else if (c == "offsets_multiple") {
        allowed.insert("of");
        expr(where, st.find("of"));
      } else if (c == "each") {
        allowed.insert({"index", "count", "expr"});
        if (string("index").empty()) say(where, "\"index\" (a name) expected");
        expr(where, st.find("count"));
        expr(where, st.find("expr"));
      } else if (c != "exists" && c != "dtype") {
        say(where, "unknown check \"" + c + "\"");
      }
    } else if (has("read")) {
      allowed.insert({"read", "attrs"});
      const std::string ds = string("read");
      declared(ds);
      const Json* d = dataset_of(s, kind, ds);
      const Json* attrs = st.find("attrs");
      if (!attrs || !attrs->is_array()) return say(where, "\"attrs\" (a list) expected");
      for (const Json& a : attrs->items()) {
        const Json* decl =
            d && d->find("attrs") && a.is_string() ? d->at("attrs").find(a.str()) : nullptr;
        // or one a variant declares (read in files of that variant)
        const Json* v = d && a.is_string() ? d->find("variants") : nullptr;
        if (!decl && v && v->is_object() && v->find("attrs") && v->at("attrs").is_object())
          for (const auto& m : v->at("attrs").members())
            if (!decl && m.second.is_object()) decl = m.second.find(a.str());
        if (!decl)
          say(where,
              "attribute " + (a.is_string() ? a.str() : "?") + " of /" + ds + " is not declared");
      }
    } else if (has("open")) {
      allowed.insert("open");
      if (!st.at("open").is_array()) return say(where, "\"open\" (a list) expected");
      for (const Json& x : st.at("open").items())
        if (x.is_string()) declared(x.str());
    } else if (has("progress")) {
      allowed.insert("progress");
      if (string("progress") != "read") say(where, "\"progress\" must be \"read\"");
    } else {
      return say(where, "a step needs let, check, read, open or progress");
    }
    for (const auto& m : st.members())
      if (!allowed.count(m.first)) say(where, "unknown member \"" + m.first + "\"");
  }

  void run() {
    const Json* v = s.find("schema_version");
    if (!v || !v->is_number() || v->number() < 1 ||
        v->number() != double(std::uint64_t(v->number())))
      say("schema", "schema_version must be an integer of 1 or more");
    if (const Json* r = s.find("root"))
      types("root", *r);
    else
      say("schema", "no root attributes");
    const Json* parts = s.find("parts");
    if (!parts || !parts->is_object()) return say("schema", "no parts");
    for (const auto& [name, list] : parts->members()) {
      if (!list.is_array()) return say("part " + name, "must be a list");
      for (const Json& d : list.items())
        dataset("part " + name, d);
    }
    const Json* kinds = s.find("kinds");
    if (!kinds || !kinds->is_object() || kinds->members().empty()) return say("schema", "no kinds");
    for (const auto& [name, k] : kinds->members()) {
      const std::string w = "kind " + name;
      if (!k.is_object()) {
        say(w, "must be an object");
        continue;
      }
      if (const Json* ps = k.find("parts")) {
        if (!ps->is_array()) return say(w, "parts must be a list");
        for (const Json& p : ps->items())
          if (!p.is_string() || !parts->find(p.str())) say(w, "an unknown part");
      }
      if (const Json* r = k.find("root")) types(w + " root", *r);
      if (const Json* ds = k.find("datasets")) {
        if (!ds->is_array()) return say(w, "datasets must be a list");
        for (const Json& d : ds->items())
          dataset(w, d);
      }
      const Json* result = k.find("result");
      if (!result || !result->is_string() || !dataset_of(s, k, result->str()))
        say(w, "result must name a declared dataset");
      const Json* pr = k.find("progress");
      if (!pr || !pr->is_object() || !pr->find("dataset") || !pr->at("dataset").is_array() ||
          pr->at("dataset").items().empty() || !pr->find("chunk") || !pr->at("chunk").is_string())
        say(w, "progress must have a dataset list and a chunk word");
      else if (!(pr->find("offsets") && pr->at("offsets").is_bool() &&
                 !pr->at("offsets").boolean()) &&
               !(pr->find("unit") && pr->at("unit").is_string()))
        say(w, "progress with offsets needs a unit");
      if (const Json* sizes = k.find("sizes")) {
        if (!sizes->is_object()) return say(w, "sizes must be an object");
        for (const auto& m : sizes->members())
          expr(w + " size " + m.first, &m.second);
      }
      const Json* checks = k.find("checks");
      if (!checks || !checks->is_array()) {
        say(w, "no checks");
        continue;
      }
      int reads = 0, i = 0;
      for (const Json& st : checks->items()) {
        step(w + " step " + std::to_string(i++), st, k);
        reads += st.find("progress") != nullptr;
      }
      if (reads != 1) say(w, "the checks must read /progress once");
    }
  }
};

}  // namespace

std::vector<std::string> schema_problems(const Json& s) {
  Lint lint{s, {}};
  try {
    lint.run();
  } catch (const JsonError& e) {
    lint.out.push_back(e.what());
  }
  return lint.out;
}

std::vector<std::string> schema_problems() {
  return schema_problems(schema());
}

}  // namespace tdsolve::io
