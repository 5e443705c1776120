#!/usr/bin/env python3
"""Ollama's API on `zerfoo serve` (issue #43 §3), through the official `ollama` client 0.6.3.

One server with SmolLM2 and Qwen 2.5's chat template (a tool-call format), one with SmolLM2 given
FIM tokens (`suffix`) and DeepSeek-R1's template (reasoning opened by the prompt) for `think`. Greedy answers are compared with the
same request through /v1/chat/completions and /v1/completions (the one generation path), streamed
answers with non-streamed ones; raw HTTP for framing and malformed bodies.

Environment: ZERFOO_CLI, ZERFOO_TEST_MODEL (as test_serve.py).
"""
import datetime
import json
import os
import re

import jsonschema
import ollama

from test_infill import fim_model
from test_serve import CTX, MODEL, TEMPLATES, TOOLS, Server, run_suite

N = 16  # tokens per greedy answer: short for a 2-core CI
GREEDY = {"temperature": 0, "num_predict": N}
# A weather conversation whose earlier turns call the tool: the model follows them, and the
# call's arguments are constrained to the tool's schema once it opens the call (tool_choice auto).
SHOTS = [{"role": "user", "content": "Weather in Paris?"},
         {"role": "assistant", "content": "", "tool_calls": [
             {"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
         {"role": "user", "content": "Weather in Rome?"},
         {"role": "assistant", "content": "", "tool_calls": [
             {"function": {"name": "get_weather", "arguments": {"city": "Rome"}}}]},
         {"role": "user", "content": "Weather in Oslo?"}]
RFC3339_NS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$")


def client(s):
    return ollama.Client(host=s.base, timeout=120)


def check_final(r, n_max=N):
    """The last answer of a turn: Ollama's statistics (ns durations, token counts)."""
    assert r.done is True and r.done_reason in ("stop", "length"), r
    assert RFC3339_NS.match(r.created_at), r.created_at
    assert r.prompt_eval_count > 0 and 0 < r.eval_count <= n_max, r
    # The library's own prefill and decode times, streamed or not; together within the total.
    assert r.prompt_eval_duration > 0 and r.eval_duration > 0 and r.load_duration == 0, r
    assert r.total_duration >= r.prompt_eval_duration + r.eval_duration, r
    assert (r.done_reason == "length") == (r.eval_count == n_max), r


def ndjson(s, path, body):
    """POSTs over raw HTTP; returns (status, content type, parsed lines)."""
    c = s.conn()
    c.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read().decode()
    c.close()
    return r.status, r.getheader("Content-Type"), [json.loads(x) for x in data.splitlines() if x]


def test_probes(s):
    # What clients ask before anything else: GET/HEAD /, the version, the model list.
    st, hdrs, body = s.request("GET", "/")
    assert st == 200 and body == b"Ollama is running", (st, body)
    assert s.request("HEAD", "/")[0] == 200
    c = client(s)
    st, _, raw = s.request("GET", "/api/version")
    assert st == 200 and re.match(r"^0\.\d+\.\d+$", json.loads(raw)["version"]), raw
    models = c.list().models
    assert len(models) == 1, models
    m = models[0]
    assert m.model == "smollm2:latest" and m.size == os.path.getsize(MODEL), m
    assert re.match(r"^[0-9a-f]{64}$", m.digest) and isinstance(m.modified_at, datetime.datetime), m
    d = m.details
    assert d.format == "gguf" and d.family == "llama" and d.families == ["llama"], d
    assert d.parameter_size == "135M" and d.quantization_level, d
    ps = c.ps().models
    assert len(ps) == 1 and ps[0].model == "smollm2:latest" and ps[0].context_length == CTX, ps
    assert ps[0].size_vram == 0 and ps[0].expires_at.year > datetime.date.today().year, ps
    assert ps[0].digest == m.digest
    for name in ("smollm2", "smollm2:latest"):
        sh = c.show(name)
        assert sh.details.family == "llama" and sh.modelinfo["general.architecture"] == "llama", sh
        assert sh.modelinfo["llama.context_length"] == 8192 and sh.modelinfo["general.parameter_count"] > 1e8, sh
        # Qwen 2.5's template renders tools; it has no reasoning switch.
        assert set(sh.capabilities) == {"completion", "embedding", "tools"}, sh.capabilities
        assert "<tools>" in sh.template and sh.parameters == "num_ctx %d" % CTX, sh
    for call in (lambda: c.show("llama3:8b"), lambda: c.chat(model="smollm2:7b", messages=[{"role": "user", "content": "x"}]),
                 lambda: c.generate(model="other", prompt="x"), lambda: c.embed(model="other", input="x")):
        try:
            call()
            raise AssertionError("another model's name was accepted")
        except ollama.ResponseError as e:
            assert e.status_code == 404 and "not found" in e.error, e


def test_chat(s):
    c = client(s)
    msgs = [{"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "Name three fruits."}]
    full = c.chat(model="smollm2", messages=msgs, options=GREEDY, stream=False)
    assert full.model == "smollm2" and full.message.role == "assistant" and full.message.content, full
    check_final(full)
    parts = list(c.chat(model="smollm2", messages=msgs, options=GREEDY, stream=True))
    assert len(parts) > 2 and all(not p.done for p in parts[:-1]), parts
    assert "".join(p.message.content for p in parts) == full.message.content, (parts, full)
    check_final(parts[-1])
    assert parts[-1].eval_count == full.eval_count and parts[-1].prompt_eval_count == full.prompt_eval_count
    assert parts[-1].prompt_eval_duration > 0  # streamed: the time to the first piece
    # The same turn through /v1/chat/completions: the one generation path, the same answer.
    st, _, oa = s.post("/v1/chat/completions", {"messages": msgs, "temperature": 0, "max_tokens": N})
    assert st == 200 and oa["choices"][0]["message"]["content"] == full.message.content, (oa, full)
    # The stream is NDJSON by default (no "stream" field), one object a line.
    st, ctype, lines = ndjson(s, "/api/chat", {"model": "smollm2:latest", "messages": msgs, "options": GREEDY})
    assert st == 200 and ctype.startswith("application/x-ndjson"), (st, ctype)
    assert "".join(x["message"]["content"] for x in lines) == full.message.content and lines[-1]["done"], lines
    assert lines[0]["model"] == "smollm2:latest"
    # Options: a stop string ends the answer; num_predict -1 is accepted (the context bounds it);
    # unknown and unsupported-but-harmless options are ignored as Ollama ignores them.
    stop_at = full.message.content.split()[1]
    r = c.chat(model="smollm2", messages=msgs, options=dict(GREEDY, stop=[stop_at], num_ctx=8192, mirostat=0,
                                                            repeat_last_n=64, repeat_penalty=1.0, seed=7, top_k=40,
                                                            top_p=0.9, min_p=0.0))
    assert stop_at not in r.message.content and full.message.content.startswith(r.message.content), (r, full)
    assert r.done_reason == "stop"
    r = c.chat(model="smollm2", messages=[{"role": "user", "content": "Say hi."}], keep_alive="5m",
               options={"temperature": 0, "num_predict": -1, "stop": ["\n"]})
    assert r.done and r.eval_count < CTX, r
    # No messages: Ollama's "load the model" probe.
    r = c.chat(model="smollm2", messages=[])
    assert r.done and r.done_reason == "load" and r.message.content == "", r


def test_chat_tools(s):
    c = client(s)
    params = TOOLS[0]["function"]["parameters"]
    full = c.chat(model="smollm2", messages=SHOTS, tools=TOOLS, options={"temperature": 0, "num_predict": 64},
                  stream=False)
    calls = full.message.tool_calls
    assert calls and full.done_reason == "stop", full
    for call in calls:
        assert call.function.name in ("get_weather", "search"), call
        assert isinstance(call.function.arguments, dict), call  # an object, as Ollama sends it
        if call.function.name == "get_weather":
            jsonschema.validate(dict(call.function.arguments), params)
    # Streamed: each call comes whole in one message (arguments an object), as Ollama sends it.
    parts = list(c.chat(model="smollm2", messages=SHOTS, tools=TOOLS, options={"temperature": 0, "num_predict": 64},
                        stream=True))
    streamed = [tc for p in parts for tc in (p.message.tool_calls or [])]
    assert [(t.function.name, dict(t.function.arguments)) for t in streamed] == \
        [(t.function.name, dict(t.function.arguments)) for t in calls], (streamed, calls)
    assert "".join(p.message.content for p in parts) == full.message.content
    print("    calls: %s" % [(t.function.name, dict(t.function.arguments)) for t in calls])
    # The history's tool calls (arguments objects) and tool results (tool_name) reach the
    # template as OpenAI's assistant tool_calls / tool messages: the same answer as the OpenAI
    # request with the same conversation.
    oa_msgs = [{"role": "user", "content": "Weather in Paris?"},
               {"role": "assistant", "content": "", "tool_calls": [
                   {"id": "call_1", "type": "function",
                    "function": {"name": "get_weather", "arguments": json.dumps({"city": "Paris"})}}]},
               {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "{\"temp_c\": 21}"},
               {"role": "user", "content": "And what should I wear?"}]
    ol_msgs = SHOTS[:2] + [{"role": "tool", "tool_name": "get_weather", "content": "{\"temp_c\": 21}"}, oa_msgs[3]]
    r = c.chat(model="smollm2", messages=ol_msgs, tools=TOOLS, options=GREEDY)
    st, _, oa = s.post("/v1/chat/completions", {"messages": oa_msgs, "tools": TOOLS, "temperature": 0, "max_tokens": N})
    assert st == 200, oa
    m = oa["choices"][0]["message"]
    assert r.message.content == (m.get("content") or ""), (r.message, m)
    assert len(r.message.tool_calls or []) == len(m.get("tool_calls") or []), (r.message, m)


def test_format(s):
    c = client(s)
    msgs = [{"role": "user", "content": "Describe a cat as JSON."}]
    r = c.chat(model="smollm2", messages=msgs, format="json", options={"temperature": 0, "num_predict": 96})
    assert r.done_reason == "stop" and isinstance(json.loads(r.message.content), dict), r
    schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20},
                                               "age": {"type": "integer"}},
              "required": ["name", "age"], "additionalProperties": False}
    for stream in (False, True):
        if stream:
            parts = list(c.chat(model="smollm2", messages=msgs, format=schema, stream=True,
                                options={"temperature": 0, "num_predict": 96}))
            text, final = "".join(p.message.content for p in parts), parts[-1]
        else:
            final = c.chat(model="smollm2", messages=msgs, format=schema, options={"temperature": 0, "num_predict": 96})
            text = final.message.content
        assert final.done_reason == "stop", final
        jsonschema.validate(json.loads(text), schema)
    g = c.generate(model="smollm2", prompt="A cat as JSON:", raw=True, format=schema,
                   options={"temperature": 0, "num_predict": 96})
    jsonschema.validate(json.loads(g.response), schema)


def test_generate(s):
    c = client(s)
    # raw: the prompt as it is, a text completion (as /v1/completions tokenizes it).
    prompt = "The capital of France is"
    full = c.generate(model="smollm2", prompt=prompt, raw=True, options=GREEDY)
    check_final(full)
    st, _, oa = s.post("/v1/completions", {"prompt": prompt, "temperature": 0, "max_tokens": N})
    assert st == 200 and oa["choices"][0]["text"] == full.response, (oa, full)
    parts = list(c.generate(model="smollm2", prompt=prompt, raw=True, options=GREEDY, stream=True))
    assert "".join(p.response for p in parts) == full.response and parts[-1].done, parts
    check_final(parts[-1])
    # Templated (the default): the prompt as the user's message, after the system's.
    t = c.generate(model="smollm2", prompt="Name three fruits.", system="You are a helpful assistant.", options=GREEDY)
    check_final(t)
    ch = c.chat(model="smollm2", messages=[{"role": "system", "content": "You are a helpful assistant."},
                                           {"role": "user", "content": "Name three fruits."}], options=GREEDY)
    assert t.response == ch.message.content, (t, ch)
    parts = list(c.generate(model="smollm2", prompt="Name three fruits.", system="You are a helpful assistant.",
                            options=GREEDY, stream=True))
    assert "".join(p.response for p in parts) == t.response, parts
    # An empty prompt: the load probe. context (deprecated) is ignored.
    r = c.generate(model="smollm2")
    assert r.done and r.done_reason == "load" and r.response == "", r
    r = c.generate(model="smollm2", prompt=prompt, raw=True, context=[1, 2, 3], options=GREEDY)
    assert r.response == full.response
    # suffix: fill-in-the-middle, which SmolLM2 has no tokens for (test_think's model has them).
    for kw, needle in [({"suffix": " world"}, "fill-in-the-middle"), ({"template": "{{ .Prompt }}"}, "template"),
                       ({"images": ["aGk="]}, "vision model")]:
        try:
            c.generate(model="smollm2", prompt="hello", **kw)
            raise AssertionError("accepted %s" % kw)
        except ollama.ResponseError as e:
            assert e.status_code == 400 and needle in e.error, (kw, e)


def test_embed(s):
    c = client(s)
    texts = ["The capital of France is Paris.", "Bananas are yellow."]
    r = c.embed(model="smollm2", input=texts)
    assert r.model == "smollm2" and len(r.embeddings) == 2 and r.prompt_eval_count > 0, r
    assert len(r.embeddings[0]) == 576 and r.total_duration > 0, len(r.embeddings[0])
    st, _, oa = s.post("/v1/embeddings", {"input": texts, "encoding_format": "float"})
    assert st == 200 and [d["embedding"] for d in oa["data"]] == [list(v) for v in r.embeddings]
    assert oa["usage"]["prompt_tokens"] == r.prompt_eval_count
    one = c.embed(model="smollm2:latest", input=texts[0], dimensions=64)
    assert len(one.embeddings) == 1 and len(one.embeddings[0]) == 64, one
    old = c.embeddings(model="smollm2", prompt=texts[0])
    assert list(old.embedding) == list(r.embeddings[0]), "the old endpoint gave another vector"
    assert list(c.embeddings(model="smollm2", prompt="").embedding) == []
    # Past the context: truncate (Ollama's default) keeps what fits; truncate false is a 400.
    long = "word " * (CTX + 100)
    assert len(c.embed(model="smollm2", input=long).embeddings[0]) == 576
    try:
        c.embed(model="smollm2", input=long, truncate=False)
        raise AssertionError("an input past the context was accepted")
    except ollama.ResponseError as e:
        assert e.status_code == 400 and str(CTX) in e.error, e


def test_errors(s):
    # Every malformed body: 400 with Ollama's {"error": "..."} naming the field.
    chat = {"model": "smollm2", "messages": [{"role": "user", "content": "hi"}], "options": {"num_predict": 2}}
    for path, body, needle in [
            ("/api/chat", "{not json", "not valid JSON"),
            ("/api/chat", "[1, 2]", "JSON object"),
            ("/api/chat", {"messages": chat["messages"]}, "model is required"),
            ("/api/chat", dict(chat, model=5), "'model'"),
            ("/api/chat", dict(chat, messages="hi"), "'messages'"),
            ("/api/chat", dict(chat, messages=[5]), "'messages[0]'"),
            ("/api/chat", dict(chat, messages=[{"content": "x"}]), "'messages[0].role'"),
            ("/api/chat", dict(chat, messages=[{"role": "user", "content": 5}]), "'messages[0].content'"),
            ("/api/chat", dict(chat, messages=[{"role": "user", "content": "x", "images": ["aGk="]}]), "vision model"),
            ("/api/chat", dict(chat, messages=[{"role": "assistant", "tool_calls": [{"function": {"arguments": {}}}]}]),
             "'messages[0].tool_calls[0].function.name'"),
            ("/api/chat", dict(chat, messages=[{"role": "assistant", "tool_calls": [
                {"function": {"name": "f", "arguments": 3}}]}]), "arguments"),
            ("/api/chat", dict(chat, tools={"name": "f"}), "'tools'"),
            ("/api/chat", dict(chat, format="yaml"), "'format'"),
            ("/api/chat", dict(chat, format=["json"]), "'format'"),
            ("/api/chat", dict(chat, think="max"), "'think'"),
            ("/api/chat", dict(chat, stream="yes"), "'stream'"),
            ("/api/chat", dict(chat, keep_alive=[1]), "'keep_alive'"),
            ("/api/chat", dict(chat, options=[1]), "'options'"),
            ("/api/chat", dict(chat, options={"temperature": "hot"}), "'options.temperature'"),
            ("/api/chat", dict(chat, options={"temperature": -1}), "'options.temperature'"),
            ("/api/chat", dict(chat, options={"num_predict": 0}), "'options.num_predict'"),
            ("/api/chat", dict(chat, options={"num_predict": 1.5}), "'options.num_predict'"),
            ("/api/chat", dict(chat, options={"num_ctx": "big"}), "'options.num_ctx'"),
            ("/api/chat", dict(chat, options={"top_p": 2}), "'options.top_p'"),
            ("/api/chat", dict(chat, options={"stop": [1]}), "'options.stop'"),
            ("/api/chat", dict(chat, format={"type": "object", "properties": {"a": {"type": "nope"}}}), ""),
            ("/api/generate", {"model": "smollm2", "prompt": 5}, "'prompt'"),
            ("/api/generate", {"model": "smollm2", "prompt": "x", "raw": "yes"}, "'raw'"),
            ("/api/generate", {"model": "smollm2", "prompt": "x", "system": 1}, "'system'"),
            ("/api/embed", {"model": "smollm2"}, "'input'"),
            ("/api/embed", {"model": "smollm2", "input": [1, 2]}, "'input'"),
            ("/api/embed", {"model": "smollm2", "input": "x", "truncate": "no"}, "'truncate'"),
            ("/api/embed", {"model": "smollm2", "input": "x", "dimensions": -3}, "'dimensions'"),
            ("/api/embeddings", {"model": "smollm2", "prompt": ["x"]}, "'prompt'"),
            ("/api/show", {}, "model is required")]:
        st, hdrs, raw = s.request("POST", path, body)
        out = json.loads(raw)
        assert st == 400 and isinstance(out.get("error"), str) and needle in out["error"], (path, body, st, out)
    # A prompt past the context: a 400 naming both lengths, never a silent truncation.
    long = "hello " * (CTX + 200)
    for path, body in [("/api/chat", {"model": "smollm2", "messages": [{"role": "user", "content": long}]}),
                       ("/api/generate", {"model": "smollm2", "prompt": long}),
                       ("/api/generate", {"model": "smollm2", "prompt": long, "raw": True, "stream": False})]:
        st, _, out = s.post(path, body)
        assert st == 400 and str(CTX) in out["error"] and re.search(r"\b\d{4,}\b.*tokens|tokens.*\b\d{4,}\b",
                                                                     out["error"]), (path, st, out)
    # Every field of each endpoint's body replaced by each JSON type: an answer or a 4xx in
    # Ollama's shape, never a 500 (the parser checks every type it reads).
    bodies = {"/api/chat": dict(chat, tools=TOOLS, format="json", think=False, stream=False, keep_alive="1m"),
              "/api/generate": {"model": "smollm2", "prompt": "hi", "system": "s", "raw": False, "stream": False,
                                "format": "json", "think": True, "options": {"num_predict": 2}, "context": [1],
                                "suffix": "", "images": [], "template": "", "keep_alive": 0},
              "/api/embed": {"model": "smollm2", "input": ["a"], "truncate": True, "dimensions": 8, "options": {}},
              "/api/embeddings": {"model": "smollm2", "prompt": "a", "options": {}},
              "/api/show": {"model": "smollm2", "verbose": True}}
    n = 0
    for path, base in bodies.items():
        for key in base:
            for v in (None, 7, -1, 2.5, "x", "", True, [], ["x"], [{}], {}, {"a": [1]}):
                if key == "options" and (v is None or isinstance(v, dict)):
                    continue  # options without num_predict: an answer as long as the context
                st, _, raw = s.request("POST", path, dict(base, **{key: v}))
                assert st in (200, 400, 404) and (st == 200 or isinstance(json.loads(raw)["error"], str)), \
                    (path, key, v, st, raw)
                n += 1
    print("    %d bodies with a field of another type: no 500" % n)
    c = client(s)
    try:
        c.chat(model="smollm2", messages=[{"role": "user", "content": long}], options={"num_ctx": 65536})
        raise AssertionError("a prompt past the context was accepted with num_ctx")
    except ollama.ResponseError as e:
        assert e.status_code == 400 and str(CTX) in e.error, e
    assert s.request("GET", "/health")[0] == 200


def test_think_and_suffix():
    # SmolLM2 with FIM tokens (scripts/fim_model.py, as test_infill.py uses) and DeepSeek-R1's
    # template, which opens <think> when enable_thinking is on: SmolLM2 never closes it within
    # the budget, so the whole answer is `thinking`, streamed or not.
    s = Server("--alias", "r1", "--chat-template-file",
               os.path.join(TEMPLATES, "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"), model=fim_model())
    try:
        c = client(s)
        # generate's suffix: the FIM sequence /v1/completions builds for prompt + suffix.
        pre, suf = "def fibonacci(n):\n", "\n\nprint(fibonacci(10))\n"
        g = c.generate(model="r1", prompt=pre, suffix=suf, options=GREEDY)
        st, _, oa = s.post("/v1/completions", {"prompt": pre, "suffix": suf, "temperature": 0, "max_tokens": N})
        assert st == 200 and g.response == oa["choices"][0]["text"] and g.response, (g, oa)
        assert g.prompt_eval_count == oa["usage"]["prompt_tokens"], (g, oa["usage"])
        parts = list(c.generate(model="r1", prompt=pre, suffix=suf, options=GREEDY, stream=True))
        assert "".join(p.response for p in parts) == g.response, parts
        msgs = [{"role": "user", "content": "Name three fruits."}]
        for think in (True, "high"):
            full = c.chat(model="r1", messages=msgs, think=think, options=GREEDY)
            assert full.message.thinking and full.message.content == "", full
            parts = list(c.chat(model="r1", messages=msgs, think=think, options=GREEDY, stream=True))
            assert "".join(p.message.thinking or "" for p in parts) == full.message.thinking, parts
            assert "".join(p.message.content for p in parts) == ""
        g = c.generate(model="r1", prompt="Name three fruits.", think=True, options=GREEDY)
        assert g.thinking == full.message.thinking and g.response == "", g
        off = c.chat(model="r1", messages=msgs, think=False, options=GREEDY)
        assert off.message.content and not off.message.thinking, off
        assert "thinking" in c.show("r1").capabilities
    finally:
        assert s.stop() == 0


def main():
    run_suite("ollama", lambda: Server("--alias", "smollm2", "--parallel", "2",
                                      "--chat-template-file", os.path.join(TEMPLATES, "Qwen-Qwen2.5-7B-Instruct.jinja")),
              [test_probes, test_chat, test_chat_tools, test_format, test_generate, test_embed, test_errors],
              [test_think_and_suffix])


if __name__ == "__main__":
    main()
