#!/usr/bin/env python3
"""Writes a Q8_0 copy of a GGUF model: every quantized tensor whose rows are a multiple of 32 is
dequantized and requantized to Q8_0 (gguf-py's reference quantizer, as scripts/synth_models.py
uses), F32/F16 tensors and all metadata are copied as they are. For the draft-model benchmark
(bench/lookup_bench.py --draft): a Q8_0 target whose weights are its Q4 file's, so the Q4 file is
"its own Q4 quant" (the only real models here come as 4-bit files). Not a test.

  PYTHONPATH=~/.cache/zerfoo/synth-py/<hash> python3 bench/requant_q8_0.py IN.gguf OUT.gguf
(the pinned numpy/gguf of scripts/requirements-synth.txt, installed by tests/family/make_models.sh)
"""
import sys

import numpy as np
from gguf import GGMLQuantizationType as Q, GGUFReader, GGUFValueType as V, GGUFWriter
from gguf.quants import dequantize, quantize

KEEP = {Q.F32, Q.F16, Q.BF16, Q.Q8_0}


def main():
    src, dst = sys.argv[1], sys.argv[2]
    r = GGUFReader(src)
    arch = r.fields["general.architecture"].contents()
    w = GGUFWriter(dst, arch)
    for name, f in r.fields.items():
        if name.startswith("GGUF.") or name in ("general.architecture", "general.file_type"):
            continue
        t = f.types[0]
        if t == V.ARRAY:
            w.add_key_value(name, f.contents(), t, sub_type=f.types[-1])
        else:
            w.add_key_value(name, f.contents(), t)
    w.add_key_value("general.file_type", 7, V.UINT32)  # LLAMA_FTYPE_MOSTLY_Q8_0
    for t in r.tensors:
        shape = [int(x) for x in reversed(t.shape)]  # rows first, as numpy holds them
        if t.tensor_type in KEEP or shape[-1] % 32 != 0:
            w.add_tensor(t.name, t.data, raw_shape=t.data.shape, raw_dtype=t.tensor_type)
            continue
        values = dequantize(t.data, t.tensor_type).astype(np.float32).reshape(shape)
        q = quantize(values, Q.Q8_0)
        w.add_tensor(t.name, q, raw_shape=q.shape, raw_dtype=Q.Q8_0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
