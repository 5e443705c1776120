#!/usr/bin/env python3
"""Writes the fill-in-the-middle test model: SmolLM2-135M-Instruct with FIM tokens.

No small real GGUF here has FIM tokens (SmolLM2 has only "<reponame>", Gemma 3 none), so this
copies SmolLM2's file (weights untouched, so greedy outputs are real) with three of its unused
special tokens renamed and two FIM keys added, exercising both ways a vocabulary names them:

  by text (llama.cpp's fallback list): 11 "<fim_prefix>", 12 "<fim_suffix>", 13 "<fim_middle>"
                                       (were <jupyter_start>, <jupyter_text>, <jupyter_code>),
                                       4 "<reponame>" (SmolLM2's own: fim_rep)
  by key: tokenizer.ggml.fim_pad_token_id = 14 (<jupyter_output>),
          tokenizer.ggml.fim_sep_token_id = 5 (<file_sep>)

Expected ids: pre 11, suf 12, mid 13, pad 14, rep 4, sep 5 (tests/capi, bindings, tests/serve).
Standard library only (no gguf package):
  scripts/fim_model.py [SRC [OUT]]   (defaults: the fetched SmolLM2, ~/.cache/zerfoo/models/
                                      smollm2-135m-fim.gguf); prints OUT; skips an up-to-date OUT.
"""
import os
import struct
import sys

RENAME = {11: "<fim_prefix>", 12: "<fim_suffix>", 13: "<fim_middle>"}
ADD_U32 = {"tokenizer.ggml.fim_pad_token_id": 14, "tokenizer.ggml.fim_sep_token_id": 5}
VERSION = b"zerfoo-fim-1"  # written as general.zerfoo_fim: a changed recipe rewrites OUT

# value type -> struct format of a scalar
SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<B", 10: "<Q", 11: "<q", 12: "<d"}
STRING, ARRAY = 8, 9


class Reader:
    def __init__(self, data):
        self.d, self.p = data, 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.d, self.p)[0]
        self.p += struct.calcsize(fmt)
        return v

    def string(self):
        n = self.take("<Q")
        s = self.d[self.p:self.p + n]
        self.p += n
        return s

    def skip_value(self, t):
        if t == STRING:
            self.string()
        elif t == ARRAY:
            et, n = self.take("<I"), self.take("<Q")
            for _ in range(n):
                self.skip_value(et)
        else:
            self.p += struct.calcsize(SCALAR[t])


def enc_str(b):
    return struct.pack("<Q", len(b)) + b


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.expanduser("~/.cache/zerfoo/models/smollm2-135m-instruct-q4_1.gguf")
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(src), "smollm2-135m-fim.gguf")
    if os.path.exists(out) and os.path.getmtime(out) >= os.path.getmtime(src):
        with open(out, "rb") as f:
            if VERSION in f.read(1 << 16):
                print(out)
                return
    with open(src, "rb") as f:
        data = f.read()
    r = Reader(data)
    if r.take("<I") != 0x46554747:
        sys.exit(f"{src}: not a GGUF file")
    version, n_tensors, n_kv = r.take("<I"), r.take("<Q"), r.take("<Q")
    kvs = []  # (key bytes, encoded type+value)
    alignment = 32
    for _ in range(n_kv):
        key = r.string()
        t = r.take("<I")
        start = r.p
        if key == b"tokenizer.ggml.tokens":
            et, n = r.take("<I"), r.take("<Q")
            toks = [r.string() for _ in range(n)]
            for i, text in RENAME.items():
                toks[i] = text.encode()
            body = struct.pack("<IIQ", t, et, n) + b"".join(enc_str(x) for x in toks)
        else:
            r.skip_value(t)
            body = struct.pack("<I", t) + data[start:r.p]
            if key == b"general.alignment":
                alignment = struct.unpack_from("<I", data, start)[0]
        if key.decode() in ADD_U32 or key == b"general.zerfoo_fim":
            continue
        kvs.append((key, body))
    for key, val in ADD_U32.items():
        kvs.append((key.encode(), struct.pack("<II", 4, val)))
    kvs.insert(0, (b"general.zerfoo_fim", struct.pack("<I", STRING) + enc_str(VERSION)))  # first: the check reads 64 KiB
    infos_start = r.p
    for _ in range(n_tensors):
        r.string()
        n_dims = r.take("<I")
        r.p += 8 * n_dims + 4 + 8
    infos = data[infos_start:r.p]
    data_start = (r.p + alignment - 1) // alignment * alignment
    head = struct.pack("<IIQQ", 0x46554747, version, n_tensors, len(kvs))
    head += b"".join(enc_str(k) + v for k, v in kvs) + infos
    head += b"\0" * (-len(head) % alignment)
    tmp = out + ".tmp"
    with open(tmp, "wb") as f:
        f.write(head)
        f.write(memoryview(data)[data_start:])
    os.replace(tmp, out)
    print(out)


if __name__ == "__main__":
    main()
