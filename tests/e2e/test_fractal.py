"""`tdsolve fractal`: Life-like automata on NBB fractals, against a NumPy
Game of Life on the n x n embedding, masked to the fractal.

The reference is written from the definitions alone (docs/output.md,
"tdsolve fractal"): cell (x, y) of the s^r x s^r embedding is on the fractal
when each of its r base-s digit pairs is a filled sub-square of the table; a
cell's compact index is sum_mu id_mu k^mu (id_mu the replica of digit pair
mu, mu = 0 the finest); each step counts the live cells among the 8 embedded
neighbours (cells off the fractal are never alive, so counting every live
neighbour is counting the fractal ones) and applies B.../S.... The start is
read from the file's first snapshot (random:D:SEED is the program's own
hash), or given with --input.

Every preset at levels 1..3 (the Sierpinski triangle to 4), with every
strategy (--map nu on the compact layout, lambda and bb on the embedded one)
and every --rho from 1 to n, must give the reference at every snapshot,
bit for bit; so must custom tables, other rules, --input (1-D, and a
previous run's /states), --threads 1 and 2, and a run stopped by
--max-hours and resumed. Bad input is one line on stderr with exit code 2
(usage) or 1 (input), and no file; 2 ranks are refused.
`tdsolve info` and the Python package give the same verdict on complete and
damaged files; the package's maps, image() and PNG are checked too.

FractalGpuTest compares --backend cuda with cpu (and --tensor-cores on and
off): skips when `nvidia-smi -L` finds no GPU, fails instead under
TDSOLVE_REQUIRE_GPU=1.
"""
import concurrent.futures
import functools
import os
import shutil
import subprocess
import time
import sys
import unittest

import h5py
import numpy as np

from common import BIN, TempDirTest, set_value, tdsolve

PACKAGE_SRC = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../python"))
if PACKAGE_SRC not in sys.path:
    sys.path.insert(0, PACKAGE_SRC)
import tdsolve as tdpkg  # noqa: E402

# The presets as the issue gives them (name: S:x,y/x,y/..., replica order).
PRESETS = {
    "sierpinski-triangle": "2:0,0/0,1/1,1",
    "sierpinski-carpet": "3:0,0/1,0/2,0/0,1/2,1/0,2/1,2/2,2",
    "vicsek": "3:1,0/0,1/1,1/2,1/1,2",
    "x-fractal": "3:0,0/2,0/1,1/0,2/2,2",
    "h-fractal": "3:0,0/2,0/0,1/1,1/2,1/0,2/2,2",
    "cantor-dust": "3:0,0/2,0/0,2/2,2",
}
STRATEGIES = [("compact", "nu"), ("embedded", "lambda"), ("embedded", "bb")]
# Runs at once: a small run takes 0.1 s of CPU but 0.35 s of wall time (MPI start-up, syncs of the file and its
# folder), so more runs than the 2 cores of the CI machine overlap well.
WORKERS = 6


# --- the reference ---------------------------------------------------------


def parse_table(text):
    """(s, [(x, y), ...]) of a preset name or an S:x,y/... table."""
    text = PRESETS.get(text, text)
    head, body = text.split(":")
    return int(head), [tuple(int(v) for v in cell.split(",")) for cell in body.split("/")]


