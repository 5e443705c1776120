#!/usr/bin/env python3
"""Writes the ABI table the C# tests check the P/Invoke declarations against (AbiTests.cs).

usage: abi_table.py HEADER OUT [CC]

From HEADER (include/zerfoo.h):
  fn NAME RET PARAM...      every ZF_API function; kinds: i32 u32 i64 u64 f32 f64 size ptr void
  cb NAME RET PARAM...      every callback typedef
and, from a C program compiled against the header with CC (default cc), the real layouts:
  struct NAME SIZE NFIELDS
  field STRUCT FIELD OFFSET SIZE
"""
import os
import re
import subprocess
import sys
import tempfile

SCALARS = {
    "zf_status": "i32", "int32_t": "i32", "uint32_t": "u32", "int64_t": "i64",
    "uint64_t": "u64", "size_t": "size", "float": "f32", "double": "f64", "void": "void",
}


def kind(decl, callbacks):
    """The kind of a C declaration with its name removed ('const char*', 'zf_stream_cb')."""
    d = decl.replace("const", " ").strip()
    if "*" in d or "(" in d:
        return "ptr"
    d = " ".join(d.split())
    if d in callbacks:
        return "ptr"
    if d not in SCALARS:
        raise SystemExit("abi_table.py: unknown type %r" % decl)
    return SCALARS[d]


def strip_name(param):
    param = param.strip()
    m = re.match(r"^(.*?[\s\*])(\w+)$", param)
    return m.group(1) if m else param


def main():
    header, out = sys.argv[1], sys.argv[2]
    cc = sys.argv[3] if len(sys.argv) > 3 else os.environ.get("CC", "cc")
    text = open(header, encoding="utf-8").read()
    code = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    code = re.sub(r"//[^\n]*", " ", code)
    callbacks = set(re.findall(r"typedef\s+[\w\s\*]+\(\s*\*\s*(\w+)\s*\)", code))
    lines = []
    for ret, name, params in re.findall(r"ZF_API\s+([\w\s\*]+?)\s*\b(zf_\w+)\s*\(([^)]*)\)\s*;", code):
        kinds = [] if params.strip() in ("", "void") else [kind(strip_name(p), callbacks) for p in params.split(",")]
        lines.append(" ".join(["fn", name, kind(ret, callbacks)] + kinds))
    for ret, name, params in re.findall(r"typedef\s+([\w\s\*]+?)\s*\(\s*\*\s*(\w+)\s*\)\s*\(([^)]*)\)\s*;", code):
        lines.append(" ".join(["cb", name, kind(ret, callbacks)] + [kind(strip_name(p), callbacks) for p in params.split(",")]))
    if not lines:
        raise SystemExit("abi_table.py: no ZF_API function found in " + header)

    # Struct layouts come from the compiler, not from parsing: offsetof/sizeof of every field.
    structs = re.findall(r"typedef\s+struct\s+(\w+)\s*\{(.*?)\}\s*\1\s*;", code, flags=re.S)
    prog = ['#include <stdio.h>', '#include <stddef.h>', '#include "%s"' % os.path.abspath(header),
            "int main(void) {"]
    for sname, body in structs:
        fields = []
        for decl in body.split(";"):
            decl = decl.strip()
            if not decl:
                continue
            m = re.search(r"(\w+)\s*$", decl)
            fields.append(m.group(1))
        prog.append('  printf("struct %s %%zu %d\\n", sizeof(%s));' % (sname, len(fields), sname))
        for f in fields:
            prog.append('  printf("field %s %s %%zu %%zu\\n", offsetof(%s, %s), sizeof(((%s*)0)->%s));'
                        % (sname, f, sname, f, sname, f))
    prog.append("  return 0;\n}\n")
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "layout.c")
        exe = os.path.join(tmp, "layout")
        open(src, "w").write("\n".join(prog))
        subprocess.check_call([cc, "-std=c99", "-o", exe, src])
        lines += subprocess.check_output([exe]).decode().splitlines()
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("abi_table.py: %d functions, %d structs -> %s" % (sum(l.startswith("fn ") for l in lines), len(structs), out))


if __name__ == "__main__":
    main()
