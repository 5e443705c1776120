#!/usr/bin/env python3
"""Random-weight GGUF files of the model families of issue #15, in each family's exact tensor
names, shapes and metadata (what llama.cpp's converter writes; see doc/families.md), with the
real tokenizer of the family, for the golden tests against the reference (tests/family).

  scripts/synth_models.py --families OUT_DIR [--only llama,qwen3,...] [--vocab-dir DIR]
                          [--gemma-vocab FILE]

Tokenizers: copied (every tokenizer.* key) from llama.cpp's models/ggml-vocab-*.gguf in the
llama-cpp-python 0.3.36 sdist (--vocab-dir; tests/family/make_models.sh extracts them) and,
for gemma2, from the Gemma 3 270M file of scripts/fetch_models.sh (--gemma-vocab).

Output: OUT_DIR/<model>-<quant>.gguf for each model of FAMILIES and quant in
f32 | q8_0 | q4 (Q4_K_M-style mix: Q4_K, Q6_K for the tied embedding/output, attn_v and
ffn_down on llama.cpp's use_more_bits layers, Q5_0/Q8_0 where a row is not a multiple of 256;
1-D tensors and the MoE router stay F32 as llama-quantize leaves them), plus
OUT_DIR/vocab-phi3.gguf (phi-3's vocabulary only, no tensors, for ZF_MODEL_VOCAB_ONLY) with its
tokenizer test vectors vocab-phi3.gguf.inp / .out, and the copies of DIMS_COPIES (the same
tensors with trailing 1-dims written the other way).

Weights are random blocks written directly (no quantizer): quants uniform, block scales chosen
so weights are ~N(0, sigma) with sigma 0.02-0.06 and centred (K-quant mins cancel the mean),
norm weights ~1 +- 0.1. Deterministic: each file's generator is seeded from its name, so the
same numpy/gguf versions (scripts/requirements-synth.txt) give the same bytes; the goldens in
tests/data/golden/families/ record each file's sha256.
"""
import hashlib
import math
import os
import struct
import sys
import zlib

import numpy as np


class Q:
    """ggml type ids and (block elements, block bytes)."""
    F32, Q4_0, Q5_0, Q8_0, Q4_K, Q6_K, MXFP4 = 0, 2, 6, 8, 12, 14, 39
    SIZES = {0: (1, 4), 2: (32, 18), 6: (32, 22), 8: (32, 34), 12: (256, 144), 14: (256, 210), 39: (32, 17)}


QUANTS = ("f32", "q8_0", "q4")

