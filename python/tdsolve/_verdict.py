"""Is a tdsolve result file complete? The rules of `tdsolve info`.

A file says what it is: its root attributes `kind` and `schema_version`
pick its description in schema.json (the package ships it; the C++ build
embeds the same file), whose checks, run in their order, decide the
verdict. Files written before files said so are told by their datasets
(_guess, as io/info.cpp guess_kind) and then checked alike. The checks'
vocabulary (what "shape", "offsets", ... mean) is carried out here and, for
`tdsolve info`, in io/info.cpp (Checker), step for step, so that for any
file `tdsolve.check(path).exit_code` is the exit status of
`tdsolve info path`:

    0  complete
    3  incomplete, inconsistent (its records disagree), or not a tdsolve result
    1  unreadable (no such file, not HDF5, truncated, a read that fails, or
       written by a newer tdsolve: a schema_version or kind this one does not know)

Where `tdsolve info` reads a record with HDF5's type conversion (an integer
attribute read as uint64, /progress/done as uint8, ...) so does this, through
h5py's low-level API and the same libhdf5, so conversions agree.

An attribute read as one number or string that holds an array (or, for a
number, no value at all), and a /progress dataset with more values than its
first dimension make the file inconsistent, in both, with the same words.
"""
import os
import stat

import h5py
import numpy as np
from h5py import h5a, h5s, h5t

from . import _isolate, _schema

COMPLETE = "complete"
INCOMPLETE = "incomplete"
INCONSISTENT = "inconsistent"
NOT_A_RESULT = "not a result"
UNREADABLE = "unreadable"

EXIT_CODES = {COMPLETE: 0, INCOMPLETE: 3, INCONSISTENT: 3, NOT_A_RESULT: 3, UNREADABLE: 1}

_M64 = 1 << 64  # info.cpp counts in uint64 and wraps


