"""`python3 -m tdsolve FILE.h5`: what the file is and whether it is complete.

Exit status as `tdsolve info`: 0 complete, 3 incomplete or inconsistent or
not a tdsolve result, 1 unreadable, 2 usage."""
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
                        f"precision={r.precision}" + (f" box={','.join(map(repr, r.box))}" if r.box else ""))
            elif r.kind == "triplet":
                what = (f"triplet n={r.n} triplets={r.triplets} potential={r.potential} nu={r.nu!r} "
                        f"cutoff={r.cutoff!r} cutoff_triple={r.cutoff_triple!r} precision={r.precision} "
                        f"stored={'yes' if r.stored else 'no'}")
            elif r.kind == "cross":
                what = f"cross {r.shape[0]} x {r.shape[1]} metric={r.metric} precision={r.precision}"
            else:
                what = f"n={r.n} metric={r.metric} precision={r.precision}"
            return r.verdict.exit_code, f"{r.path}: {what}: {r.status()}"
    except (IncompleteResult, UnreadableResult) as e:
        v = e.verdict or _verdict.check(path)
        return v.exit_code, f"{v.file}: {v.message}"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or argv[0] in ("-h", "--help"):
        print(__doc__.strip(), "\n\nusage: python3 -m tdsolve FILE.h5", file=sys.stderr)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    code, line = describe(argv[0])
    print(line, file=sys.stdout if code != 1 else sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
