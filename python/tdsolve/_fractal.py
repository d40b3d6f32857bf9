"""`tdsolve fractal`: Game-of-Life-style automata on NBB fractals.

A fractal is an s x s pattern of k filled sub-squares (the replicas, in the
order of its table). At level r it lives in an n x n embedding, n = s^r, x
to the right and y downwards, and has k^r cells. A cell's compact index is
c = sum_mu id_mu k^mu, where id_mu is the replica of its level-mu base-s
digit pair (mu = 0 the finest); lambda maps it to the embedding and nu back:

    lambda(c)  = (sum_mu s^mu cx[id_mu], sum_mu s^mu cy[id_mu])
    nu(x, y)   = c, or -1 off the fractal (or outside the n x n square)

The file holds the states of the snapshots in compact order (docs/output.md,
"tdsolve fractal")."""
import numpy as np

from ._read import Unwritten, id_ranges
from ._result import IncompleteResult, Result, _axis, _int, _one, _positions, _split_key, _text

# The presets of `tdsolve fractal --shape NAME`: side s, then the replicas' (x, y).
fractal_presets = {
    "sierpinski-triangle": "2:0,0/0,1/1,1",
    "sierpinski-carpet": "3:0,0/1,0/2,0/0,1/2,1/0,2/1,2/2,2",
    "vicsek": "3:1,0/0,1/1,1/2,1/1,2",
    "x-fractal": "3:0,0/2,0/1,1/0,2/2,2",
    "h-fractal": "3:0,0/2,0/0,1/1,1/2,1/0,2/2,2",
    "cantor-dust": "3:0,0/2,0/0,2/2,2",
}

# image(): the largest embedding side it draws (16384^2 bytes = 256 MiB).
IMAGE_MAX_SIDE = 16384
OFF = 255  # image(): a cell of the embedding that is not on the fractal


def parse_table(text):
    """A preset's name or a table "S:x,y/x,y/..." as (s, [(x, y), ...]);
    ValueError unless it is an NBB table (s in 2..16, every cell inside the
    s x s square, none twice, at least one)."""
    text = fractal_presets.get(text, text)
    try:
        head, body = text.split(":", 1)
        s = int(head)
        cells = [tuple(int(v) for v in p.split(",")) for p in body.split("/")] if body else []
    except ValueError:
        raise ValueError(f"{text!r} is neither a preset ({', '.join(fractal_presets)}) nor a table "
                         "S:x,y/x,y/...") from None
    if not 2 <= s <= 16:
        raise ValueError(f"{text!r}: the side must be in 2..16")
    if not cells or any(len(c) != 2 for c in cells):
        raise ValueError(f"{text!r}: a table lists one or more cells x,y")
    if any(not (0 <= x < s and 0 <= y < s) for x, y in cells):
        raise ValueError(f"{text!r}: a cell lies outside the {s} x {s} square")
    if len(set(cells)) != len(cells):
        raise ValueError(f"{text!r}: a cell is listed twice")
    return s, cells


