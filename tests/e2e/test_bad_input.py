"""Bad input gives one error line naming the problem, a non-zero exit on
every rank, and no output that tdsolve info or the Python reader would call
complete."""
import os
import subprocess
import unittest

import h5py
import numpy as np

from common import BIN, MPIEXEC, TempDirTest, tdsolve, tdsolve_h5

RANKS = 2


class BadInputTest(TempDirTest):
    def run_bad(self, args, expect, output="out.h5", output_was_there=False):
        """Runs tdsolve on RANKS ranks, each recording its own exit status.

        The wrapper itself exits 0: mpirun kills the other ranks as soon as
        one exits non-zero, which would race with the recording."""
        out = self.path(output)
        for r in range(RANKS):
            if os.path.exists(self.path(f"rc.{r}")):
                os.remove(self.path(f"rc.{r}"))
        script = 'exe="$1"; shift; "$exe" "$@"; echo $? > "%s/rc.$OMPI_COMM_WORLD_RANK"' % self.dir
        cmd = [MPIEXEC, "-n", str(RANKS), "--oversubscribe", "sh", "-c", script, "sh", BIN, "edm",
               "--output", out, "--progress", "none", *map(str, args)]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        codes = []
        for rank in range(RANKS):
            with open(self.path(f"rc.{rank}")) as f:
                codes.append(int(f.read()))
        self.assertTrue(all(c != 0 for c in codes), f"{args}: exit codes per rank {codes}")
        ours = [l for l in r.stderr.splitlines() if l.startswith("tdsolve:")]
        self.assertEqual(len(ours), 1, f"{args}: want one error line, got:\n{r.stderr}")
        self.assertIn("error", ours[0])
        self.assertIn(expect, ours[0], f"{args}: message does not name the problem")
        self.assertNotIn("MPI_ABORT", r.stderr, "a collective error must not abort")
        if os.path.exists(out) and not output_was_there:
            info = tdsolve("info", out)
            self.assertNotEqual(info.returncode, 0, f"{args}: info calls the file complete")
            with self.assertRaises((tdsolve_h5.IncompleteResult, OSError, KeyError)):
                tdsolve_h5.open_result(out).close()
        return ours[0]

    def test_missing_file(self):
        self.run_bad(["--input", self.path("nope.npy")], "No such file")

    def test_mpirun_itself_fails(self):
        # Without the recording wrapper: the launcher's own exit status.
        for args in (["--input", self.path("nope.npy")], ["--generate", "uniform:10:2", "--metric", "l7"]):
            r = tdsolve("edm", "--output", self.path("o.h5"), *args, np_=RANKS)
            self.assertNotEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertEqual(len([l for l in r.stderr.splitlines() if l.startswith("tdsolve:")]), 1, r.stderr)

    def test_missing_dataset(self):
        src = self.save_h5("x.h5", "points", np.ones((4, 2)))
        self.run_bad(["--input", src + ":/other"], "no dataset '/other'")

    def test_hdf5_without_dataset_name(self):
        src = self.save_h5("x.h5", "points", np.ones((4, 2)))
        self.run_bad(["--input", src], "/points")

    def test_one_dimensional(self):
        self.run_bad(["--input", self.save_npy("x.npy", np.arange(5.0))], "1-D")

    def test_three_dimensional(self):
        src = self.save_h5("x.h5", "cube", np.ones((4, 2, 2)))
        self.run_bad(["--input", src + ":/cube"], "3-D")

    def test_nan(self):
        x = np.random.default_rng(0).random((10, 3))
        x[4, 2] = np.nan
        self.run_bad(["--input", self.save_npy("x.npy", x)], "row 4, column 2")

    def test_inf_in_csv(self):
        p = self.path("x.csv")
        with open(p, "w") as f:
            f.write("1,2\n3,inf\n5,6\n")
        self.run_bad(["--input", p], "non-finite")

    def test_one_point(self):
        self.run_bad(["--input", self.save_npy("x.npy", np.ones((1, 3)))], "at least 2")
        self.run_bad(["--generate", "uniform:1:3"], "at least 2")

    def test_zero_features(self):
        self.run_bad(["--input", self.save_npy("x.npy", np.ones((5, 0)))], "empty")
        self.run_bad(["--generate", "uniform:5:0"], "empty")

    def test_count_overflow(self):
        self.run_bad(["--generate", "uniform:20000000000:3"], "more pairs than tdsolve indexes")

    def test_too_many_points_for_memory(self):
        self.run_bad(["--generate", "uniform:100000000:1000"], "do not fit")

    def test_existing_output(self):
        out = self.path("out.h5")
        tdsolve("edm", "--generate", "uniform:10:2", "--output", out, "--quiet", check=True)
        self.run_bad(["--generate", "uniform:10:2"], "--overwrite", output_was_there=True)
        # The complete file that was there is untouched.
        with tdsolve_h5.open_result(out) as r:
            self.assertEqual(r.n, 10)

    def test_unknown_metric(self):
        self.run_bad(["--generate", "uniform:10:2", "--metric", "l3"], "unknown --metric 'l3'; choose")

    def test_misspelt_choices_get_a_suggestion(self):
        # The nearest valid name (an edit or a swap of two neighbours for
        # every four letters), none for a word near nothing.
        for args, words in ((["--metric", "euclidian"], "'euclidian' (did you mean euclidean?)"),
                            (["--metric", "Manhatan"], "(did you mean manhattan?)"),
                            (["--metric", "cosien"], "(did you mean cosine?)"),
                            (["--precision", "flaot32"], "not 'flaot32' (did you mean float32?)"),
                            (["--metric", "xyzzy"], "unknown --metric 'xyzzy'; choose")):
            with self.subTest(args=args):
                line = self.run_bad(["--generate", "uniform:10:2", *args], words)
                if "xyzzy" in args:
                    self.assertNotIn("did you mean", line)

    def test_dataset_without_its_slash(self):
        # FILE.h5:dataset as h5py names it, FILE.h5:/dataset as before; a
        # file whose name holds a colon is that file.
        x = np.random.default_rng(1).random((30, 3))
        src = self.save_h5("x.h5", "points", x)
        with h5py.File(src, "a") as f:
            f.create_group("g")["y"] = x[:20]
        for spec, n in ((src + ":points", 30), (src + ":/points", 30), (src + ":g/y", 20)):
            with self.subTest(spec=spec):
                out = self.path("ok.h5")
                tdsolve("edm", "--input", spec, "--output", out, "--overwrite", check=True)
                with tdsolve_h5.open_result(out) as r:
                    self.assertEqual(r.n, n)
        np.save(self.path("a:b.npy"), x)
        tdsolve("edm", "--input", self.path("a:b.npy"), "--output", self.path("ok.h5"), "--overwrite", check=True)
        self.run_bad(["--input", src + ":nope"], "no dataset '/nope'")

    def test_bad_options(self):
        self.run_bad(["--generate", "uniform:10"], "uniform:N:D")
        self.run_bad(["--generate", "uniform:10:2", "--precision", "half"], "--precision")
        self.run_bad(["--generate", "uniform:10:2", "--block", "0"], "--block")
        self.run_bad(["--generate", "uniform:10:2", "--bogus"], "bogus")
        self.run_bad(["--generate", "uniform:10:2", "--input", "x.npy"], "exactly one")

    def test_output_directory_missing(self):
        self.run_bad(["--generate", "uniform:10:2"], "does not exist", output="no/such/dir/out.h5")

    def test_output_is_input(self):
        src = self.save_h5("x.h5", "points", np.random.default_rng(1).random((6, 2)))
        self.run_bad(["--input", src + ":/points", "--overwrite"], "is the input file", output="x.h5")
        with h5py.File(src, "r") as f:
            self.assertEqual(f["points"].shape, (6, 2))

    def test_zero_vector_with_cosine(self):
        x = np.random.default_rng(2).random((6, 3))
        x[3] = 0
        self.run_bad(["--input", self.save_npy("x.npy", x), "--metric", "cosine"], "point 3")

    def test_float32_overflow(self):
        x = np.ones((4, 2))
        x[1, 1] = 1e300
        self.run_bad(["--input", self.save_npy("x.npy", x)], "overflows float32")

    def write_npy(self, name, header, data=b""):
        """A .npy file with the given header dict text (padded as NumPy does)."""
        import struct
        magic = b"\x93NUMPY\x01\x00"
        h = header.encode()
        h += b" " * ((64 - (len(magic) + 2 + len(h) + 1) % 64) % 64) + b"\n"
        p = self.path(name)
        with open(p, "wb") as f:
            f.write(magic + struct.pack("<H", len(h)) + h + data)
        return p

    def test_npy_negative_shape(self):
        p = self.write_npy("neg.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (-5, 3), }", b"\0" * 120)
        self.run_bad(["--input", p], "non-negative")

    def test_npy_shape_whose_size_overflows(self):
        # n × d × 8 wraps to 0 in 64 bits: this segfaulted (Fortran order).
        for order in ("True", "False"):
            p = self.write_npy(f"o{order}.npy", "{'descr': '<f8', 'fortran_order': %s, 'shape': "
                               "(4611686018427387904, 4), }" % order, b"\0" * 64)
            self.run_bad(["--input", p], "overflows 64 bits")

    def test_npy_header_promising_more_than_the_file_holds(self):
        # Refused before allocating: this allocated the 2.4 GB first.
        p = self.write_npy("short.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (100000000, 3), }",
                           b"\0" * 240)
        r = subprocess.run(["/usr/bin/time", "-f", "%M", BIN, "edm", "--input", p, "--output", self.path("o.h5")],
                           capture_output=True, text=True, timeout=60) if os.path.exists("/usr/bin/time") else None
        self.run_bad(["--input", p], "holds 240")
        if r is not None:
            peak_kb = int(r.stderr.strip().splitlines()[-1])
            self.assertLess(peak_kb, 500_000, "the reader allocated the promised size before checking it")

    def test_integer_points_whose_float32_arithmetic_overflows(self):
        # int64 points near ±2^63: their euclidean distance (1.8e19) fits in
        # float32 but its square does not; float32 stored inf. Refused, with
        # the way out; float64 gives the exact value.
        x = np.array([[-2**63 + 1, 0, 0], [2**63 - 1, 0, 0], [0, 1, 0]], dtype=np.int64)
        src = self.save_npy("big.npy", x)
        self.run_bad(["--input", src], "--precision float64")
        out = self.path("ok.h5")
        tdsolve("edm", "--input", src, "--output", out, "--precision", "float64", "--quiet", check=True)
        with h5py.File(out, "r") as f:
            d = f["distances"][:]
        self.assertTrue(np.all(np.isfinite(d)))
        self.assertEqual(d[0], float(2**64 - 2))

    def test_hdf5_datasets_claiming_more_than_they_hold(self):
        # A chunked dataset can claim any shape without a byte of data (HDF5
        # reads unwritten chunks as the fill value): refused before anything
        # is allocated, as is a partly written one and an unwritten contiguous one.
        src = self.path("claims.h5")
        with h5py.File(src, "w") as f:
            f.create_dataset("huge", shape=(10**9, 3), dtype="f8", chunks=(4096, 3))
            part = f.create_dataset("part", shape=(8192, 3), dtype="f8", chunks=(4096, 3))
            part[:4096] = 1.0
            f.create_dataset("empty", shape=(100, 3), dtype="f8")
        for name, words in (("huge", "none of them"), ("part", "only part of them"), ("empty", "none of them")):
            with self.subTest(name=name):
                line = self.run_bad(["--input", f"{src}:/{name}"], words)
                self.assertIn("fill value", line)

    def test_out_of_memory_is_a_message(self):
        # 60e6 points (960 MB as float64) under a 900 MB address-space limit:
        # the allocation fails; the error says so in words, not "std::bad_alloc".
        import resource

        def limit():
            resource.setrlimit(resource.RLIMIT_AS, (900 << 20, 900 << 20))

        out = self.path("oom.h5")
        r = subprocess.run([BIN, "hist", "--generate", "uniform:60000000:2", "--bins", "10", "--range", "0:2",
                            "--output", out, "--backend", "cpu", "--quiet"], capture_output=True, text=True,
                           timeout=120, preexec_fn=limit)
        self.assertEqual(r.returncode, 1, r.stderr)
        ours = [l for l in r.stderr.splitlines() if l.startswith("tdsolve:")]
        self.assertEqual(len(ours), 1, r.stderr)
        self.assertIn("out of memory", ours[0])
        self.assertNotIn("bad_alloc", r.stderr)
        self.assertFalse(os.path.exists(out))

    def test_bad_columns(self):
        src = self.save_npy("ids.npy", np.arange(20.0).reshape(5, 4))
        self.run_bad(["--input", src, "--columns", "1:9"], "no column 4")
        self.run_bad(["--input", src, "--columns", "2:2"], "is empty")
        self.run_bad(["--input", src, "--columns", "1,1"], "selected twice")
        self.run_bad(["--input", src, "--columns", "a"], "not a column number")
        self.run_bad(["--generate", "uniform:10:2", "--transpose"], "not to --generate")

    def test_cuda_without_gpu_or_cuda_build(self):
        probe = tdsolve("edm", "--generate", "uniform:10:2", "--output", self.path("p.h5"), "--backend", "cuda",
                        "--quiet")
        if probe.returncode == 0:
            self.skipTest("a GPU is visible here")
        self.run_bad(["--generate", "uniform:10:2", "--backend", "cuda"], "--backend cuda")



