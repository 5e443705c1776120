#!/usr/bin/env python3
"""Writes GGUF models with random weights in the real models' shapes and quant mixes, for the
GPU parity tests and benchmarks (tests/gpu, bench/gpu_bench.sh): no large download is needed on
the GPU machine, and the CPU engine is the reference there.

  scripts/synth_models.py OUT_DIR [--models gemma3-270m,smollm2-135m,gemma3-1b] [--seed N]
                                  [--from-dir ~/.cache/zerfoo/models]
  scripts/synth_models.py --families OUT_DIR [--only llama,qwen3,...] [--vocab-dir DIR]
                                  [--gemma-vocab FILE]

--families writes the model-family files of the golden tests instead (scripts/synth_families.py).

When the real file of a model is in --from-dir, its metadata (tokenizer included) and its
tensor directory (names, shapes, types) are copied exactly and only the data is random;
otherwise a built-in spec gives the shapes and the Q4_K_M / Q4_1 mix (llama.cpp's rules: K
quants fall back to Q5_0/Q8_0 when a row is not a multiple of 256) and a synthetic SPM vocab.

Random blocks: random quants with scale fields chosen so weights are ~N(0, 0.03)-sized and norm
weights are ~1, so activations stay finite through every layer (random F16 scale bytes could be
Inf/NaN). Output: OUT_DIR/<name>.synth.gguf (names tests/gpu/parity_test.cpp expects).
"""
import argparse
import os
import sys

import numpy as np

try:
    import gguf
except ImportError:
    sys.exit("synth_models.py needs the gguf package: python3 -m pip install gguf numpy")

Q = gguf.GGMLQuantizationType

# name -> (real file name, builder of the built-in spec)
REAL = {
    "gemma3-270m": "gemma-3-270m-q4_k_m.gguf",
    "smollm2-135m": "smollm2-135m-instruct-q4_1.gguf",
    "gemma3-1b": "gemma-3-1b-it-q4_k_m.gguf",
}
OUT = {"gemma3-270m": "gemma3-270m-q4_k_m.synth.gguf", "smollm2-135m": "smollm2-135m-q4_1.synth.gguf",
       "gemma3-1b": "gemma3-1b-q4_k_m.synth.gguf"}

HPARAMS = {
    # arch, n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, n_vocab, ctx, rope base, extra
    "gemma3-270m": dict(arch="gemma3", n_embd=640, n_layer=18, n_head=4, n_kv=1, hd=256, n_ff=2048, n_vocab=262144,
                        ctx=32768, rope=1e6, eps=1e-6, window=512, mix="Q4_K_M"),
    "gemma3-1b": dict(arch="gemma3", n_embd=1152, n_layer=26, n_head=4, n_kv=1, hd=256, n_ff=6912, n_vocab=262144,
                      ctx=32768, rope=1e6, eps=1e-6, window=512, mix="Q4_K_M"),
    "smollm2-135m": dict(arch="llama", n_embd=576, n_layer=30, n_head=9, n_kv=3, hd=64, n_ff=1536, n_vocab=49152,
                         ctx=8192, rope=1e5, eps=1e-5, window=0, mix="Q4_1"),
}


def more_bits(i, n):
    """llama.cpp's use_more_bits: the first and last eighth of the layers, and every third."""
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def fallback(t, n_in):
    """K quants need rows that are multiples of 256; llama.cpp falls back as below."""
    if n_in % 256 == 0:
        return t
    return {Q.Q4_K: Q.Q5_0, Q.Q5_K: Q.Q5_1, Q.Q6_K: Q.Q8_0}.get(t, t)


