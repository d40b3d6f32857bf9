"""Reading many contiguous runs of a 1-D dataset fast.

h5py's point selections (d[[i, j, ...]]) cost time quadratic in the number of
points, and so does building one HDF5 union hyperslab of many blocks
(HDF5 1.10: 13 s for 20000 blocks). Two ways that are fast:

- "mmap": a contiguous, unfiltered dataset in a plain (sec2) file is a byte
  range of the file: map it read-only and copy the runs out with NumPy.
- "hdf5": everything else: union hyperslabs of at most 64 blocks per
  H5Dread (small unions are cheap; measured fastest among 16..5000).

Both give the same values; access="auto" picks mmap where it applies.

A file that is not complete (opened with require_complete=False) holds
values only in the chunks flagged done: given the flat ranges of the others
(Unwritten), a RunReader returns NaN there for floating-point values and
raises for integers, on either path; a complete file's reads are untouched.
"""
import mmap

import numpy as np
from h5py import h5d, h5s

_UNION = 64  # blocks per union hyperslab (hdf5 path)
_SHORT = 256  # runs shorter than this are copied with one fancy index (mmap path)
_BATCH = 1 << 22  # elements per fancy-index batch
_ADVISE = 64  # from this many segments on, ask for their pages up front (mmap path)


def _floating(dtype):
    return np.dtype(dtype).kind in "fc"


