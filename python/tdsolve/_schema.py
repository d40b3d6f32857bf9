"""The schema of tdsolve result files: schema.json, shipped with this package
and embedded by the C++ build (io/schema.hpp), the one description of every
kind of file — its datasets, shapes, attributes, and the checks that say
whether it is complete (docs/output.md, "What a file says it is").

This module reads it and evaluates its expressions, as io/schema.cpp does;
the checks' vocabulary is carried out by _verdict.py (as io/info.cpp does).

Expressions are over named sizes, all uint64 with + - * wrapping modulo
2^64:  ||  &&  == != < <= > >=  + -  *  !  (...)  INTEGER  NAME  NAME(args).
Functions: C(x, 2), C(x, 3) (simplex counts, modulo 2^64), pow(a, b)
(saturating at 2^64 - 1); and those that read the file, whose arguments are
names as written: dim(D, axis) (0 past the last axis), exists(D), named(D)
(/progress's `dataset` names D), sum(D), attr(D, A), at(D, i) (D's value at
flat position i, 0 past the end) and rowsum(D, i) (the sum of D's i-th slice
along its first axis, 0 past the end), i a number or a size. && and || do
not evaluate their right side when the left decides.

A dataset may be declared in several forms (its own shape and dims, then
those of "forms", in order): a file's dataset is of the first form of its
rank whose dims, where they name a dataset of the kind (a coordinate: hist's
/r, /pair), name datasets the file has (form()).
"""
import json
import os

_M64 = 1 << 64
_MAX = _M64 - 1

_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "schema.json")


class SchemaError(Exception):
    """schema.json or one of its expressions is not well-formed."""


def _load():
    with open(_PATH, encoding="utf-8") as f:
        return json.load(f)


SCHEMA = _load()
SCHEMA_VERSION = int(SCHEMA["schema_version"])
KINDS = tuple(SCHEMA["kinds"])


def kind_spec(kind):
    """The description of `kind`, or None for a kind this package does not know."""
    return SCHEMA["kinds"].get(kind) if isinstance(kind, str) else None


def datasets(kind, schema=SCHEMA):
    """Every dataset (and group) `kind` declares: its parts' and its own, in order."""
    spec = schema["kinds"][kind]
    out = [d for p in spec.get("parts", ()) for d in schema["parts"][p]]
    return out + list(spec.get("datasets", ()))


def dataset(kind, name, schema=SCHEMA):
    for d in datasets(kind, schema):
        if d["name"] == name:
            return d
    return None


def dims(kind, name):
    """The dimension names of dataset `name` of `kind` ([] for none): its declaration's own."""
    d = dataset(kind, name)
    return list(d.get("dims", ())) if d else []


def forms(kind, name, schema=SCHEMA):
    """Every form dataset `name` of `kind` may take, in order: [{"shape": [...], "dims": [...]}]
    (its own, then its "forms"); [] when undeclared."""
    d = dataset(kind, name, schema)
    if d is None or d.get("group"):
        return []
    own = {"shape": list(d.get("shape", ())), "dims": list(d.get("dims", ()))}
    return [own] + [{"shape": list(f.get("shape", ())), "dims": list(f.get("dims", ()))} for f in d.get("forms", ())]


def form(kind, name, rank, exists, schema=SCHEMA):
    """The form of dataset `name` of `kind` that a dataset of `rank` axes
    takes in a file where exists(D) says which datasets there are: the first
    of that rank whose dims, where they name a dataset of the kind (its
    coordinate), name one that exists; else the first of that rank (its
    coordinates missing); None when no form has that rank. As io/schema.cpp
    schema_form."""
    declared = {d["name"] for d in datasets(kind, schema)}
    of_rank = [f for f in forms(kind, name, schema) if len(f["shape"]) == rank]
    for f in of_rank:
        if all(x not in declared or exists(x) for x in f["dims"]):
            return f
    return of_rank[0] if of_rank else None


