#!/usr/bin/env python3
"""Hostile requests against `zerfoo serve` (issue #41): inputs that crashed the server or got a
500 are 400s naming the problem, and the server keeps answering /health.

- a Lark grammar of 3,000 chained rules (overflowed an 8 MB stack: SIGSEGV) compiles; 100,000
  are refused as too large;
- JSON nested 10^5 deep in a response schema (anyOf, enum, default), in a tool's parameters and
  in an assistant message's tool-call arguments;
- repeat_penalty 0; constraints that match no text ({"$ref": "#"}, start: start, a rule cycle)
  and one that stops matching after a token;
- a constrained number ends (SmolLM2 wrote "1.1111..." to max_tokens).

Run by tests/serve/test.sh after test_serve.py (same environment: ZERFOO_CLI,
ZERFOO_TEST_MODEL), or alone: python3 tests/serve/test_hostile.py.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_serve import Server  # noqa: E402  (starts nothing on import)

MSG = [{"role": "user", "content": "hi"}]


def chain(n):
    return "start: r0\n" + "".join(f"r{i}: r{i + 1}\n" for i in range(n)) + f'r{n}: "a"\n'


def raw_chat(extra_json):
    """A chat body with `extra_json` (raw JSON text, possibly too deep for json.dumps) spliced in."""
    return ('{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4, ' + extra_json + "}").encode()


def deep(n):
    return "[" * n + "]" * n


def expect_400(s, body, what, needle=None):
    st, _, err = s.post("/v1/chat/completions", body)
    assert st == 400, (what, st, err)
    assert err["error"]["type"] == "invalid_request_error", (what, err)
    if needle is not None:
        assert needle in err["error"]["message"], (what, err)
    st, _, _ = s.request("GET", "/health")
    assert st == 200, (what, "health", st)
    assert s.proc.poll() is None, (what, "server died")


def test_deep_grammar(s):
    st, _, r = s.post("/v1/chat/completions", {"messages": MSG, "max_tokens": 4, "grammar": chain(3000)})
    assert st == 200 and r["choices"][0]["message"]["content"] == "a", (st, r)
    expect_400(s, {"messages": MSG, "max_tokens": 4, "grammar": chain(100000)}, "chain 10^5", "too large")


def test_deep_json(s):
    n = 100000
    schema_any = '{"anyOf": [' * n + '{"type": "string"}' + "]}" * n
    rf = '"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": %s}}'
    for what, body in [
        ("anyOf", raw_chat(rf % schema_any)),
        ("enum", raw_chat(rf % ('{"enum": [%s]}' % deep(n)))),
        ("default", raw_chat(rf % ('{"type": "string", "default": %s}' % deep(n)))),
        ("enum 300", raw_chat(rf % ('{"enum": [%s]}' % deep(300)))),  # past llguidance's 127
        ("tool parameters", raw_chat('"tools": [{"type": "function", "function": {"name": "f", "parameters": '
                                     '{"type": "object", "properties": {"a": {"type": "string", "default": %s}}}}}]'
                                     % deep(n))),
    ]:
        expect_400(s, body, what)
    for depth in (10000, 100000):
        args = '{"a": %s}' % deep(depth)
        body = {"messages": [MSG[0], {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": args}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"}], "max_tokens": 4}
        expect_400(s, body, "tool-call arguments %d" % depth, "deeper")


def test_client_errors_are_400(s):
    rf = lambda schema: {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}  # noqa: E731
    expect_400(s, {"messages": MSG, "max_tokens": 4, "repeat_penalty": 0}, "repeat_penalty 0", "repeat_penalty")
    expect_400(s, {"messages": MSG, "max_tokens": 4, "response_format": rf({"$ref": "#"})}, "$ref #",
               "no text can match")
    expect_400(s, {"messages": MSG, "max_tokens": 4, "grammar": "start: start\n"}, "start: start", "no text can match")
    expect_400(s, {"messages": MSG, "max_tokens": 4, "grammar": "start: a\na: b\nb: a\n"}, "cycle", "no text can match")
    # Matches nothing after its first token: fails during the generation, still a 400.
    expect_400(s, {"messages": MSG, "max_tokens": 8, "grammar": 'start: "x" a\na: a\n'}, "empty tail")


def test_constrained_number_ends(s):
    for schema in [{"type": "number"}, {"type": "array", "items": {"type": "number"}, "maxItems": 3}]:
        st, _, r = s.post("/v1/chat/completions", {
            "messages": [{"role": "user", "content": "What is 1/3?"}], "max_tokens": 200, "temperature": 0,
            "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}})
        assert st == 200, r
        text = r["choices"][0]["message"]["content"]
        assert r["choices"][0]["finish_reason"] == "stop", (schema, text)
        json.loads(text)
        run = longest = 0
        for c in text:
            run = run + 1 if c.isdigit() else 0
            longest = max(longest, run)
        assert longest <= 20, text


def main():
    t0 = time.time()
    s = Server("--parallel", "1")
    failed = []
    try:
        for t in [test_deep_grammar, test_deep_json, test_client_errors_are_400, test_constrained_number_ends]:
            t1 = time.time()
            try:
                t(s)
                print("PASS %s (%.1f s)" % (t.__name__, time.time() - t1), flush=True)
            except Exception:  # noqa: BLE001
                import traceback
                traceback.print_exc()
                print("FAIL %s" % t.__name__, flush=True)
                failed.append(t.__name__)
            if s.proc.poll() is not None:
                failed.append("server died: " + s.logtext()[-2000:])
                break
    finally:
        rc = s.stop()
    if rc != 0:
        failed.append("server exit code %s" % rc)
    print("hostile request tests: %d failed, %.1f s" % (len(failed), time.time() - t0))
    if failed:
        print("FAILED: " + ", ".join(failed))
        sys.exit(1)


if __name__ == "__main__":
    main()
