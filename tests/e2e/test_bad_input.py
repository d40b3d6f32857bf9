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
        self.run_bad(["--generate", "uniform:10:2", "--metric", "manhattan"], "manhattan")

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

    def test_cuda_without_gpu_or_cuda_build(self):
        probe = tdsolve("edm", "--generate", "uniform:10:2", "--output", self.path("p.h5"), "--backend", "cuda",
                        "--quiet")
        if probe.returncode == 0:
            self.skipTest("a GPU is visible here")
        self.run_bad(["--generate", "uniform:10:2", "--backend", "cuda"], "--backend cuda")


if __name__ == "__main__":
    unittest.main()
