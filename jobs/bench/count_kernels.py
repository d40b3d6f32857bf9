#!/usr/bin/env python3
"""Counts the GPU kernels a build compiled: every .o in the given archives or
folders, its embedded cubins (the .nv_fatbin section's ELF images), and in
each the kernels (sections .nv.constant0.NAME: one a __global__ function).

    jobs/bench/count_kernels.py build/solver/libtdsolve_cuda.a [--by-file]

Works without the CUDA toolkit's cuobjdump (which the development machines
lack). nvcc 13 compresses large fatbin entries with zstd: reading those needs
Debian's python3-zstandard (a measuring tool's need, not the project's)."""
import argparse
import os
import struct
import subprocess
import sys
import tempfile


def fatbin_entries(blob):
    """The (kind, payload) entries of the fatbins in a .nv_fatbin section
    (kind 1: PTX, 2: cubin), decompressed."""
    at = 0
    while at + 16 <= len(blob):
        magic, _, header, size = struct.unpack_from("<IHHQ", blob, at)
        if magic != 0xBA55ED50:
            at += 8  # sections are 8-aligned
            continue
        e, end = at + header, at + header + size
        while e < end:
            kind, _, eheader, padded = struct.unpack_from("<HHIQ", blob, e)
            stored, = struct.unpack_from("<I", blob, e + 16)
            full, = struct.unpack_from("<I", blob, e + 56)
            payload = blob[e + eheader:e + eheader + padded]
            if payload[:4] == b"\x28\xb5\x2f\xfd":  # zstd frame
                try:
                    import zstandard
                except ImportError:
                    sys.exit("count_kernels: compressed fatbin entries need python3-zstandard")
                payload = zstandard.ZstdDecompressor().decompress(payload[:stored], max_output_size=full)
            yield kind, payload
            e += eheader + padded
        at = end


def cubins(blob):
    """The ELF images (cubins) inside a .nv_fatbin section."""
    for kind, payload in fatbin_entries(blob):
        if kind == 2 and payload[:4] == b"\x7fELF":
            yield payload


def kernels(elf):
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize) for i in range(shnum)]
    strtab = sections[shstrndx]
    names = elf[strtab[4]:strtab[4] + strtab[5]]
    out = []
    for s in sections:
        end = names.find(b"\0", s[0])
        name = names[s[0]:end].decode()
        if name.startswith(".nv.constant0."):
            out.append(name[len(".nv.constant0."):])
    return out


def objects(paths, tmp):
    for p in paths:
        if os.path.isdir(p):
            for root, _, files in os.walk(p):
                for f in sorted(files):
                    if f.endswith(".o"):
                        yield os.path.join(root, f), os.path.join(root, f)
        elif p.endswith(".a"):
            names = subprocess.run(["ar", "t", p], check=True, capture_output=True, text=True).stdout.split()
            for n in names:
                subprocess.run(["ar", "x", os.path.abspath(p), n], check=True, cwd=tmp)
                yield f"{p}({n})", os.path.join(tmp, n)
        else:
            yield p, p


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--by-file", action="store_true", help="one line a object file")
    a = ap.parse_args()
    total = 0
    with tempfile.TemporaryDirectory() as tmp:
        for label, obj in objects(a.paths, tmp):
            fb = os.path.join(tmp, "fatbin")
            r = subprocess.run(["objcopy", "-O", "binary", "--only-section=.nv_fatbin", obj, fb],
                               capture_output=True)
            if r.returncode != 0 or not os.path.exists(fb):
                continue
            with open(fb, "rb") as f:
                blob = f.read()
            os.remove(fb)
            names = set()
            for elf in cubins(blob):
                names.update(kernels(elf))
            total += len(names)
            if a.by_file and names:
                print(f"{len(names):6d} {label}")
    print(f"{total} kernels")


if __name__ == "__main__":
    sys.exit(main())
