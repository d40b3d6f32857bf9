// The result files' schema: python/tdsolve/schema.json, embedded by the
// build (generated/schema_json.hpp) — the one description of every kind of
// file (its datasets, shapes, attributes, and the checks that say whether it
// is complete), which the Python package ships too. docs/output.md, "What a
// file says it is", describes it; the checks' vocabulary is implemented here
// and in io/info.cpp, and once more in python/tdsolve/_schema.py.
//
// Shapes and checks are expressions over named sizes (n, K, m, bins, rows,
// ...), all uint64 with + - * wrapping modulo 2^64, as the readers always
// counted:
//   expr  := or;  or := and ('||' and)*;  and := cmp ('&&' cmp)*
//   cmp   := sum (('==' | '!=' | '<' | '<=' | '>' | '>=') sum)?
//   sum   := prod (('+' | '-') prod)*;  prod := unary ('*' unary)*
//   unary := '!' unary | INTEGER | NAME | NAME '(' args ')' | '(' expr ')'
// Functions: C(x, 2) and C(x, 3) (the simplex counts, modulo 2^64),
// pow(a, b) (saturating at 2^64 - 1); and those that read the file, whose
// arguments are names as written: dim(D, axis) (0 past the last axis),
// exists(D), named(D) (/progress's `dataset` names D), sum(D) (of D's
// values as int64, modulo 2^64), attr(D, A) (as uint64), at(D, i) (D's
// value at flat position i, as int64 modulo 2^64; 0 past the end) and
// rowsum(D, i) (the sum of D's i-th slice along its first axis; 0 past the
// end), i a number or a size. && and || do not evaluate their right side
// when the left decides.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "io/json.hpp"

namespace tdsolve::io {

// A schema or an expression that is not well-formed (a bug of the build, or
// of a hand-edited schema.json).
struct SchemaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The embedded schema, parsed on first use.
const Json& schema();
// Its version: what the writer records as the root's `schema_version`, and
// the newest a reader of this build understands.
std::uint64_t schema_version();
// The description of `kind` ("edm", ..., "fractal"), nullptr if unknown.
const Json* schema_kind(const std::string& kind);
// The names of the kinds, in the schema's order.
std::vector<std::string> schema_kinds();
// Every dataset (and group) `kind` declares: its parts' and its own, in order.
std::vector<const Json*> schema_datasets(const std::string& kind);
// The dimension names of dataset `name` of `kind` (HDF5 dimension scales,
// paths from the root), or none: its declaration's own.
std::vector<std::string> schema_dims(const std::string& kind, const std::string& name);

// A dataset may be declared in several forms (schema.json "forms": hist's
// /counts is bins long, dims "r", or groups x bins, dims "pair", "r"; files
// of schema_version 2 named the axis "bin"): its own shape and dims, then
// those of "forms", in order. A dataset of `rank` axes takes the first form
// of that rank whose dims, where they name a dataset of the kind (a
// coordinate: hist's /r, /pair), name one that `exists` (in the file, or in
// the layout a writer builds); else the first of that rank. The dims of that
// form; none when no form has that rank (python/tdsolve/_schema.py form()).
std::vector<std::string> schema_dims(const std::string& kind, const std::string& name, size_t rank,
                                     const std::function<bool(const std::string&)>& exists);
// The declared type of attribute `attr` of `object` ("" the root) of
// `kind`: "uint64", "float64" or "string"; "" when undeclared. With a
// `variant` of the object (below), its attributes count too.
std::string schema_attr_type(const std::string& kind, const std::string& object,
                             const std::string& attr, const std::string& variant = "");

// A dataset whose attributes differ by one of them (schema.json "variants":
// the triplet kind's /energy, by its `potential`) declares the attributes
// common to all and those of each variant.
// The attribute that picks the variant ("" when the dataset has none).
std::string schema_variant_by(const std::string& kind, const std::string& dataset);
// The variant of a dataset whose picking attribute reads `value`: the
// variant of that name, or the default one when none is (the attribute
// missing, or not one of them); "" when the dataset has no variants.
std::string schema_variant(const std::string& kind, const std::string& dataset,
                           const std::string& value);
// The attributes `variant` adds to the dataset's, in order: name and type.
std::vector<std::pair<std::string, std::string>> schema_variant_attrs(const std::string& kind,
                                                                      const std::string& dataset,
                                                                      const std::string& variant);

// A named size: false when `name` is not bound.
using ExprVar = std::function<bool(const std::string& name, std::uint64_t* value)>;
// A function that reads the file (dim, exists, named, sum, attr, at,
// rowsum), its arguments as written.
using ExprFile =
    std::function<std::uint64_t(const std::string& fn, const std::vector<std::string>& args)>;

// The value of `expr`; SchemaError when it is malformed, names an unbound
// size or an unknown function.
std::uint64_t eval_expr(const std::string& expr, const ExprVar& var, const ExprFile& file);

// Whether `expr` is well-formed (nothing is evaluated); "" or what is wrong.
std::string expr_syntax(const std::string& expr);

// What is wrong with the embedded schema (every kind's members, datasets,
// attribute types, the checks' vocabulary and expressions); empty when
// nothing is.
std::vector<std::string> schema_problems();
std::vector<std::string> schema_problems(const Json& s);

}  // namespace tdsolve::io