@functools.lru_cache(maxsize=64)
def geometry(table_text, level):
    """(s, table, n, mask, xs, ys): mask[y, x] is the fractal by the digit
    rule; (xs[c], ys[c]) is compact cell c's place, by its digits."""
    s, table = parse_table(table_text)
    k, n = len(table), s ** level
    x = np.arange(n)[None, :].repeat(n, 0)
    y = np.arange(n)[:, None].repeat(n, 1)
    filled = np.zeros((s, s), bool)
    for cx, cy in table:
        filled[cy, cx] = True
    mask = np.ones((n, n), bool)
    for mu in range(level):
        mask &= filled[(y // s ** mu) % s, (x // s ** mu) % s]
    c = np.arange(k ** level)
    xs, ys = np.zeros_like(c), np.zeros_like(c)
    for mu in range(level):
        d = (c // k ** mu) % k
        xs += s ** mu * np.array([t[0] for t in table])[d]
        ys += s ** mu * np.array([t[1] for t in table])[d]
    return s, table, n, mask, xs, ys


def parse_rule(text):
    b, s = text.split("/")
    assert b[0] == "B" and s[0] == "S", text
    return np.isin(np.arange(9), [int(d) for d in b[1:]]), np.isin(np.arange(9), [int(d) for d in s[1:]])


def life(table_text, level, state0, steps, rule="B3/S23"):
    """The compact states after each step 0..steps: uint8 (steps + 1) x k^r."""
    s, table, n, mask, xs, ys = geometry(table_text, level)
    birth, survive = parse_rule(rule)
    img = np.zeros((n, n), np.uint8)
    img[ys, xs] = np.asarray(state0, np.uint8)
    assert not np.any(img & ~mask), "a live cell off the fractal"
    out = np.empty((steps + 1, len(xs)), np.uint8)
    out[0] = img[ys, xs]
    for t in range(1, steps + 1):
        p = np.pad(img, 1)
        count = sum(p[1 + dy:1 + dy + n, 1 + dx:1 + dx + n] for dy in (-1, 0, 1) for dx in (-1, 0, 1)
                    if dy or dx)
        img = (mask & np.where(img == 1, survive[count], birth[count])).astype(np.uint8)
        out[t] = img[ys, xs]
    return out


def snapshot_steps(T, K):
    """/steps of a run of T steps with --snapshot-every K."""
    at = list(range(0, T + 1, K)) if K > 0 else [0]
    return at + ([T] if at[-1] != T else [])


def read(path):
    with h5py.File(path, "r") as f:
        st = f["states"]
        return dict(states=st[()], dtype=st.dtype, attrs={k: _plain(v) for k, v in st.attrs.items()},
                    root={k: _plain(v) for k, v in f.attrs.items()}, steps=f["steps"][()],
                    steps_dtype=f["steps"].dtype, live=f["live"][()], live_dtype=f["live"].dtype,
                    replicas=f["replicas"][()], done=f["progress/done"][()],
                    progress={k: _plain(v) for k, v in f["progress"].attrs.items()},
                    names=sorted(k for k in f if f[k].attrs.get("CLASS") != b"DIMENSION_SCALE"),
                    scales=sorted(k for k in f if f[k].attrs.get("CLASS") == b"DIMENSION_SCALE"))


def _plain(v):
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, np.generic):
        return v.item()
    return v


def run_fractal(out, *args, check=True, **kw):
    return tdsolve("fractal", "--output", out, "--quiet", *map(str, args), check=check, **kw)


def gpu_visible():
    try:
        r = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, f"nvidia-smi -L: {e}"
    ok = r.returncode == 0 and "GPU" in r.stdout
    return ok, (r.stdout.strip() or r.stderr.strip() or f"nvidia-smi -L exit {r.returncode}")


try:
    import matplotlib.image
    HAVE_MATPLOTLIB = True
except ImportError:
    HAVE_MATPLOTLIB = False

GPU, GPU_WHY = gpu_visible()
if not GPU and os.environ.get("TDSOLVE_REQUIRE_GPU") == "1":
    raise SystemExit(f"TDSOLVE_REQUIRE_GPU=1 but nvidia-smi -L finds no GPU: {GPU_WHY}")


# --- the reference itself ---------------------------------------------------


class ReferenceTest(unittest.TestCase):
    """The test's own maps and Life, before they judge anything."""

    def test_geometry(self):
        for name in PRESETS:
            for level in range(0, 4):
                s, table, n, mask, xs, ys = geometry(name, level)
                k = len(table)
                self.assertEqual(int(mask.sum()), k ** level, name)
                self.assertTrue(mask[ys, xs].all(), name)
                self.assertEqual(len(set(zip(xs.tolist(), ys.tolist()))), k ** level, f"{name}: λ is not 1:1")

    def test_glider_on_a_full_square(self):
        # A full 2x2 table is the whole 8x8 square at level 3: plain Life; a glider moves by (1, 1) in 4 steps.
        tbl = "2:0,0/1,0/0,1/1,1"
        _, _, n, _, xs, ys = geometry(tbl, 3)
        img = np.zeros((n, n), np.uint8)
        for x, y in [(1, 0), (2, 1), (0, 2), (1, 2), (2, 2)]:
            img[y, x] = 1
        out = life(tbl, 3, img[ys, xs], 4)
        after = np.zeros((n, n), np.uint8)
        after[ys, xs] = out[4]
        np.testing.assert_array_equal(after, np.roll(img, (1, 1), (0, 1)))

    def test_package_maps_are_the_definitions(self):
        self.assertEqual(tdpkg.fractal_presets, PRESETS)
        for name in list(PRESETS) + ["4:3,3/0,0/2,1/1,2/3,0", "5:4,4"]:
            for level in range(0, 4):
                s, table, n, mask, xs, ys = geometry(name, level)
                m = tdpkg.FractalMaps(s, table, level)
                x, y = m.lambda_map(np.arange(len(xs)))
                np.testing.assert_array_equal(x, xs)
                np.testing.assert_array_equal(y, ys)
                gx, gy = np.meshgrid(np.arange(-1, n + 1), np.arange(-1, n + 1))
                nu = m.nu_map(gx, gy)
                want = np.full(gx.shape, -1)
                want[ys + 1, xs + 1] = np.arange(len(xs))
                np.testing.assert_array_equal(nu, want, f"{name} level {level}")
                self.assertEqual(m.nu_map(int(xs[-1]), int(ys[-1])), len(xs) - 1)
                self.assertEqual(m.lambda_map(len(xs) - 1), (int(xs[-1]), int(ys[-1])))
                state = np.arange(len(xs)) % 2
                img = m.image(state)
                self.assertEqual(img.dtype, np.uint8)
                np.testing.assert_array_equal(img[ys, xs], state)
                self.assertTrue(np.all(img[~mask] == 255))
                with self.assertRaises(IndexError):
                    m.lambda_map(len(xs))
        with self.assertRaises(ValueError):
            tdpkg.FractalMaps(2, [(0, 0), (1, 1)], 15).image(np.zeros(2 ** 15, np.uint8))
        for bad in ("3:0,0/3,0", "3:0,0/0,0", "1:0,0", "17:0,0", "3:", "nope"):
            with self.assertRaises(ValueError, msg=bad):
                tdpkg.parse_table(bad)


# --- the program against the reference ---------------------------------------


class LifeTest(TempDirTest):
    def run_many(self, jobs):
        """jobs: [(out, args)]; runs them WORKERS at a time, raising on a failure."""
        with concurrent.futures.ThreadPoolExecutor(WORKERS) as ex:
            for f in [ex.submit(run_fractal, out, *args) for out, args in jobs]:
                f.result()

    def check_file(self, path, shape, level, T, K, rule="B3/S23", state0=None):
        """The file's snapshots and /live against the reference; returns its states."""
        h = read(path)
        s, table, n, mask, xs, ys = geometry(shape, level)
        k = len(table)
        S = len(snapshot_steps(T, K))
        self.assertEqual(h["states"].shape, (S, k ** level), path)
        self.assertEqual(h["dtype"], np.uint8)
        np.testing.assert_array_equal(h["steps"], snapshot_steps(T, K))
        start = h["states"][0] if state0 is None else np.asarray(state0, np.uint8)
        ref = life(shape, level, start, T, rule)
        for i, t in enumerate(h["steps"]):
            np.testing.assert_array_equal(h["states"][i], ref[t], f"{path}: snapshot {i} (step {t})")
        np.testing.assert_array_equal(h["live"], ref.sum(axis=1), f"{path}: /live")
        np.testing.assert_array_equal(h["replicas"], np.array(table).reshape(k, 2))
        self.assertTrue(np.all(h["done"] == 1))
        return h

    def test_presets_every_strategy_and_rho(self):
        jobs, want = [], []
        for name in PRESETS:
            s, _ = parse_table(name)
            for level in range(1, (5 if name == "sierpinski-triangle" else 4)):
                T, K = 12, 4
                init = f"random:0.45:{level * 7 + 1}"
                rhos = [s ** b for b in range(level + 1)]
                for layout, mp in STRATEGIES:
                    for rho in rhos:
                        out = self.path(f"{name}-{level}-{mp}-{rho}.h5")
                        jobs.append((out, ["--shape", name, "--level", level, "--steps", T, "--snapshot-every", K,
                                           "--layout", layout, "--map", mp, "--rho", rho, "--init", init,
                                           "--threads", 1]))
                        want.append((out, name, level, T, K, mp, rho))
                default = self.path(f"{name}-{level}-default.h5")
                jobs.append((default, ["--shape", name, "--level", level, "--steps", T, "--snapshot-every", K,
                                       "--init", init, "--threads", 1]))
                want.append((default, name, level, T, K, None, None))
        self.run_many(jobs)
        first = {}
        for out, name, level, T, K, mp, rho in want:
            with self.subTest(shape=name, level=level, map=mp, rho=rho):
                h = self.check_file(out, name, level, T, K)
                key = (name, level)
                first.setdefault(key, h["states"])
                np.testing.assert_array_equal(h["states"], first[key], "the strategies disagree")
                self.assertGreater(int(h["live"][0]), 0, "a start with no live cell tests nothing")
                a = h["attrs"]
                self.assertEqual(a["map"], mp or "nu")
                self.assertEqual(a["layout"], {"nu": "compact", "lambda": "embedded", "bb": "embedded"}[mp or "nu"])
                if rho is not None and mp != "bb":
                    self.assertEqual(a["rho"], rho)
                if mp is None:  # the default: the largest power of s up to 32 the level allows
                    s, _ = parse_table(name)
                    self.assertEqual(a["rho"], max(s ** b for b in range(level + 1) if s ** b <= 32))

    def test_larger_levels_and_the_default_rho(self):
        # Several coarse cells a side at the default rho, and the largest rho (64 at most).
        cases = [("sierpinski-triangle", 8), ("sierpinski-carpet", 4), ("vicsek", 5), ("h-fractal", 4)]
        jobs, want = [], []
        for name, level in cases:
            s, _ = parse_table(name)
            big = max(s ** b for b in range(level + 1) if s ** b <= 64)
            for layout, mp in STRATEGIES:
                for rho in ([None, big] if mp != "bb" else [None]):
                    out = self.path(f"{name}-{level}-{mp}-{rho}.h5")
                    jobs.append((out, ["--shape", name, "--level", level, "--steps", 25, "--snapshot-every", 10,
                                       "--map", mp, "--init", "random:0.4:9", "--threads", 1]
                                 + (["--rho", rho] if rho else [])))
                    want.append((out, name, level))
        self.run_many(jobs)
        first = {}
        for out, name, level in want:
            with self.subTest(out=os.path.basename(out)):
                h = self.check_file(out, name, level, 25, 10)
                first.setdefault(name, h["states"])
                np.testing.assert_array_equal(h["states"], first[name])

    def test_custom_tables_and_rules(self):
        cases = [("4:3,3/0,0/2,1/1,2/3,0", 3, "B3/S23"),  # replicas listed out of order
                 ("2:1,0/0,1", 5, "B3/S23"),  # a diagonal: no cell has a neighbour on its own level
                 ("3:2,2/0,0/1,1/2,0/0,2", 3, "B36/S23"),  # HighLife
                 ("sierpinski-carpet", 3, "B2/S"),  # Seeds
                 ("vicsek", 3, "B1357/S1357"),  # Replicator
                 ("5:0,0/4,0/2,2/0,4/4,4/1,1/3,3/1,3/3,1", 2, "B3/S012345678"),
                 ("2:0,0/1,0/0,1/1,1", 5, "B3/S23")]  # full square: plain Life on 32 x 32
        jobs, want = [], []
        for i, (table, level, rule) in enumerate(cases):
            for layout, mp in STRATEGIES:
                out = self.path(f"custom{i}-{mp}.h5")
                jobs.append((out, ["--shape", table, "--level", level, "--steps", 9, "--snapshot-every", 2,
                                   "--rule", rule, "--map", mp, "--init", f"random:0.5:{i}", "--threads", 1]))
                want.append((out, table, level, rule))
        self.run_many(jobs)
        for out, table, level, rule in want:
            with self.subTest(table=table, rule=rule, out=os.path.basename(out)):
                h = self.check_file(out, table, level, 9, 2, rule)
                s, cells = parse_table(table)
                self.assertEqual(h["attrs"]["table"], f"{s}:" + "/".join(f"{x},{y}" for x, y in cells))
                self.assertEqual(h["attrs"]["rule"], rule)
                self.assertEqual(h["attrs"]["k"], len(cells))

    def test_input_and_continuing_a_run(self):
        name, level = "sierpinski-carpet", 3
        _, table, n, mask, xs, ys = geometry(name, level)
        rng = np.random.default_rng(5)
        start = (rng.random(len(xs)) < 0.4).astype(np.int32)
        src = self.save_h5("start.h5", "s", start)
        with h5py.File(src, "a") as f:
            f["u8"] = start.astype(np.uint8)
            f["i64"] = start.astype(np.int64)
        for layout, mp in STRATEGIES:
            for dset in ("s", "u8", "i64"):
                out = self.path(f"in-{mp}-{dset}.h5")
                run_fractal(out, "--shape", name, "--level", level, "--steps", 7, "--map", mp, "--input",
                            f"{src}:/{dset}")
                h = self.check_file(out, name, level, 7, 0, state0=start)
                np.testing.assert_array_equal(h["states"][0], start)
        # 10 steps, then 10 more from its /states (the last row), equal 20 at once.
        a, b, c = self.path("a.h5"), self.path("b.h5"), self.path("c.h5")
        args = ["--shape", name, "--level", level, "--init", "random:0.5:3"]
        run_fractal(a, *args, "--steps", 10, "--snapshot-every", 3)
        run_fractal(b, "--shape", name, "--level", level, "--steps", 10, "--input", f"{a}:/states")
        run_fractal(c, *args, "--steps", 20)
        ha, hb, hc = read(a), read(b), read(c)
        np.testing.assert_array_equal(hb["states"][0], ha["states"][-1])
        np.testing.assert_array_equal(hb["states"][-1], hc["states"][-1])
        np.testing.assert_array_equal(np.concatenate([ha["live"], hb["live"][1:]]), hc["live"])
        self.assertIn(a, hb["root"]["input"])

    def test_a_stopped_run_reads_as_incomplete_and_resumes(self):
        out, full = self.path("r.h5"), self.path("full.h5")
        args = ["--shape", "sierpinski-triangle", "--level", 7, "--steps", 100, "--snapshot-every", 20,
                "--threads", 1]
        r = run_fractal(out, *args, "--max-hours", "0.0000001", check=False)
        self.assertEqual(r.returncode, 75, r.stdout + r.stderr)  # stopped cleanly, resumable
        self.assertFalse(os.path.exists(out))
        self.assertTrue(os.path.exists(out + ".partial"))
        v = tdpkg.check(out)
        info = subprocess.run([BIN, "info", out], capture_output=True, text=True, timeout=60)
        self.assertEqual((v.status, info.returncode), ("incomplete", 3), v.message + info.stdout)
        with tdpkg.open(out, require_complete=False) as p:
            self.assertGreaterEqual(p.chunks_done, 1)
            self.assertLess(p.chunks_done, 6)
            first = p.state(0)
        run_fractal(out, *args, "--resume")
        run_fractal(full, *args)
        h, want = read(out), read(full)
        self.assertEqual(h["states"].tobytes(), want["states"].tobytes())
        self.assertEqual(h["live"].tobytes(), want["live"].tobytes())
        np.testing.assert_array_equal(h["states"][0], first)
        self.check_file(out, "sierpinski-triangle", 7, 100, 20)
        self.assertFalse(os.path.exists(out + ".partial"))

    def test_killed_run_resumes_and_a_second_writer_is_refused(self):
        # SIGKILL mid-run: the .partial keeps the snapshots written, reads as
        # incomplete, and --resume finishes the same bytes as an unbroken run.
        # While a run holds the output, a second run on it is refused.
        out, full = self.path("k.h5"), self.path("kfull.h5")
        args = ["--shape", "sierpinski-triangle", "--level", 11, "--steps", 400, "--snapshot-every", 40,
                "--threads", 1]
        cmd = [BIN, "fractal", "--output", out, "--quiet", *map(str, args)]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.time() + 60
            while time.time() < deadline:  # until at least one snapshot past step 0 is on disk
                if os.path.exists(out + ".partial"):
                    try:
                        with h5py.File(out + ".partial", "r") as f:
                            if f["progress/done"][:].sum() >= 2:
                                break
                    except (OSError, KeyError):
                        pass
                time.sleep(0.05)
            second = run_fractal(out, *args, check=False)
            self.assertEqual(second.returncode, 1, second.stderr)
            self.assertIn("being written by another tdsolve run", second.stderr)
        finally:
            p.kill()
            p.wait()
        if p.returncode == 0:
            self.skipTest("the run finished before it could be killed")
        self.assertFalse(os.path.exists(out))
        info = subprocess.run([BIN, "info", out], capture_output=True, text=True, timeout=60)
        self.assertEqual(info.returncode, 3, info.stdout + info.stderr)
        run_fractal(out, *args, "--resume")
        run_fractal(full, *args)
        h, want = read(out), read(full)
        self.assertEqual(h["states"].tobytes(), want["states"].tobytes())
        self.assertEqual(h["live"].tobytes(), want["live"].tobytes())

    def test_threads_and_snapshot_layout(self):
        args = ["--shape", "sierpinski-carpet", "--level", 5, "--steps", 30, "--snapshot-every", 7,
                "--init", "random:0.35:11"]
        outs = {}
        for mp in ("nu", "lambda", "bb"):
            for t in (1, 2):
                outs[(mp, t)] = self.path(f"t{mp}{t}.h5")
                run_fractal(outs[(mp, t)], *args, "--map", mp, "--threads", t)
        base = read(outs[("nu", 1)])
        for key, p in outs.items():
            h = read(p)
            self.assertEqual(h["states"].tobytes(), base["states"].tobytes(), key)
            self.assertEqual(h["live"].tobytes(), base["live"].tobytes(), key)
        self.check_file(outs[("nu", 2)], "sierpinski-carpet", 5, 30, 7)
        # /steps for several T, K; the file's records.
        for T, K in [(10, 3), (10, 0), (10, 5), (10, 20), (0, 0), (1, 1), (6, 6)]:
            out = self.path(f"snap{T}-{K}.h5")
            run_fractal(out, "--shape", "vicsek", "--level", 2, "--steps", T, "--snapshot-every", K)
            h = self.check_file(out, "vicsek", 2, T, K)
            S = len(snapshot_steps(T, K))
            self.assertEqual((h["steps_dtype"], h["live_dtype"]), (np.int64, np.int64))
            self.assertEqual(h["live"].shape, (T + 1,))
            self.assertEqual(h["done"].shape, (S,))
            self.assertEqual(h["progress"]["chunks"], S)
            self.assertEqual(h["progress"]["elements"], S)
            self.assertEqual(h["progress"]["dataset"], "/states")
            self.assertEqual(h["names"], ["live", "progress", "replicas", "states", "steps"])
            self.assertEqual(h["scales"], ["cell", "replica", "snapshot", "step", "xy"])  # dimension names
            a = h["attrs"]
            want = dict(shape="vicsek", table=PRESETS["vicsek"], k=5, s=3, level=2, n=9, cells=25, rule="B3/S23",
                        init="random:0.5:1", layout="compact", map="nu", order="compact", steps=T)
            self.assertEqual({x: a.get(x) for x in want}, want)
            self.assertIn("rho", a)
            r = h["root"]
            self.assertEqual(r["software"], "tdsolve")
            for x in ("version", "command", "options", "created", "input"):
                self.assertIn(x, r)
            self.assertIn("fractal", r["command"])
            self.assertEqual(r["input"], "random:0.5:1")
            self.assertFalse(os.path.exists(out + ".partial"))


# --- bad input ---------------------------------------------------------------


class BadInputTest(TempDirTest):
    def bad(self, args, code, expect=(), ranks=None):
        out = self.path("bad.h5")
        r = tdsolve("fractal", "--output", out, *map(str, args), np_=ranks)
        ours = [line for line in r.stderr.splitlines() if line.startswith("tdsolve:")]
        self.assertEqual(len(ours), 1, f"{args}: want one error line, got:\n{r.stderr}")
        self.assertTrue(ours[0].startswith("tdsolve: error: "), ours[0])
        self.assertEqual(r.returncode, code, f"{args}: exit {r.returncode}, want {code}: {ours[0]}")
        for e in expect:
            self.assertIn(e.lower(), ours[0].lower(), f"{args}: the message does not name the problem")
        left = [p for p in os.listdir(self.dir) if p.startswith("bad.h5")]
        self.assertEqual(left, [], f"{args}: left {left}")
        return ours[0]

    def test_bad_options_are_usage_errors(self):
        ok = ["--shape", "vicsek", "--level", 2, "--steps", 3]
        cases = [
            (["--shape", "3:0,0/3,0", "--level", 2, "--steps", 3], ["3,0"]),  # outside the square
            (["--shape", "3:0,0/1,1/0,0", "--level", 2, "--steps", 3], ["0,0"]),  # listed twice
            (["--shape", "3:", "--level", 2, "--steps", 3], []),  # no cells
            (["--shape", "1:0,0", "--level", 2, "--steps", 3], []),  # s < 2
            (["--shape", "17:0,0", "--level", 2, "--steps", 3], []),  # s > 16
            (["--shape", "3:0,0/1", "--level", 2, "--steps", 3], []),
            (["--shape", "3:a,b", "--level", 2, "--steps", 3], []),
            (["--shape", "sierpinski-pyramid", "--level", 2, "--steps", 3], ["sierpinski-pyramid"]),
            (["--shape", "sierpinski-triangle", "--level", 32, "--steps", 3], []),  # 2^32 > 2^31
            (["--shape", "sierpinski-carpet", "--level", 20, "--steps", 3], []),  # 3^20 > 2^31
            (["--shape", "sierpinski-carpet", "--level", -1, "--steps", 3], []),
            ([*ok, "--rule", "B9/S23"], []),
            ([*ok, "--rule", "X3/S23"], []),
            ([*ok, "--rule", "B3S23"], []),
            ([*ok, "--rule", "B3/S2a"], []),
            ([*ok, "--init", "random:1.5:1"], []),
            ([*ok, "--init", "random:-0.1:1"], []),
            ([*ok, "--init", "random:x:1"], []),
            ([*ok, "--init", "gaussian:0.5:1"], []),
            ([*ok, "--layout", "compact", "--map", "bb"], ["--layout", "--map"]),
            ([*ok, "--layout", "compact", "--map", "lambda"], ["--layout", "--map"]),
            ([*ok, "--layout", "embedded", "--map", "nu"], ["--layout", "--map"]),
            ([*ok, "--layout", "diagonal"], ["--layout"]),
            ([*ok, "--map", "mu"], ["--map"]),
            ([*ok, "--rho", 2], ["--rho"]),  # not a power of 3
            ([*ok, "--rho", 4], ["--rho"]),
            ([*ok, "--rho", 27], ["--rho"]),  # larger than n = 9
            ([*ok, "--backend", "tpu"], ["--backend"]),
            ([*ok, "--steps", -1], []),
            (["--level", 2, "--steps", 3], ["--shape"]),
        ]
        for args, expect in cases:
            with self.subTest(args=args):
                self.bad(args, 2, expect)

    def test_bad_states_are_input_errors(self):
        _, _, _, _, xs, _ = geometry("vicsek", 2)  # 25 cells
        k = len(xs)
        src = self.path("s.h5")
        with h5py.File(src, "w") as f:
            f["long"] = np.zeros(k + 1, np.uint8)
            f["short"] = np.zeros(k - 1, np.uint8)
            f["two"] = np.full(k, 2, np.uint8)
            f["neg"] = np.full(k, -1, np.int32)
            f["wide"] = np.zeros((3, k + 1), np.uint8)
            f["cube"] = np.zeros((2, 2, k), np.uint8)
            # The right length, but never written: HDF5 would read all zeros.
            f.create_dataset("unwritten", shape=(k,), dtype=np.uint8, chunks=(8,))
        for dset in ("long", "short", "two", "neg", "wide", "cube", "missing", "unwritten"):
            with self.subTest(dset=dset):
                self.bad(["--shape", "vicsek", "--level", 2, "--steps", 3, "--input", f"{src}:/{dset}"], 1)
        with self.subTest("no such file"):
            self.bad(["--shape", "vicsek", "--level", 2, "--steps", 3, "--input", self.path("none.h5") + ":/s"], 1)

    def test_two_ranks_are_refused(self):
        line = self.bad(["--shape", "vicsek", "--level", 2, "--steps", 3], 2, ranks=2)
        self.assertIn("rank", line.lower())


# --- the verdict: tdsolve info and the package, on complete and damaged files ---


def _replace(f, name, data):
    attrs = dict(f[name].attrs)
    del f[name]
    f[name] = data
    for k, v in attrs.items():
        f[name].attrs[k] = v


def _attr(obj, name, value):
    def fn(f):
        if value is None:
            del f[obj].attrs[name]
        else:
            f[obj].attrs[name] = value
    return fn


def _grow_attr(obj, name, count):
    def fn(f):
        v = f[obj].attrs[name]
        f[obj].attrs[name] = [v] * count if isinstance(v, str) else np.full(count, v)
    return fn


def _regroup(name):
    def fn(f):
        del f[name]
        f.create_group(name)
    return fn


# (name, edit, the package's status): the base file is a complete carpet run.
CASES = [
    ("complete", None, "complete"),
    ("last done flag cleared", set_value("progress/done", -1, 0), "incomplete"),
    ("first done flag cleared", set_value("progress/done", 0, 0), "incomplete"),
    ("a done flag of 2", set_value("progress/done", 1, 2), "incomplete"),
    ("no flag set", lambda f: f["progress/done"].__setitem__(Ellipsis, 0), "incomplete"),
    ("/states one row short", lambda f: _replace(f, "states", f["states"][:-1]), "inconsistent"),
    ("/states one cell short", lambda f: _replace(f, "states", f["states"][:, :-1]), "inconsistent"),
    ("/states 1-D", lambda f: _replace(f, "states", f["states"][()].reshape(-1)), "inconsistent"),
    ("/states 3-D", lambda f: _replace(f, "states", f["states"][()][None]), "inconsistent"),
    ("/states a group", _regroup("states"), "unreadable"),
    ("no /steps", lambda f: f.__delitem__("steps"), "inconsistent"),
    ("/steps a group", _regroup("steps"), "unreadable"),
    ("/steps one short", lambda f: _replace(f, "steps", f["steps"][:-1]), "inconsistent"),
    ("/steps 2-D", lambda f: _replace(f, "steps", f["steps"][()][:, None]), "inconsistent"),
    ("/steps not increasing", set_value("steps", 1, 0), "inconsistent"),
    ("/steps not from 0", set_value("steps", 0, 1), "inconsistent"),
    ("/steps end past T", set_value("steps", -1, 10 ** 6), "inconsistent"),
    ("/steps strings", lambda f: _replace(f, "steps", np.array([b"x"] * len(f["steps"]))), "unreadable"),
    ("no /live", lambda f: f.__delitem__("live"), "inconsistent"),
    ("/live one short", lambda f: _replace(f, "live", f["live"][:-1]), "inconsistent"),
    ("no /replicas", lambda f: f.__delitem__("replicas"), "inconsistent"),
    ("/replicas k x 3", lambda f: _replace(f, "replicas", np.zeros((8, 3), np.int64)), "inconsistent"),
    ("/replicas (k-1) x 2", lambda f: _replace(f, "replicas", f["replicas"][:-1]), "inconsistent"),
    ("k one more", _attr("states", "k", np.uint64(9)), "inconsistent"),
    ("k one less", _attr("states", "k", np.uint64(7)), "inconsistent"),
    ("no k", _attr("states", "k", None), "inconsistent"),
    ("no level", _attr("states", "level", None), "inconsistent"),
    ("no steps attribute", _attr("states", "steps", None), "inconsistent"),
    ("steps attribute off", _attr("states", "steps", np.uint64(11)), "inconsistent"),
    ("level off", _attr("states", "level", np.uint64(4)), "inconsistent"),
    ("level huge", _attr("states", "level", np.uint64(2 ** 63)), "inconsistent"),
    ("s is 17", _attr("states", "s", np.uint64(17)), "inconsistent"),
    ("s is 0", _attr("states", "s", np.uint64(0)), "inconsistent"),
    ("k is 0", _attr("states", "k", np.uint64(0)), "inconsistent"),
    ("n wrong", _attr("states", "n", np.uint64(28)), "inconsistent"),
    ("cells wrong", _attr("states", "cells", np.uint64(511)), "inconsistent"),
    ("no n, no cells", lambda f: (f["states"].attrs.__delitem__("n"), f["states"].attrs.__delitem__("cells")),
     "complete"),
    ("k: 2 values", _grow_attr("states", "k", 2), "inconsistent"),
    ("level: 64 values", _grow_attr("states", "level", 64), "inconsistent"),
    ("level: no value (null)", lambda f: f["states"].attrs.create("level", h5py.Empty("<u8")), "inconsistent"),
    ("rule: 2 strings", _grow_attr("states", "rule", 2), "inconsistent"),
    ("table: 3 strings", _grow_attr("states", "table", 3), "inconsistent"),
    ("rho: 2 values", _grow_attr("states", "rho", 2), "inconsistent"),
    ("k a string", _attr("states", "k", "8"), "unreadable"),
    ("rho a string", _attr("states", "rho", "9"), "unreadable"),
    ("rule a number", _attr("states", "rule", np.uint64(3)), "complete"),
    ("an extra 64-value attribute", lambda f: f["states"].attrs.create("extra", np.arange(64)), "complete"),
    # The file says it is a fractal: without its records it is an inconsistent one (a file that records
    # no kind and these datasets is no tdsolve result: tests/e2e/test_schema.py).
    ("no /progress", lambda f: f.__delitem__("progress"), "inconsistent"),
    ("no /progress/done", lambda f: f.__delitem__("progress/done"), "inconsistent"),
    ("/progress/done a group", _regroup("progress/done"), "unreadable"),
    ("/progress/done one short", lambda f: _replace(f, "progress/done", f["progress/done"][:-1]), "inconsistent"),
    ("/progress/done one more", lambda f: _replace(f, "progress/done", np.ones(len(f["steps"]) + 1, np.uint8)),
     "inconsistent"),
    ("/progress/done 2 x S", lambda f: _replace(f, "progress/done", np.stack([f["progress/done"][()]] * 2)),
     "inconsistent"),
    ("/progress/done S x 2", lambda f: _replace(f, "progress/done", np.stack([f["progress/done"][()]] * 2, 1)),
     "inconsistent"),
    ("/progress/done S x 1", lambda f: _replace(f, "progress/done", f["progress/done"][()][:, None]), "complete"),
    ("/progress/done scalar", lambda f: _replace(f, "progress/done", np.uint8(1)), "unreadable"),
    ("/progress chunks wrong", _attr("progress", "chunks", np.uint64(2)), "inconsistent"),
    ("/progress elements wrong", _attr("progress", "elements", np.uint64(2)), "inconsistent"),
    ("/progress elements: 2 values", _grow_attr("progress", "elements", 2), "inconsistent"),
    ("/progress names /distances", _attr("progress", "dataset", "/distances"), "inconsistent"),
    ("/progress dataset: 2 strings", _grow_attr("progress", "dataset", 2), "inconsistent"),
    ("/progress without a dataset attribute", _attr("progress", "dataset", None), "complete"),
    ("/progress/offsets added", lambda f: f.create_dataset("progress/offsets", data=np.arange(4, dtype=np.uint64)),
     "complete"),
    ("complete, still named .partial", "as-partial", "incomplete"),
    ("a flag cleared, named .partial", "partial-cleared", "incomplete"),
    ("truncated (half)", "truncate", "unreadable"),
]


class VerdictTest(TempDirTest):
    """tdsolve.check(FILE) and `python3 -m tdsolve FILE` against `tdsolve info FILE`."""

    def test_same_verdict_as_tdsolve_info(self):
        base = self.path("base.h5")
        run_fractal(base, "--shape", "sierpinski-carpet", "--level", 3, "--steps", 10, "--snapshot-every", 3)
        self.assertEqual(read(base)["states"].shape, (5, 512))
        paths = []
        for i, (name, edit, want) in enumerate(CASES):
            path = self.path(f"case{i:02d}.h5")
            shutil.copy(base, path)
            if edit == "as-partial":
                os.rename(path, path + ".partial")
            elif edit == "partial-cleared":
                with h5py.File(path, "a") as f:
                    set_value("progress/done", 2, 0)(f)
                os.rename(path, path + ".partial")
            elif edit == "truncate":
                os.truncate(path, os.path.getsize(path) // 2)
            elif edit is not None:
                with h5py.File(path, "a") as f:
                    edit(f)
            paths.append(path)

        def judge(path):  # info, and the package's command line, on one file
            env = dict(os.environ, PYTHONPATH=PACKAGE_SRC)
            info = subprocess.run([BIN, "info", path], capture_output=True, text=True, timeout=60)
            py = subprocess.run([sys.executable, "-m", "tdsolve", path], capture_output=True, text=True,
                                timeout=60, env=env)
            return info, py

        with concurrent.futures.ThreadPoolExecutor(WORKERS) as ex:
            runs = list(ex.map(judge, paths))
        table = []
        for (name, edit, want), path, (info, py) in zip(CASES, paths, runs):
            v = tdpkg.check(path)
            table.append(f"{name:40s} info {info.returncode:4d}   package {v.exit_code} {v.status}: {v.message}")
            with self.subTest(case=name):
                self.assertEqual(v.status, want, f"{name}: {v.message}")
                self.assertEqual(info.returncode, v.exit_code, f"{name}: tdsolve info says {info.returncode}, the "
                                 f"package {v.status} ({v.message})\n{info.stdout}{info.stderr}")
                self.assertEqual(py.returncode, v.exit_code, py.stdout + py.stderr)
                if v.status == "complete":
                    self.assertIn("progress:  complete", info.stdout)
                    tdpkg.open(path).close()
                elif v.status == "unreadable":
                    with self.assertRaises(tdpkg.UnreadableResult):
                        tdpkg.open(path)
                else:
                    if v.status == "inconsistent" and v.kind == "fractal":  # the same record, the same words
                        self.assertIn("INCONSISTENT: " + v.message.split(": ", 1)[1], info.stdout)
                    elif v.status != "not a result" and v.file == path:
                        self.assertIn(v.message.split(":")[0].upper(), info.stdout.upper(), info.stdout)
                    with self.assertRaises(tdpkg.IncompleteResult):
                        tdpkg.open(path)
        sys.stderr.write("\n" + "\n".join(table) + "\n")

    def test_info_describes_the_run(self):
        out = self.path("v.h5")
        run_fractal(out, "--shape", "vicsek", "--level", 3, "--steps", 6, "--snapshot-every", 2, "--map", "lambda",
                    "--rule", "B36/S23")
        info = subprocess.run([BIN, "info", out], capture_output=True, text=True, timeout=60)
        self.assertEqual(info.returncode, 0, info.stdout + info.stderr)
        for want in ("vicsek", PRESETS["vicsek"], "k = 5", "s = 3", "level 3", "27 x 27", "125 cells", "B36/S23",
                     "random:0.5:1", "layout embedded", "map lambda", "rho", "4 snapshots",
                     "progress:  complete (4 of 4 snapshots)"):
            self.assertIn(want, info.stdout)
        py = subprocess.run([sys.executable, "-m", "tdsolve", out], capture_output=True, text=True, timeout=60,
                            env=dict(os.environ, PYTHONPATH=PACKAGE_SRC))
        self.assertEqual(py.returncode, 0, py.stderr)
        for want in ("fractal vicsek", "k=5", "s=3", "level=3", "n=27", "cells=125", "rule=B36/S23",
                     "layout=embedded", "map=lambda", "steps=6", "snapshots=4", "complete (4 of 4 snapshots)"):
            self.assertIn(want, py.stdout)


# --- the package -----------------------------------------------------------------


class PackageTest(TempDirTest):
    def test_reads_what_h5py_reads(self):
        out = self.path("c.h5")
        run_fractal(out, "--shape", "sierpinski-carpet", "--level", 3, "--steps", 9, "--snapshot-every", 4,
                    "--map", "bb", "--rule", "B3/S23")
        h = read(out)
        s, table, n, mask, xs, ys = geometry("sierpinski-carpet", 3)
        with h5py.File(out, "r") as f:  # mmap reads only contiguous datasets
            mappable = f["states"].id.get_create_plist().get_layout() == h5py.h5d.CONTIGUOUS
        for access in ("auto", "hdf5") + (("mmap",) if mappable else ()):
            with self.subTest(access=access), tdpkg.open(out, access=access) as r:
                self.assertEqual((r.kind, r.s, r.k, r.level, r.n, r.cells), ("fractal", 3, 8, 3, 27, 512))
                self.assertEqual((r.shape, len(r), r.total_steps, r.rule), ((4, 512), 4, 9, "B3/S23"))
                self.assertEqual((r.shape_name, r.table_text, r.layout, r.map, r.init),
                                 ("sierpinski-carpet", PRESETS["sierpinski-carpet"], "embedded", "bb",
                                  "random:0.5:1"))
                self.assertEqual(r.table, table)
                np.testing.assert_array_equal(r.steps, [0, 4, 8, 9])
                np.testing.assert_array_equal(r.live, h["live"])
                self.assertEqual(r.live.dtype, np.int64)
                for i in range(-4, 4):
                    np.testing.assert_array_equal(r.state(i), h["states"][i])
                    self.assertEqual(r.state(i).dtype, np.uint8)
                for bad in (4, -5):
                    with self.assertRaises(IndexError):
                        r.state(bad)
                np.testing.assert_array_equal(r[1:3], h["states"][1:3])
                self.assertEqual([i for i, _ in r.iter_chunks()], [0, 1, 2, 3])
                x, y = r.lambda_map(np.arange(r.cells))
                np.testing.assert_array_equal(x, xs)
                np.testing.assert_array_equal(y, ys)
                self.assertEqual(x.dtype, np.int64)
                np.testing.assert_array_equal(r.nu_map(xs, ys), np.arange(r.cells))
                self.assertEqual(r.nu_map(1, 1), -1)
                self.assertEqual(r.nu_map(-1, 0), -1)
                self.assertEqual(r.nu_map(27, 0), -1)
                img = r.image(-1)
                self.assertEqual((img.shape, img.dtype), ((27, 27), np.uint8))
                np.testing.assert_array_equal(img[ys, xs], h["states"][-1])
                self.assertTrue(np.all(img[~mask] == 255))
                with self.assertRaises(TypeError):
                    r.square()

    def test_incomplete_file(self):
        out = self.path("p.h5")
        run_fractal(out, "--shape", "vicsek", "--level", 2, "--steps", 6, "--snapshot-every", 2)
        with h5py.File(out, "a") as f:
            f["progress/done"][2] = 0
        os.rename(out, out + ".partial")
        with self.assertRaises(tdpkg.IncompleteResult):
            tdpkg.open(out)
        with tdpkg.open(out, require_complete=False) as r:
            self.assertFalse(r.complete)
            self.assertEqual(r.chunks_done, 3)
            r.state(1)
            with self.assertRaises(tdpkg.IncompleteResult):
                r.state(2)
            self.assertEqual([i for i, _ in r.iter_chunks()], [0, 1, 3])

    @unittest.skipUnless(HAVE_MATPLOTLIB, "no matplotlib here (Debian: python3-matplotlib): save_png needs it")
    def test_png(self):
        out = self.path("t.h5")
        run_fractal(out, "--shape", "sierpinski-triangle", "--level", 6, "--steps", 5)
        png = self.path("t.png")
        with tdpkg.open(out) as r:
            r.save_png(png)
            self.assertEqual(r.image(0).shape, (64, 64))
        with open(png, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        png2 = self.path("t2.png")
        env = dict(os.environ, PYTHONPATH=PACKAGE_SRC)
        r = subprocess.run([sys.executable, "-m", "tdsolve", "png", out, png2, "--snapshot", "0"],
                           capture_output=True, text=True, timeout=120, env=env)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        a = matplotlib.image.imread(png2)
        self.assertEqual(a.ndim, 3)
        self.assertGreater(min(a.shape[:2]), 64)
        colours = {tuple(np.round(p[:3], 2)) for p in a.reshape(-1, a.shape[2])[::7]}
        self.assertIn((0.0, 0.0, 0.0), colours)  # live
        self.assertIn((1.0, 1.0, 1.0), colours)  # off the fractal
        for args, code in [(["png", out, png2, "--snapshot", "9"], 1), (["png", out], 2),
                           (["png", self.path("none.h5"), png2], 1)]:
            r = subprocess.run([sys.executable, "-m", "tdsolve", *args], capture_output=True, text=True, timeout=120,
                               env=env)
            self.assertEqual(r.returncode, code, r.stdout + r.stderr)


# --- GPU ------------------------------------------------------------------------


@unittest.skipUnless(GPU, f"no GPU: {GPU_WHY}")
class FractalGpuTest(TempDirTest):
    def test_cuda_is_cpu(self):
        cases = [("sierpinski-triangle", 9), ("sierpinski-carpet", 5), ("vicsek", 5), ("cantor-dust", 6),
                 ("4:3,3/0,0/2,1/1,2/3,0", 4)]
        for name, level in cases:
            args = ["--shape", name, "--level", level, "--steps", 40, "--snapshot-every", 8,
                    "--init", "random:0.4:2"]
            cpu = self.path("cpu.h5")
            run_fractal(cpu, *args, "--backend", "cpu", "--overwrite")
            base = read(cpu)
            s, _ = parse_table(name)
            for layout, mp in STRATEGIES:
                for rho in (None, 1, s):
                    for tc in ([False, True] if mp == "nu" else [False]):
                        extra = (["--rho", rho] if rho else []) + (["--tensor-cores"] if tc else [])
                        gpu = self.path("gpu.h5")
                        with self.subTest(shape=name, map=mp, rho=rho, tensor_cores=tc):
                            run_fractal(gpu, *args, "--backend", "cuda", "--map", mp, "--overwrite", *extra)
                            h = read(gpu)
                            self.assertEqual(h["states"].tobytes(), base["states"].tobytes())
                            self.assertEqual(h["live"].tobytes(), base["live"].tobytes())
            if level <= 6:
                self.assertEqual(base["states"].shape[0], 6)
                LifeTest.check_file(self, cpu, name, level, 40, 8)


if __name__ == "__main__":
    unittest.main()
