"""A file says what it is (docs/output.md, "What a file says it is"): its root
attributes `kind` and `schema_version`, and one description per kind in
python/tdsolve/schema.json from which `tdsolve info` and the package's
tdsolve.check both work.

- schema.json is well-formed (the package's lint of it; the C++ one is a unit test);
- every kind the program writes records its kind and schema_version, and
  validates against its description: every dataset with its dtype, shape,
  axis names and attributes, nothing undeclared (tdsolve.validate);
- a file stripped of kind and schema_version (as files were written before)
  reads as it did: the same verdict, the same values, and `tdsolve info`
  says the same but for its kind line;
- `tdsolve info` and tdsolve.check give the same exit status and the same
  verdict (complete, incomplete, inconsistent, not a result, unreadable) on
  every damaged file of the package's and the fractal suites' cases, each as
  written (with kind) and stripped (without), and on every kind's files with
  a damaged, wrong, unknown or newer kind or schema_version. With and without
  kind, a file's verdict is the same, but that a file that says its kind and
  lacks a dataset the kind needs is inconsistent rather than no result.
"""
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import h5py
import numpy as np

from common import BIN, set_value, tdsolve
import test_fractal as tfr
import test_package as tp

PACKAGE_SRC = tp.PACKAGE_SRC
import tdsolve as tdpkg  # noqa: E402  (test_package put the package on sys.path)
from tdsolve import _schema  # noqa: E402

WORKERS = 4
DIR = None
KINDS = ("edm", "cross", "hist", "knn", "radius", "collide", "triplet", "adf", "fractal")
# The package suite's files (test_package.F) and their kinds; knn* and radius* are synthetic
# (tests/e2e/knn_files.py), written without kind.
TP_KINDS = {"edm": "edm", "edm32": "edm", "cross": "cross", "hist": "hist", "stopped": "edm", "trip": "triplet",
            "trip0": "triplet", "trip_stopped": "triplet", "knn": "knn", "knn32": "knn", "knn_plain": "knn",
            "radius": "radius", "radius_stopped": "radius", "radius_plain": "radius", "radius_none": "radius"}
# This suite's own files, written by the program: name -> (kind, command line).
COMMON = ["--threads", "1", "--progress", "none", "--quiet"]
OWN = {
    "edm_params": ("edm", ["edm", "--generate", "uniform:200:3:4", "--metric", "minkowski", "--p", "3", "--weights",
                           "1,2,0.5", "--store-points", "--chunk-mb", "1"]),
    "edm_seuclidean": ("edm", ["edm", "--generate", "uniform:150:4:2", "--metric", "seuclidean", "--precision",
                               "float64"]),
    "cross32": ("cross", ["cross", "--generate", "uniform:300:3:1", "--with-generate", "uniform:40:3:2"]),
    "hist_box": ("hist", ["hist", "--generate", "uniform:300:3:3", "--bins", "12", "--range", "0:0.5", "--box",
                          "1,1,1"]),
    "knn_k": ("knn", ["knn", "--generate", "uniform:300:3:5", "--k", "6", "--chunk-mb", "1"]),
    "knn_radius": ("radius", ["knn", "--generate", "uniform:300:3:5", "--radius", "0.2", "--metric", "cityblock"]),
    "collide3": ("collide", ["collide", "--generate", "spheres:400:3:7"]),
    "collide1": ("collide", ["collide", "--generate", "spheres:200:1:7"]),
    "adf_box": ("adf", ["adf", "--generate", "uniform:300:3:3", "--bins", "12", "--cutoff", "0.2", "--box",
                        "1,1,1"]),
    # Two ADFs (2-D /counts, /triple) of every type, as cosines.
    "adf_triples": ("adf", ["adf", "--generate", "uniform:200:3:4", "--bins", "10", "--ordinate", "cosine",
                            "--triples", "*-*-*:0:0.2:0:0.3,*-*-*:0.1:0.3:0:0.2"]),
    "trip_points": ("triplet", ["triplet", "--generate", "uniform:60:3:9", "--store-points"]),
    # Stillinger-Weber: /energy carries sw's parameters, not atm's (the schema's variants of /energy).
    "trip_sw": ("triplet", ["triplet", "--generate", "uniform:60:3:9", "--potential", "sw", "--sigma", "0.3",
                            "--store-triplets"]),
}
F = {}  # name -> path of every base file written as it is (with kind, where the program wrote it)
OLD = {}  # name -> the same, stripped of kind and schema_version
KIND = {}  # name -> kind


