#!/usr/bin/env python3
"""Anthropic's Messages API of `zerfoo serve` (issue #43 §1), through the official `anthropic`
client (PyPI 2.x) and raw HTTP for the wire format: text, streaming (the SDK's accumulated stream
equals the whole answer), tools (tool_choice any / named: schema-valid tool_use input), a
tool_result round trip, thinking, stop sequences, count_tokens, the API key, and malformed bodies
as 400s in Anthropic's error shape.

Environment: ZERFOO_CLI, ZERFOO_TEST_MODEL (SmolLM2), as test_serve.py.
"""
import json
import os
import tempfile

import warnings

import anthropic
import jsonschema

from test_serve import Server, run_suite

# The SDK warns about the Claude model names it knows to be retiring; here any name is served.
warnings.filterwarnings("ignore", category=DeprecationWarning, module=__name__)
KEY = "sk-test-anthropic"
MODEL_NAME = "claude-sonnet-4-5-20250929"  # any name is served by the one model, and echoed
GREEDY = {"temperature": 0}  # the 2.x SDK has no sampling arguments; clients send them anyway
USER = [{"role": "user", "content": "Name three fruits."}]
TOOLS = [{"name": "get_weather", "description": "Current weather of a city",
          "input_schema": {"type": "object", "properties": {"city": {"type": "string"},
                                                            "unit": {"enum": ["celsius", "fahrenheit"]}},
                           "required": ["city", "unit"]}},
         {"name": "search", "description": "Web search",
          "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}]
SCHEMAS = {t["name"]: t["input_schema"] for t in TOOLS}

# A ChatML template that keeps reasoning in the history between <think> markers and opens it in
# the generation prompt unless enable_thinking is false: with two examples in the history,
# SmolLM2 closes its reasoning and answers, so a turn has a thinking block and a text block.
THINK_TEMPLATE = r"""
{%- for message in messages -%}
{%- if message.role == 'assistant' -%}
{{ '<|im_start|>assistant\n' }}{% if message.reasoning_content %}{{ '<think>\n' + message.reasoning_content + '\n</think>\n\n' }}{% endif %}{{ (message.content or '') + '<|im_end|>\n' }}
{%- else -%}
{{ '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>\n' }}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
{{ '<|im_start|>assistant\n' }}{% if enable_thinking is not defined or enable_thinking %}{{ '<think>\n' }}{% endif %}
{%- endif -%}
""".strip()
THINK_SHOTS = [
    {"role": "user", "content": "Name a fruit."},
    {"role": "assistant", "content": [{"type": "thinking", "thinking": "A fruit: apple.", "signature": "sig"},
                                      {"type": "text", "text": "Apple."}]},
    {"role": "user", "content": "Name a color."},
    {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "opaque"},
                                      {"type": "thinking", "thinking": "A color: red.", "signature": "sig"},
                                      {"type": "text", "text": "Red."}]},
    {"role": "user", "content": "Name an animal."}]


def client(s, key=KEY):
    return anthropic.Anthropic(base_url=s.base, api_key=key, max_retries=0, timeout=120)


def blocks(content):
    """Content blocks as comparable dicts (the SDK's stream snapshot adds fields of its own)."""
    out = []
    for b in content:
        d = {"type": b.type}
        for k in ("text", "thinking", "signature", "id", "name", "input"):
            if hasattr(b, k):
                d[k] = getattr(b, k)
        out.append(d)
    return out


