#!/usr/bin/env python3
"""Recompute an annal log's Merkle root from its leaf files, independently of annal.

Usage: python3 examples/recompute_root.py DATA_DIR [SIZE]

Reads DATA_DIR/log/*.jsonl (one RFC 8785 canonical entry per line, files in
name order), hashes each line as BLAKE3(0x00 || line) and combines them with
the RFC 6962 split (largest power of two below n) using BLAKE3(0x01 || l || r).
Prints the size and the base64 root, which must equal lines 2 and 3 of
DATA_DIR/checkpoint. Needs `pip install blake3`.
"""
import base64
import glob
import os
import sys

from blake3 import blake3


def leaf_hashes(data_dir):
    for path in sorted(glob.glob(os.path.join(data_dir, "log", "*.jsonl"))):
        with open(path, "rb") as f:
            for line in f:
                yield blake3(b"\x00" + line.rstrip(b"\n")).digest()


def root(hashes):
    if not hashes:
        return blake3(b"").digest()
    if len(hashes) == 1:
        return hashes[0]
    k = 1
    while k * 2 < len(hashes):
        k *= 2
    return blake3(b"\x01" + root(hashes[:k]) + root(hashes[k:])).digest()


def main():
    data_dir = sys.argv[1]
    hashes = list(leaf_hashes(data_dir))
    if len(sys.argv) > 2:
        hashes = hashes[: int(sys.argv[2])]
    print(len(hashes))
    print(base64.b64encode(root(hashes)).decode())


if __name__ == "__main__":
    main()
