#!/usr/bin/env python3
"""Mutation run: how strong is the test suite where a bug would hurt users?

Each mutant below is one small change to the source (a flipped comparison,
an off-by-one, a dropped check, a skipped call), with the tests that should
notice it. For each mutant, one at a time, this script

  1. writes the change into the file (its snippet must occur exactly once),
  2. rebuilds incrementally (cmake --build BUILD --target tdsolve, plus the
     unit tests' target when a ctest of theirs is named),
  3. runs the named tests with a time limit,
  4. puts the file back as it was (always: also on Ctrl-C, SIGTERM or an
     exception),

and records the mutant as killed (a test failed or timed out), survived
(every test passed) or invalid (it did not compile: counted apart, not in
the score). The result is a markdown table and a summary line
(killed / valid = score) in the file given by --out.

Before the first mutant it runs every named test on the tree as it is: a
test that fails there would "kill" every mutant, so the run stops
(--no-baseline skips this, e.g. when rerunning a few with --only). It
refuses to start while a file it mutates differs from git (a mutant left
behind by a run that was killed with SIGKILL shows up there).

Tests are named as
  ctest:REGEX            ctest -R REGEX in the build (unit.* are GoogleTest
                         cases, one ctest each)
  py:FILE ID...          one file of tests/e2e run with unittest ids
                         (Class or Class.test_name), under the environment
                         ctest gives that file's test (TDSOLVE_BIN, mpirun
                         as root, ...), read from `ctest --show-only=json-v1`

Usage (docs/design.md, "Testing"):
  python3 jobs/mutate.py --list
  python3 jobs/mutate.py --build build-mut --out mutants.md [--only ID ...]
The build is a CPU-only one (-DTDSOLVE_CUDA=OFF); run it under `nice`.
Standard library only.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

AREAS = ("readers", "lifecycle", "locks-paths", "resume", "checkpoints", "reductions")


@dataclass
class Mutant:
    id: str
    area: str
    file: str  # relative to the repository root
    find: str  # occurs exactly once in the file
    replace: str
    tests: list  # "ctest:REGEX" or "py:FILE ID ..."
    what: str  # the bug, in words
    equivalent: str = ""  # why a survivor cannot be told apart (the table says it)
    timeout: int = 300  # seconds for each test command
    slow_build: bool = False  # a header of the CPU kernels: ~5-8 min to rebuild on 2 cores


def py(file, *ids):
    return "py:" + " ".join((file,) + ids)


SAFETY_CLI = "tests/e2e/test_safety_cli.py"
SAFETY_FILES = "tests/e2e/test_safety_files.py"
SAFETY_RESUME = "tests/e2e/test_safety_resume.py"
BAD_INPUT = "tests/e2e/test_bad_input.py"
RESUME = "tests/e2e/test_resume.py"

MUTANTS = [
    # ---------------------------------------------------------------- readers
    Mutant("readers.bom-line", "readers", "io/input.cpp",
           r'if (line_no == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0)',
           r'if (line_no == 2 && line.rfind("\xEF\xBB\xBF", 0) == 0)',
           [py(SAFETY_CLI, "SafetyCliTest.test_csv_with_a_byte_order_mark_keeps_its_first_point")],
           "the byte-order mark is looked for on the wrong line: a one-column CSV loses its first point"),
    Mutant("readers.header-anywhere", "readers", "io/input.cpp",
           "if (first && looks_like_header(line)) {",
           "if (looks_like_header(line)) {",
           ["ctest:^unit\\.Csv\\."],
           "a line of words after the data is skipped as a 'header' instead of refused"),
    Mutant("readers.short-rows", "readers", "io/input.cpp",
           "if (row.size() != p.d)",
           "if (row.size() > p.d)",
           ["ctest:^unit\\.Csv\\."],
           "a row with fewer values than the others is accepted (the matrix shifts)"),
    Mutant("readers.hdf5-part-written", "readers", "io/input.cpp",
           "if (w != Written::all)",
           "if (w == Written::none)",
           [py(SAFETY_CLI, "SafetyCliTest.test_unwritten_hdf5_inputs_as_usage_md_says")],
           "an HDF5 input written only in part is read with its fill value as points"),
    Mutant("readers.npy-fortran", "readers", "io/input.cpp",
           "p.values[i * p.d + k] = flat[k * p.n + i];",
           "p.values[i * p.d + k] = flat[i * p.d + k];",
           ["ctest:^unit\\.Npy\\."],
           "a Fortran-order .npy is read as if it were C order (points scrambled)"),
    Mutant("readers.vector-only-1d", "readers", "io/input.cpp",
           "if (vector && dims.size() == 1) dims.insert(dims.begin(), 1);",
           "if (dims.size() == 1) dims.insert(dims.begin(), 1);",
           [py(BAD_INPUT, "BadInputTest.test_one_dimensional")],
           "a 1-D array given as --input is taken as one point instead of refused"),
    Mutant("readers.columns-bound", "readers", "io/input.cpp",
           "    if (c >= p.d)\n",
           "    if (c > p.d)\n",
           [py(BAD_INPUT, "BadInputTest.test_bad_columns")],
           "--columns may name column d, one past the last (reads beyond the row)"),
    # ---------------------------------------------------------------- lifecycle
    Mutant("lifecycle.no-recheck-under-lock", "lifecycle", "solver/lifecycle.cpp",
           "    check_output_paths(r.paths, true);\n",
           "",
           [py(SAFETY_FILES, "SafetyTest.test_a_run_finishing_meanwhile_is_not_replaced")],
           "the 'exists' decision is not made again holding the lock: a run finishing meanwhile is replaced",
           timeout=400),
    Mutant("lifecycle.partial-without-resume", "lifecycle", "solver/lifecycle.cpp",
           "if (locked && !o.overwrite && !o.resume && lstat(partial.c_str(), &st) == 0)",
           "if (false && locked && !o.overwrite && !o.resume && lstat(partial.c_str(), &st) == 0)",
           [py(RESUME, "ResumeTest.test_changed_parameters_refused_on_resume")],
           "a stopped run's .partial is discarded by a run without --resume or --overwrite"),
    Mutant("lifecycle.exists-needs-overwrite", "lifecycle", "solver/lifecycle.cpp",
           "    if (!o.overwrite && !o.resume)\n      throw UsageError(\"output '\" + out +",
           "    if (!o.overwrite && o.resume)\n      throw UsageError(\"output '\" + out +",
           [py(BAD_INPUT, "BadInputTest.test_existing_output")],
           "an existing result is replaced without --overwrite"),
    Mutant("lifecycle.rename-incomplete", "lifecycle", "solver/lifecycle.cpp",
           "  if (complete) {\n    fault_point(Stage::rename, 0);",
           "  if (true) {\n    fault_point(Stage::rename, 0);",
           [py(RESUME, "ResumeTest.test_sigterm_stops_cleanly_and_resumes")],
           "a stopped run's .partial takes the output's name: an incomplete file looks complete"),
    Mutant("lifecycle.stopped-exit-code", "lifecycle", "solver/lifecycle.cpp",
           "return complete ? 0 : kStoppedExitCode;",
           "return 0;",
           [py(RESUME, "ResumeTest.test_sigterm_stops_cleanly_and_resumes")],
           "a stopped run exits 0 (a job chain would take it as finished)"),
    Mutant("lifecycle.stale-creating-kept", "lifecycle", "solver/lifecycle.cpp",
           "    io::remove_stale_creating(out);\n",
           "",
           [py(RESUME, "ResumeTest.test_kill_at_every_step_of_creating_the_file")],
           "a .creating left by a killed run blocks every later run of the output"),
    # ---------------------------------------------------------------- locks and paths
    Mutant("paths.no-inode-compare", "locks-paths", "solver/lifecycle.cpp",
           "return absolute(a) == absolute(b) || same_file(a, b);",
           "return absolute(a) == absolute(b);",
           [py(SAFETY_FILES, "SafetyTest.test_stats_never_names_a_file_the_run_reads")],
           "a hard or symbolic link to a file the run reads passes as another file"),
    Mutant("paths.stats-vs-inputs", "locks-paths", "solver/lifecycle.cpp",
           "      if (!in.empty() && same_path(stats, in))\n",
           "      if (in.empty() && same_path(stats, in))\n",
           [py(SAFETY_FILES, "SafetyTest.test_stats_never_names_a_file_the_run_reads")],
           "--stats naming --weights, --variance or --config overwrites it"),
    Mutant("paths.creating-not-a-companion", "locks-paths", "io/output_files.cpp",
           "for (const std::string* suffix : {&kPartial, &kLock, &kCreating})",
           "for (const std::string* suffix : {&kPartial, &kLock})",
           [py(SAFETY_FILES, "SafetyTest.test_output_or_stats_that_is_another_runs_companion_refused")],
           "--output x.h5.creating is accepted: another run's temporary is written over"),
    Mutant("locks.follows-links", "locks-paths", "io/output_files.cpp",
           "return open_regular(path, flags | O_NOFOLLOW, st);",
           "return open_regular(path, flags, st);",
           ["ctest:^unit\\.OutputLock\\.",
            py(SAFETY_FILES, "SafetyTest.test_lock_file_that_is_a_link_or_fifo_is_refused")],
           "a lock file that is a symbolic link is followed: its target is overwritten"),
    Mutant("locks.unlinks-others-lock", "locks-paths", "io/output_files.cpp",
           "if (same_inode(fd_, path_)) ::unlink(path_.c_str());",
           "::unlink(path_.c_str());",
           ["ctest:^unit\\.OutputLock\\."],
           "a run removes the lock file at the name even when it is not the one it holds"),
    Mutant("locks.heartbeat-age-flipped", "locks-paths", "io/output_files.cpp",
           "if (h.heartbeat > 0) return now - h.heartbeat < OutputLock::kStaleSeconds && !dead_here(h);",
           "if (h.heartbeat > 0) return now - h.heartbeat > OutputLock::kStaleSeconds && !dead_here(h);",
           [py(SAFETY_FILES, "SafetyTest.test_heartbeat_lock_being_made_counts_as_held_and_stays")],
           "heartbeat mode: a fresh heartbeat counts as stale (two runs write one output)"),
    Mutant("locks.eagain-not-held", "locks-paths", "io/output_files.cpp",
           "if (err == EAGAIN || err == EACCES) {",
           "if (err == EACCES) {",
           ["ctest:^unit\\.OutputLock\\."],
           "a lock held by another process (EAGAIN on Linux) reads as a locking failure, holder unnamed"),
    # ---------------------------------------------------------------- resume's comparison
    Mutant("resume.flag-2-is-done", "resume", "io/result_file.cpp",
           "if (v[c] > 1)",
           "if (v[c] > 2)",
           [py(SAFETY_RESUME, "DamagedPartialTest.test_edm")],
           "a done flag holding 2 (one damaged byte) counts as done"),
    Mutant("resume.longer-dataset", "resume", "io/result_file.cpp",
           "same = e.list && a == 0 ? most[0] == H5S_UNLIMITED : dims[a] == want[a];",
           "same = e.list && a == 0 ? most[0] == H5S_UNLIMITED : dims[a] >= want[a];",
           [py(SAFETY_RESUME, "DamagedPartialTest.test_edm")],
           "a result dataset longer than the job's is accepted"),
    Mutant("resume.type-unchecked", "resume", "io/result_file.cpp",
           "bool same = H5Tequal(type, e.type) > 0 && dims.size() == want.size();",
           "bool same = dims.size() == want.size();",
           [py(SAFETY_RESUME, "DamagedPartialTest.test_edm")],
           "a result dataset of another type (float64 for float32) is accepted"),
    Mutant("resume.list-lengths-unchecked", "resume", "io/result_file.cpp",
           "if (all && out.list_rows >= 0 && rows != out.list_rows)",
           "if (false && all && out.list_rows >= 0 && rows != out.list_rows)",
           [py(SAFETY_RESUME, "DamagedPartialTest.test_knn_radius", "DamagedPartialTest.test_collide")],
           "a flagged pair list whose /pairs and /distances differ in length is renamed final"),
    Mutant("resume.count-unchecked", "resume", "io/result_file.cpp",
           "if (m != out.list_rows)",
           "if (false)",
           [py(SAFETY_RESUME, "DamagedPartialTest.test_collide")],
           "collide: a /count that is not the number of pairs is accepted"),
    Mutant("resume.extras-values-unchecked", "resume", "io/result_file.cpp",
           "if (std::memcmp(v.data(), x.initial.data(), v.size() * sizeof(double)) != 0)",
           "if (false)",
           [py(SAFETY_RESUME, "DamagedPartialTest.test_hist")],
           "a .partial whose /edges (or /weights) hold other values than the job's is continued"),
    Mutant("resume.input-not-compared", "resume", "solver/commands/pairs.cpp",
           '  add("input_fnv1a64", src.a_hash);\n',
           "",
           [py(RESUME, "ResumeTest.test_changed_parameters_refused_on_resume")],
           "--resume continues a run whose input was another"),
    Mutant("resume.complete-file-unchecked", "resume", "solver/commands/pairs.cpp",
           "    check_file(r, out);\n",
           "",
           [py(SAFETY_RESUME, "DamagedPartialTest.test_damaged_result_is_not_reported_complete")],
           "--resume reports a damaged FILE.h5 'already complete'"),
    # ---------------------------------------------------------------- checkpoints
    Mutant("checkpoints.earlier-flags-dropped", "checkpoints", "solver/driver.cpp",
           "      all[c] |= done[c];\n",
           "",
           [py(RESUME, "ResumeTest.test_sigterm_stops_cleanly_and_resumes")],
           "a resumed run forgets the chunks flagged before it: it never completes"),
    Mutant("checkpoints.max-hours-ignored", "checkpoints", "solver/driver.cpp",
           "if ((agreed[0] || agreed[1]) && round + 1 < rounds)",
           "if (agreed[0] && round + 1 < rounds)",
           [py(RESUME, "ResumeTest.test_max_hours_stops_before_the_limit")],
           "--max-hours is not honoured: the job is killed by the scheduler instead"),
    Mutant("checkpoints.hist-under-over-swapped", "checkpoints", "solver/commands/pairs.cpp",
           "e.slots[0] = static_cast<std::uint64_t>(r.counts[bins]);",
           "e.slots[0] = static_cast<std::uint64_t>(r.counts[bins + 1]);",
           [py(RESUME, "HistResumeTest")],
           "a resumed histogram takes its underflow from /overflow"),
    Mutant("checkpoints.hist-one-chunk-forgotten", "checkpoints", "solver/commands/pairs.cpp",
           "if (p.epilogue == EpilogueKind::histogram && r.chunks_done() > 0) {",
           "if (p.epilogue == EpilogueKind::histogram && r.chunks_done() > 1) {",
           [py(RESUME, "HistResumeTest")],
           "a histogram stopped after exactly one chunk resumes from zero counts (that chunk lost)"),
    Mutant("checkpoints.hist-counts-on-every-rank", "checkpoints", "solver/commands/sinks.hpp",
           "sum_(p.hist.slots(), 0) {\n    if (comm_rank(comm) == 0 && initial.size() == sum_.size())",
           "sum_(p.hist.slots(), 0) {\n    if (initial.size() == sum_.size())",
           [py(RESUME, "HistResumeTest")],
           "every rank starts from the stopped run's counts: a resume on R ranks counts them R times",
           equivalent="only rank 0 ever holds a stopped run's counts: inspect_output runs on rank 0 "
                      "(on_root) and PairRun::share broadcasts the offsets, flags and held pairs, not "
                      "Existing::slots, so on every other rank `initial` is empty and the size test "
                      "alone already keeps it out; the rank test guards a future broadcast"),
    Mutant("checkpoints.triplet-sums-dropped", "checkpoints", "solver/commands/pairs.cpp",
           "      e.sums = r.sums;\n",
           "",
           [py("tests/e2e/test_triplet.py", "TripletResumeTest.test_sigterm_stop_resumes_on_2_ranks")],
           "a resumed triplet run starts its sums from zero (the earlier chunks' energy lost)"),
    Mutant("checkpoints.list-mixed-flags-kept", "checkpoints", "solver/commands/pairs.cpp",
           "      else\n        e.done.assign(e.done.size(), 0);\n",
           "",
           [py(SAFETY_RESUME, "PairListRenameTest.test_flags_not_all_set_hold_no_pairs")],
           "knn --radius/collide: a .partial with some flags set skips those chunks, whose pairs it never held"),
    # ---------------------------------------------------------------- reductions' edges
    Mutant("reductions.hist-last-edge", "reductions", "solver/problem.cpp",
           "  e[bins] = hi;\n",
           "",
           ["ctest:^unit\\.Histogram\\.EdgesAreNumpyLinspaceToTheBit$"],
           "the last bin edge is lo + bins·step, not HI as numpy.linspace makes it"),
    Mutant("reductions.hist-range-end-open", "reductions", "solver/epilogue.hpp",
           "if (!(x <= hi)) return bins + 1;",
           "if (!(x < hi)) return bins + 1;",
           ["ctest:^unit\\.Histogram\\."],
           "a distance equal to HI goes to /overflow (numpy's last bin is closed)",
           slow_build=True),
    Mutant("reductions.knn-tie-order", "reductions", "solver/epi.hpp",
           "dist[p - 1] != dist[p - 1] || dist[p - 1] > value",
           "dist[p - 1] != dist[p - 1] || dist[p - 1] >= value",
           [py("tests/e2e/test_knn.py", "KnnTest.test_ties_broken_by_the_smaller_index_and_duplicates_kept")],
           "knn: equal distances are listed by the larger index first (scikit-learn: smaller first)",
           slow_build=True),
    Mutant("reductions.knn-nan-rows", "reductions", "solver/epi.hpp",
           "    if (free_slot) return true;\n",
           "",
           [py(SAFETY_CLI, "SafetyCliTest.test_knn_rows_with_nan_distances_list_real_points")],
           "knn: a row whose distances are all nan keeps free slots (index n, distance inf)",
           slow_build=True),
    Mutant("reductions.collide-touching", "reductions", "solver/select.hpp",
           "return *value < s;",
           "return *value <= s;",
           [py("tests/e2e/test_collide.py", "CollideTest.test_input_files_with_touching_spheres_and_duplicates")],
           "collide: touching spheres (distance == r_i + r_j) count as overlapping",
           slow_build=True),
    Mutant("reductions.collide-zero-radius", "reductions", "solver/commands/collide.cpp",
           "if (!(r[i] >= 0))",
           "if (!(r[i] > 0))",
           [py("tests/e2e/test_collide.py", "CollideTest.test_input_files_with_touching_spheres_and_duplicates",
               "CollideTest.test_bad_input")],
           "collide: a sphere of radius 0 (a point) is refused"),
    Mutant("reductions.knn-k-equals-n", "reductions", "solver/commands/knn.cpp",
           "    if (k >= n)\n",
           "    if (k > n)\n",
           [py("tests/e2e/test_knn.py", "KnnTest.test_bad_input")],
           "knn --k n is accepted: every row's last neighbour is index n (out of range)"),
    Mutant("reductions.triplet-energy-per-point", "reductions", "solver/commands/sinks.hpp",
           "energy[q] = exact_value(&total[q * kExactLimbs]) / 3;",
           "energy[q] = exact_value(&total[q * kExactLimbs]) / 2;",
           [py("tests/e2e/test_triplet.py", "TripletReferenceTest.test_sums_match_numpy_reference")],
           "triplet: a point's energy is its triplets' sum / 2 instead of / 3"),
]


# ---------------------------------------------------------------------------- helpers

def on_signal(signum, frame):
    """SIGTERM as Ctrl-C: the file is put back on the way out."""
    raise KeyboardInterrupt(f"signal {signum}")


def run(cmd, timeout, env=None, cwd=ROOT, log=None):
    """(returncode or 'timeout', seconds, output). The command runs in its own
    session, so a timeout ends it and everything it started (mpirun ranks)."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        rc = "timeout"
    except BaseException:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        raise
    if log:
        with open(log, "a") as f:
            f.write(f"$ {' '.join(cmd)}\n{out}\n[rc {rc}, {time.monotonic() - t0:.1f} s]\n")
    return rc, time.monotonic() - t0, out


