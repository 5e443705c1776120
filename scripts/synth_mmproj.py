#!/usr/bin/env python3
"""Writes random-weight vision projector files (mmproj GGUF, clip.cpp's layout) with a small
SigLIP encoder (width 64, 2 blocks, 4 heads, FFN 128), so that a test encodes an image in well
under a second:
- gemma3: the real geometry (896 px images, 14 px patches, 64 x 64 patches pooled 4 x 4 into
  256 tokens, projection to Gemma 3 270M's 640-wide embeddings);
- idefics3 (SmolVLM): 512 px tiles of 16 px patches, pixel shuffle by 4 (64 tokens per tile),
  mm.model.fc to SmolLM2-135M's 576-wide embeddings, images scaled to 1024 px on the longer side
  (clip.vision.preproc_image_size) and cut into tiles plus an overview.
With --lm SMOLLM2.gguf also OUT_DIR/smollm2-vlm.gguf: SmolLM2-135M with SmolVLM's image tokens
appended to its vocabulary (<fake_token_around_image>, <image>, <global-img>, <row_R_col_C> for
R, C in 1..6, as CONTROL tokens; their embedding rows copies of existing rows), so that libmtmd
finds the markers it looks up (without them it places token -1).

  scripts/synth_mmproj.py OUT_DIR [--seed N] [--lm SMOLLM2.gguf]
  scripts/synth_mmproj.py OUT_DIR --bench LAYERS   (timing only: Gemma 3 4B's encoder widths,
      1152 wide, FFN 4304, 16 heads, LAYERS blocks, F16: mmproj-gemma3-4b-LAYERSl-f16.gguf)

Writes OUT_DIR/mmproj-gemma3-{f32,f16,q8_0}.gguf: F32 everywhere; F16 matrices (the patch
convolution, q/k/v/out, FFN, input projection) with F32 norms, biases and positions; Q8_0 block
matrices (q/k/v/out, FFN) with the F16 patch convolution and input projection (clip.cpp
transposes the projection and convolves the patches, which it cannot do on Q8_0); and
OUT_DIR/mmproj-idefics3-{f16,q8_0}.gguf alike (mm.model.fc a block matrix: Q8_0 in q8_0), and
OUT_DIR/mmproj-pixtral-{f32,f16,q8_0}.gguf (HP_PIXTRAL; with --lm also smollm2-pixtral.gguf and
mistral3-pixtral.gguf, the same model as general.architecture mistral3:
SmolLM2 with [IMG], [IMG_BREAK], [IMG_END] appended as CONTROL tokens), and
OUT_DIR/mmproj-qwen25vl-{f32,f16,q8_0}.gguf (HP_QWEN25VL: 4 blocks, window attention on 0 and 2),
OUT_DIR/mmproj-qwen3vl-{f32,f16,q8_0}.gguf (HP_QWEN3VL: a deepstack merger after block 1),
OUT_DIR/mmproj-qwen35-{f16,q8_0}.gguf (HP_QWEN35: qwen3vl_merger without deepstack, width 128),
OUT_DIR/mmproj-lfm2-{f32,f16,q8_0}.gguf (HP_LFM2: LFM2-VL's layout, width 256); with --lfm2-lm
LFM2.gguf only OUT_DIR/lfm2-vl.gguf: that model with LFM2-VL's image tokens appended (CONTROL);
with --qwen-vl-lm IN.gguf OUT.gguf only OUT_DIR/OUT.gguf: IN (a synthesized qwen2vl / qwen3vl / qwen35)
with Qwen-VL's vision tokens appended (CONTROL).
The pinned gguf/numpy of scripts/requirements-synth.txt (tests/vision/make_models.sh).
"""
import argparse
import os
import sys

import numpy as np
import gguf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import synth_audio_mmproj  # noqa: E402  (Gemma 4's audio tower for the two-tower file)

Q = gguf.GGMLQuantizationType
HP = dict(n_embd=64, n_ff=128, n_layer=2, n_head=4, image_size=896, patch_size=14, proj_dim=640, eps=1e-6,
          projector="gemma3")
