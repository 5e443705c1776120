#!/usr/bin/env python3
"""Random-weight files in real vision-model shapes for bench/vision_bench.sh (speed only; the
math is checked by tests/vision). Written F16, streamed tensor by tensor (a 4B model never sits
in memory); the language model is then quantized by the reference's own llama-quantize, as
users get their files.

  bench/synth_vision_bench.py gemma3-4b-lm OUT.gguf --vocab GEMMA3_270M.gguf
      Gemma 3 4B's text model (its HF config: 2560 wide, 34 layers, FFN 10240, 8 heads on 4 KV
      heads of 256, sliding window 1024, rope 1e6 with linear scaling 8) with Gemma 3 270M's
      tokenizer (262144 tokens; the 4B's 64 extra image-padding tokens are never used).
  bench/synth_vision_bench.py gemma3-4b-mmproj OUT.gguf
      its projector: SigLIP-so400m (27 blocks, 1152 wide, FFN 4304, 16 heads, 896 px, patch 14)
      and the gemma3 projection to 2560, F16 (scripts/synth_mmproj.py's layout).
  bench/synth_vision_bench.py qwen25vl-3b-lm OUT.gguf --vocab ggml-vocab-qwen2.gguf
      Qwen2.5-VL-3B's text model (llama.cpp's qwen2vl: 2048 wide, 36 layers, FFN 11008, 16 heads
      on 2 KV heads, q/k/v biases, M-RoPE sections 16/24/24, tied output) with Qwen2's 151936-token
      vocabulary from llama.cpp's models/ (its padding ids 151652-151656 renamed to Qwen2.5-VL's
      vision tokens, as control tokens).
  bench/synth_vision_bench.py qwen25vl-3b-mmproj OUT.gguf
      its projector (qwen2.5vl_merger, scripts/synth_mmproj.py's layout): 32 blocks, 1280 wide,
      SwiGLU FFN 3420, 16 heads, window attention (n_wa_pattern 8: every 8th block full), 2 x 2
      merge and the two-layer MLP to 2048, F16.
  bench/synth_vision_bench.py image OUT.png
      an 896 x 896 RGB picture (smooth colour bands and a grid), when no resized photo is at hand.

The pinned gguf/numpy of scripts/requirements-synth.txt (scripts/synth_pyenv.sh).
"""
import argparse
import os
import struct
import sys
import zlib

import numpy as np
import gguf

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import synth_mmproj  # noqa: E402  (the projector layout is shared with the tests' files)

GEMMA3_4B = dict(E=2560, L=34, F=10240, H=8, Hkv=4, hd=256, window=1024, base=1e6, rope_factor=8.0, ctx=131072,
                 eps=1e-6)
SIGLIP_SO400M = dict(n_embd=1152, n_ff=4304, n_head=16, n_layer=27, proj_dim=2560)
QWEN25VL_3B = dict(E=2048, L=36, F=11008, H=16, Hkv=2, hd=128, base=1e6, ctx=128000, eps=1e-6,
                   sections=[16, 24, 24, 0])
QWEN25VL_VIT = dict(n_embd=1280, n_ff=3420, n_head=16, n_layer=32, proj_dim=2048, wa_pattern=8)
# Qwen2.5-VL's vision tokens, at their ids in its vocabulary (padding ids in Qwen2's).
QWEN_VISION_TOKENS = {151652: "<|vision_start|>", 151653: "<|vision_end|>", 151654: "<|vision_pad|>",
                      151655: "<|image_pad|>", 151656: "<|video_pad|>"}


class Pool:
    """Random F16 values, ~N(0, sigma), drawn once and sliced at random offsets: a 4B model's
    worth of fresh normals would take minutes, and the speed does not depend on the values."""

    def __init__(self, rng, n=1 << 24, sigma=0.02):
        self.rng = rng
        self.v = (sigma * rng.standard_normal(n, dtype=np.float32)).astype(np.float16)

    def take(self, shape):
        n = int(np.prod(shape))
        if n <= self.v.size:
            at = int(self.rng.integers(0, self.v.size - n + 1))
            return self.v[at:at + n].reshape(shape)
        return np.resize(np.roll(self.v, int(self.rng.integers(0, self.v.size))), shape)


