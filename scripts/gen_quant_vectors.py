#!/usr/bin/env python3
"""Writes the quantization test vectors in tests/data/quant/ (checked by tests/unit/quant_test.cpp).

Expected values come from the `gguf` Python package (gguf.quants), independently of our C++ code:
  * <TYPE>.dq  : raw weight blocks + gguf.quants.dequantize() of them, for every weight type.
                 Legacy quants: half from gguf.quants.quantize() of random floats, half random
                 block bytes. K quants (gguf-py can only dequantize them): random block bytes
                 with a finite, moderate fp16 d/dmin.
  * <TYPE>.act : source floats + expected activation blocks for Q8_0 (gguf.quants.quantize),
                 Q8_1 and Q8_K (numpy transcriptions of the reference quantizers, below), F16
                 (numpy astype, round-to-nearest-even) and BF16 (gguf.quants.quantize).

File format (little endian): magic b"ZQV1", u32 ggml type id, u32 n_elements, u32 n_bytes, then
n_bytes of blocks and n_elements float32 (.dq: expected dequantized values; .act: source floats).
Run: python3 scripts/gen_quant_vectors.py   (deterministic; seed fixed; MXFP4 needs llama.cpp's
gguf-py: PYTHONPATH=<llama.cpp>/gguf-py, e.g. the sdist scripts/reference/ unpacks)
"""
import os
import struct

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import quants
from gguf.constants import GGML_QUANT_SIZES

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "quant")
rng = np.random.default_rng(20240611)


def write(name, qtype_id, blocks: bytes, floats: np.ndarray):
    floats = np.ascontiguousarray(floats, dtype="<f4")
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(b"ZQV1")
        f.write(struct.pack("<III", qtype_id, floats.size, len(blocks)))
        f.write(blocks)
        f.write(floats.tobytes())


def fp16_bytes(values):
    return np.asarray(values, dtype=np.float32).astype(np.float16).view(np.uint8)


def random_blocks(qtype, n_blocks, half_offsets):
    """Random block bytes with the fp16 fields at half_offsets set to moderate finite values."""
    _, type_size = GGML_QUANT_SIZES[qtype]
    raw = rng.integers(0, 256, size=(n_blocks, type_size), dtype=np.uint8)
    for off in half_offsets:
        d = (rng.uniform(1e-3, 5e-2, size=n_blocks) * rng.choice([-1.0, 1.0], size=n_blocks))
        raw[:, off:off + 2] = fp16_bytes(d).reshape(n_blocks, 2)
    return raw


LEGACY = {  # type -> offsets of fp16 fields
    T.Q4_0: [0], T.Q4_1: [0, 2], T.Q5_0: [0], T.Q5_1: [0, 2], T.Q8_0: [0],
}
KQUANTS = {
    T.Q2_K: [80, 82], T.Q3_K: [108], T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208],
}


def gen_dequant():
    for qtype, offs in LEGACY.items():
        block_size, _ = GGML_QUANT_SIZES[qtype]
        x = rng.standard_normal(4 * block_size).astype(np.float32) * 0.1
        x[:block_size] *= 40.0  # one block with a large range
        quantized = quants.quantize(x.reshape(1, -1), qtype).reshape(4, -1)
        raw = np.concatenate([quantized, random_blocks(qtype, 4, offs)], axis=0)
        write(f"{qtype.name}.dq", int(qtype), raw.tobytes(), quants.dequantize(raw.reshape(1, -1), qtype))
    for qtype, offs in KQUANTS.items():
        raw = random_blocks(qtype, 3, offs)
        write(f"{qtype.name}.dq", int(qtype), raw.tobytes(), quants.dequantize(raw.reshape(1, -1), qtype))
    # Float types: bit patterns covering normals, subnormals, zeros, inf and NaN.
    h = np.concatenate([rng.integers(0, 65536, size=200, dtype=np.uint16),
                        np.array([0x0000, 0x8000, 0x0001, 0x03FF, 0x0400, 0x7BFF, 0xFBFF, 0x7C00,
                                  0xFC00, 0x3C00, 0x3555, 0x7E00], dtype=np.uint16)]).astype("<u2")
    write("F16.dq", int(T.F16), h.tobytes(), h.view(np.float16).astype(np.float32))
    b = rng.integers(0, 65536, size=212, dtype=np.uint16).astype("<u2")
    b[:4] = [0x0000, 0x8001, 0x7F80, 0x3F80]
    write("BF16.dq", int(T.BF16), b.tobytes(), quants.dequantize(b.view(np.uint8).reshape(1, -1), T.BF16))


def roundf(v):  # C roundf: half away from zero
    return np.sign(v) * np.floor(np.abs(v) + np.float32(0.5))


def q8_1_reference(x):
    """quantize_row_q8_1_ref transcribed to numpy (float32 arithmetic)."""
    out = bytearray()
    for blk in x.reshape(-1, 32):
        amax = np.float32(np.abs(blk).max())
        d = np.float32(amax / np.float32(127))
        idv = np.float32(1) / d if d != 0 else np.float32(0)
        q = roundf((blk * idv).astype(np.float32)).astype(np.int8)
        s = np.float32(np.float32(int(q.astype(np.int32).sum())) * d)
        out += np.float16(d).tobytes() + np.float16(s).tobytes() + q.tobytes()
    return bytes(out)


