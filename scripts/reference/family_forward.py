#!/usr/bin/env python3
"""A plain numpy forward pass of the model families as doc/families.md describes them, run on
the F32 family files and compared with the reference's goldens: evidence that the description
is exact (the engine implements it), and a way to see how much each quirk moves the logits
(--flip QUIRK recomputes with one detail changed; the cosine must then fall well below the
test's 0.999 threshold, or the golden test could not see that detail).

  scripts/reference/family_forward.py MODELS_DIR [--only llama31,gemma2] [--flip QUIRK]

QUIRKS: rope_style (NORM <-> NEOX), no_rope_freqs, phi3_long (long instead of short factors),
phi3_window (honour the ignored sliding window), gemma2_no_caps, gemma2_window (no sliding
window), smollm3_rope_all, granite_no_scales, olmo2_head_qknorm (per-head QK-norm),
moe_no_renorm, qkv_no_bias.
Needs numpy only; reads F32 files (prints the worst cosine / std difference per file).
"""
import argparse
import json
import math
import os
import struct
import sys

import numpy as np

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../tests/data/golden/families")
FIXED = {0: ("B", 1), 1: ("b", 1), 2: ("H", 2), 3: ("h", 2), 4: ("I", 4), 5: ("i", 4), 6: ("f", 4),
         7: ("?", 1), 10: ("Q", 8), 11: ("q", 8), 12: ("d", 8)}


def read_gguf(path):
    buf = np.memmap(path, dtype=np.uint8, mode="r")
    raw = buf.tobytes() if len(buf) < (1 << 16) else None
    mv = memoryview(buf)
    _, _, n_t, n_kv = struct.unpack_from("<IIQQ", mv, 0)
    off = 24

    def rstr(o):
        (n,) = struct.unpack_from("<Q", mv, o)
        return bytes(mv[o + 8:o + 8 + n]).decode("utf-8", "replace"), o + 8 + n

    def rval(o, t):
        if t in FIXED:
            f, s = FIXED[t]
            return struct.unpack_from("<" + f, mv, o)[0], o + s
        if t == 8:
            return rstr(o)
        et, n = struct.unpack_from("<IQ", mv, o)
        o += 12
        if et in FIXED:
            return ("array", n), o + n * FIXED[et][1]
        for _ in range(n):
            _, o = rval(o, et)
        return ("array", n), o

    kv = {}
    for _ in range(n_kv):
        k, off = rstr(off)
        (t,) = struct.unpack_from("<I", mv, off)
        kv[k], off = rval(off + 4, t)
    infos = []
    for _ in range(n_t):
        name, off = rstr(off)
        (nd,) = struct.unpack_from("<I", mv, off)
        ne = struct.unpack_from(f"<{nd}Q", mv, off + 4)
        t, o = struct.unpack_from("<IQ", mv, off + 4 + 8 * nd)
        off += 4 + 8 * nd + 12
        infos.append((name, ne, t, o))
    align = kv.get("general.alignment", 32)
    base = (off + align - 1) // align * align
    tensors = {}
    for name, ne, t, o in infos:
        if t != 0:
            sys.exit(f"{path}: {name} is not F32 (this reference reads F32 files only)")
        n = int(np.prod(ne))
        tensors[name] = np.frombuffer(buf, dtype=np.float32, count=n, offset=base + o).reshape(tuple(reversed(ne)))
    del raw
    return kv, tensors


