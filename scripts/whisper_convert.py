#!/usr/bin/env python3
"""Converts a CTranslate2 Whisper model.bin into whisper.cpp's ggml .bin layout.

  whisper_convert.py CT2_MODEL_BIN HEADER_BIN OUT_BIN

CT2 layout (little-endian): u32 version, str spec, u32 revision, u32 n_vars, then per variable
str name, u8 rank, u32 dims[rank], u8 dtype, u32 nbytes, bytes; then u32 n_aliases (str, str).
A str is u16 length (with the NUL) + bytes + NUL.

HEADER_BIN is one of whisper.cpp's models/for-tests-ggml-*.bin: its hparams must equal the
model's; its mel filters and vocabulary are copied (they are OpenAI's, which CT2 does not keep).
Tensors are written as whisper.cpp's convert-pt-to-ggml.py lays them out: dims reversed,
F16 matrices, F32 for 1-D tensors, the conv biases (as [1, n]) and the positional embeddings.
CT2 fuses Q/K/V (self-attention linear_0) and K/V (cross-attention linear_1); they are split,
and the key's all-zero bias is dropped (Whisper's key projection has none).
"""
import struct
import sys

# CT2 dtype -> (struct letter, item size); only F32/F16 tensors and small int scalars occur.
CT2_DTYPES = {0: ("f", 4), 1: ("b", 1), 2: ("h", 2), 3: ("i", 4), 4: ("e", 2)}


class Tensor:
    """Row-major data as raw little-endian bytes (no numpy: plain Python is enough here)."""

    def __init__(self, shape, code, data):
        self.shape, self.code, self.data = tuple(shape), code, data

    def rows(self, a, b):
        row = len(self.data) // self.shape[0]
        return Tensor((b - a,) + self.shape[1:], self.code, self.data[a * row:b * row])

    def reshape(self, shape):
        return Tensor(shape, self.code, self.data)

    def scalar(self):
        return struct.unpack_from("<" + self.code, self.data)[0]

    def as_code(self, code):
        if code == self.code:
            return self
        n = len(self.data) // struct.calcsize(self.code)
        vals = struct.unpack(f"<{n}{self.code}", self.data)
        return Tensor(self.shape, code, struct.pack(f"<{n}{code}", *vals))


