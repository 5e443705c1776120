#!/usr/bin/env python3
"""LoRA adapters in `zerfoo serve` (issue #44 §2): --lora FILE[:SCALE], GET/POST /lora-adapters
and a request's "lora": [{"id", "scale"}] (llama-server's shapes), on SmolLM2 with two random
adapters in llama.cpp's layout (scripts/synth_lora.py).

The oracle is the server itself without adapters and the library's own rules: scale 0 is the base
model's output exactly; a request's scales equal the same scales set as the server's default;
switching a slot between sets gives each set's own output (the session is emptied, not reused
under another set); per-request sets on concurrent slots do not leak into each other.
"""
import json
import os
import subprocess
import sys
import tempfile
import threading

from test_serve import CLI, MODEL, Server, run_suite

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
TMP = tempfile.mkdtemp(prefix="zerfoo-lora-")
N = 16


def adapter(name, *args):
    out = os.path.join(TMP, name)
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "synth_lora.py"), MODEL, out, *args], check=True,
                   capture_output=True, timeout=120)
    return out


A = adapter("a.gguf", "--seed", "1", "--b-scale", "0.3")
B = adapter("b.gguf", "--seed", "2", "--type", "f16", "--rank", "4", "--b-scale", "0.3")
BODY = {"prompt": "The three primary colors are", "max_tokens": N, "temperature": 0, "ignore_eos": True}


def complete(s, **extra):
    status, _, j = s.post("/v1/completions", dict(BODY, **extra))
    assert status == 200, j
    return j["choices"][0]["text"]


def set_scales(s, scales):
    status, _, j = s.post("/lora-adapters", [{"id": i, "scale": v} for i, v in enumerate(scales)])
    assert status == 200 and j == {"success": True}, j


def test_listing_and_default_scales(s):
    status, _, listing = s.request("GET", "/lora-adapters")
    listing = json.loads(listing)
    assert status == 200 and [(e["id"], e["path"], e["scale"]) for e in listing] == [(0, A, 0.0), (1, B, 0.5)], listing
    assert listing[0]["rank"] == 8 and listing[1]["rank"] == 4 and listing[0]["alpha"] == 16.0, listing


def test_scales_change_the_output(s):
    base = complete(s, lora=[])  # every adapter at 0: the base model
    default = complete(s)  # B at 0.5 (--lora B:0.5)
    only_b = complete(s, lora=[{"id": 1, "scale": 0.5}])
    only_a = complete(s, lora=[{"id": 0, "scale": 1.0}])
    both = complete(s, lora=[{"id": 0, "scale": 1.0}, {"id": 1, "scale": 0.5}])
    assert default == only_b, (default, only_b)
    assert len({base, only_a, only_b, both}) == 4, (base, only_a, only_b, both)
    # Back and forth on the one slot: each set gives its own output again (no stale KV rows).
    assert complete(s, lora=[]) == base and complete(s, lora=[{"id": 0, "scale": 1.0}]) == only_a
    # POST /lora-adapters sets what requests without "lora" get; unlisted ids are 0.
    set_scales(s, [1.0, 0.5])
    assert complete(s) == both
    status, _, j = s.post("/lora-adapters", [{"id": 0, "scale": 1.0}])
    assert status == 200, j
    assert complete(s) == only_a
    set_scales(s, [0.0, 0.5])
    assert complete(s) == default
    # The chat endpoint takes "lora" too.
    msgs = [{"role": "user", "content": "Name a color."}]
    status, _, c0 = s.post("/v1/chat/completions", {"messages": msgs, "max_tokens": 8, "temperature": 0, "lora": []})
    status, _, c1 = s.post("/v1/chat/completions", {"messages": msgs, "max_tokens": 8, "temperature": 0,
                                                    "lora": [{"id": 0, "scale": 1.0}]})
    assert status == 200 and c0["choices"][0]["message"] != c1["choices"][0]["message"], (c0, c1)
    return base


def test_concurrent_sets(s):
    want = {0.0: complete(s, lora=[]), 1.0: complete(s, lora=[{"id": 0, "scale": 1.0}])}
    got, errors = [], []

    def one(scale):
        try:
            got.append((scale, complete(s, lora=[{"id": 0, "scale": scale}])))
        except Exception as e:  # noqa: BLE001
            errors.append(e)
    threads = [threading.Thread(target=one, args=(v,)) for v in [0.0, 1.0] * 4]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert len(got) == 8 and all(text == want[scale] for scale, text in got), got


def test_errors(s):
    for body, word in [({"lora": {"id": 0}}, "'lora' must be an array"),
                       ({"lora": [{"id": 2, "scale": 1}]}, "not an adapter of this model"),
                       ({"lora": [{"id": "0", "scale": 1}]}, "'lora[0]' must be"),
                       ({"lora": [{"id": 0, "scale": "x"}]}, "'lora[0]' must be")]:
        status, _, j = s.post("/v1/completions", dict(BODY, **body))
        assert status == 400 and word in j["error"]["message"], (body, status, j)
    for body in [{"id": 0}, [{"id": 5, "scale": 1}], [{"id": 0, "scale": None, "x": 1}], "[1"]:
        status, _, j = s.request("POST", "/lora-adapters", body)
        assert status == 400, (body, status, j)


def test_base_equals_no_adapter():
    # Scale 0 everywhere is the base model exactly: a server without adapters writes the same.
    s = Server("--parallel", "1")
    try:
        status, _, j = s.post("/v1/completions", BODY)
        assert status == 200, j
        plain = j["choices"][0]["text"]
    finally:
        s.stop()
    s = Server("--parallel", "1", "--lora", A + ":0")
    try:
        assert complete(s) == plain and complete(s, lora=[{"id": 0, "scale": 0}]) == plain
    finally:
        s.stop()
    # An adapter that does not fit the model fails the start with the loader's message.
    bad = adapter("bad.gguf", "--defect", "bad_shape")
    out = subprocess.run([CLI, "serve", "-m", MODEL, "--port", "0", "--lora", bad], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode != 0 and "--lora " + bad in out.stderr, out.stderr


def main():
    run_suite("lora", lambda: Server("--parallel", "2", "--lora", A + ":0", "--lora", B + ":0.5"),
              [test_listing_and_default_scales, test_scales_change_the_output, test_concurrent_sets, test_errors],
              [test_base_equals_no_adapter])


if __name__ == "__main__":
    main()