class FractalMaps:
    """lambda and nu of one fractal at one level, vectorised over NumPy arrays."""

    def __init__(self, s, table, level):
        self.s, self.k, self.level = int(s), len(table), int(level)
        self.table = [(int(x), int(y)) for x, y in table]
        if not 2 <= self.s <= 16 or self.level < 0 or self.level > 31 or self.s ** self.level > 1 << 31:
            raise OverflowError(f"s = {self.s}, level {self.level}: s must be in 2..16 and s^level at most 2^31")
        self.n = self.s ** self.level
        self.cells = self.k ** self.level
        self._cx = np.array([x for x, _ in self.table], dtype=np.int64)
        self._cy = np.array([y for _, y in self.table], dtype=np.int64)
        self._id = np.full(self.s * self.s, -1, dtype=np.int64)  # sub-square x + s*y -> replica
        for r, (x, y) in enumerate(self.table):
            self._id[x + self.s * y] = r

    def lambda_map(self, c):
        """Compact index(es) c -> embedded (x, y): int64 arrays of c's shape
        (ints for an int). IndexError outside 0..cells-1."""
        scalar = np.ndim(c) == 0
        a = np.asarray(c)
        if a.dtype == bool or a.dtype.kind not in "iuO":
            raise TypeError(f"c must be an integer or an integer array, not {a.dtype}")
        if a.dtype.kind == "O":
            try:
                a = a.astype(np.int64)
            except (OverflowError, TypeError, ValueError):
                raise IndexError(f"c holds values that are not cells of {self.cells}") from None
        if a.size and (a.min() < 0 or a.max() >= self.cells):
            raise IndexError(f"c holds values that are not cells of {self.cells}")
        rest = a.astype(np.int64)
        x = np.zeros(a.shape, dtype=np.int64)
        y = np.zeros(a.shape, dtype=np.int64)
        p = 1
        for _ in range(self.level):
            d = rest % self.k
            rest = rest // self.k
            x += p * self._cx[d]
            y += p * self._cy[d]
            p *= self.s
        return (int(x), int(y)) if scalar else (x, y)

    def nu_map(self, x, y):
        """Embedded (x, y) (broadcast together) -> compact index, int64; -1 off
        the fractal or outside the n x n square (an int for ints)."""
        scalar = np.ndim(x) == 0 and np.ndim(y) == 0
        ax, ay = (np.asarray(v) for v in (x, y))
        for name, a in (("x", ax), ("y", ay)):
            if a.dtype == bool or a.dtype.kind not in "iu":
                raise TypeError(f"{name} must be an integer or an integer array, not {a.dtype}")
        ax, ay = np.broadcast_arrays(ax.astype(np.int64), ay.astype(np.int64))
        inside = (ax >= 0) & (ay >= 0) & (ax < self.n) & (ay < self.n)
        ux, uy = np.where(inside, ax, 0), np.where(inside, ay, 0)
        c = np.zeros(ax.shape, dtype=np.int64)
        ok = inside.copy()
        p = 1
        for _ in range(self.level):
            r = self._id[ux % self.s + self.s * (uy % self.s)]
            ok &= r >= 0
            c += p * np.maximum(r, 0)
            ux, uy = ux // self.s, uy // self.s
            p *= self.k
        c = np.where(ok, c, -1)
        return int(c) if scalar else c

    def _low_coordinates(self, levels):
        """(x, y) int64 of the cells of the miniature of `levels` levels, in compact order."""
        x = np.zeros(1, dtype=np.int64)
        y = np.zeros(1, dtype=np.int64)
        p = 1
        for _ in range(levels):  # the next digit is the most significant: c = id * k^l + c_low
            x = (p * self._cx[:, None] + x[None, :]).reshape(-1)
            y = (p * self._cy[:, None] + y[None, :]).reshape(-1)
            p *= self.s
        return x, y

    def image(self, state):
        """The n x n embedding of a compact state: 1 live, 0 dead, OFF (255) off the fractal."""
        n = self.n
        if n > IMAGE_MAX_SIDE:
            raise ValueError(f"the embedding is {n} x {n}: image() draws at most {IMAGE_MAX_SIDE} x "
                             f"{IMAGE_MAX_SIDE} (read states with state(i) and map them with lambda_map)")
        state = np.asarray(state)
        if state.shape != (self.cells,):
            raise ValueError(f"a state of this fractal holds {self.cells} cells, not {state.shape}")
        img = np.full((n, n), OFF, dtype=np.uint8)
        low = 0  # levels drawn at once: at most 2^20 cells per assignment
        while low < self.level and self.k ** (low + 1) <= 1 << 20:
            low += 1
        lx, ly = self._low_coordinates(low)
        per = self.k ** low
        hx, hy = FractalMaps(self.s, self.table, self.level - low).lambda_map(
            np.arange(self.k ** (self.level - low), dtype=np.int64))
        scale = self.s ** low
        for h in range(len(hx)):
            img[ly + scale * hy[h], lx + scale * hx[h]] = state[h * per:(h + 1) * per] != 0
        return img


