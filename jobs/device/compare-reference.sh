#!/usr/bin/env bash
# `tdsolve edm` of this build and of a reference build (the code before a
# redesign), every metric and both precisions, 1 and 3 ranks: /distances and
# /progress must be byte-identical. On the GPU machine (inside
# .devrun/on-device.sh) it compares .devbin/tdsolve with .devbin/tdsolve_ref
# on the GPU; elsewhere set BIN, REF and BACKEND=cpu.
set -euo pipefail
BIN=${BIN:-.devbin/tdsolve}
REF=${REF:-.devbin/tdsolve_ref}
BACKEND=${BACKEND:-cuda}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
for points in uniform:6007:6:9 uniform:3001:17:4; do
for metric in euclidean sqeuclidean cityblock chebyshev cosine; do
  for precision in float32 float64; do
    for ranks in 1 3; do
      args=(--generate $points --metric $metric --precision $precision --chunk-mb 2
            --backend $BACKEND --progress none --quiet)
      mpirun -np $ranks --oversubscribe "$BIN" edm "${args[@]}" --output "$tmp/new.h5" --overwrite
      mpirun -np $ranks --oversubscribe "$REF" edm "${args[@]}" --output "$tmp/ref.h5" --overwrite
      for ds in /distances /progress/done /progress/offsets; do
        h5dump -b LE -d $ds -o "$tmp/a.bin" "$tmp/new.h5" >/dev/null
        h5dump -b LE -d $ds -o "$tmp/b.bin" "$tmp/ref.h5" >/dev/null
        if cmp -s "$tmp/a.bin" "$tmp/b.bin"; then r=same; else r=DIFFER; fail=1; fi
        echo "$points $metric $precision ranks=$ranks $ds: $r"
      done
    done
  done
done
done
exit $fail