def builtin_tensors(h):
    """[(name, (ne0, ne1...), type)] of the built-in spec."""
    E, L, hd, F = h["n_embd"], h["n_layer"], h["hd"], h["n_ff"]
    qd, kd = h["n_head"] * hd, h["n_kv"] * hd
    km = h["mix"] == "Q4_K_M"
    base = Q.Q4_K if km else Q.Q4_1
    t = [("token_embd.weight", (E, h["n_vocab"]), fallback(Q.Q6_K, E) if km else Q.Q8_0),
         ("output_norm.weight", (E,), Q.F32)]
    for i in range(L):
        p = f"blk.{i}."
        v = fallback(Q.Q6_K, E) if km and more_bits(i, L) else fallback(base, E)
        down = fallback(Q.Q6_K, F) if km and more_bits(i, L) else fallback(base, F)
        t += [(p + "attn_norm.weight", (E,), Q.F32), (p + "attn_q.weight", (E, qd), fallback(base, E)),
              (p + "attn_k.weight", (E, kd), fallback(base, E)), (p + "attn_v.weight", (E, kd), v),
              (p + "attn_output.weight", (qd, E), fallback(base, qd)), (p + "ffn_norm.weight", (E,), Q.F32),
              (p + "ffn_gate.weight", (E, F), fallback(base, E)), (p + "ffn_up.weight", (E, F), fallback(base, E)),
              (p + "ffn_down.weight", (F, E), down)]
        if h["arch"] == "gemma3":
            t += [(p + "attn_q_norm.weight", (hd,), Q.F32), (p + "attn_k_norm.weight", (hd,), Q.F32),
                  (p + "post_attention_norm.weight", (E,), Q.F32), (p + "post_ffw_norm.weight", (E,), Q.F32)]
    return t


def builtin_metadata(w, h):
    a = h["arch"]
    w.add_name(f"synthetic {a}")
    w.add_uint32(f"{a}.context_length", h["ctx"])
    w.add_uint32(f"{a}.embedding_length", h["n_embd"])
    w.add_uint32(f"{a}.block_count", h["n_layer"])
    w.add_uint32(f"{a}.feed_forward_length", h["n_ff"])
    w.add_uint32(f"{a}.attention.head_count", h["n_head"])
    w.add_uint32(f"{a}.attention.head_count_kv", h["n_kv"])
    w.add_float32(f"{a}.attention.layer_norm_rms_epsilon", h["eps"])
    w.add_float32(f"{a}.rope.freq_base", h["rope"])
    if a == "gemma3":
        w.add_uint32(f"{a}.attention.key_length", h["hd"])
        w.add_uint32(f"{a}.attention.value_length", h["hd"])
        w.add_uint32(f"{a}.attention.sliding_window", h["window"])
    else:
        w.add_uint32(f"{a}.rope.dimension_count", h["hd"])
        w.add_uint32(f"{a}.vocab_size", h["n_vocab"])
    w.add_uint32("general.file_type", 15 if h["mix"] == "Q4_K_M" else 3)
    # A synthetic SPM vocab: specials, the 256 byte tokens, then plain pieces.
    n = h["n_vocab"]
    tokens = ["<pad>", "<eos>", "<bos>", "<unk>"] + [f"<0x{b:02X}>" for b in range(256)]
    tokens += [f"\u2581t{i}" for i in range(n - len(tokens))]
    types = [3, 3, 3, 2] + [6] * 256 + [1] * (n - 260)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores([-float(i) for i in range(n)])
    w.add_token_types(types)
    w.add_bos_token_id(2)
    w.add_eos_token_id(1)
    w.add_unk_token_id(3)
    w.add_pad_token_id(0)
    w.add_add_bos_token(True)


def copy_metadata(w, r):
    for key, f in r.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        vtype = f.types[0]
        sub = f.types[1] if vtype == gguf.GGUFValueType.ARRAY and len(f.types) > 1 else None
        w.add_key_value(key, f.contents(), vtype, sub)