HP_IDEFICS3 = dict(HP, image_size=512, patch_size=16, proj_dim=576, projector="idefics3", scale_factor=4,
                   preproc_image_size=1024)
# Pixtral (Mistral Small 3.1's layout: patch merger by 2): 16 px patches, images of their own size
# (whole 32 px blocks), SiLU-gated RMS-norm ViT with 2D rotary positions, mm.1 / GELU / mm.2 to
# SmolLM2-135M's 576, and the [IMG_BREAK] row.
HP_PIXTRAL = dict(HP, image_size=1024, patch_size=16, proj_dim=576, projector="pixtral", spatial_merge_size=2, eps=1e-5)
PIXTRAL_TOKENS = ["[IMG]", "[IMG_BREAK]", "[IMG_END]"]
# Gemma 4's vision tower (gemma4v): 16 px patches pooled 3 x 3, images of their own size (the
# 224 is unused, as the converter writes it), a 256-entry x/y position table, projection to the
# synthesized gemma4 LM's 256 (scripts/synth_families.py); Gemma4ClippableLinear clamps on three
# products, a per-layer output scale and the standardization, so that each is exercised.
# Qwen2.5-VL: 14 px patches merged 2 x 2, window attention (112 px windows) on layers 0 and 2,
# full attention on 1 and 3 (n_wa_pattern 2), projection to the synthesized qwen2vl model's 256.
HP_QWEN25VL = dict(HP, n_layer=4, image_size=560, patch_size=14, proj_dim=256, projector="qwen2.5vl_merger", wa_pattern=2)
# Qwen3-VL (qwen3vl_merger): 16 px patches merged 2 x 2, a 32 x 32 learned position table (resized
# to each image's patch grid), LayerNorms, fused q/k/v, GELU MLP, 3 blocks with a deepstack merger
# after block 1 (the synthesized qwen3vl model's one deepstack layer), projection to its 256.
HP_QWEN3VL = dict(HP, n_layer=3, image_size=512, patch_size=16, proj_dim=256, projector="qwen3vl_merger",
                  spatial_merge_size=2, deepstack=[1])
# Qwen 3.5's projector (qwen3vl_merger as the converter writes it for Qwen3_5ForConditionalGeneration:
# no deepstack_visual_indexes, so no deepstack mergers and no is_deepstack_layers), projection to
# the synthesized qwen35 model's 128.
HP_QWEN35 = {k: v for k, v in HP_QWEN3VL.items() if k != "deepstack"} | dict(proj_dim=128)
# LFM2-VL (lfm2): the converter's 256 px / 16 px patches (a 16 x 16 position table, resized to each
# image's patch grid), pixel unshuffle by 2, LayerNorm + mm.1 / GELU / mm.2 to the synthesized
# LFM2's 256 (scripts/synth_families.py); images of their own size within 64 .. 256 tokens.
HP_LFM2 = dict(HP, image_size=256, patch_size=16, proj_dim=256, projector="lfm2", scale_factor=2, mm_hidden=256)
HP_GEMMA4V = dict(HP, image_size=224, patch_size=16, proj_dim=256, projector="gemma4v", pos_size=256)
# LFM2-VL's image tokens (its tokenizer's special tokens), appended to the synthesized LFM2.
LFM2_TOKENS = (["<|image_start|>", "<|image_end|>", "<|img_thumbnail|>"] +
               [f"<|img_row_{r}_col_{c}|>" for r in range(1, 5) for c in range(1, 5)])
# Qwen2.5-VL's / Qwen3-VL's vision tokens (their tokenizers' special tokens; the qwen2 vocabulary
# of the synthesized qwen2vl / qwen3vl models lacks them, and libmtmd puts <|vision_start|> and
# <|vision_end|> around an image).
QWEN_VL_TOKENS = ["<|vision_start|>", "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>"]
# SmolVLM's added tokens (its tokenizer's additional special tokens).
VLM_TOKENS = (["<fake_token_around_image>", "<image>", "<global-img>"] +
              [f"<row_{r}_col_{c}>" for r in range(1, 7) for c in range(1, 7)])


