"""tdsolve.validate(path): does a file hold exactly what its kind's
description in schema.json says — every dataset with its dtype, shape, axis
names (dimension scales) and attributes (their types), the root's
attributes, and nothing undeclared? Stricter than tdsolve.check, which
decides only whether a file is complete (the records its readers rely on);
the tests hold every file the program writes to it."""
import os
import stat

import h5py
import numpy as np
from h5py import h5a, h5t

from . import _isolate, _schema, _verdict

# What HDF5's dimension scales (H5DS) put on datasets and scales.
_SCALE_ATTRS = {"DIMENSION_LIST", "REFERENCE_LIST", "CLASS", "NAME", "_Netcdf4Dimid"}
_DTYPE_NAMES = {("u", 1): "uint8", ("i", 8): "int64", ("u", 8): "uint64", ("f", 4): "float32", ("f", 8): "float64"}


def _dtype_name(dt):
    if h5py.check_string_dtype(dt) is not None:
        return "string"
    if dt.byteorder not in "<=|" or (dt.byteorder == "=" and np.little_endian is False):
        return f"{dt} (not little-endian)"
    return _DTYPE_NAMES.get((dt.kind, dt.itemsize), str(dt))


def _attr_problem(obj, name, decl):
    """What is wrong with attribute `name` of obj for declared type decl ("uint64", "string?", ...), or None."""
    t, optional = decl.rstrip("?"), decl.endswith("?")
    if not h5a.exists(obj.id, name.encode()):
        return None if optional else "is missing"
    aid = h5a.open(obj.id, name.encode())
    if aid.shape != ():
        return f"is not one value (shape {aid.shape})"
    ty = aid.get_type()
    cls = ty.get_class()
    ok = {"uint64": cls == h5t.INTEGER and ty.get_size() == 8 and ty.get_sign() == h5t.SGN_NONE,
          "float64": cls == h5t.FLOAT and ty.get_size() == 8,
          "string": cls == h5t.STRING}[t]
    return None if ok else f"is not a {t}"


def validate(path, timeout=None):
    """What in the file at `path` departs from its kind's description in
    schema.json: a list of lines, [] when it conforms. A file HDF5 cannot
    read whole is one line, "damaged: ..." (read in a child process, as
    tdsolve.check: a crash or a walk past `timeout` seconds is damage); a
    path that is no regular file one line saying what it is. Raises OSError
    when the file cannot be opened at all."""
    path = os.fspath(path)
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        return [_isolate.not_regular(path, st.st_mode)]
    try:
        out, error = _isolate.call(_validate_here, (path,), path, timeout)
    except _isolate.Damaged as e:
        return [str(e)]
    if error is not None:
        raise OSError(error)
    return out


def _validate_here(path):
    """(lines, None), or (None, why) when h5py cannot open the file; in the child of validate."""
    try:
        f = h5py.File(path, "r")
    except Exception as e:
        return None, f"{e.__class__.__name__}: {e}"
    out = []
    with f:
        try:
            _isolate.walk(f, path)
            _check(f, path, out)
        except _isolate.Damaged as e:
            return [str(e)], None
        except (_verdict._Unreadable, _verdict._Inconsistent) as e:
            out.append(str(e))
    return out, None