def attr_type(kind, obj, name, variant=None):
    """The declared type ("uint64", "float64", "string") of attribute `name`
    of `obj` ("" the root), and whether it is optional; (None, True) when
    undeclared. With a `variant` of the object (below), its attributes count too."""
    spec = SCHEMA["kinds"][kind]
    if obj == "":
        t = SCHEMA["root"].get(name) or spec.get("root", {}).get(name)
    else:
        d = dataset(kind, obj)
        t = d.get("attrs", {}).get(name) if d else None
        if t is None and d and variant is not None:
            t = variant_attrs(kind, obj, variant).get(name)
    if t is None:
        return None, True
    return t.rstrip("?"), t.endswith("?")


# A dataset whose attributes differ by one of them ("variants": the triplet
# kind's /energy, by its `potential`) declares those common to all and those
# of each variant.

def variant_by(kind, name):
    """The attribute that picks the variant of dataset `name` (None when it has no variants)."""
    d = dataset(kind, name)
    return d["variants"]["by"] if d and "variants" in d else None


def variant(kind, name, value):
    """The variant of dataset `name` whose picking attribute reads `value`: the
    variant of that name, or the default one when none is (the attribute
    missing: None, or not one of them); None when it has no variants."""
    d = dataset(kind, name)
    if not d or "variants" not in d:
        return None
    v = d["variants"]
    return value if isinstance(value, str) and value in v["attrs"] else v["default"]


def variant_attrs(kind, name, var):
    """The attributes variant `var` adds to dataset `name`'s, in order: {name: type}."""
    d = dataset(kind, name)
    return dict(d["variants"]["attrs"].get(var, {})) if d and "variants" in d else {}


# --- expressions ------------------------------------------------------------

_FILE_FUNCTIONS = {"dim": 2, "exists": 1, "named": 1, "sum": 1, "attr": 2, "at": 2, "rowsum": 2}


def _saturating_pow(b, e):
    r = 1
    while e:
        if e & 1:
            r = min(r * b, _MAX)
        e >>= 1
        if e:
            b = min(b * b, _MAX)
    return r


