#!/usr/bin/env python3
"""Writes a random LoRA adapter for a base GGUF model in llama.cpp's adapter layout.

The layout convert_lora_to_gguf.py writes: general.architecture (the base model's),
general.type = "adapter", adapter.type = "lora", adapter.lora.alpha (float32); per adapted
weight W (ne = [n_in, n_out]) the tensors "<W>.lora_a" with ne = [n_in, rank] and "<W>.lora_b"
with ne = [rank, n_out]. Values come from a fixed xorshift generator (no numpy; the same bytes on
every machine): A uniform with variance 1/n_in, B uniform in [-b_scale, b_scale].

  scripts/synth_lora.py BASE OUT [--seed N] [--rank R] [--alpha A] [--type f32|f16]
                        [--targets q,k,v,o,gate,up,down] [--layers all|0,3,...] [--b-scale S]
                        [--defect NAME]

--defect writes a broken adapter for the loader's error tests: missing_b (a lora_b left out),
bad_shape (lora_b of rank + 1), arch (another architecture), no_tensor (a weight the base lacks),
not_adapter (general.type = "model"), embd (token_embd adapted), bad_suffix (a stray tensor).
Prints OUT.
"""
import argparse
import math
import struct
import sys

SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<B", 10: "<Q", 11: "<q", 12: "<d"}
STRING, ARRAY = 8, 9
TARGETS = {"q": "attn_q", "k": "attn_k", "v": "attn_v", "o": "attn_output",
           "gate": "ffn_gate", "up": "ffn_up", "down": "ffn_down"}
F32, F16 = 0, 1


class Reader:
    def __init__(self, f):
        self.f = f

    def take(self, fmt):
        n = struct.calcsize(fmt)
        return struct.unpack(fmt, self.f.read(n))[0]

    def string(self):
        return self.f.read(self.take("<Q")).decode("utf-8")

    def value(self, t):
        if t == STRING:
            return self.string()
        if t == ARRAY:
            et, n = self.take("<I"), self.take("<Q")
            return [self.value(et) for _ in range(n)]
        return self.take(SCALAR[t])


def read_base(path):
    """general.architecture and {tensor name: ne} of a GGUF file."""
    with open(path, "rb") as f:
        r = Reader(f)
        if f.read(4) != b"GGUF":
            sys.exit(f"{path}: not a GGUF file")
        r.take("<I")
        n_tensors, n_kv = r.take("<Q"), r.take("<Q")
        arch = None
        for _ in range(n_kv):
            key = r.string()
            v = r.value(r.take("<I"))
            if key == "general.architecture":
                arch = v
        tensors = {}
        for _ in range(n_tensors):
            name = r.string()
            nd = r.take("<I")
            ne = [r.take("<Q") for _ in range(nd)]
            r.take("<I")
            r.take("<Q")
            tensors[name] = ne
    return arch, tensors


class Rng:
    """xorshift64*: uniform floats in [-1, 1)."""

    def __init__(self, seed):
        self.s = (seed * 0x9E3779B97F4A7C15 + 1) & 0xFFFFFFFFFFFFFFFF or 1

    def uniform(self, n):
        out = []
        s = self.s
        for _ in range(n):
            s ^= s >> 12
            s ^= (s << 25) & 0xFFFFFFFFFFFFFFFF
            s ^= s >> 27
            v = (s * 0x2545F4914F6CDD1D) & 0xFFFFFFFFFFFFFFFF
            out.append((v >> 11) * (2.0 / (1 << 53)) - 1.0)
        self.s = s
        return out


def enc_str(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def kv_str(key, v):
    return enc_str(key) + struct.pack("<I", STRING) + enc_str(v)


def kv_f32(key, v):
    return enc_str(key) + struct.pack("<I", 6) + struct.pack("<f", v)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("base")
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rank", type=int, default=8)
    ap.add_argument("--alpha", type=float, default=16.0)
    ap.add_argument("--type", choices=["f32", "f16"], default="f32")
    ap.add_argument("--targets", default="q,k,v,o,gate,up,down")
    ap.add_argument("--layers", default="all")
    ap.add_argument("--b-scale", type=float, default=0.1)
    ap.add_argument("--defect", default="")
    a = ap.parse_args()

    arch, base = read_base(a.base)
    n_layer = 0
    while f"blk.{n_layer}.attn_norm.weight" in base:
        n_layer += 1
    layers = range(n_layer) if a.layers == "all" else [int(x) for x in a.layers.split(",")]
    rng = Rng(a.seed)
    ttype = F16 if a.type == "f16" else F32
    tensors = []  # (name, ne, type, bytes)

    def pack(vals, t):
        return struct.pack(f"<{len(vals)}{'e' if t == F16 else 'f'}", *vals)

    def add_pair(name, n_in, n_out, rank_b=None):
        ra = a.rank
        rb = a.rank if rank_b is None else rank_b
        sa = math.sqrt(3.0 / n_in)
        A = [v * sa for v in rng.uniform(n_in * ra)]
        B = [v * a.b_scale for v in rng.uniform(rb * n_out)]
        tensors.append((name + ".lora_a", [n_in, ra], ttype, pack(A, ttype)))
        tensors.append((name + ".lora_b", [rb, n_out], ttype, pack(B, ttype)))

    for il in layers:
        for t in a.targets.split(","):
            name = f"blk.{il}.{TARGETS[t]}.weight"
            if name not in base:
                continue
            n_in, n_out = base[name][0], base[name][1]
            add_pair(name, n_in, n_out)
    if a.defect == "missing_b":
        tensors = [t for t in tensors if t[0] != tensors[1][0]]
    elif a.defect == "bad_shape":
        name = tensors[0][0][: -len(".lora_a")]
        tensors = tensors[2:]
        add_pair(name, base[name][0], base[name][1], rank_b=a.rank + 1)
    elif a.defect == "no_tensor":
        add_pair(f"blk.{n_layer + 5}.attn_q.weight", base["blk.0.attn_q.weight"][0], base["blk.0.attn_q.weight"][1])
    elif a.defect == "embd":
        ne = base["token_embd.weight"]
        add_pair("token_embd.weight", ne[0], ne[1])
    elif a.defect == "bad_suffix":
        tensors.append(("blk.0.attn_q.weight.lora_c", [8], F32, pack([0.0] * 8, F32)))

    kvs = [
        kv_str("general.architecture", "gpt2" if a.defect == "arch" else arch),
        kv_str("general.type", "model" if a.defect == "not_adapter" else "adapter"),
        kv_str("adapter.type", "lora"),
        kv_f32("adapter.lora.alpha", a.alpha),
    ]
    align = 32
    infos = b""
    offset = 0
    offsets = []
    for name, ne, t, data in tensors:
        offsets.append(offset)
        infos += enc_str(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
        infos += struct.pack("<I", t) + struct.pack("<Q", offset)
        offset += (len(data) + align - 1) // align * align
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs)) + b"".join(kvs) + infos
    with open(a.out, "wb") as f:
        f.write(head)
        f.write(b"\0" * ((align - len(head) % align) % align))
        for (name, ne, t, data), off in zip(tensors, offsets):
            f.write(data)
            f.write(b"\0" * ((align - len(data) % align) % align))
    print(a.out)


if __name__ == "__main__":
    main()