def _check(f, path, out):
    """Appends to out what departs from the description."""
    has, kind, version, problem = _verdict._recorded(f, path)
    if problem:
        return out.append(problem)
    guessed, why = _verdict._guess(f)
    if not has:
        out.append("the root records no kind and schema_version (a file of an older tdsolve)")
        kind = guessed
        if kind is None:
            return out.append(why)
    elif guessed != kind:
        return out.append(_verdict._contradiction(f, kind, guessed))
    spec = _schema.kind_spec(kind)
    c = _verdict._Checker(f, path, kind).run()
    if c.problem is not None:
        out.append(f"its checks: {c.problem}")
    sizes = dict(c.vars)
    for name, e in spec.get("sizes", {}).items():
        if name not in sizes:
            try:
                sizes[name] = _schema.eval_expr(e, sizes.get, c.call)
            except (_schema.SchemaError, _verdict._Unreadable, _verdict._Inconsistent, KeyError, OSError):
                pass

    root = dict(_schema.SCHEMA["root"], **spec.get("root", {}))
    for name, decl in root.items():
        p = _attr_problem(f, name, decl)
        if p:
            out.append(f"root attribute `{name}` {p}")
    for name in sorted(set(f.attrs) - set(root)):
        out.append(f"root attribute `{name}` is not declared")

    declared = set()
    for d in _schema.datasets(kind):
        name = d["name"]
        declared.add(name)
        if name not in f:
            if d.get("required"):
                out.append(f"no /{name}")
            continue
        obj = f[name]
        if d.get("group"):
            if not isinstance(obj, h5py.Group):
                out.append(f"/{name} is not a group")
                continue
        elif not isinstance(obj, h5py.Dataset):
            out.append(f"/{name} is not a dataset")
            continue
        else:
            out += [f"/{name} {p}" for p in _dataset_problems(obj, d, sizes, kind, f)]
        attrs = d.get("attrs", {})
        if "variants" in d:  # the common attributes and those of the variant the file is of
            attrs = dict(attrs, **_variant_attrs(kind, obj, d, out))
        for a, decl in attrs.items():
            p = _attr_problem(obj, a, decl)
            if p:
                out.append(f"attribute `{a}` of /{name} {p}")
        for a in sorted(set(obj.attrs) - set(attrs) - _SCALE_ATTRS):
            out.append(f"attribute `{a}` of /{name} is not declared")

    def visit(name, obj):
        scale = isinstance(obj, h5py.Dataset) and obj.attrs.get("CLASS") in (b"DIMENSION_SCALE", "DIMENSION_SCALE")
        if name not in declared and not scale:
            out.append(f"/{name} is not declared")
    f.visititems(visit)


def _variant_attrs(kind, obj, d, out):
    """The attributes of the variant dataset obj is of (its picking attribute
    names it; otherwise the default, and out says so when it names none)."""
    v, name = d["variants"], d["name"]
    try:
        value = obj.attrs.get(v["by"]) if h5a.exists(obj.id, v["by"].encode()) else None
    except (OSError, TypeError, ValueError):  # h5py cannot read it: `by`'s own line says what is wrong
        value = None
    value = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    if isinstance(value, str) and value not in v["attrs"]:
        out.append(f"attribute `{v['by']}` of /{name} is {value!r}, not " + " or ".join(map(repr, v["attrs"])))
    return _schema.variant_attrs(kind, name, _schema.variant(kind, name, value if isinstance(value, str) else None))


def _dataset_problems(ds, d, sizes, kind, f):
    out = []
    if _dtype_name(ds.dtype) not in d["dtype"]:
        out.append(f"is {_dtype_name(ds.dtype)}, not {' or '.join(d['dtype'])}")
    shape = ds.shape or ()
    if d.get("list") and (not ds.maxshape or ds.maxshape[0] is not None):
        out.append("is not extensible along its first axis")
    # Its form of this rank (the first whose coordinates the file has: _schema.form).
    form = _schema.form(kind, d["name"], len(shape), lambda x: x in f)
    if form is None:
        ranks = sorted({len(x["shape"]) for x in _schema.forms(kind, d["name"])})
        out.append(f"has {len(shape)} axes, not {' or '.join(map(str, ranks))}")
        return out
    for axis, (x, w) in enumerate(zip(shape, form["shape"])):
        if w == "*":
            continue
        try:
            v = _schema.eval_expr(w, sizes.get, None)
        except _schema.SchemaError:
            out.append(f"axis {axis}: its size {w} is not known (the checks stopped before it)")
            continue
        if x != v:
            out.append(f"axis {axis} is {x}, not {w} = {v}")
    dims = form["dims"]
    if dims and ds.name == "/" + dims[0] and len(shape) == 1:
        # A coordinate (hist's /r, /pair): itself the scale of its dimension, named after it.
        if ds.attrs.get("CLASS") not in (b"DIMENSION_SCALE", "DIMENSION_SCALE"):
            out.append(f"is not the dimension scale of its dimension {dims[0]!r} (a coordinate)")
        elif _text(ds.attrs.get("NAME")) != dims[0]:
            out.append(f"is a dimension scale named {_text(ds.attrs.get('NAME'))!r}, not {dims[0]!r}")
        return out
    for axis in range(len(shape)):
        attached = [s.name for s in ds.dims[axis].values()]
        want_scale = ["/" + dims[axis]] if dims else []
        if attached != want_scale:
            out.append(f"axis {axis} has the dimension scales {attached}, not {want_scale}")
    return out


def _text(v):
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
