"""The hist layout of schema_version 3 (docs/output.md, "tdsolve hist"): the
bin centres /r (the coordinate of the "r" axis), /cumulative, /rdf's `norm`,
exclusions (counts@excluded) and a --types run's histogram per type pair
(/pair, /types, /type_sizes, /pair_total; /counts groups × bins).

The files are built here with h5py as the writer writes them (the writer's
own runs are tested with it): a water-like system of molecules O, H, H in a
periodic box over two frames, binned

- grouped: by type pair (O-O, O-H, H-H), the pairs of one molecule excluded
  (--exclude-block 3), norm rdf, --per-frame counts;
- exclusion only: one histogram, the same exclusions, norm density, no box;
- old: the layout of schema_version 2 (1-D counts on an axis "bin", no /r,
  no /cumulative, no `norm`).

Each validates (tdsolve.validate: every dataset, shape, axis and attribute
as schema.json declares), is complete for tdsolve.check and `tdsolve info`
(which prints the type pairs), and reads through tdsolve.open as built
(counts, rdf, cumulative, r, pair, partial("H-O") = partial("O-H"), ...).
Damaged copies (a wrong /pair_total, /counts not groups × bins, /pair not
one name a group, no /type_sizes, ...) are inconsistent for both readers,
with the same words. Where MDAnalysis is installed, the files' rdf and
ordered counts are InterRDF's for the same frames, exclusions and norm:
the formulas of docs/output.md."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import h5py
import numpy as np

from common import BIN, set_value

PACKAGE_SRC = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../python"))
if PACKAGE_SRC not in sys.path:
    sys.path.insert(0, PACKAGE_SRC)
import tdsolve as tdpkg  # noqa: E402

try:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import MDAnalysis as mda
        from MDAnalysis.analysis.rdf import InterRDF
        from MDAnalysis.coordinates.memory import MemoryReader
except ImportError:  # python3-mdanalysis
    mda = None

DIR = None
F = {}  # name -> path
REF = {}  # name -> what the file holds (the reference it was built from)

MOLECULES, L, BINS, LO, HI, FRAMES = 24, 3.0, 14, 0.0, 1.4, (0, 2)
TYPES = ["O", "H"]


def pure_dim(f, name, length):
    """A netCDF-4 dimension without coordinate values, as io/result_file.cpp attach_dimensions makes it."""
    if name not in f:
        d = f.create_dataset(name, shape=(length,), dtype=">f4")
        d.make_scale("This is a netCDF dimension but not a netCDF variable.%10d" % length)
    return f[name]


def attach(f, ds, names):
    for axis, name in enumerate(names):
        ds.dims[axis].attach_scale(f[name] if name in f else pure_dim(f, name, ds.shape[axis]))


def coordinate(f, name, data):
    """A dataset that is the dimension scale of its own dimension (netCDF's coordinate variable)."""
    d = f.create_dataset(name, data=data)
    d.make_scale(name)
    return d


def system():
    """(positions float64[F, n, 3] exact in float32, type index of each atom, molecule of each atom)."""
    rng = np.random.default_rng(30)
    n = 3 * MOLECULES
    x = rng.integers(0, int(L * 1024), size=(len(FRAMES), n, 3)) / 1024.0
    types = np.tile([0, 1, 1], MOLECULES)
    return x, types, np.arange(n) // 3


def distances(x, box):
    """The C(n,2) distances i < j (minimum image in a cubic box of side L), itertools.combinations order."""
    i, j = np.triu_indices(len(x), 1)
    d = x[i] - x[j]
    if box:
        d -= L * np.round(d / L)
    return np.sqrt((d * d).sum(1)), i, j


def binned(values, edges):
    """(counts, underflow, overflow) as tdsolve hist bins: numpy.histogram's bins (the last closed)."""
    counts = np.histogram(values, edges)[0].astype(np.int64)
    return counts, int(np.sum(values < edges[0])), int(np.sum(values > edges[-1]))


def build(grouped, exclude, box, norm, old=False, per_frame=False):
    """What a run writes: {name: array or value} of the reference."""
    x, types, molecule = system()
    n, F = x.shape[1], len(FRAMES)
    edges = np.linspace(LO, HI, BINS + 1)
    shell = 4.0 / 3.0 * np.pi * (edges[1:] ** 3 - edges[:-1] ** 3)
    pairs = [(a, b) for a in range(len(TYPES)) for b in range(a, len(TYPES))] if grouped else [None]
    G = len(pairs)
    counts = np.zeros((F, G, BINS), np.int64)
    under, over = np.zeros((F, G), np.int64), np.zeros((F, G), np.int64)
    pair_total = np.zeros(G, np.int64)
    for q in range(F):
        d, i, j = distances(x[q], box)
        keep = molecule[i] != molecule[j] if exclude else np.ones(len(d), bool)
        for g, p in enumerate(pairs):
            sel = keep.copy()
            if p is not None:
                ti, tj = types[i], types[j]
                sel &= ((ti == p[0]) & (tj == p[1])) | ((ti == p[1]) & (tj == p[0]))
            counts[q, g], under[q, g], over[q, g] = binned(d[sel], edges)
            pair_total[g] = int(sel.sum())
    total = counts.sum(0)
    same = np.array([p is None or p[0] == p[1] for p in pairs])
    ordered = np.where(same[:, None], 2 * total, total)
    N = np.where(same, 2 * pair_total, pair_total)  # ordered pairs counted a frame
    if norm == "rdf":
        rdf = ordered / (F * shell * N[:, None] / L ** 3)
    elif norm == "density":
        rdf = ordered / (F * shell)
    else:
        rdf = ordered / float(F)
    excluded = C2(n) - int(pair_total.sum()) if exclude else 0
    ref = {"n": n, "F": F, "G": G, "edges": edges, "counts": total, "underflow": under.sum(0), "overflow": over.sum(0),
           "frame_counts": counts, "rdf": rdf, "cumulative": np.cumsum(ordered, axis=1) / F, "norm": norm,
           "pair_total": pair_total, "excluded": excluded, "pairs": F * int(pair_total.sum()), "box": box,
           "grouped": grouped, "old": old, "per_frame": per_frame, "ordered": ordered,
           "names": [f"{TYPES[a]}-{TYPES[b]}" for a, b in pairs] if grouped else None,
           "type_sizes": np.array([int(np.sum(types == t)) for t in range(len(TYPES))], np.int64)}
    if not grouped:
        for k in ("counts", "rdf", "cumulative", "ordered"):
            ref[k] = ref[k][0]
        ref["underflow"], ref["overflow"] = int(ref["underflow"][0]), int(ref["overflow"][0])
        ref["frame_counts"] = counts[:, 0]
    return ref


def C2(n):
    return n * (n - 1) // 2


def write(path, ref):
    """The file a run of ref writes (schema_version 3; ref["old"]: the layout of version 2)."""
    n, F, G, old, grouped = ref["n"], ref["F"], ref["G"], ref["old"], ref["grouped"]
    axis = "bin" if old else "r"
    with h5py.File(path, "w") as f:
        for k, v in (("software", "tdsolve"), ("version", "test"), ("kind", "hist"), ("command", "tdsolve hist ..."),
                     ("created", "2026-11-28T00:00:00Z"), ("input", "water.dump"), ("job", "command=hist\n"),
                     ("options", "[hist]\n")):
            f.attrs[k] = v
        f.attrs["schema_version"] = np.uint64(2 if old else 3)
        if not old:
            coordinate(f, "r", 0.5 * (ref["edges"][:-1] + ref["edges"][1:]))
        if grouped:
            coordinate(f, "pair", np.array(ref["names"], dtype="S"))
        lead = ["pair"] if grouped else []
        counts = f.create_dataset("counts", data=ref["counts"])
        attach(f, counts, lead + [axis])
        a = counts.attrs
        for k, v in (("n", n), ("k", 2), ("features", 3), ("bins", BINS), ("pairs", ref["pairs"])):
            a[k] = np.uint64(v)
        a["metric"], a["precision"], a["binning"] = "euclidean", "float64", "exact"
        a["range_lo"], a["range_hi"] = np.float64(LO), np.float64(HI)
        if ref["box"]:
            a["box"] = f"{L:g},{L:g},{L:g}"
        if F > 1:
            a["frames"] = np.uint64(F)
        if grouped:
            a["groups"], a["types"], a["type_source"] = np.uint64(G), np.uint64(len(TYPES)), "the dump's type column"
        if ref["excluded"]:
            a["excluded"], a["exclude"] = np.uint64(ref["excluded"]), "--exclude-block 3"
        attach(f, f.create_dataset("edges", data=ref["edges"]), ["edge"])
        if F > 1:
            attach(f, f.create_dataset("frames", data=np.array(FRAMES, np.int64)), ["frame"])
        if ref["per_frame"]:
            attach(f, f.create_dataset("frame_counts", data=ref["frame_counts"]), ["frame"] + lead + [axis])
        for name in ("underflow", "overflow"):
            d = f.create_dataset(name, data=np.asarray(ref[name], np.int64))
            attach(f, d, lead)
        if ref["norm"] is not None:
            rdf = f.create_dataset("rdf", data=ref["rdf"])
            attach(f, rdf, lead + [axis])
            if ref["box"]:
                rdf.attrs["volume"] = np.float64(L ** 3)
            rdf.attrs["formula"] = "rdf[b] = ordered[b] / (F shell[b] N / volume)"
            rdf.attrs["n"] = np.uint64(n)
            if not old:
                rdf.attrs["norm"] = ref["norm"]
        if not old:
            c = f.create_dataset("cumulative", data=ref["cumulative"])
            attach(f, c, lead + ["r"])
            c.attrs["formula"] = "cumulative[b] = sum of ordered[0..b] / F"
        if grouped:
            attach(f, f.create_dataset("types", data=np.array(TYPES, dtype="S")), ["type"])
            attach(f, f.create_dataset("type_sizes", data=ref["type_sizes"]), ["type"])
            attach(f, f.create_dataset("pair_total", data=ref["pair_total"]), ["pair"])
        # The chunks: one a frame (hist --frames), each frame's C(n,2) pairs.
        p = f.create_group("progress")
        p.attrs["chunks"], p.attrs["dataset"], p.attrs["elements"] = np.uint64(F), "/counts", np.uint64(F * C2(n))
        attach(f, p.create_dataset("done", data=np.ones(F, np.uint8)), ["progress/chunk"])
        attach(f, p.create_dataset("offsets", data=np.arange(F + 1, dtype=np.uint64) * np.uint64(C2(n))),
               ["progress/chunk_edge"])


def setUpModule():
    global DIR
    DIR = tempfile.mkdtemp(prefix="tdsolve_hist_layout_")
    cases = {"grouped": dict(grouped=True, exclude=True, box=True, norm="rdf", per_frame=True),
             "excluded": dict(grouped=False, exclude=True, box=False, norm="density"),
             "old": dict(grouped=False, exclude=False, box=True, norm="rdf", old=True)}
    for name, kw in cases.items():
        REF[name] = build(**kw)
        F[name] = os.path.join(DIR, name + ".h5")
        write(F[name], REF[name])


def tearDownModule():
    shutil.rmtree(DIR, ignore_errors=True)


def info(path):
    return subprocess.run([BIN, "info", path], capture_output=True, text=True, timeout=60)


def _replace(f, name, data):
    """Dataset `name` with other values (its attributes kept, its axes unnamed)."""
    attrs = {k: v for k, v in f[name].attrs.items() if k not in ("DIMENSION_LIST", "REFERENCE_LIST", "CLASS", "NAME")}
    del f[name]
    f[name] = data
    for k, v in attrs.items():
        f[name].attrs[k] = v


def _swap_pair_totals(f):
    a = f["pair_total"][()]
    f["pair_total"][...] = a[::-1]  # the sum (and the `pairs` attribute) unchanged


def _attr(obj, name, value):
    def fn(f):
        if value is None:
            del f[obj].attrs[name]
        else:
            f[obj].attrs[name] = value
    return fn


# (what, base, edit, words of the verdict, both readers alike)
DAMAGED = [
    ("pair_total one pair off", "grouped", set_value("pair_total", 0, 1),
     "the `pairs` attribute of /counts is not `frames` × the sum of /pair_total"),
    ("pair_total of two pairs swapped (same sum)", "grouped", _swap_pair_totals,
     "counts + underflow + overflow of type pair g is not `frames` × /pair_total[g] (g = 0)"),
    ("counts one row too many", "grouped", lambda f: _replace(f, "counts", np.vstack([f["counts"][()], f["counts"][:1]])),
     "/counts is not groups × bins"),
    ("counts 1-D in a grouped file", "grouped", lambda f: _replace(f, "counts", f["counts"][()].sum(0)),
     "/counts is not 2-D (groups × bins)"),
    ("groups attribute one more", "grouped", _attr("counts", "groups", np.uint64(4)), "/counts is not groups × bins"),
    ("pair one name short", "grouped", lambda f: _replace(f, "pair", f["pair"][:-1]),
     "/pair does not hold one name per type pair"),
    ("pair not strings", "grouped", lambda f: _replace(f, "pair", np.arange(3)), "/pair is not a string dataset"),
    ("no /pair", "grouped", lambda f: f.__delitem__("pair"), "no /pair"),
    ("no /type_sizes", "grouped", lambda f: f.__delitem__("type_sizes"), "no /type_sizes"),
    ("type_sizes one short", "grouped", lambda f: _replace(f, "type_sizes", f["type_sizes"][:1]),
     "/type_sizes does not hold one size per type"),
    ("type_sizes more atoms than n", "grouped", set_value("type_sizes", 0, 1000),
     "/type_sizes add up to more atoms than the `n` attribute of /counts"),
    ("no /pair_total", "grouped", lambda f: f.__delitem__("pair_total"), "no /pair_total"),
    ("no `types` attribute", "grouped", _attr("counts", "types", None), "no `types` attribute"),
    ("no `groups` attribute", "grouped", _attr("counts", "groups", None),
     "/pair, /types, /type_sizes or /pair_total is there, but /counts has no `groups` attribute"),
    ("underflow a scalar", "grouped", lambda f: _replace(f, "underflow", np.int64(0)),
     "/underflow does not hold one value per type pair"),
    ("overflow one more pair", "grouped", set_value("overflow", 2, 1),
     "counts + underflow + overflow of type pair g is not `frames` × /pair_total[g] (g = 2)"),
    ("rdf 1-D in a grouped file", "grouped", lambda f: _replace(f, "rdf", f["rdf"][0]), "/rdf is not groups × bins"),
    ("cumulative one bin short", "grouped", lambda f: _replace(f, "cumulative", f["cumulative"][:, 1:]),
     "/cumulative is not groups × bins"),
    ("frame_counts not frames × groups × bins", "grouped",
     lambda f: _replace(f, "frame_counts", f["frame_counts"][:, 0]), "/frame_counts is not frames × groups × bins"),
    ("r one bin short", "grouped", lambda f: _replace(f, "r", f["r"][1:]), "/r does not hold `bins` bin centres"),
    ("r float32", "grouped", lambda f: _replace(f, "r", f["r"][()].astype(np.float32)), "/r is not float64"),
    ("excluded not recorded", "excluded", _attr("counts", "excluded", None),
     "the `pairs` attribute is not C(n,2) (times `frames`, less the `excluded` pairs)"),
    ("excluded past C(n,2)", "excluded", _attr("counts", "excluded", np.uint64(10 ** 6)),
     "the `excluded` attribute of /counts is more than C(n,2)"),
    ("an excluded pair counted", "excluded", lambda f: f["overflow"].__setitem__((), f["overflow"][()] + 1),
     "counts + underflow + overflow is not C(n,2) (times `frames`, less the `excluded` pairs)"),
    ("cumulative 2-D in a file without types", "excluded",
     lambda f: _replace(f, "cumulative", f["cumulative"][()][None]), "/cumulative does not hold `bins` values"),
    ("old: pairs attribute off", "old", _attr("counts", "pairs", np.uint64(5)),
     "the `pairs` attribute is not C(n,2) (times `frames`, less the `excluded` pairs)"),
]


class LayoutTest(unittest.TestCase):
    def test_files_validate_and_are_complete(self):
        for name, path in F.items():
            with self.subTest(file=name):
                self.assertEqual(tdpkg.validate(path), [])
                v = tdpkg.check(path)
                self.assertEqual(v.status, "complete", v.message)
                r = info(path)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                self.assertIn("progress:  complete (2 of 2 chunks)" if name != "old" else "progress:  complete",
                              r.stdout)

    def test_info_shows_the_type_pairs_and_exclusions(self):
        out = info(F["grouped"]).stdout
        ref = REF["grouped"]
        self.assertIn("types:     2 types (the dump's type column): O 24, H 48 atoms", out)
        self.assertIn("pairs:     3 type pairs, a histogram each: " + ", ".join(
            f"{p} {t}" for p, t in zip(ref["names"], ref["pair_total"])) + " pairs a frame", out)
        self.assertIn(f"excluded:  {ref['excluded']} pairs a frame (--exclude-block 3)", out)
        self.assertIn(f"(of {ref['pairs']} pairs, over the type pairs)", out)
        self.assertIn("cumulative: /cumulative float64[3 x 14]", out)
        self.assertIn("norm=rdf", out)
        out = info(F["excluded"]).stdout
        self.assertIn(f"(of {REF['excluded']['pairs']} pairs)", out)
        self.assertNotIn("types:", out)
        self.assertIn("norm=density", out)
        self.assertNotIn("excluded:", info(F["old"]).stdout)

    def test_reader(self):
        for name in F:
            ref = REF[name]
            with self.subTest(file=name), tdpkg.open(F[name]) as r:
                np.testing.assert_array_equal(r.counts, ref["counts"])
                np.testing.assert_array_equal(r[...], ref["counts"])
                self.assertEqual(r.shape, ref["counts"].shape)
                np.testing.assert_array_equal(r.underflow, ref["underflow"])
                np.testing.assert_array_equal(r.overflow, ref["overflow"])
                np.testing.assert_array_equal(r.edges, ref["edges"])
                np.testing.assert_array_equal(r.r, 0.5 * (ref["edges"][1:] + ref["edges"][:-1]))
                np.testing.assert_allclose(r.rdf, ref["rdf"], rtol=1e-15)
                self.assertEqual(r.norm, ref["norm"])
                self.assertEqual(r.volume, L ** 3 if ref["box"] else None)
                self.assertEqual((r.bins, r.n, r.pairs, r.excluded), (BINS, ref["n"], ref["pairs"], ref["excluded"]))
                if ref["old"]:
                    self.assertIsNone(r.cumulative)
                else:
                    np.testing.assert_allclose(r.cumulative, ref["cumulative"], rtol=1e-15)
                if not ref["grouped"]:
                    self.assertEqual((r.pair, r.types, r.type_sizes, r.pair_total, r.groups), (None,) * 4 + (0,))
                    self.assertIsInstance(r.underflow, int)
                    with self.assertRaises(TypeError):
                        r.partial("O-H")
                    continue
                self.assertEqual((r.groups, r.pair, r.types), (3, ["O-O", "O-H", "H-H"], TYPES))
                self.assertEqual(r.type_source, "the dump's type column")
                self.assertEqual(r.exclude, "--exclude-block 3")
                np.testing.assert_array_equal(r.type_sizes, ref["type_sizes"])
                np.testing.assert_array_equal(r.pair_total, ref["pair_total"])
                # a row of counts + its underflow + overflow: frames × its pair_total
                np.testing.assert_array_equal(r.counts.sum(1) + r.underflow + r.overflow, ref["F"] * r.pair_total)
                self.assertEqual(int(r.counts.sum() + r.underflow.sum() + r.overflow.sum()), r.pairs)
                for g, p in enumerate(r.pair):
                    c, rdf, cum = r.partial(p)
                    np.testing.assert_array_equal(c, ref["counts"][g])
                    np.testing.assert_array_equal(rdf, r.rdf[g])
                    np.testing.assert_array_equal(cum, r.cumulative[g])
                for got, want in zip(r.partial("H-O"), r.partial("O-H")):
                    np.testing.assert_array_equal(got, want)
                with self.assertRaises(KeyError):
                    r.partial("O-C")

    def test_an_unfinished_grouped_file(self):
        """Flags of some frames cleared: the counts of the finished frames read
        as incomplete (rdf and cumulative refused); counts past them inconsistent."""
        ref = REF["grouped"]
        path = os.path.join(DIR, "unfinished.h5")
        shutil.copy(F["grouped"], path)
        with h5py.File(path, "a") as f:
            f["progress/done"][1] = 0
            first = ref["frame_counts"][0]
            f["counts"][...] = first
            x, types, molecule = system()
            d, i, j = distances(x[0], True)
            under = []
            over = []
            for a, b in [(0, 0), (0, 1), (1, 1)]:
                sel = (molecule[i] != molecule[j]) & ((((types[i] == a) & (types[j] == b))) |
                                                      ((types[i] == b) & (types[j] == a)))
                under.append(int(np.sum(d[sel] < LO)))
                over.append(int(np.sum(d[sel] > HI)))
            f["underflow"][...], f["overflow"][...] = under, over
        v = tdpkg.check(path)
        self.assertEqual(v.status, "incomplete", v.message)
        self.assertEqual(info(path).returncode, 3)
        with tdpkg.open(path, require_complete=False) as r:
            for call in (lambda: r.counts, lambda: r.rdf, lambda: r.cumulative, lambda: r.partial("O-H"),
                         lambda: r.underflow):
                with self.assertRaises(tdpkg.IncompleteResult):
                    call()
            self.assertEqual(r.pair, ref["names"])
            np.testing.assert_array_equal(r.pair_total, ref["pair_total"])
        with h5py.File(path, "a") as f:  # more pairs than the finished frame has (its excluded pairs too)
            f["overflow"][0] += C2(ref["n"]) - int(ref["pair_total"].sum()) + 1
        v = tdpkg.check(path)
        self.assertEqual(v.status, "inconsistent", v.message)
        self.assertIn("counts + underflow + overflow do not match the finished chunks", v.message)
        self.assertIn("INCONSISTENT: counts + underflow + overflow do not match the finished chunks",
                      info(path).stdout)

    def test_damaged_files_are_refused_by_both_readers(self):
        for i, (what, base, edit, words) in enumerate(DAMAGED):
            with self.subTest(case=what):
                path = os.path.join(DIR, f"damaged{i:02d}.h5")
                shutil.copy(F[base], path)
                with h5py.File(path, "a") as f:
                    edit(f)
                v = tdpkg.check(path)
                self.assertEqual(v.status, "inconsistent", v.message)
                self.assertIn(words, v.message)
                r = info(path)
                self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
                line = next(x for x in r.stdout.splitlines() if x.startswith("progress:  INCONSISTENT: "))
                self.assertEqual(line[len("progress:  INCONSISTENT: "):], v.message[len("inconsistent: "):])
                with self.assertRaises(tdpkg.IncompleteResult):
                    tdpkg.open(path)


class DslTest(unittest.TestCase):
    """The schema's words for these files, as tests/unit/test_schema.cpp holds io/schema.cpp to them."""

    def test_forms_by_rank_and_coordinates(self):
        from tdsolve import _schema
        form = _schema.form
        self.assertEqual(form("hist", "counts", 1, lambda x: True)["dims"], ["r"])
        self.assertEqual(form("hist", "counts", 1, lambda x: False)["dims"], ["bin"])  # schema_version 2's
        self.assertEqual(form("hist", "counts", 2, lambda x: True), {"shape": ["groups", "bins"], "dims": ["pair", "r"]})
        self.assertIsNone(form("hist", "counts", 3, lambda x: True))
        self.assertEqual(form("hist", "underflow", 1, lambda x: True)["dims"], ["pair"])
        self.assertEqual(form("hist", "types", 1, lambda x: False)["dims"], ["type"])

    def test_the_lint_knows_forms_strings_and_each(self):
        from tdsolve import _schema

        def lint(dataset, check):
            return _schema.problems({"schema_version": 1, "root": {"kind": "string"}, "parts": {}, "kinds": {"k": {
                "result": "v", "datasets": [dataset, {"name": "s", "dtype": ["string"], "shape": ["g"]}],
                "progress": {"dataset": ["/v"], "chunk": "chunk", "unit": "values"},
                "checks": [check, {"progress": "read"}]}}})

        v = {"name": "v", "dtype": ["int64"], "shape": ["b"], "dims": ["x"],
             "forms": [{"shape": ["g", "b"], "dims": ["s", "x"]}]}
        each = {"check": "each", "index": "i", "count": "g", "expr": "rowsum(v,i) == at(v,i)", "message": "m"}
        self.assertEqual(lint(v, each), [])
        for bad_v, bad_each in [(dict(v, forms=[{"shape": ["g", "b"], "dims": ["x"]}]), each),
                                (dict(v, forms=[{"shap": ["b"]}]), each),
                                (dict(v, forms=[{"shape": ["b"], "when": "1"}]), each),
                                (v, {k: x for k, x in each.items() if k != "index"}),
                                (v, dict(each, count="g +")), (v, dict(each, expr="at(v)"))]:
            self.assertNotEqual(lint(bad_v, bad_each), [], (bad_v, bad_each))


@unittest.skipIf(mda is None, "MDAnalysis is needed (Debian: python3-mdanalysis)")
class InterRdfTest(unittest.TestCase):
    """The files' ordered counts and rdf are MDAnalysis InterRDF's (the
    formulas of docs/output.md): per type pair with the molecules excluded
    (exclusion_block), for each norm."""

    def universe(self, box):
        x, types, molecule = system()
        n = x.shape[1]
        u = mda.Universe.empty(n, n_residues=MOLECULES, atom_resindex=molecule, trajectory=True)
        u.add_TopologyAttr("type", [TYPES[t] for t in types])
        dims = np.array([[L, L, L, 90, 90, 90]] * len(FRAMES), np.float32) if box else None
        u.load_new(x.astype(np.float32), format=MemoryReader, dimensions=dims)
        return u

    def test_partials_with_exclusions(self):
        u = self.universe(True)
        blocks = {"O": 1, "H": 2}
        for norm in ("rdf", "density", "none"):
            ref = build(grouped=True, exclude=True, box=True, norm=norm)
            for g, name in enumerate(ref["names"]):
                a, b = name.split("-")
                with self.subTest(norm=norm, pair=name):
                    md = InterRDF(u.select_atoms(f"type {a}"), u.select_atoms(f"type {b}"), nbins=BINS,
                                  range=(LO, HI), exclusion_block=(blocks[a], blocks[b]), norm=norm).run()
                    np.testing.assert_array_equal(md.results.count, ref["ordered"][g])
                    np.testing.assert_allclose(md.results.rdf, ref["rdf"][g], rtol=1e-6)
                    np.testing.assert_allclose(np.cumsum(md.results.count) / len(FRAMES), ref["cumulative"][g],
                                               rtol=1e-15)

    def test_one_histogram_with_exclusions(self):
        u = self.universe(True)
        for norm in ("rdf", "density", "none"):
            ref = build(grouped=False, exclude=True, box=True, norm=norm)
            with self.subTest(norm=norm):
                md = InterRDF(u.atoms, u.atoms, nbins=BINS, range=(LO, HI), exclusion_block=(3, 3), norm=norm).run()
                np.testing.assert_array_equal(md.results.count, 2 * ref["counts"])
                np.testing.assert_allclose(md.results.rdf, ref["rdf"], rtol=1e-6)


if __name__ == "__main__":
    unittest.main()
