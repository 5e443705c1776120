#!/usr/bin/env python3
"""Fill-in-the-middle (issue #43 §4): llama-server's POST /infill and `suffix` on /v1/completions.

The model is scripts/fim_model.py's copy of SmolLM2 with FIM tokens (pre 11, suf 12, mid 13,
pad 14 by key, rep 4 "<reponame>", sep 5 by key). The server's FIM sequence is checked token for
token: /infill and /v1/completions with `suffix` answer exactly what /v1/completions answers
greedily for the expected token-id prompt (built here from /tokenize of the parts), and
tokens_evaluated is its length. SmolLM2 itself (no FIM tokens) gets the 400.
Run by tests/serve/test.sh (ZERFOO_CLI, ZERFOO_TEST_MODEL = SmolLM2).
"""
import http.client
import json
import os
import subprocess
import sys

from test_serve import Server, run_suite, sse_events

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PRE, SUF, MID, REP, SEP = 11, 12, 13, 4, 5
CTX = 4096  # llama-server's budget: a 2048-token batch plus the repository context
N = 12

PREFIX = "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n"
SUFFIX = "\n\nprint(fibonacci(10))\n"


def fim_model():
    out = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "fim_model.py"), os.environ["ZERFOO_TEST_MODEL"]],
                         capture_output=True, check=True, text=True, timeout=120)
    return out.stdout.strip()


def tok(s, text):
    st, _, r = s.post("/tokenize", {"content": text, "add_special": False, "parse_special": False})
    assert st == 200, r
    return r["tokens"]


def greedy(s, prompt_ids, n=N):
    st, _, r = s.post("/v1/completions", {"prompt": prompt_ids, "max_tokens": n, "temperature": 0, "ignore_eos": True})
    assert st == 200, r
    return r["choices"][0]["text"], r["usage"]["prompt_tokens"]


def infill(s, body):
    st, _, r = s.post("/infill", dict({"n_predict": N, "temperature": 0, "ignore_eos": True}, **body))
    assert st == 200, (st, r)
    return r


def bad(s, path, body, *words):
    st, _, r = s.request("POST", path, body if isinstance(body, str) else json.dumps(body))
    assert st == 400, (st, body, r)
    msg = json.loads(r)["error"]["message"]
    for w in words:
        assert w in msg, (w, msg, body)
    return msg


def repo_header(s):
    """llama-server's repository header, sent whenever the model has fim_rep / fim_sep."""
    return [REP] + tok(s, "myproject\n") + [SEP] + tok(s, "filename\n")


def test_infill_prompt_tokens(s):
    want = repo_header(s) + [PRE] + tok(s, PREFIX) + [SUF] + tok(s, SUFFIX) + [MID]
    text, n_prompt = greedy(s, want)
    assert n_prompt == len(want)
    r = infill(s, {"input_prefix": PREFIX, "input_suffix": SUFFIX})
    assert r["content"] == text, (r["content"], text)
    assert r["tokens_evaluated"] == len(want) and r["tokens_predicted"] == N, r
    assert r["stop"] is True and r["stop_type"] == "limit" and r["model"], r
    # `prompt` goes right after the prefix; special-token text in it is parsed.
    r = infill(s, {"input_prefix": PREFIX, "input_suffix": SUFFIX, "prompt": "    if n<|im_end|>"})
    want_p = repo_header(s) + [PRE] + tok(s, PREFIX) + tok(s, "    if n") + [2, SUF] + tok(s, SUFFIX) + [MID]
    assert r["content"] == greedy(s, want_p)[0] and r["tokens_evaluated"] == len(want_p), r
    # Mixed text and token ids, as llama-server's input_prefix takes them.
    r = infill(s, {"input_prefix": ["def f", 28120], "input_suffix": [SUF, "x"]})
    want_m = repo_header(s) + [PRE] + tok(s, "def f") + [28120, SUF, SUF] + tok(s, "x") + [MID]
    assert r["content"] == greedy(s, want_m)[0] and r["tokens_evaluated"] == len(want_m), r
    # OpenAI's `suffix` on /v1/completions: the same sequence, the same answer.
    c = s.client()
    out = c.completions.create(model="fim", prompt=PREFIX, suffix=SUFFIX, max_tokens=N, temperature=0,
                               extra_body={"ignore_eos": True})
    assert out.choices[0].text == text and out.usage.prompt_tokens == len(want), out
    # An empty suffix is a plain completion.
    out = c.completions.create(model="fim", prompt=PREFIX, suffix="", max_tokens=2, temperature=0)
    assert out.usage.prompt_tokens == len(tok(s, PREFIX)), out.usage


def test_repo_level_context(s):
    extra = [{"filename": "utils.py", "text": "def square(x):\n    return x * x\n"},
             {"text": "import math\n"}]  # llama-server's default filename: "tmp"
    want = [REP] + tok(s, "myproject\n")
    for c in extra:
        want += [SEP] + tok(s, c.get("filename", "tmp") + "\n") + tok(s, c["text"])
    want += [SEP] + tok(s, "filename\n") + [PRE] + tok(s, PREFIX) + [SUF] + tok(s, SUFFIX) + [MID]
    r = infill(s, {"input_prefix": PREFIX, "input_suffix": SUFFIX, "input_extra": extra})
    assert r["tokens_evaluated"] == len(want), (r["tokens_evaluated"], len(want))
    assert r["content"] == greedy(s, want)[0], r