def pair_count(n):
    """C(n,2), modulo 2**64 as mapping::pair_count."""
    return 0 if n < 2 else (n * (n - 1) // 2) % _M64


def triplet_count(n):
    """C(n,3), modulo 2**64 as mapping::triplet_count."""
    return 0 if n < 3 else (n * (n - 1) * (n - 2) // 6) % _M64


class Verdict:
    """What `tdsolve info` would say of a file.

    status: "complete", "incomplete", "inconsistent", "not a result" or
    "unreadable"; exit_code: info's exit status (0, 3 or 1); message: one
    line; path: the path asked about; file: the file actually read (path, or
    path + ".partial" when only that exists); kind: "edm", "cross", "hist", "adf",
    "triplet", "fractal", "knn", "radius", "collide" or None; schema_version:
    the root's `schema_version` (None in files written before files recorded
    their kind); dataset: the dataset whose
    attributes describe the result ("distances", "counts", "energy" for
    triplets, "states" for fractals, "pairs" for radius and collide files); chunks, chunks_done: from /progress (None when
    not read; a fractal file's chunks are its snapshots)."""

    __slots__ = ("status", "message", "path", "file", "kind", "schema_version", "dataset", "chunks", "chunks_done",
                 "_done", "_offsets")

    def __init__(self, status, message, path, file, kind=None, dataset=None, done=None, offsets=None,
                 schema_version=None):
        self.status, self.message, self.path, self.file = status, message, path, file
        self.kind, self.dataset, self.schema_version = kind, dataset, schema_version
        self._done, self._offsets = done, offsets
        self.chunks = None if done is None else len(done)
        self.chunks_done = None if done is None else int(np.count_nonzero(done == 1))

    @property
    def exit_code(self):
        return EXIT_CODES[self.status]

    @property
    def complete(self):
        return self.status == COMPLETE

    def __str__(self):
        return self.message

    def __repr__(self):
        return f"Verdict({self.status!r}, {self.message!r}, file={self.file!r})"


class _Unreadable(Exception):
    """Where info.cpp throws (its exit status 1)."""


class _Inconsistent(Exception):
    """Where info.cpp throws AttrShapeError (an attribute of several values
    where one belongs); the message is info's."""


# --- HDF5 primitives, as io/h5.cpp and io/info.cpp use them ---------------


def _exists(f, name):
    """H5Lexists(file, name) > 0 (false also where H5Lexists fails)."""
    try:
        return bool(f.id.links.exists(name.encode()))
    except Exception:
        return False


def _member(f, name, kind, what):
    """f[name] if it opens and is a `kind`, as H5Dopen2/H5Gopen2 require
    (info: exit 1 on a dangling link or the wrong kind of object)."""
    try:
        obj = f[name]
    except Exception as e:
        raise _Unreadable(f"cannot open /{name}: {e}") from None
    if not isinstance(obj, kind):
        raise _Unreadable(f"/{name} is not a {what}")
    return obj


def _dataset(f, name):
    return _member(f, name, h5py.Dataset, "dataset")


def _group(f, name):
    return _member(f, name, h5py.Group, "group")


def _has_attr(obj, name):
    return bool(h5a.exists(obj.id, name.encode()))


def _elements(shape):
    """Number of elements of a dataspace (h5py: None for a null one)."""
    return 0 if shape is None else int(np.prod(shape, dtype=np.int64))


_STD_INTEGERS = tuple(getattr(h5t, f"STD_{s}{b}{o}") for s in "IU" for b in (8, 16, 32, 64) for o in ("LE", "BE"))
_IEEE_FLOATS = (h5t.IEEE_F32LE, h5t.IEEE_F32BE, h5t.IEEE_F64LE, h5t.IEEE_F64BE)


def _attr_number(obj, name, mtype, dtype, wrong, floats):
    """read_attr_u64 / read_attr_f64 as info.cpp record_number: an attribute
    of exactly one element reads as that, HDF5 converting (or failing: exit
    1); of none or of more, info.cpp refuses it (AttrShapeError:
    inconsistent, `wrong` its words), and of a type that is none of HDF5's
    standard integers (nor, `floats`, IEEE floats) too."""
    aid = h5a.open(obj.id, name.encode())
    count = _elements(aid.shape)
    if count != 1:
        raise _Inconsistent(wrong(count))
    v = np.zeros(aid.shape if aid.shape is not None else (), dtype=dtype)
    try:
        aid.read(v, mtype=mtype)
    except Exception as e:
        raise _Unreadable(f"cannot read attribute `{name}` of {obj.name} as a number: {e}") from None
    tid = aid.get_type()
    if not any(tid.equal(t) for t in _STD_INTEGERS + (_IEEE_FLOATS if floats else ())):
        raise _Inconsistent(f"attribute '{name}' is of no standard {'number' if floats else 'integer'} type")
    return v.reshape(-1)[0]


def _attr_u64(obj, name):
    return int(_attr_number(obj, name, h5t.NATIVE_UINT64, np.uint64,
                            lambda count: f"attribute '{name}' holds {count} values, not one", False))


def _attr_f64(obj, name):
    return float(_attr_number(obj, name, h5t.NATIVE_DOUBLE, np.float64,
                              lambda count: f"attribute '{name}' does not hold one value", True))


def _attr_string(obj, name):
    """read_attr_text: "(not a string)" for a number."""
    aid = h5a.open(obj.id, name.encode())
    if aid.get_type().get_class() != h5t.STRING:
        return "(not a string)"
    count = _elements(aid.shape)
    if count > 1:
        raise _Inconsistent(f"attribute '{name}' does not hold one value")
    if count == 0:
        return ""
    v = np.asarray(obj.attrs[name], dtype=object).reshape(-1)[0]
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


def _one_of_class(obj, name, cls):
    """Whether attribute `name` holds one value of HDF5 class `cls` (info.cpp one_of_class)."""
    try:
        aid = h5a.open(obj.id, name.encode())
        return aid.get_type().get_class() == cls and _elements(aid.shape) == 1
    except Exception:
        return False


def _read_all(ds, mtype, dtype):
    """H5Dread(ds, mtype, H5S_ALL, ...) of every element, converted by HDF5."""
    shape = ds.shape
    if shape is None:  # a null dataspace: no element
        return np.zeros(0, dtype=dtype)
    out = np.empty(shape, dtype=dtype)
    if out.size:
        try:
            ds.id.read(h5s.ALL, h5s.ALL, out, mtype=mtype)
        except Exception as e:
            raise _Unreadable(f"reading {ds.name}: {e}") from None
    return out


def _dims(ds):
    """dataset_shape(): () for a scalar or null dataspace."""
    return tuple(ds.shape) if ds.shape is not None else ()


# The dtypes the schema names, each exactly (HDF5's standard types, either byte order).
_DTYPES = {"uint8": (h5t.STD_U8LE, h5t.STD_U8BE), "int64": (h5t.STD_I64LE, h5t.STD_I64BE),
           "uint64": (h5t.STD_U64LE, h5t.STD_U64BE), "float32": (h5t.IEEE_F32LE, h5t.IEEE_F32BE),
           "float64": (h5t.IEEE_F64LE, h5t.IEEE_F64BE)}


def _dtype_name(tid):
    """info.cpp dtype_name: the schema's name of an HDF5 type ("string": any
    string, of fixed or variable length), None for any other."""
    if tid.get_class() == h5t.STRING:
        return "string"
    for name, types in _DTYPES.items():
        if any(tid.equal(t) for t in types):
            return name
    return None


def _missing_ranges(done):
    parts, c, shown = [], 0, 0
    while c < len(done):
        if done[c]:
            c += 1
            continue
        e = c
        while e + 1 < len(done) and not done[e + 1]:
            e += 1
        if shown == 8:
            parts.append("...")
            break
        shown += 1
        parts.append(f"{c}-{e}" if e > c else f"{c}")
        c = e + 1
    return ", ".join(parts)


def _scalar_i64(f, name):
    """read_scalar_i64: the value of scalar int64 dataset /name, None if it is not one."""
    if not _exists(f, name):
        return None
    ds = _dataset(f, name)
    if _dims(ds) != ():
        return None
    if ds.shape is None:  # a null dataspace reads nothing: info keeps its 0
        return 0
    return int(_read_all(ds, h5t.NATIVE_INT64, np.int64)[()])


def _strip(name):
    return name[1:] if name.startswith("/") else name


# --- what the file says it is ----------------------------------------------


def _recorded(f, file):
    """(has, kind, version, problem) as info.cpp read_recorded: the root's
    `kind` and `schema_version`. A newer schema_version, or a kind this
    package does not know, is a file it cannot read (_Unreadable)."""
    has_kind, has_version = _has_attr(f, "kind"), _has_attr(f, "schema_version")
    if not has_kind and not has_version:
        return False, None, None, None
    if not has_version:
        return True, None, None, "the root has a `kind` attribute but no `schema_version`"
    if not _one_of_class(f, "schema_version", h5t.INTEGER):
        return True, None, None, "the root's `schema_version` attribute is not one integer"
    version = _attr_u64(f, "schema_version")
    if version == 0:
        return True, None, version, "the root's `schema_version` attribute is 0 (versions start at 1)"
    if version > _schema.SCHEMA_VERSION:
        raise _Unreadable(f"'{file}' was written by a newer tdsolve: its schema_version is {version}, this "
                          f"tdsolve reads files up to {_schema.SCHEMA_VERSION}")
    if not has_kind:
        return True, None, version, "the root has a `schema_version` attribute but no `kind`"
    if not _one_of_class(f, "kind", h5t.STRING):
        return True, None, version, "the root's `kind` attribute is not one string"
    kind = _attr_string(f, "kind")
    if _schema.kind_spec(kind) is None:
        raise _Unreadable(f"'{file}' says it is of kind '{kind}', which this tdsolve (schema_version "
                          f"{_schema.SCHEMA_VERSION}) does not know: written by a newer tdsolve?")
    return True, kind, version, None


def _is_knn(f, values):
    """is_knn: /indices beside /distances, or a `layout` attribute that is one string, "knn"."""
    if _exists(f, "indices"):
        return True
    if not _has_attr(values, "layout") or not _one_of_class(values, "layout", h5t.STRING):
        return False
    return _attr_string(values, "layout") == "knn"


def _guess(f):
    """(kind, None) of a file that records none, told by its datasets as
    readers always did (info.cpp guess_kind); (None, why) when it is no
    tdsolve result."""
    if _exists(f, "states"):  # tdsolve fractal: its own records (no /progress/offsets)
        if _exists(f, "progress") and _exists(f, "progress/done"):
            return "fractal", None
        return None, "not a tdsolve result (/states without /progress/done)"
    has_progress = _exists(f, "progress") and _exists(f, "progress/done") and _exists(f, "progress/offsets")
    name = "distances"
    if has_progress:
        g = _group(f, "progress")
        if _has_attr(g, "dataset"):
            name = _attr_string(g, "dataset")
        name = _strip(name)
    radius = has_progress and name == "" and _exists(f, "pairs") and not _exists(f, "energy")
    triplet = has_progress and not radius and name in ("", "triplet_energy")
    if not has_progress or (False if radius else not _exists(f, "energy") if triplet
                            else name not in ("distances", "counts") or not _exists(f, name)):
        return None, "not a tdsolve result (no /distances, /counts, /pairs or /energy with /progress)"
    if triplet:
        return "triplet", None
    if radius:
        name = "pairs"
    values = _dataset(f, name)
    if radius:
        return ("collide" if _has_attr(values, "criterion") else "radius"), None
    if name == "counts":  # adf keeps /dropped
        return ("adf" if _exists(f, "dropped") else "hist"), None
    if _is_knn(f, values):
        return "knn", None
    return ("cross" if len(_dims(values)) == 2 else "edm"), None


def _contradiction(f, kind, guessed):
    """Why a file that records `kind` is not one (info.cpp contradiction)."""
    for d in _schema.datasets(kind):
        if d.get("required") and not _exists(f, d["name"]):
            return f"no /{d['name']}"
    allowed = _schema.kind_spec(kind)["progress"]["dataset"]
    g = _group(f, "progress")
    if _has_attr(g, "dataset"):
        named = _attr_string(g, "dataset")
        if not any(_strip(a) == _strip(named) for a in allowed):
            return (f'the `dataset` attribute of /progress is "{named}", not '
                    + " or ".join(f'"{a}"' for a in allowed))
    return (f"the file says it is of kind {kind}, but its datasets are "
            + (f"not those of kind {kind}" if guessed is None else f"those of kind {guessed}"))


# --- the checks (schema.json "checks"; io/info.cpp Checker is their twin) ----


class _Checker:
    """Runs a kind's checks in their order: each step binds a size or checks
    a record, and the first record that disagrees ends them (only the
    reading of /progress still happens). problem: that record's words, or
    None; vars: the sizes named; done, offsets: /progress's records."""

    def __init__(self, f, path, kind):
        self.f, self.path, self.kind = f, path, kind
        self.spec = _schema.kind_spec(kind)
        self.problem = None
        self.vars = {}
        self.done = np.zeros(0, np.uint8)
        self.offsets = None
        self._values = {}  # dataset -> its values as int64, flat (at, rowsum)

    def run(self):
        for st in self.spec["checks"]:
            progress = "progress" in st
            if self.problem is not None and not progress:
                continue
            if "when" in st and (self.problem is not None or self.eval(st["when"]) == 0):
                continue
            if not progress:
                self.step(st)
            elif not self.read_progress():
                break
        return self

    def eval(self, e):
        return _schema.eval_expr(e, self.vars.get, self.call)

    def call(self, fn, args):
        if fn == "exists":
            return int(_exists(self.f, args[0]))
        if fn == "named":
            return int(self.named(args[0]))
        if fn == "attr":
            return _attr_u64(self.open(args[0]), args[1])
        d = _dataset(self.f, args[0])
        if fn == "dim":
            dims, axis = _dims(d), int(args[1])
            return dims[axis] if axis < len(dims) else 0
        if fn in ("at", "rowsum"):  # i: a number or a size
            i = int(args[1]) if args[1].isdigit() else self.vars.get(args[1])
            if i is None:
                raise _schema.SchemaError(f"the size '{args[1]}' is not known here")
            if args[0] not in self._values:
                self._values[args[0]] = _read_all(d, h5t.NATIVE_INT64, np.int64).reshape(-1).view(np.uint64)
            values, dims = self._values[args[0]], _dims(d)
            if fn == "at":
                return int(values[i]) if i < len(values) else 0
            if not dims or i >= dims[0]:
                return 0
            row = len(values) // dims[0]
            return int(values[i * row:(i + 1) * row].sum(dtype=np.uint64))
        values = _read_all(d, h5t.NATIVE_INT64, np.int64)  # sum, modulo 2^64
        return int(values.reshape(-1).view(np.uint64).sum(dtype=np.uint64))

    def named(self, d):
        g = _group(self.f, "progress")
        name = _attr_string(g, "dataset") if _has_attr(g, "dataset") else self.spec["progress"]["dataset"][0]
        return _strip(name) == _strip(d)

    def open(self, name):
        """A dataset, a group (the schema says which) or "" the root."""
        if name == "":
            return self.f
        decl = _schema.dataset(self.kind, name)
        return _group(self.f, name) if decl and decl.get("group") else _dataset(self.f, name)

    def read_typed(self, obj, t, name):
        if t == "uint64":
            _attr_u64(obj, name)
        elif t == "float64":
            _attr_f64(obj, name)
        else:
            _attr_string(obj, name)

    def say(self, st):
        self.problem = st["message"]

    def step(self, st):
        f = self.f
        if "open" in st:
            for n in st["open"]:
                if _exists(f, n):
                    _dataset(f, n)
            return
        if "read" in st:
            obj = self.open(st["read"])
            # A dataset of variants: its picking attribute says which (an attribute of another variant is not read).
            by, variant = _schema.variant_by(self.kind, st["read"]), None
            if by is not None:
                variant = _schema.variant(self.kind, st["read"], _attr_string(obj, by) if _has_attr(obj, by) else None)
            for a in st["attrs"]:
                t, _ = _schema.attr_type(self.kind, st["read"], a, variant)
                if t is not None and _has_attr(obj, a):
                    self.read_typed(obj, t, a)
            return
        if "let" in st:
            if "expr" in st:
                v = self.eval(st["expr"])
            elif "attr" in st:
                objname, name = st["attr"].split("@", 1)
                obj = self.open(objname)
                if _has_attr(obj, name):
                    v = _attr_u64(obj, name)
                elif "default" in st:
                    v = self.eval(st["default"])
                else:
                    return self.say(st)
            else:
                x = _scalar_i64(f, st["scalar"])
                if x is None:
                    return self.say(st)
                v = x % _M64
            self.vars[st["let"]] = v
            return
        check = st["check"]
        if check == "true":
            if self.eval(st["expr"]) == 0:
                self.say(st)
        elif check == "exists":
            if not _exists(f, st["of"]):
                self.say(st)
        elif check == "rank":
            if len(_dims(_dataset(f, st["of"]))) != st["rank"]:
                self.say(st)
        elif check == "shape":
            if not _exists(f, st["of"]):
                self.problem = st.get("missing", st["message"])
                return
            d = _dataset(f, st["of"])
            dims, want = _dims(d), st["shape"]
            if len(dims) != len(want) or any(w != "*" and x != self.eval(w) for x, w in zip(dims, want)):
                return self.say(st)
            if "values" in st:  # the values must read as float64
                _read_all(d, h5t.NATIVE_DOUBLE, np.float64)
        elif check == "attr":
            objname, name = st["attr"].split("@", 1)
            obj = self.open(objname)
            if _has_attr(obj, name) and _attr_u64(obj, name) != self.eval(st["equals"]):
                self.say(st)
        elif check == "rising":  # 0, strictly increasing, up to `to`
            at = _read_all(_dataset(f, st["of"]), h5t.NATIVE_INT64, np.int64).reshape(-1)
            if (len(at) == 0 or at[0] != 0 or np.any(at[1:] <= at[:-1])
                    or int(at[-1]) % _M64 != self.eval(st["to"])):
                self.say(st)
        elif check == "offsets":  # one more than the flags, up to `to`, non-decreasing
            off = [int(x) for x in self.offsets]
            if (len(off) != len(self.done) + 1 or off[-1] != self.eval(st["to"])
                    or any(a > b for a, b in zip(off, off[1:]))):
                self.say(st)
        elif check == "dtype":  # where it exists, one of the dtypes its declaration allows
            if _exists(f, st["of"]) and _dtype_name(_dataset(f, st["of"]).id.get_type()) not in \
                    _schema.dataset(self.kind, st["of"])["dtype"]:
                self.say(st)
        elif check == "offsets_multiple":
            k = self.eval(st["of"])
            if k == 0 or any(int(o) % k for o in self.offsets):
                self.say(st)
        elif check == "each":  # expr holds for every index 0 .. count-1; the first that fails is named
            index, count = st["index"], self.eval(st["count"])
            before = self.vars.get(index)
            try:
                for i in range(count):
                    self.vars[index] = i
                    if self.eval(st["expr"]) == 0:
                        self.problem = f"{st['message']} ({index} = {i})"
                        break
            finally:
                if before is None:
                    self.vars.pop(index, None)
                else:
                    self.vars[index] = before
        else:
            raise _schema.SchemaError(f'schema.json: unknown check "{check}"')

    def read_progress(self):
        """/progress/done (and /progress/offsets, unless the kind has none),
        each read whole into a 1-D buffer: a scalar cannot be read so (exit
        1), more values than the first dimension (K x 2, 2 x K) make the file
        inconsistent (K x 1 reads as K). Binds chunks, finished (flags that are
        1), complete and covered (the elements of the chunks flagged anything but
        0). False when the checks end here."""
        names = ["progress/done"]
        if self.spec["progress"].get("offsets", True):
            names.append("progress/offsets")
        ds = [_dataset(self.f, n) for n in names]
        for n, d in zip(names, ds):
            if _dims(d) == ():
                raise _Unreadable(f"'{self.path}': /{n} is a scalar")
        for n, d in zip(names, ds):
            if _elements(d.shape) != _dims(d)[0]:
                if self.problem is None:
                    self.problem = f"/{n} is not 1-D"
                return False
        self.done = _read_all(ds[0], h5t.NATIVE_UINT8, np.uint8).reshape(-1)
        if len(ds) > 1:
            self.offsets = _read_all(ds[1], h5t.NATIVE_UINT64, np.uint64).reshape(-1)
        off = [int(x) for x in self.offsets] if self.offsets is not None else []
        finished = covered = 0
        for c, flag in enumerate(self.done):  # covered: chunks flagged anything but 0, as always
            finished += int(flag == 1)
            if flag and c + 1 < len(off):
                covered = (covered + off[c + 1] - off[c]) % _M64
        self.vars.update(chunks=len(self.done), finished=finished, complete=int(finished == len(self.done)),
                         covered=covered)
        return True


def _check_open(f, path, file):
    """The verdict on an open file, as describe_file."""
    has, recorded, version, problem = _recorded(f, file)
    if problem is not None:
        return Verdict(INCONSISTENT, f"inconsistent: {problem}", path, file, schema_version=version)
    guessed, why = _guess(f)
    if not has and guessed is None:
        return Verdict(NOT_A_RESULT, why, path, file)
    kind = recorded if has else guessed
    if has and guessed != recorded:
        return Verdict(INCONSISTENT, f"inconsistent: {_contradiction(f, kind, guessed)}", path, file, kind,
                       schema_version=version)
    spec = _schema.kind_spec(kind)
    if kind != "triplet":
        _dataset(f, spec["result"])
    if kind != "fractal" and _exists(f, "points"):
        _dataset(f, "points")
    c = _Checker(f, file, kind).run()

    def verdict(status, message):
        return Verdict(status, message, path, file, kind, spec["result"], c.done, c.offsets, version)

    if c.problem is not None:
        return verdict(INCONSISTENT, f"inconsistent: {c.problem}")
    chunk = spec["progress"]["chunk"]
    chunks, finished = c.vars["chunks"], c.vars["finished"]
    if finished == chunks:
        return verdict(COMPLETE, f"complete ({finished} of {chunks} {chunk}s)")
    message = f"INCOMPLETE: {finished} of {chunks} {chunk}s written"
    if "unit" in spec["progress"]:
        total = c.vars.get("total", 0)
        pct = 100.0 * c.vars["covered"] / total if total else 0.0
        message += f" ({pct:.1f}% of {spec['progress']['unit']})"
    return verdict(INCOMPLETE, f"{message}; missing {chunk}s {_missing_ranges(c.done)}")


def _resolve(path):
    """(file to read, output name) as describe_result: FILE.h5.partial is
    read when FILE.h5 does not exist."""
    path = os.fspath(path)
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    suffix = ".partial"
    is_partial = len(path) > len(suffix) and path.endswith(suffix)
    output = path[:-len(suffix)] if is_partial else path
    file = path
    if not is_partial and not os.path.exists(path) and os.path.exists(output + suffix):
        file = output + suffix
    return path, file, output


def _inspect_here(path, file, output):
    """The verdict, computed in this process (the child of inspect): HDF5
    reads the file. As io/info.cpp describe_file: never raises."""

    def unreadable(why):
        return Verdict(UNREADABLE, f"unreadable: {why}", path, file)

    try:
        if not h5py.h5f.is_hdf5(file.encode()):
            return unreadable(f"'{file}' is not an HDF5 file")
    except Exception as e:
        return unreadable(f"'{file}' is not an HDF5 file ({e.__class__.__name__})")
    try:
        f = h5py.File(file, "r")
    except Exception as e:
        return unreadable(f"cannot open '{file}': {e}")
    try:
        try:
            _isolate.walk(f, file)  # what HDF5 cannot read is a damaged file, not a verdict
            v = _check_open(f, path, file)
        except _isolate.Damaged as e:
            return unreadable(str(e))
        except _Inconsistent as e:
            v = Verdict(INCONSISTENT, f"inconsistent: {e}", path, file)
        except _Unreadable as e:
            v = unreadable(str(e))
        except Exception as e:  # OSError, KeyError, MemoryError, ...: a read that failed
            v = unreadable(f"{e.__class__.__name__}: {e}")
    finally:
        try:  # quietly, as io/h5.hpp's Hid: h5py closes every id of the file, and damage
            f.close()  # can leave one it cannot ("Can't decrement id ref count")
        except Exception:  # noqa: B902
            pass
    if file != output and v.status == COMPLETE:
        # Every chunk is flagged, but the run has not renamed it yet.
        v.status = INCOMPLETE
        v.message = (f"INCOMPLETE: every chunk is written, but the run has not renamed {file} to {output} "
                     "(still finishing, or stopped just before)")
    elif file != path and v.status != UNREADABLE:
        v.message += f" (read {file}: {path} does not exist yet, its run is unfinished)"
    return v


def inspect(path, keep_open=False, timeout=None):
    """(Verdict, open h5py.File or None). With keep_open, the file stays open
    when it is complete or incomplete (the caller closes it). HDF5 reads the file first
    in a child process (_isolate): a file that makes it crash or loop is
    "unreadable: damaged: ..."; a path that is no regular file (a FIFO, a
    device, a directory, a socket) is never opened. timeout: seconds the
    child may take (default TDSOLVE_READ_TIMEOUT_S, else 120)."""
    path, file, output = _resolve(path)

    def unreadable(why):
        return Verdict(UNREADABLE, f"unreadable: {why}", path, file)

    try:
        st = os.stat(file)
    except OSError as e:
        return unreadable(f"cannot open '{file}': {e.strerror}"), None
    if not stat.S_ISREG(st.st_mode):
        return unreadable(_isolate.not_regular(file, st.st_mode)), None
    try:
        v = _isolate.call(_inspect_here, (path, file, output), file, timeout)
    except _isolate.Damaged as e:
        return unreadable(str(e)), None
    except RuntimeError as e:  # the child's own error, where a read failed past every check
        return unreadable(str(e)), None
    # Opened here only when the child found its records agreeing: HDF5 may
    # survive a damaged file in one process and not in another.
    if not keep_open or v.status not in (COMPLETE, INCOMPLETE):
        return v, None
    try:  # it survived the child's walk, which read all that a Result reads of it
        f = h5py.File(file, "r")
    except Exception as e:
        return unreadable(f"cannot open '{file}': {e}"), None
    return v, f


def check(path, timeout=None):
    """The verdict of `tdsolve info path` on a result file, as a Verdict
    (never raises for a bad file: an unreadable one, a damaged one among
    them, is status "unreadable"). HDF5 reads the file in a child process;
    timeout: the seconds it may take (default TDSOLVE_READ_TIMEOUT_S, else
    120) before the file is called damaged."""
    return inspect(path, timeout=timeout)[0]