def rms(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rope(x, pos, n_rot, base, neox, factors=None, attn_factor=1.0, freq_scale=1.0):
    """x: [T, heads, hd]."""
    x = x.copy()
    i = np.arange(n_rot // 2)
    theta = pos[:, None] * freq_scale * base ** (-2.0 * i / n_rot)
    if factors is not None:
        theta = theta / factors[None, :]
    c, s = (np.cos(theta) * attn_factor)[:, None, :], (np.sin(theta) * attn_factor)[:, None, :]
    if neox:
        a, b = x[..., :n_rot // 2].copy(), x[..., n_rot // 2:n_rot].copy()
        x[..., :n_rot // 2], x[..., n_rot // 2:n_rot] = a * c - b * s, a * s + b * c
    else:
        a, b = x[..., 0:n_rot:2].copy(), x[..., 1:n_rot:2].copy()
        x[..., 0:n_rot:2], x[..., 1:n_rot:2] = a * c - b * s, a * s + b * c
    return x


def attention(q, k, v, scale, window=0, softcap=0.0):
    """q: [T, H, hd], k/v: [T, Hkv, hd]; causal (+ window: key p0 masked when p1 - p0 >= window)."""
    T, H, _ = q.shape
    rep = H // k.shape[1]
    k, v = np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1)
    s = np.einsum("thd,shd->hts", q, k)
    if softcap:
        s = softcap * np.tanh(s / softcap)
    s = s * scale
    p1, p0 = np.arange(T)[:, None], np.arange(T)[None, :]
    mask = p0 > p1
    if window:
        mask |= (p1 - p0) >= window
    s = np.where(mask[None], -np.inf, s)
    s = s - s.max(-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(-1, keepdims=True)
    return np.einsum("hts,shd->thd", p, v).reshape(T, -1)


def silu(x):
    return x / (1 + np.exp(-x))


def gelu(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def forward(kv, W, tokens, flip):
    a = kv["general.architecture"]
    g = lambda k, d=None: kv.get(f"{a}.{k}", d)
    E, L, H = g("embedding_length"), g("block_count"), g("attention.head_count")
    Hkv = g("attention.head_count_kv", H)
    hd = g("attention.key_length", E // H)
    n_rot = g("rope.dimension_count", hd)
    base = g("rope.freq_base", 10000.0)
    eps = g("attention.layer_norm_rms_epsilon")
    neox = a in ("qwen2", "qwen3", "qwen3moe", "phi3", "gemma2", "olmo2")
    if flip == "rope_style":
        neox = not neox
    attn_factor = g("rope.scaling.attn_factor", 1.0)
    T = len(tokens)
    pos = np.arange(T, dtype=np.float64)
    mm = lambda x, name: x @ W[name].astype(np.float64).T
    x = W["token_embd.weight"][tokens].astype(np.float64)
    if a == "gemma2":
        x = x * np.float32(math.sqrt(E))
    scales = dict(embedding=g("embedding_scale", 0.0), residual=g("residual_scale", 0.0),
                  attention=g("attention.scale", 0.0), logit=g("logit_scale", 0.0))
    if a == "granite" and flip == "granite_no_scales":
        scales = dict(embedding=0.0, residual=0.0, attention=0.0, logit=1.0)
    if scales["embedding"]:
        x = x * scales["embedding"]
    factors = None
    if "rope_freqs.weight" in W and flip != "no_rope_freqs":
        factors = W["rope_freqs.weight"].astype(np.float64)
    if a == "phi3":
        long = flip == "phi3_long"
        factors = W["rope_factors_long.weight" if long else "rope_factors_short.weight"].astype(np.float64)
    for il in range(L):
        p = f"blk.{il}."
        h = x if a == "olmo2" else rms(x, W[p + "attn_norm.weight"], eps)
        if p + "attn_qkv.weight" in W:
            qkv = mm(h, p + "attn_qkv.weight")
            q, k, v = np.split(qkv, [hd * H, hd * H + hd * Hkv], axis=-1)
        else:
            q, k, v = mm(h, p + "attn_q.weight"), mm(h, p + "attn_k.weight"), mm(h, p + "attn_v.weight")
        if p + "attn_q.bias" in W and flip != "qkv_no_bias":
            q, k, v = q + W[p + "attn_q.bias"], k + W[p + "attn_k.bias"], v + W[p + "attn_v.bias"]
        if a == "olmo2":
            if flip == "olmo2_head_qknorm":
                q = rms(q.reshape(T, H, hd), W[p + "attn_q_norm.weight"].reshape(H, hd), eps).reshape(T, -1)
                k = rms(k.reshape(T, Hkv, hd), W[p + "attn_k_norm.weight"].reshape(Hkv, hd), eps).reshape(T, -1)
            else:
                q, k = rms(q, W[p + "attn_q_norm.weight"], eps), rms(k, W[p + "attn_k_norm.weight"], eps)
        q, k, v = q.reshape(T, H, hd), k.reshape(T, Hkv, hd), v.reshape(T, Hkv, hd)
        if a in ("qwen3", "qwen3moe"):
            q, k = rms(q, W[p + "attn_q_norm.weight"], eps), rms(k, W[p + "attn_k_norm.weight"], eps)
        use_rope = not (a == "smollm3" and (il + 1) % 4 == 0 and flip != "smollm3_rope_all")
        if use_rope:
            q = rope(q, pos, n_rot, base, neox, factors, attn_factor)
            k = rope(k, pos, n_rot, base, neox, factors, attn_factor)
        scale, window, cap = 1.0 / math.sqrt(hd), 0, 0.0
        if a == "phi3":
            q, scale = q / math.sqrt(hd), 1.0
            if flip == "phi3_window":
                window = g("attention.sliding_window")
        if a == "gemma2":
            q, scale = q / math.sqrt(hd), 1.0
            if flip != "gemma2_no_caps":
                cap = g("attn_logit_softcapping", 50.0)
            if il % 2 == 0 and flip != "gemma2_window":
                window = g("attention.sliding_window", 4096)
        if a == "granite" and scales["attention"]:
            scale = scales["attention"]
        o = mm(attention(q, k, v, scale, window, cap), p + "attn_output.weight")
        if a in ("gemma2", "olmo2"):
            o = rms(o, W[p + "post_attention_norm.weight"], eps)
        if a == "granite" and scales["residual"]:
            o = o * scales["residual"]
        h = x + o
        n = h if a == "olmo2" else rms(h, W[p + "ffn_norm.weight"], eps)
        if p + "ffn_gate_inp.weight" in W:
            n_exp, k_used = g("expert_count"), g("expert_used_count")
            logits = mm(n, p + "ffn_gate_inp.weight")
            probs = np.exp(logits - logits.max(-1, keepdims=True))
            probs /= probs.sum(-1, keepdims=True)
            f = np.zeros_like(n)
            for t in range(T):
                sel = np.argsort(-probs[t], kind="stable")[:k_used]
                w = probs[t, sel]
                if flip != "moe_no_renorm":
                    w = w / max(w.sum(), 6.103515625e-5)
                for e, we in zip(sel, w):
                    gt = n[t] @ W[p + "ffn_gate_exps.weight"][e].astype(np.float64).T
                    up = n[t] @ W[p + "ffn_up_exps.weight"][e].astype(np.float64).T
                    f[t] += we * ((silu(gt) * up) @ W[p + "ffn_down_exps.weight"][e].astype(np.float64).T)
        elif a == "phi3":
            u = mm(n, p + "ffn_up.weight")
            F = u.shape[-1] // 2
            f = mm(silu(u[:, :F]) * u[:, F:], p + "ffn_down.weight")
        else:
            act = gelu if a == "gemma2" else silu
            f = mm(act(mm(n, p + "ffn_gate.weight")) * mm(n, p + "ffn_up.weight"), p + "ffn_down.weight")
        if a in ("gemma2", "olmo2"):
            f = rms(f, W[p + "post_ffw_norm.weight"], eps)
        if a == "granite" and scales["residual"]:
            f = f * scales["residual"]
        x = h + f
    x = rms(x, W["output_norm.weight"], eps)
    out = W["output.weight"] if "output.weight" in W else W["token_embd.weight"]
    logits = x @ out.astype(np.float64).T
    if a == "gemma2" and flip != "gemma2_no_caps":
        c = g("final_logit_softcapping", 30.0)
        logits = c * np.tanh(logits / c)
    if a == "granite":
        logits = logits / scales["logit"]
    return logits


def compare(logits, golden):
    ids = np.array(golden["sample_ids"])
    worst_cos, worst_std = 1.0, 0.0
    for t, ref in enumerate(golden["positions"]):
        z = np.array(ref["sample_z"])
        u = logits[t, ids]
        z, u = z - z.mean(), u - u.mean()
        worst_cos = min(worst_cos, float(z @ u / np.linalg.norm(z) / np.linalg.norm(u)))
        worst_std = max(worst_std, abs(logits[t].std() - ref["std"]) / ref["std"])
    return worst_cos, worst_std


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models_dir")
    ap.add_argument("--only", default="")
    ap.add_argument("--flip", default="")
    a = ap.parse_args()
    names = a.only.split(",") if a.only else sorted(f[:-9] for f in os.listdir(GOLDEN) if f.endswith("-f32.json"))
    for name in names:
        golden = json.load(open(os.path.join(GOLDEN, f"{name}-f32.json")))
        kv, W = read_gguf(os.path.join(a.models_dir, f"{name}-f32.gguf"))
        logits = forward(kv, W, np.array(golden["tokens"]), a.flip)
        c, s = compare(logits, golden)
        print(f"{name:9s} {a.flip or 'as documented':18s} worst cosine {c:.6f}  worst std diff {100 * s:.3f}%")


if __name__ == "__main__":
    main()
