#!/usr/bin/env python3
"""Random-weight GGUF files of embedding models in llama.cpp's exact layout, with the real
tokenizer, for the embedding goldens (tests/capi/embed_test.cpp, doc/embeddings.md):

  scripts/synth_embed.py OUT_DIR [--vocab-dir DIR]

  bert-{f32,q8_0,q4_0}.gguf       BGE-style BERT (pooling cls), the bert-bge WordPiece vocabulary
  bert-rank-f32.gguf              the same with a classification head (cls, cls.output; pooling rank)
  bert-rank-dropped-f32.gguf      the same file with trailing 1-dims dropped (llama-quantize's shapes)
  nomic-bert-{f32,q8_0,q4_0}.gguf nomic-embed-text-style: fused attn_qkv, rope (neox), SwiGLU without
                                  biases, no position table (pooling mean)
  modern-bert-{f32,q8_0,q4_0}.gguf ModernBERT-style: pre-LN without biases, fused attn_qkv, GeGLU from one
                                  ffn_up, 4 layers (0 and 3 global, 1 and 2 with a symmetric window of
                                  8 and their own rope base; pooling mean), bert-bge vocabulary

  qwen3-embed-{f32,q8_0,q4_0}.gguf Qwen3-Embedding-style: the qwen3 family file of synth_families.py
                                  with pooling last and the EOS the real tokenizer appends (qwen2
                                  vocabulary)
  qwen3-rank-f32.gguf             Qwen3-Reranker as the converter writes it: pooling rank, labels
                                  yes / no, a cls.output of two rows (the converter's yes / no rows
                                  of the vocabulary head), the rerank chat template
  gemma-embed-{f32,q8_0,q4_0}.gguf EmbeddingGemma-style (gemma-embedding): 6 gemma3 layers (5 with a
                                  symmetric window of 8), mean pooling, Dense projections dense_2 /
                                  dense_3; Gemma 3's tokenizer (--gemma-vocab; its 262k-row token
                                  table in Q8_0, read exactly by both sides)

  --bench: bert-base-q8_0.gguf and bert-base-f32.gguf in BERT-base's shape (12 layers, 768 wide,
  12 heads, FFN 3072: 110M parameters) and qwen3-0.6b-q8_0.gguf in Qwen3-Embedding-0.6B's
  (pooling last) for timing (bench/embed_bench.py), never in the tests.

Quantized files: every matrix in Q8_0 or Q4_0, 1-D tensors and the tables read by row
(positions, token types) F32 as llama-quantize leaves them; the Qwen3 / Gemma token tables stay
Q8_0 in every file. The 4-bit type is Q4_0, not Q4_K: Q4_K blocks rows of 256 and these
matrices have rows of 128 or 384 (llama-quantize would fall back to Q5_0 for them).

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
MAT_TYPE = {"f32": Q.F32, "q8_0": Q.Q8_0, "q4_0": Q.Q4_0}  # the type of every matrix of a file
# bge-micro-like but small: 2 layers, E 128, 4 heads, FFN 512, 512 positions, 2 token types.
H = dict(arch="bert", E=128, L=2, H=4, F=512, ctx=512, eps=1e-12)
BASE = dict(arch="bert", E=768, L=12, H=12, F=3072, ctx=512, eps=1e-12)


def kv_bool(key, v):
    return sf.gguf_str(key) + struct.pack("<IB", 7, 1 if v else 0)


def specs(quant, n_vocab, rank, nomic=False):
    E, L, F = H["E"], H["L"], H["F"]

    def mat(name, n_in, n_out, sigma):
        return (name, (n_in, n_out), MAT_TYPE[quant], sigma)

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


def kv_strs(key, values):
    return sf.gguf_str(key) + struct.pack("<IIQ", sf.T_ARR, sf.T_STR, len(values)) + b"".join(
        sf.gguf_str(v) for v in values)


QWEN3_RERANK_TEMPLATE = (
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct "
    "provided. Note that the answer can only be \"yes\" or \"no\".<|im_end|>\n<|im_start|>user\n<Instruct>: Given a "
    "web search query, retrieve relevant passages that answer the query\n<Query>: {query}\n<Document>: "
    "{document}<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n")


# Qwen3's layer layout (QK-norm, head dim 32 != E / H, GQA 3) at a small width.
QWEN3 = dict(sf.FAMILIES["qwen3"], E=128, H=6, Hkv=2, hd=32, F=384)


# Qwen3-Embedding-0.6B's shape (28 layers, 1024 wide, 16 / 8 heads of 128, FFN 3072), for timing.
QWEN3_06B = dict(sf.FAMILIES["qwen3"], E=1024, L=28, H=16, Hkv=8, hd=128, F=3072)


def synth_qwen3(out_dir, tok, rank, h=QWEN3, quant="f32", name=None):
    """Qwen3-Embedding (pooling last) or Qwen3-Reranker (pooling rank)."""
    kv_raw, kv_count, n_vocab = tok
    name = name or ("qwen3-rank" if rank else "qwen3-embed")
    fname = f"{name}-{quant}.gguf"
    path = os.path.join(out_dir, fname)
    rng = np.random.default_rng(zlib.crc32(fname.encode()))
    # The 152k-row token table in Q8_0 (read exactly by both sides; the vocabulary head it also
    # is plays no part in embeddings), the other matrices in the file's type, vectors F32.
    specs = [(t, ne, Q.Q8_0 if t == "token_embd.weight" else MAT_TYPE[quant] if len(ne) == 2 else ty, sigma)
             for t, ne, ty, sigma in sf.tensor_specs(h, n_vocab, "f32")]
    tensors = [(t, ne, ty, sf.random_tensor(rng, h, t, ne, ty, sigma)) for t, ne, ty, sigma in specs]
    kvs = sf.metadata(h, quant, name)
    if rank:
        # The converter's cls.output: rows "yes" then "no" of the vocabulary head, here F32 rows of
        # the same scale (their values do not matter, only that both sides read the same ones).
        tensors.append(("cls.output.weight", (h["E"], 2), Q.F32, 0.05 * rng.standard_normal((2, h["E"]), dtype=np.float32)))
        kvs += [sf.kv_u32("qwen3.pooling_type", 4), kv_strs("qwen3.classifier.output_labels", ["yes", "no"]),
                sf.kv_str("tokenizer.chat_template.rerank", QWEN3_RERANK_TEMPLATE)]
    else:
        kvs += [sf.kv_u32("qwen3.pooling_type", 3), kv_bool("tokenizer.ggml.add_eos_token", True)]
    sf.write_gguf(path + ".tmp", kvs, kv_raw, kv_count, tensors)
    os.replace(path + ".tmp", path)
    print(path)


GEMMA = dict(arch="gemma-embedding", E=128, L=6, H=4, Hkv=1, hd=64, F=384, dense=512, window=8, ctx=2048,
             eps=1e-6, base=1e6)


def spec_makers(quant):
    """Tensor spec builders of a file: mat(name, n_in, n_out, sigma) in the file's matrix type,
    vec(name, n) an F32 norm weight around 1."""
    def mat(name, n_in, n_out, sigma):
        return (name, (n_in, n_out), MAT_TYPE[quant], sigma)

    def vec(name, n):
        return (name, (n,), Q.F32, None)
    return mat, vec


def synth_gemma(out_dir, tok, quant="f32"):
    """EmbeddingGemma-style: gemma3 layers, bidirectional, Dense projections, pooling mean."""
    g = GEMMA
    kv_raw, kv_count, n_vocab = tok
    E, L, H, Hkv, hd, F, D = g["E"], g["L"], g["H"], g["Hkv"], g["hd"], g["F"], g["dense"]
    fname = f"gemma-embed-{quant}.gguf"
    path = os.path.join(out_dir, fname)
    rng = np.random.default_rng(zlib.crc32(fname.encode()))
    mat, vec = spec_makers(quant)
    specs = [("token_embd.weight", (E, n_vocab), Q.Q8_0, 0.05), vec("output_norm.weight", E),
             mat("dense_2.weight", E, D, 0.05), mat("dense_3.weight", D, E, 0.05)]
    for i in range(L):
        p = f"blk.{i}."
        specs += [vec(p + "attn_norm.weight", E), mat(p + "attn_q.weight", E, H * hd, 0.06),
                  mat(p + "attn_k.weight", E, Hkv * hd, 0.06), mat(p + "attn_v.weight", E, Hkv * hd, 0.05),
                  vec(p + "attn_q_norm.weight", hd), vec(p + "attn_k_norm.weight", hd),
                  mat(p + "attn_output.weight", H * hd, E, 0.04), vec(p + "post_attention_norm.weight", E),
                  vec(p + "ffn_norm.weight", E), mat(p + "ffn_gate.weight", E, F, 0.05),
                  mat(p + "ffn_up.weight", E, F, 0.05), mat(p + "ffn_down.weight", F, E, 0.05),
                  vec(p + "post_ffw_norm.weight", E)]
    tensors = [(t, ne, ty, sf.random_tensor(rng, g, t, ne, ty, sigma)) for t, ne, ty, sigma in specs]
    a = g["arch"]
    kvs = [sf.kv_str("general.architecture", a), sf.kv_str("general.name", "zerfoo synthetic gemma-embed"),
           sf.kv_u32(f"{a}.context_length", g["ctx"]), sf.kv_u32(f"{a}.embedding_length", E),
           sf.kv_u32(f"{a}.block_count", L), sf.kv_u32(f"{a}.feed_forward_length", F),
           sf.kv_u32(f"{a}.attention.head_count", H), sf.kv_u32(f"{a}.attention.head_count_kv", Hkv),
           sf.kv_u32(f"{a}.attention.key_length", hd), sf.kv_u32(f"{a}.attention.value_length", hd),
           sf.kv_f32(f"{a}.rope.freq_base", g["base"]), sf.kv_f32(f"{a}.attention.layer_norm_rms_epsilon", g["eps"]),
           sf.kv_u32(f"{a}.attention.sliding_window", g["window"]), sf.kv_u32(f"{a}.pooling_type", 1),
           sf.kv_u32(f"{a}.dense_2_feat_in", E), sf.kv_u32(f"{a}.dense_2_feat_out", D),
           sf.kv_u32(f"{a}.dense_3_feat_in", D), sf.kv_u32(f"{a}.dense_3_feat_out", E),
           sf.kv_u32("general.file_type", sf.FILE_TYPE[quant])]
    sf.write_gguf(path + ".tmp", kvs, kv_raw, kv_count, tensors)
    os.replace(path + ".tmp", path)
    print(path)


# ModernBERT's layer layout at a small width; window 8 so that the test texts cross it.
MODERN = dict(arch="modern-bert", E=128, L=4, H=4, F=256, ctx=512, eps=1e-5, base=160000.0, base_swa=10000.0,
              window=8)


def synth_modern_bert(out_dir, tok, quant="f32"):
    """ModernBERT-style (modern-bert): pre-LN without biases, fused QKV, GeGLU, global layer every 3rd."""
    g = MODERN
    kv_raw, kv_count, n_vocab = tok
    E, L, F = g["E"], g["L"], g["F"]
    fname = f"modern-bert-{quant}.gguf"
    path = os.path.join(out_dir, fname)
    rng = np.random.default_rng(zlib.crc32(fname.encode()))
    mat, vec = spec_makers(quant)
    specs = [mat("token_embd.weight", E, n_vocab, 0.05), vec("token_embd_norm.weight", E), vec("output_norm.weight", E)]
    for i in range(L):
        p = f"blk.{i}."
        if i > 0:  # the converter writes no attn_norm for layer 0 (the identity)
            specs.append(vec(p + "attn_norm.weight", E))
        specs += [mat(p + "attn_qkv.weight", E, 3 * E, 0.08), mat(p + "attn_output.weight", E, E, 0.05),
                  vec(p + "ffn_norm.weight", E), mat(p + "ffn_up.weight", E, 2 * F, 0.05),
                  mat(p + "ffn_down.weight", F, E, 0.05)]
    tensors = [(t, ne, ty, sf.random_tensor(rng, g, t, ne, ty, sigma)) for t, ne, ty, sigma in specs]
    a = g["arch"]
    kvs = [sf.kv_str("general.architecture", a), sf.kv_str("general.name", "zerfoo synthetic modern-bert"),
           sf.kv_u32(f"{a}.context_length", g["ctx"]), sf.kv_u32(f"{a}.embedding_length", E),
           sf.kv_u32(f"{a}.block_count", L), sf.kv_u32(f"{a}.feed_forward_length", F),
           sf.kv_u32(f"{a}.attention.head_count", g["H"]), sf.kv_f32(f"{a}.attention.layer_norm_epsilon", g["eps"]),
           kv_bool(f"{a}.attention.causal", False), sf.kv_f32(f"{a}.rope.freq_base", g["base"]),
           sf.kv_f32(f"{a}.rope.freq_base_swa", g["base_swa"]), sf.kv_u32(f"{a}.attention.sliding_window", g["window"]),
           sf.kv_u32(f"{a}.pooling_type", 1), sf.kv_u32("general.file_type", sf.FILE_TYPE[quant])]
    sf.write_gguf(path + ".tmp", kvs, kv_raw, kv_count, tensors)
    os.replace(path + ".tmp", path)
    print(path)


def synth(out_dir, name, quant, rank, tok, nomic=False, layout=None):
    """layout "dropped": the same file with trailing 1-dims dropped from every shape, as
    llama-quantize writes them (cls.output.weight [E, 1] as [E]); written as NAME-dropped-QUANT."""
    kv_raw, kv_count, n_vocab = tok
    fname = f"{name}-{quant}.gguf"
    rng = np.random.default_rng(zlib.crc32(fname.encode()))  # the same weights in either layout
    if layout:
        fname = f"{name}-{layout}-{quant}.gguf"
    path = os.path.join(out_dir, fname)
    tensors = [(t, sf.relaid(ne, layout) if layout else ne, ty, sf.random_tensor(rng, H, t, ne, ty, sigma))
               for t, ne, ty, sigma in specs(quant, n_vocab, rank, nomic)]
    sf.write_gguf(path + ".tmp", metadata(quant, name, rank, nomic), kv_raw, kv_count, tensors)
    os.replace(path + ".tmp", path)
    print(path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    ap.add_argument("--bench", action="store_true")
    ap.add_argument("--vocab-dir", default=os.path.expanduser("~/.cache/zerfoo/reference/vocab-0.3.36"))
    ap.add_argument("--gemma-vocab", help="a Gemma 3 GGUF (scripts/fetch_models.sh gemma3) for gemma-embed-f32")
    a = ap.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    tok = sf.read_tokenizer_kv(os.path.join(a.vocab_dir, "ggml-vocab-bert-bge.gguf"))
    if a.bench:
        H.update(BASE)
        synth(a.out_dir, "bert-base", "q8_0", False, tok)
        synth(a.out_dir, "bert-base", "f32", False, tok)
        synth_qwen3(a.out_dir, sf.read_tokenizer_kv(os.path.join(a.vocab_dir, "ggml-vocab-qwen2.gguf")), False,
                    QWEN3_06B, "q8_0", "qwen3-0.6b")
        return
    synth(a.out_dir, "bert", "f32", False, tok)
    synth(a.out_dir, "bert", "q8_0", False, tok)
    synth(a.out_dir, "bert", "q4_0", False, tok)
    synth(a.out_dir, "bert-rank", "f32", True, tok)
    synth(a.out_dir, "bert-rank", "f32", True, tok, layout="dropped")
    qwen_tok = sf.read_tokenizer_kv(os.path.join(a.vocab_dir, "ggml-vocab-qwen2.gguf"))
    gemma_tok = sf.read_tokenizer_kv(a.gemma_vocab) if a.gemma_vocab else None
    for quant in ("f32", "q8_0", "q4_0"):
        synth(a.out_dir, "nomic-bert", quant, False, tok, nomic=True)
        synth_modern_bert(a.out_dir, tok, quant)
        synth_qwen3(a.out_dir, qwen_tok, False, quant=quant)
        if gemma_tok:
            synth_gemma(a.out_dir, gemma_tok, quant)
    synth_qwen3(a.out_dir, qwen_tok, True)


if __name__ == "__main__":
    main()
