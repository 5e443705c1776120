#!/usr/bin/env python3
"""Random-weight GGUF files of embedding models in llama.cpp's exact layout, with the real
tokenizer, for the embedding goldens (tests/capi/embed_test.cpp, doc/embeddings.md):

  scripts/synth_embed.py OUT_DIR [--vocab-dir DIR]

  bert-f32.gguf, bert-q8_0.gguf   BGE-style BERT (pooling cls), the bert-bge WordPiece vocabulary
  bert-rank-f32.gguf              the same with a classification head (cls, cls.output; pooling rank)
  nomic-bert-f32.gguf             nomic-embed-text-style: fused attn_qkv, rope (neox), SwiGLU without
                                  biases, no position table (pooling mean)

  --bench: bert-base-q8_0.gguf and bert-base-f32.gguf in BERT-base's shape (12 layers, 768 wide,
  12 heads, FFN 3072: 110M parameters) for timing, never in the tests.

Weights and the GGUF writer come from scripts/synth_families.py (deterministic per file name).
"""
import argparse
import os
import struct
import sys
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import synth_families as sf  # noqa: E402

Q = sf.Q
# bge-micro-like but small: 2 layers, E 128, 4 heads, FFN 512, 512 positions, 2 token types.
H = dict(arch="bert", E=128, L=2, H=4, F=512, ctx=512, eps=1e-12)
BASE = dict(arch="bert", E=768, L=12, H=12, F=3072, ctx=512, eps=1e-12)


def kv_bool(key, v):
    return sf.gguf_str(key) + struct.pack("<IB", 7, 1 if v else 0)


def specs(quant, n_vocab, rank, nomic=False):
    E, L, F = H["E"], H["L"], H["F"]

    def mat(name, n_in, n_out, sigma):
        return (name, (n_in, n_out), Q.F32 if quant == "f32" else Q.Q8_0, sigma)

    def vec(name, n, sigma=None):
        return (name, (n,), Q.F32, sigma)

    # Tables read by row (positions, token types) stay F32 as the converter writes them.
    s = [mat("token_embd.weight", E, n_vocab, 0.05), (("token_types.weight"), (E, 2), Q.F32, 0.05)]
    if not nomic:
        s.append(("position_embd.weight", (E, H["ctx"]), Q.F32, 0.05))
    s += [vec("token_embd_norm.weight", E), vec("token_embd_norm.bias", E, 0.05)]
    if nomic:
        for i in range(L):
            p = f"blk.{i}."
            s += [mat(p + "attn_qkv.weight", E, 3 * E, 0.08), mat(p + "attn_output.weight", E, E, 0.05),
                  vec(p + "attn_output_norm.weight", E), vec(p + "attn_output_norm.bias", E, 0.05),
                  mat(p + "ffn_up.weight", E, F, 0.05), mat(p + "ffn_gate.weight", E, F, 0.05),
                  mat(p + "ffn_down.weight", F, E, 0.05),
                  vec(p + "layer_output_norm.weight", E), vec(p + "layer_output_norm.bias", E, 0.05)]
        return s
    for i in range(L):
        p = f"blk.{i}."
        for t in ("q", "k", "v"):
            s += [mat(p + f"attn_{t}.weight", E, E, 0.08), vec(p + f"attn_{t}.bias", E, 0.05)]
        s += [mat(p + "attn_output.weight", E, E, 0.05), vec(p + "attn_output.bias", E, 0.02),
              vec(p + "attn_output_norm.weight", E), vec(p + "attn_output_norm.bias", E, 0.05),
              mat(p + "ffn_up.weight", E, F, 0.05), vec(p + "ffn_up.bias", F, 0.05),
              mat(p + "ffn_down.weight", F, E, 0.05), vec(p + "ffn_down.bias", E, 0.02),
              vec(p + "layer_output_norm.weight", E), vec(p + "layer_output_norm.bias", E, 0.05)]
    if rank:
        s += [mat("cls.weight", E, E, 0.08), vec("cls.bias", E, 0.05),
              mat("cls.output.weight", E, 1, 0.2), vec("cls.output.bias", 1, 0.1)]
    return s


def metadata(quant, name, rank, nomic=False):
    a = "nomic-bert" if nomic else H["arch"]
    extra = [sf.kv_f32(f"{a}.rope.freq_base", 1000.0)] if nomic else []
    return extra + [sf.kv_str("general.architecture", a), sf.kv_str("general.name", f"zerfoo synthetic {name}"),
            sf.kv_u32(f"{a}.context_length", H["ctx"]), sf.kv_u32(f"{a}.embedding_length", H["E"]),
            sf.kv_u32(f"{a}.block_count", H["L"]), sf.kv_u32(f"{a}.feed_forward_length", H["F"]),
            sf.kv_u32(f"{a}.attention.head_count", H["H"]),
            sf.kv_f32(f"{a}.attention.layer_norm_epsilon", H["eps"]), kv_bool(f"{a}.attention.causal", False),
            sf.kv_u32(f"{a}.pooling_type", 1 if nomic else 4 if rank else 2),
            sf.kv_u32("general.file_type", sf.FILE_TYPE[quant])]


def synth(out_dir, name, quant, rank, tok, nomic=False):
    kv_raw, kv_count, n_vocab = tok
    fname = f"{name}-{quant}.gguf"
    path = os.path.join(out_dir, fname)
    rng = np.random.default_rng(zlib.crc32(fname.encode()))
    tensors = [(t, ne, ty, sf.random_tensor(rng, H, t, ne, ty, sigma))
               for t, ne, ty, sigma in specs(quant, n_vocab, rank, nomic)]
    sf.write_gguf(path + ".tmp", metadata(quant, name, rank, nomic), kv_raw, kv_count, tensors)
    os.replace(path + ".tmp", path)
    print(path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    ap.add_argument("--bench", action="store_true")
    ap.add_argument("--vocab-dir", default=os.path.expanduser("~/.cache/zerfoo/reference/vocab-0.3.36"))
    a = ap.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    tok = sf.read_tokenizer_kv(os.path.join(a.vocab_dir, "ggml-vocab-bert-bge.gguf"))
    if a.bench:
        H.update(BASE)
        synth(a.out_dir, "bert-base", "q8_0", False, tok)
        synth(a.out_dir, "bert-base", "f32", False, tok)
        return
    synth(a.out_dir, "bert", "f32", False, tok)
    synth(a.out_dir, "bert", "q8_0", False, tok)
    synth(a.out_dir, "bert-rank", "f32", True, tok)
    synth(a.out_dir, "nomic-bert", "f32", False, tok, nomic=True)


if __name__ == "__main__":
    main()