# Each model: arch, tokenizer source, sizes and family-specific keys. E is 256 everywhere
# (K-quant rows are multiples of 256); odd shapes: qwen3 head dim 80, 14 heads on 2 KV heads
# (its attn_output rows of 1120 take the Q5_0 fallback in q4),
# qwen3moe / gemma2 head dims that differ from E / H, phi3 partial rotary (48 of 64).
# GQA ratios: 1 (llama31, phi3, olmo2), 2 (qwen2, gemma2, granite), 4 (llama, mixtral,
# qwen3moe, smollm3), 7 (qwen3).
FAMILIES = {
    # Llama 2 / Mistral style: SPM vocab, untied output.
    "llama": dict(arch="llama", vocab="llama-spm", E=256, L=2, H=4, Hkv=1, hd=64, F=512, base=10000.0,
                  tied=False, eps=1e-5, ctx=4096),
    # Llama 3.1 style: BPE vocab, tied, rope_freqs.weight from the llama3 rule (orig ctx 64 so the
    # factors move positions inside the test's 32 tokens).
    "llama31": dict(arch="llama", vocab="llama-bpe", E=256, L=2, H=4, Hkv=4, hd=64, F=768, base=500000.0,
                    tied=True, eps=1e-5, ctx=131072, llama3_rope=dict(factor=8.0, low=1.0, high=4.0, orig=64)),
    # Mixtral style experts in the llama architecture.
    "mixtral": dict(arch="llama", vocab="llama-spm", E=256, L=2, H=4, Hkv=1, hd=64, F=256, base=1e6,
                    tied=True, eps=1e-5, ctx=32768, experts=(4, 2)),
    # Mistral Small 3.1 / 3.2's language model (mistral3, llama blocks): Q narrower than E (32 x
    # 128 in 5120 there, 4 x 48 in 256 here: attn_output's rows of 192 take the Q5_0 fallback in
    # q4), GQA 4, rope base 1e9, untied; a BPE vocabulary as Tekken's.
    "mistral3": dict(arch="mistral3", vocab="llama-bpe", E=256, L=2, H=4, Hkv=1, hd=48, F=768, base=1e9,
                     tied=False, eps=1e-5, ctx=131072, key_length=True),
    "qwen2": dict(arch="qwen2", vocab="qwen2", E=256, L=2, H=4, Hkv=2, hd=64, F=768, base=1e6, tied=True,
                  eps=1e-6, ctx=32768, qkv_bias=True),
    "qwen3": dict(arch="qwen3", vocab="qwen2", E=256, L=2, H=14, Hkv=2, hd=80, F=768, base=1e6, tied=True,
                  eps=1e-6, ctx=40960, qk_norm=True, key_length=True),
    # Qwen2.5-VL's and Qwen3-VL's language models: Qwen 2 / Qwen 3 blocks with M-RoPE sections
    # (Qwen3-VL: one deepstack layer; text rows add nothing there).
    "qwen2vl": dict(arch="qwen2vl", vocab="qwen2", E=256, L=2, H=4, Hkv=2, hd=64, F=768, base=1e6, tied=True,
                    eps=1e-6, ctx=128000, qkv_bias=True, sections=[8, 12, 12, 0]),
    "qwen3vl": dict(arch="qwen3vl", vocab="qwen2", E=256, L=2, H=14, Hkv=2, hd=80, F=768, base=5e6, tied=True,
                    eps=1e-6, ctx=262144, qk_norm=True, key_length=True, sections=[12, 14, 14, 0], deepstack=1),
    "qwen3moe": dict(arch="qwen3moe", vocab="qwen2", E=256, L=2, H=4, Hkv=1, hd=128, F=768, base=1e6,
                     tied=True, eps=1e-6, ctx=40960, qk_norm=True, key_length=True, experts=(8, 3), Fe=256),
    # Phi-3 / Phi-4-mini style: fused QKV and gate|up, LongRoPE factors, partial rotary, a
    # sliding_window key that llama.cpp ignores.
    "phi3": dict(arch="phi3", vocab="phi-3", E=256, L=2, H=4, Hkv=4, hd=64, F=512, base=10000.0, tied=True,
                 eps=1e-5, ctx=131072, orig_ctx=4096, n_rot=48, window=8),
    # Gemma 2: softcaps set low enough to bite on a random model, window 8 < the 32 test tokens.
    "gemma2": dict(arch="gemma2", vocab="gemma", E=256, L=4, H=4, Hkv=2, hd=128, F=512, base=10000.0,
                   tied=True, eps=1e-6, ctx=8192, key_length=True, window=8, attn_cap=2.0, final_cap=1.0),
    # SmolLM3: no rope on layer 3 (every 4th layer), hence 4 layers.
    "smollm3": dict(arch="smollm3", vocab="llama-bpe", E=256, L=4, H=4, Hkv=1, hd=64, F=512, base=2e6,
                    tied=True, eps=1e-6, ctx=65536),
    # Granite 3: the four multipliers (attention scale differs from 1/sqrt(hd)).
    "granite": dict(arch="granite", vocab="refact", E=256, L=2, H=4, Hkv=2, hd=64, F=512, base=10000.0,
                    tied=True, eps=1e-5, ctx=4096,
                    scales=dict(embedding=12.0, residual=0.22, attention=0.25, logit=8.0)),
    # Gemma 4 (E2B-like, dense): sliding / full layers alternating with different head sizes and
    # KV heads (KV rows 128 vs 256 wide), the last 2 layers sharing the KV of layers 0 / 1,
    # per-layer token embeddings (32 per layer), proportional rope (a quarter of the full
    # layers' pairs rotate), no attn_v on full layers (values = keys), double-wide FFN on the
    # shared layers, a layer_output_scale per layer, window 8 < the 32 test tokens.
    "gemma4": dict(arch="gemma4", vocab="gemma-4", E=256, L=4, H=4, Hkv=2, hd=64, F=512, base=1e6, tied=True,
                   eps=1e-6, ctx=131072, gemma4=dict(swa=[True, False, True, False], Hkv_full=2, hd_full=128,
                                                     shared=2, n_pl=32, window=8, base_swa=10000.0,
                                                     partial_full=0.25, final_cap=30.0)),
    # Gemma 4 MoE (26B-A4B layout): no per-layer inputs, no KV sharing; 8 experts of 256 (2 used,
    # gate and up fused as the converter writes them, a per-expert output scale) beside a dense
    # MLP of 512, the router reading the scaled RMS of the residual stream.
    "gemma4moe": dict(arch="gemma4", vocab="gemma-4", E=256, L=2, H=4, Hkv=2, hd=64, F=512, base=1e6, tied=True,
                      eps=1e-6, ctx=262144, experts=(8, 2), Fe=256,
                      gemma4=dict(swa=[True, False], Hkv_full=1, hd_full=128, shared=0, n_pl=0, window=8,
                                  base_swa=10000.0, partial_full=0.25, final_cap=30.0)),
    # OLMo 2: no pre-norms, post-norms, full-width QK-norm, output never tied.
    "olmo2": dict(arch="olmo2", vocab="gpt-2", E=256, L=2, H=4, Hkv=4, hd=64, F=512, base=500000.0,
                  tied=False, eps=1e-6, ctx=4096, qk_norm_full=True),
    # gpt-oss (llama.cpp's openai-moe): 20B's layout at a tiny size. Q is wider than E (8 x 64 vs
    # 128, as 64 x 64 vs 2880; E 128 keeps the untied F32 file small), sliding window 8 on even
    # layers (< the 32 test tokens), YaRN with factor 32 over an original context of 64 (so the
    # blend moves frequencies the test's positions reach), sinks in [-1, 3] (the scores are ~0, so they take a visible share),
    # expert gate/up biases of sigma 3 so that some pre-activations pass the SwiGLU clamp (7).
    # Its 4-bit variant is MXFP4 experts with the rest Q8_0 (the layout of the released files).
    # Tokenizer: Llama 3's BPE vocabulary (llama.cpp ships no o200k one) under gpt-oss's
    # pre-tokenizer, gpt-4o (o200k's).
    "gpt-oss": dict(arch="gpt-oss", vocab="llama-bpe", pre="gpt-4o", E=128, L=4, H=8, Hkv=2, hd=64, F=128, base=150000.0,
                    tied=False, eps=1e-5, ctx=2048, key_length=True, window=8, experts=(8, 4), Fe=128,
                    yarn=dict(factor=32.0, orig=64), q4="mxfp4"),
    # LFM2: short-convolution layers (head_count_kv 0, kernel l_cache 3) between GQA attention
    # layers with per-head QK-norm; output norm stored as token_embd_norm. llama.cpp ships no
    # LFM2 vocabulary file: llama-bpe's (the same llama3 pre-tokenizer rules) with
    # tokenizer.ggml.pre set to "lfm2".
    "lfm2": dict(arch="lfm2", vocab="llama-bpe", pre="lfm2", E=256, L=4, H=4, Hkv=2, hd=64, F=512, base=1e6,
                 tied=True, eps=1e-5, ctx=128000, conv_layers=(0, 2), l_cache=3, qk_norm=True),
    # LFM2-MoE: the same mixers; layer 0 dense, then 4 experts (2 used) with a sigmoid router
    # whose top-k is chosen on the scores plus exp_probs_b.bias.
    "lfm2moe": dict(arch="lfm2moe", vocab="llama-bpe", pre="lfm2", E=256, L=4, H=4, Hkv=2, hd=64, F=512,
                    base=1e6, tied=True, eps=1e-5, ctx=128000, conv_layers=(0, 2), l_cache=3, qk_norm=True,
                    experts=(4, 2), Fe=256, dense_lead=1, probs_bias=0.1),
    # Granite 4.0 hybrid: Mamba-2 layers (head_count_kv 0) around one attention layer without
    # rope (rope.scaling.finetuned false, as the converter writes for hybrids); d_inner = 2 E,
    # 8 SSM heads of 64 in 2 groups, state 32, conv kernel 4; Granite's four multipliers.
    "granitehybrid": dict(arch="granitehybrid", vocab="refact", E=256, L=4, H=4, Hkv=2, hd=64, F=512, base=10000.0,
                          tied=True, eps=1e-5, ctx=1048576, ssm_layers=(0, 1, 3),
                          ssm=dict(d_conv=4, d_inner=512, d_state=32, n_head=8, n_group=2),
                          scales=dict(embedding=12.0, residual=0.22, attention=0.0078125, logit=8.0)),
    # Granite 4.0 hybrid MoE (the -h-tiny / -h-small layout): 4 experts of 256 (2 used, softmax,
    # renormalized) plus a shared expert of 512 on every layer.
    "granitehybridmoe": dict(arch="granitehybrid", vocab="refact", E=256, L=4, H=4, Hkv=2, hd=64, F=256,
                             base=10000.0, tied=True, eps=1e-5, ctx=1048576, ssm_layers=(0, 2, 3),
                             ssm=dict(d_conv=4, d_inner=512, d_state=32, n_head=8, n_group=1),
                             experts=(4, 2), Fs=512,
                             scales=dict(embedding=12.0, residual=0.22, attention=0.0078125, logit=8.0)),
    # Qwen 3.5: gated DeltaNet layers (2 key heads, 4 value heads tiled over them: head h reads key
    # head h % 2; head dims 32, 4 taps) and gated full attention (attn_q rows per head [q | gate],
    # partial rope 16 of 64) marked by attention.recurrent_layers, then the converter's MTP block
    # (nextn_predict_layers 1: in the file, not run); E 128 keeps the F32 files small. Decays exp(ssm_a * softplus(alpha + dt)) spread over ~0.05-0.95.
    "qwen35": dict(arch="qwen35", vocab="qwen35", E=128, L=4, H=4, Hkv=2, hd=64, F=256, base=1e7, tied=True,
                   eps=1e-6, ctx=262144, key_length=True, n_rot=16, qk_norm=True,
                   delta=dict(recurrent=[True, True, True, False], d_conv=4, n_k=2, n_v=4, d=32), mtp=True),
    # Qwen 3.5 MoE: the same mixers, recurrent layers from full_attention_interval 2 (no per-layer
    # array); 4 experts of 256 (2 used, softmax router, renormalized) plus a shared expert of 256
    # gated by sigmoid(ffn_gate_inp_shexp . x).
    "qwen35moe": dict(arch="qwen35moe", vocab="qwen35", E=128, L=4, H=4, Hkv=2, hd=64, F=256, base=1e7,
                      tied=True, eps=1e-6, ctx=262144, key_length=True, n_rot=16, qk_norm=True,
                      experts=(4, 2), Fe=256, Fs=256, shexp_gate=True,
                      delta=dict(interval=2, d_conv=4, n_k=2, n_v=4, d=32)),
}

