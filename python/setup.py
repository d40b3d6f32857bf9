"""`pip install ./python`: the tdsolve package with its extension tdsolve._core.

The metadata is pyproject.toml's; this file only puts the extension (C++,
built by the project's CMake: it runs the commands inside Python) beside the
pure-Python reader. Where the extension comes from, the first that applies:

- TDSOLVE_CORE=FILE: that file (a `_core*.so` a build made);
- TDSOLVE_BUILD_DIR=DIR: a build of the project (`cmake -S . -B DIR`): its
  DIR/python/tdsolve/_core*.so, built first (`cmake --build DIR --target
  _core`) when it is not there;
- the repository around python/ (its CMakeLists.txt): configured and built
  in build-pip/ beside python/, Release, the CUDA backend where `nvidia-smi`
  lists a GPU (TDSOLVE_CUDA=ON or OFF says otherwise), as the README's setup
  does; the Debian packages of the README's Dependencies are needed;
- TDSOLVE_READER_ONLY=1: none, the pure-Python reader alone (the calls then
  raise ImportError saying why).

Without any of them (python/ copied out of the repository) the install fails
and says so. With the extension the wheel is a platform wheel.
"""
import glob
import os
import shutil
import subprocess
import sys
from importlib.machinery import EXTENSION_SUFFIXES

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _reader_only():
    return os.environ.get("TDSOLVE_READER_ONLY", "") not in ("", "0")


def _run(cmd):
    print("tdsolve setup: " + " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


def _built(build_dir):
    """The build's extension for this Python (None when it has none); one
    made for another Python is refused (it would not import)."""
    found = sorted(glob.glob(os.path.join(build_dir, "python", "tdsolve", "_core*.so")))
    ours = [f for f in found if any(f.endswith("_core" + s) for s in EXTENSION_SUFFIXES)]
    if found and not ours:
        raise RuntimeError(f"tdsolve setup: {found[-1]} is not for this Python ({sys.version.split()[0]}); "
                           "build the project with this Python's headers")
    return ours[-1] if ours else None


def _gpu_present():
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def _build(build_dir, configure):
    jobs = str(os.cpu_count() or 1)
    if configure:
        cuda = os.environ.get("TDSOLVE_CUDA") or ("ON" if _gpu_present() else "OFF")
        _run(["cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release", f"-DTDSOLVE_CUDA={cuda}",
              "-DTDSOLVE_TESTS=OFF", "-DTDSOLVE_PYTHON_EXT=ON"])
    _run(["cmake", "--build", build_dir, "--target", "_core", "-j", jobs])
    core = _built(build_dir)
    if not core:
        raise RuntimeError(f"tdsolve setup: the build in {build_dir} made no tdsolve/_core*.so")
    return core


def plan():
    """How the extension is had: a function that returns its file, or None
    (the reader alone). Decided before anything is built, so that the wheel's
    tag is known; built when the package is."""
    if os.environ.get("TDSOLVE_CORE"):
        core = os.environ["TDSOLVE_CORE"]
        if not os.path.isfile(core):
            raise RuntimeError(f"tdsolve setup: TDSOLVE_CORE={core} is not a file")
        return lambda: core
    if os.environ.get("TDSOLVE_BUILD_DIR"):
        build_dir = os.path.abspath(os.environ["TDSOLVE_BUILD_DIR"])
        return lambda: _built(build_dir) or _build(build_dir, configure=False)
    if _reader_only():
        return None
    if os.path.isfile(os.path.join(ROOT, "CMakeLists.txt")) and os.path.isdir(os.path.join(ROOT, "solver")):
        return lambda: _build(os.path.join(ROOT, "build-pip"), configure=True)
    raise RuntimeError(
        "tdsolve setup: the extension tdsolve._core is built from the tdsolve repository around python/, "
        "which is not there; give TDSOLVE_BUILD_DIR (a build of the project) or TDSOLVE_CORE (its "
        "_core*.so), or TDSOLVE_READER_ONLY=1 for the pure-Python reader alone")


CORE = plan()


class BuildWithCore(build_py):
    def run(self):
        super().run()
        if CORE:
            core = CORE()
            target = os.path.join(self.build_lib, "tdsolve")
            os.makedirs(target, exist_ok=True)
            shutil.copy2(core, os.path.join(target, os.path.basename(core)))


class CoreDistribution(Distribution):
    def has_ext_modules(self):  # a platform wheel when it carries the extension
        return CORE is not None


setup(cmdclass={"build_py": BuildWithCore}, distclass=CoreDistribution)
