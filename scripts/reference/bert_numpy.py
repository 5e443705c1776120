#!/usr/bin/env python3
"""A plain numpy forward pass of llama.cpp's `bert` graph (src/models/bert.cpp: token + type 0 +
position embeddings, LayerNorm, post-LN layers with bidirectional attention and a tanh-GELU
FFN, no output norm; pooling and the rank head of build_pooling; L2 normalization as
llama-embedding's default) in float64, on the F32 files of scripts/synth_embed.py. Writes
tests/data/golden/embeddings/numpy-NAME.json like record_embedding_goldens.py, with "reference":
"numpy", for where llama.cpp's llama-embedding is not built. Token ids come from libzerfoo's
WordPiece (exact against llama.cpp's bert-bge test vectors; tests/unit/tokenizer_test.cpp).

  scripts/reference/bert_numpy.py LIBZERFOO EMBED_MODELS_DIR
"""
import ctypes
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import record_embedding_goldens as rec  # noqa: E402  (the texts)
from family_forward import read_gguf  # noqa: E402


def tokenize(lib, path, texts):
    class Params(ctypes.Structure):
        _fields_ = [("struct_size", ctypes.c_uint32), ("device", ctypes.c_int32), ("gpu_index", ctypes.c_int32),
                    ("n_threads", ctypes.c_int32), ("flags", ctypes.c_uint32), ("reserved0", ctypes.c_uint32),
                    ("progress", ctypes.c_void_p), ("progress_user_data", ctypes.c_void_p),
                    ("reserved1", ctypes.c_uint32), ("max_batch", ctypes.c_int32)]
    p = Params()
    lib.zf_model_params_init(ctypes.byref(p), ctypes.sizeof(p))
    p.flags = 1  # vocabulary only
    m = ctypes.c_void_p()
    if lib.zf_model_load(path.encode(), ctypes.byref(p), ctypes.byref(m)) != 0:
        sys.exit(f"{path}: cannot load")
    out = []
    for t in texts:
        b = t.encode()
        buf = (ctypes.c_int32 * 4096)()
        n = ctypes.c_size_t()
        lib.zf_tokenize(m, b, ctypes.c_size_t(len(b)), 3, buf, 4096, ctypes.byref(n))  # add + parse special
        out.append(list(buf[:n.value]))
    lib.zf_model_free(m)
    return out


def ln(x, w, b, eps):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * w + b


def gelu(x):
    return 0.5 * x * (1 + np.tanh(math_sqrt_2_pi * x * (1 + 0.044715 * x * x)))


math_sqrt_2_pi = np.sqrt(2 / np.pi)


def forward(kv, W, ids):
    E = kv["bert.embedding_length"]
    H = kv["bert.attention.head_count"]
    eps = kv["bert.attention.layer_norm_epsilon"]
    hd = E // H
    x = W["token_embd.weight"][ids] + W["token_types.weight"][0] + W["position_embd.weight"][:len(ids)]
    x = ln(x, W["token_embd_norm.weight"], W["token_embd_norm.bias"], eps)
    for i in range(kv["bert.block_count"]):
        p = f"blk.{i}."
        q, k, v = (x @ W[p + f"attn_{t}.weight"].T + W[p + f"attn_{t}.bias"] for t in "qkv")
        o = np.zeros_like(q)
        for h in range(H):
            s = slice(h * hd, (h + 1) * hd)
            a = q[:, s] @ k[:, s].T / np.sqrt(hd)
            a = np.exp(a - a.max(-1, keepdims=True))
            o[:, s] = (a / a.sum(-1, keepdims=True)) @ v[:, s]
        x = ln(o @ W[p + "attn_output.weight"].T + W[p + "attn_output.bias"] + x, W[p + "attn_output_norm.weight"],
               W[p + "attn_output_norm.bias"], eps)
        f = gelu(x @ W[p + "ffn_up.weight"].T + W[p + "ffn_up.bias"]) @ W[p + "ffn_down.weight"].T + W[p + "ffn_down.bias"]
        x = ln(f + x, W[p + "layer_output_norm.weight"], W[p + "layer_output_norm.bias"], eps)
    return x


def pool(kv, W, x, pooling):
    if pooling == "rank":
        c = np.tanh(x[0] @ W["cls.weight"].T + W["cls.bias"])
        return c @ W["cls.output.weight"].T + W["cls.output.bias"]
    e = {"mean": x.mean(0), "cls": x[0], "last": x[-1]}[pooling]
    return e / np.linalg.norm(e)


def main(libpath, models):
    lib = ctypes.CDLL(libpath)
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    out_dir = os.path.join(root, "tests", "data", "golden", "embeddings")
    os.makedirs(out_dir, exist_ok=True)
    jobs = [("bert-f32-cls", "bert-f32.gguf", "cls", rec.TEXTS), ("bert-f32-mean", "bert-f32.gguf", "mean", rec.TEXTS),
            ("bert-rank-f32-rank", "bert-rank-f32.gguf", "rank", [q + "\t" + d for q, d in rec.RANK_PAIRS])]
    for name, fname, pooling, texts in jobs:
        path = os.path.join(models, fname)
        kv, W = read_gguf(path)
        W = {k: np.asarray(v, dtype=np.float64) for k, v in W.items()}
        # llama-embedding's rank input "query<TAB>doc" is "query[SEP]doc" with special tokens added.
        ids = tokenize(lib, path, [t.replace("\t", "[SEP]") for t in texts])
        vecs = [pool(kv, W, forward(kv, W, t), pooling).astype(np.float32).tolist() for t in ids]
        with open(os.path.join(out_dir, "numpy-" + name + ".json"), "w") as f:
            json.dump({"file": fname, "pooling": pooling, "texts": texts, "tokens": ids, "embeddings": vecs,
                       "reference": "numpy (scripts/reference/bert_numpy.py)"}, f, ensure_ascii=False)
            f.write("\n")
        print(name, len(vecs), len(vecs[0]))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(*sys.argv[1:])