def test_trimming_and_context(s):
    # A long prefix keeps its last 1536 tokens (3/4 of a 2048 batch), a long suffix its first
    # 512 - 2, as llama-server trims them.
    long_pre = "".join("x%d = %d\n" % (i, i) for i in range(700))
    long_suf = "".join("y%d = %d\n" % (i, i) for i in range(400))
    pre_t, suf_t = tok(s, long_pre), tok(s, long_suf)
    assert len(pre_t) > 1536 and len(suf_t) > 510, (len(pre_t), len(suf_t))
    want = repo_header(s) + [PRE] + pre_t[-1536:] + [SUF] + suf_t[:510] + [MID]
    r = infill(s, {"input_prefix": long_pre, "input_suffix": long_suf, "n_predict": 2})
    assert r["tokens_evaluated"] == len(want), (r["tokens_evaluated"], len(want))
    assert r["content"] == greedy(s, want, 2)[0], r
    # `prompt` is never trimmed: past the context it is a 400 naming both lengths.
    bad(s, "/infill", {"input_prefix": "a", "input_suffix": "b", "prompt": "z " * 5000}, "tokens", str(CTX))


def test_streaming(s):
    body = {"input_prefix": PREFIX, "input_suffix": SUFFIX, "n_predict": N, "temperature": 0, "ignore_eos": True}
    whole = infill(s, body)
    c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=60)
    c.request("POST", "/infill", json.dumps(dict(body, stream=True)), {"Content-Type": "application/json"})
    resp = c.getresponse()
    assert resp.status == 200 and resp.getheader("Content-Type", "").startswith("text/event-stream")
    events = [json.loads(e) for e in sse_events(resp)]
    c.close()
    assert len(events) >= 2 and all(e["stop"] is False for e in events[:-1]), events
    last = events[-1]
    assert last["stop"] is True and last["content"] == "" and last["stop_type"] == "limit", last
    assert "".join(e["content"] for e in events) == whole["content"]
    assert last["tokens_predicted"] == N and last["tokens_evaluated"] == whole["tokens_evaluated"]
    # Stop strings end it with stop_type "word".
    first = whole["content"].strip()[:3]
    if first:
        r = infill(s, {"input_prefix": PREFIX, "input_suffix": SUFFIX, "stop": [first]})
        assert r["stop_type"] == "word" and r["stopping_word"] == first, r


def test_malformed(s):
    ok = {"input_prefix": "a", "input_suffix": "b"}
    bad(s, "/infill", "{not json", "JSON")
    bad(s, "/infill", [1, 2], "object")
    bad(s, "/infill", {"input_suffix": "b"}, "'input_prefix' is required")
    bad(s, "/infill", {"input_prefix": "a"}, "'input_suffix' is required")
    bad(s, "/infill", dict(ok, input_prefix=3), "input_prefix")
    bad(s, "/infill", dict(ok, input_suffix={"x": 1}), "input_suffix")
    bad(s, "/infill", dict(ok, input_prefix=["a", 10 ** 9]), "input_prefix", "vocabulary")
    bad(s, "/infill", dict(ok, input_prefix=["a", None]), "input_prefix")
    bad(s, "/infill", dict(ok, input_extra="x"), "input_extra")
    bad(s, "/infill", dict(ok, input_extra=[3]), "input_extra")
    bad(s, "/infill", dict(ok, input_extra=[{"text": 3}]), "input_extra[0].text")
    bad(s, "/infill", dict(ok, input_extra=[{"filename": [], "text": "x"}]), "input_extra[0].filename")
    bad(s, "/infill", dict(ok, prompt=7), "'prompt' must be a string")
    bad(s, "/infill", dict(ok, n_predict="x"), "n_predict")
    bad(s, "/infill", dict(ok, n_predict=0), "max_tokens")
    bad(s, "/infill", dict(ok, temperature=-1), "temperature")
    bad(s, "/infill", dict(ok, stream="yes"), "stream")
    bad(s, "/infill", dict(ok, input_prefix="\udcff"), "")  # lone surrogate: not UTF-8 once encoded
    bad(s, "/v1/completions", {"prompt": "a", "suffix": 3}, "'suffix' must be a string")
    bad(s, "/v1/completions", {"prompt": [1, 2], "suffix": "b"}, "'prompt' must be a string")
    # The server still answers.
    assert infill(s, dict(ok, n_predict=1))["tokens_predicted"] == 1


def test_model_without_fim():
    s = Server("--ctx-size", str(CTX))
    try:
        msg = bad(s, "/infill", {"input_prefix": "a", "input_suffix": "b"}, "this model has no fill-in-the-middle tokens")
        assert "prefix" in msg and "suffix" in msg and "middle" in msg, msg
        bad(s, "/v1/completions", {"prompt": "a", "suffix": "b", "max_tokens": 1},
            "this model has no fill-in-the-middle tokens")
        # Without a suffix a completion is unaffected.
        st, _, r = s.post("/v1/completions", {"prompt": "a", "max_tokens": 1})
        assert st == 200, r
    finally:
        assert s.stop() == 0


def main():
    run_suite("infill", lambda: Server("--ctx-size", str(CTX), "--alias", "fim", model=fim_model()),
              [test_infill_prompt_tokens, test_repo_level_context, test_trimming_and_context, test_streaming, test_malformed],
              [test_model_without_fim])


if __name__ == "__main__":
    main()
