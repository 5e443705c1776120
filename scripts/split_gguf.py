#!/usr/bin/env python3
"""Splits a GGUF file into parts the way llama.cpp's tools write them (PREFIX-00001-of-0000N.gguf,
split.no / split.count / split.tensors.count in every part, the metadata in the first), through
gguf-py's GGUFWriter: the writer the reference converter (convert_hf_to_gguf.py
--split-max-tensors) uses. For tests of split-model loading (tests/capi/make_split_models.sh);
llama-gguf-split --split-max-tensors writes the same layout (scripts/reference/README.md).

  split_gguf.py IN.gguf OUT_PREFIX --max-tensors N   -> OUT_PREFIX-00001-of-0000K.gguf ...
"""
import argparse
import sys

import gguf


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("input")
    ap.add_argument("out_prefix", help="written as OUT_PREFIX-00001-of-0000K.gguf, ...")
    ap.add_argument("--max-tensors", type=int, required=True, help="tensors per part")
    a = ap.parse_args()

    reader = gguf.GGUFReader(a.input)
    arch = reader.fields["general.architecture"].contents()
    writer = gguf.GGUFWriter(a.out_prefix + ".gguf", arch, split_max_tensors=a.max_tensors)
    for field in reader.fields.values():
        # The header's counts are the writer's to write; it adds the architecture and the split keys.
        if field.name.startswith("GGUF.") or field.name.startswith("split.") or field.name == "general.architecture":
            continue
        vtype = field.types[0]
        sub = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        if field.name == "general.alignment":
            writer.data_alignment = int(field.contents())
        writer.add_key_value(field.name, field.contents(), vtype, sub_type=sub)
    for t in reader.tensors:
        writer.add_tensor(t.name, t.data, raw_dtype=t.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