def check_snippets(mutants):
    """Every snippet occurs exactly once; returns a list of problems."""
    problems = []
    for m in mutants:
        path = os.path.join(ROOT, m.file)
        if not os.path.exists(path):
            problems.append(f"{m.id}: no file {m.file}")
            continue
        with open(path, encoding="utf-8") as f:
            n = f.read().count(m.find)
        if n != 1:
            problems.append(f"{m.id}: the snippet occurs {n} times in {m.file}")
        if m.area not in AREAS:
            problems.append(f"{m.id}: unknown area {m.area}")
    ids = [m.id for m in mutants]
    problems += [f"{i}: id used twice" for i in set(ids) if ids.count(i) > 1]
    return problems


def dirty(files):
    r = subprocess.run(["git", "status", "--porcelain", "--", *files], cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("mutate.py: git status failed: " + r.stderr.strip())
    return r.stdout.strip()


class Ctest:
    """What ctest knows about the build's tests: each e2e file's environment."""

    def __init__(self, build):
        self.build = build
        r = subprocess.run(["ctest", "--test-dir", build, "--show-only=json-v1"], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("mutate.py: ctest --show-only failed (is the build configured?): " + r.stderr.strip())
        self.tests = {t["name"]: t for t in json.loads(r.stdout)["tests"]}

    def python_test(self, file):
        """(command prefix, environment, cwd) that ctest runs `file` with."""
        name = "e2e." + os.path.basename(file)[len("test_"):-len(".py")]
        t = self.tests.get(name)
        if t is None:
            sys.exit(f"mutate.py: ctest has no test {name} for {file}")
        env = dict(os.environ)
        cwd = self.build
        for prop in t.get("properties", []):
            if prop["name"] == "ENVIRONMENT":
                for kv in prop["value"]:
                    k, _, v = kv.partition("=")
                    env[k] = v
            if prop["name"] == "WORKING_DIRECTORY":
                cwd = prop["value"]
        return [t["command"][0], os.path.join(ROOT, file)], env, cwd


def test_command(spec, ctest, timeout):
    """(argv, env, cwd) for one test spec."""
    kind, _, rest = spec.partition(":")
    if kind == "ctest":
        return (["ctest", "--test-dir", ctest.build, "-R", rest, "--no-tests=error", "--output-on-failure",
                 "--timeout", str(timeout)], None, ROOT)
    if kind == "py":
        file, *ids = rest.split()
        prefix, env, cwd = ctest.python_test(file)
        return prefix + ["-v", *ids], env, cwd
    sys.exit(f"mutate.py: unknown test spec {spec!r}")


def targets_for(m):
    targets = ["tdsolve"]
    if any(t.startswith("ctest:") and "unit" in t for t in m.tests):
        targets.append("tdsolve_unit_tests")
    return targets


def build(build_dir, targets, log):
    cmd = ["nice", "-n", "10", "cmake", "--build", build_dir, "-j2"]
    for t in targets:
        cmd += ["--target", t]
    return run(cmd, 1800, log=log)


def run_tests(m, ctest, log):
    """'killed' and the test that failed, or 'survived' and the tests that
    skipped (a skip passes: it may be what let the mutant through)."""
    skipped = []
    for spec in m.tests:
        argv, env, cwd = test_command(spec, ctest, m.timeout)
        rc, _, out = run(["nice", "-n", "10", *argv], m.timeout + 30, env=env, cwd=cwd, log=log)
        if rc != 0:
            return "killed", short(spec) + (" (timed out)" if rc == "timeout" else "")
        if "skipped" in out.lower():
            skipped.append(short(spec))
    return "survived", "; ".join(skipped)


def short(spec):
    kind, _, rest = spec.partition(":")
    if kind == "py":
        file, *ids = rest.split()
        return os.path.basename(file) + " " + " ".join(ids)
    return "ctest -R " + rest


def cell(text):
    return text.replace("|", "\\|").replace("\n", "⏎")


def write_report(path, results, started, wall):
    counts = {}
    for m, status, _, _ in results:
        counts.setdefault(m.area, {"killed": 0, "survived": 0, "invalid": 0})[status] += 1
    killed = sum(c["killed"] for c in counts.values())
    survived = sum(c["survived"] for c in counts.values())
    invalid = sum(c["invalid"] for c in counts.values())
    valid = killed + survived
    score = 100.0 * killed / valid if valid else 0.0
    lines = [f"# Mutation run, {started}", "",
             "| id | area | file | change | the bug | tests | result | s |",
             "|---|---|---|---|---|---|---|---|"]
    for m, status, by, secs in results:
        change = f"`{cell(m.find.strip())}` → `{cell(m.replace.strip()) or '(removed)'}`"
        result = status + (f" ({'by' if status == 'killed' else 'skipped:'} {cell(by)})" if by else "")
        if status == "survived" and m.equivalent:
            result += f"; equivalent: {cell(m.equivalent)}"
        lines.append(f"| {m.id} | {m.area} | {m.file} | {change} | {cell(m.what)} | "
                     f"{cell('; '.join(short(t) for t in m.tests))} | {result} | {secs:.0f} |")
    lines += ["", "| area | killed | survived | invalid |", "|---|---|---|---|"]
    for area in AREAS:
        if area in counts:
            c = counts[area]
            lines.append(f"| {area} | {c['killed']} | {c['survived']} | {c['invalid']} |")
    equivalent = sum(1 for m, status, _, _ in results if status == "survived" and m.equivalent)
    summary = (f"**Score: {killed} killed / {valid} valid = {score:.1f} %** "
               f"({survived} survived, {equivalent} of them shown equivalent; {invalid} invalid; "
               f"{len(results)} mutants; {wall / 60:.1f} min)")
    lines += ["", summary, ""]
    with open(path, "w") as f:
        f.write("\n".join(lines))
    return summary


# ---------------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build-mut", help="a configured CPU-only build folder (default build-mut)")
    ap.add_argument("--out", default="mutants.md", help="the markdown report (default mutants.md)")
    ap.add_argument("--only", nargs="+", metavar="ID", help="run only these mutants")
    ap.add_argument("--list", action="store_true", help="list the mutants, check their snippets, and exit")
    ap.add_argument("--no-baseline", action="store_true", help="skip running the tests on the unmutated tree")
    ap.add_argument("--log", default=None, help="every command's output (default: OUT with .log)")
    a = ap.parse_args()

    mutants = MUTANTS
    if a.only:
        unknown = set(a.only) - {m.id for m in MUTANTS}
        if unknown:
            sys.exit("mutate.py: no mutant " + ", ".join(sorted(unknown)))
        mutants = [m for m in MUTANTS if m.id in a.only]
    problems = check_snippets(mutants)

    if a.list:
        for m in mutants:
            slow = " (slow build)" if m.slow_build else ""
            print(f"{m.id:40} {m.area:12} {m.file}{slow}\n    {m.what}\n    tests: "
                  + "; ".join(short(t) for t in m.tests))
        by_area = {ar: sum(m.area == ar for m in mutants) for ar in AREAS}
        print(f"{len(mutants)} mutants: " + ", ".join(f"{k} {v}" for k, v in by_area.items()))
        for p in problems:
            print("PROBLEM: " + p)
        return 1 if problems else 0

    if problems:
        sys.exit("mutate.py: " + "; ".join(problems))
    files = sorted({m.file for m in mutants})
    d = dirty(files)
    if d:
        sys.exit("mutate.py: the files it mutates have uncommitted changes; commit or stash them first:\n" + d)

    build_dir = os.path.abspath(os.path.join(ROOT, a.build) if not os.path.isabs(a.build) else a.build)
    out = os.path.abspath(a.out)
    log = a.log or os.path.splitext(out)[0] + ".log"
    open(log, "w").close()
    signal.signal(signal.SIGTERM, on_signal)
    ctest = Ctest(build_dir)
    started = time.strftime("%Y-%m-%d %H:%M")
    t_start = time.monotonic()

    # The tree as it is: built, and every named test passing.
    all_targets = sorted({t for m in mutants for t in targets_for(m)})
    rc, secs, text = build(build_dir, all_targets, log)
    if rc != 0:
        sys.exit(f"mutate.py: the unmutated tree does not build (see {log})")
    if not a.no_baseline:
        specs = list(dict.fromkeys(t for m in mutants for t in m.tests))
        print(f"baseline: {len(specs)} test commands on the unmutated tree", flush=True)
        for spec in specs:
            argv, env, cwd = test_command(spec, ctest, 600)
            rc, secs, _ = run(["nice", "-n", "10", *argv], 630, env=env, cwd=cwd, log=log)
            print(f"  {'ok  ' if rc == 0 else 'FAIL'} {secs:6.1f} s  {short(spec)}", flush=True)
            if rc != 0:
                sys.exit(f"mutate.py: {short(spec)} fails on the unmutated tree (see {log}): fix that first")

    results = []
    try:
        for k, m in enumerate(mutants, 1):
            path = os.path.join(ROOT, m.file)
            with open(path, "rb") as f:
                original = f.read()
            t0 = time.monotonic()
            try:
                text = original.decode("utf-8")
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text.replace(m.find, m.replace, 1))
                with open(log, "a") as f:
                    f.write(f"\n===== {m.id}: {m.file}\n")
                rc, _, _ = build(build_dir, targets_for(m), log)
                if rc != 0:
                    status, by = "invalid", ""
                else:
                    status, by = run_tests(m, ctest, log)
            finally:
                # Always the original bytes back; its mtime is now, so the next
                # build compiles it again (ccache makes that cheap).
                with open(path, "wb") as f:
                    f.write(original)
            secs = time.monotonic() - t0
            results.append((m, status, by, secs))
            print(f"[{k}/{len(mutants)}] {m.id}: {status}{' (' + by + ')' if by else ''} ({secs:.0f} s)",
                  flush=True)
            write_report(out, results, started, time.monotonic() - t_start)
    except KeyboardInterrupt:
        print("mutate.py: interrupted; the files are restored", file=sys.stderr)
    finally:
        # The build back to the unmutated tree.
        build(build_dir, all_targets, log)
    summary = write_report(out, results, started, time.monotonic() - t_start)
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
