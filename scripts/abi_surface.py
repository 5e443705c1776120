#!/usr/bin/env python3
"""Extracts the parts of include/zerfoo.h that abidiff cannot see, for scripts/abi_check.sh.

  abi_surface.py functions HEADER      one line per ZF_API declaration (whitespace collapsed)
  abi_surface.py constants HEADER      one line per '#define ZF_*' constant: NAME VALUE
  abi_surface.py layout_c HEADER       a C program printing sizeof/offsetof/size of every field
                                       of every public struct (compile and run it)
  abi_surface.py compare KIND BASE CUR compare a baseline with the current extraction; exit 1
                                       on an incompatible change (removed or changed entries;
                                       for layouts a struct may only grow at its end)
"""
import re
import sys

# Constants that change on compatible releases (an append bumps the minor version).
VOLATILE = {"ZF_VERSION_MINOR", "ZF_VERSION_PATCH"}


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def functions(header):
    text = strip_comments(open(header).read())
    out = []
    for m in re.finditer(r"\bZF_API\b([^;{]*?\bzf_\w+\s*\([^;{]*\))\s*;", text):
        out.append(" ".join(("ZF_API" + m.group(1)).split()))
    for m in re.finditer(r"typedef[^;{}]*\(\s*\*\s*zf_\w+\s*\)\s*\([^;]*\)\s*;", text):
        out.append(" ".join(m.group(0).split()))  # callback types
    for m in re.finditer(r"typedef\s+(?!struct)[^;{}()]*\bzf_\w+\s*;", text):
        out.append(" ".join(m.group(0).split()))  # scalar typedefs (zf_status)
    return sorted(out)


def constants(header):
    out = []
    for line in open(header):
        m = re.match(r"\s*#\s*define\s+(ZF_\w+)\s+(.*?)\s*(/\*.*)?$", line)
        if m and m.group(1) not in VOLATILE and m.group(1) != "ZF_API" and m.group(2):
            out.append(m.group(1) + " " + " ".join(m.group(2).split()))
    return sorted(out)


def structs(header):
    text = strip_comments(open(header).read())
    res = []
    for m in re.finditer(r"typedef\s+struct\s+(zf_\w+)\s*\{(.*?)\}\s*(zf_\w+)\s*;", text, flags=re.S):
        fields = []
        for decl in m.group(2).split(";"):
            decl = " ".join(decl.split())
            if not decl:
                continue
            name = re.search(r"(\w+)\s*(\[[^\]]*\])?$", decl).group(1)
            fields.append(name)
        res.append((m.group(3), fields))
    return res


def layout_c(header):
    lines = ['#include <stddef.h>', '#include <stdio.h>', '#include "zerfoo.h"', "int main(void) {"]
    for name, fields in structs(header):
        lines.append('  printf("sizeof %s %%zu\\n", sizeof(%s));' % (name, name))
        for f in fields:
            lines.append('  printf("field %s.%s offset %%zu size %%zu\\n", offsetof(%s, %s), sizeof(((%s*)0)->%s));'
                         % (name, f, name, f, name, f))
    lines += ["  return 0;", "}"]
    return "\n".join(lines)


def compare(kind, base, cur):
    b = [l.rstrip("\n") for l in open(base) if l.strip()]
    c = [l.rstrip("\n") for l in open(cur) if l.strip()]
    cset = set(c)
    bad = []
    if kind == "layout":
        csize = {l.split()[1]: int(l.split()[2]) for l in c if l.startswith("sizeof ")}
        for l in b:
            if l.startswith("sizeof "):
                _, name, size = l.split()
                if name not in csize:
                    bad.append("struct %s removed" % name)
                elif csize[name] < int(size):
                    bad.append("struct %s shrank: %s -> %d bytes" % (name, size, csize[name]))
            elif l not in cset:
                bad.append("field moved, resized or removed: %s" % l)
    else:
        bad = ["removed or changed: " + l for l in b if l not in cset]
    added = [l for l in c if l not in set(b)]
    for l in added:
        print("  new: " + l)
    for l in bad:
        print("  INCOMPATIBLE: " + l)
    return 1 if bad else 0


def main():
    cmd = sys.argv[1]
    if cmd == "functions":
        print("\n".join(functions(sys.argv[2])))
    elif cmd == "constants":
        print("\n".join(constants(sys.argv[2])))
    elif cmd == "layout_c":
        print(layout_c(sys.argv[2]))
    elif cmd == "compare":
        sys.exit(compare(sys.argv[2], sys.argv[3], sys.argv[4]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
