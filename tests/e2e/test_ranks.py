"""The same problem on 1, 2, 3, 4 ranks, and on more ranks than chunks,
writes byte-identical /distances (and identical progress records)."""
import unittest

import h5py
import numpy as np
from scipy.spatial.distance import pdist

from common import TempDirTest, tdsolve


def contents(path):
    with h5py.File(path, "r") as f:
        return (f["distances"][:].tobytes(), f["progress/done"][:].tobytes(),
                f["progress/offsets"][:].tobytes(), f["distances"].dtype)


class RanksTest(TempDirTest):
    def check_identical(self, args, ranks, expect_chunks_at_least=1):
        outs = {}
        for r in ranks:
            out = self.path(f"r{r}.h5")
            res = tdsolve("edm", *args, "--output", out, "--progress", "none", np_=r, check=True)
            self.assertIn(f"{r} rank", res.stdout)
            outs[r] = contents(out)
        first = outs[ranks[0]]
        with h5py.File(self.path(f"r{ranks[0]}.h5"), "r") as f:
            self.assertGreaterEqual(len(f["progress/done"]), expect_chunks_at_least)
            self.assertTrue(np.all(f["progress/done"][:] == 1))
        for r in ranks[1:]:
            self.assertEqual(outs[r][0], first[0], f"/distances differ between {ranks[0]} and {r} ranks")
            self.assertEqual(outs[r][1:], first[1:], f"/progress differs between {ranks[0]} and {r} ranks")
        return first

    def test_many_chunks_float32(self):
        # 5000 points, 1 MiB chunks (a 2.5 MB block row each at the top): 27 chunks,
        # cut unevenly across ranks.
        self.check_identical(["--generate", "uniform:5000:3:11", "--chunk-mb", "1"], [1, 2, 3, 4],
                             expect_chunks_at_least=20)

    def test_many_chunks_float64_cosine(self):
        self.check_identical(["--generate", "uniform:3001:17:12", "--chunk-mb", "1", "--metric", "cosine",
                              "--precision", "float64", "--block", "64"], [1, 2, 3, 4], expect_chunks_at_least=20)

    def test_more_ranks_than_chunks(self):
        # 300 points fit one chunk: ranks 1..4 have nothing to do but must take part.
        x = np.random.default_rng(3).random((300, 4))
        src = self.save_npy("x.npy", x)
        d, done, _, _ = self.check_identical(["--input", src, "--precision", "float64"], [1, 3, 5])
        self.assertEqual(len(np.frombuffer(done, np.uint8)), 1)
        np.testing.assert_allclose(np.frombuffer(d, np.float64), pdist(x), rtol=1e-12)

    def test_rank_count_does_not_change_chunk_plan(self):
        # A few chunks of very unequal rows, 7 ranks: some get none.
        self.check_identical(["--generate", "uniform:1500:2:1", "--chunk-mb", "1", "--block", "16"], [1, 2, 7],
                             expect_chunks_at_least=3)


if __name__ == "__main__":
    unittest.main()