def _pair_count(n):
    return 0 if n < 2 else (n * (n - 1) // 2) % _M64


def _triplet_count(n):
    return 0 if n < 3 else (n * (n - 1) * (n - 2) // 6) % _M64


class _Expr:
    def __init__(self, text, var, call):
        self.s, self.var, self.call = text, var, call
        self.at = 0
        self.skip = 1 if var is None else 0

    def fail(self, what):
        raise SchemaError(f'expression "{self.s}": {what}')

    def space(self):
        while self.at < len(self.s) and self.s[self.at].isspace():
            self.at += 1

    def take(self, op):
        self.space()
        if not self.s.startswith(op, self.at):
            return False
        if len(op) == 1 and op in "<>!=" and self.s.startswith("=", self.at + 1):
            return False
        self.at += len(op)
        return True

    def name(self):
        self.space()
        i = self.at
        if i < len(self.s) and (self.s[i].isascii() and (self.s[i].isalpha() or self.s[i] == "_")):
            i += 1
            while i < len(self.s) and self.s[i].isascii() and (self.s[i].isalnum() or self.s[i] in "_/"):
                i += 1
        n, self.at = self.s[self.at:i], i
        return n

    def integer_text(self):
        self.space()
        i = self.at
        while i < len(self.s) and self.s[i] in "0123456789":
            i += 1
        t, self.at = self.s[self.at:i], i
        return t

    def run(self):
        v = self.disjunction()
        self.space()
        if self.at != len(self.s):
            self.fail(f"unexpected '{self.s[self.at:]}'")
        return v

    def disjunction(self):
        v = self.conjunction()
        while self.take("||"):
            left = v != 0
            self.skip += left
            r = self.conjunction()
            self.skip -= left
            v = int(left or r != 0)
        return v

    def conjunction(self):
        v = self.comparison()
        while self.take("&&"):
            left = v != 0
            self.skip += not left
            r = self.comparison()
            self.skip -= not left
            v = int(left and r != 0)
        return v

    def comparison(self):
        a = self.sum()
        for op in ("==", "!=", "<=", ">=", "<", ">"):
            if self.take(op):
                b = self.sum()
                return int({"==": a == b, "!=": a != b, "<=": a <= b, ">=": a >= b, "<": a < b, ">": a > b}[op])
        return a

    def sum(self):
        v = self.product()
        while True:
            if self.take("+"):
                v = (v + self.product()) % _M64
            elif self.take("-"):
                v = (v - self.product()) % _M64
            else:
                return v

    def product(self):
        v = self.unary()
        while self.take("*"):
            v = (v * self.unary()) % _M64
        return v

    def unary(self):
        if self.take("!"):
            return int(self.unary() == 0)
        if self.take("("):
            v = self.disjunction()
            if not self.take(")"):
                self.fail("')' expected")
            return v
        digits = self.integer_text()
        if digits:
            v = int(digits)
            if v > _MAX:
                self.fail(f"the number {digits} is past 2^64 - 1")
            return v
        n = self.name()
        if not n:
            self.fail(f"unexpected '{self.s[self.at:]}'" if self.at < len(self.s) else "unexpected end")
        if not self.take("("):
            if self.skip:
                return 0
            v = self.var(n)
            if v is None:
                self.fail(f"the size '{n}' is not known here")
            return v
        if n in _FILE_FUNCTIONS:
            args = []
            while True:
                a = self.integer_text() or self.name()
                if not a:
                    self.fail(f"a name or a number expected as an argument of {n}()")
                args.append(a)
                if not self.take(","):
                    break
            if not self.take(")"):
                self.fail("')' expected")
            if len(args) != _FILE_FUNCTIONS[n]:
                self.fail(f"{n}() takes {_FILE_FUNCTIONS[n]} arguments")
            return 0 if self.skip else self.call(n, args) % _M64
        args = [self.disjunction()]
        while self.take(","):
            args.append(self.disjunction())
        if not self.take(")"):
            self.fail("')' expected")
        if n == "C":
            if len(args) != 2:
                self.fail("C() takes 2 arguments")
            if self.skip:
                return 0
            if args[1] in (2, 3):
                return _pair_count(args[0]) if args[1] == 2 else _triplet_count(args[0])
            self.fail("C(x, k) is known for k = 2 and 3")
        if n == "pow":
            if len(args) != 2:
                self.fail("pow() takes 2 arguments")
            return 0 if self.skip else _saturating_pow(*args)
        self.fail(f"unknown function {n}()")


def eval_expr(text, var, call):
    """The value of expression `text`: var(name) gives a size (None: unbound),
    call(function, args) a function that reads the file."""
    return _Expr(text, var, call).run()


def expr_syntax(text):
    """'' when `text` is a well-formed expression, else what is wrong (nothing is evaluated)."""
    try:
        _Expr(text, None, None).run()
        return ""
    except SchemaError as e:
        return str(e)


# --- the schema's own consistency (io/schema.cpp schema_problems) ------------

_DTYPES = {"uint8", "int64", "uint64", "float32", "float64", "string"}
_ATTR_TYPES = {"uint64", "float64", "string"}
_CHECKS = {"rank": {"of", "rank"}, "shape": {"of", "shape", "missing", "values"}, "exists": {"of"},
           "attr": {"attr", "equals"}, "true": {"expr"}, "rising": {"of", "to"}, "offsets": {"to"},
           "offsets_multiple": {"of"}, "dtype": {"of"}, "each": {"index", "count", "expr"}}


def problems(schema=SCHEMA):
    """What is wrong with a schema (as io/schema.cpp finds it); [] when nothing is."""
    out = []

    def say(where, what):
        out.append(f"{where}: {what}")

    def expr(where, e):
        if not isinstance(e, str):
            return say(where, "an expression (a string) expected")
        p = expr_syntax(e)
        if p:
            say(where, p)

    def types(where, attrs):
        if not isinstance(attrs, dict):
            return say(where, "attrs must be an object")
        for name, t in attrs.items():
            if not isinstance(t, str) or t.rstrip("?") not in _ATTR_TYPES or t.count("?") > 1:
                say(f"{where}@{name}", "type must be uint64, float64 or string")

    def variants(where, d, v):
        """{"by": a string attribute of the dataset, "default": one of them,
        "attrs": {variant: its own attributes}}, none also common."""
        w = where + " variants"
        if not isinstance(v, dict):
            return say(w, "must be an object")
        for m in v:
            if m not in ("by", "default", "attrs"):
                say(w, f'unknown member "{m}"')
        common = d.get("attrs") if isinstance(d.get("attrs"), dict) else {}
        if not isinstance(v.get("by"), str) or common.get(v["by"]) != "string":
            say(w, '"by" must name a string attribute the dataset declares')
        attrs = v.get("attrs")
        if not isinstance(attrs, dict) or not attrs:
            return say(w, '"attrs" (an object of the variants\' attributes) expected')
        for name, own in attrs.items():
            types(f"{w} {name}", own)
            for a in own if isinstance(own, dict) else ():
                if a in common:
                    say(f"{w} {name}", f"{a} is also a common attribute")
        if not isinstance(v.get("default"), str) or v["default"] not in attrs:
            say(w, '"default" must name one of the variants')

    def dset(where, d):
        if not isinstance(d.get("name"), str):
            return say(where, "a dataset without a name")
        w = f"{where} /{d['name']}"
        if "attrs" in d:
            types(w, d["attrs"])
        if "variants" in d:
            variants(w, d, d["variants"])
        if d.get("group") is True:
            return
        if not d.get("dtype") or any(t not in _DTYPES for t in d["dtype"]):
            say(w, "no dtype list, or an unknown dtype")
        shape = d.get("shape")
        if not isinstance(shape, list):
            return say(w, "no shape list")
        for e in shape:
            if e != "*":
                expr(w + " shape", e)
        if "dims" in d and (not isinstance(d["dims"], list) or len(d["dims"]) != len(shape)):
            say(w, "dims must name every axis of the shape")
        fs = d.get("forms", [])
        if not isinstance(fs, list):
            return say(w, "forms must be a list")
        for f in fs:  # {"shape": [...], "dims": [...]}, as the dataset's own
            if not isinstance(f, dict) or not isinstance(f.get("shape"), list):
                say(w + " form", "a form needs a shape list")
                continue
            for m in f:
                if m not in ("shape", "dims"):
                    say(w + " form", f'unknown member "{m}"')
            for e in f["shape"]:
                if e != "*":
                    expr(w + " form shape", e)
            if "dims" in f and (not isinstance(f["dims"], list) or len(f["dims"]) != len(f["shape"])):
                say(w + " form", "dims must name every axis of the shape")

    def step(where, st, kind):
        if not isinstance(st, dict):
            return say(where, "a step must be an object")

        def declared(ds):
            if dataset(kind, ds, schema) is None:
                say(where, f"/{ds} is not declared by this kind")

        def attr_ref(key):
            r = st.get(key)
            if not isinstance(r, str) or "@" not in r:
                return say(where, f'"{key}" must be DATASET@ATTRIBUTE')
            if r.split("@")[0]:
                declared(r.split("@")[0])

        allowed = {"when"}
        if "when" in st:
            expr(where + " when", st["when"])
        if "let" in st:
            allowed |= {"let", "expr", "attr", "default", "scalar", "message"}
            if "expr" in st:
                expr(where, st["expr"])
            elif "attr" in st:
                attr_ref("attr")
                if "default" in st:
                    expr(where, st["default"])
                elif not isinstance(st.get("message"), str):
                    say(where, "a let of an attribute needs a default or a message")
            elif "scalar" in st:
                declared(st["scalar"])
                if not isinstance(st.get("message"), str):
                    say(where, '"message" (a string) expected')
            else:
                say(where, "a let needs expr, attr or scalar")
        elif "check" in st:
            c = st["check"]
            if c not in _CHECKS:
                return say(where, f'unknown check "{c}"')
            allowed |= {"check", "message"} | _CHECKS[c]
            if not isinstance(st.get("message"), str):
                say(where, '"message" (a string) expected')
            if c in ("rank", "shape", "exists", "rising", "dtype"):
                declared(st.get("of"))
            if c == "dtype" and not (dataset(kind, st.get("of"), schema) or {}).get("dtype"):
                say(where, f"/{st.get('of')} declares no dtype")
            if c == "rank" and not isinstance(st.get("rank"), int):
                say(where, '"rank" (a number) expected')
            if c == "shape":
                if not isinstance(st.get("shape"), list):
                    return say(where, '"shape" (a list) expected')
                for e in st["shape"]:
                    if e != "*":
                        expr(where + " shape", e)
                if st.get("values", "float64") != "float64":
                    say(where, '"values" may only be "float64"')
            if c == "attr":
                attr_ref("attr")
                expr(where, st.get("equals"))
            if c == "true":
                expr(where, st.get("expr"))
            if c in ("rising", "offsets"):
                expr(where, st.get("to"))
            if c == "each":
                if not isinstance(st.get("index"), str) or not st["index"]:
                    say(where, '"index" (a name) expected')
                expr(where, st.get("count"))
                expr(where, st.get("expr"))
            if c == "offsets_multiple":
                expr(where, st.get("of"))
        elif "read" in st:
            allowed |= {"read", "attrs"}
            declared(st["read"])
            d = dataset(kind, st["read"], schema) or {}
            v = d.get("variants", {}).get("attrs", {}) if isinstance(d.get("variants"), dict) else {}
            for a in st.get("attrs", ()):  # common, or a variant's (read in files of that variant)
                if a not in d.get("attrs", {}) and not any(isinstance(o, dict) and a in o for o in v.values()):
                    say(where, f"attribute {a} of /{st['read']} is not declared")
        elif "open" in st:
            allowed.add("open")
            for x in st["open"]:
                declared(x)
        elif "progress" in st:
            allowed.add("progress")
            if st["progress"] != "read":
                say(where, '"progress" must be "read"')
        else:
            return say(where, "a step needs let, check, read, open or progress")
        for m in st:
            if m not in allowed:
                say(where, f'unknown member "{m}"')

    v = schema.get("schema_version")
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        say("schema", "schema_version must be an integer of 1 or more")
    types("root", schema.get("root"))
    for name, lst in schema.get("parts", {}).items():
        for d in lst:
            dset(f"part {name}", d)
    if not schema.get("kinds"):
        say("schema", "no kinds")
    for name, k in schema.get("kinds", {}).items():
        w = f"kind {name}"
        for p in k.get("parts", ()):
            if p not in schema.get("parts", {}):
                say(w, "an unknown part")
        if "root" in k:
            types(w + " root", k["root"])
        for d in k.get("datasets", ()):
            dset(w, d)
        if not isinstance(k.get("result"), str) or dataset(name, k["result"], schema) is None:
            say(w, "result must name a declared dataset")
        pr = k.get("progress")
        if not isinstance(pr, dict) or not pr.get("dataset") or not isinstance(pr.get("chunk"), str):
            say(w, "progress must have a dataset list and a chunk word")
        elif pr.get("offsets", True) and not isinstance(pr.get("unit"), str):
            say(w, "progress with offsets needs a unit")
        for s, e in k.get("sizes", {}).items():
            expr(f"{w} size {s}", e)
        checks = k.get("checks")
        if not isinstance(checks, list):
            say(w, "no checks")
            continue
        for i, st in enumerate(checks):
            step(f"{w} step {i}", st, name)
        if sum("progress" in st for st in checks if isinstance(st, dict)) != 1:
            say(w, "the checks must read /progress once")
    return out
