# Shared by jobs/setup-and-demo.sh and jobs/run-tests.sh (sourced, not run).

# Debian 12 packages tdsolve builds and runs with (see README "Dependencies").
TDSOLVE_PACKAGES=(
  build-essential cmake pkg-config            # compiler, build
  openmpi-bin libopenmpi-dev                  # MPI (Open MPI 4.1)
  libhdf5-openmpi-dev hdf5-tools              # parallel HDF5 1.10 (+ h5ls/h5dump)
  libboost-program-options-dev                # the command line
  python3 python3-h5py python3-numpy python3-scipy  # reader module and end-to-end tests
  pybind11-dev python3-dev                    # the Python extension (tdsolve.pdist ... in process)
  python3-matplotlib                          # pictures of fractal runs, benchmark plots
)
# Only jobs/run-tests.sh installs these: what the tests alone use (a user's
# setup needs none of them; xarray and scikit-learn with their recommends
# are ~190 packages of a fresh Debian's ~520).
TDSOLVE_TEST_PACKAGES=(
  libgtest-dev                # unit tests (the setup builds without them)
  python3-xarray python3-h5netcdf  # e2e.netcdf: result files open in xarray (dimension scales)
  python3-sklearn             # kNN references (tdsolve knn, NearestNeighbors)
  slurmctld slurmd slurm-client munge  # e2e.slurm: a real one-node Slurm for the job scripts
  python3-venv python3-wheel  # e2e.package: pip-installs python/ into a venv (setuptools 66 needs wheel)
  lammps                      # e2e.triplet: tdsolve triplet against LAMMPS pair_style atm
  python3-mdanalysis          # e2e.periodic: triclinic minimum images and InterRDF against MDAnalysis
  python3-pytest              # e2e.scipy_suite: SciPy's own test_distance.py through tdsolve.pdist/cdist
)

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"
  elif command -v sudo >/dev/null; then sudo "$@"
  else echo "tdsolve setup: need root to install packages (run as root or install sudo)" >&2; return 1
  fi
}

# Installs whichever of the packages (and of any given as arguments) is
# missing (nothing when all are there).
ensure_packages() {
  local missing=()
  for p in "${TDSOLVE_PACKAGES[@]}" "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "tdsolve setup: installing ${missing[*]}"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
}

# Configures and builds ./build (Release; the CUDA backend too whenever nvcc
# is found, also in /usr/local/cuda/bin: then CUDA is required, so a broken
# toolkit fails the build instead of silently building without it). Extra
# arguments go to cmake's configure step (run-tests.sh: -DTDSOLVE_LAB=ON).
# The CUDA backend is built where it can run: a CUDA toolkit (nvcc) and a
# GPU that nvidia-smi lists. TDSOLVE_CUDA=ON builds it without a GPU too (to
# compile it for another machine; it needs nvcc), OFF never; unset or auto:
# as said. Without a GPU the CUDA build is most of the build's time (10 of
# 15 minutes on 2 cores) for a backend that cannot run.
build_tdsolve() {
  if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
    export PATH=/usr/local/cuda/bin:$PATH
  fi
  local want=${TDSOLVE_CUDA:-auto} cuda=(-DTDSOLVE_CUDA=OFF)
  case $want in
    ON | on | 1)
      command -v nvcc >/dev/null || { echo "TDSOLVE_CUDA=ON but no nvcc on PATH" >&2; return 1; }
      cuda=(-DTDSOLVE_CUDA=ON -DCMAKE_CUDA_COMPILER="$(command -v nvcc)") ;;
    OFF | off | 0) ;;
    auto)
      if command -v nvcc >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
        cuda=(-DTDSOLVE_CUDA=ON -DCMAKE_CUDA_COMPILER="$(command -v nvcc)")
      elif command -v nvcc >/dev/null; then
        echo "build: nvcc found but no GPU: the CPU backend only (TDSOLVE_CUDA=ON builds CUDA anyway)"
      fi ;;
    *) echo "TDSOLVE_CUDA must be ON, OFF or auto, not '$want'" >&2; return 1 ;;
  esac
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${cuda[@]}" "$@"
  cmake --build build -j"$(nproc)"
}

# Open MPI refuses to start as root unless asked twice; only our own scripts
# ask, never a user's command line.
allow_mpirun_as_root() {
  if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  fi
}
