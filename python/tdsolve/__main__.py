"""`python3 -m tdsolve FILE.h5`: what the file is and whether it is complete.

Exit status as `tdsolve info`: 0 complete, 3 incomplete or inconsistent or
not a tdsolve result, 1 unreadable, 2 usage.

`python3 -m tdsolve png FILE.h5 OUT.png [--snapshot I]`: a `tdsolve fractal`
snapshot (the last unless I; negative I counts from the end) drawn as a PNG
(matplotlib): live cells black, dead light grey, off the fractal white.
Exit status 0, 1 when the file or the snapshot cannot be read or drawn, 2 usage."""
import sys

from . import _verdict
from ._result import IncompleteResult, UnreadableResult, open


def describe(path):
    """(exit code, one line) for a file."""
    try:
        with open(path, require_complete=False) as r:
            if r.kind == "hist":
                lo, hi = r.range or (None, None)
                what = (f"hist n={r.n} bins={r.bins} range={lo!r}:{hi!r} metric={r.metric} "
                        f"precision={r.precision}" + (f" box={','.join(map(repr, r.box))}" if r.box else "") +
                        (f" tilt={','.join(map(repr, r.tilt))}" if r.tilt else ""))
            elif r.kind == "triplet":
                params = " ".join(f"{k}={v!r}" for k, v in r.parameters.items())
                what = (f"triplet n={r.n} triplets={r.triplets} potential={r.potential} {params} "
                        f"precision={r.precision} stored={'yes' if r.stored else 'no'}")
            elif r.kind == "fractal":
                what = (f"fractal {r.shape_name} table={r.table_text} s={r.s} k={r.k} level={r.level} n={r.n} "
                        f"cells={r.cells} rule={r.rule} init={r.init} layout={r.layout} map={r.map} rho={r.rho} "
                        f"steps={r.total_steps} snapshots={len(r)}")
            elif r.kind == "cross":
                what = f"cross {r.shape[0]} x {r.shape[1]} metric={r.metric} precision={r.precision}"
            else:
                what = f"n={r.n} metric={r.metric} precision={r.precision}"
            return r.verdict.exit_code, f"{r.path}: {what}: {r.status()}"
    except (IncompleteResult, UnreadableResult) as e:
        v = e.verdict or _verdict.check(path)
        return v.exit_code, f"{v.file}: {v.message}"


def png(argv):
    """`png FILE.h5 OUT.png [--snapshot I]`: exit status."""
    usage = "usage: python3 -m tdsolve png FILE.h5 OUT.png [--snapshot I]"
    args, snapshot = [], -1
    it = iter(argv)
    for a in it:
        if a in ("-h", "--help"):
            print(__doc__.strip(), "\n\n" + usage)
            return 0
        if a == "--snapshot" or a.startswith("--snapshot="):
            v = a.split("=", 1)[1] if "=" in a else next(it, None)
            try:
                snapshot = int(v)
            except (TypeError, ValueError):
                print(f"python3 -m tdsolve png: --snapshot takes an integer, not {v!r}\n{usage}", file=sys.stderr)
                return 2
        elif a.startswith("-") and a != "-":
            print(f"python3 -m tdsolve png: unknown option {a}\n{usage}", file=sys.stderr)
            return 2
        else:
            args.append(a)
    if len(args) != 2:
        print(usage, file=sys.stderr)
        return 2
    try:
        with open(args[0]) as r:
            if r.kind != "fractal":
                print(f"{r.path}: a tdsolve {r.kind} result; png draws tdsolve fractal files", file=sys.stderr)
                return 1
            r.save_png(args[1], snapshot)
            i = r._row(snapshot)
            print(f"{args[1]}: {r.shape_name} level {r.level}, snapshot {i} (step {int(r.steps[i])})")
            return 0
    except (IncompleteResult, UnreadableResult, IndexError, ValueError, OSError, ImportError) as e:
        print(f"python3 -m tdsolve png: {e}", file=sys.stderr)
        return 1


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "png":
        return png(argv[1:])
    if len(argv) != 1 or argv[0] in ("-h", "--help"):
        print(__doc__.strip(), "\n\nusage: python3 -m tdsolve FILE.h5\n       python3 -m tdsolve png FILE.h5 OUT.png "
              "[--snapshot I]", file=sys.stderr)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    code, line = describe(argv[0])
    print(line, file=sys.stdout if code != 1 else sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