def strip(path):
    with h5py.File(path, "a") as f:
        for a in ("kind", "schema_version"):
            if a in f.attrs:
                del f.attrs[a]


def stamp(path, kind):
    """What the program writes at the root, on a synthetic file."""
    with h5py.File(path, "a") as f:
        f.attrs["kind"] = kind
        f.attrs["schema_version"] = np.uint64(_schema.SCHEMA_VERSION)


def copy_with(path, dst, fn):
    """Copies path (and path.partial) to dst (and dst.partial), each edited by fn."""
    for suffix in ("", ".partial"):
        if os.path.exists(path + suffix):
            shutil.copy(path + suffix, dst + suffix)
            fn(dst + suffix)
    return dst


def setUpModule():
    global DIR
    tp.setUpModule()
    DIR = tempfile.mkdtemp(prefix="tdsolve_schema_")
    for name, (kind, args) in OWN.items():
        F[name] = os.path.join(DIR, name + ".h5")
        tdsolve(*args, "--output", F[name], *COMMON, check=True)
        KIND[name] = kind
    F["fractal"] = os.path.join(DIR, "fractal.h5")
    tfr.run_fractal(F["fractal"], "--shape", "sierpinski-carpet", "--level", 3, "--steps", 10, "--snapshot-every", 3)
    KIND["fractal"] = "fractal"
    # A stopped collide run (its flags are all set together at the end: none here).
    F["collide_stopped"] = os.path.join(DIR, "collide_stopped.h5")
    r = tdsolve("collide", "--generate", "spheres:3000:3:5", "--chunk-mb", "1", "--block", "16", "--output",
                F["collide_stopped"], *COMMON, env={"TDSOLVE_TEST_FAULT": "0:2:kill"})
    assert r.returncode != 0 and os.path.exists(F["collide_stopped"] + ".partial"), r.stdout + r.stderr
    KIND["collide_stopped"] = "collide"
    for name, kind in TP_KINDS.items():
        KIND[name] = kind
        if name.startswith(("knn", "radius")):  # synthetic: the new variant is stamped
            F[name] = copy_with(tp.F[name], os.path.join(DIR, name + ".h5"), lambda p, k=kind: stamp(p, k))
        else:
            F[name] = tp.F[name]
    for name, path in F.items():
        OLD[name] = copy_with(path, os.path.join(DIR, name + ".old.h5"), strip)


def tearDownModule():
    tp.tearDownModule()
    shutil.rmtree(DIR, ignore_errors=True)


def info_class(r):
    """The verdict `tdsolve info` gave, from its exit status and output."""
    if r.returncode == 1:
        return "unreadable"
    if r.returncode == 0:
        return "complete"
    if r.returncode != 3:
        return f"exit {r.returncode}"
    if "progress:  INCONSISTENT: " in r.stdout:
        return "inconsistent"
    if "status:    not a tdsolve result" in r.stdout:
        return "not a result"
    return "incomplete"


def judge(paths):
    """[(info's run, the package's Verdict)] of each path."""
    with concurrent.futures.ThreadPoolExecutor(WORKERS) as ex:
        runs = list(ex.map(lambda p: subprocess.run([BIN, "info", p], capture_output=True, text=True, timeout=60),
                           paths))
    return [(r, tdpkg.check(p)) for r, p in zip(runs, paths)]


def _attr(name, value):
    def fn(f):
        if value is None:
            del f.attrs[name]
        else:
            f.attrs[name] = value
    return fn