def tensors_pixtral(hp):
    """Pixtral's tensors (clip.cpp's PIXTRAL): no biases in the ViT, RMS norms (weights only)."""
    E, F, P, M, W = hp["n_embd"], hp["n_ff"], hp["patch_size"], hp["spatial_merge_size"], hp["proj_dim"]
    t = [("v.patch_embd.weight", (P, P, 3, E), "conv"), ("v.pre_ln.weight", (E,), "normw")]
    for i in range(hp["n_layer"]):
        b = f"v.blk.{i}."
        t += [(b + "ln1.weight", (E,), "normw")]
        t += [(b + m + ".weight", (E, E), "mat") for m in ("attn_q", "attn_k", "attn_v", "attn_out")]
        t += [(b + "ln2.weight", (E,), "normw"), (b + "ffn_gate.weight", (E, F), "mat"),
              (b + "ffn_up.weight", (E, F), "mat"), (b + "ffn_down.weight", (F, E), "mat")]
    t += [("mm.input_norm.weight", (E,), "normw"), ("mm.patch_merger.weight", (E * M * M, E), "mat"),
          ("mm.1.weight", (E, W), "mat"), ("mm.1.bias", (W,), "bias"),
          ("mm.2.weight", (W, W), "mat"), ("mm.2.bias", (W,), "bias"),
          ("v.token_embd.img_break", (W,), "bias")]
    return t


def tensors_gemma4v(hp):
    E, F, P, d = hp["n_embd"], hp["n_ff"], hp["patch_size"], hp["n_embd"] // hp["n_head"]
    t = [("v.patch_embd.weight", (P, P, 3, E), "conv"), ("v.position_embd.weight", (E, hp["pos_size"], 2), "pos")]
    for i in range(hp["n_layer"]):
        b = f"v.blk.{i}."
        t += [(b + "ln1.weight", (E,), "normw")]
        t += [(b + m + ".weight", (E, E), "mat") for m in ("attn_q", "attn_k", "attn_v")]
        t += [(b + "attn_q_norm.weight", (d,), "normw"), (b + "attn_k_norm.weight", (d,), "normw"),
              (b + "attn_out.weight", (E, E), "mat"), (b + "attn_post_norm.weight", (E,), "normw"),
              (b + "ln2.weight", (E,), "normw"), (b + "ffn_gate.weight", (E, F), "mat"),
              (b + "ffn_up.weight", (E, F), "mat"), (b + "ffn_down.weight", (F, E), "mat"),
              (b + "ffn_post_norm.weight", (E,), "normw"), (b + "out_scale.weight", (1,), "scalar:0.9")]
    # attn_q's input clamp leaves k's and v's (the same input) unclamped.
    t += [("v.blk.0.ffn_down.input_min", (1,), "scalar:-0.6"), ("v.blk.0.ffn_down.input_max", (1,), "scalar:0.6"),
          ("v.blk.1.attn_q.input_min", (1,), "scalar:-1.2"), ("v.blk.1.attn_q.input_max", (1,), "scalar:1.2"),
          ("v.std_bias", (E,), "bias"), ("v.std_scale", (E,), "normw"),
          ("mm.input_projection.weight", (E, hp["proj_dim"]), "proj"),
          ("mm.input_projection.output_min", (1,), "scalar:-2.0"), ("mm.input_projection.output_max", (1,), "scalar:2.0")]
    return t


