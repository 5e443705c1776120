#!/usr/bin/env python3
"""Records the chat-template corpus' expected outputs with Python's jinja2 (the oracle).

Renders every template in tests/data/chat_templates/templates/ with every conversation in
tests/data/chat_templates/conversations.json exactly the way transformers'
apply_chat_template does (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, the
loopcontrols extension and the `generation` block, transformers' tojson, raise_exception,
strftime_now) and writes tests/data/chat_templates/expected/<template>.json:
  {"<conversation>": {"output": "..."}  or  {"error": "<jinja2 exception>"}}.
strftime_now is pinned to 2025-01-15 10:30:00 (zerfoo's test pins the same instant, epoch
1736937000 rendered as UTC).

  --import-corpus DIR   first copy DIR/*.jinja (llama.cpp's models/templates) into the corpus
  --import-gguf FILE    first copy the tokenizer.chat_template* of a GGUF file into the corpus

Also renders tests/data/chat_templates/features.json (one small template per language feature,
with its own variables) into features_expected.json.

Needs: pip install jinja2 (only to record; CI compares against the committed files).
"""
import argparse
import datetime
import glob
import json
import os
import struct
import sys

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "data", "chat_templates")
NOW = datetime.datetime(2025, 1, 15, 10, 30, 0)


class AssistantTracker(Extension):
    """transformers' `{% generation %}` block; renders its body in place."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

    @jinja2.pass_eval_context
    def _generation_support(self, context, caller):
        return caller()


def make_env():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return NOW.strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[AssistantTracker, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render(env, source, ctx):
    try:
        tpl = env.from_string(source)
    except Exception as e:  # syntax errors, unknown filters/tests
        return {"error": f"{type(e).__name__}: {e}"}
    ctx = dict(ctx)
    ctx.setdefault("tools", None)
    ctx.setdefault("documents", None)
    try:
        return {"output": tpl.render(**ctx)}
    except Exception as e:
        return {"error": f"{type(e).__name__}: {e}"}


def gguf_templates(path):
    """tokenizer.chat_template and tokenizer.chat_template.NAME strings of a GGUF file."""
    out = {}
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"GGUF":
        return out
    off = 8
    n_tensors, n_kv = struct.unpack_from("<QQ", data, off)
    off += 16
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

    def read_str(o):
        n = struct.unpack_from("<Q", data, o)[0]
        return data[o + 8:o + 8 + n], o + 8 + n

    def skip(t, o):
        if t == 8:
            return read_str(o)[1]
        if t == 9:
            et, n = struct.unpack_from("<IQ", data, o)
            o += 12
            for _ in range(n):
                o = skip(et, o)
            return o
        return o + sizes[t]

    for _ in range(n_kv):
        key, off = read_str(off)
        t = struct.unpack_from("<I", data, off)[0]
        off += 4
        if t == 8 and key.decode().startswith("tokenizer.chat_template"):
            val, off = read_str(off)
            out[key.decode()] = val.decode("utf-8")
        else:
            off = skip(t, off)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--import-corpus")
    ap.add_argument("--import-gguf", action="append", default=[])
    args = ap.parse_args()
    tdir = os.path.join(DATA, "templates")
    os.makedirs(tdir, exist_ok=True)
    if args.import_corpus:
        for p in sorted(glob.glob(os.path.join(args.import_corpus, "*.jinja"))):
            with open(p, "rb") as f, open(os.path.join(tdir, os.path.basename(p)), "wb") as g:
                g.write(f.read())
    for p in args.import_gguf:
        stem = os.path.basename(p).rsplit(".gguf", 1)[0]
        for key, text in gguf_templates(p).items():
            suffix = key[len("tokenizer.chat_template"):].replace(".", "-")
            with open(os.path.join(tdir, f"gguf-{stem}{suffix}.jinja"), "w", encoding="utf-8", newline="") as g:
                g.write(text)
    with open(os.path.join(DATA, "conversations.json"), encoding="utf-8") as f:
        convs = json.load(f)
    env = make_env()
    edir = os.path.join(DATA, "expected")
    os.makedirs(edir, exist_ok=True)
    n_ok = n_err = 0
    for p in sorted(glob.glob(os.path.join(tdir, "*.jinja"))):
        with open(p, encoding="utf-8", newline="") as f:
            source = f.read()
        res = {}
        for c in convs:
            r = render(env, source, c["context"])
            res[c["name"]] = r
            n_ok += "output" in r
            n_err += "error" in r
        stem = os.path.basename(p)[:-len(".jinja")]
        with open(os.path.join(edir, stem + ".json"), "w", encoding="utf-8") as g:
            json.dump(res, g, ensure_ascii=False, indent=1, sort_keys=True)
            g.write("\n")
    print(f"jinja2 {jinja2.__version__}: corpus {n_ok} renders, {n_err} errors", file=sys.stderr)
    # Language features: small templates, one per feature, each with its own variables.
    with open(os.path.join(DATA, "features.json"), encoding="utf-8") as f:
        feats = json.load(f)
    res = {c["name"]: render(env, c["template"], c["context"]) for c in feats}
    # The golden models' chat cases (tests/data/golden/*.json "chat"), rendered with the template
    # zf_chat_apply_template uses for that model: SmolLM2's own, the built-in Gemma one for the
    # Gemma 3 file (it has none). Neither template reads bos_token/eos_token.
    golden = {}
    for model, tname in (("smollm2", "gguf-smollm2-135m-instruct-q4_1"), ("gemma3", "builtin-gemma")):
        with open(os.path.join(ROOT, "tests", "data", "golden", model + ".json"), encoding="utf-8") as f:
            cases = json.load(f)["chat"]
        with open(os.path.join(tdir, tname + ".jinja"), encoding="utf-8", newline="") as f:
            source = f.read()
        golden[model] = [render(env, source, {"messages": c["messages"], "add_generation_prompt": True})["output"]
                         for c in cases]
    with open(os.path.join(DATA, "golden_chat.json"), "w", encoding="utf-8") as g:
        json.dump(golden, g, ensure_ascii=False, indent=1)
        g.write("\n")
    with open(os.path.join(DATA, "features_expected.json"), "w", encoding="utf-8") as g:
        json.dump(res, g, ensure_ascii=False, indent=1, sort_keys=True)
        g.write("\n")


if __name__ == "__main__":
    main()