def random_data(ttype, ne, rng, name):
    """Random bytes of the tensor in GGUF layout (uint8), or float32 for F32 tensors."""
    n = int(np.prod(ne))
    if ttype == Q.F32:
        if name.endswith("norm.weight"):
            return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32).reshape(tuple(reversed(ne)))
        return (0.02 * rng.standard_normal(n)).astype(np.float32).reshape(tuple(reversed(ne)))
    if ttype == Q.F16:
        return (0.03 * rng.standard_normal(n)).astype(np.float16).reshape(tuple(reversed(ne)))
    block, size = gguf.GGML_QUANT_SIZES[ttype]
    nb = n // block
    b = rng.integers(0, 256, size=(nb, size), dtype=np.uint8)

    def f16(col, scale, sign=1.0):
        v = (sign * scale * rng.uniform(0.5, 1.5, nb)).astype(np.float16)
        b[:, col:col + 2] = v.view(np.uint8).reshape(nb, 2)

    if ttype in (Q.Q4_0, Q.Q5_0):
        f16(0, 0.006 if ttype == Q.Q4_0 else 0.003)
    elif ttype == Q.Q8_0:
        f16(0, 0.0004)
    elif ttype in (Q.Q4_1, Q.Q5_1):
        f16(0, 0.006 if ttype == Q.Q4_1 else 0.003)
        f16(2, 0.045, -1.0)  # the min: centers the unsigned quants around 0
    elif ttype in (Q.Q4_K, Q.Q5_K):
        f16(0, 2e-4 if ttype == Q.Q4_K else 1e-4)
        f16(2, 2e-4)
    elif ttype == Q.Q6_K:
        f16(208, 2.5e-5)
    else:
        raise ValueError(f"{name}: no random generator for {ttype.name}")
    shape = list(reversed(ne))
    shape[-1] = shape[-1] // block * size
    return b.reshape(shape)


def synth(name, out_dir, from_dir, seed):
    rng = np.random.default_rng(seed)
    h = HPARAMS[name]
    real = os.path.join(from_dir, REAL[name]) if from_dir else ""
    path = os.path.join(out_dir, OUT[name])
    if real and os.path.exists(real):
        r = gguf.GGUFReader(real)
        arch = r.fields["general.architecture"].contents()
        specs = [(t.name, tuple(int(x) for x in t.shape), t.tensor_type) for t in r.tensors]
        w = gguf.GGUFWriter(path, arch)
        copy_metadata(w, r)
        src = "copied from " + real
    else:
        w = gguf.GGUFWriter(path, h["arch"])
        builtin_metadata(w, h)
        specs = builtin_tensors(h)
        src = "built-in spec"
    for tname, ne, ttype in specs:
        data = random_data(ttype, ne, rng, tname)
        if ttype in (Q.F32, Q.F16):
            w.add_tensor(tname, data)
        else:
            w.add_tensor(tname, data, raw_dtype=ttype)  # shape inferred from the byte rows
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"{path}: {len(specs)} tensors, {os.path.getsize(path) >> 20} MiB ({src})")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir", nargs="?")
    ap.add_argument("--families", metavar="OUT_DIR", help="write the family files (synth_families.py)")
    ap.add_argument("--only", default="", help="with --families: a comma-separated subset")
    ap.add_argument("--vocab-dir", default=os.path.expanduser(os.environ.get(
        "ZERFOO_VOCAB_DIR", "~/.cache/zerfoo/reference/vocab-0.3.36")),
                    help="with --families: llama.cpp's models/ggml-vocab-*.gguf")
    ap.add_argument("--gemma-vocab", default=os.path.expanduser(os.path.join(
        os.environ.get("ZERFOO_MODELS", "~/.cache/zerfoo/models"), "gemma-3-270m-q4_k_m.gguf")),
                    help="with --families: the GGUF whose tokenizer gemma2 uses")
    ap.add_argument("--quants", default="f32,q8_0,q4", help="with --families: which variants to write")
    ap.add_argument("--models", default="gemma3-270m,smollm2-135m,gemma3-1b")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--from-dir", default=os.path.expanduser(os.environ.get("ZERFOO_MODELS", "~/.cache/zerfoo/models")))
    a = ap.parse_args()
    if a.families:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import synth_families
        synth_families.main(a.families, a.only, a.vocab_dir, a.gemma_vocab, a.quants.split(","))
        return
    if not a.out_dir:
        ap.error("OUT_DIR is required (or --families OUT_DIR)")
    os.makedirs(a.out_dir, exist_ok=True)
    for i, name in enumerate(a.models.split(",")):
        if name not in HPARAMS:
            sys.exit(f"unknown model {name!r}; known: {', '.join(HPARAMS)}")
        synth(name, a.out_dir, a.from_dir, a.seed + i)


if __name__ == "__main__":
    main()