def raw_stream(s, body, headers=None):
    """POSTs a streamed /v1/messages over raw HTTP; returns [(event, data)] after checking the
    framing: every event is 'event: T\\ndata: {"type": T, ...}'."""
    c = s.conn()
    h = {"Content-Type": "application/json", "x-api-key": KEY, "anthropic-version": "2023-06-01"}
    h.update(headers or {})
    c.request("POST", "/v1/messages", body=json.dumps(dict(body, stream=True)), headers=h)
    r = c.getresponse()
    assert r.status == 200, r.read()
    assert r.getheader("Content-Type").startswith("text/event-stream"), r.getheaders()
    data = r.read().decode()
    c.close()
    assert data.endswith("\n\n"), data[-200:]
    events = []
    for chunk in data[:-2].split("\n\n"):
        lines = chunk.split("\n")
        assert len(lines) == 2 and lines[0].startswith("event: ") and lines[1].startswith("data: "), chunk
        ev, payload = lines[0][len("event: "):], json.loads(lines[1][len("data: "):])
        assert payload["type"] == ev, (ev, payload)
        events.append((ev, payload))
    return events


def check_event_order(events):
    """message_start, ping, then blocks (start, deltas of its kind, stop; indexes 0, 1, ...), then
    message_delta and message_stop. Returns the blocks assembled from the deltas."""
    kinds = [e for e, _ in events]
    assert kinds[:2] == ["message_start", "ping"] and kinds[-2:] == ["message_delta", "message_stop"], kinds
    start = events[0][1]["message"]
    assert start["content"] == [] and start["stop_reason"] is None and start["role"] == "assistant", start
    out, open_index = [], None
    for ev, d in events[2:-2]:
        if ev == "content_block_start":
            assert open_index is None and d["index"] == len(out), (ev, d)
            open_index = d["index"]
            b = dict(d["content_block"])
            b["partial"] = ""
            out.append(b)
        elif ev == "content_block_delta":
            assert d["index"] == open_index, (ev, d)
            b, delta = out[open_index], d["delta"]
            want = {"text": "text_delta", "thinking": ("thinking_delta", "signature_delta"),
                    "tool_use": "input_json_delta"}[b["type"]]
            assert delta["type"] in (want if isinstance(want, tuple) else (want,)), (b, delta)
            if delta["type"] == "text_delta":
                b["text"] += delta["text"]
            elif delta["type"] == "thinking_delta":
                assert "signature_seen" not in b, "thinking after its signature"
                b["thinking"] += delta["thinking"]
            elif delta["type"] == "signature_delta":
                b["signature"], b["signature_seen"] = delta["signature"], True
            else:
                b["partial"] += delta["partial_json"]
        elif ev == "content_block_stop":
            assert d["index"] == open_index, (ev, d)
            if out[open_index]["type"] == "thinking":
                assert out[open_index].get("signature_seen"), "a thinking block ends with its signature_delta"
            open_index = None
        else:
            raise AssertionError("unexpected event %s" % ev)
    assert open_index is None, "a block was left open"
    for b in out:
        if b["type"] == "tool_use":
            b["input"] = json.loads(b["partial"]) if b["partial"] else {}
        b.pop("partial")
        b.pop("signature_seen", None)
    return out


# ---- tests on the main server (SmolLM2's own template, --api-key) ---------------------------