def copy_tokenizer(w, src, rename=None):
    """Every tokenizer.* key of src (a GGUF file) into writer w; rename: {id: text} of tokens to
    replace (made CONTROL tokens)."""
    rename = rename or {}
    r = gguf.GGUFReader(src)
    for name, f in r.fields.items():
        if not name.startswith("tokenizer."):
            continue
        vt = f.types[0]
        if vt == gguf.GGUFValueType.ARRAY:
            if f.types[1] == gguf.GGUFValueType.STRING:
                v = [bytes(f.parts[i]).decode() for i in f.data]
            else:
                v = [f.parts[i].tolist()[0] for i in f.data]
            for i, text in rename.items():
                if name == "tokenizer.ggml.tokens":
                    v[i] = text
                elif name == "tokenizer.ggml.token_type":
                    v[i] = int(gguf.TokenType.CONTROL)
            w.add_array(name, v)
        elif vt == gguf.GGUFValueType.STRING:
            w.add_string(name, bytes(f.parts[-1]).decode())
        else:
            w.add_key_value(name, f.parts[-1].tolist()[0], vt)
    return len(r.fields["tokenizer.ggml.tokens"].data)


def lm_writer(path, arch, name, h):
    """A writer with the keys both language models share (sizes, norm epsilon, rope base)."""
    w = gguf.GGUFWriter(path, arch)
    w.add_string("general.name", name)
    w.add_uint32("general.file_type", 1)  # mostly F16
    for key, v in (("context_length", h["ctx"]), ("embedding_length", h["E"]), ("block_count", h["L"]),
                   ("feed_forward_length", h["F"]), ("attention.head_count", h["H"]),
                   ("attention.head_count_kv", h["Hkv"])):
        w.add_uint32(f"{arch}.{key}", v)
    w.add_float32(f"{arch}.attention.layer_norm_rms_epsilon", h["eps"])
    w.add_float32(f"{arch}.rope.freq_base", h["base"])
    return w


def gemma3_lm(path, vocab, seed):
    h = GEMMA3_4B
    a = "gemma3"
    w = lm_writer(path, a, "zerfoo synthetic Gemma 3 4B (text)", h)
    w.add_uint32(f"{a}.attention.key_length", h["hd"])
    w.add_uint32(f"{a}.attention.value_length", h["hd"])
    w.add_uint32(f"{a}.attention.sliding_window", h["window"])
    w.add_string(f"{a}.rope.scaling.type", "linear")
    w.add_float32(f"{a}.rope.scaling.factor", h["rope_factor"])
    n_vocab = copy_tokenizer(w, vocab)
    E, F, q, kv = h["E"], h["F"], h["H"] * h["hd"], h["Hkv"] * h["hd"]
    # (name, numpy shape = reversed ggml ne); 1-D norms F32 around 1.
    specs = [("token_embd.weight", (n_vocab, E)), ("output_norm.weight", (E,))]
    for i in range(h["L"]):
        b = f"blk.{i}."
        specs += [(b + "attn_norm.weight", (E,)), (b + "attn_q.weight", (q, E)), (b + "attn_k.weight", (kv, E)),
                  (b + "attn_v.weight", (kv, E)), (b + "attn_q_norm.weight", (h["hd"],)),
                  (b + "attn_k_norm.weight", (h["hd"],)), (b + "attn_output.weight", (E, q)),
                  (b + "post_attention_norm.weight", (E,)), (b + "ffn_norm.weight", (E,)),
                  (b + "ffn_gate.weight", (F, E)), (b + "ffn_up.weight", (F, E)), (b + "ffn_down.weight", (E, F)),
                  (b + "post_ffw_norm.weight", (E,))]
    stream(w, specs, seed, path)


