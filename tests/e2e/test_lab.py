"""The map laboratory (tdsolve bench --problem dummy|edm|collide) on the CPU
engine: every exact map covers each element of the triangle exactly once at
awkward sizes, the float maps fail where the unit tests say they do, collide's
overlap count is the same under every map, and the CSV has its rows. The GPU
side is in test_gpu.py (GpuTest.test_lab_*). A build without the laboratory
(-DTDSOLVE_LAB=OFF, the default) skips those and checks instead that it
refuses the laboratory's problems with one line naming the option."""
import csv
import os
import unittest

from common import TempDirTest, lab_built, tdsolve

EXACT = ["bb", "ltm-x-exact", "ltm-n-exact", "ltm", "ltm-nodiag", "rb", "rec", "utm-exact"]
LAB = lab_built()
NOT_BUILT = "this tdsolve was built without the map laboratory; configure with -DTDSOLVE_LAB=ON"


def rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


@unittest.skipUnless(LAB, "tdsolve built without the map laboratory (-DTDSOLVE_LAB=OFF)")
class LabTest(TempDirTest):
    def bench(self, *args, ok=True):
        r = tdsolve("bench", "--backend", "cpu", "--repeat", "1", *args)
        if ok:
            self.assertEqual(r.returncode, 0, r.stderr)
        return r

    def test_every_map_covers_the_triangle_or_is_reported_wrong(self):
        # B = 8 and 16; sizes around block boundaries, odd and even m (RB),
        # powers of two and not (REC), n < B.
        for block in ("8", "16"):
            out = self.path(f"cover{block}.csv")
            self.bench("--problem", "dummy", "--maps", "all", "--block", block,
                       "--n", "2,3,7,8,9,16,17,31,33,64,65,127,129,250,1000", "--csv", out)
            got = rows(out)
            self.assertEqual(len(got), 15 * 19)
            for r in got:
                m, n = int(r["m"]), int(r["n"])
                self.assertEqual(m, -(-n // int(block)))
                self.assertEqual(int(r["tiles"]), m * (m + 1) // 2)
                if r["map"] in EXACT:
                    self.assertEqual(r["checked"], "ok", r)
                    self.assertEqual(int(r["wrong"]), 0, r)
            by = {(r["map"], int(r["n"])): r for r in got}
            # λ_N without ε first fails at ω = 6 (m = 4), λ_R without ε at
            # ω = 465 (m = 31); with ε both hold far past these sizes.
            self.assertEqual(by[("ltm-n-raw", 1000)]["checked"], "wrong")
            self.assertGreater(int(by[("ltm-n-raw", 1000)]["wrong"]), 0)
            self.assertEqual(by[("ltm-n-raw", 3)]["checked"], "ok")  # m = 1
            for eps in ("ltm-x", "ltm-n", "ltm-r", "ltm-x-nodiag", "ltm-n-nodiag", "ltm-r-nodiag", "utm"):
                self.assertEqual(by[(eps, 1000)]["checked"], "ok", eps)
            mr = -(-1000 // int(block))
            self.assertEqual(by[("ltm-r-raw", 1000)]["checked"], "wrong" if mr >= 31 else "ok")
            # Launched blocks: BB m², RB m(m/2 + 1), the λ family about T(m).
            m = mr
            self.assertEqual(int(by[("bb", 1000)]["launched_blocks"]), m * m)
            self.assertEqual(int(by[("rb", 1000)]["launched_blocks"]), m * (m // 2 + 1))
            self.assertEqual(int(by[("rec", 1000)]["launched_blocks"]), m * (m + 1) // 2)
            self.assertGreater(int(by[("rec", 1000)]["passes"]), 1)
            self.assertLess(int(by[("ltm", 1000)]["launched_blocks"]) - m * (m + 1) // 2, 2 * m)

    def test_collide_counts_agree_across_maps_and_with_the_reference(self):
        out = self.path("collide.csv")
        self.bench("--problem", "collide", "--maps", "all", "--n", "500,1001", "--csv", out)
        got = rows(out)
        self.assertEqual(len(got), 2 * 2 * 19)  # dims 1 and 3 by default
        for key in {(r["features"], r["n"]) for r in got}:
            case = [r for r in got if (r["features"], r["n"]) == key]
            for r in case:
                if r["map"] in EXACT:
                    self.assertEqual(r["checked"], "ok", r)
            counts = {r["count"] for r in case if r["checked"] == "ok"}
            self.assertEqual(len(counts), 1, case)
            # λ_N without ε misplaces tiles from m = 4 on: it loses overlaps.
            self.assertEqual([r["checked"] for r in case if r["map"] == "ltm-n-raw"], ["wrong"])
            self.assertEqual(counts, {case[0]["reference"]})
            self.assertGreater(int(case[0]["reference"]), 0)  # the radii make overlaps

    def test_edm_runs_every_feature_count_and_prints_improvements(self):
        r = self.bench("--problem", "edm", "--n", "100,200")
        lines = [l for l in r.stdout.splitlines() if l.startswith("edm d=")]
        self.assertEqual(len(lines), 8)
        for l in lines:
            self.assertIn("bb ", l)
            self.assertIn("(I ", l)
            self.assertNotIn("WRONG", l)

    def test_no_check_skips_the_check(self):
        out = self.path("nc.csv")
        self.bench("--problem", "dummy", "--maps", "ltm-n-raw", "--n", "1000", "--no-check", "--csv", out)
        self.assertEqual({r["checked"] for r in rows(out)}, {"no"})

    def test_bad_options_are_one_line(self):
        cases = [
            (["--problem", "dummy"], "needs --n"),
            (["--problem", "dummy", "--n", "10", "--features", "2"], "does not apply to --problem dummy"),
            (["--problem", "edm", "--n", "10", "--features", "5"], "1 to 4"),
            (["--problem", "collide", "--n", "10", "--features", "2"], "1 or 3"),
            (["--problem", "edm", "--n", "10", "--maps", "nope"], "unknown map 'nope'"),
            (["--problem", "edm", "--n", "1"], "not a size"),
            (["--problem", "edm", "--n", "5:2:1"], "FIRST <= LAST"),
            (["--problem", "edm", "--n", "x"], "not a size"),
            (["--problem", "edm", "--n", "10", "--block", "12"], "8, 16 or 32"),
            (["--problem", "edm", "--n", "10", "--generate", "uniform:10:3"], "does not apply"),
            (["--problem", "edm", "--n", "10", "--metric", "cosine"], "does not apply"),
            (["--problem", "edm", "--n", "100000"], "up to n = 8192"),
            (["--problem", "edm", "--n", "10", "--repeat", "0"], "--repeat"),
            (["--generate", "uniform:10:3", "--maps", "bb"], "map laboratory"),
            (["--problem", "dummy", "--n", "10", "--csv", os.path.join(self.dir, "no", "x.csv")],
             "cannot append to --csv"),
        ]
        for args, message in cases:
            r = self.bench(*args, ok=False)
            self.assertNotEqual(r.returncode, 0, args)
            self.assertIn(message, r.stderr, args)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)

    def test_map_once_checks_the_same(self):
        out = self.path("once.csv")
        self.bench("--problem", "collide", "--maps", "all", "--n", "700", "--features", "3", "--map-once",
                   "--csv", out)
        got = rows(out)
        self.assertEqual({r["map_eval"] for r in got}, {"block"})
        for r in got:
            if r["map"] in EXACT:
                self.assertEqual(r["checked"], "ok", r)
                self.assertEqual(r["count"], r["reference"], r)
        r = self.bench("--generate", "uniform:10:3", "--map-once", ok=False)
        self.assertIn("--map-once belongs to the map laboratory", r.stderr)

    def test_two_ranks_refused(self):
        r = tdsolve("bench", "--backend", "cpu", "--problem", "dummy", "--n", "10", np_=2)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("one process", r.stderr)

    def test_help_describes_the_laboratory(self):
        r = tdsolve("bench", "--help", check=True)
        for word in ("--maps", "--features", "--no-check", "the map laboratory", "I = T_bb / T_map"):
            self.assertIn(word, r.stdout)
        self.assertNotIn("built without the map laboratory", r.stdout)


@unittest.skipIf(LAB, "the map laboratory is built (-DTDSOLVE_LAB=ON): LabTest checks it")
class NotBuiltTest(TempDirTest):
    def test_the_laboratory_problems_are_one_usage_line(self):
        for args in (["--problem", "dummy"], ["--problem", "dummy", "--n", "10"],
                     ["--problem", "edm", "--n", "100", "--features", "2"],
                     ["--problem", "collide", "--n", "100", "--maps", "all", "--map-once"]):
            r = tdsolve("bench", "--backend", "cpu", *args)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertEqual(r.stderr.strip().splitlines(), ["tdsolve: error: " + NOT_BUILT], args)
            self.assertEqual(r.stdout, "", args)

    def test_help_says_the_laboratory_is_not_built(self):
        r = tdsolve("bench", "--help", check=True)
        self.assertIn("This tdsolve was built without the map laboratory", r.stdout)
        self.assertIn("-DTDSOLVE_LAB=ON", r.stdout)
        self.assertIn("-DTDSOLVE_LAB=ON", tdsolve("--help", check=True).stdout)

    def test_the_rest_of_bench_still_runs(self):
        r = tdsolve("bench", "--backend", "cpu", "--generate", "uniform:300:3:1", "--repeat", "1", check=True)
        self.assertIn("bench", r.stdout)
        r = tdsolve("bench", "--backend", "cpu", "--generate", "uniform:300:3:1", "--maps", "bb")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("belongs to the map laboratory", r.stderr)


if __name__ == "__main__":
    unittest.main()