def test_text_and_stream(s):
    c = client(s)
    req = dict(model=MODEL_NAME, max_tokens=20, messages=USER, extra_body=GREEDY, metadata={"user_id": "u1"},
               system=[{"type": "text", "text": "You are a helpful assistant.", "cache_control": {"type": "ephemeral"}}])
    m = c.messages.create(**req)
    assert m.type == "message" and m.role == "assistant" and m.id.startswith("msg_"), m
    assert m.model == MODEL_NAME, m.model
    assert [b.type for b in m.content] == ["text"] and m.content[0].text.strip(), m
    assert m.stop_reason in ("end_turn", "max_tokens") and m.stop_sequence is None, m
    u = m.usage
    assert 0 < u.output_tokens <= 20 and u.cache_creation_input_tokens == 0, u
    n = c.messages.count_tokens(model=MODEL_NAME, messages=USER, system=req["system"]).input_tokens
    assert u.input_tokens + u.cache_read_input_tokens == n > 10, (u, n)
    # The same greedy request streamed: the SDK's accumulated message equals the whole one.
    with c.messages.stream(**req) as st:
        texts = list(st.text_stream)
        f = st.get_final_message()
    assert "".join(texts) == m.content[0].text and len(texts) > 1, texts
    assert blocks(f.content) == blocks(m.content), (f.content, m.content)
    assert (f.stop_reason, f.stop_sequence, f.usage.output_tokens) == (m.stop_reason, None, u.output_tokens), f
    assert f.usage.input_tokens + f.usage.cache_read_input_tokens == n and f.model == MODEL_NAME, f.usage
    assert f.usage.cache_read_input_tokens > 0, "the second turn of the same prompt hit no cache: %s" % f.usage
    # The raw wire format: typed events in order.
    body = {"model": MODEL_NAME, "max_tokens": 20, "messages": USER, "system": "You are a helpful assistant.",
            **GREEDY}
    events = raw_stream(s, body)
    assert check_event_order(events) == [{"type": "text", "text": m.content[0].text}], events
    d = events[-2][1]
    assert d["delta"] == {"stop_reason": m.stop_reason, "stop_sequence": None}, d
    assert d["usage"]["output_tokens"] == u.output_tokens, d
    # The SDK's own event objects (a client iterating create(stream=True)).
    kinds = [e.type for e in c.messages.create(**dict(req, stream=True))]
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop" and "content_block_delta" in kinds, kinds
    # What Claude Code sends (tests/serve/agents/FINDINGS.md): POST /v1/messages?beta=true, a
    # billing header block first in `system` whose few hex characters differ per conversation
    # (left out, so that conversations share the prefix), a system message inside `messages`
    # (added to the system prompt), thinking "adaptive", context_management, output_config.effort,
    # metadata.user_id as a JSON string.
    sys_blocks = [{"type": "text", "text": "You are a Claude agent."},
                  {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]
    base = c.messages.count_tokens(model=MODEL_NAME, system=sys_blocks, messages=USER).input_tokens
    for hexes in ("3bb", "a01"):
        billed = [{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.197.%s; cc_entrypoint=sdk-cli;" % hexes}]
        n = c.messages.count_tokens(model=MODEL_NAME, system=billed + sys_blocks, messages=USER).input_tokens
        assert n == base, (hexes, n, base)
    folded = c.messages.count_tokens(model=MODEL_NAME, system=sys_blocks[:1], messages=USER[:1] + [
        {"role": "system", "content": "Be brief."}]).input_tokens
    assert folded == base, (folded, base)
    cc = {"model": MODEL_NAME, "max_tokens": 32000, "stream": False, "system": billed + sys_blocks,
          "messages": [USER[0], {"role": "system", "content": "Agents: none."}],
          "thinking": {"type": "adaptive"}, "output_config": {"effort": "high"},
          "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
          "metadata": {"user_id": json.dumps({"device_id": "ab", "session_id": "cd"})}}
    status, _, out = s.post("/v1/messages?beta=true", dict(cc, max_tokens=8),
                            {"x-api-key": KEY, "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14"})
    assert status == 200 and out["type"] == "message" and out["content"], out
    # max_tokens past the context is not an error: the context ends the answer.
    big = c.messages.create(**dict(req, max_tokens=1_000_000))
    assert big.stop_reason in ("end_turn", "max_tokens"), big


def test_stop_sequences(s):
    c = client(s)
    req = dict(model=MODEL_NAME, max_tokens=24, messages=USER, extra_body=GREEDY)
    full = c.messages.create(**req).content[0].text
    words = full.split()
    assert len(words) >= 4, full
    stop = words[len(words) // 2]
    m = c.messages.create(**dict(req, stop_sequences=[stop]))
    assert m.stop_reason == "stop_sequence" and m.stop_sequence == stop, (m, stop)
    text = m.content[0].text if m.content else ""
    assert full.startswith(text) and stop not in text, (full, text, stop)
    with c.messages.stream(**dict(req, stop_sequences=[stop])) as st:
        f = st.get_final_message()
    assert (f.stop_reason, f.stop_sequence, blocks(f.content)) == ("stop_sequence", stop, blocks(m.content)), f


def test_tools(s):
    c = client(s)
    server_tool = {"type": "web_search_20250305", "name": "web_search", "max_uses": 2}
    base = dict(model=MODEL_NAME, max_tokens=96, extra_body=GREEDY, tools=TOOLS + [server_tool],
                messages=[{"role": "user", "content": "What is the weather in Paris?"}])
    for choice, names in [({"type": "any"}, None),
                          ({"type": "tool", "name": "search", "disable_parallel_tool_use": True}, ["search"])]:
        req = dict(base, tool_choice=choice)
        raw = c.messages.with_raw_response.create(**req)
        # Server tools are not served here: left out, and the answer says so.
        assert "web_search" in raw.headers.get("X-Zerfoo-Ignored-Tools", ""), dict(raw.headers)
        m = raw.parse()
        uses = [b for b in m.content if b.type == "tool_use"]
        assert m.stop_reason == "tool_use" and uses, (choice, m)
        assert not choice.get("disable_parallel_tool_use") or len(uses) == 1, uses
        for b in uses:
            assert b.id and (names is None or b.name in names), (choice, b)
            assert isinstance(b.input, dict), b
            jsonschema.validate(b.input, SCHEMAS[b.name])
        with c.messages.stream(**req) as st:
            f = st.get_final_message()
        assert blocks(f.content) == blocks(m.content) and f.stop_reason == "tool_use", (f.content, m.content)
        events = raw_stream(s, {k: v for k, v in req.items() if k != "extra_body"} | GREEDY)
        streamed = check_event_order(events)
        assert [(b["id"], b["name"], b["input"]) for b in streamed if b["type"] == "tool_use"] == \
            [(b.id, b.name, b.input) for b in uses], (streamed, uses)
        fragments = sum(1 for e, d in events if e == "content_block_delta" and d["delta"]["type"] == "input_json_delta")
        assert fragments >= 1, events
        print("    %s: %s" % (choice["type"], [(b.name, b.input) for b in uses]))
    # count_tokens takes the same tools (SmolLM2's template does not show tools: the count is
    # the plain prompt's, as the turn's usage says).
    n = c.messages.count_tokens(model=MODEL_NAME, messages=base["messages"], tools=TOOLS + [server_tool]).input_tokens
    assert n == m.usage.input_tokens + m.usage.cache_read_input_tokens, (n, m.usage)
    # tool_choice none: no calls are read back.
    m = c.messages.create(**dict(base, tool_choice={"type": "none"}, max_tokens=16))
    assert m.stop_reason != "tool_use" and all(b.type == "text" for b in m.content), m


def test_tool_result_round_trip(s):
    c = client(s)
    turns = [{"role": "user", "content": "What is the weather in Paris?"},
             {"role": "assistant", "content": [
                 {"type": "text", "text": "Let me check."},
                 {"type": "tool_use", "id": "toolu_01", "name": "get_weather",
                  "input": {"city": "Paris", "unit": "celsius"}}]},
             {"role": "user", "content": [
                 {"type": "tool_result", "tool_use_id": "toolu_01",
                  "content": [{"type": "text", "text": "21 degrees, sunny"}], "cache_control": {"type": "ephemeral"}},
                 {"type": "text", "text": "Summarize it in one sentence."}]}]
    m = c.messages.create(model=MODEL_NAME, max_tokens=24, tools=TOOLS, messages=turns, extra_body=GREEDY)
    assert m.stop_reason in ("end_turn", "max_tokens") and [b.type for b in m.content] == ["text"], m
    assert m.content[0].text.strip(), m
    # The result's text reached the prompt: a longer result counts more tokens; an error result too.
    def count(result, is_error=False):
        t = json.loads(json.dumps(turns))
        t[2]["content"][0]["content"] = result
        if is_error:
            t[2]["content"][0]["is_error"] = True
        return c.messages.count_tokens(model=MODEL_NAME, tools=TOOLS, messages=t).input_tokens
    short = count("21")
    assert count("21 degrees, sunny, light wind from the west") > short, short
    assert count("21", is_error=True) > short
    print("    answer after the tool result: %r" % m.content[0].text)


def test_prefill(s):
    # A final assistant message is continued (Anthropic's prefill): the answer is the continuation,
    # the same text /v1/chat/completions writes for the same conversation.
    turns = [{"role": "user", "content": "What is the capital of France?"},
             {"role": "assistant", "content": "The capital of France is"}]
    m = client(s).messages.create(model=MODEL_NAME, max_tokens=8, messages=turns, extra_body=GREEDY)
    assert [b.type for b in m.content] == ["text"], m
    status, _, chat = s.post("/v1/chat/completions", {"messages": turns, "max_tokens": 8, "temperature": 0},
                             headers={"Authorization": "Bearer " + KEY})
    assert status == 200, chat
    assert m.content[0].text == chat["choices"][0]["message"]["content"], (m, chat)
    print("    continued: %r" % m.content[0].text)


def test_output_format(s):
    # output_config.format (json_schema) is the chat turn's constrained decoding.
    schema = {"type": "object", "properties": {"fruit": {"type": "string"}, "count": {"type": "integer"}},
              "required": ["fruit", "count"], "additionalProperties": False}
    c = client(s)
    m = c.messages.create(model=MODEL_NAME, max_tokens=48, messages=USER, extra_body=GREEDY,
                          output_config={"format": {"type": "json_schema", "schema": schema}})
    assert m.stop_reason == "end_turn", m
    jsonschema.validate(json.loads(m.content[0].text), schema)
    status, _, out = s.post("/v1/messages", {"max_tokens": 48, "messages": USER, **GREEDY,
                                             "output_format": {"type": "json_schema", "schema": schema}},
                            {"x-api-key": KEY})
    assert status == 200 and json.loads(out["content"][0]["text"]) == json.loads(m.content[0].text), out


def test_auth(s):
    for key in ("wrong", ""):
        try:
            client(s, key or "none").messages.create(model=MODEL_NAME, max_tokens=4, messages=USER)
            raise AssertionError("a wrong API key was accepted")
        except anthropic.AuthenticationError as e:
            assert e.status_code == 401 and e.body["error"]["type"] == "authentication_error", e.body
    status, _, out = s.post("/v1/messages/count_tokens", {"messages": USER})
    assert status == 401 and out["type"] == "error" and out["error"]["type"] == "authentication_error", out
    # Bearer works as on the other endpoints.
    status, _, out = s.post("/v1/messages/count_tokens", {"messages": USER}, {"Authorization": "Bearer " + KEY})
    assert status == 200 and out["input_tokens"] > 0, out


def test_malformed(s):
    h = {"x-api-key": KEY}
    ok = {"model": MODEL_NAME, "max_tokens": 4, "messages": USER}
    cases = [
        ({k: v for k, v in ok.items() if k != "max_tokens"}, "max_tokens"),
        (dict(ok, max_tokens="4"), "max_tokens"),
        (dict(ok, max_tokens=0), "max_tokens"),
        (dict(ok, max_tokens=2.5), "max_tokens"),
        (dict(ok, messages="hi"), "messages"),
        (dict(ok, messages=[]), "messages"),
        ({k: v for k, v in ok.items() if k != "messages"}, "messages"),
        (dict(ok, messages=[{"role": "tool", "content": "x"}]), "messages[0].role"),
        (dict(ok, messages=[{"role": "system", "content": [{"type": "tool_use"}]}]), "messages[0].content[0].type"),
        (dict(ok, messages=[{"role": "user"}]), "messages[0].content"),
        (dict(ok, messages=[{"role": "user", "content": 5}]), "messages[0].content"),
        (dict(ok, messages=[{"role": "user", "content": [{"type": "text", "text": 1}]}]), "messages[0].content[0].text"),
        (dict(ok, messages=[{"role": "user", "content": [{"text": "x"}]}]), "messages[0].content[0].type"),
        (dict(ok, messages=[{"role": "user", "content": [{"type": "video"}]}]), "messages[0].content[0].type"),
        (dict(ok, messages=[{"role": "user", "content": [{"type": "image", "source": {
            "type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}]}]), "vision model"),
        (dict(ok, messages=[{"role": "user", "content": [{"type": "document", "source": {}}]}]),
         "document blocks are not supported"),
        (dict(ok, messages=[{"role": "user", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}]}]),
         "messages[0].content[0]"),
        (dict(ok, messages=[{"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f",
                                                              "input": "{}"}]}]), "messages[0].content[0].input"),
        (dict(ok, messages=[{"role": "user", "content": [{"type": "tool_result", "tool_use_id": 3}]}]),
         "messages[0].content[0].tool_use_id"),
        (dict(ok, system=7), "system"),
        (dict(ok, system=[{"type": "image"}]), "send images in a user message"),
        (dict(ok, tools={"name": "f"}), "tools"),
        (dict(ok, tools=[{"name": "f"}]), "tools[0].input_schema"),
        (dict(ok, tools=[{"input_schema": {}}]), "tools[0].name"),
        (dict(ok, tools=[{"name": "f", "input_schema": {"type": "object"}}], tool_choice="any"), "tool_choice"),
        (dict(ok, tools=[{"name": "f", "input_schema": {"type": "object"}}], tool_choice={"type": "sometimes"}),
         "tool_choice.type"),
        (dict(ok, tools=[{"name": "f", "input_schema": {"type": "object"}}], tool_choice={"type": "tool"}),
         "tool_choice.name"),
        (dict(ok, tools=[{"name": "f", "input_schema": {"type": "object"}}],
              tool_choice={"type": "tool", "name": "nope"}), "nope"),
        (dict(ok, tool_choice={"type": "any"}), "tool"),
        (dict(ok, thinking={"type": "sometimes"}), "thinking.type"),
        (dict(ok, thinking={"type": "enabled", "budget_tokens": "many"}), "budget_tokens"),
        (dict(ok, temperature=3), "temperature"),
        (dict(ok, top_k=-1), "top_k"),
        (dict(ok, stop_sequences="x"), "stop_sequences"),
        (dict(ok, stop_sequences=[1]), "stop_sequences[0]"),
        (dict(ok, stream="yes"), "stream"),
        (dict(ok, model=3), "model"),
        (dict(ok, output_config={"format": {"type": "xml"}}), "output_config.format.type"),
        (dict(ok, output_config={"format": {"type": "json_schema"}}), "output_config.format.schema"),
        (dict(ok, messages=[{"role": "user", "content": "word " * 2500}]), "2048"),  # past the context
    ]
    for body, needle in cases:
        status, _, out = s.post("/v1/messages", body, h)
        assert status == 400, (body, status, out)
        assert out["type"] == "error" and out["error"]["type"] == "invalid_request_error", out
        assert needle in out["error"]["message"], (needle, out)
    for raw in ("{not json", "[1, 2]", ""):
        status, _, data = s.request("POST", "/v1/messages", raw, h)
        out = json.loads(data)
        assert status == 400 and out["type"] == "error" and out["error"]["type"] == "invalid_request_error", (raw, out)
    status, _, out = s.post("/v1/messages/count_tokens", {"messages": [{"role": "tool", "content": "x"}]}, h)
    assert status == 400 and "messages[0].role" in out["error"]["message"], out
    # The SDK raises its BadRequestError with the message.
    try:
        client(s).messages.create(model=MODEL_NAME, max_tokens=4, messages=[{"role": "user", "content": [
            {"type": "image", "source": {"type": "url", "url": "http://example.invalid/a.png"}}]}])
        raise AssertionError("an image was accepted")
    except anthropic.BadRequestError as e:
        assert e.status_code == 400 and "vision model" in str(e), e
    assert s.request("GET", "/health")[0] == 200


# ---- thinking (a template that reasons) -----------------------------------------------------


def test_thinking():
    path = os.path.join(tempfile.mkdtemp(prefix="zerfoo-anthropic-"), "think.jinja")
    with open(path, "w") as f:
        f.write(THINK_TEMPLATE)
    s = Server("--chat-template-file", path)
    try:
        c = client(s, "none")
        req = dict(model=MODEL_NAME, max_tokens=40, messages=THINK_SHOTS, extra_body=GREEDY,
                   thinking={"type": "enabled", "budget_tokens": 1024})
        m = c.messages.create(**req)
        kinds = [b.type for b in m.content]
        assert kinds == ["thinking", "text"], m
        assert m.content[0].thinking.strip() and m.content[1].text.strip() and m.content[0].signature == "", m
        assert "</think>" not in m.content[1].text and "<think>" not in m.content[0].thinking, m
        with c.messages.stream(**req) as st:
            f = st.get_final_message()
        assert blocks(f.content) == blocks(m.content), (f.content, m.content)
        assert (f.stop_reason, f.usage.output_tokens) == (m.stop_reason, m.usage.output_tokens), f
        events = raw_stream(s, {k: v for k, v in req.items() if k != "extra_body"} | GREEDY)
        assert check_event_order(events) == blocks(m.content), events
        deltas = [d["delta"]["type"] for e, d in events if e == "content_block_delta"]
        assert "thinking_delta" in deltas and deltas.index("signature_delta") < deltas.index("text_delta"), deltas
        # The history's thinking reached the prompt (assistant reasoning_content); redacted
        # thinking did not.
        shots = json.loads(json.dumps(THINK_SHOTS))
        n = c.messages.count_tokens(model=MODEL_NAME, messages=shots).input_tokens
        shots[1]["content"][0]["thinking"] = "A fruit: apple, which is red or green and grows on trees."
        assert c.messages.count_tokens(model=MODEL_NAME, messages=shots).input_tokens > n
        shots[3]["content"][0]["data"] = "opaque " * 50
        assert c.messages.count_tokens(model=MODEL_NAME, messages=shots).input_tokens == \
            c.messages.count_tokens(model=MODEL_NAME, messages=shots[:3] + [dict(shots[3], content=shots[3]["content"][1:])] +
                                    shots[4:]).input_tokens
        # thinking disabled: the template does not open reasoning (enable_thinking false), so the
        # prompt is shorter, and a question without reasoning examples gets text only.
        n_on = c.messages.count_tokens(model=MODEL_NAME, messages=THINK_SHOTS, thinking=req["thinking"]).input_tokens
        n_off = c.messages.count_tokens(model=MODEL_NAME, messages=THINK_SHOTS, thinking={"type": "disabled"}).input_tokens
        assert n_off < n_on == m.usage.input_tokens + m.usage.cache_read_input_tokens, (n_off, n_on, m.usage)
        off = c.messages.create(**dict(req, messages=THINK_SHOTS[-1:], thinking={"type": "disabled"}))
        assert [b.type for b in off.content] == ["text"], off
        print("    thinking %r, text %r; disabled: %r" % (m.content[0].thinking, m.content[1].text, off.content[0].text))
    finally:
        assert s.stop() == 0


def main():
    run_suite("anthropic", lambda: Server("--api-key", KEY, "--parallel", "2"),
              [test_text_and_stream, test_stop_sequences, test_tools, test_tool_result_round_trip, test_prefill, test_output_format, test_auth, test_malformed],
              [test_thinking])


if __name__ == "__main__":
    main()
