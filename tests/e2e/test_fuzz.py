"""Corruption fuzz (issue 32): damaged files of every kind through every reader.

Small files of every kind (edm, cross, hist, knn, radius, collide, triplet,
fractal) are written once by the program, each complete and as a stopped
run's .partial (incomplete). Then N damaged copies (N = 2000 by default,
250 of each kind; TDSOLVE_FUZZ_N sets it, TDSOLVE_FUZZ_SEED the seed, 32
by default) are made, file I from its own generator seeded "SEED:I" (kind I
mod 8, complete or incomplete by turns of 8), by one of

- meta:     1 to 8 bytes set to random values in the first 12 KiB (the
            superblock, object headers, B-trees and heaps live there),
- any:      1 to 4 bytes set anywhere in the file,
- truncate: the file cut at a random length,
- resize:   one dataset made longer or shorter with h5py (extended, or
            written anew with its attributes where it cannot be),

and read by `tdsolve info` and by `tdsolve.check` (the package's API, in two
worker processes of this script); those of every fourth turn of 16 files
also by `tdsolve.validate` and `tdsolve.open(..., require_complete=False)`
with a read of its values, those of every 24th turn by `--resume` of its job
(the file renamed to OUT.h5.partial). Under TDSOLVE_READ_TIMEOUT_S=10 a walk
that loops is cut short, so a reader that takes more than 60 s hangs.

It fails, naming the file's seed, on
- a crash: a reader that dies by a signal, a Python traceback, a worker
  that dies (`test_fuzz.py --make I DIR` writes file I to look at);
- a hang: a reader past its time limit;
- a damaged file called complete: a "complete" verdict (by either reader) on
  a file whose bytes changed is accepted only where its result datasets
  (every dataset but the dimension scales: names, shapes, dtypes and
  values) are the reference's, but for values of a dataset where a changed
  byte lies among its stored values (a payload change: HDF5 keeps no
  checksum of them, so no reader can see it; counted apart);
- a resume into a "complete" file that is not the reference's (the same
  exemption for payload changes), into the output's name with a verdict
  other than complete, or a damaged .partial that --resume refuses as
  damaged but changes or renames (test_resume);
- `tdsolve info` and `tdsolve.check` differing on more than 1 % of the files
  (test_verdicts_agree: an out-of-bounds read inside HDF5 can crash one
  process and not the other, so a few may differ).

The descriptive attributes (`created`, `command`, ...) of complete files
that differ from the reference's are counted and printed, not failed:
HDF5 1.10 keeps no checksum of an object header, so a changed value, or
one HDF5 reads from outside an attribute message whose sizes changed
(then h5py may not read it at all), is invisible to every reader. The
records the checks read must still agree, and the datasets are compared
whole.
A worker that dies (the package crashed in its process) is replayed: a
fresh worker reads the same files in the same order, and a crash that
comes back is a problem; one that does not is printed as a WARNING
(TDSOLVE_FUZZ_CRASH_AT=I makes the worker die at file I, to check this).
It takes about 110 s of CPU (user and system) on the 2-core development
machine, 77 s there while other work shared both cores; no reader's child
holds more than about 1 GiB (io/walk.hpp kWalkMemoryBytes: before that
bound, a dozen files in 10000 made the walking children grow to 10 GB each
until the time limit, and a run took 200 s). `TDSOLVE_FUZZ_N=10000` runs
more by hand (about 8 min), and TDSOLVE_FUZZ_LOG=FILE writes every problem
there.
"""
import json
import os
import random
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import unittest

import h5py
import numpy as np

BIN = os.environ.get("TDSOLVE_BIN", "tdsolve")
PACKAGE_SRC = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../python"))
N = int(os.environ.get("TDSOLVE_FUZZ_N", "2000"))
SEED = os.environ.get("TDSOLVE_FUZZ_SEED", "32")
WORKERS = 2
RESUME_EVERY = 24
READERS_EVERY = 4
INFO_TIMEOUT = 60
RESUME_TIMEOUT = 120
ENV = dict(os.environ, TDSOLVE_READ_TIMEOUT_S="10", HDF5_USE_FILE_LOCKING="FALSE")

