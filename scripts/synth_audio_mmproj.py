#!/usr/bin/env python3
"""Writes random-weight audio projector files (mmproj GGUF in clip.cpp's layout, issue #46) for
the three Whisper-encoder projector types libmtmd runs: ultravox, qwen2a and voxtral. A small
Whisper encoder (128 mel bins, width 384, 2 blocks, 6 heads, FFN 1536, 1500 positions) and each
type's projector to SmolLM2-135M's 576-wide embeddings:

  ultravox  stack 4 positions, RMS norm, mm.a.mlp.1 (1536 -> 1024), SwiGLU, RMS norm,
            mm.a.mlp.2 (512 -> 576)                 375 tokens per 30 s
  qwen2a    (pairs averaged) mm.a.fc + bias (384 -> 576)   750 tokens per 30 s
  voxtral   (pairs averaged) stack 2, mm.a.mlp.1 (768 -> 1024), GELU, mm.a.mlp.2 (1024 -> 576)
                                                   375 tokens per 30 s

  scripts/synth_audio_mmproj.py OUT_DIR [--seed N]

Writes OUT_DIR/mmproj-{ultravox,qwen2a,voxtral}-{f16,q8_0}.gguf: F16 matrices (convolutions,
attention, FFN, projector) with F32 norms, biases and positions; Q8_0 for the block and projector
matrices with the convolutions in F16 (ggml's im2col convolves F16, not Q8_0).
The pinned gguf/numpy of scripts/requirements-synth.txt (tests/vision/make_audio_models.sh).
"""
import argparse
import os

import numpy as np
import gguf

Q = gguf.GGMLQuantizationType
HP = dict(n_mel=128, n_embd=384, n_layer=2, n_head=6, n_pos=1500, proj_dim=576, hidden=1024, eps=1e-5)
STACK = dict(ultravox=4, qwen2a=0, voxtral=2)


def tensors(hp, kind):
    """(name, ne (ggml order), kind): 'mat' (a product's weight), 'conv', 'vec'-like kinds."""
    E, M, F = hp["n_embd"], hp["n_mel"], 4 * hp["n_embd"]
    t = [("a.conv1d.1.weight", (3, M, E), "conv"), ("a.conv1d.1.bias", (1, E), "bias"),
         ("a.conv1d.2.weight", (3, E, E), "conv"), ("a.conv1d.2.bias", (1, E), "bias"),
         ("a.position_embd.weight", (E, hp["n_pos"]), "pos")]
    for i in range(hp["n_layer"]):
        b = f"a.blk.{i}."
        t += [(b + "ln1.weight", (E,), "normw"), (b + "ln1.bias", (E,), "bias")]
        for m in ("attn_q", "attn_k", "attn_v", "attn_out"):
            t += [(b + m + ".weight", (E, E), "mat")]
            if m != "attn_k":
                t += [(b + m + ".bias", (E,), "bias")]
        t += [(b + "ln2.weight", (E,), "normw"), (b + "ln2.bias", (E,), "bias"),
              (b + "ffn_up.weight", (E, F), "mat"), (b + "ffn_up.bias", (F,), "bias"),
              (b + "ffn_down.weight", (F, E), "mat"), (b + "ffn_down.bias", (E,), "bias")]
    t += [("a.post_ln.weight", (E,), "normw"), ("a.post_ln.bias", (E,), "bias")]
    P, H = hp["proj_dim"], hp["hidden"]
    S = E * max(1, STACK[kind])
    if kind == "ultravox":
        t += [("mm.a.norm_pre.weight", (S,), "normw"), ("mm.a.mlp.1.weight", (S, H), "mat"),
              ("mm.a.norm_mid.weight", (H // 2,), "normw"), ("mm.a.mlp.2.weight", (H // 2, P), "mat")]
    elif kind == "qwen2a":
        t += [("mm.a.fc.weight", (E, P), "mat"), ("mm.a.fc.bias", (P,), "bias")]
    else:
        t += [("mm.a.mlp.1.weight", (S, H), "mat"), ("mm.a.mlp.2.weight", (H, P), "mat")]
    return t


def values(kind, ne, rng):
    shape = tuple(reversed(ne))
    if kind == "normw":
        return (1.0 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
    if kind == "bias":
        return (0.05 * rng.standard_normal(shape)).astype(np.float32)
    if kind == "pos":
        return (0.5 * rng.standard_normal(shape)).astype(np.float32)
    fan_in = ne[0] if kind != "conv" else ne[0] * ne[1]
    return (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)


def write(path, hp, kind, variant, seed):
    rng = np.random.default_rng(seed)  # the same values in every variant
    w = gguf.GGUFWriter(path, "clip")
    w.add_string("general.name", f"zerfoo synthetic {kind} audio mmproj ({variant})")
    w.add_string("clip.projector_type", kind)
    w.add_bool("clip.has_audio_encoder", True)
    w.add_bool("clip.has_vision_encoder", False)
    w.add_uint32("clip.audio.num_mel_bins", hp["n_mel"])
    w.add_uint32("clip.audio.embedding_length", hp["n_embd"])
    w.add_uint32("clip.audio.feed_forward_length", 4 * hp["n_embd"])
    w.add_uint32("clip.audio.block_count", hp["n_layer"])
    w.add_uint32("clip.audio.projection_dim", hp["proj_dim"])
    w.add_uint32("clip.audio.attention.head_count", hp["n_head"])
    w.add_float32("clip.audio.attention.layer_norm_epsilon", hp["eps"])
    if STACK[kind]:
        w.add_uint32("clip.audio.projector.stack_factor", STACK[kind])
    for name, ne, k in tensors(hp, kind):
        data = values(k, ne, rng)
        if variant == "f16" and k in ("mat", "conv") or variant == "q8_0" and k == "conv":
            w.add_tensor(name, data.astype(np.float16))
        elif variant == "q8_0" and k == "mat":
            q = gguf.quants.quantize(data, Q.Q8_0)
            w.add_tensor(name, q, raw_shape=q.shape, raw_dtype=Q.Q8_0)
        else:
            w.add_tensor(name, data)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"{path}: {os.path.getsize(path) >> 10} KiB")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--seed", type=int, default=46)
    a = ap.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    for kind in ("ultravox", "qwen2a", "voxtral"):
        for v in ("f16", "q8_0"):
            write(os.path.join(a.out_dir, f"mmproj-{kind}-{v}.gguf"), HP, kind, v, a.seed)


if __name__ == "__main__":
    main()
