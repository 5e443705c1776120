#!/usr/bin/env python3
"""Writes random-weight Gemma-3-shaped vision projector files (mmproj GGUF, clip.cpp's layout):
the real geometry (896 px images, 14 px patches, 64 x 64 patches pooled 4 x 4 into 256 tokens,
projection to Gemma 3 270M's 640-wide embeddings) with a small SigLIP encoder (width 64, 2
blocks, 4 heads, FFN 128), so that a test encodes an image in well under a second.

  scripts/synth_mmproj.py OUT_DIR [--seed N]
  scripts/synth_mmproj.py OUT_DIR --bench LAYERS   (timing only: Gemma 3 4B's encoder widths,
      1152 wide, FFN 4304, 16 heads, LAYERS blocks, F16: mmproj-gemma3-4b-LAYERSl-f16.gguf)

Writes OUT_DIR/mmproj-gemma3-{f32,f16,q8_0}.gguf: F32 everywhere; F16 matrices (the patch
convolution, q/k/v/out, FFN, input projection) with F32 norms, biases and positions; Q8_0 block
matrices (q/k/v/out, FFN) with the F16 patch convolution and input projection (clip.cpp
transposes the projection and convolves the patches, which it cannot do on Q8_0).
The pinned gguf/numpy of scripts/requirements-synth.txt (tests/vision/make_models.sh).
"""
import argparse
import os

import numpy as np
import gguf

Q = gguf.GGMLQuantizationType
HP = dict(n_embd=64, n_ff=128, n_layer=2, n_head=4, image_size=896, patch_size=14, proj_dim=640, eps=1e-6)


def tensors(hp):
    """(name, ne (ggml order), kind): kind is 'mat' (a product's weight), 'conv', 'proj', or 'vec'."""
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
    t += [("v.post_ln.weight", (E,), "normw"), ("v.post_ln.bias", (E,), "bias"),
          ("mm.soft_emb_norm.weight", (E,), "normw"), ("mm.input_projection.weight", (hp["proj_dim"], E), "proj")]
    return t


def values(kind, ne, rng):
    shape = tuple(reversed(ne))
    if kind == "normw":
        return (1.0 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
    if kind == "bias":
        return (0.05 * rng.standard_normal(shape)).astype(np.float32)
    if kind == "pos":
        return (0.5 * rng.standard_normal(shape)).astype(np.float32)
    fan_in = ne[0] if kind != "conv" else ne[0] * ne[1] * ne[2]
    return (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)


def write(path, hp, variant, seed):
    rng = np.random.default_rng(seed)  # the same values in every variant
    w = gguf.GGUFWriter(path, "clip")
    w.add_string("general.name", f"zerfoo synthetic gemma3 mmproj ({variant})")
    w.add_string("clip.projector_type", "gemma3")
    w.add_bool("clip.has_vision_encoder", True)
    w.add_bool("clip.use_gelu", True)
    w.add_uint32("clip.vision.image_size", hp["image_size"])
    w.add_uint32("clip.vision.patch_size", hp["patch_size"])
    w.add_uint32("clip.vision.embedding_length", hp["n_embd"])
    w.add_uint32("clip.vision.feed_forward_length", hp["n_ff"])
    w.add_uint32("clip.vision.block_count", hp["n_layer"])
    w.add_uint32("clip.vision.projection_dim", hp["proj_dim"])
    w.add_uint32("clip.vision.attention.head_count", hp["n_head"])
    w.add_float32("clip.vision.attention.layer_norm_epsilon", hp["eps"])
    w.add_array("clip.vision.image_mean", [0.5, 0.5, 0.5])
    w.add_array("clip.vision.image_std", [0.5, 0.5, 0.5])
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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--seed", type=int, default=46)
    ap.add_argument("--bench", type=int, default=0, metavar="LAYERS")
    a = ap.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    if a.bench:
        hp = dict(HP, n_embd=1152, n_ff=4304, n_head=16, n_layer=a.bench)
        write(os.path.join(a.out_dir, f"mmproj-gemma3-4b-{a.bench}l-f16.gguf"), hp, "f16", a.seed)
        return
    for v in ("f32", "f16", "q8_0"):
        write(os.path.join(a.out_dir, f"mmproj-gemma3-{v}.gguf"), HP, v, a.seed)


if __name__ == "__main__":
    main()
