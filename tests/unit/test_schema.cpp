// The JSON reader, the schema's expressions, and the embedded schema itself.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "io/json.hpp"
#include "io/schema.hpp"
#include "mapping/simplex.hpp"
#include "solver/exact_sum.hpp"

using namespace tdsolve;
using namespace tdsolve::io;

namespace {

constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();

TEST(Json, ReadsValuesAndKeepsMemberOrder) {
  const Json j = Json::parse(
      " {\"b\": [1, -2.5e1, true, false, null], \"a\": \"x\\\"\\\\\\/\\n\\t\\u00e9\\ud83d\\ude00\","
      " \"c\": {}, \"d\": []}\n");
  ASSERT_TRUE(j.is_object());
  ASSERT_EQ(j.members().size(), 4u);
  EXPECT_EQ(j.members()[0].first, "b");
  EXPECT_EQ(j.members()[1].first, "a");
  const auto& b = j.at("b").items();
  ASSERT_EQ(b.size(), 5u);
  EXPECT_EQ(b[0].number(), 1);
  EXPECT_EQ(b[1].number(), -25);
  EXPECT_TRUE(b[2].boolean());
  EXPECT_FALSE(b[3].boolean());
  EXPECT_TRUE(b[4].is_null());
  EXPECT_EQ(j.at("a").str(), "x\"\\/\n\t\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_TRUE(j.at("c").members().empty());
  EXPECT_TRUE(j.at("d").items().empty());
  EXPECT_EQ(j.find("e"), nullptr);
  EXPECT_THROW(j.at("e"), JsonError);
  EXPECT_THROW(j.at("a").number(), JsonError);
  EXPECT_THROW(j.at("b").str(), JsonError);
}

TEST(Json, RefusesWhatIsNotStrictJson) {
  for (const char* bad : {"",
                          " ",
                          "{",
                          "[1,]",
                          "{\"a\":1,}",
                          "{\"a\":1 \"b\":2}",
                          "{\"a\":1,\"a\":2}",
                          "{a:1}",
                          "// c\n{}",
                          "{} {}",
                          "[01]",
                          "[1.]",
                          "[.5]",
                          "[-]",
                          "[1e]",
                          "[+1]",
                          "\"a",
                          "\"\\x\"",
                          "\"\\u12\"",
                          "\"\\ud800\"",
                          "\"\\udc00\"",
                          "\"a\tb\"",
                          "tru",
                          "nul",
                          "[NaN]",
                          "'a'"})
    EXPECT_THROW(Json::parse(bad), JsonError) << bad;
  std::string deep(65, '[');
  deep += std::string(65, ']');
  EXPECT_THROW(Json::parse(deep), JsonError);
  std::string ok(64, '[');
  ok += std::string(64, ']');
  EXPECT_NO_THROW(Json::parse(ok));
}

std::uint64_t ev(const std::string& e,
                 const std::vector<std::pair<std::string, std::uint64_t>>& v = {},
                 std::vector<std::string>* calls = nullptr) {
  const ExprVar var = [&](const std::string& n, std::uint64_t* out) {
    for (const auto& [k, x] : v)
      if (k == n) {
        *out = x;
        return true;
      }
    return false;
  };
  const ExprFile file = [&](const std::string& f, const std::vector<std::string>& a) {
    std::string c = f;
    for (const std::string& x : a)
      c += " " + x;
    if (calls) calls->push_back(c);
    return std::uint64_t(7);
  };
  return eval_expr(e, var, file);
}

TEST(SchemaExpr, ArithmeticWrapsModulo64) {
  EXPECT_EQ(ev("2 + 3 * 4"), 14u);
  EXPECT_EQ(ev("(2 + 3) * 4"), 20u);
  EXPECT_EQ(ev("4*n+1", {{"n", 10}}), 41u);
  EXPECT_EQ(ev("0 - 1"), kMax);
  EXPECT_EQ(ev("18446744073709551615 + 2"), 1u);
  EXPECT_EQ(ev("9223372036854775808 * 2"), 0u);
  EXPECT_EQ(ev("10 - 3 - 2"), 5u);
  EXPECT_THROW(ev("18446744073709551616"), SchemaError);
}

TEST(SchemaExpr, ComparisonsAndLogic) {
  EXPECT_EQ(ev("K >= 1 && K < n", {{"K", 3}, {"n", 4}}), 1u);
  EXPECT_EQ(ev("K >= 1 && K < n", {{"K", 4}, {"n", 4}}), 0u);
  EXPECT_EQ(ev("1 <= 1"), 1u);
  EXPECT_EQ(ev("2 > 1 || 0"), 1u);
  EXPECT_EQ(ev("!0"), 1u);
  EXPECT_EQ(ev("!(1 == 1)"), 0u);
  EXPECT_EQ(ev("3 != 4"), 1u);
  EXPECT_EQ(ev("1 + 1 == 2"), 1u);
  // The right side is not evaluated where the left decides: no unbound
  // size, no read of the file.
  std::vector<std::string> calls;
  EXPECT_EQ(ev("0 && exists(x) && unbound", {}, &calls), 0u);
  EXPECT_EQ(ev("1 || named(x) || unbound", {}, &calls), 1u);
  EXPECT_TRUE(calls.empty());
}

TEST(SchemaExpr, FunctionsAreTheReadersArithmetic) {
  const std::vector<std::uint64_t> ns = {0,   1, 2, 3, 4, 900, 4800000, 6074001001, 3000000000000,
                                         kMax};
  for (const std::uint64_t n : ns) {
    EXPECT_EQ(ev("C(n,2)", {{"n", n}}), mapping::pair_count(n)) << n;
    EXPECT_EQ(ev("C(n, 3)", {{"n", n}}), mapping::triplet_count(n)) << n;
  }
  EXPECT_THROW(ev("C(5,4)"), SchemaError);
  EXPECT_EQ(ev("pow(3, 4)"), 81u);
  EXPECT_EQ(ev("pow(7, 0)"), 1u);
  EXPECT_EQ(ev("pow(2, 63)"), std::uint64_t(1) << 63);
  EXPECT_EQ(ev("pow(2, 64)"), kMax);  // saturates
  EXPECT_EQ(ev("pow(16, 31)"), kMax);
  EXPECT_EQ(ev("pow(1, 9223372036854775808)"), 1u);  // by squaring: no 2^63 steps
  EXPECT_EQ(ev("pow(0, 5)"), 0u);
  // Functions of the file get their arguments as written.
  std::vector<std::string> calls;
  EXPECT_EQ(ev("dim(progress/sums, 1) + sum(counts)", {}, &calls), 14u);
  EXPECT_EQ(calls, (std::vector<std::string>{"dim progress/sums 1", "sum counts"}));
  calls
      .clear();  // at, rowsum: the index as written too (a number or a size, the checker's to bind)
  EXPECT_EQ(ev("rowsum(counts, g) + at(pair_total, 2)", {}, &calls), 14u);
  EXPECT_EQ(calls, (std::vector<std::string>{"rowsum counts g", "at pair_total 2"}));
}

TEST(SchemaExpr, MalformedIsAnError) {
  for (const char* bad :
       {"", "1 +", "(1", "1 2", "a @ b", "f(1)", "C(1)", "pow(1,2,3)", "dim(x)", "dim(x, 1, 2)",
        "exists((x))", "1 === 1", ")", "at(x)", "rowsum(x, 1, 2)", "at(x, g + 1)"}) {
    EXPECT_THROW(ev(bad, {{"a", 1}, {"b", 2}, {"x", 0}}), SchemaError) << bad;
    EXPECT_NE(expr_syntax(bad), "") << bad;
  }
  EXPECT_THROW(ev("n + 1"), SchemaError);  // unbound
  EXPECT_EQ(expr_syntax("n + 1"), "");     // but well-formed
  EXPECT_EQ(expr_syntax("named(triplet_energy) && !exists(x)"), "");
}

TEST(Schema, TheEmbeddedSchemaIsWellFormed) {
  EXPECT_EQ(schema_problems(), std::vector<std::string>{});
  EXPECT_EQ(schema_version(), 3u);
  EXPECT_EQ(schema_kinds(), (std::vector<std::string>{"edm", "cross", "hist", "knn", "radius",
                                                      "collide", "triplet", "adf", "fractal"}));
  EXPECT_EQ(schema_kind("nope"), nullptr);
  EXPECT_EQ(schema_dims("edm", "distances"), std::vector<std::string>{"pair"});
  EXPECT_EQ(schema_dims("radius", "distances"), std::vector<std::string>{"pair"});
  EXPECT_EQ(schema_dims("knn", "distances"), (std::vector<std::string>{"point", "neighbor"}));
  EXPECT_EQ(schema_dims("edm", "progress/done"), std::vector<std::string>{"progress/chunk"});
  EXPECT_EQ(schema_dims("edm", "weights"), std::vector<std::string>{});
  // hist's forms: by rank, and by the coordinates (/r, /pair) the file has.
  using Names = std::vector<std::string>;
  const auto all = [](const std::string&) { return true; };
  const auto none = [](const std::string&) { return false; };
  EXPECT_EQ(schema_dims("hist", "counts"), Names{"r"});
  EXPECT_EQ(schema_dims("hist", "counts", 1, all), Names{"r"});
  EXPECT_EQ(schema_dims("hist", "counts", 1, none), Names{"bin"});  // schema_version 2's
  EXPECT_EQ(schema_dims("hist", "counts", 2, all), (Names{"pair", "r"}));
  EXPECT_EQ(schema_dims("hist", "counts", 3, all), Names{});
  EXPECT_EQ(schema_dims("hist", "frame_counts", 3, all), (Names{"frame", "pair", "r"}));
  EXPECT_EQ(schema_dims("hist", "underflow", 0, all), Names{});
  EXPECT_EQ(schema_dims("hist", "underflow", 1, all), Names{"pair"});
  EXPECT_EQ(schema_dims("hist", "r", 1, all), Names{"r"});
  EXPECT_EQ(schema_dims("hist", "types", 1, none), Names{"type"});     // a pure dimension
  EXPECT_EQ(schema_dims("edm", "distances", 1, none), Names{"pair"});  // no dataset /pair in edm
  EXPECT_EQ(schema_attr_type("triplet", "energy", "potential"), "string");
  EXPECT_EQ(schema_attr_type("triplet", "energy", "nu"), "");  // atm's, not common
  EXPECT_EQ(schema_attr_type("triplet", "energy", "nu", "atm"), "float64");
  EXPECT_EQ(schema_attr_type("triplet", "energy", "nu", "sw"), "");
  EXPECT_EQ(schema_attr_type("triplet", "energy", "costheta0", "sw"), "float64");
  EXPECT_EQ(schema_attr_type("hist", "counts", "box"), "string");  // optional: "string?"
  EXPECT_EQ(schema_attr_type("cross", "", "with"), "string");
  EXPECT_EQ(schema_attr_type("edm", "", "schema_version"), "uint64");
  EXPECT_EQ(schema_attr_type("edm", "distances", "nope"), "");
}

TEST(Schema, TheTripletEnergysAttributesDependOnItsPotential) {
  using Attrs = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(schema_variant_by("triplet", "energy"), "potential");
  EXPECT_EQ(schema_variant_by("triplet", "forces"), "");
  EXPECT_EQ(schema_variant_by("edm", "distances"), "");
  EXPECT_EQ(schema_variant("triplet", "energy", "sw"), "sw");
  EXPECT_EQ(schema_variant("triplet", "energy", "atm"), "atm");
  // Anything else (no potential, one this build does not know): atm's, as
  // readers always took it.
  EXPECT_EQ(schema_variant("triplet", "energy", ""), "atm");
  EXPECT_EQ(schema_variant("triplet", "energy", "(not a string)"), "atm");
  EXPECT_EQ(schema_variant("edm", "distances", "sw"), "");
  // nu, or a typed run's table (--nu-types) with its types in its place.
  EXPECT_EQ(schema_variant_attrs("triplet", "energy", "atm"), (Attrs{{"nu", "float64?"},
                                                                     {"cutoff", "float64"},
                                                                     {"cutoff_triple", "float64"},
                                                                     {"nu_types", "string?"},
                                                                     {"type_names", "string?"},
                                                                     {"type_source", "string?"}}));
  // The columns of a LAMMPS .sw file, in their order (tdsolve info shows them so).
  EXPECT_EQ(schema_variant_attrs("triplet", "energy", "sw"), (Attrs{{"epsilon", "float64"},
                                                                    {"sigma", "float64"},
                                                                    {"a", "float64"},
                                                                    {"lambda", "float64"},
                                                                    {"gamma", "float64"},
                                                                    {"costheta0", "float64"}}));
  EXPECT_EQ(schema_variant_attrs("triplet", "energy", "lj"), Attrs{});
}

TEST(Schema, TripletSumsHaveTheSolversLimbs) {
  // /progress/sums is (4n+1) x a window of the kExactLimbs limbs: the
  // schema's bound on the window is the solver's number.
  bool declared = false;
  for (const Json* d : schema_datasets("triplet")) {
    if (d->at("name").str() != "progress/sums") continue;
    const auto& shape = d->at("shape").items();
    ASSERT_EQ(shape.size(), 2u);
    EXPECT_EQ(shape[1].str(), "*");
    EXPECT_EQ(ev(shape[0].str(), {{"n", 10}}), 41u);
    declared = true;
  }
  ASSERT_TRUE(declared) << "the triplet kind declares no /progress/sums";
  const std::string bound = "first_limb + dim(progress/sums,1) <= ";
  for (const Json& c : schema_kind("triplet")->at("checks").items()) {
    const Json* e = c.find("expr");
    if (!e || e->str().rfind(bound, 0) != 0) continue;
    EXPECT_EQ(e->str().substr(bound.size()), std::to_string(kExactLimbs));
    return;
  }
  FAIL() << "the triplet kind does not bound /progress/sums's limb window";
}

TEST(Schema, TheLintFindsWhatIsWrong) {
  const auto lint = [](const std::string& kind_json) {
    return schema_problems(
        Json::parse("{\"schema_version\": 1, \"root\": {\"kind\": \"string\"}, \"parts\": {}, "
                    "\"kinds\": {\"k\": " +
                    kind_json + "}}"));
  };
  const std::string good =
      "{\"result\": \"v\", \"datasets\": [{\"name\": \"v\", \"dtype\": [\"float64\"], \"shape\": "
      "[\"n\"], \"attrs\": {\"n\": \"uint64\", \"s\": \"string\"}, \"variants\": {\"by\": "
      "\"s\", \"default\": \"x\", \"attrs\": {\"x\": {\"p\": \"float64\"}, \"y\": {}}}},"
      " {\"name\": \"progress\", \"group\": true}],"
      " \"progress\": {\"dataset\": [\"/v\"], \"chunk\": \"chunk\", \"unit\": \"values\"},"
      " \"checks\": [{\"let\": \"n\", \"attr\": \"v@n\", \"message\": \"no n\"}, {\"read\": "
      "\"v\", \"attrs\": [\"s\", \"p\"]}, {\"progress\": \"read\"},"
      " {\"check\": \"offsets\", \"to\": \"n\", \"message\": \"m\"}]}";
  EXPECT_EQ(lint(good), std::vector<std::string>{});
  const auto broken = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    const size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    s.replace(at, from.size(), to);
    return lint(s).size();
  };
  EXPECT_GT(broken("\"check\": \"offsets\"", "\"check\": \"offset\""), 0u);  // unknown check
  EXPECT_GT(broken("\"to\": \"n\"", "\"to\": \"n +\""), 0u);                 // bad expression
  EXPECT_GT(broken("\"v@n\"", "\"w@n\""), 0u);                               // undeclared dataset
  EXPECT_GT(broken("\"float64\"]", "\"float16\"]"), 0u);                     // unknown dtype
  EXPECT_GT(broken("\"uint64\",", "\"int\","), 0u);        // unknown attribute type
  EXPECT_GT(broken("{\"progress\": \"read\"},", ""), 0u);  // never reads /progress
  EXPECT_GT(broken("\"message\": \"m\"", "\"message\": \"m\", \"extra\": 1"),
            0u);  // unknown member
  EXPECT_GT(broken("\"result\": \"v\"", "\"result\": \"w\""), 0u);
  // Variants: picked by a declared string attribute, a default among them,
  // no attribute both common and a variant's, reads of declared ones only.
  EXPECT_GT(broken("\"by\": \"s\"", "\"by\": \"n\""), 0u);                // not a string
  EXPECT_GT(broken("\"by\": \"s\"", "\"by\": \"t\""), 0u);                // undeclared
  EXPECT_GT(broken("\"default\": \"x\"", "\"default\": \"z\""), 0u);      // no such variant
  EXPECT_GT(broken("{\"p\": \"float64\"}", "{\"n\": \"float64\"}"), 0u);  // also common
  EXPECT_GT(broken("{\"p\": \"float64\"}", "{\"p\": \"float\"}"), 0u);    // unknown type
  EXPECT_GT(broken("\"attrs\": [\"s\", \"p\"]", "\"attrs\": [\"s\", \"q\"]"), 0u);
}

TEST(Schema, TheLintKnowsFormsStringsAndEach) {
  const auto lint = [](const std::string& dataset, const std::string& check) {
    return schema_problems(Json::parse(
        "{\"schema_version\": 1, \"root\": {\"kind\": \"string\"}, \"parts\": {}, \"kinds\": "
        "{\"k\": "
        "{\"result\": \"v\", \"datasets\": [" +
        dataset +
        ", {\"name\": \"s\", \"dtype\": [\"string\"], \"shape\": [\"g\"]}],"
        " \"progress\": {\"dataset\": [\"/v\"], \"chunk\": \"chunk\", \"unit\": \"values\"},"
        " \"checks\": [" +
        check + ", {\"progress\": \"read\"}]}}}"));
  };
  const std::string v =
      "{\"name\": \"v\", \"dtype\": [\"int64\"], \"shape\": [\"b\"], \"dims\": [\"x\"], "
      "\"forms\": [{\"shape\": [\"g\", \"b\"], \"dims\": [\"s\", \"x\"]}]}";
  const std::string each =
      "{\"check\": \"each\", \"index\": \"i\", \"count\": \"g\", \"expr\": \"rowsum(v,i) == "
      "at(v,i)\", \"message\": \"m\"}";
  EXPECT_EQ(lint(v, each), std::vector<std::string>{});
  const auto broken = [&](std::string in, const std::string& from, const std::string& to,
                          bool dataset) {
    const size_t at = in.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    in.replace(at, from.size(), to);
    return (dataset ? lint(in, each) : lint(v, in)).size();
  };
  EXPECT_GT(broken(v, "\"dims\": [\"s\", \"x\"]", "\"dims\": [\"x\"]", true), 0u);
  EXPECT_GT(broken(v, "[{\"shape\"", "[{\"shap\"", true), 0u);
  EXPECT_GT(
      broken(v, "\"dims\": [\"s\", \"x\"]", "\"dims\": [\"s\", \"x\"], \"when\": \"1\"", true), 0u);
  EXPECT_GT(broken(each, "\"index\": \"i\", ", "", false), 0u);
  EXPECT_GT(broken(each, "\"count\": \"g\"", "\"count\": \"g +\"", false), 0u);
  EXPECT_GT(broken(each, "at(v,i)", "at(v)", false), 0u);
}

}  // namespace