def _drop(name):
    def fn(f):
        del f[name]
    return fn


def _energy_attr(name, value):
    def fn(f):
        if value is None:
            del f["energy"].attrs[name]
        else:
            f["energy"].attrs[name] = value
    return fn


# The triplet kind's /energy has atm's or sw's attributes, by its `potential` (the schema's variants):
# readers read those of its potential (atm's when it names none they know), as they did.
# (name, edit, the verdict)
POTENTIAL = [
    ("sw: epsilon a string", "trip_sw", _energy_attr("epsilon", "one"), "unreadable"),
    ("sw: costheta0 2 values", "trip_sw", _energy_attr("costheta0", np.array([0.5, 0.5])), "inconsistent"),
    ("sw: no gamma", "trip_sw", _energy_attr("gamma", None), "complete"),
    ("sw: nu a string (atm's: not read)", "trip_sw", _energy_attr("nu", "one"), "complete"),
    ("sw: potential atm (then epsilon is not read)", "trip_sw",
     lambda f: (_energy_attr("potential", "atm")(f), _energy_attr("epsilon", "one")(f)), "complete"),
    ("sw: potential lj, nu a string (read as atm's)", "trip_sw",
     lambda f: (_energy_attr("potential", "lj")(f), _energy_attr("nu", "one")(f)), "unreadable"),
    ("sw: potential an integer, epsilon a string", "trip_sw",
     lambda f: (_energy_attr("potential", np.uint64(2))(f), _energy_attr("epsilon", "one")(f)), "complete"),
    ("sw: potential 2 strings", "trip_sw", _energy_attr("potential", np.array([b"sw", b"sw"])), "inconsistent"),
    ("sw: no potential, cutoff a string", "trip_sw",
     lambda f: (_energy_attr("potential", None)(f), _energy_attr("cutoff", "far")(f)), "unreadable"),
    ("atm: potential sw, epsilon a string", "trip0",
     lambda f: (_energy_attr("potential", "sw")(f), _energy_attr("epsilon", "one")(f)), "unreadable"),
    ("atm: potential sw, nu a string (not read)", "trip0",
     lambda f: (_energy_attr("potential", "sw")(f), _energy_attr("nu", "one")(f)), "complete"),
]


# (name, edit, the verdict on a file written with kind; None: as that file is written)
GENERIC = [
    ("as written", None, None),
    ("a done flag cleared", set_value("progress/done", 0, 0), None),
    ("no /progress/done", _drop("progress/done"), "inconsistent"),
    ("kind and schema_version removed (an older file)", lambda f: (_attr("kind", None)(f),
                                                                  _attr("schema_version", None)(f)), None),
    ("kind removed", _attr("kind", None), "inconsistent"),
    ("schema_version removed", _attr("schema_version", None), "inconsistent"),
    ("kind an integer", _attr("kind", np.uint64(1)), "inconsistent"),
    ("kind: 2 strings", lambda f: _attr("kind", [f.attrs["kind"]] * 2)(f), "inconsistent"),
    ("kind empty", _attr("kind", ""), "unreadable"),
    ("kind unknown", _attr("kind", "voronoi"), "unreadable"),
    ("schema_version 4 (newer)", _attr("schema_version", np.uint64(4)), "unreadable"),
    ("schema_version 1 (an earlier one)", _attr("schema_version", np.uint64(1)), None),
    ("schema_version 1000 as int64 (newer)", _attr("schema_version", np.int64(1000)), "unreadable"),
    ("schema_version a string", _attr("schema_version", "1"), "inconsistent"),
    ("schema_version 0", _attr("schema_version", np.uint64(0)), "inconsistent"),
    ("schema_version -1", _attr("schema_version", np.int64(-1)), "inconsistent"),
    ("schema_version 1.0 (a float)", _attr("schema_version", 1.0), "inconsistent"),
    ("schema_version: 2 values", _attr("schema_version", np.array([1, 1], np.uint64)), "inconsistent"),
    ("schema_version 1 as int32", _attr("schema_version", np.int32(1)), None),
] + [(f"kind says {k}", _attr("kind", k), "inconsistent") for k in KINDS]
NEWER = {name for name, _, want in GENERIC if want == "unreadable"}  # a kind or version this tdsolve does not know