COMMON = ["--progress", "none", "--quiet", "--backend", "cpu"]
# kind -> the job (without --output)
JOBS = {
    "edm": ["edm", "--generate", "uniform:60:3:1", "--store-points", "--threads", "1"],
    "cross": ["cross", "--generate", "uniform:50:3:1", "--with-generate", "uniform:20:3:2", "--threads", "1"],
    "hist": ["hist", "--generate", "uniform:60:3:3", "--bins", "12", "--range", "0:0.5", "--box", "1,1,1",
             "--threads", "1"],
    "knn": ["knn", "--generate", "uniform:60:3:5", "--k", "4", "--threads", "1"],
    "radius": ["knn", "--generate", "uniform:60:3:5", "--radius", "0.3", "--threads", "1"],
    "collide": ["collide", "--generate", "spheres:80:3:7", "--threads", "1"],
    "triplet": ["triplet", "--generate", "uniform:30:3:9", "--store-triplets", "--threads", "1"],
    "fractal": ["fractal", "--shape", "sierpinski-carpet", "--level", "3", "--steps", "10", "--snapshot-every",
                "3"],
}
KINDS = list(JOBS)
MUTATIONS = ("meta", "meta", "meta", "any", "truncate", "resize")
SCALE_ATTRS = {"DIMENSION_LIST", "REFERENCE_LIST", "CLASS", "NAME", "_Netcdf4Dimid"}


def run(args, timeout, env=ENV):
    """(returncode or None on a timeout, stdout, stderr)."""
    try:
        r = subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env, errors="replace")
    except subprocess.TimeoutExpired:
        return None, "", ""
    return r.returncode, r.stdout, r.stderr


# --- the reference files ------------------------------------------------------


def payload_extents(path):
    """{dataset: [(offset, length)]}: where the stored values of each dataset
    lie (contiguous storage, or each allocated chunk), and its scales: the
    names of the dimension scales."""
    out, scales = {}, []
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if not isinstance(obj, h5py.Dataset):
                return
            if obj.attrs.get("CLASS") == b"DIMENSION_SCALE":
                scales.append(name)
            dsid, extents = obj.id, out.setdefault(name, [])
            if obj.chunks is None:
                offset = dsid.get_offset()
                if offset is not None:
                    extents.append((int(offset), int(dsid.get_storage_size())))
            else:
                for i in range(dsid.get_num_chunks()):
                    info = dsid.get_chunk_info(i)
                    if info.byte_offset is not None:
                        extents.append((int(info.byte_offset), int(info.size)))
        f.visititems(visit)
    return {"extents": out, "scales": scales}