# 1B-class shapes for bench/family_bench.sh (Q4_K_M mix only, never in the tests): a dense
# Qwen3 in Qwen3-1.7B's shape, a Qwen3-MoE with 8 experts of which 2 are used per token, and a
# Qwen 3.5 (gated DeltaNet hybrid) in Qwen3.5-0.8B's shape.
BENCH = {
    "bench-qwen3-1.7b": dict(arch="qwen3", vocab="qwen2", E=2048, L=28, H=16, Hkv=8, hd=128, F=6144, base=1e6,
                             tied=True, eps=1e-6, ctx=40960, qk_norm=True, key_length=True),
    "bench-qwen3moe-8x2": dict(arch="qwen3moe", vocab="qwen2", E=1024, L=24, H=16, Hkv=4, hd=64, F=1024,
                               base=1e6, tied=True, eps=1e-6, ctx=40960, qk_norm=True, key_length=True,
                               experts=(8, 2), Fe=1024),
    # A 1B-class Granite 4.0 hybrid: 20 Mamba-2 layers (d_inner 3072, 48 heads of 64, 1 group,
    # state 128, kernel 4) and 4 NoPE attention layers (12 heads / 4 KV of 128).
    "bench-granitehybrid-1b": dict(arch="granitehybrid", vocab="refact", E=1536, L=24, H=12, Hkv=4, hd=128, F=4096,
                                   base=10000.0, tied=True, eps=1e-5, ctx=1048576,
                                   ssm_layers=tuple(i for i in range(24) if i % 6 != 5),
                                   ssm=dict(d_conv=4, d_inner=3072, d_state=128, n_head=48, n_group=1),
                                   scales=dict(embedding=12.0, residual=0.22, attention=0.0078125, logit=8.0)),
    # Qwen3.5-0.8B's shape: 18 gated DeltaNet layers (16 key and 16 value heads of 128) and 6
    # gated attention layers (8 heads of 256 on 2 KV heads, rope on 64).
    # gpt-oss-20b's shape (24 layers of 2880, 64 query / 8 KV heads of 64, 32 experts of 2880 with
    # 4 used, sliding window 128 on every other layer, YaRN 32 over 4096), experts in MXFP4 and
    # the rest Q8_0 as in the released file ("mxfp4" variant); llama-bpe's vocabulary (128k)
    # stands in for o200k's (201k). ~11.6 GB: bench/family_bench.sh --gpt-oss writes it.
    "bench-gpt-oss-20b": dict(arch="gpt-oss", vocab="llama-bpe", pre="gpt-4o", E=2880, L=24, H=64, Hkv=8, hd=64,
                              F=2880, base=150000.0, tied=False, eps=1e-5, ctx=131072, key_length=True,
                              window=128, experts=(32, 4), Fe=2880, yarn=dict(factor=32.0, orig=4096),
                              q4="mxfp4"),
    "bench-qwen35-0.8b": dict(arch="qwen35", vocab="qwen35", E=1024, L=24, H=8, Hkv=2, hd=256, F=3584, base=1e7,
                              tied=True, eps=1e-6, ctx=262144, key_length=True, n_rot=64, qk_norm=True,
                              delta=dict(interval=4, d_conv=4, n_k=16, n_v=16, d=128)),
    # Qwen3.5-4B's shape, the larger Qwen 3.5 of bench/family_bench.sh --hybrid: 24 gated DeltaNet
    # layers (16 key heads and 32 value heads of 128, conv 4) and 8 gated attention layers (16
    # heads of 256 on 4 KV heads, rope on 64, base 1e7), hidden 2560, FFN 9216. The numbers are
    # the released GGUF's as listed in github.com/quantumaikr/quant.cpp issue 94 (metadata and
    # tensor shapes) and the FFN width from apxml.com/models/qwen35-4b; tied as the smaller ones.
    "bench-qwen35-4b": dict(arch="qwen35", vocab="qwen35", E=2560, L=32, H=16, Hkv=4, hd=256, F=9216, base=1e7,
                            tied=True, eps=1e-6, ctx=262144, key_length=True, n_rot=64, qk_norm=True,
                            delta=dict(interval=4, d_conv=4, n_k=16, n_v=32, d=128)),
}
FAMILIES.update(BENCH)

# Extra copies of one file in the other layout of trailing 1-dims, for tests/family's FamilyDims:
# the same header and bytes but the tensor shapes. "dropped": as llama-quantize writes them
# (ggml_n_dims drops trailing 1s: granitehybridmoe's ssm_norm [512, 1] with one group is [512]);
# "columns": every 1-D tensor as [n, 1], as the converter writes a [1, n] torch weight (qwen35moe's
# ffn_gate_inp_shexp, [n_embd] after llama-quantize). Output: OUT_DIR/<model>-<quant>-<layout>.gguf.
DIMS_COPIES = {"granitehybridmoe": ("q8_0", "dropped"), "qwen35moe": ("f32", "columns")}


def relaid(ne, layout):
    if layout == "dropped":
        ne = tuple(ne)
        while len(ne) > 1 and ne[-1] == 1:
            ne = ne[:-1]
        return ne
    return tuple(ne) + (1,) if len(ne) == 1 else tuple(ne)


FILE_TYPE = {"f32": 0, "q4_0": 2, "q8_0": 7, "q4": 15, "mxfp4": 38}


def more_bits(i, n):
    """llama.cpp's use_more_bits: the first and last eighth of the layers, and every third."""
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def q4_type(t, n_in):
    """The Q4_K_M type of a matrix with rows of n_in, with llama.cpp's fallbacks."""
    if n_in % 256 == 0:
        return t
    return {Q.Q4_K: Q.Q5_0, Q.Q6_K: Q.Q8_0}[t]