def stream(w, specs, seed, path):
    """Writes specs [(name, numpy shape)] tensor by tensor: matrices F16 from the pool, 1-D
    tensors F32 (names ending in .bias ~0, norms ~1)."""
    for name, shape in specs:
        dt = np.float32 if len(shape) == 1 else np.float16
        w.add_tensor_info(name, shape, np.dtype(dt), int(np.prod(shape)) * np.dtype(dt).itemsize)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    rng = np.random.default_rng(seed)
    pool = Pool(rng)
    for name, shape in specs:
        if len(shape) == 1:
            base = 0.0 if name.endswith(".bias") else 1.0
            w.write_tensor_data((base + 0.05 * rng.standard_normal(shape)).astype(np.float32))
        else:
            w.write_tensor_data(np.ascontiguousarray(pool.take(shape)))
    w.close()
    print(f"{path}: {os.path.getsize(path) >> 20} MiB")


def qwen25vl_lm(path, vocab, seed):
    h = QWEN25VL_3B
    a = "qwen2vl"
    w = lm_writer(path, a, "zerfoo synthetic Qwen2.5-VL 3B (text)", h)
    w.add_array(f"{a}.rope.dimension_sections", h["sections"])
    n_vocab = copy_tokenizer(w, vocab, QWEN_VISION_TOKENS)
    E, F, q, kv = h["E"], h["F"], h["H"] * h["hd"], h["Hkv"] * h["hd"]
    specs = [("token_embd.weight", (n_vocab, E)), ("output_norm.weight", (E,))]
    for i in range(h["L"]):
        b = f"blk.{i}."
        specs += [(b + "attn_norm.weight", (E,)), (b + "attn_q.weight", (q, E)), (b + "attn_q.bias", (q,)),
                  (b + "attn_k.weight", (kv, E)), (b + "attn_k.bias", (kv,)), (b + "attn_v.weight", (kv, E)),
                  (b + "attn_v.bias", (kv,)), (b + "attn_output.weight", (E, q)), (b + "ffn_norm.weight", (E,)),
                  (b + "ffn_gate.weight", (F, E)), (b + "ffn_up.weight", (F, E)), (b + "ffn_down.weight", (E, F))]
    stream(w, specs, seed, path)


def png(path, rgb):
    """rgb: (h, w, 3) uint8 -> an 8-bit RGB PNG (no filter)."""
    hgt, wid, _ = rgb.shape
    raw = b"".join(b"\0" + rgb[y].tobytes() for y in range(hgt))

    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", wid, hgt, 8, 2, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def picture(path, size=896):
    y, x = np.mgrid[0:size, 0:size].astype(np.float32) / size
    rgb = np.stack([np.sin(6 * x + 2 * y), np.cos(5 * y - 3 * x), np.sin(9 * x * y)], axis=-1)
    rgb = (127.5 * (rgb + 1)).astype(np.uint8)
    rgb[::64] = 255
    rgb[:, ::64] = 0
    png(path, rgb)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=("gemma3-4b-lm", "gemma3-4b-mmproj", "qwen25vl-3b-lm", "qwen25vl-3b-mmproj",
                                         "image"))
    ap.add_argument("out")
    ap.add_argument("--vocab", help="a GGUF file whose tokenizer the language model takes")
    ap.add_argument("--seed", type=int, default=46)
    a = ap.parse_args()
    tmp = a.out + ".tmp"
    if a.what.endswith("-lm") and not a.vocab:
        sys.exit(f"{a.what} needs --vocab (a GGUF file with the tokenizer)")
    if a.what == "gemma3-4b-lm":
        gemma3_lm(tmp, a.vocab, a.seed)
    elif a.what == "qwen25vl-3b-lm":
        qwen25vl_lm(tmp, a.vocab, a.seed)
    elif a.what == "qwen25vl-3b-mmproj":
        synth_mmproj.write(tmp, dict(synth_mmproj.HP_QWEN25VL, **QWEN25VL_VIT), "f16", a.seed)
    elif a.what == "gemma3-4b-mmproj":
        synth_mmproj.write(tmp, dict(synth_mmproj.HP, **SIGLIP_SO400M), "f16", a.seed)
    else:
        picture(tmp)
    os.replace(tmp, a.out)


if __name__ == "__main__":
    main()