def q8_k_reference(x):
    """quantize_row_q8_K_ref transcribed to numpy: iscale = -127/max, round half to even."""
    out = bytearray()
    for blk in x.reshape(-1, 256):
        a = np.abs(blk)
        if a.max() == 0:
            out += bytes(292)
            continue
        mx = blk[int(np.argmax(a))]  # first element of largest magnitude, with its sign
        iscale = np.float32(np.float32(-127) / mx)
        q = np.minimum(np.rint((iscale * blk).astype(np.float32)), 127).astype(np.int8)
        bsums = q.astype(np.int16).reshape(16, 16).sum(axis=1).astype("<i2")
        out += np.float32(np.float32(1) / iscale).tobytes() + q.tobytes() + bsums.tobytes()
    return bytes(out)


def gen_activations():
    x = (rng.standard_normal(512) * 0.5).astype(np.float32)
    x[40] = 3.0  # a positive maximum in block 1 of Q8_0
    x[300] = -4.0  # a negative maximum in super-block 1 of Q8_K
    x[64:96] = np.float32(0)  # an all-zero Q8_0/Q8_1 block
    # Exact .5 ties after scaling: amax 127 gives d = id = 1, so k + 0.5 rounds away from zero.
    x[96:128] = np.arange(32, dtype=np.float32) - np.float32(15.5)
    x[127] = 127.0
    q8_0 = quants.quantize(x.reshape(1, -1), T.Q8_0)
    write("Q8_0.act", int(T.Q8_0), q8_0.tobytes(), x)
    write("Q8_1.act", int(T.Q8_1), q8_1_reference(x), x)
    xk = x.copy()
    xk[256:] = (rng.standard_normal(256) * 2.0).astype(np.float32)
    xk[300] = -9.0
    # A super-block of exact ties: max -127 gives iscale = 1, so k + 0.5 rounds to even.
    ties = (np.arange(256) % 64 - 32).astype(np.float32) + np.float32(0.5)
    ties[0] = -127.0
    xk = np.concatenate([xk, ties])
    write("Q8_K.act", int(T.Q8_K), q8_k_reference(xk), xk)
    z = np.zeros(256, dtype=np.float32)  # all-zero super-block: d = 0, qs = 0, bsums = 0
    write("Q8_K_zero.act", int(T.Q8_K), q8_k_reference(z), z)
    # F16/BF16: random floats plus ties, subnormals, overflow and specials.
    f = (rng.standard_normal(200) * 100).astype(np.float32)
    special = np.array([1.0 + 2.0 ** -11, 1.0 + 3 * 2.0 ** -11, 65504.0, 65519.0, 65520.0, 1e9,
                        2.0 ** -24, 2.0 ** -25, 3 * 2.0 ** -25, 2.0 ** -26, 5.9604645e-08, 6.1e-05,
                        -0.0, 0.0, np.inf, -np.inf, 1e-40, 2.0 ** -14 - 2.0 ** -25], dtype=np.float32)
    f = np.concatenate([f, special])
    write("F16.act", int(T.F16), f.astype(np.float16).tobytes(), f)
    fb = np.concatenate([f, np.array([1.00390625, 1.01171875, 3.4028235e38, 1e-40], dtype=np.float32)])
    write("BF16.act", int(T.BF16), quants.quantize(fb.reshape(1, -1), T.BF16).tobytes(), fb)


def gen_codebook_types():
    """IQ4_NL, IQ4_XS (random blocks, moderate fp16 d) and MXFP4 (quantize() of random floats,
    random blocks, and the exponent extremes that stay finite: 0 and 1 give subnormal scales).
    Needs a gguf-py with MXFP4 (llama.cpp's own: PYTHONPATH=<llama.cpp>/gguf-py)."""
    for qtype, n_blocks in ((T.IQ4_NL, 8), (T.IQ4_XS, 3)):
        raw = random_blocks(qtype, n_blocks, [0])
        write(f"{qtype.name}.dq", int(qtype), raw.tobytes(), quants.dequantize(raw.reshape(1, -1), qtype))
    x = rng.standard_normal(4 * 32).astype(np.float32)
    x[:32] *= 1000.0
    quantized = quants.quantize(x.reshape(1, -1), T.MXFP4).reshape(4, -1)
    rand = random_blocks(T.MXFP4, 6, [])
    rand[:, 0] = [0, 1, 2, 127, 200, 252]
    raw = np.concatenate([quantized, rand], axis=0)
    write("MXFP4.dq", int(T.MXFP4), raw.tobytes(), quants.dequantize(raw.reshape(1, -1), T.MXFP4))


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    with np.errstate(over="ignore", invalid="ignore"):
        gen_dequant()
        gen_activations()
        gen_codebook_types()  # last: the rng stream of the files above stays as it was
    total = sum(os.path.getsize(os.path.join(OUT, n)) for n in os.listdir(OUT))
    print(f"wrote {len(os.listdir(OUT))} files, {total} bytes to {os.path.normpath(OUT)}")