def make_references(d):
    """{kind: {"complete": path, "incomplete": path, "payload": {...}}}, written by the program."""
    refs = {}
    for kind, job in JOBS.items():
        done = os.path.join(d, f"{kind}.h5")
        r = subprocess.run([BIN, *job, *COMMON, "--output", done], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, f"{kind}: {r.stdout}{r.stderr}"
        # A run stopped before its first chunk was written (killed; fractal,
        # one process, stopped by --max-hours): its .partial.
        stopped = os.path.join(d, f"{kind}_stopped.h5")
        stop = ["--max-hours", "0.0000001"] if kind == "fractal" else []
        r = subprocess.run([BIN, *job, *COMMON, "--output", stopped, *stop], capture_output=True, text=True,
                           timeout=300, env=dict(os.environ, TDSOLVE_TEST_FAULT="0:0:kill"))
        assert r.returncode != 0 and os.path.exists(stopped + ".partial"), f"{kind}: {r.returncode} {r.stderr}"
        incomplete = os.path.join(d, f"{kind}_incomplete.h5")
        os.rename(stopped + ".partial", incomplete)
        refs[kind] = {"complete": done, "incomplete": incomplete,
                      "payload": {"complete": payload_extents(done), "incomplete": payload_extents(incomplete)}}
    return refs


# --- comparing files (in a forked child: they may be damaged) ----------------


def is_scale(ds):
    try:
        return ds.attrs.get("CLASS") == b"DIMENSION_SCALE"
    except Exception:  # noqa: B902
        return False


def skipped(name, obj, scales, known):
    """Whether a dataset is left out of the comparison as a dimension scale:
    one of the reference's (scales), or one that is a scale here under a
    name the reference does not have (a scale whose name damage changed).
    A dataset of the reference's that damage made look like a scale (a
    CLASS attribute from a neighbour's) is still compared."""
    return name in scales or (is_scale(obj) and name not in known)


def describe_data(path, scales, known):
    """{dataset: (shape, dtype, value bytes)} of every result dataset (every
    dataset but the dimension scales: skipped())."""
    data = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if not isinstance(obj, h5py.Dataset) or skipped(name, obj, scales, known):
                return
            value = obj[()] if obj.shape is not None else None
            data[name] = (obj.shape, obj.dtype.str, None if value is None else np.asarray(value).tobytes())
        f.visititems(visit)
    return data


def describe_attrs(path, scales, known):
    """{object: {attr: repr}} of every object but the dimension scales, each
    attribute h5py cannot read (a type NumPy has no dtype for, a value HDF5
    reads from outside its damaged message) described as such. Apart from
    describe_data, in a child of its own: such a read may crash too."""
    attrs = {}
    with h5py.File(path, "r") as f:
        def attr_repr(obj, k):
            try:
                return repr(np.asarray(obj.attrs[k]).tolist())
            except Exception as e:  # noqa: B902
                return f"<unreadable: {e.__class__.__name__}>"

        def note_attrs(name, obj):
            try:
                keys = [k for k in obj.attrs if k not in SCALE_ATTRS]
            except Exception as e:  # noqa: B902
                attrs[name] = {"<names>": f"<unreadable: {e.__class__.__name__}>"}
                return
            attrs[name] = {str(k): attr_repr(obj, k) for k in keys}

        def visit(name, obj):
            if isinstance(obj, h5py.Dataset) and skipped(name, obj, scales, known):
                return
            note_attrs(name, obj)
        note_attrs("/", f)
        f.visititems(visit)
    return attrs


def in_child(fn, *args, timeout=60):
    """fn(*args) in a forked child: ("ok", value), ("crash", signal) or ("timeout",)."""
    import pickle
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            import faulthandler
            faulthandler.disable()  # its crash is an answer, not a worker's trace
            try:
                data = pickle.dumps(("ok", fn(*args)))
            except BaseException as e:  # noqa: B902
                data = pickle.dumps(("error", f"{e.__class__.__name__}: {e}"))
            with os.fdopen(w, "wb") as out:
                out.write(data)
        finally:
            os._exit(0)
    os.close(w)
    chunks, deadline, timed_out = [], time.monotonic() + timeout, False
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        if select.select([r], [], [], left)[0]:
            b = os.read(r, 1 << 16)
            if not b:
                break
            chunks.append(b)
    os.close(r)
    if timed_out:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    if timed_out:
        return ("timeout",)
    if os.WIFSIGNALED(status):
        return ("crash", os.WTERMSIG(status))
    return pickle.loads(b"".join(chunks))


_DESCRIBED = {}
_BYTES = {}


def differences(path, ref, layout, changed):
    """(dataset differences, attribute differences) of path against ref,
    leaving out datasets that differ only in values where a changed byte
    lies in their stored values (a payload change: no reader can see it);
    datasets that cannot be read are a dataset difference, attributes that
    cannot be read (even by a crash) an attribute difference. And the
    number left out."""
    scales, known = layout["scales"], sorted(layout["extents"])
    a, a_attrs = in_child(describe_data, path, scales, known), in_child(describe_attrs, path, scales, known)
    if ref not in _DESCRIBED:  # the reference's, once a worker
        _DESCRIBED[ref] = (in_child(describe_data, ref, scales, known),
                           in_child(describe_attrs, ref, scales, known))
    b, b_attrs = _DESCRIBED[ref]
    assert b[0] == "ok" and b_attrs[0] == "ok", (b, b_attrs)
    if a[0] != "ok":
        return [f"cannot be compared: {a}"], [], 0
    if a_attrs[0] != "ok":
        a_attrs = ("ok", {"<file>": {"<attributes>": f"<unreadable: {a_attrs}>"}})
    da, db, aa, ab = a[1], b[1], a_attrs[1], dict(b_attrs[1], **{"<file>": {}})
    ds = [f"/{n}: only in one" for n in sorted(set(da) ^ set(db))]
    payload = 0
    for n in sorted(set(da) & set(db)):
        if da[n] == db[n]:
            continue
        if da[n][:2] == db[n][:2] and changed and \
                any(o <= c < o + k for c in changed for o, k in layout["extents"].get(n, [])):
            payload += 1
            continue
        ds.append(f"/{n}: {da[n][:2]} vs {db[n][:2]}" + (" (values)" if da[n][:2] == db[n][:2] else ""))
    at = [f"{n}@{k}" for n in sorted(set(aa) & set(ab)) for k in sorted(set(aa[n]) | set(ab[n]))
          if aa[n].get(k) != ab[n].get(k)]
    return ds, at, payload


# --- the damage ---------------------------------------------------------------


def resize_one(path, rng):
    """Makes one dataset of the file longer or shorter; returns its name."""
    with h5py.File(path, "a") as f:
        names = []
        f.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
        name = rng.choice(sorted(names))
        ds = f[name]
        shape = list(ds.shape) if ds.shape else []
        axis = rng.randrange(len(shape)) if shape else None
        new = list(shape) if shape else [1]
        if axis is not None:
            new[axis] = max(0, shape[axis] + rng.choice([-3, -2, -1, 1, 2, 3]))
        if ds.maxshape is not None and ds.chunks is not None and axis is not None and \
                (ds.maxshape[axis] is None or ds.maxshape[axis] >= new[axis]):
            ds.resize(new[axis], axis=axis)
            return name
        values = ds[()] if ds.shape is not None else np.zeros(0, ds.dtype)
        fresh = np.zeros(new, dtype=ds.dtype)
        if values.ndim == len(new) and values.size:
            cut = tuple(slice(0, min(x, y)) for x, y in zip(values.shape, new))
            fresh[cut] = values[cut]
        attrs = {}
        for k in ds.attrs:
            try:
                attrs[k] = ds.attrs[k]
            except Exception:
                pass
        del f[name]
        nd = f.create_dataset(name, data=fresh)
        for k, v in attrs.items():
            try:
                nd.attrs[k] = v
            except Exception:
                pass
    return name


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def damage(src, dst, rng):
    """Writes a damaged copy of src to dst: (mutation, changed byte offsets or None, what)."""
    if src not in _BYTES:
        with open(src, "rb") as f:
            _BYTES[src] = f.read()
    data = bytearray(_BYTES[src])
    mutation = rng.choice(MUTATIONS)
    if mutation == "resize":
        shutil.copy(src, dst)
        return mutation, None, "resized /" + resize_one(dst, rng)
    if mutation == "truncate":
        cut = rng.randrange(len(data))
        write(dst, data[:cut])
        return mutation, None, f"cut at {cut} of {len(data)}"
    span = min(len(data), 12288) if mutation == "meta" else len(data)
    changed = []
    for _ in range(rng.randint(1, 8 if mutation == "meta" else 4)):
        at = rng.randrange(span)
        value = rng.randrange(256)
        if data[at] != value:
            changed.append(at)
        data[at] = value
    write(dst, data)
    return mutation, sorted(set(changed)), f"bytes {sorted(set(changed))}"


# --- one file -------------------------------------------------------------------


def fuzz_one(i, refs, scratch):
    """Everything about damaged file i: {"problems": [...], "notes": {...}}."""
    import tdsolve
    rng = random.Random(f"{SEED}:{i}")
    kind = KINDS[i % len(KINDS)]
    state = "complete" if (i // len(KINDS)) % 2 == 0 else "incomplete"
    src = refs[kind][state]
    path = os.path.join(scratch, f"f{i}.h5")
    mutation, changed, what = damage(src, path, rng)
    tag = f"file {i} (TDSOLVE_FUZZ_SEED={SEED}: {kind}, {state}, {mutation}, {what})"
    problems, notes = [], {"mutation": mutation, "kind": kind}
    if changed == []:  # every byte set to what it was
        notes["unchanged"] = True
        os.remove(path)
        return {"problems": problems, "resume_problems": [], "notes": notes}

    rc, out, err = run([BIN, "info", path], INFO_TIMEOUT)
    if rc is None:
        problems.append(f"{tag}: tdsolve info hangs")
    elif rc < 0 or rc not in (0, 1, 3):
        problems.append(f"{tag}: tdsolve info ended with {rc}: {err.strip()[-300:]}")
    notes["info"] = rc
    notes["damaged"] = "damaged: " in err
    try:
        v = tdsolve.check(path)
        notes["check"] = v.status
        if "damaged: " in v.message:
            notes["check_damaged"] = True
    except Exception:
        problems.append(f"{tag}: tdsolve.check raised:\n{traceback.format_exc()}")
        v = None
    if rc is not None and v is not None and rc != v.exit_code:
        notes["disagree"] = f"{kind} {mutation}: info {rc} ({err.strip() or out.strip().splitlines()[-1:]}) " \
                            f"vs check {v.exit_code} ({v.message})"

    if (i // (2 * len(KINDS))) % READERS_EVERY == 0:
        try:
            tdsolve.validate(path)
        except (OSError, RuntimeError) as e:
            notes["validate_error"] = f"{e.__class__.__name__}"
        except Exception:
            problems.append(f"{tag}: tdsolve.validate raised:\n{traceback.format_exc()}")
        try:
            with tdsolve.open(path, require_complete=False) as r:
                r[:] if kind != "fractal" else r.state(-1)
        except (tdsolve.IncompleteResult, tdsolve.UnreadableResult, IndexError, ValueError, TypeError, OSError):
            pass
        except Exception:
            problems.append(f"{tag}: tdsolve.open and a read raised:\n{traceback.format_exc()}")

    complete = rc == 0 or (v is not None and v.status == "complete")
    if complete:
        ds, at, payload = differences(path, src, refs[kind]["payload"][state], changed)
        if ds:
            problems.append(f"{tag}: called complete (info {rc}, check {v and v.status}) but its datasets "
                            f"differ from the reference's: {'; '.join(ds[:4])}")
        elif payload:
            notes["complete_payload"] = True
        elif at:
            notes["complete_attrs"] = at[:3]
        else:
            notes["complete_unused"] = True

    if (i // (2 * len(KINDS))) % RESUME_EVERY == 0:
        resume = resume_one(i, tag, kind, path, changed, refs, state, scratch, notes)
    else:
        resume = []
    if os.path.exists(path):
        os.remove(path)
    return {"problems": problems, "resume_problems": resume, "notes": notes}


def resume_one(i, tag, kind, path, changed, refs, state, scratch, notes):
    """--resume of the damaged file as OUT.h5.partial."""
    problems = []
    d = os.path.join(scratch, f"r{i}")
    os.mkdir(d)
    out = os.path.join(d, "out.h5")
    partial = out + ".partial"
    shutil.copy(path, partial)
    before = read(partial)
    rc, o, e = run([BIN, *JOBS[kind], *COMMON, "--output", out, "--resume"], RESUME_TIMEOUT)
    if rc is None:
        problems.append(f"{tag}: --resume hangs")
    elif rc < 0:
        problems.append(f"{tag}: --resume died by signal {-rc}: {e.strip()[-300:]}")
    elif rc == 0 and os.path.exists(out):
        irc, io_, ie = run([BIN, "info", out], INFO_TIMEOUT)
        if irc == 0:
            # A payload change of the .partial may stay in the result (values
            # of flagged chunks are kept, not recomputed): the same exemption.
            ds, _, _ = differences(out, refs[kind]["complete"], refs[kind]["payload"]["complete"], changed)
            notes["resume"] = "complete"
            if ds:
                problems.append(f"{tag}: --resume made a complete file that is not the reference's: "
                                f"{'; '.join(ds[:4])}")
        elif irc is None or irc < 0:
            problems.append(f"{tag}: tdsolve info on the resumed file: {irc}")
        else:  # complete in name only
            notes["resume"] = f"renamed, info {irc}"
            problems.append(f"{tag}: --resume made it {out} (exit 0), which tdsolve info calls "
                            f"{'incomplete or inconsistent' if irc == 3 else 'unreadable'}")
    elif "damaged: " in e:
        notes["resume"] = "refused: damaged"
        if os.path.exists(out) or not os.path.exists(partial) or read(partial) != before:
            problems.append(f"{tag}: --resume refused the file as damaged but changed it")
        if len([l for l in e.splitlines() if l.startswith("tdsolve: error")]) != 1:
            problems.append(f"{tag}: --resume refused the file as damaged in more than one line: {e}")
    else:
        notes.setdefault("resume", f"refused ({rc})")
    shutil.rmtree(d, ignore_errors=True)
    return problems


# --- the workers ------------------------------------------------------------------


def worker_main(refs_json):
    import faulthandler
    faulthandler.enable()  # a crash in this process says where
    sys.path.insert(0, PACKAGE_SRC)
    os.environ.update(TDSOLVE_READ_TIMEOUT_S="10", HDF5_USE_FILE_LOCKING="FALSE")
    with open(refs_json) as f:
        refs = json.load(f)
    scratch = tempfile.mkdtemp(prefix="fuzz_worker_", dir=os.path.dirname(refs_json))
    crash_at = os.environ.get("TDSOLVE_FUZZ_CRASH_AT")  # the harness's own check: a worker dies there
    for line in sys.stdin:
        i = int(line)
        if crash_at is not None and int(crash_at) == i:
            os.kill(os.getpid(), signal.SIGSEGV)
        try:
            result = fuzz_one(i, refs, scratch)
        except Exception:
            result = {"problems": [f"file {i}: the fuzz itself failed:\n{traceback.format_exc()}"],
                      "resume_problems": [], "notes": {}}
        sys.stdout.write(json.dumps({"i": i, **result}) + "\n")
        sys.stdout.flush()


PROBLEMS = (("info crash", ("tdsolve info ended with",)), ("package crash", ("worker reading it died", "raised")),
            ("resume crash", ("--resume died",)), ("hang", ("hangs",)),
            ("damaged file called complete", ("called complete",)),
            ("resumed into a complete file not the reference's", ("--resume made a complete",)),
            ("resumed into a file complete in name only", ("which tdsolve info calls",)),
            ("refused as damaged but changed", ("but changed it", "more than one line")))


def problem_counts(problems):
    """One line: how many problems of each sort (a problem counts once, under its first sort)."""
    counts = {name: 0 for name, _ in PROBLEMS}
    counts["other"] = 0
    for p in problems:
        head = p.splitlines()[0]
        name = next((n for n, words in PROBLEMS if any(w in head for w in words)), "other")
        counts[name] += 1
    return "problems: " + ", ".join(f"{n} {c}" for n, c in counts.items())


class Worker:
    def __init__(self, refs_json):
        self.refs_json = refs_json
        self.start()

    def start(self):
        self.p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", self.refs_json],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=ENV)
        self.task, self.since, self.history = None, None, []

    def send(self, i):
        self.task, self.since = i, time.monotonic()
        self.history.append(i)
        self.p.stdin.write(f"{i}\n")
        self.p.stdin.flush()

    def close(self):
        self.p.stdin.close()
        self.p.wait()
        self.p.stdout.close()


def replay(refs_json, files):
    """The files a worker read, in its order, in a fresh worker: the index
    of the one it died on, or None when it read them all (the crash did not
    come back)."""
    w = Worker(refs_json)
    try:
        for i in files:
            w.send(i)
            if not w.p.stdout.readline():
                return i
        return None
    finally:
        w.close()


class FuzzTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        d = tempfile.mkdtemp(prefix="tdsolve_fuzz_")
        try:
            refs = make_references(d)
            refs_json = os.path.join(d, "refs.json")
            with open(refs_json, "w") as f:
                json.dump(refs, f)
            cls.problems, cls.resume_problems, cls.results = cls.drive(refs_json)
        finally:
            shutil.rmtree(d, ignore_errors=True)
        cls.report(cls.results)
        print(problem_counts(cls.problems + cls.resume_problems), file=sys.stderr)
        if os.environ.get("TDSOLVE_FUZZ_LOG"):  # every problem, for a run by hand
            with open(os.environ["TDSOLVE_FUZZ_LOG"], "w") as f:
                f.write("\n".join(cls.problems + cls.resume_problems) + "\n")

    def test_readers(self):
        """info, check, validate and open: no crash, no hang, no damaged file called complete."""
        p = self.problems
        self.assertEqual(p, [], f"{len(p)} problems; the first:\n" + "\n".join(p[:10]))

    def test_verdicts_agree(self):
        """info and check give the same exit status on all but a few damaged files (where an
        out-of-bounds read inside HDF5 crashes or reads garbage in one process and not the other)."""
        differ = [r["disagree"] for r in self.results if "disagree" in r]
        self.assertLessEqual(len(differ), len(self.results) // 100, "\n".join(differ[:10]))

    def test_resume(self):
        """--resume: no crash, no hang, nothing resumed into a complete file that is not the reference's."""
        p = self.resume_problems
        self.assertEqual(p, [], f"{len(p)} problems; the first:\n" + "\n".join(p[:10]))

    @staticmethod
    def drive(refs_json):
        t0 = time.monotonic()
        todo = list(range(N))[::-1]
        workers = [Worker(refs_json) for _ in range(WORKERS)]
        problems, resume_problems, results = [], [], []
        try:
            while todo or any(w.task is not None for w in workers):
                for w in workers:
                    if w.task is None and todo:
                        w.send(todo.pop())
                busy = {w.p.stdout.fileno(): w for w in workers if w.task is not None}
                ready = select.select(list(busy), [], [], 5)[0]
                for fd in ready:
                    w = busy[fd]
                    line = w.p.stdout.readline()
                    if not line:  # the worker died: a file crashed the package in-process
                        w.p.wait()
                        w.p.stdout.close()
                        # The same files in the same order, in a fresh worker: a
                        # crash that comes back is a problem. One that does not
                        # (seen once in CI, seed 32, not since; valgrind finds
                        # no invalid access of this process reading every
                        # file the readers open) is printed, not failed on.
                        again = replay(refs_json, w.history)
                        what = (f"file {w.task} (TDSOLVE_FUZZ_SEED={SEED}): the worker reading it died "
                                f"({w.p.returncode}) after files {w.history[-8:-1]}")
                        if again is not None:
                            problems.append(f"{what}: the package crashed in its process, and again on file "
                                            f"{again} when a fresh worker read the same files in that order")
                        else:
                            print(f"\nWARNING: {what}; a fresh worker read the same {len(w.history)} files "
                                  "without a crash", file=sys.stderr)
                        w.start()
                        continue
                    r = json.loads(line)
                    problems += r["problems"]
                    resume_problems += r["resume_problems"]
                    results.append(r["notes"])
                    w.task = None
                for w in workers:
                    if w.task is not None and time.monotonic() - w.since > 4 * RESUME_TIMEOUT:
                        w.p.kill()
                        w.p.wait()
                        w.p.stdout.close()
                        problems.append(f"file {w.task} (TDSOLVE_FUZZ_SEED={SEED}): hangs in the worker")
                        w.start()
        finally:
            for w in workers:
                w.close()
        print(f"\n{N} damaged files in {time.monotonic() - t0:.0f} s", file=sys.stderr)
        return problems, resume_problems, results

    @staticmethod
    def report(results):
        def count(key, value=True):
            return sum(1 for r in results if r.get(key) == value)
        by = {}
        for r in results:
            by.setdefault(r.get("kind"), {}).setdefault(r.get("mutation"), 0)
            by[r.get("kind")][r.get("mutation")] += 1
        lines = [
            f"files {len(results)} (unchanged copies {count('unchanged')})",
            f"info exit 0/1/3: {count('info', 0)}/{count('info', 1)}/{count('info', 3)}, "
            f"'damaged' by info {count('damaged')}, by check {count('check_damaged')}",
            f"complete verdicts on changed files: payload-only {count('complete_payload')}, unused bytes "
            f"{count('complete_unused')}, descriptive attributes changed "
            f"{sum(1 for r in results if 'complete_attrs' in r)}",
            f"info and check disagree on {sum(1 for r in results if 'disagree' in r)}",
        ]
        resumes = {}
        for r in results:
            if "resume" in r:
                resumes[r["resume"]] = resumes.get(r["resume"], 0) + 1
        lines.append(f"--resume: {sum(resumes.values())} files: " +
                     ", ".join(f"{k} {v}" for k, v in sorted(resumes.items())))
        lines += [f"  {r['disagree']}" for r in results if "disagree" in r][:10]
        lines += [f"  complete, attributes differ: {r['complete_attrs']}" for r in results
                  if "complete_attrs" in r][:5]
        print("\n".join(lines), file=sys.stderr)


def make_one(i, d):
    """`test_fuzz.py --make I DIR`: damaged file I of this seed as DIR/fI.h5
    (the reference files, made once, in DIR/refs), to look at one failure."""
    refs_json = os.path.join(d, "refs", "refs.json")
    if not os.path.exists(refs_json):
        os.makedirs(os.path.dirname(refs_json), exist_ok=True)
        with open(refs_json, "w") as f:
            json.dump(make_references(os.path.dirname(refs_json)), f)
    with open(refs_json) as f:
        refs = json.load(f)
    kind = KINDS[i % len(KINDS)]
    state = "complete" if (i // len(KINDS)) % 2 == 0 else "incomplete"
    path = os.path.join(d, f"f{i}.h5")
    mutation, _, what = damage(refs[kind][state], path, random.Random(f"{SEED}:{i}"))
    print(f"{path}: {kind}, {state}, {mutation}, {what}; its job: {' '.join(JOBS[kind])}")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        worker_main(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "--make":
        make_one(int(sys.argv[2]), sys.argv[3])
    else:
        unittest.main()
