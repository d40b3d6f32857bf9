"""Reading a file that may be damaged, as io/walk.hpp does for `tdsolve info`.

HDF5 trusts a file's metadata: a few changed bytes can make it read out of
bounds (the interpreter dies inside libhdf5) or loop, before any check done
through it can say a word. So the package reads a file with h5py only in a
child process: a fork of this one (a fresh interpreter where other threads
run, which a fork could leave holding a lock) that walks everything of the
file a reader might read (walk(): every object, every attribute's values,
every dataset's type, shape, creation properties, chunk index and, up to
16 MiB, values; and what HDF5 never writes: io/walk.hpp) and computes the
verdict. A child that dies by a signal or
runs past the time limit (TDSOLVE_READ_TIMEOUT_S, default 120 s) means a
damaged file; this process then never lets HDF5 read it."""
import faulthandler
import math
import os
import pickle
import select
import signal
import stat
import subprocess
import sys
import threading
import time

import numpy as np
from h5py import h5, h5a, h5d, h5f, h5o, h5s, h5t

WALK_READ_BYTES = 16 * 1024 * 1024  # io/walk.hpp kWalkReadBytes
WALK_MEMORY_BYTES = 1024 * 1024 * 1024  # io/walk.hpp kWalkMemoryBytes
_ATTR_BYTES = 64 * 1024 * 1024
_CHUNK_LOOKUPS = 1 << 20
_ENV = "TDSOLVE_READ_TIMEOUT_S"


class Damaged(Exception):
    """HDF5 cannot read every object of the file (io/walk.hpp DamagedFile):
    the message is one line, "damaged: 'FILE': ..."."""


def timeout_s():
    """TDSOLVE_READ_TIMEOUT_S (seconds > 0, at most 1e6), 120 when unset or empty."""
    v = os.environ.get(_ENV, "")
    if not v:
        return 120.0
    try:
        x = float(v)
    except ValueError:
        x = float("nan")
    if not 0 < x <= 1e6:
        raise ValueError(f"{_ENV} must be a number above 0 and at most 1e6, not '{v}'")
    return x