def tensors_qwen25vl(hp):
    """clip.cpp's qwen25vl layout: two bias-free patch kernels (the temporal pair), RMS norms
    (weights only), q/k/v/out and the SiLU-gated FFN with biases, v.post_ln, mm.0 / mm.2."""
    E, F, P = hp["n_embd"], hp["n_ff"], hp["patch_size"]
    t = [("v.patch_embd.weight", (P, P, 3, E), "conv"), ("v.patch_embd.weight.1", (P, P, 3, E), "conv")]
    for i in range(hp["n_layer"]):
        b = f"v.blk.{i}."
        t += [(b + "ln1.weight", (E,), "normw")]
        for m in ("attn_q", "attn_k", "attn_v", "attn_out"):
            t += [(b + m + ".weight", (E, E), "mat"), (b + m + ".bias", (E,), "bias")]
        t += [(b + "ln2.weight", (E,), "normw")]
        for m, ne in (("ffn_gate", (E, F)), ("ffn_up", (E, F)), ("ffn_down", (F, E))):
            t += [(b + m + ".weight", ne, "mat"), (b + m + ".bias", (ne[1],), "bias")]
    M = 4 * E  # a 2 x 2 block's four rows
    t += [("v.post_ln.weight", (E,), "normw"), ("mm.0.weight", (M, M), "mat"), ("mm.0.bias", (M,), "bias"),
          ("mm.2.weight", (M, hp["proj_dim"]), "mat"), ("mm.2.bias", (hp["proj_dim"],), "bias")]
    return t


