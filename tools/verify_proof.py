#!/usr/bin/env python3
"""Verify an annal proof without annal: inclusion or consistency, and the
Ed25519 signature of the checkpoint it is against.

Usage:
  verify_proof.py PROOF.json --key KEY.vkey [--checkpoint SAVED]

PROOF.json is what `annal proof inclusion|consistency` prints (or GET
/v1/proof/...). KEY.vkey is the ledger's verifier key, in the signed-note
form `annal key show` prints: <name>+<hex key id>+<base64(0x01 || key)>.
--checkpoint is a signed checkpoint you saved earlier: an inclusion proof
must be against it, a consistency proof must start from it.

Trees are RFC 6962 with BLAKE3: leaf = H(0x00 || bytes), node =
H(0x01 || left || right); proofs are checked with the algorithms of RFC
9162 sections 2.1.3.2 and 2.1.4.2. Sizes and roots are taken from signed
checkpoints only, never from the proof. Exit 0 when everything verifies,
1 when anything does not. Needs `pip install blake3 cryptography`.
"""
import argparse
import base64
import hashlib
import json
import sys

from blake3 import blake3
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey


class Failed(Exception):
    pass


def b64(text):
    raw = base64.b64decode(text, validate=True)
    if base64.b64encode(raw).decode() != text:
        raise Failed(f"non-canonical base64 {text!r}")
    return raw


def node(left, right):
    return blake3(b"\x01" + left + right).digest()


def parse_key(text):
    name, key_id, key = text.strip().split("+", 2)
    raw = b64(key)
    if len(raw) != 33 or raw[0] != 0x01:
        raise Failed("the key is not an Ed25519 verifier key")
    computed = hashlib.sha256(name.encode() + b"\n" + raw).digest()[:4]
    if computed.hex() != key_id.lower().rjust(8, "0"):
        raise Failed("the key id does not match the key")
    return name, computed, Ed25519PublicKey.from_public_bytes(raw[1:])


def open_checkpoint(note, key):
    """The (size, root) of a signed note, if `key` signed it."""
    name, key_id, public = key
    body, sep, signatures = note.partition("\n\n")
    if not sep:
        raise Failed("checkpoint: no blank line before the signatures")
    body += "\n"
    lines = body.split("\n")
    if lines[0] != name:
        raise Failed(f"checkpoint origin {lines[0]!r} is not the key's name {name!r}")
    if not (lines[1].isascii() and lines[1].isdigit()):
        raise Failed("checkpoint: the size is not a decimal number")
    root = b64(lines[2])
    if len(root) != 32:
        raise Failed("checkpoint: the root is not 32 bytes")
    for line in signatures.split("\n"):
        prefix = f"\u2014 {name} "
        if not line.startswith(prefix):
            continue
        blob = b64(line[len(prefix):])
        if len(blob) != 68 or blob[:4] != key_id:
            continue
        try:
            public.verify(blob[4:], body.encode())
        except InvalidSignature:
            raise Failed("checkpoint: the signature does not verify")
        return int(lines[1]), root
    raise Failed("checkpoint: not signed by this key")


def verify_inclusion(leaf, index, size, path, root):
    """RFC 9162 2.1.3.2."""
    if index >= size:
        raise Failed(f"index {index} is not below the tree size {size}")
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0:
            raise Failed("inclusion: the path is too long")
        if fn & 1 or fn == sn:
            r = node(p, r)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            r = node(r, p)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise Failed("inclusion: the path is too short")
    if r != root:
        raise Failed("inclusion: the path does not lead to the signed root")


def verify_consistency(first, second, first_root, second_root, path):
    """RFC 9162 2.1.4.2 (sizes 0 and equal sizes: nothing but the roots)."""
    if first > second:
        raise Failed("consistency: the first size is larger")
    if first == second or first == 0:
        want = second_root if first else blake3(b"").digest()
        if path or first_root != want:
            raise Failed("consistency: the roots do not match")
        return
    if not path:
        raise Failed("consistency: the path is empty")
    if first & (first - 1) == 0:
        path = [first_root] + path
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            raise Failed("consistency: the path is too long")
        if fn & 1 or fn == sn:
            fr, sr = node(c, fr), node(c, sr)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            sr = node(sr, c)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise Failed("consistency: the path is too short")
    if fr != first_root:
        raise Failed("consistency: the path does not reproduce the older signed root")
    if sr != second_root:
        raise Failed("consistency: the path does not reproduce the newer signed root")


def hashes(items):
    out = [bytes.fromhex(h) for h in items]
    if any(len(h) != 32 for h in out):
        raise Failed("a path hash is not 32 bytes")
    return out


def check(proof, key, saved):
    kind = proof.get("proof")
    if kind == "inclusion":
        note = saved or proof.get("checkpoint")
        if not note:
            raise Failed("no checkpoint to verify against")
        size, root = open_checkpoint(note, key)
        if proof["tree_size"] != size:
            raise Failed(f"the proof is for size {proof['tree_size']}, the checkpoint for {size}")
        leaf = blake3(b"\x00" + proof["leaf"].encode("utf-8")).digest()
        if "leaf_hash" in proof and bytes.fromhex(proof["leaf_hash"]) != leaf:
            raise Failed("leaf_hash is not the hash of leaf")
        verify_inclusion(leaf, proof["index"], size, hashes(proof["path"]), root)
        event = json.loads(proof["leaf"])["event"]
        return f"entry {proof['index']} (id {event['id']!r}) is in the log of size {size}"
    if kind == "consistency":
        old_note = saved or proof.get("from_checkpoint")
        if not old_note or not proof.get("checkpoint"):
            raise Failed("a consistency proof needs both checkpoints")
        first, first_root = open_checkpoint(old_note, key)
        second, second_root = open_checkpoint(proof["checkpoint"], key)
        if (proof["from_size"], proof["to_size"]) != (first, second):
            raise Failed(f"the proof is for sizes {proof['from_size']} -> {proof['to_size']}, "
                         f"the checkpoints for {first} -> {second}")
        verify_consistency(first, second, first_root, second_root, hashes(proof["path"]))
        return f"the log of size {second} extends the log of size {first}"
    raise Failed(f"unknown proof type {kind!r}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("proof")
    parser.add_argument("--key", required=True)
    parser.add_argument("--checkpoint")
    args = parser.parse_args()
    try:
        with open(args.key) as f:
            key = parse_key(f.read())
        saved = open(args.checkpoint).read() if args.checkpoint else None
        with open(args.proof) as f:
            proof = json.load(f)
        print("OK: " + check(proof, key, saved))
    except (Failed, ValueError, KeyError, TypeError) as e:
        print(f"FAILED: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