def tensor_specs(h, n_vocab, quant):
    """[(name, ne, type, sigma)] in the converter's naming; sigma None = a norm (1 +- 0.1),
    a string = a special F32 vector."""
    E, L, H, Hkv, hd, F = h["E"], h["L"], h["H"], h["Hkv"], h["hd"], h["F"]
    arch = h["arch"]
    nq, nkv = hd * H, hd * Hkv
    if arch in ("qwen2", "qwen2vl", "phi3", "olmo2"):
        assert nq == E, f"{arch}: Q is {{E, E}}, so hd must be E/H"

    def mat(name, n_in, n_out, sigma, layer=-1, kind="base", n_exp=0):
        if quant == "f32":
            t = Q.F32
        elif quant == "q8_0" or (quant == "mxfp4" and not n_exp):
            t = Q.Q8_0
        elif quant == "mxfp4":
            t = Q.MXFP4
        else:
            high = kind == "out" or (kind == "more" and more_bits(layer, L))
            t = q4_type(Q.Q6_K if high else Q.Q4_K, n_in)
        ne = (n_in, n_out, n_exp) if n_exp else (n_in, n_out)
        return (name, ne, t, sigma)

    def vec(name, n, sigma=None):
        return (name, (n,), Q.F32, sigma)

    if arch == "gpt-oss":
        return gpt_oss_specs(h, n_vocab, mat, vec)
    specs = [mat("token_embd.weight", E, n_vocab, 0.02, kind="out" if h["tied"] else "base")]
    if arch == "gemma4":
        return specs + gemma4_specs(h, mat, vec)
    if "llama3_rope" in h:
        specs.append(vec("rope_freqs.weight", hd // 2, "llama3"))
    if arch == "phi3":
        specs.append(vec("rope_factors_long.weight", h["n_rot"] // 2, "long"))
        specs.append(vec("rope_factors_short.weight", h["n_rot"] // 2, "short"))
    for i in range(L):
        p = f"blk.{i}."
        if arch != "olmo2":
            specs.append(vec(p + "attn_norm.weight", E))
        if i in h.get("ssm_layers", ()):
            specs += ssm_specs(h, p, i, mat, vec)
        elif "delta" in h and delta_recurrent(h, i):
            dn = h["delta"]
            kd, vd = dn["n_k"] * dn["d"], dn["n_v"] * dn["d"]
            # conversion/qwen.py's names: in_proj_qkv -> attn_qkv, in_proj_z -> attn_gate,
            # conv1d (F32: llama-quantize skips ssm_conv1d), dt_bias, -exp(A_log), in_proj_b / _a.
            specs += [mat(p + "attn_qkv.weight", E, 2 * kd + vd, 0.06, i), mat(p + "attn_gate.weight", E, vd, 0.06, i),
                      (p + "ssm_conv1d.weight", (dn["d_conv"], 2 * kd + vd), Q.F32, 0.5),
                      vec(p + "ssm_dt.bias", dn["n_v"], "delta_dt"), vec(p + "ssm_a", dn["n_v"], "delta_a"),
                      mat(p + "ssm_beta.weight", E, dn["n_v"], 0.06, i), mat(p + "ssm_alpha.weight", E, dn["n_v"], 0.06, i),
                      vec(p + "ssm_norm.weight", dn["d"]), mat(p + "ssm_out.weight", vd, E, 0.03, i)]
        elif i in h.get("conv_layers", ()):
            # The kernel [l_cache, E] stays F32 (rows of 3: llama-quantize cannot block them).
            specs += [(p + "shortconv.conv.weight", (h["l_cache"], E), Q.F32, 0.5),
                      mat(p + "shortconv.in_proj.weight", E, 3 * E, 0.06, i),
                      mat(p + "shortconv.out_proj.weight", E, E, 0.03, i)]
        else:
            if arch == "phi3":
                specs.append(mat(p + "attn_qkv.weight", E, nq + 2 * nkv, 0.06, i))
            else:
                # Qwen 3.5's gated attention: each head's rows [q | gate].
                q_rows = 2 * nq if "delta" in h else nq
                specs += [mat(p + "attn_q.weight", E, q_rows, 0.06, i), mat(p + "attn_k.weight", E, nkv, 0.06, i),
                          mat(p + "attn_v.weight", E, nkv, 0.03, i, kind="more")]
            if h.get("qkv_bias"):
                specs += [vec(p + "attn_q.bias", nq, 0.2), vec(p + "attn_k.bias", nkv, 0.2),
                          vec(p + "attn_v.bias", nkv, 0.05)]
            if h.get("qk_norm"):
                specs += [vec(p + "attn_q_norm.weight", hd), vec(p + "attn_k_norm.weight", hd)]
            if h.get("qk_norm_full"):
                specs += [vec(p + "attn_q_norm.weight", nq), vec(p + "attn_k_norm.weight", nkv)]
            specs.append(mat(p + "attn_output.weight", nq, E, 0.03, i))
            if arch in ("gemma2", "olmo2"):
                specs.append(vec(p + "post_attention_norm.weight", E))
        if "delta" in h:  # the pre-FFN norm under its converter name
            specs.append(vec(p + "post_attention_norm.weight", E))
        elif arch != "olmo2":
            specs.append(vec(p + "ffn_norm.weight", E))
        if "experts" in h and i >= h.get("dense_lead", 0):
            n_exp = h["experts"][0]
            Fe = h.get("Fe", F)
            specs += [(p + "ffn_gate_inp.weight", (E, n_exp), Q.F32, 0.06),
                      mat(p + "ffn_gate_exps.weight", E, Fe, 0.03, i, n_exp=n_exp),
                      mat(p + "ffn_up_exps.weight", E, Fe, 0.03, i, n_exp=n_exp),
                      mat(p + "ffn_down_exps.weight", Fe, E, 0.03, i, kind="more", n_exp=n_exp)]
            if h.get("probs_bias"):
                specs.append(vec(p + "exp_probs_b.bias", n_exp, h["probs_bias"]))
            if h.get("Fs"):  # shared experts (Qwen3.5's gated by sigmoid(ffn_gate_inp_shexp . x))
                specs += [vec(p + "ffn_gate_inp_shexp.weight", E, 0.06)] if h.get("shexp_gate") else []
                specs += [mat(p + "ffn_gate_shexp.weight", E, h["Fs"], 0.03, i),
                          mat(p + "ffn_up_shexp.weight", E, h["Fs"], 0.03, i),
                          mat(p + "ffn_down_shexp.weight", h["Fs"], E, 0.03, i, kind="more")]
        elif arch == "phi3":
            specs += [mat(p + "ffn_up.weight", E, 2 * F, 0.03, i), mat(p + "ffn_down.weight", F, E, 0.03, i, kind="more")]
        else:
            specs += [mat(p + "ffn_gate.weight", E, F, 0.03, i), mat(p + "ffn_up.weight", E, F, 0.03, i),
                      mat(p + "ffn_down.weight", F, E, 0.03, i, kind="more")]
        if arch in ("gemma2", "olmo2"):
            specs.append(vec(p + "post_ffw_norm.weight", E))
    if h.get("mtp"):  # conversion/qwen.py's _QwenMtpMixin: mtp.* as block L with nextn.* names
        p = f"blk.{L}."
        specs += [vec(p + "attn_norm.weight", E), mat(p + "attn_q.weight", E, 2 * nq, 0.06, L),
                  mat(p + "attn_k.weight", E, nkv, 0.06, L), mat(p + "attn_v.weight", E, nkv, 0.03, L),
                  vec(p + "attn_q_norm.weight", hd), vec(p + "attn_k_norm.weight", hd),
                  mat(p + "attn_output.weight", nq, E, 0.03, L), vec(p + "post_attention_norm.weight", E),
                  mat(p + "ffn_gate.weight", E, F, 0.03, L), mat(p + "ffn_up.weight", E, F, 0.03, L),
                  mat(p + "ffn_down.weight", F, E, 0.03, L), mat(p + "nextn.eh_proj.weight", 2 * E, E, 0.03, L),
                  vec(p + "nextn.enorm.weight", E), vec(p + "nextn.hnorm.weight", E),
                  vec(p + "nextn.shared_head_norm.weight", E)]
    specs.append(vec("token_embd_norm.weight" if arch in ("lfm2", "lfm2moe") else "output_norm.weight", E))
    if not h["tied"]:
        specs.append(mat("output.weight", E, n_vocab, 0.02, kind="out"))
    return specs


def ssm_specs(h, p, i, mat, vec):
    """A Mamba-2 mixer in the converter's names and shapes (conversion/mamba.py): ssm_a = -exp(A_log)
    and ssm_d as [1, n_head], the conv kernel [d_conv, channels] and the group norm
    [d_inner / n_group, n_group], all F32 as llama-quantize leaves them (ssm_a / ssm_d have no
    .weight suffix; ssm_conv1d and *_norm.weight are excluded)."""
    E, m = h["E"], h["ssm"]
    d_inner, N, nh, G, K = m["d_inner"], m["d_state"], m["n_head"], m["n_group"], m["d_conv"]
    ch = d_inner + 2 * G * N
    return [mat(p + "ssm_in.weight", E, 2 * d_inner + 2 * G * N + nh, 0.06, i),
            (p + "ssm_conv1d.weight", (K, ch), Q.F32, 0.3),
            vec(p + "ssm_conv1d.bias", ch, 0.1),
            vec(p + "ssm_dt.bias", nh, "dt_bias"),
            (p + "ssm_a", (1, nh), Q.F32, "ssm_a"),
            (p + "ssm_d", (1, nh), Q.F32, ("norm", 1.0)),
            (p + "ssm_norm.weight", (d_inner // G, G), Q.F32, None),
            mat(p + "ssm_out.weight", d_inner, E, 0.03, i)]

def delta_recurrent(h, i):
    """Whether layer i is a gated DeltaNet layer (attention.recurrent_layers, else every layer but
    each full_attention_interval-th, as llama.cpp reads them)."""
    dn = h["delta"]
    if "recurrent" in dn:
        return dn["recurrent"][i]
    return (i + 1) % dn["interval"] != 0


def gpt_oss_specs(h, n_vocab, mat, vec):
    """gpt-oss in its converter's names (conversion/gpt_oss.py): q/k/v/o with biases, attn_sinks,
    the pre-FFN norm as post_attention_norm, router and experts with biases (F32 [n, n_expert])."""
    E, L, H, Hkv, hd, Fe = h["E"], h["L"], h["H"], h["Hkv"], h["hd"], h["Fe"]
    n_exp = h["experts"][0]
    nq, nkv = hd * H, hd * Hkv
    specs = [mat("token_embd.weight", E, n_vocab, 0.02)]
    for i in range(L):
        p = f"blk.{i}."
        specs += [vec(p + "attn_norm.weight", E),
                  mat(p + "attn_q.weight", E, nq, 0.06, i), vec(p + "attn_q.bias", nq, 0.2),
                  mat(p + "attn_k.weight", E, nkv, 0.06, i), vec(p + "attn_k.bias", nkv, 0.2),
                  mat(p + "attn_v.weight", E, nkv, 0.03, i), vec(p + "attn_v.bias", nkv, 0.05),
                  mat(p + "attn_output.weight", nq, E, 0.03, i), vec(p + "attn_output.bias", E, 0.05),
                  vec(p + "attn_sinks.weight", H, "sinks"),
                  vec(p + "post_attention_norm.weight", E),
                  (p + "ffn_gate_inp.weight", (E, n_exp), Q.F32, 0.3), vec(p + "ffn_gate_inp.bias", n_exp, 1.0),
                  mat(p + "ffn_gate_exps.weight", E, Fe, 0.03, i, n_exp=n_exp),
                  (p + "ffn_gate_exps.bias", (Fe, n_exp), Q.F32, 3.0),
                  mat(p + "ffn_up_exps.weight", E, Fe, 0.03, i, n_exp=n_exp),
                  (p + "ffn_up_exps.bias", (Fe, n_exp), Q.F32, 3.0),
                  mat(p + "ffn_down_exps.weight", Fe, E, 0.03, i, n_exp=n_exp),
                  (p + "ffn_down_exps.bias", (E, n_exp), Q.F32, 0.02)]
    specs += [vec("output_norm.weight", E), mat("output.weight", E, n_vocab, 0.02)]
    return specs


def gemma4_ffn(h, i):
    """Gemma 4's use_double_wide_mlp: the KV-sharing layers have twice the FFN."""
    g = h["gemma4"]
    return h["F"] * (2 if i >= h["L"] - g["shared"] else 1)


def gemma4_specs(h, mat, vec):
    """The tensors after token_embd of a dense Gemma 4 (conversion/gemma.py's Gemma4Model and
    llama.cpp's gemma4 loader): per-layer inputs, rope_freqs for the full layers, and per layer
    Q/K(/V on sliding layers) with QK-norms, post-norms, GeGLU, per-layer projections, scale."""
    E, L, H = h["E"], h["L"], h["H"]
    g = h["gemma4"]
    P = g["n_pl"]
    specs = [mat("per_layer_token_embd.weight", P * L, h["n_vocab"], 0.05),
             mat("per_layer_model_proj.weight", E, P * L, 0.06),
             vec("per_layer_proj_norm.weight", P)] if P else []
    specs.append(vec("rope_freqs.weight", g["hd_full"] // 2, "proportional"))
    for i in range(L):
        p = f"blk.{i}."
        swa = g["swa"][i]
        hd, hkv = (h["hd"], h["Hkv"]) if swa else (g["hd_full"], g["Hkv_full"])
        F = gemma4_ffn(h, i)
        specs += [vec(p + "attn_norm.weight", E), mat(p + "attn_q.weight", E, H * hd, 0.06, i),
                  mat(p + "attn_k.weight", E, hkv * hd, 0.06, i)]
        if swa or not g.get("k_eq_v", True):  # full layers have attention_k_eq_v: no v_proj
            specs.append(mat(p + "attn_v.weight", E, hkv * hd, 0.06, i, kind="more"))
        # Q and K are RMS-normed and not scaled (scale 1): norm weights of hd^-1/4 keep the
        # scores' spread near 1, as trained models do (weights ~1 would give scores of spread
        # sqrt(hd): one-hot attention that amplifies any rounding).
        qk = ("norm", hd ** -0.25)
        specs += [vec(p + "attn_q_norm.weight", hd, qk), vec(p + "attn_k_norm.weight", hd, qk),
                  mat(p + "attn_output.weight", H * hd, E, 0.03, i), vec(p + "post_attention_norm.weight", E),
                  vec(p + "ffn_norm.weight", E), mat(p + "ffn_gate.weight", E, F, 0.03, i),
                  mat(p + "ffn_up.weight", E, F, 0.03, i), mat(p + "ffn_down.weight", F, E, 0.03, i, kind="more"),
                  vec(p + "post_ffw_norm.weight", E), vec(p + "layer_output_scale.weight", 1, "layer_scale")]
        if "experts" in h:  # conversion/gemma.py: router.proj / .scale, experts.gate_up_proj, per_expert_scale
            n_exp, Fe = h["experts"][0], h["Fe"]
            # The router reads rms_norm(x) / sqrt(E) (elements ~1/16): weights of sigma 1.5 give
            # logits of spread ~1.5, as a trained router's; 0.06 left them ~0.06 apart, where
            # top-k picks among near-ties that any rounding flips.
            specs += [(p + "ffn_gate_inp.weight", (E, n_exp), Q.F32, 1.5), vec(p + "ffn_gate_inp.scale", E),
                      vec(p + "pre_ffw_norm_2.weight", E), vec(p + "post_ffw_norm_1.weight", E),
                      vec(p + "post_ffw_norm_2.weight", E),
                      mat(p + "ffn_gate_up_exps.weight", E, 2 * Fe, 0.03, i, n_exp=n_exp),
                      mat(p + "ffn_down_exps.weight", Fe, E, 0.03, i, kind="more", n_exp=n_exp),
                      vec(p + "ffn_down_exps.scale", n_exp, "layer_scale")]
        if P:
            specs += [mat(p + "inp_gate.weight", E, P, 0.06, i), mat(p + "proj.weight", P, E, 0.06, i),
                      vec(p + "post_norm.weight", E)]
    specs.append(vec("output_norm.weight", E))
    return specs


def gemma4_rope_freqs(h):
    """The converter's proportional-rope factors: 1 for the rotated pairs, 1e30 for the rest."""
    g = h["gemma4"]
    n_rot = int(g["hd_full"] * g["partial_full"] / 2)
    return np.array([1.0] * n_rot + [1e30] * (g["hd_full"] // 2 - n_rot), dtype=np.float32)


def llama3_factors(h):
    """rope_freqs as the converter computes them for rope_type llama3."""
    r, hd, base = h["llama3_rope"], h["hd"], h["base"]
    out = []
    for i in range(0, hd, 2):
        freq = 1.0 / base ** (i / hd)
        wavelen = 2 * math.pi / freq
        lo_w, hi_w = r["orig"] / r["low"], r["orig"] / r["high"]
        if wavelen < hi_w:
            out.append(1.0)
        elif wavelen > lo_w:
            out.append(r["factor"])
        else:
            s = (r["orig"] / wavelen - r["low"]) / (r["high"] - r["low"])
            out.append(1.0 / ((1 - s) / r["factor"] + s))
    return np.array(out, dtype=np.float32)


def f16_bytes(v):
    return np.asarray(v, dtype=np.float16).view(np.uint8).reshape(-1, 2)


def random_tensor(rng, h, name, ne, t, sigma):
    """The tensor's data: float32 array (F32) or uint8 rows of blocks (quantized)."""
    n = int(np.prod(ne))
    shape = tuple(reversed(ne))
    if t == Q.F32:
        if sigma is None:
            v = 1.0 + 0.1 * rng.standard_normal(n, dtype=np.float32)
        elif isinstance(sigma, tuple):  # ("norm", s): a norm weight around s
            v = sigma[1] * (1.0 + 0.1 * rng.standard_normal(n, dtype=np.float32))
        elif sigma == "llama3":
            v = llama3_factors(h)
        elif sigma == "proportional":
            v = gemma4_rope_freqs(h)
        elif sigma == "layer_scale":
            v = rng.uniform(0.5, 1.5, n).astype(np.float32)
        elif sigma == "long":
            v = rng.uniform(1.0, 8.0, n).astype(np.float32)
        elif sigma == "short":
            v = rng.uniform(1.0, 3.0, n).astype(np.float32)
        elif sigma == "ssm_a":  # -exp(A_log), A_log = log U(1, 16) as Mamba-2 initializes it
            v = -rng.uniform(1.0, 16.0, n).astype(np.float32)
        elif sigma == "dt_bias":  # softplus^-1 of dt in [0.001, 0.1] (Mamba-2's dt init)
            dt = np.exp(rng.uniform(math.log(0.001), math.log(0.1), n))
            v = (dt + np.log(-np.expm1(-dt))).astype(np.float32)
        elif sigma == "sinks":
            v = rng.uniform(-1.0, 3.0, n).astype(np.float32)
        elif sigma == "delta_a":  # Qwen 3.5's ssm_a = -exp(A_log): per-head decay rates
            v = -rng.uniform(1.0, 4.0, n).astype(np.float32)
        elif sigma == "delta_dt":  # Qwen 3.5's dt_bias
            v = rng.uniform(-3.0, 0.0, n).astype(np.float32)
        else:
            v = sigma * rng.standard_normal(n, dtype=np.float32)
        return v.astype(np.float32).reshape(shape)
    block, size = Q.SIZES[t]
    nb = n // block
    jitter = rng.uniform(0.75, 1.25, nb)
    if t == Q.Q8_0:  # d, int8[32]: q uniform in [-127, 127] (std 73.6)
        b = np.empty((nb, size), np.uint8)
        b[:, 0:2] = f16_bytes(sigma / 73.6 * jitter)
        b[:, 2:] = rng.integers(-127, 128, (nb, 32), dtype=np.int8).view(np.uint8)
    elif t == Q.Q4_0:  # d, qs[16]: q - 8 uniform in [-8, 7] (std 4.6)
        b = rng.integers(0, 256, (nb, size), dtype=np.uint8)
        b[:, 0:2] = f16_bytes(sigma / 4.6 * jitter)
    elif t == Q.Q5_0:  # d, qh[4], qs[16]: q - 16 uniform in [-16, 15] (std 9.2)
        b = rng.integers(0, 256, (nb, size), dtype=np.uint8)
        b[:, 0:2] = f16_bytes(sigma / 9.2 * jitter)
    elif t == Q.Q4_K:
        # d, dmin, scales[12], qs[128]: w = d*sc*q - dmin*m, q in [0, 15]; m = 7.5*sc centres
        # each sub-block (dmin = d); std = d*sc*4.6 with sc in [4, 8].
        b = rng.integers(0, 256, (nb, size), dtype=np.uint8)
        sc = rng.integers(4, 9, (nb, 8))
        m = np.rint(7.5 * sc).astype(np.int64)
        d = sigma / (6.0 * 4.6) * jitter
        b[:, 0:2] = f16_bytes(d)
        b[:, 2:4] = f16_bytes(d)
        s = np.zeros((nb, 12), np.int64)
        s[:, 0:4] = (sc[:, 0:4] & 63) | ((sc[:, 4:8] >> 4) << 6)
        s[:, 4:8] = (m[:, 0:4] & 63) | ((m[:, 4:8] >> 4) << 6)
        s[:, 8:12] = (sc[:, 4:8] & 15) | ((m[:, 4:8] & 15) << 4)
        b[:, 4:16] = s.astype(np.uint8)
    elif t == Q.Q6_K:
        # ql[128], qh[64], scales int8[16], d: w = d*sc*(q - 32), q in [0, 63] (std 18.5),
        # sc in [1, 4] (mean 2.5) keeps d a normal F16.
        b = rng.integers(0, 256, (nb, size), dtype=np.uint8)
        b[:, 192:208] = rng.integers(1, 5, (nb, 16)).astype(np.uint8)
        b[:, 208:210] = f16_bytes(sigma / (2.5 * 18.5) * jitter)
    elif t == Q.MXFP4:
        # e (E8M0), qs[16]: w = kvalue[q] * 2^(e - 128), kvalues +-{0, 1, 2, 3, 4, 6, 8, 12}
        # (std 5.85); e around log2(sigma / 5.85) + 128, +-1.
        b = rng.integers(0, 256, (nb, size), dtype=np.uint8)
        e = int(round(math.log2(sigma / 5.85))) + 128
        b[:, 0] = (e + rng.integers(-1, 2, nb)).astype(np.uint8)
    else:
        raise ValueError(f"{name}: no random generator for type {t}")
    out_shape = list(shape)
    out_shape[-1] = out_shape[-1] // block * size
    return b.reshape(out_shape)


# ---- a minimal GGUF v3 encoder (the gguf package's reader takes minutes on a 150k-token
# vocabulary; here the tokenizer's key/value bytes are copied verbatim) ----
T_U32, T_F32, T_BOOL, T_STR, T_ARR = 4, 6, 7, 8, 9
FIXED = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
ALIGN = 32


def gguf_str(v):
    b = v.encode()
    return struct.pack("<Q", len(b)) + b


def kv_u32(key, v):
    return gguf_str(key) + struct.pack("<II", T_U32, v)


def kv_f32(key, v):
    return gguf_str(key) + struct.pack("<If", T_F32, v)


def kv_arr(key, elem_type, values):
    fmt = {T_U32: "<I", T_BOOL: "<B"}[elem_type]
    return gguf_str(key) + struct.pack("<IIQ", T_ARR, elem_type, len(values)) + b"".join(
        struct.pack(fmt, int(v)) for v in values)


def kv_bool(key, v):
    return gguf_str(key) + struct.pack("<IB", T_BOOL, 1 if v else 0)


def kv_str(key, v):
    return gguf_str(key) + struct.pack("<I", T_STR) + gguf_str(v)


def kv_i32_array(key, vals):
    """An INT32 array, as the gguf writer stores a list of Python ints."""
    return gguf_str(key) + struct.pack("<IIQ", T_ARR, 5, len(vals)) + struct.pack(f"<{len(vals)}i", *vals)


def read_tokenizer_kv(path, pre=None):
    """(raw bytes of every tokenizer.* key/value pair, in file order; their count; n_vocab).
    pre: a tokenizer.ggml.pre value replacing the file's."""
    with open(path, "rb") as f:
        buf = f.read()
    magic, version, _n_tensors, n_kv = struct.unpack_from("<IIQQ", buf, 0)
    if magic != 0x46554747 or version < 2:
        sys.exit(f"{path}: not a GGUF v2/v3 file")
    off = 24
    out, count, n_vocab = [], 0, None

    def skip_value(off, t):
        if t in FIXED:
            return off + FIXED[t]
        if t == T_STR:
            (n,) = struct.unpack_from("<Q", buf, off)
            return off + 8 + n
        if t == T_ARR:
            et, n = struct.unpack_from("<IQ", buf, off)
            off += 12
            if et in FIXED:
                return off + n * FIXED[et]
            for _ in range(n):
                off = skip_value(off, et)
            return off
        sys.exit(f"{path}: unknown GGUF value type {t}")

    for _ in range(n_kv):
        start = off
        (klen,) = struct.unpack_from("<Q", buf, off)
        key = buf[off + 8:off + 8 + klen].decode()
        off += 8 + klen
        (t,) = struct.unpack_from("<I", buf, off)
        off = skip_value(off + 4, t)
        if key == "tokenizer.ggml.pre" and pre is not None:
            out.append(kv_str(key, pre))
            count += 1
        elif key.startswith("tokenizer."):
            out.append(buf[start:off])
            count += 1
            if key == "tokenizer.ggml.tokens":
                n_vocab = struct.unpack_from("<IQ", buf, start + 8 + klen + 4)[1]
    if not n_vocab:
        sys.exit(f"{path}: no tokenizer.ggml.tokens")
    return b"".join(out), count, n_vocab


def write_gguf(path, kvs, kv_raw, kv_raw_count, tensors):
    """kvs: list of encoded pairs; tensors: [(name, ne, type, data array)]."""
    infos, offset = [], 0
    for name, ne, t, data in tensors:
        block, size = Q.SIZES[t]
        nbytes = int(np.prod(ne)) // block * size
        assert data.nbytes == nbytes, (name, data.nbytes, nbytes)
        infos.append(gguf_str(name) + struct.pack("<I", len(ne)) + struct.pack(f"<{len(ne)}Q", *ne) +
                     struct.pack("<IQ", t, offset))
        offset += (nbytes + ALIGN - 1) // ALIGN * ALIGN
    head = struct.pack("<IIQQ", 0x46554747, 3, len(tensors), len(kvs) + kv_raw_count)
    head += b"".join(kvs) + kv_raw + b"".join(infos)
    with open(path, "wb") as f:
        f.write(head)
        f.write(b"\0" * (-len(head) % ALIGN))
        for _name, _ne, _t, data in tensors:
            f.write(np.ascontiguousarray(data).tobytes())
            f.write(b"\0" * (-data.nbytes % ALIGN))


def metadata(h, quant, name):
    a = h["arch"]
    E, H, hd = h["E"], h["H"], h["hd"]
    kv = [kv_str("general.architecture", a), kv_str("general.name", f"zerfoo synthetic {name}"),
          kv_u32(f"{a}.context_length", h["ctx"]), kv_u32(f"{a}.embedding_length", E),
          kv_u32(f"{a}.block_count", h["L"] + (1 if h.get("mtp") else 0)), kv_u32(f"{a}.feed_forward_length", h["F"]),
          kv_u32(f"{a}.attention.head_count", H),
          kv_i32_array(f"{a}.attention.head_count_kv",
                       [0 if i in h.get("conv_layers", h.get("ssm_layers", ())) else h["Hkv"] for i in range(h["L"])])
          if "conv_layers" in h or "ssm_layers" in h else kv_u32(f"{a}.attention.head_count_kv", h["Hkv"]),
          kv_f32(f"{a}.rope.freq_base", h["base"]),
          kv_f32(f"{a}.attention.layer_norm_rms_epsilon", h["eps"])]
    if h.get("key_length"):
        kv += [kv_u32(f"{a}.attention.key_length", hd), kv_u32(f"{a}.attention.value_length", hd)]
    if a in ("llama", "mistral3"):
        kv.append(kv_u32(f"{a}.rope.dimension_count", hd))
    if "experts" in h:
        kv += [kv_u32(f"{a}.expert_count", h["experts"][0]), kv_u32(f"{a}.expert_used_count", h["experts"][1])]
        if "Fe" in h:
            kv.append(kv_u32(f"{a}.expert_feed_forward_length", h["Fe"]))
    if a == "phi3":
        scale = h["ctx"] / h["orig_ctx"]
        kv += [kv_u32(f"{a}.rope.dimension_count", h["n_rot"]),
               kv_u32(f"{a}.rope.scaling.original_context_length", h["orig_ctx"]),
               kv_f32(f"{a}.rope.scaling.attn_factor", math.sqrt(1 + math.log(scale) / math.log(h["orig_ctx"]))),
               kv_u32(f"{a}.attention.sliding_window", h["window"])]
    if a == "gemma2":
        kv += [kv_f32(f"{a}.attn_logit_softcapping", h["attn_cap"]),
               kv_f32(f"{a}.final_logit_softcapping", h["final_cap"]),
               kv_u32(f"{a}.attention.sliding_window", h["window"])]
    if a == "gpt-oss":
        y = h["yarn"]
        kv += [kv_str(f"{a}.rope.scaling.type", "yarn"), kv_f32(f"{a}.rope.scaling.factor", y["factor"]),
               kv_u32(f"{a}.rope.scaling.original_context_length", y["orig"]),
               kv_f32(f"{a}.rope.scaling.yarn_beta_fast", 32.0), kv_f32(f"{a}.rope.scaling.yarn_beta_slow", 1.0),
               kv_u32(f"{a}.attention.sliding_window", h["window"])]
    if "sections" in h:
        kv.append(kv_i32_array(f"{a}.rope.dimension_sections", h["sections"]))
    if "deepstack" in h:
        kv.append(kv_u32(f"{a}.n_deepstack_layers", h["deepstack"]))
    if a in ("lfm2", "lfm2moe"):
        kv.append(kv_u32(f"{a}.shortconv.l_cache", h["l_cache"]))
    if a == "lfm2moe":
        kv += [kv_u32(f"{a}.leading_dense_block_count", h["dense_lead"]), kv_u32(f"{a}.expert_gating_func", 2)]
    if a == "granitehybrid":
        m = h["ssm"]
        kv += [kv_u32(f"{a}.ssm.conv_kernel", m["d_conv"]), kv_u32(f"{a}.ssm.state_size", m["d_state"]),
               kv_u32(f"{a}.ssm.group_count", m["n_group"]), kv_u32(f"{a}.ssm.inner_size", m["d_inner"]),
               kv_u32(f"{a}.ssm.time_step_rank", m["n_head"]), kv_bool(f"{a}.rope.scaling.finetuned", False)]
        if "Fs" in h:
            kv.append(kv_u32(f"{a}.expert_shared_feed_forward_length", h["Fs"]))
    if "delta" in h:
        dn = h["delta"]
        kv += [kv_u32(f"{a}.rope.dimension_count", h["n_rot"]),
               kv_i32_array(f"{a}.rope.dimension_sections", [3, 3, 2, 0]),
               kv_u32(f"{a}.ssm.conv_kernel", dn["d_conv"]), kv_u32(f"{a}.ssm.state_size", dn["d"]),
               kv_u32(f"{a}.ssm.group_count", dn["n_k"]), kv_u32(f"{a}.ssm.time_step_rank", dn["n_v"]),
               kv_u32(f"{a}.ssm.inner_size", dn["n_v"] * dn["d"]),
               kv_u32(f"{a}.full_attention_interval", dn.get("interval", 4))]
        if "recurrent" in dn:  # one per block, the MTP block's False
            kv.append(kv_arr(f"{a}.attention.recurrent_layers", T_BOOL, dn["recurrent"] + [False] * bool(h.get("mtp"))))
        if h.get("mtp"):
            kv.append(kv_u32(f"{a}.nextn_predict_layers", 1))
        if "Fs" in h:
            kv.append(kv_u32(f"{a}.expert_shared_feed_forward_length", h["Fs"]))
    if a in ("granite", "granitehybrid"):
        s = h["scales"]
        kv += [kv_f32(f"{a}.embedding_scale", s["embedding"]), kv_f32(f"{a}.residual_scale", s["residual"]),
               kv_f32(f"{a}.attention.scale", s["attention"]), kv_f32(f"{a}.logit_scale", s["logit"])]
    if a == "gemma4":
        kv = gemma4_metadata(h, kv)
    kv.append(kv_u32("general.file_type", FILE_TYPE[quant]))
    if quant != "f32":
        kv.append(kv_u32("general.quantization_version", 2))
    return kv


def gemma4_metadata(h, kv):
    """Gemma 4's keys as its converter writes them: per-layer arrays for the FFN length and KV
    heads, full-layer head size as key_length and the sliding one as key_length_swa, the
    sliding pattern as booleans (replacing the scalar FFN / KV-head keys of `kv`)."""
    a, L = h["arch"], h["L"]
    g = h["gemma4"]
    drop = (f"{a}.feed_forward_length", f"{a}.attention.head_count_kv")
    kv = [e for e in kv if not any(e[8:8 + len(k)] == k.encode() and len(k) == struct.unpack_from("<Q", e)[0]
                                   for k in drop)]
    return kv + [
        kv_arr(f"{a}.feed_forward_length", T_U32, [gemma4_ffn(h, i) for i in range(L)]),
        kv_arr(f"{a}.attention.head_count_kv", T_U32, [h["Hkv"] if s else g["Hkv_full"] for s in g["swa"]]),
        kv_u32(f"{a}.attention.key_length", g["hd_full"]), kv_u32(f"{a}.attention.value_length", g["hd_full"]),
        kv_u32(f"{a}.attention.key_length_swa", h["hd"]), kv_u32(f"{a}.attention.value_length_swa", h["hd"]),
        kv_u32(f"{a}.rope.dimension_count", g["hd_full"]), kv_u32(f"{a}.rope.dimension_count_swa", h["hd"]),
        kv_f32(f"{a}.rope.freq_base_swa", g["base_swa"]),
        kv_f32(f"{a}.final_logit_softcapping", g["final_cap"]),
        kv_u32(f"{a}.attention.sliding_window", g["window"]),
        kv_arr(f"{a}.attention.sliding_window_pattern", T_BOOL, g["swa"]),
        kv_u32(f"{a}.attention.shared_kv_layers", g["shared"]),
        kv_u32(f"{a}.embedding_length_per_layer_input", g["n_pl"])]


def vocab_path(h, vocab_dir, gemma_vocab):
    if h["vocab"] == "gemma":
        return gemma_vocab
    return os.path.join(vocab_dir, f"ggml-vocab-{h['vocab']}.gguf")


def synth_one(name, quant, out_dir, tok):
    h = FAMILIES[name]
    kv_raw, kv_count, n_vocab = tok
    fname = f"{name}-{quant}.gguf"
    path = os.path.join(out_dir, fname)
    rng = np.random.default_rng(zlib.crc32(fname.encode()))
    h = dict(h, n_vocab=n_vocab)
    tensors = [(tname, ne, t, random_tensor(rng, h, tname, ne, t, sigma))
               for tname, ne, t, sigma in tensor_specs(h, n_vocab, quant)]
    write_gguf(path + ".tmp", metadata(h, quant, name), kv_raw, kv_count, tensors)
    os.replace(path + ".tmp", path)
    if DIMS_COPIES.get(name, ("",))[0] == quant:
        layout = DIMS_COPIES[name][1]
        copy = os.path.join(out_dir, f"{name}-{quant}-{layout}.gguf")
        write_gguf(copy + ".tmp", metadata(h, quant, name), kv_raw, kv_count,
                   [(tname, relaid(ne, layout), t, data) for tname, ne, t, data in tensors])
        os.replace(copy + ".tmp", copy)
    return path


def synth_vocab_only(out_dir, vocab_dir):
    """phi-3's vocabulary file as llama.cpp ships it (metadata only) and its tokenizer test
    vectors (.inp: texts separated by __ggml_vocab_test__ lines, .out: ids per line), under
    stable names."""
    for ext in (".gguf", ".gguf.inp", ".gguf.out"):
        src = os.path.join(vocab_dir, "ggml-vocab-phi-3" + ext)
        dst = os.path.join(out_dir, "vocab-phi3" + ext)
        with open(src, "rb") as f, open(dst + ".tmp", "wb") as g:
            g.write(f.read())
        os.replace(dst + ".tmp", dst)
    return os.path.join(out_dir, "vocab-phi3.gguf")


def synth_vocab_gpt4o(out_dir, vocab_dir):
    """Llama 3's vocabulary file with tokenizer.ggml.pre = gpt-4o (o200k's pre-tokenizer, which
    gpt-oss's files name; llama.cpp ships no o200k vocabulary): every key/value pair copied,
    that one replaced. Its test vectors (tests/data/tokenizer/vocab-gpt4o.gguf.inp / .out) were
    recorded from llama.cpp (scripts/reference/tokenize_recorder.cpp)."""
    src = os.path.join(vocab_dir, "ggml-vocab-llama-bpe.gguf")
    with open(src, "rb") as f:
        buf = f.read()
    magic, version, n_tensors, n_kv = struct.unpack_from("<IIQQ", buf, 0)
    if magic != 0x46554747 or n_tensors != 0:
        sys.exit(f"{src}: expected a GGUF vocabulary file without tensors")
    pairs, off = [], 24
    for _ in range(n_kv):
        start = off
        (klen,) = struct.unpack_from("<Q", buf, off)
        key = buf[off + 8:off + 8 + klen].decode()
        (t,) = struct.unpack_from("<I", buf, off + 8 + klen)
        off = skip_kv_value(buf, off + 8 + klen + 4, t)
        pairs.append(kv_str(key, "gpt-4o") if key == "tokenizer.ggml.pre" else buf[start:off])
    dst = os.path.join(out_dir, "vocab-gpt4o.gguf")
    with open(dst + ".tmp", "wb") as g:
        g.write(struct.pack("<IIQQ", magic, version, 0, n_kv) + b"".join(pairs))
    os.replace(dst + ".tmp", dst)
    return dst


def skip_kv_value(buf, off, t):
    if t in FIXED:
        return off + FIXED[t]
    if t == T_STR:
        (n,) = struct.unpack_from("<Q", buf, off)
        return off + 8 + n
    if t == T_ARR:
        et, n = struct.unpack_from("<IQ", buf, off)
        off += 12
        if et in FIXED:
            return off + n * FIXED[et]
        for _ in range(n):
            off = skip_kv_value(buf, off, et)
        return off
    sys.exit(f"unknown GGUF value type {t}")


def sha256(path):
    hsh = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            hsh.update(chunk)
    return hsh.hexdigest()


def main(out_dir, only, vocab_dir, gemma_vocab, quants=QUANTS):
    names = [n for n in FAMILIES if n not in BENCH] if not only else only.split(",")
    for n in names:
        if n not in FAMILIES:
            sys.exit(f"unknown family model {n!r}; known: {', '.join(FAMILIES)}")
    if not os.path.isdir(vocab_dir):
        sys.exit(f"no vocab dir {vocab_dir} (tests/family/make_models.sh extracts llama.cpp's vocab files)")
    if any(FAMILIES[n]["vocab"] == "gemma" for n in names) and not os.path.isfile(gemma_vocab):
        sys.exit(f"no gemma tokenizer source {gemma_vocab} (scripts/fetch_models.sh gemma3)")
    os.makedirs(out_dir, exist_ok=True)
    total = 0
    toks = {}
    for n in names:
        src = vocab_path(FAMILIES[n], vocab_dir, gemma_vocab)
        pre = FAMILIES[n].get("pre")
        if (src, pre) not in toks:
            toks[(src, pre)] = read_tokenizer_kv(src, pre)
        for quant in quants:
            if quant == "q4":  # the family's 4-bit variant
                quant = FAMILIES[n].get("q4", "q4")
            p = synth_one(n, quant, out_dir, toks[(src, pre)])
            size = os.path.getsize(p)
            total += size
            print(f"{p}: {size / 2**20:.1f} MiB")
    p = synth_vocab_only(out_dir, vocab_dir)
    print(f"{p}: vocab only")
    p = synth_vocab_gpt4o(out_dir, vocab_dir)
    print(f"{p}: vocab only")
    print(f"total {total / 2**20:.0f} MiB")