def tensors_qwen3vl(hp):
    """The converter's Qwen3-VL layout (conversion/qwen3vl.py, clip.cpp): the temporal pair of patch
    kernels with one bias, the position table, LayerNorms with biases, attn_qkv and the GELU MLP
    with biases, v.post_ln, mm.0 / mm.2, and v.deepstack.N.{norm,fc1,fc2} for the listed blocks."""
    E, F, P = hp["n_embd"], hp["n_ff"], hp["patch_size"]
    n_pos = (hp["image_size"] // P) ** 2
    t = [("v.patch_embd.weight", (P, P, 3, E), "conv"), ("v.patch_embd.weight.1", (P, P, 3, E), "conv"),
         ("v.patch_embd.bias", (E,), "bias"), ("v.position_embd.weight", (E, n_pos), "pos")]
    for i in range(hp["n_layer"]):
        b = f"v.blk.{i}."
        t += [(b + "ln1.weight", (E,), "normw"), (b + "ln1.bias", (E,), "bias"),
              (b + "attn_qkv.weight", (E, 3 * E), "mat"), (b + "attn_qkv.bias", (3 * E,), "bias"),
              (b + "attn_out.weight", (E, E), "mat"), (b + "attn_out.bias", (E,), "bias"),
              (b + "ln2.weight", (E,), "normw"), (b + "ln2.bias", (E,), "bias"),
              (b + "ffn_up.weight", (E, F), "mat"), (b + "ffn_up.bias", (F,), "bias"),
              (b + "ffn_down.weight", (F, E), "mat"), (b + "ffn_down.bias", (E,), "bias")]
    M, W = 4 * E, hp["proj_dim"]  # a 2 x 2 block's four rows; the LM's width
    t += [("v.post_ln.weight", (E,), "normw"), ("v.post_ln.bias", (E,), "bias"),
          ("mm.0.weight", (M, M), "mat"), ("mm.0.bias", (M,), "bias"), ("mm.2.weight", (M, W), "mat"), ("mm.2.bias", (W,), "bias")]
    for i in hp.get("deepstack", []):
        d = f"v.deepstack.{i}."
        t += [(d + "norm.weight", (M,), "normw"), (d + "norm.bias", (M,), "bias"), (d + "fc1.weight", (M, M), "mat"),
              (d + "fc1.bias", (M,), "bias"), (d + "fc2.weight", (M, W), "mat"), (d + "fc2.bias", (W,), "bias")]
    return t


def tensors(hp):
    """(name, ne (ggml order), kind): kind is 'mat' (a product's weight), 'conv', 'proj', or 'vec'."""
    if hp["projector"] == "qwen2.5vl_merger":
        return tensors_qwen25vl(hp)
    if hp["projector"] == "qwen3vl_merger":
        return tensors_qwen3vl(hp)
    if hp["projector"] == "gemma4v":
        return tensors_gemma4v(hp)
    if hp["projector"] == "pixtral":
        return tensors_pixtral(hp)
    E, F, P = hp["n_embd"], hp["n_ff"], hp["patch_size"]
    n_pos = (hp["image_size"] // P) ** 2
    t = [("v.patch_embd.weight", (P, P, 3, E), "conv"), ("v.patch_embd.bias", (E,), "bias"),
         ("v.position_embd.weight", (E, n_pos), "pos")]
    for i in range(hp["n_layer"]):
        b = f"v.blk.{i}."
        t += [(b + "ln1.weight", (E,), "normw"), (b + "ln1.bias", (E,), "bias")]
        for m in ("attn_q", "attn_k", "attn_v", "attn_out"):
            t += [(b + m + ".weight", (E, E), "mat"), (b + m + ".bias", (E,), "bias")]
        t += [(b + "ln2.weight", (E,), "normw"), (b + "ln2.bias", (E,), "bias"),
              (b + "ffn_up.weight", (E, F), "mat"), (b + "ffn_up.bias", (F,), "bias"),
              (b + "ffn_down.weight", (F, E), "mat"), (b + "ffn_down.bias", (E,), "bias")]
    t += [("v.post_ln.weight", (E,), "normw"), ("v.post_ln.bias", (E,), "bias")]
    if hp["projector"] == "lfm2":
        s, H = hp["scale_factor"], hp["mm_hidden"]
        t += [("mm.input_norm.weight", (E * s * s,), "normw"), ("mm.input_norm.bias", (E * s * s,), "bias"),
              ("mm.1.weight", (E * s * s, H), "mat"), ("mm.1.bias", (H,), "bias"),
              ("mm.2.weight", (H, hp["proj_dim"]), "mat"), ("mm.2.bias", (hp["proj_dim"],), "bias")]
    elif hp["projector"] == "idefics3":
        s = hp["scale_factor"]
        t += [("mm.model.fc.weight", (E * s * s, hp["proj_dim"]), "mat")]
    else:
        t += [("mm.soft_emb_norm.weight", (E,), "normw"), ("mm.input_projection.weight", (hp["proj_dim"], E), "proj")]
    return t


def values(kind, ne, rng):
    shape = tuple(reversed(ne))
    if kind.startswith("scalar:"):
        return np.full(shape, float(kind.split(":")[1]), dtype=np.float32)
    if kind == "normw":
        return (1.0 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
    if kind == "bias":
        return (0.05 * rng.standard_normal(shape)).astype(np.float32)
    if kind == "pos":
        return (0.5 * rng.standard_normal(shape)).astype(np.float32)
    fan_in = ne[0] if kind != "conv" else ne[0] * ne[1] * ne[2]
    return (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)


def write(path, hp, variant, seed, audio_tower=False):
    rng = np.random.default_rng(seed)  # the same values in every variant
    w = gguf.GGUFWriter(path, "clip")
    if audio_tower:  # as Gemma 4's files: synth_audio_mmproj.py's gemma4a tower beside the vision one
        w.add_string("clip.audio.projector_type", "gemma4a")
        synth_audio_mmproj.gemma4a_tower(w, synth_audio_mmproj.HP_GEMMA4A, variant, seed)
    w.add_string("general.name", f"zerfoo synthetic {hp['projector']} mmproj ({variant})")
    # Two towers: each its own type key (libmtmd takes clip.projector_type for both when present).
    w.add_string("clip.vision.projector_type" if audio_tower else "clip.projector_type", hp["projector"])
    w.add_bool("clip.has_vision_encoder", True)
    w.add_bool("clip.use_silu" if hp["projector"] in ("pixtral", "qwen2.5vl_merger") else "clip.use_gelu", True)
    w.add_uint32("clip.vision.image_size", hp["image_size"])
    w.add_uint32("clip.vision.patch_size", hp["patch_size"])
    w.add_uint32("clip.vision.embedding_length", hp["n_embd"])
    w.add_uint32("clip.vision.feed_forward_length", hp["n_ff"])
    w.add_uint32("clip.vision.block_count", hp["n_layer"])
    w.add_uint32("clip.vision.projection_dim", hp["proj_dim"])
    w.add_uint32("clip.vision.attention.head_count", hp["n_head"])
    w.add_float32("clip.vision.attention.layer_norm_epsilon", hp["eps"])
    if "scale_factor" in hp:
        w.add_uint32("clip.vision.projector.scale_factor", hp["scale_factor"])
    if "spatial_merge_size" in hp:
        w.add_uint32("clip.vision.spatial_merge_size", hp["spatial_merge_size"])
    if "deepstack" in hp:  # as the converter writes it (clip.cpp counts the tensors instead)
        w.add_array("clip.vision.is_deepstack_layers", [i in hp["deepstack"] for i in range(hp["n_layer"])])
    if "wa_pattern" in hp:
        w.add_uint32("clip.vision.n_wa_pattern", hp["wa_pattern"])
    if "preproc_image_size" in hp:
        w.add_uint32("clip.vision.preproc_image_size", hp["preproc_image_size"])
    # gemma4v: Gemma 4's processor leaves pixels in [0, 1] (the graph scales them to [-1, 1]).
    g4 = hp["projector"] == "gemma4v"
    w.add_array("clip.vision.image_mean", [0.0] * 3 if g4 else [0.5] * 3)
    w.add_array("clip.vision.image_std", [1.0] * 3 if g4 else [0.5] * 3)
    for name, ne, kind in tensors(hp):
        data = values(kind, ne, rng)
        big = kind in ("mat", "conv", "proj")
        if variant == "f16" and big or variant == "q8_0" and kind in ("conv", "proj"):
            w.add_tensor(name, data.astype(np.float16))
        elif variant == "q8_0" and kind == "mat":
            q = gguf.quants.quantize(data, Q.Q8_0)
            w.add_tensor(name, q, raw_shape=q.shape, raw_dtype=Q.Q8_0)
        else:
            w.add_tensor(name, data)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"{path}: {os.path.getsize(path) >> 10} KiB")


def write_vlm_lm(src, path, seed, added=VLM_TOKENS, arch_as=None):
    """src (SmolLM2) with `added` appended: tokens, types, vocab size, token_embd rows; with
    arch_as the same model under another general.architecture (its `<arch>.` keys renamed)."""
    r = gguf.GGUFReader(src)
    arch = bytes(r.fields["general.architecture"].parts[-1]).decode()
    w = gguf.GGUFWriter(path, arch_as or arch)
    n_old = len(r.fields["tokenizer.ggml.tokens"].data)
    for name, f in r.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        vt = f.types[0]
        if arch_as and name.startswith(arch + "."):
            name = arch_as + name[len(arch):]
        if name == "tokenizer.ggml.tokens":
            w.add_array(name, [bytes(f.parts[i]).decode() for i in f.data] + added)
        elif name == "tokenizer.ggml.token_type":
            w.add_array(name, [int(f.parts[i][0]) for i in f.data] + [int(gguf.TokenType.CONTROL)] * len(added))
        elif name == f"{arch_as or arch}.vocab_size":
            w.add_uint32(name, n_old + len(added))
        elif vt == gguf.GGUFValueType.ARRAY:
            sub = f.types[1]
            if sub == gguf.GGUFValueType.STRING:
                w.add_array(name, [bytes(f.parts[i]).decode() for i in f.data])
            else:
                w.add_array(name, [f.parts[i].tolist()[0] for i in f.data])
        elif vt == gguf.GGUFValueType.STRING:
            w.add_string(name, bytes(f.parts[-1]).decode())
        else:
            w.add_key_value(name, f.parts[-1].tolist()[0], vt)
    rng = np.random.default_rng(seed)
    for t in r.tensors:
        data = np.array(t.data)
        if t.name == "token_embd.weight":
            # Rows of existing tokens (ids past the control tokens) for the new ones.
            src_rows = rng.integers(100, n_old, size=len(added))
            data = np.concatenate([data, data[src_rows]], axis=0)
        w.add_tensor(t.name, data, raw_shape=data.shape, raw_dtype=t.tensor_type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"{path}: {os.path.getsize(path) >> 20} MiB")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--seed", type=int, default=46)
    ap.add_argument("--bench", type=int, default=0, metavar="LAYERS")
    ap.add_argument("--lm", metavar="SMOLLM2.gguf", help="also write smollm2-vlm.gguf from this file")
    ap.add_argument("--lfm2-lm", metavar="LFM2.gguf", help="only write lfm2-vl.gguf: this file with LFM2-VL's image tokens")
    ap.add_argument("--qwen-vl-lm", nargs=2, metavar=("QWENVL.gguf", "OUT.gguf"),
                    help="only write OUT_DIR/OUT.gguf: this file with Qwen-VL's vision tokens")
    a = ap.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    if a.lfm2_lm:
        write_vlm_lm(a.lfm2_lm, os.path.join(a.out_dir, "lfm2-vl.gguf"), a.seed, LFM2_TOKENS)
        return
    if a.qwen_vl_lm:
        write_vlm_lm(a.qwen_vl_lm[0], os.path.join(a.out_dir, a.qwen_vl_lm[1]), a.seed, QWEN_VL_TOKENS)
        return
    if a.bench:
        hp = dict(HP, n_embd=1152, n_ff=4304, n_head=16, n_layer=a.bench)
        write(os.path.join(a.out_dir, f"mmproj-gemma3-4b-{a.bench}l-f16.gguf"), hp, "f16", a.seed)
        return
    for v in ("f32", "f16", "q8_0"):
        write(os.path.join(a.out_dir, f"mmproj-gemma3-{v}.gguf"), HP, v, a.seed)
    for v in ("f16", "q8_0"):
        write(os.path.join(a.out_dir, f"mmproj-idefics3-{v}.gguf"), HP_IDEFICS3, v, a.seed)
    for v in ("f32", "f16", "q8_0"):
        write(os.path.join(a.out_dir, f"mmproj-gemma4v-{v}.gguf"), HP_GEMMA4V, v, a.seed)
    write(os.path.join(a.out_dir, "mmproj-gemma4v-av-f16.gguf"), HP_GEMMA4V, "f16", a.seed, audio_tower=True)
    for v in ("f32", "f16", "q8_0"):
        write(os.path.join(a.out_dir, f"mmproj-pixtral-{v}.gguf"), HP_PIXTRAL, v, a.seed)
    for v in ("f32", "f16", "q8_0"):
        write(os.path.join(a.out_dir, f"mmproj-qwen25vl-{v}.gguf"), HP_QWEN25VL, v, a.seed)
    for v in ("f32", "f16", "q8_0"):
        write(os.path.join(a.out_dir, f"mmproj-qwen3vl-{v}.gguf"), HP_QWEN3VL, v, a.seed)
    for v in ("f16", "q8_0"):
        write(os.path.join(a.out_dir, f"mmproj-qwen35-{v}.gguf"), HP_QWEN35, v, a.seed)
    for v in ("f32", "f16", "q8_0"):
        write(os.path.join(a.out_dir, f"mmproj-lfm2-{v}.gguf"), HP_LFM2, v, a.seed)
    if a.lm:
        write_vlm_lm(a.lm, os.path.join(a.out_dir, "smollm2-vlm.gguf"), a.seed)
        write_vlm_lm(a.lm, os.path.join(a.out_dir, "smollm2-pixtral.gguf"), a.seed, PIXTRAL_TOKENS)
        # The same under mistral3 (Mistral Small 3.1 / 3.2's language model: llama blocks).
        write_vlm_lm(a.lm, os.path.join(a.out_dir, "mistral3-pixtral.gguf"), a.seed, PIXTRAL_TOKENS, arch_as="mistral3")


if __name__ == "__main__":
    main()
