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

and Gemma 4's audio tower (gemma4a, clip.cpp's clip_graph_gemma4a: HP_GEMMA4A) bound to the
synthesized Gemma 4 (scripts/synth_families.py, width 256): 128 mel bins, two 3x3 stride-2
convolutions (4 and 8 channels, LayerNorm weights), a.input_projection (256 -> 128), 2 conformer
blocks (width 128, 4 heads, FFN 512, per-dimension q/k scales, attn_k_rel, the GLU + 5-tap
depthwise convolution module, post norms), a.pre_encode.out, mm.a.soft_emb_norm and
mm.a.input_projection (128 -> 256); clamps (Gemma4ClippableLinear) on blk.0's ffn_up input,
blk.1's attn_q input, blk.0's conv_pw2 output and the input projection's output.  750 tokens per 30 s

  scripts/synth_audio_mmproj.py OUT_DIR [--seed N]

Writes OUT_DIR/mmproj-{ultravox,qwen2a,voxtral}-{f16,q8_0}.gguf: F16 matrices (convolutions,
attention, FFN, projector) with F32 norms, biases and positions; Q8_0 for the block and projector
matrices with the convolutions in F16 (ggml's im2col convolves F16, not Q8_0); and
OUT_DIR/mmproj-gemma4a-{f32,f16,q8_0}.gguf alike (f32: every tensor F32). gemma4a_tower() writes
the same audio tower into another writer (synth_mmproj.py's two-tower Gemma 4 file).
The pinned gguf/numpy of scripts/requirements-synth.txt (tests/vision/make_audio_models.sh).
"""
import argparse
import os

import numpy as np
import gguf

Q = gguf.GGMLQuantizationType
HP = dict(n_mel=128, n_embd=384, n_layer=2, n_head=6, n_pos=1500, proj_dim=576, hidden=1024, eps=1e-5)
STACK = dict(ultravox=4, qwen2a=0, voxtral=2)
HP_GEMMA4A = dict(n_mel=128, n_embd=128, n_layer=2, n_head=4, n_ff=512, channels=(4, 8), proj_dim=256, eps=1e-6)
# (tensor, value) clamp scalars: NAME.input_min etc. for a product's weight NAME.weight.
GEMMA4A_CLAMPS = [("a.blk.0.ffn_up.input_min", -1.5), ("a.blk.0.ffn_up.input_max", 1.5),
                  ("a.blk.1.attn_q.input_min", -1.0), ("a.blk.1.attn_q.input_max", 1.0),
                  ("a.blk.0.conv_pw2.output_min", -0.3), ("a.blk.0.conv_pw2.output_max", 0.3),
                  ("mm.a.input_projection.output_min", -2.0), ("mm.a.input_projection.output_max", 2.0)]


def gemma4a_tensors(hp):
    """clip.cpp's gemma4a layout (ggml order). The convolution module's norms carry crossed names
    in the converter's files: conv_norm is the norm before conv_pw1, norm_conv the one after the
    depthwise convolution."""
    E, F, D, M = hp["n_embd"], hp["n_ff"], hp["n_embd"] // hp["n_head"], hp["n_mel"]
    c1, c2 = hp["channels"]
    freq = ((M - 1) // 2) // 2 + 1
    t = [("a.conv1d.0.weight", (3, 3, 1, c1), "conv"), ("a.conv1d.0.norm.weight", (c1,), "normw"),
         ("a.conv1d.1.weight", (3, 3, c1, c2), "conv"), ("a.conv1d.1.norm.weight", (c2,), "normw"),
         ("a.input_projection.weight", (c2 * freq, E), "mat"), ("a.input_projection.bias", (E,), "bias")]
    for i in range(hp["n_layer"]):
        b = f"a.blk.{i}."
        t += [(b + "ffn_norm.weight", (E,), "normw"), (b + "ffn_up.weight", (E, F), "mat"),
              (b + "ffn_down.weight", (F, E), "mat"), (b + "ffn_post_norm.weight", (E,), "normw"),
              (b + "ln1.weight", (E,), "normw"),
              (b + "attn_q.weight", (E, E), "mat"), (b + "attn_k.weight", (E, E), "mat"),
              (b + "attn_v.weight", (E, E), "mat"), (b + "attn_out.weight", (E, E), "mat"),
              (b + "attn_out.bias", (E,), "bias"), (b + "attn_post_norm.weight", (E,), "normw"),
              (b + "per_dim_scale.weight", (D,), "normw"), (b + "per_dim_k_scale.weight", (D,), "normw"),
              (b + "attn_k_rel.weight", (E, E), "mat"),
              (b + "conv_norm.weight", (E,), "normw"), (b + "conv_pw1.weight", (E, 2 * E), "mat"),
              (b + "conv_dw.weight", (5, E), "dw"), (b + "conv_dw.bias", (E,), "bias"),
              (b + "norm_conv.weight", (E,), "normw"), (b + "conv_pw2.weight", (E, E), "mat"),
              (b + "ffn_norm_1.weight", (E,), "normw"), (b + "ffn_up_1.weight", (E, F), "mat"),
              (b + "ffn_down_1.weight", (F, E), "mat"), (b + "ffn_post_norm_1.weight", (E,), "normw"),
              (b + "ln2.weight", (E,), "normw")]
    t += [("a.pre_encode.out.weight", (E, E), "mat"), ("mm.a.soft_emb_norm.weight", (E,), "normw"),
          ("mm.a.input_projection.weight", (E, hp["proj_dim"]), "mat")]
    return t


def add(w, name, data, k, variant):
    """One tensor in the variant's type: F16 matrices and convolutions (f16), Q8_0 matrices with
    F16 convolutions (q8_0: ggml's im2col convolves F16, not Q8_0), F32 otherwise."""
    if variant == "f16" and k in ("mat", "conv") or variant == "q8_0" and k == "conv":
        w.add_tensor(name, data.astype(np.float16))
    elif variant == "q8_0" and k == "mat":
        q = gguf.quants.quantize(data, Q.Q8_0)
        w.add_tensor(name, q, raw_shape=q.shape, raw_dtype=Q.Q8_0)
    else:
        w.add_tensor(name, data)


def gemma4a_tower(w, hp, variant, seed):
    """Gemma 4's audio keys and tensors into writer w (its own generator: the same tower in the
    audio-only and the two-tower files)."""
    rng = np.random.default_rng(seed)
    w.add_bool("clip.has_audio_encoder", True)
    w.add_uint32("clip.audio.num_mel_bins", hp["n_mel"])
    w.add_uint32("clip.audio.embedding_length", hp["n_embd"])
    w.add_uint32("clip.audio.feed_forward_length", hp["n_ff"])
    w.add_uint32("clip.audio.block_count", hp["n_layer"])
    w.add_uint32("clip.audio.projection_dim", hp["proj_dim"])
    w.add_uint32("clip.audio.attention.head_count", hp["n_head"])
    w.add_float32("clip.audio.attention.layer_norm_epsilon", hp["eps"])
    for name, ne, k in gemma4a_tensors(hp):
        add(w, name, values(k, ne, rng), k, variant)
    for name, v in GEMMA4A_CLAMPS:
        w.add_tensor(name, np.array([v], dtype=np.float32))


def write_gemma4a(path, hp, variant, seed):
    w = gguf.GGUFWriter(path, "clip")
    w.add_string("general.name", f"zerfoo synthetic gemma4a audio mmproj ({variant})")
    w.add_string("clip.projector_type", "gemma4a")
    w.add_bool("clip.has_vision_encoder", False)
    gemma4a_tower(w, hp, variant, seed)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"{path}: {os.path.getsize(path) >> 10} KiB")


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
    if kind == "dw":
        return (0.4 * rng.standard_normal(shape)).astype(np.float32)
    fan_in = ne[0] if kind != "conv" else ne[0] * ne[1] * (ne[2] if len(ne) == 4 else 1)
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
        add(w, name, values(k, ne, rng), k, variant)
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
    for v in ("f32", "f16", "q8_0"):
        write_gemma4a(os.path.join(a.out_dir, f"mmproj-gemma4a-{v}.gguf"), HP_GEMMA4A, v, a.seed)


if __name__ == "__main__":
    main()
