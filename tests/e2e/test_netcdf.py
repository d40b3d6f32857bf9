"""Every tdsolve result file names its axes with HDF5 dimension scales
(netCDF-4 "pure dimensions"), so that xarray opens it through h5netcdf
without phony_dims, with the dimension names of docs/output.md; the scales
take no storage, but for coordinate variables (hist's /r, the bin centres,
and /pair) whose values xarray reads as the axis' coordinates; h5py, the tdsolve package and `tdsolve info` still read
everything, and files without scales (older versions) are still accepted.
kNN and radius files are synthetic (tests/e2e/knn_files.py) until `tdsolve
knn` writes them."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import h5py
import numpy as np

from common import BIN, tdsolve
from knn_files import write_knn, write_radius

PACKAGE_SRC = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../python"))
if PACKAGE_SRC not in sys.path:
    sys.path.insert(0, PACKAGE_SRC)
import tdsolve as tdpkg  # noqa: E402

try:
    import xarray as xr
    import h5netcdf  # noqa: F401
except ImportError as e:  # Debian: python3-xarray python3-h5netcdf
    xr = None
    MISSING = str(e)

DIR = None
F = {}
QUIET = ["--threads", "1", "--progress", "none", "--quiet"]


def setUpModule():
    global DIR
    DIR = tempfile.mkdtemp(prefix="tdsolve_netcdf_")
    rng = np.random.default_rng(21)
    x, b = os.path.join(DIR, "x.npy"), os.path.join(DIR, "b.npy")
    np.save(x, rng.random((500, 3)))
    np.save(b, rng.random((70, 3)))
    F["edm"] = os.path.join(DIR, "edm.h5")  # 2 ranks: the scales are made before the collective phase
    tdsolve("edm", "--input", x, "--output", F["edm"], "--store-points", "--chunk-mb", "1", *QUIET, np_=2,
            check=True)
    F["cross"] = os.path.join(DIR, "cross.h5")
    tdsolve("cross", "--input", x, "--with", b, "--output", F["cross"], "--chunk-mb", "1", *QUIET, np_=2,
            check=True)
    F["hist"] = os.path.join(DIR, "hist.h5")
    tdsolve("hist", "--input", x, "--bins", "12", "--range", "0:1", "--box", "1,1,1", "--output", F["hist"],
            *QUIET, check=True)
    F["triplet"] = os.path.join(DIR, "triplet.h5")
    tdsolve("triplet", "--generate", "uniform:80:3:4", "--store-triplets", "--store-points", "--output",
            F["triplet"], *QUIET, check=True)
    F["triplet0"] = os.path.join(DIR, "triplet0.h5")
    tdsolve("triplet", "--generate", "uniform:80:3:4", "--output", F["triplet0"], *QUIET, check=True)
    F["fractal"] = os.path.join(DIR, "fractal.h5")
    tdsolve("fractal", "--output", F["fractal"], "--quiet", "--shape", "vicsek", "--level", "3", "--steps", "10",
            "--snapshot-every", "5", "--init", "random:0.3:1", check=True)
    kx = rng.random((200, 3))
    F["knn"] = os.path.join(DIR, "knn.h5")
    write_knn(F["knn"], kx, 6, chunks=3)
    F["radius"] = os.path.join(DIR, "radius.h5")
    write_radius(F["radius"], kx, 0.2, chunks=3)


def tearDownModule():
    shutil.rmtree(DIR, ignore_errors=True)


def chunks_of(path):
    with h5py.File(path, "r") as f:
        return int(f["progress/done"].shape[0])


# file -> ({variable: dims} of the root, {variable: dims} of /progress), sizes checked against h5py
EXPECTED = {
    "edm": ({"distances": ("pair",), "points": ("point", "feature")},
            {"done": ("chunk",), "offsets": ("chunk_edge",)}),
    "cross": ({"distances": ("row", "column")}, {"done": ("chunk",), "offsets": ("chunk_edge",)}),
    "hist": ({"counts": ("r",), "cumulative": ("r",), "edges": ("edge",), "rdf": ("r",), "underflow": (),
              "overflow": (), "r": ("r",)},
             {"done": ("chunk",), "offsets": ("chunk_edge",)}),
    "triplet": ({"triplet_energy": ("triplet",), "energy": (), "energy_per_point": ("point",),
                 "forces": ("point", "axis"), "points": ("point", "feature")},
                {"done": ("chunk",), "offsets": ("chunk_edge",), "sums": ("sum_row", "limb")}),
    "triplet0": ({"energy": (), "energy_per_point": ("point",), "forces": ("point", "axis")},
                 {"done": ("chunk",), "offsets": ("chunk_edge",), "sums": ("sum_row", "limb")}),
    "fractal": ({"states": ("snapshot", "cell"), "steps": ("snapshot",), "live": ("step",),
                 "replicas": ("replica", "xy")}, {"done": ("chunk",)}),
    "knn": ({"distances": ("point", "neighbor"), "indices": ("point", "neighbor")},
            {"done": ("chunk",), "offsets": ("chunk_edge",)}),
    "radius": ({"pairs": ("pair", "pair_end"), "distances": ("pair",)},
               {"done": ("chunk",), "offsets": ("chunk_edge",)}),
}


def strip_scales(path):
    """The file as an older tdsolve wrote it: no dimension scales."""
    with h5py.File(path, "a") as f:
        scales, users = [], []

        def visit(name, obj):
            if isinstance(obj, h5py.Dataset):
                (scales if obj.attrs.get("CLASS") == b"DIMENSION_SCALE" else users).append(name)
        f.visititems(visit)
        for name in users:
            d = f[name]
            for axis in range(d.ndim):
                for s in list(d.dims[axis].values()):
                    d.dims[axis].detach_scale(s)
            if "DIMENSION_LIST" in d.attrs:
                del d.attrs["DIMENSION_LIST"]
        for name in scales:
            del f[name]


@unittest.skipIf(xr is None, "xarray and h5netcdf are needed (Debian: python3-xarray python3-h5netcdf)")
class XarrayTest(unittest.TestCase):
    def test_every_kind_opens_without_phony_dims(self):
        for kind, (root, progress) in EXPECTED.items():
            with self.subTest(kind=kind), h5py.File(F[kind], "r") as f:
                for group, want in ((None, root), ("progress", progress)):
                    with xr.open_dataset(F[kind], engine="h5netcdf", group=group) as ds:
                        got = {k: v.dims for k, v in ds.variables.items()}
                        self.assertEqual(got, want, f"{kind}, group {group}")
                        for name, dims in want.items():
                            h5 = f[name if group is None else f"{group}/{name}"]
                            self.assertEqual(ds[name].shape, h5.shape, f"{kind}: /{name}")
                            for axis, dim in enumerate(dims):
                                self.assertEqual(ds.sizes[dim], h5.shape[axis], f"{kind}: {dim}")
                    # the values, through xarray, are h5py's
                    with xr.open_dataset(F[kind], engine="h5netcdf", group=group) as ds:
                        for name in want:
                            h5 = f[name if group is None else f"{group}/{name}"]
                            np.testing.assert_array_equal(ds[name].values, h5[()], f"{kind}: /{name}")

    def test_radius_dimension_follows_the_pairs(self):
        # /pairs grows when the run ends: its "pair" scale is unlimited, 0 long, and
        # netCDF readers take the length of the datasets on it.
        with h5py.File(F["radius"], "r") as f:
            m = f["pairs"].shape[0]
            self.assertGreater(m, 0)
            self.assertEqual((f["pair"].shape, f["pair"].maxshape), ((0,), (None,)))
        with xr.open_dataset(F["radius"], engine="h5netcdf") as ds:
            self.assertEqual((ds.sizes["pair"], ds.sizes["pair_end"]), (m, 2))


class ScaleTest(unittest.TestCase):
    def test_scales_take_no_storage_and_are_no_variables(self):
        names = {"edm": {"pair", "point", "feature"}, "cross": {"row", "column"}, "hist": {"r", "edge"},
                 "fractal": {"snapshot", "cell", "step", "replica", "xy"}}
        coordinates = {"hist": {"r"}}  # netCDF coordinate variables: values, named after themselves
        for kind in ("edm", "cross", "hist", "triplet", "triplet0", "fractal"):
            with self.subTest(kind=kind), h5py.File(F[kind], "r") as f:
                found = []

                def visit(name, obj):
                    if isinstance(obj, h5py.Dataset) and obj.attrs.get("CLASS") == b"DIMENSION_SCALE":
                        found.append(name)
                        if name in coordinates.get(kind, ()):
                            self.assertEqual(obj.attrs["NAME"], name.encode(), f"{kind}: /{name}")
                            self.assertGreater(obj.id.get_storage_size(), 0, f"{kind}: /{name} holds no values")
                            return
                        self.assertEqual(obj.id.get_storage_size(), 0, f"{kind}: /{name} takes storage")
                        self.assertIn(b"This is a netCDF dimension but not a netCDF variable", obj.attrs["NAME"])
                f.visititems(visit)
                self.assertIn("progress/chunk", found)
                self.assertTrue(names.get(kind, set()) <= set(found), f"{kind}: {found}")
                # the result datasets themselves are as before: contiguous, not extensible
                for name, d in (("distances", f.get("distances")), ("counts", f.get("counts"))):
                    if d is not None:
                        self.assertEqual(d.maxshape, d.shape, name)

    def test_package_and_info_read_files_with_and_without_scales(self):
        for kind in EXPECTED:
            for plain in (False, True):
                with self.subTest(kind=kind, without_scales=plain):
                    path = F[kind]
                    if plain:
                        path = os.path.join(DIR, f"plain_{kind}.h5")
                        shutil.copy(F[kind], path)
                        strip_scales(path)
                        with h5py.File(path, "r") as f:
                            self.assertNotIn("DIMENSION_LIST", f[list(EXPECTED[kind][0])[0]].attrs)
                    v = tdpkg.check(path)
                    self.assertEqual(v.status, "complete", v.message)
                    info = subprocess.run([BIN, "info", path], capture_output=True, text=True, timeout=60)
                    self.assertEqual(info.returncode, 0, info.stdout + info.stderr)
                    self.assertNotIn("DIMENSION_LIST", info.stdout)
                    with tdpkg.open(path) as r, h5py.File(path, "r") as f:
                        self.assertNotIn("DIMENSION_LIST", r.attrs)
                        if kind in ("edm", "triplet"):
                            np.testing.assert_array_equal(r[:], f[r.verdict.dataset if kind == "edm"
                                                                   else "triplet_energy"][()])
                        elif kind == "cross":
                            np.testing.assert_array_equal(r.matrix(), f["distances"][()])
                        elif kind == "hist":
                            np.testing.assert_array_equal(r.counts, f["counts"][()])
                        elif kind == "fractal":
                            np.testing.assert_array_equal(r.state(-1), f["states"][-1])
                        elif kind == "knn":
                            np.testing.assert_array_equal(r.rows(0, r.n)[0], f["indices"][()])
                        elif kind == "radius":
                            np.testing.assert_array_equal(r.pairs, f["pairs"][()])

    def test_resume_reopens_a_file_with_scales(self):
        # A stopped edm run leaves a .partial with scales; --resume on 2 ranks finishes it.
        out, whole = os.path.join(DIR, "resumed.h5"), os.path.join(DIR, "whole.h5")
        x = os.path.join(DIR, "x1200.npy")
        np.save(x, np.random.default_rng(5).random((1200, 3)))
        args = ["edm", "--input", x, "--precision", "float64", "--block", "16", "--chunk-mb", "1", *QUIET]
        r = tdsolve(*args, "--output", out, env={"TDSOLVE_TEST_FAULT": "0:2:kill"})
        self.assertNotEqual(r.returncode, 0)
        self.assertTrue(os.path.exists(out + ".partial"))
        self.assertEqual(tdpkg.check(out).chunks_done, 2)
        tdsolve(*args, "--output", out, "--resume", np_=2, check=True)
        tdsolve(*args, "--output", whole, check=True)
        with h5py.File(out, "r") as f, h5py.File(whole, "r") as g:
            np.testing.assert_array_equal(f["distances"][()], g["distances"][()])
        if xr is not None:
            with xr.open_dataset(out, engine="h5netcdf") as ds:
                self.assertEqual(ds["distances"].dims, ("pair",))


if __name__ == "__main__":
    unittest.main()