def read_ct2(path):
    b = open(path, "rb").read()
    o = 0

    def take(fmt):
        nonlocal o
        v = struct.unpack_from(fmt, b, o)
        o += struct.calcsize(fmt)
        return v

    def string():
        nonlocal o
        (n,) = take("<H")
        s = b[o:o + n - 1].decode()
        o += n
        return s

    (version,) = take("<I")
    spec = string()
    take("<I")
    if version != 6 or spec != "WhisperSpec":
        sys.exit(f"error: {path}: expected CTranslate2 v6 WhisperSpec, got v{version} {spec}")
    (n_vars,) = take("<I")
    out = {}
    for _ in range(n_vars):
        name = string()
        (rank,) = take("<B")
        dims = take(f"<{rank}I")
        (dtype,) = take("<B")
        (nbytes,) = take("<I")
        if dtype not in CT2_DTYPES:
            sys.exit(f"error: {name}: unknown CT2 dtype {dtype}")
        out[name] = Tensor(dims, CT2_DTYPES[dtype][0], b[o:o + nbytes])
        o += nbytes
    return out


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    v = read_ct2(sys.argv[1])
    hdr = open(sys.argv[2], "rb").read()
    emb = v["decoder/embeddings/weight"]
    n_vocab, n_text_state = emb.shape
    n_audio_ctx, n_audio_state = v["encoder/position_encodings/encodings"].shape
    n_text_ctx = v["decoder/position_encodings/encodings"].shape[0]
    n_mels = v["encoder/conv1/weight"].shape[1]
    n_audio_layer = sum(1 for k in v if k.startswith("encoder/layer_") and k.endswith("ffn/linear_0/weight"))
    n_text_layer = sum(1 for k in v if k.startswith("decoder/layer_") and k.endswith("ffn/linear_0/weight"))
    n_audio_head = v["encoder/num_heads"].scalar()
    n_text_head = v["decoder/num_heads"].scalar()
    hp = [n_vocab, n_audio_ctx, n_audio_state, n_audio_head, n_audio_layer,
          n_text_ctx, n_text_state, n_text_head, n_text_layer, n_mels, 1]
    magic, *hdr_hp = struct.unpack_from("<12i", hdr, 0)
    if magic != 0x67676D6C or hdr_hp != hp:
        sys.exit(f"error: header {sys.argv[2]} hparams {hdr_hp} differ from the model's {hp}")

    tensors = []

    def add(name, a, f32=False):
        tensors.append((name, a.as_code("f" if (f32 or len(a.shape) < 2) else "e")))

    def block(dst, src, cross):
        add(f"{dst}.attn_ln.weight", v[f"{src}/self_attention/layer_norm/gamma"])
        add(f"{dst}.attn_ln.bias", v[f"{src}/self_attention/layer_norm/beta"])
        w, bias = v[f"{src}/self_attention/linear_0/weight"], v[f"{src}/self_attention/linear_0/bias"]
        n = w.shape[1]
        add(f"{dst}.attn.query.weight", w.rows(0, n)); add(f"{dst}.attn.query.bias", bias.rows(0, n))
        add(f"{dst}.attn.key.weight", w.rows(n, 2 * n))
        add(f"{dst}.attn.value.weight", w.rows(2 * n, 3 * n)); add(f"{dst}.attn.value.bias", bias.rows(2 * n, 3 * n))
        add(f"{dst}.attn.out.weight", v[f"{src}/self_attention/linear_1/weight"])
        add(f"{dst}.attn.out.bias", v[f"{src}/self_attention/linear_1/bias"])
        if cross:
            add(f"{dst}.cross_attn_ln.weight", v[f"{src}/attention/layer_norm/gamma"])
            add(f"{dst}.cross_attn_ln.bias", v[f"{src}/attention/layer_norm/beta"])
            add(f"{dst}.cross_attn.query.weight", v[f"{src}/attention/linear_0/weight"])
            add(f"{dst}.cross_attn.query.bias", v[f"{src}/attention/linear_0/bias"])
            w, bias = v[f"{src}/attention/linear_1/weight"], v[f"{src}/attention/linear_1/bias"]
            add(f"{dst}.cross_attn.key.weight", w.rows(0, n))
            add(f"{dst}.cross_attn.value.weight", w.rows(n, 2 * n)); add(f"{dst}.cross_attn.value.bias", bias.rows(n, 2 * n))
            add(f"{dst}.cross_attn.out.weight", v[f"{src}/attention/linear_2/weight"])
            add(f"{dst}.cross_attn.out.bias", v[f"{src}/attention/linear_2/bias"])
        add(f"{dst}.mlp_ln.weight", v[f"{src}/ffn/layer_norm/gamma"])
        add(f"{dst}.mlp_ln.bias", v[f"{src}/ffn/layer_norm/beta"])
        add(f"{dst}.mlp.0.weight", v[f"{src}/ffn/linear_0/weight"])
        add(f"{dst}.mlp.0.bias", v[f"{src}/ffn/linear_0/bias"])
        add(f"{dst}.mlp.2.weight", v[f"{src}/ffn/linear_1/weight"])
        add(f"{dst}.mlp.2.bias", v[f"{src}/ffn/linear_1/bias"])

    add("encoder.positional_embedding", v["encoder/position_encodings/encodings"], f32=True)
    add("encoder.conv1.weight", v["encoder/conv1/weight"])
    add("encoder.conv1.bias", v["encoder/conv1/bias"].reshape((v["encoder/conv1/bias"].shape[0], 1)), f32=True)
    add("encoder.conv2.weight", v["encoder/conv2/weight"])
    add("encoder.conv2.bias", v["encoder/conv2/bias"].reshape((v["encoder/conv2/bias"].shape[0], 1)), f32=True)
    for i in range(n_audio_layer):
        block(f"encoder.blocks.{i}", f"encoder/layer_{i}", False)
    add("encoder.ln_post.weight", v["encoder/layer_norm/gamma"])
    add("encoder.ln_post.bias", v["encoder/layer_norm/beta"])
    add("decoder.positional_embedding", v["decoder/position_encodings/encodings"], f32=True)
    add("decoder.token_embedding.weight", emb)
    for i in range(n_text_layer):
        block(f"decoder.blocks.{i}", f"decoder/layer_{i}", True)
    add("decoder.ln.weight", v["decoder/layer_norm/gamma"])
    add("decoder.ln.bias", v["decoder/layer_norm/beta"])

    with open(sys.argv[3], "wb") as f:
        f.write(struct.pack("<i", 0x67676D6C))
        f.write(struct.pack("<11i", *hp))
        f.write(hdr[48:])  # mel filters + vocabulary, as whisper.cpp ships them
        for name, a in tensors:
            nb = name.encode()
            f.write(struct.pack("<3i", len(a.shape), len(nb), 1 if a.code == "e" else 0))
            f.write(struct.pack(f"<{len(a.shape)}i", *reversed(a.shape)))
            f.write(nb)
            f.write(a.data)


if __name__ == "__main__":
    main()