def fill_ranges(buf, begins, lengths, value):
    """buf[begins[k]:begins[k] + lengths[k]] = value for every k (1-D buf)."""
    begins = np.asarray(begins, dtype=np.int64)
    lengths = np.asarray(lengths, dtype=np.int64)
    keep = lengths > 0
    begins, lengths = begins[keep], lengths[keep]
    n = len(buf)
    if len(begins) <= max(64, n // 64):  # a slice assignment each is cheaper than a pass over buf
        for b, L in zip(begins.tolist(), lengths.tolist()):
            buf[b:b + L] = value
        return
    depth = np.bincount(begins, minlength=n + 1) - np.bincount(begins + lengths, minlength=n + 1)
    buf[np.cumsum(depth[:n]) > 0] = value


def id_ranges(ids, most=8):
    """Sorted ints as "0-2, 5, 9-11" (the first `most` runs, then "...")."""
    ids = np.unique(np.asarray(ids, dtype=np.int64))
    if len(ids) == 0:
        return ""
    brk = np.flatnonzero(np.diff(ids) != 1) + 1
    first, last = np.concatenate(([0], brk)), np.concatenate((brk, [len(ids)])) - 1
    parts = [f"{ids[a]}-{ids[b]}" if b > a else f"{ids[a]}" for a, b in zip(first[:most], last[:most])]
    return ", ".join(parts) + (", ..." if len(first) > most else "")


class Unwritten:
    """The flat ranges [starts[h], ends[h]) of a dataset that its file has
    not written yet (the chunks not flagged done), sorted and disjoint;
    chunks[h] is the chunk of range h. Reads over them come back NaN
    (floating-point values) or raise error(chunks touched) (integers)."""

    def __init__(self, starts, ends, chunks, error):
        self.starts = np.asarray(starts, dtype=np.int64).reshape(-1)
        self.ends = np.asarray(ends, dtype=np.int64).reshape(-1)
        self.chunks = np.asarray(chunks, dtype=np.int64).reshape(-1)
        self.error = error

    def overlaps(self, starts, lengths):
        """(k, h, lo, hi): run k (flat [starts[k], starts[k] + lengths[k]))
        meets range h in [lo, hi), for every such pair."""
        s = np.asarray(starts, dtype=np.int64).reshape(-1)
        e = s + np.asarray(lengths, dtype=np.int64).reshape(-1)
        lo = np.searchsorted(self.ends, s, side="right")  # the first range that ends after s
        hi = np.searchsorted(self.starts, e, side="left")  # the ranges that start before e
        cnt = np.where(e > s, np.maximum(hi - lo, 0), 0)
        total = int(cnt.sum())
        if total == 0:
            z = np.zeros(0, np.int64)
            return z, z, z, z
        k = np.repeat(np.arange(len(s), dtype=np.int64), cnt)
        h = np.repeat(lo, cnt) + (np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(cnt) - cnt, cnt))
        return k, h, np.maximum(s[k], self.starts[h]), np.minimum(e[k], self.ends[h])

    def check(self, starts, lengths):
        """Raises error(...) if any run meets an unwritten range."""
        _, h, _, _ = self.overlaps(starts, lengths)
        if len(h):
            raise self.error(self.chunks[h])

    def apply(self, buf, starts, lengths, offs):
        """Run k of flat positions [starts[k], starts[k] + lengths[k]) lies
        at buf[offs[k]:offs[k] + lengths[k]] (buf 1-D): NaN where unwritten
        (floats), else error(...) if any is."""
        k, h, lo, hi = self.overlaps(starts, lengths)
        if len(k) == 0:
            return
        if not _floating(buf.dtype):
            raise self.error(self.chunks[h])
        s = np.asarray(starts, dtype=np.int64).reshape(-1)
        o = np.asarray(offs, dtype=np.int64).reshape(-1)
        fill_ranges(buf, o[k] + (lo - s[k]), hi - lo, np.nan)

    def hits(self, flat):
        """Boolean array: which flat positions (any shape) are unwritten, and the chunks they lie in."""
        flat = np.asarray(flat, dtype=np.int64)
        if len(self.starts) == 0:
            return np.zeros(flat.shape, dtype=bool), np.zeros(0, np.int64)
        i = np.searchsorted(self.starts, flat, side="right") - 1
        ic = np.maximum(i, 0)
        hit = (i >= 0) & (flat < self.ends[ic])
        return hit, self.chunks[ic[hit]]

    def _strided(self, start, count, step):
        """(h, mlo, mhi): positions start + m*step (0 <= m < count, step > 0)
        with mlo[i] <= m < mhi[i] lie in range h[i]."""
        # start + m*step in [a, b) for ceil((a - start) / step) <= m < ceil((b - start) / step)
        mlo = np.clip(-((start - self.starts) // step), 0, count)
        mhi = np.clip(-((start - self.ends) // step), 0, count)
        h = np.flatnonzero(mhi > mlo)
        return h, mlo[h], mhi[h]

    def check_strided(self, start, count, step):
        h, _, _ = self._strided(start, count, step)
        if len(h):
            raise self.error(self.chunks[h])

    def apply_strided(self, out, start, step):
        """out[m] holds flat position start + m*step (step > 0): NaN where
        unwritten (floats), else error(...) if any is."""
        h, mlo, mhi = self._strided(start, len(out), step)
        if len(h) == 0:
            return
        if not _floating(out.dtype):
            raise self.error(self.chunks[h])
        fill_ranges(out, mlo, mhi - mlo, np.nan)


def merge_runs(starts, lengths):
    """Runs (start, length) in any order, overlapping or not, as sorted
    disjoint segments: (seg_starts, seg_lengths, offs), where run k is
    buf[offs[k]:offs[k] + lengths[k]] of the segments read one after the other."""
    starts = np.asarray(starts, dtype=np.int64).reshape(-1)
    lengths = np.asarray(lengths, dtype=np.int64).reshape(-1)
    offs = np.zeros(len(starts), dtype=np.int64)
    keep = np.flatnonzero(lengths > 0)
    if len(keep) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), offs
    order = keep[np.argsort(starts[keep], kind="stable")]
    s = starts[order]
    e = s + lengths[order]
    emax = np.maximum.accumulate(e)
    new = np.empty(len(s), dtype=bool)
    new[0] = True
    new[1:] = s[1:] > emax[:-1]
    first = np.flatnonzero(new)
    seg_start = s[first]
    seg_len = np.maximum.reduceat(e, first) - seg_start
    seg_off = np.zeros(len(first), dtype=np.int64)
    np.cumsum(seg_len[:-1], out=seg_off[1:])
    seg_id = np.cumsum(new) - 1
    offs[order] = seg_off[seg_id] + (s - seg_start[seg_id])
    return seg_start, seg_len, offs


class RunReader:
    """Reads runs of the flattened values of dataset d (1-D or 2-D).

    unwritten (an Unwritten, or None for a complete file): values read in
    its ranges come back NaN (floats), or the read raises its error (integers)."""

    def __init__(self, d, access="auto", unwritten=None):
        if access not in ("auto", "mmap", "hdf5"):
            raise ValueError(f"access must be 'auto', 'mmap' or 'hdf5', not {access!r}")
        self.d = d
        self.size = int(d.size)
        self.dtype = d.dtype.newbyteorder("=") if d.dtype.byteorder not in ("=", "|") else d.dtype
        self.access = access
        self.unwritten = unwritten
        self._map = None  # (mmap, ndarray view) once opened
        self._file = None
        if access == "mmap" and self._mappable() is None:
            raise ValueError(f"{d.name} cannot be memory-mapped (not contiguous in a plain file): use access='hdf5'")

    def _mappable(self):
        """The dataset's byte offset in its file when it may be mapped, else None."""
        d = self.d
        try:
            if d.file.driver != "sec2" or d.dtype.kind not in "fiu" or self.size == 0:
                return None
            dcpl = d.id.get_create_plist()
            if dcpl.get_layout() != h5d.CONTIGUOUS or dcpl.get_external_count() != 0 or dcpl.get_nfilters():
                return None
            off = d.id.get_offset()
        except Exception:
            return None
        return off

    def _array(self):
        """The dataset as a read-only flat array on a file map, or None."""
        if self.access == "hdf5":
            return None
        if self._map is None:
            off = self._mappable()
            if off is None:
                self.access = "hdf5"
                return None
            f = open(self.d.file.filename, "rb")
            try:
                m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            except (ValueError, OSError):
                f.close()
                self.access = "hdf5"
                return None
            if off + self.size * self.d.dtype.itemsize > len(m):
                m.close()
                f.close()
                self.access = "hdf5"
                return None
            self._file = f
            self._base = off
            self._map = (m, np.frombuffer(m, dtype=self.d.dtype, count=self.size, offset=off))
        return self._map[1]

    def close(self):
        if self._map is not None:
            m, _ = self._map
            self._map = None
            try:
                m.close()
            except BufferError:  # a view is still alive somewhere; the GC closes it
                pass
        if self._file is not None:
            self._file.close()
            self._file = None

    # --- reads ---------------------------------------------------------------

    def contiguous(self, a, b):
        """values[a:b] (flat positions)."""
        a, b = int(a), int(b)
        out = np.empty(max(0, b - a), dtype=self.dtype)
        if b > a:
            self._segments(np.array([a]), np.array([b - a]), out)
        return out

    def strided(self, start, count, step):
        """values[start], values[start + step], ... (count of them, step > 0)."""
        out = np.empty(int(count), dtype=self.dtype)
        if count == 0:
            return out
        u = self.unwritten
        if u is not None and not _floating(self.dtype):
            u.check_strided(int(start), int(count), int(step))  # integers: refused before reading
        arr = self._array()
        if arr is not None:
            out[...] = arr[start:start + (count - 1) * step + 1:step]
        else:
            fs = self.d.id.get_space()
            if self.d.ndim != 1:
                raise ValueError("strided reads are for 1-D datasets")
            fs.select_hyperslab((int(start),), (int(count),), stride=(int(step),))
            self.d.id.read(h5s.create_simple((int(count),)), fs, out)
        if u is not None:
            u.apply_strided(out, int(start), int(step))
        return out

    def runs(self, starts, lengths):
        """(buf, offs): run k is buf[offs[k]:offs[k] + lengths[k]]; the runs
        may come in any order and overlap (each value is read once)."""
        seg_start, seg_len, offs = merge_runs(starts, lengths)
        buf = np.empty(int(seg_len.sum()), dtype=self.dtype)
        self._segments(seg_start, seg_len, buf)
        return buf, offs

    def _segments(self, seg_start, seg_len, buf):
        """Sorted disjoint segments, one after the other into buf."""
        if len(seg_start) == 0:
            return
        if int(seg_start[0]) < 0 or int(seg_start[-1] + seg_len[-1]) > self.size:
            raise IndexError(f"read outside {self.d.name} ({self.size} values)")
        u = self.unwritten
        if u is not None and not _floating(self.dtype):
            u.check(seg_start, seg_len)  # integers: refused before reading
        arr = self._array()
        if arr is not None:
            if len(seg_start) >= _ADVISE:
                self._advise(seg_start, seg_len)
            self._segments_mmap(arr, seg_start, seg_len, buf)
        else:
            self._segments_hdf5(seg_start, seg_len, buf)
        if u is not None:
            seg_off = np.zeros(len(seg_start), dtype=np.int64)
            np.cumsum(seg_len[:-1], out=seg_off[1:])
            u.apply(buf, seg_start, seg_len, seg_off)

    def _advise(self, seg_start, seg_len):
        """Asks the kernel for every page the segments need at once
        (MADV_WILLNEED): from a cold page cache, many small runs then cost
        one parallel burst of reads instead of one page fault after another
        (n = 50000, last 100 rows: 1.2 s instead of 8 s)."""
        m, _ = self._map
        if not hasattr(m, "madvise"):
            return
        page = mmap.PAGESIZE
        item = self.d.dtype.itemsize
        a = (self._base + seg_start * item) // page * page
        e = self._base + (seg_start + seg_len) * item
        # merge page ranges that touch
        new = np.empty(len(a), dtype=bool)
        new[0] = True
        new[1:] = a[1:] > np.maximum.accumulate(e)[:-1]
        first = np.flatnonzero(new)
        ends = np.maximum.reduceat(e, first)
        try:
            for s, end in zip(a[first].tolist(), ends.tolist()):
                m.madvise(mmap.MADV_WILLNEED, s, end - s)
        except (OSError, ValueError):
            pass

    @staticmethod
    def _segments_mmap(arr, seg_start, seg_len, buf):
        seg_off = np.zeros(len(seg_start), dtype=np.int64)
        np.cumsum(seg_len[:-1], out=seg_off[1:])
        short = seg_len < _SHORT
        for k in np.flatnonzero(~short).tolist():
            s, L, o = int(seg_start[k]), int(seg_len[k]), int(seg_off[k])
            buf[o:o + L] = arr[s:s + L]
        idx = np.flatnonzero(short)
        k = 0
        while k < len(idx):
            # a batch of short segments: one gather index of at most _BATCH values
            cum = np.cumsum(seg_len[idx[k:]])
            m = max(1, int(np.searchsorted(cum, _BATCH, side="right")))
            sel = idx[k:k + m]
            L = seg_len[sel]
            total = int(L.sum())
            rel = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(L) - L, L)
            src = np.repeat(seg_start[sel], L) + rel
            dst = np.repeat(seg_off[sel], L) + rel
            buf[dst] = arr[src]
            k += m

    def _segments_hdf5(self, seg_start, seg_len, buf):
        d = self.d
        flat = d.ndim == 1
        o = 0
        for b0 in range(0, len(seg_start), _UNION):
            ss, ll = seg_start[b0:b0 + _UNION].tolist(), seg_len[b0:b0 + _UNION].tolist()
            fs = d.id.get_space()
            fs.select_none()
            for s, L in zip(ss, ll):
                if flat:
                    fs.select_hyperslab((s,), (1,), block=(L,), op=h5s.SELECT_OR)
                else:
                    self._select_flat_2d(fs, s, L)
            total = sum(ll)
            d.id.read(h5s.create_simple((total,)), fs, buf[o:o + total])
            o += total

    def _select_flat_2d(self, fs, s, L):
        """Flat run [s, s+L) of a row-major 2-D dataset, as up to three blocks."""
        cols = self.d.shape[1]
        r, c = divmod(s, cols)
        if c:
            w = min(L, cols - c)
            fs.select_hyperslab((r, c), (1, 1), block=(1, w), op=h5s.SELECT_OR)
            s, L, r = s + w, L - w, r + 1
        if L >= cols:
            rows = L // cols
            fs.select_hyperslab((r, 0), (1, 1), block=(rows, cols), op=h5s.SELECT_OR)
            s, L, r = s + rows * cols, L - rows * cols, r + rows
        if L:
            fs.select_hyperslab((r, 0), (1, 1), block=(1, L), op=h5s.SELECT_OR)