class InputLayoutTest(TempDirTest):
    """--transpose and --columns read the same points from other layouts;
    metric names as SciPy and scikit-learn spell them."""

    def setUp(self):
        super().setUp()
        self.x = np.random.default_rng(5).random((40, 3))
        self.ref = self.path("ref.h5")
        tdsolve("edm", "--input", self.save_npy("x.npy", self.x), "--output", self.ref, "--quiet",
                "--backend", "cpu", check=True)

    def same_as_reference(self, *args):
        out = self.path("o.h5")
        if os.path.exists(out):
            os.remove(out)
        r = tdsolve("edm", *args, "--output", out, "--quiet", "--backend", "cpu", check=True)
        with h5py.File(out, "r") as a, h5py.File(self.ref, "r") as b:
            self.assertEqual(a["distances"][:].tobytes(), b["distances"][:].tobytes(), args)
        return r

    def test_transposed_input(self):
        # d x n, as h5py sees what MATLAB or Julia wrote for an n x d array.
        src = self.path("t.h5")
        with h5py.File(src, "w") as f:
            f["x"] = self.x.T.copy()
        r = self.same_as_reference("--input", f"{src}:/x", "--transpose")
        self.assertNotIn("note", r.stderr)
        with h5py.File(self.path("o.h5"), "r") as f:
            self.assertIn("transposed", f.attrs["input"])
        # Without --transpose: 3 points of 40 features, and a note that says why.
        out = self.path("wrong.h5")
        r = tdsolve("edm", "--input", f"{src}:/x", "--output", out, "--progress", "none", check=True)
        self.assertIn("tdsolve: note:", r.stderr)
        self.assertIn("more features than points", r.stderr)
        self.assertIn("--transpose", r.stderr)
        r = tdsolve("edm", "--input", f"{src}:/x", "--output", out, "--quiet", "--overwrite", check=True)
        self.assertEqual(r.stderr, "", "--quiet prints nothing but errors")

    def test_id_columns(self):
        ids = np.c_[np.arange(40), self.x, 7 * np.arange(40)]
        self.same_as_reference("--input", self.save_npy("ids.npy", ids), "--columns", "1:4")
        self.same_as_reference("--input", self.save_npy("ids2.npy", ids), "--columns", "1,2,3")
        # After --transpose, columns are the features of each point.
        self.same_as_reference("--input", self.save_npy("idsT.npy", ids.T.copy()), "--transpose",
                               "--columns", "1:4")

    def test_metric_aliases(self):
        for name in ("l2", "L2", "Euclidean", "EUCLID", "eu", "e"):
            with self.subTest(name=name):
                self.same_as_reference("--input", self.path("x.npy"), "--metric", name)
        src = self.path("x.npy")
        outs = {}
        for name in ("cityblock", "manhattan", "L1", "cb", "Chebyshev", "linf", "chebychev", "COS", "sqe"):
            out = self.path(f"{name}.h5")
            tdsolve("edm", "--input", src, "--output", out, "--quiet", "--metric", name, check=True)
            with h5py.File(out, "r") as f:
                outs[name] = (f["distances"].attrs["metric"], f["distances"][:])
        self.assertEqual(outs["manhattan"][0], "cityblock")
        self.assertEqual(outs["linf"][0], "chebyshev")
        self.assertEqual(outs["COS"][0], "cosine")
        self.assertEqual(outs["sqe"][0], "sqeuclidean")
        for a, b in (("cityblock", "manhattan"), ("cityblock", "L1"), ("cityblock", "cb"),
                     ("Chebyshev", "linf"), ("Chebyshev", "chebychev")):
            self.assertEqual(outs[a][1].tobytes(), outs[b][1].tobytes(), (a, b))


if __name__ == "__main__":
    unittest.main()