def not_regular(path, mode):
    """io/info.cpp not_regular: the verdict on a path that is no regular file."""
    what = ("a directory" if stat.S_ISDIR(mode) else "a FIFO (named pipe)" if stat.S_ISFIFO(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "a character device" if stat.S_ISCHR(mode)
            else "a block device" if stat.S_ISBLK(mode) else "no regular file")
    return f"'{path}' is {what}, not a result file"


def _signal_text(sig):
    try:
        name = signal.strsignal(sig)
    except (ValueError, AttributeError):
        name = None
    return f"signal {sig}" + (f": {name}" if name else "")


def damage_text(path, how, seconds=None):
    """The line for a child that crashed (how = ("signal", n)) or ran out of
    time (how = ("timeout",)), as io/walk.cpp ChildWalk::damage."""
    if how[0] == "timeout":
        return (f"damaged: '{path}': HDF5 did not finish reading it within {seconds:g} s ({_ENV}): its "
                "metadata are damaged, or the file system is stuck")
    if how[0] == "signal":
        return f"damaged: '{path}': reading it with HDF5 crashed ({_signal_text(how[1])}): its metadata are damaged"
    return f"damaged: '{path}': the process reading it ended without an answer ({how[1]})"


# --- the walk (io/walk.cpp Walker) -------------------------------------------


# What h5py raises for an HDF5 error (and NumPy for a claim too large to hold).
_HDF5_ERRORS = (OSError, KeyError, ValueError, RuntimeError, MemoryError)


def _fail(path, what, e=None):
    raise Damaged(f"damaged: '{path}': {what}" + (f": {e}" if e is not None and str(e) else ""))


def _shape(space):
    """The shape of a dataspace, None for a null one."""
    if space.get_simple_extent_type() == h5s.NULL:
        return None
    return tuple(space.shape)


def _sane_type(tid, what, path):
    """io/walk.cpp sane_type: a string's character set and padding are HDF5's;
    a number's bits are what HDF5's own setters allow."""
    cls = tid.get_class()
    if cls in (h5t.INTEGER, h5t.FLOAT, h5t.BITFIELD):
        size, precision, offset = tid.get_size(), tid.get_precision(), tid.get_offset()
        if size == 0 or precision == 0 or offset < 0 or offset + precision > 8 * size:
            _fail(path, f"{what}: a number of {precision} bits at bit {offset} of {size} bytes")
        if cls == h5t.FLOAT:
            spos, epos, esize, mpos, msize = tid.get_fields()

            def inside(bit, pos, n):
                return pos <= bit < pos + n
            if epos + esize > precision or mpos + msize > precision or spos >= precision or \
                    inside(spos, epos, esize) or inside(spos, mpos, msize) or \
                    (mpos < epos < mpos + msize) or (epos < mpos < epos + esize):
                _fail(path, f"{what}: a float whose sign, exponent and mantissa (bits {spos}, {epos}+{esize}, "
                      f"{mpos}+{msize}) do not fit its {precision} bits")
    elif cls == h5t.STRING:
        cset, pad = tid.get_cset(), tid.get_strpad()
        if cset not in (h5t.CSET_ASCII, h5t.CSET_UTF8):
            _fail(path, f"{what}: a string of character set {cset}")
        if pad not in (h5t.STR_NULLTERM, h5t.STR_NULLPAD, h5t.STR_SPACEPAD):
            _fail(path, f"{what}: a string of padding {pad}")
    elif cls == h5t.COMPOUND:
        for i in range(tid.get_nmembers()):
            _sane_type(tid.get_member_type(i), what, path)
    elif cls in (h5t.VLEN, h5t.ARRAY):
        _sane_type(tid.get_super(), what, path)


def _storage(eof, extents, path):
    """io/walk.cpp storage: no two stored values overlap, and all lie inside the file."""
    extents.sort(key=lambda e: e[0])
    for i, (addr, size, where) in enumerate(extents):
        if size > eof or addr > eof - size:
            _fail(path, f"the values of {where} lie past the end of the file")
        if i > 0 and extents[i - 1][0] + extents[i - 1][1] > addr:
            _fail(path, f"the values of {extents[i - 1][2]} and {where} overlap")


def _read_values(path, what, shape, tid, limit, read):
    """Reads the values through read(array, mtype) with the type `tid` itself
    (in memory form, as H5Aget_type and H5Dget_type give it: no conversion,
    as io/walk.cpp reads) into raw bytes."""
    size = tid.get_size()
    if size == 0:
        _fail(path, f"{what}: its type has no size")
    count = 0 if shape is None else int(np.prod(shape, dtype=object))
    if count * size > limit:
        _fail(path, f"{what} claims {count} values of {size} bytes")
    if count == 0:
        return
    out = np.empty(shape, dtype=np.dtype((np.void, size)))
    try:
        read(out, tid)
    except _HDF5_ERRORS as e:
        _fail(path, f"{what} cannot be read", e)


def _attributes(oid, where, path, address_bytes):
    names = []
    try:  # in creation order first, as info and h5py list them where it is tracked (else it fails)
        h5a.iterate(oid, lambda name, *info: None, index_type=h5.INDEX_CRT_ORDER, order=h5.ITER_INC)
    except _HDF5_ERRORS:
        pass
    try:
        h5a.iterate(oid, lambda name, *info: names.append(name), index_type=h5.INDEX_NAME, order=h5.ITER_INC)
    except _HDF5_ERRORS as e:
        _fail(path, f"the attributes of {where} cannot be listed", e)
    for a in names:
        what = f"attribute '{a.decode('utf-8', 'replace')}' of {where}"
        try:
            aid = h5a.open(oid, a)
        except _HDF5_ERRORS as e:
            _fail(path, f"{what} cannot be opened", e)
        try:
            shape, tid = _shape(aid.get_space()), aid.get_type()
        except _HDF5_ERRORS as e:
            _fail(path, f"{what}: its shape or type cannot be read", e)
        _wrap(_sane_type, tid, what, path)
        # io/walk.cpp attributes: a variable-length value is stored in 4 + an
        # address + 4 bytes; a type of another size makes HDF5 read past it.
        try:
            vlen = tid.get_class() == h5t.VLEN or (tid.get_class() == h5t.STRING and tid.is_variable_str())
            stored = aid.get_storage_size() if vlen else None
        except _HDF5_ERRORS as e:
            _fail(path, f"{what}: its type cannot be read", e)
        count = 0 if shape is None else int(np.prod(shape, dtype=object))
        if vlen and stored != count * (8 + address_bytes):
            _fail(path, f"{what}: its variable-length values take {stored} bytes, not {count * (8 + address_bytes)}")
        _read_values(path, what, shape, tid, _ATTR_BYTES, lambda out, t: aid.read(out, mtype=t))


def _wrap(fn, tid, what, path):
    try:
        fn(tid, what, path)
    except _HDF5_ERRORS as e:
        _fail(path, f"{what}: its type cannot be read", e)


def _chunks(dsid, shape, dcpl, tid, small, where, path, extents, eof):
    """io/walk.cpp chunks: every chunk of the shape looked up in the index (and,
    small, read as it is stored: another way through the index); an index with
    chunks at no place of the shape, or (without filters) a chunk of another
    size than a chunk's values, is damage."""
    try:
        chunk = dcpl.get_chunk()
    except _HDF5_ERRORS as e:
        _fail(path, f"{where}: its chunk shape cannot be read", e)
    if len(chunk) != len(shape):
        _fail(path, f"{where}: its chunk shape cannot be read")
    if any(c == 0 for c in chunk):
        _fail(path, f"{where}: a chunk of size 0")
    room = float(np.prod([math.ceil(x / c) for x, c in zip(shape, chunk)], dtype=object))
    nbytes = float(tid.get_size() * np.prod(chunk, dtype=object))
    try:
        stored = dsid.get_num_chunks()
    except _HDF5_ERRORS as e:
        _fail(path, f"{where}: its chunk index cannot be read", e)
    if stored > room:
        _fail(path, f"{where}: its chunk index holds {stored} chunks, more than its shape has room for")
    try:
        filters = dcpl.get_nfilters()
    except _HDF5_ERRORS as e:
        _fail(path, f"{where}: its filters cannot be read", e)
    at, found = [0] * len(shape), 0
    for _ in range(_CHUNK_LOOKUPS):
        try:
            info = dsid.get_chunk_info_by_coord(tuple(at))
        except _HDF5_ERRORS as e:
            _fail(path, f"{where}: its chunk index cannot be read", e)
        if info.byte_offset is not None:
            if filters == 0 and info.size != nbytes:
                _fail(path, f"{where}: a chunk holds {info.size} bytes, not {int(nbytes)}")
            extents.append((info.byte_offset, info.size, where))
            found += 1
            # Before a chunk is read into memory: a changed size may claim any.
            if info.size > eof or info.byte_offset > eof - info.size:
                _fail(path, f"the values of {where} lie past the end of the file")
            if small:
                try:
                    raw = dsid.read_direct_chunk(tuple(at))[1]
                except _HDF5_ERRORS as e:
                    _fail(path, f"{where}: a chunk cannot be read as it is stored", e)
                if len(raw) != info.size:
                    _fail(path, f"{where}: a chunk cannot be read as it is stored")
        a = len(shape) - 1  # the next chunk, row-major
        while a >= 0:
            at[a] += chunk[a]
            if at[a] < shape[a]:
                break
            at[a] = 0
            a -= 1
        if a < 0:
            # Every chunk of the shape looked up: the index holds no other (HDF5
            # drops those outside when a shape shrinks; a changed key shows so).
            if found != stored:
                _fail(path, f"{where}: its chunk index holds {stored} chunks, {stored - found} of them at no "
                      "place of its shape")
            return


def _dataset(dsid, where, path, extents, eof):
    try:
        shape, tid, dcpl = _shape(dsid.get_space()), dsid.get_type(), dsid.get_create_plist()
        layout = dcpl.get_layout()
    except _HDF5_ERRORS as e:
        _fail(path, f"{where}: its shape, type or creation properties cannot be read", e)
    _wrap(_sane_type, tid, where, path)
    count = 0 if shape is None else int(np.prod(shape, dtype=object))
    if layout == h5d.CONTIGUOUS:
        try:
            addr = dsid.get_offset()
            if addr is not None:
                extents.append((addr, dsid.get_storage_size(), where))
        except _HDF5_ERRORS:
            pass
    small = count * tid.get_size() <= WALK_READ_BYTES
    if layout == h5d.CHUNKED and count > 0:
        _chunks(dsid, shape, dcpl, tid, small, where, path, extents, eof)
    # The values of a small dataset, as its readers read them all; a large
    # one's are not read (where its index is sound, they are only bytes).
    if small:
        _read_values(path, where, shape, tid, WALK_READ_BYTES,
                     lambda out, t: dsid.read(h5s.ALL, h5s.ALL, out, mtype=t))


_H5F_GET_EOA = []


def _eoa(f, path):
    """io/walk.cpp run: where the file's superblock says its allocated space
    ends (H5Fget_eoa, which h5py does not wrap: called through ctypes in the
    libhdf5 this process has loaded for h5py), or None where it cannot be
    called. HDF5 reads stored values past it from stale bytes, without an
    error."""
    if not _H5F_GET_EOA:
        fn = None
        try:
            import ctypes
            # h5py's own libhdf5: a handle on its h5f module resolves symbols
            # in that module's dependencies (where the process also holds
            # another libhdf5, e.g. tdsolve._core's parallel one, whose
            # identifiers mean nothing for h5py's files).
            fn = ctypes.CDLL(h5f.__file__).H5Fget_eoa
            fn.argtypes, fn.restype = [ctypes.c_int64, ctypes.POINTER(ctypes.c_uint64)], ctypes.c_int
        except (ImportError, OSError, AttributeError):
            fn = None
        try:
            import ctypes
            with open("/proc/self/maps") as maps:
                libs = sorted({line.split()[-1] for line in maps if "/libhdf5" in line and ".so" in line})
            for lib in libs if fn is None else []:
                if "_hl" in os.path.basename(lib):
                    continue
                fn = ctypes.CDLL(lib).H5Fget_eoa
                fn.argtypes, fn.restype = [ctypes.c_int64, ctypes.POINTER(ctypes.c_uint64)], ctypes.c_int
                break
        except (ImportError, OSError, AttributeError):
            fn = None
        _H5F_GET_EOA.append(fn)
    fn = _H5F_GET_EOA[0]
    if fn is None:
        return None
    import ctypes
    eoa = ctypes.c_uint64()
    if fn(f.id.id, ctypes.byref(eoa)) < 0:
        _fail(path, "its size cannot be read")
    return eoa.value


def walk(f, path):
    """Reads everything of the open h5py File `f` that a reader of it might
    (io/walk.hpp walk_objects): every object reachable from the root by hard
    links, its attributes' values, each dataset's type, shape, creation
    properties, chunk index and (up to WALK_READ_BYTES) values. Raises Damaged."""
    names, extents = [b"."], []  # h5py's visit leaves out the root, which H5Ovisit lists first
    try:
        address_bytes = f.id.get_create_plist().get_sizes()[0]
    except _HDF5_ERRORS as e:
        _fail(path, "the size of its addresses cannot be read", e)
    try:
        eof = f.id.get_filesize()
    except _HDF5_ERRORS as e:
        _fail(path, "its size cannot be read", e)
    eoa = _eoa(f, path)
    if eoa is not None:
        eof = min(eof, eoa)
    try:
        h5o.visit(f.id, lambda name: names.append(name), idx_type=h5.INDEX_NAME, order=h5.ITER_INC)
    except _HDF5_ERRORS as e:
        _fail(path, "the objects cannot be listed", e)
    for name in names:
        where = "/" if name == b"." else "/" + name.decode("utf-8", "replace")
        try:
            oid = h5o.open(f.id, name)
        except _HDF5_ERRORS as e:
            _fail(path, f"{where} cannot be opened", e)
        _attributes(oid, where, path, address_bytes)
        if isinstance(oid, h5d.DatasetID):
            _dataset(oid, where, path, extents, eof)
    _storage(eof, extents, path)


# --- the child ---------------------------------------------------------------


def _bound_memory():
    """io/walk.cpp bound_walk_memory: RLIMIT_DATA lowered to what this child
    holds now (a fork holds its parent's) plus WALK_MEMORY_BYTES. A damaged
    length makes HDF5 allocate and clear gigabytes; past the bound its
    allocations fail (an HDF5 error, or MemoryError: damaged)."""
    try:
        import resource
        with open("/proc/self/status") as f:
            held = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmData:"))
        soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
        want = held + WALK_MEMORY_BYTES
        if hard != resource.RLIM_INFINITY:
            want = min(want, hard)
        if soft == resource.RLIM_INFINITY or want < soft:
            resource.setrlimit(resource.RLIMIT_DATA, (want, hard))
    except (ImportError, OSError, StopIteration, ValueError):
        pass  # no /proc, no such limit: unbounded, as before


def _answer(fn, args):
    try:
        return pickle.dumps(("ok", fn(*args)))
    except BaseException as e:  # noqa: B902 (reported to the parent, which raises)
        return pickle.dumps(("error", f"{e.__class__.__name__}: {e}"))


def _forked(fn, args, limit):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: answer and leave, running no exit handler of the parent's
        code = 0
        try:
            os.close(r)
            # Its crash is the answer: no traceback of the parent's faulthandler,
            # no words of the C library's heap checks on the parent's terminal.
            faulthandler.disable()
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(null, 2)
            _bound_memory()
            data = _answer(fn, args)
            view = memoryview(data)
            while view:
                view = view[os.write(w, view):]
        except BaseException:  # noqa: B902
            code = 70
        finally:
            os._exit(code)
    os.close(w)
    chunks, how = [], None
    deadline = time.monotonic() + limit
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                how = ("timeout",)
                break
            ready, _, _ = select.select([r], [], [], left)
            if ready:
                b = os.read(r, 1 << 16)
                if not b:
                    break
                chunks.append(b)
    except BaseException:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise
    finally:
        os.close(r)
    if how:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    if how is None and os.WIFSIGNALED(status):
        how = ("signal", os.WTERMSIG(status))
    return how, b"".join(chunks)


_SPAWN = ("import sys; sys.path.insert(0, sys.argv[1]); from tdsolve import _isolate; "
          "_isolate._spawned_child()")


def _spawned_child():
    _bound_memory()
    fn_module, fn_name, args = pickle.load(sys.stdin.buffer)
    module = __import__(fn_module, fromlist=[fn_name])
    sys.stdout.buffer.write(_answer(getattr(module, fn_name), args))
    sys.stdout.flush()


def _spawned(fn, args, limit):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        p = subprocess.run([sys.executable, "-c", _SPAWN, root], input=pickle.dumps((fn.__module__, fn.__name__, args)),
                           capture_output=True, timeout=limit)
    except subprocess.TimeoutExpired:
        return ("timeout",), b""
    if p.returncode < 0:
        return ("signal", -p.returncode), b""
    return None, p.stdout


def call(fn, args, path, limit=None):
    """fn(*args) run in a child process that may read `path` with HDF5: its
    value, or Damaged when the child died by a signal or ran past `limit`
    seconds (default timeout_s()). fn must be a module-level function and
    its value picklable; an exception it raises is raised here as a
    RuntimeError."""
    limit = timeout_s() if limit is None else float(limit)
    # A fork copies only this thread: with others running, one of them may
    # hold a lock the child would wait for forever. Then a fresh interpreter.
    if hasattr(os, "fork") and threading.active_count() == 1:
        how, data = _forked(fn, args, limit)
    else:
        how, data = _spawned(fn, args, limit)
    if how is None:
        try:
            answer = pickle.loads(data)
        except Exception as e:
            how = ("no answer", f"{e.__class__.__name__}")
    if how is not None:
        raise Damaged(damage_text(path, how, limit))
    if answer[0] == "error":
        raise RuntimeError(answer[1])
    return answer[1]