class FractalResult(Result):
    """`tdsolve fractal`: the states of a Game-of-Life-style automaton on an
    NBB fractal, one row per snapshot, in compact order.

    shape == (snapshots, cells); len(); r[...] indexes the (snapshots x cells)
    matrix as h5py does; state(i) reads snapshot i (negative i counts from
    the end) in one contiguous read; steps (int64[snapshots]: the step of
    each snapshot), live (int64[total_steps + 1]: live cells at every step),
    total_steps (T); s, k, level, n (s^level), cells (k^level), table (the
    replicas' (x, y), replica order), shape_name (preset or table text),
    table_text, rule, init, layout, map, rho; lambda_map(c), nu_map(x, y)
    (vectorised, int64); image(i) (n x n uint8: 1 live, 0 dead, 255 off the
    fractal), save_png(path, i=-1); iter_chunks() yields (i, state(i)) for
    each written snapshot.

    In an incomplete file (a stopped run's) the snapshots not flagged done
    are not written: state(i), image(i), save_png(), r[...] and
    iter_chunks(done_only=False) raise IncompleteResult when they touch
    one (naming it), and read the written ones; live raises
    IncompleteResult (/live is written with each snapshot), and
    live_written holds the steps written so far."""

    kind = "fractal"

    def __init__(self, f, verdict, access="auto"):
        super().__init__(f, verdict, access)
        try:
            self._read_records(f)
        except (KeyError, TypeError, ValueError, OverflowError, OSError) as e:
            # An inconsistent file (opened with require_complete=False) whose records do not say enough.
            raise IncompleteResult(f"{self.path}: {verdict.message} (cannot read it as a fractal: {e})",
                                   verdict) from None

    def _read_records(self, f):
        a = self.attrs

        def scalar(name, conv):
            v = _one(a.get(name))
            return conv(v) if v is not None else None

        def text(name):
            return _text(_one(a[name])) if name in a and _one(a[name]) is not None else None

        self.s = scalar("s", int)
        self.k = scalar("k", int)
        self.level = scalar("level", int)
        self.total_steps = scalar("steps", int)
        self.rho = scalar("rho", int)
        self.shape_name = text("shape")
        self.table_text = text("table")
        self.rule, self.init = text("rule"), text("init")
        self.layout, self.map = text("layout"), text("map")
        self.order = text("order")
        reps = np.asarray(f["replicas"][()], dtype=np.int64) if "replicas" in f else None
        if reps is not None and reps.shape == (self.k, 2):
            self.table = [(int(x), int(y)) for x, y in reps]
        else:
            self.table = parse_table(self.table_text)[1]
        self._maps = FractalMaps(self.s, self.table, self.level)
        self.n, self.cells = self._maps.n, self._maps.cells
        self.steps = np.asarray(f["steps"][()], dtype=np.int64)

    def _describe(self):
        return (f"{self.shape_name} level {self.level} ({self.cells} cells in {self.n} x {self.n}), "
                f"{self.rule}, {len(self)} snapshots to step {self.total_steps}")

    def _find_unwritten(self):
        """The rows of /states (snapshots) not flagged done, as flat ranges."""
        done = self.verdict._done
        if done is None:
            return None
        bad = np.flatnonzero(np.asarray(done) != 1)
        cells = int(self._d.shape[1]) if self._d.ndim == 2 else 0
        if len(bad) == 0 or cells == 0:
            return None
        return Unwritten(bad * cells, (bad + 1) * cells, bad, self._unwritten_error)

    def _unwritten_what(self, chunks):
        many = len(chunks) > 1
        at = ", ".join(str(int(self.steps[c])) for c in chunks[:8]) + (", ..." if len(chunks) > 8 else "")
        return f"snapshot{'s' if many else ''} {id_ranges(chunks)} (step{'s' if many else ''} {at}) of /states " \
            + ("are" if many else "is")

    def _live_written(self):
        """S + 1: /live holds final values at steps 0..S, S the step of the
        last snapshot of the longest run of snapshots flagged done from the first."""
        done = np.asarray(self.verdict._done) == 1
        first_missing = int(np.argmin(done)) if not np.all(done) else len(done)
        return 0 if first_missing == 0 else int(self.steps[first_missing - 1]) + 1

    @property
    def live(self):
        """int64[total_steps + 1]: live cells at each step 0..T. /live is
        written with each snapshot: in an incomplete file IncompleteResult
        (live_written has the steps written so far)."""
        if self._unwritten is not None:
            done = np.asarray(self.verdict._done) == 1
            missing = np.flatnonzero(~done)
            steps = [(int(self.steps[c - 1]) + 1 if c else 0, int(self.steps[c])) for c in missing[:8].tolist()]
            spans = ", ".join(f"{a}..{b}" if b > a else f"{a}" for a, b in steps)
            spans += ", ..." if len(missing) > 8 else ""
            many = len(missing) > 1
            raise IncompleteResult(f"{self.path}: /live is written with each snapshot, and snapshot"
                                   f"{'s' if many else ''} {id_ranges(missing)} (steps {spans} of /live) "
                                   f"{'are' if many else 'is'} not written yet ({self.verdict.message}); "
                                   f"live_written holds steps 0..{self._live_written() - 1}", self.verdict)
        return np.asarray(self._f["live"][()], dtype=np.int64)

    @property
    def live_written(self):
        """int64[S + 1]: live cells at steps 0..S, the steps whose counts are
        written: up to the step of the last snapshot of the longest run of
        snapshots flagged done from the first (all of live in a complete file)."""
        return np.asarray(self._f["live"][:self._live_written()], dtype=np.int64)

    def __getitem__(self, key):
        if self._unwritten is not None:
            rows = _positions(_axis(_split_key(key, 2)[0], self.shape[0]))[0]
            cells = int(self._d.shape[1])
            self._unwritten.check(rows * cells, np.full(len(rows), cells, dtype=np.int64))
        return self._d[key]

    def _row(self, i):
        S = self.shape[0]
        try:
            i = _int(i)
        except TypeError:
            raise TypeError(f"a snapshot is an integer, not {i!r}") from None
        if not -S <= i < S:
            raise IndexError(f"snapshot {i} is out of range: the file has {S}")
        return i % S

    def state(self, i=-1):
        """Snapshot i (negative: from the end) as uint8[cells] in compact order
        (1 live, 0 dead): the state at step steps[i]. IncompleteResult when
        that snapshot is not written yet."""
        i = self._row(i)
        if self.verdict._done[i] != 1:
            raise IncompleteResult(f"{self.path}: snapshot {i} (step {int(self.steps[i])}) is not written yet "
                                   f"({self.verdict.message})", self.verdict)
        return self._runs().contiguous(i * self.cells, (i + 1) * self.cells)

    def done_chunks(self):
        """[(first, last) flat offsets of each snapshot flagged done]."""
        done = self.verdict._done
        return [(i * self.cells, (i + 1) * self.cells) for i in range(len(done)) if done[i] == 1]

    def iter_chunks(self, done_only=True):
        """Yields (i, state) for each snapshot (only those written, with
        done_only; with done_only=False, one not written raises
        IncompleteResult when reached)."""
        done = self.verdict._done
        for i in range(len(done)):
            if done[i] == 1:
                yield i, self.state(i)
            elif not done_only:
                yield i, self._runs().contiguous(i * self.cells, (i + 1) * self.cells)

    def lambda_map(self, c):
        """Compact index(es) -> embedded (x, y), int64 (ints for an int)."""
        return self._maps.lambda_map(c)

    def nu_map(self, x, y):
        """Embedded (x, y) -> compact index, int64; -1 off the fractal or outside n x n."""
        return self._maps.nu_map(x, y)

    def image(self, i=-1):
        """Snapshot i drawn in the n x n embedding (row y, column x): uint8,
        1 live, 0 dead fractal cell, 255 off the fractal. ValueError for
        n > 16384."""
        if self.n > IMAGE_MAX_SIDE:
            raise ValueError(f"{self.path}: the embedding is {self.n} x {self.n}: image() draws at most "
                             f"{IMAGE_MAX_SIDE} x {IMAGE_MAX_SIDE} (read states with state(i) and place them "
                             "with lambda_map)")
        return self._maps.image(self.state(i))

    def save_png(self, path, i=-1):
        """Snapshot i as a PNG (matplotlib, Agg): live black, dead light grey,
        off the fractal white; titled with the shape, level and step."""
        try:
            from matplotlib.backends.backend_agg import FigureCanvasAgg
            from matplotlib.figure import Figure
        except ImportError as e:
            raise ImportError(f"save_png needs matplotlib (Debian: python3-matplotlib; pip install matplotlib): {e}") \
                from None

        row = self._row(i)
        img = self.image(row)
        rgb = np.full(img.shape + (3,), 255, dtype=np.uint8)
        rgb[img == 0] = 211  # light grey
        rgb[img == 1] = 0
        inches = min(max(6.0, self.n / 100 + 1), 40.0)  # about one pixel per cell up to 4000
        fig = Figure(figsize=(inches, inches + 0.5), dpi=100)
        FigureCanvasAgg(fig)
        ax = fig.add_subplot(1, 1, 1)
        ax.imshow(rgb, interpolation="nearest")
        ax.set_axis_off()
        ax.set_title(f"{self.shape_name}, level {self.level}, step {int(self.steps[row])} "
                     f"({self.rule}; {int(np.count_nonzero(img == 1))} live)")
        fig.savefig(path, format="png", bbox_inches="tight")