class SchemaTest(unittest.TestCase):
    def test_the_schema_is_well_formed(self):
        self.assertEqual(_schema.problems(), [])
        self.assertEqual(tuple(_schema.SCHEMA["kinds"]), KINDS)
        self.assertEqual(tdpkg.SCHEMA_VERSION, 3)
        # The lint sees what is wrong.
        bad = {**_schema.SCHEMA, "kinds": {"edm": dict(_schema.SCHEMA["kinds"]["edm"])}}
        bad["kinds"]["edm"]["checks"] = bad["kinds"]["edm"]["checks"] + [{"check": "shape", "of": "nowhere",
                                                                          "shape": ["n +"], "message": "m"}]
        self.assertEqual(len(_schema.problems(bad)), 2, _schema.problems(bad))
        # The triplet kind's /energy: atm's or sw's attributes, by `potential`, atm's by default.
        self.assertEqual(_schema.variant_by("triplet", "energy"), "potential")
        self.assertEqual([_schema.variant("triplet", "energy", p) for p in ("sw", "atm", None, "lj", 3)],
                         ["sw", "atm", "atm", "atm", "atm"])
        self.assertEqual(list(_schema.variant_attrs("triplet", "energy", "sw")),
                         ["epsilon", "sigma", "a", "lambda", "gamma", "costheta0"])
        self.assertEqual(list(_schema.variant_attrs("triplet", "energy", "atm")),
                         ["nu", "cutoff", "cutoff_triple", "nu_types", "type_names", "type_source"])
        trip = json.loads(json.dumps(_schema.SCHEMA["kinds"]["triplet"]))
        energy = next(d for d in trip["datasets"] if d["name"] == "energy")
        energy["variants"]["default"] = "lj"  # no such variant
        energy["variants"]["attrs"]["sw"]["n"] = "uint64"  # also common
        bad = {**_schema.SCHEMA, "kinds": {"triplet": trip}}
        self.assertEqual(len(_schema.problems(bad)), 2, _schema.problems(bad))

    def test_every_kind_written_validates(self):
        written = {KIND[n] for n in F if n in OWN or n in ("fractal", "collide_stopped") or n in tp.F and not
                   n.startswith(("knn", "radius"))}
        self.assertEqual(written, set(KINDS))
        for name, path in F.items():
            if name.startswith(("knn", "radius")):
                continue  # synthetic
            with self.subTest(file=name):
                read = path if os.path.exists(path) else path + ".partial"
                with h5py.File(read, "r") as f:
                    self.assertEqual(f.attrs["kind"], KIND[name])
                    self.assertEqual(f.attrs["schema_version"], 3)
                    self.assertEqual(f.attrs["schema_version"].dtype, np.uint64)
                self.assertEqual(tdpkg.validate(read), [])

    def test_validate_finds_departures(self):
        cases = [("edm", lambda f: f["distances"].attrs.__setitem__("extra", 1), "`extra` of /distances"),
                 ("edm", lambda f: f["distances"].attrs.__setitem__("block", 1.5), "`block` of /distances"),
                 ("hist", lambda f: f.create_dataset("junk", data=[1]), "/junk is not declared"),
                 ("knn_k", lambda f: f["indices"].dims[0].detach_scale(f["point"]), "/indices axis 0"),
                 ("fractal", lambda f: f["states"].attrs.__delitem__("backend"), "`backend` of /states"),
                 ("trip0", lambda f: tp._replace(f, "forces", f["forces"][()].astype(np.float32)), "/forces is"),
                 ("cross", lambda f: f.attrs.__delitem__("with"), "root attribute `with`"),
                 ("trip_sw", _energy_attr("gamma", None), "attribute `gamma` of /energy is missing"),
                 ("trip_sw", _energy_attr("nu", 1.0), "attribute `nu` of /energy is not declared"),
                 ("trip_sw", _energy_attr("sigma", "far"), "attribute `sigma` of /energy"),  # unreadable, its checks say
                 ("trip_sw", _energy_attr("potential", "lj"), "attribute `potential` of /energy is 'lj'"),
                 ("trip0", _energy_attr("epsilon", 1.0), "attribute `epsilon` of /energy is not declared"),
                 ("trip0", _energy_attr("cutoff", None), "attribute `cutoff` of /energy is missing")]
        for i, (base, fn, want) in enumerate(cases):
            with self.subTest(base=base, want=want):
                p = os.path.join(DIR, f"v{i}.h5")
                shutil.copy(F[base], p)
                with h5py.File(p, "a") as f:
                    fn(f)
                problems = tdpkg.validate(p)
                self.assertTrue(any(want in x for x in problems), problems)
        self.assertTrue(any("no kind" in x for x in tdpkg.validate(OLD["edm"])))

    def test_old_files_read_as_before(self):
        """Stripped of kind and schema_version, every file reads as it did."""
        names = sorted(n for n in F if not n.startswith(("knn", "radius")) or n in ("knn_k", "knn_radius"))
        new, old = judge([F[n] for n in names]), judge([OLD[n] for n in names])
        for name, (ni, nv), (oi, ov) in zip(names, new, old):
            with self.subTest(file=name):
                self.assertEqual((ov.status, ov.kind, ov.dataset, ov.chunks, ov.chunks_done),
                                 (nv.status, nv.kind, nv.dataset, nv.chunks, nv.chunks_done))
                self.assertEqual(ov.message.replace(OLD[name], F[name]), nv.message)
                self.assertEqual((nv.schema_version, ov.schema_version), (3, None))

                def lines(r):
                    return [l.replace(OLD[name], "FILE").replace(F[name], "FILE") for l in r.stdout.splitlines()
                            if not l.startswith(("file:", "kind:"))]
                self.assertEqual(oi.returncode, ni.returncode)
                self.assertEqual(lines(oi), lines(ni))
                self.assertIn(f"kind:      {KIND[name]} (schema_version 3)", ni.stdout)
                self.assertIn(f"kind:      {KIND[name]} (not recorded", oi.stdout)
                if nv.complete:
                    with tdpkg.open(F[name]) as a, tdpkg.open(OLD[name]) as b:
                        self.assertEqual((type(a), a.kind, a.chunks, a.chunks_done, set(a.attrs)),
                                         (type(b), b.kind, b.chunks, b.chunks_done, set(b.attrs)))
                        self.assertEqual(set(a.file_attrs) - set(b.file_attrs), {"kind", "schema_version"})
                        try:
                            va, vb = a[:], b[:]
                        except TypeError:  # a kind without [] (triplet energies not stored)
                            continue
                        for x, y in zip(va if isinstance(va, tuple) else (va,), vb if isinstance(vb, tuple) else (vb,)):
                            np.testing.assert_array_equal(x, y)

    def test_info_and_check_agree_on_every_damaged_file(self):
        tmp = tempfile.mkdtemp(prefix="cases_", dir=DIR)
        cases = []  # (name, variant, path, the verdict wanted or None)

        # The package suite's cases, on each file as written and stripped.
        saved = dict(tp.F)
        try:
            for variant, files in (("new", F), ("old", OLD)):
                tp.F.update({n: files[n] for n in TP_KINDS})
                for i, (name, base, edit, _, _) in enumerate(tp.CASES):
                    d = os.path.join(tmp, f"p{variant}{i:03d}")
                    os.mkdir(d)
                    cases.append((name, variant, tp.make_case(d, i, base, edit), None))
        finally:
            tp.F.clear()
            tp.F.update(saved)

        # The fractal suite's cases, on the fractal file as written and stripped.
        for variant, files in (("new", F), ("old", OLD)):
            for i, (name, edit, _) in enumerate(tfr.CASES):
                path = os.path.join(tmp, f"f{variant}{i:03d}.h5")
                shutil.copy(files["fractal"], path)
                if edit == "as-partial":
                    os.rename(path, path + ".partial")
                elif edit == "partial-cleared":
                    with h5py.File(path, "a") as f:
                        tfr.set_value("progress/done", 2, 0)(f)
                    os.rename(path, path + ".partial")
                elif edit == "truncate":
                    os.truncate(path, os.path.getsize(path) // 2)
                elif edit is not None:
                    with h5py.File(path, "a") as f:
                        edit(f)
                cases.append(("fractal: " + name, variant, path, None))

        # The potential's attributes, on files with and without kind.
        for variant, files in (("new", F), ("old", OLD)):
            for j, (name, base, edit, want) in enumerate(POTENTIAL):
                path = os.path.join(tmp, f"s{variant}{j:02d}.h5")
                shutil.copy(files[base], path)
                with h5py.File(path, "a") as f:
                    edit(f)
                cases.append((name, variant, path, want))

        # Kind and schema_version damaged, on a file of every kind (a stopped one too).
        for base in ("edm", "cross", "hist_box", "knn_k", "knn_radius", "collide3", "collide_stopped", "trip",
                     "trip0", "trip_sw", "fractal", "stopped"):
            for j, (name, edit, want) in enumerate(GENERIC):
                if name == f"kind says {KIND[base]}":
                    continue
                path = os.path.join(tmp, f"g_{base}_{j:02d}.h5")
                partial = not os.path.exists(F[base])
                dst = path + ".partial" if partial else path
                shutil.copy(F[base] + (".partial" if partial else ""), dst)
                if edit is not None:
                    with h5py.File(dst, "a") as f:
                        edit(f)
                cases.append((f"{base}: {name}", "new", path, want))

        verdicts = judge([c[2] for c in cases])
        table, by_case = [], {}
        for (name, variant, path, want), (info, v) in zip(cases, verdicts):
            said = info_class(info)
            table.append(f"{variant} {name:60s} info {info.returncode} {said:13s} package {v.exit_code} {v.status}")
            by_case.setdefault(name, {})[variant] = v.status
            with self.subTest(case=name, variant=variant):
                self.assertEqual((info.returncode, said), (v.exit_code, v.status),
                                 f"{name} ({variant}): tdsolve info says {said} ({info.returncode}), the package "
                                 f"{v.status} ({v.message})\n{info.stdout}{info.stderr}")
                if want is not None:
                    self.assertEqual(v.status, want, v.message)
                if v.status == "unreadable" and want == "unreadable" and name.split(": ", 1)[-1] in NEWER:
                    self.assertIn("newer tdsolve", v.message)
                    self.assertIn("newer tdsolve", info.stderr)
                if v.status == "inconsistent" and v.kind is not None and v.file == path:  # the same words
                    self.assertIn("INCONSISTENT: " + v.message.split(": ", 1)[1], info.stdout)
        # A file reads alike with and without kind, but that a file that says its kind and lacks a
        # dataset it needs is inconsistent, where one that does not is no result.
        for name, v in by_case.items():
            if "new" in v and "old" in v:
                with self.subTest(case=name, compare="with and without kind"):
                    self.assertIn((v["old"], v["new"]), {(v["new"], v["new"]), ("not a result", "inconsistent")})
        for base in ("edm", "trip", "fractal", "knn_radius"):
            s = {name.split(": ", 1)[1]: st["new"] for name, st in by_case.items() if name.startswith(base + ": ")}
            with self.subTest(base=base):
                self.assertEqual(s["kind and schema_version removed (an older file)"], s["as written"])
                self.assertEqual(s["schema_version 1 as int32"], s["as written"])
        sys.stderr.write(f"\n{len(cases)} files\n" + "\n".join(table) + "\n")


if __name__ == "__main__":
    unittest.main()
