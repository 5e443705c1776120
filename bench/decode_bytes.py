#!/usr/bin/env python3
"""Weight bytes a decoded token reads from a GGUF file: every tensor except the token embedding
(one row per token; it counts in full when it is also the output head), with the 3-D expert
tensors (*_exps) scaled by expert_used_count / expert_count, the average share of experts a
token selects. Prints the number. Parses only the header (no dependencies).

  bench/decode_bytes.py FILE
"""
import struct
import sys

# ggml type id -> (block elements, block bytes) for the types these files use.
BLOCKS = {0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34),
          10: (256, 84), 11: (256, 110), 12: (256, 144), 13: (256, 176), 14: (256, 210), 30: (1, 2),
          20: (32, 18), 23: (256, 136), 39: (32, 17)}  # IQ4_NL, IQ4_XS, MXFP4
SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


def main(path):
    with open(path, "rb") as f:
        data = f.read(64 << 20)  # the header of these files fits (vocabularies up to ~256k tokens)
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from("<" + fmt, data, pos)
        pos += struct.calcsize("<" + fmt)
        return v[0] if len(v) == 1 else v

    def string():
        n = take("Q")
        nonlocal pos
        s = data[pos:pos + n].decode("utf-8", "replace")
        pos += n
        return s

    def value(t):
        if t == 8:
            return string()
        if t == 9:
            et, n = take("I"), take("Q")
            return [value(et) for _ in range(n)]
        return take(SCALAR[t])

    assert data[:4] == b"GGUF", "not a GGUF file"
    pos = 4
    _, n_tensors, n_kv = take("I"), take("Q"), take("Q")
    kv = {}
    for _ in range(n_kv):
        key = string()
        kv[key] = value(take("I"))
    arch = kv["general.architecture"]
    used, count = kv.get(arch + ".expert_used_count", 0), kv.get(arch + ".expert_count", 0)
    tensors = {}
    for _ in range(n_tensors):
        name = string()
        dims = [take("Q") for _ in range(take("I"))]
        t = take("I")
        take("Q")
        n = 1
        for d in dims:
            n *= d
        block, size = BLOCKS[t]
        tensors[name] = n // block * size
    total = 0.0
    for name, b in tensors.items():
        if name == "token_embd.weight" and "output.weight" in tensors:
            continue
        total += b * (used / count if "_exps." in name and count else 1.0)
    print(int(total))


if __name__ == "__main__":
    main(sys.argv[1])
