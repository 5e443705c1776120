#!/usr/bin/env python3
"""OpenAI's Responses API on `zerfoo serve` (issue #43 §2), with the official `openai` client.

Text with instructions, the SDK's stream accumulator against the non-streamed answer, function
tools (required / named → schema-valid calls), a function_call_output round trip, text.format
json_schema, previous_response_id (and its 404), reasoning items on a <think> template, input
token counting, Codex CLI's request shape, and malformed bodies as 400s.

Environment: ZERFOO_CLI, ZERFOO_TEST_MODEL (SmolLM2), as test_serve.py.
"""
import json
import os

import jsonschema
import openai

from test_serve import TEMPLATES, TOOLS, Server, run_suite

# Flat function tools, as the Responses API takes them.
FLAT_TOOLS = [dict(t["function"], type="function") for t in TOOLS]
PARAMS = {t["name"]: t["parameters"] for t in FLAT_TOOLS}
SHORT = {"model": "", "instructions": "You are a helpful assistant.", "input": "What is 2+2?", "temperature": 0,
         "max_output_tokens": 48}  # greedy SmolLM2 ends this one within the budget


def calls_of(resp):
    return [(o.call_id, o.name, o.arguments) for o in resp.output if o.type == "function_call"]


def sse(s, body, headers=None):
    """Raw SSE over http.client: [(event name, data dict)]."""
    c = s.conn()
    try:
        c.request("POST", "/v1/responses", body=json.dumps(dict(body, stream=True)),
                  headers=dict({"Content-Type": "application/json"}, **(headers or {})))
        r = c.getresponse()
        assert r.status == 200, (r.status, r.read())
        assert r.getheader("Content-Type").startswith("text/event-stream"), r.getheaders()
        events, name = [], None
        for raw in r.read().decode().split("\n"):
            if raw.startswith("event: "):
                name = raw[7:]
            elif raw.startswith("data: "):
                events.append((name, json.loads(raw[6:])))
                name = None
        return events, dict(r.getheaders())
    finally:
        c.close()


def test_text_and_stream(s):
    cl = s.client()
    r = cl.responses.create(**SHORT)
    assert r.object == "response" and r.id.startswith("resp_") and r.status == "completed", r
    assert r.instructions == SHORT["instructions"] and r.output_text.strip(), r
    msg = r.output[-1]
    assert msg.type == "message" and msg.id.startswith("msg_") and msg.role == "assistant", msg
    assert r.usage.input_tokens > 0 and r.usage.output_tokens > 0, r.usage
    assert r.usage.total_tokens == r.usage.input_tokens + r.usage.output_tokens
    # The SDK's stream accumulator assembles the same answer (greedy).
    with cl.responses.stream(**SHORT) as st:
        deltas = "".join(e.delta for e in st if e.type == "response.output_text.delta")
        final = st.get_final_response()
    assert final.output_text == r.output_text == deltas, (final.output_text, r.output_text, deltas)
    assert (final.usage.input_tokens, final.usage.output_tokens) == (r.usage.input_tokens, r.usage.output_tokens)
    # The typed events in order, numbered from 0, `event:` naming each.
    events, _ = sse(s, SHORT)
    assert [d["sequence_number"] for _, d in events] == list(range(len(events))), events
    assert all(n == d["type"] for n, d in events), events
    types = [n for n, _ in events]
    assert types[:5] == ["response.created", "response.in_progress", "response.output_item.added",
                         "response.content_part.added", "response.output_text.delta"], types
    assert types[-4:] == ["response.output_text.done", "response.content_part.done", "response.output_item.done",
                          "response.completed"], types
    # A token budget that ends the answer: incomplete, with the reason.
    short = cl.responses.create(**dict(SHORT, input="Tell me a long story.", max_output_tokens=4))
    assert short.status == "incomplete" and short.incomplete_details.reason == "max_output_tokens", short
    assert short.usage.output_tokens == 4, short.usage
    events, _ = sse(s, dict(SHORT, input="Tell me a long story.", max_output_tokens=4))
    assert events[-1][0] == "response.incomplete", events[-1]
    assert events[-1][1]["response"]["output"][0]["content"][0]["text"] == short.output_text
    # Counting the prompt's tokens renders it as the turn does.
    n = cl.responses.input_tokens.count(instructions=SHORT["instructions"], input=SHORT["input"])
    assert n.input_tokens == r.usage.input_tokens, (n, r.usage)


def test_function_tools(s):
    cl = s.client()
    base = {"model": "", "input": "Weather in Paris?", "tools": FLAT_TOOLS, "temperature": 0, "max_output_tokens": 96}
    for extra, names in [({"tool_choice": "required"}, None),
                         ({"tool_choice": {"type": "function", "name": "search"}, "parallel_tool_calls": False},
                          ["search"])]:
        req = dict(base, **extra)
        r = cl.responses.create(**req)
        calls = calls_of(r)
        assert r.status == "completed" and calls, (extra, r)
        assert extra.get("parallel_tool_calls", True) or len(calls) == 1, calls
        for item in r.output:
            if item.type == "function_call":
                assert item.id.startswith("fc_") and item.status == "completed", item
        for call_id, name, args in calls:
            assert names is None or name in names, (extra, name)
            jsonschema.validate(json.loads(args), PARAMS[name])
        with cl.responses.stream(**req) as st:
            final = st.get_final_response()
        assert calls_of(final) == calls, (calls_of(final), calls)
        print("    %s: %s" % (extra, calls))
    # A round trip: the call and its output in the input → a text answer.
    call_id, name, args = calls_of(cl.responses.create(**dict(base, tool_choice="required")))[0]
    items = [{"role": "user", "content": "Weather in Paris?"},
             {"type": "function_call", "call_id": call_id, "name": name, "arguments": args},
             {"type": "function_call_output", "call_id": call_id, "output": "{\"temp_c\": 21, \"sky\": \"sunny\"}"}]
    r = cl.responses.create(model="", input=items, tools=FLAT_TOOLS, tool_choice="none", temperature=0, max_output_tokens=24)
    assert r.output_text.strip() and not calls_of(r), r
    # The output reached the prompt: a longer output, more prompt tokens.
    longer = dict(items[2], output="{\"temp_c\": 21, \"sky\": \"sunny\", \"wind\": \"calm breeze from the west\"}")
    n = cl.responses.input_tokens.count(input=items[:2] + [longer], tools=FLAT_TOOLS)
    assert n.input_tokens > r.usage.input_tokens, (n, r.usage)


def test_json_schema(s):
    schema = {"type": "object", "properties": {"color": {"enum": ["red", "green", "blue"]},
                                               "n": {"type": "integer", "minimum": 0, "maximum": 9}},
              "required": ["color", "n"], "additionalProperties": False}
    cl = s.client()
    req = {"model": "", "input": "Pick a color and a digit.", "temperature": 0, "max_output_tokens": 48,
           "text": {"format": {"type": "json_schema", "name": "pick", "schema": schema, "strict": True}}}
    r = cl.responses.create(**req)
    jsonschema.validate(json.loads(r.output_text), schema)
    assert r.text.format.type == "json_schema", r.text
    r = cl.responses.create(**dict(req, text={"format": {"type": "json_object"}}))
    # Any object: it may outgrow the budget (then it is a prefix of one).
    assert r.output_text.startswith("{") and (r.status == "incomplete" or isinstance(json.loads(r.output_text), dict)), r


def test_previous_response_id(s):
    cl = s.client()
    r1 = cl.responses.create(input="My name is Ada. Reply with OK.", temperature=0, max_output_tokens=8)
    r2 = cl.responses.create(previous_response_id=r1.id, input="What is my name?", temperature=0,
                             max_output_tokens=8)
    assert r2.previous_response_id == r1.id
    # The second prompt holds the first exchange (more tokens), most of it from the cache.
    assert r2.usage.input_tokens > r1.usage.input_tokens + r1.usage.output_tokens, (r1.usage, r2.usage)
    assert r2.usage.input_tokens_details.cached_tokens > 0, r2.usage
    # A chain of three; instructions are not carried over (OpenAI's rule).
    r3 = cl.responses.create(previous_response_id=r2.id, input="Thanks.", instructions="Be terse.", temperature=0,
                             max_output_tokens=4)
    r4 = cl.responses.create(previous_response_id=r3.id, input="Bye.", temperature=0, max_output_tokens=4)
    assert r4.usage.input_tokens > r2.usage.input_tokens, (r2.usage, r4.usage)
    for bogus in ["resp_nope", r1.id + "x"]:
        try:
            cl.responses.create(previous_response_id=bogus, input="hi", max_output_tokens=2)
            raise AssertionError("an unknown previous_response_id was accepted")
        except openai.NotFoundError as e:
            assert "previous_response_id" in str(e), e
    # store: false keeps nothing.
    r5 = cl.responses.create(input="Hi", store=False, max_output_tokens=2)
    assert r5.store is False
    try:
        cl.responses.create(previous_response_id=r5.id, input="hi", max_output_tokens=2)
        raise AssertionError("a store: false response was continued")
    except openai.NotFoundError:
        pass


def test_codex_shape(s):
    # What Codex CLI sends (tests/serve/agents/FINDINGS.md): developer messages with ids, a
    # namespace of functions, a hosted web_search tool, include, store false, prompt_cache_key,
    # client_metadata; then the call and its output sent back.
    exec_tool = {"type": "function", "name": "exec_command", "description": "Runs a shell command", "strict": False,
                 "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"],
                                "additionalProperties": False}}
    body = {"model": "", "instructions": None, "input": [
        {"type": "message", "id": "msg_a1", "role": "developer",
         "content": [{"type": "input_text", "text": "You are a coding agent."}]},
        {"type": "message", "id": "msg_a2", "role": "user",
         "content": [{"type": "input_text", "text": "<environment_context>cwd /tmp</environment_context>"}]},
        {"type": "message", "id": "msg_a3", "role": "user", "content": [{"type": "input_text", "text": "Run ls."}]}],
        "tools": [exec_tool,
                  {"type": "namespace", "name": "multi_agent_v1", "tools": [
                      {"type": "function", "name": "spawn_agent", "description": "Starts an agent", "strict": False,
                       "parameters": {"type": "object", "properties": {"task": {"type": "string"}}}}]},
                  {"type": "web_search", "external_web_access": False}],
        "tool_choice": "required", "parallel_tool_calls": False, "reasoning": {"summary": "auto"}, "store": False,
        "include": ["reasoning.encrypted_content"], "prompt_cache_key": "0000-1111",
        "client_metadata": {"session_id": "x"}, "temperature": 0, "max_output_tokens": 64}
    events, headers = sse(s, body, {"Authorization": "Bearer none", "Accept": "text/event-stream"})
    assert "web_search" in headers.get("X-Zerfoo-Ignored-Tools", ""), headers
    done = [d["item"] for n, d in events if n == "response.output_item.done"]
    calls = [i for i in done if i["type"] == "function_call"]
    assert events[-1][0] == "response.completed" and len(calls) == 1, events[-3:]
    call = calls[0]
    if call["name"] == "spawn_agent":
        assert call["namespace"] == "multi_agent_v1", call
    args = call["arguments"]
    # The next request: the call (as Codex echoes it, with id and status) and its output.
    follow = dict(body, tool_choice="auto", input=body["input"] + [
        {"type": "function_call", "id": call["id"], "name": call["name"], "arguments": args,
         "call_id": call["call_id"], "status": "completed"},
        {"type": "function_call_output", "call_id": call["call_id"],
         "output": "Process exited with code 0\nOutput:\nREADME.md\n"}])
    follow["max_output_tokens"] = 16
    events, _ = sse(s, follow)
    assert events[-1][0] in ("response.completed", "response.incomplete"), events[-1]


def test_bad_requests(s):
    cl = s.client()
    image = [{"role": "user", "content": [{"type": "input_image", "image_url": "data:image/png;base64,AA=="}]}]
    for bad, words in [({}, "'input'"),
                       ({"input": 5}, "'input'"),
                       ({"input": [{"type": "message", "role": "robot", "content": "x"}]}, "role"),
                       ({"input": [{"type": "function_call", "name": "f"}]}, "call_id"),
                       ({"input": [{"type": "function_call_output", "call_id": "c"}]}, "output"),
                       ({"input": image}, "vision model"),
                       ({"input": "x", "tools": {"name": "f"}}, "'tools'"),
                       ({"input": "x", "tools": [{"type": "function"}]}, "name"),
                       ({"input": "x", "tools": [{"type": "function", "name": "f", "parameters": 3}]}, "parameters"),
                       ({"input": "x", "tools": FLAT_TOOLS, "tool_choice": "sometimes"}, "tool_choice"),
                       ({"input": "x", "tools": FLAT_TOOLS, "tool_choice": {"type": "function", "name": "nope"}}, "nope"),
                       ({"input": "x", "tool_choice": "required"}, "tool"),
                       ({"input": "x", "text": {"format": {"type": "yaml"}}}, "text.format.type"),
                       ({"input": "x", "text": {"format": {"type": "json_schema", "name": "s"}}}, "schema"),
                       ({"input": "x", "reasoning": {"effort": "extreme"}}, "reasoning.effort"),
                       ({"input": "x", "max_output_tokens": 0}, "max_output_tokens"),
                       ({"input": "x", "temperature": "hot"}, "temperature"),
                       ({"input": "x", "top_p": 2}, "top_p"),
                       ({"input": "x", "background": True}, "background"),
                       ({"input": "x", "metadata": {"k": 1}}, "metadata"),
                       ({"input": "x", "store": "yes"}, "store")]:
        status, _, out = s.post("/v1/responses", bad)
        assert status == 400 and words in out["error"]["message"], (bad, status, out)
        assert out["error"]["type"] == "invalid_request_error", out
    for raw in ["{", "[1]", "null", "\"input\""]:
        status, _, data = s.request("POST", "/v1/responses", raw)
        assert status == 400 and json.loads(data)["error"]["message"], (raw, status, data)
    try:
        cl.responses.create(input="x", max_output_tokens=0)
        raise AssertionError("max_output_tokens 0 was accepted")
    except openai.BadRequestError as e:
        assert "max_output_tokens" in str(e), e
    status, _, out = s.post("/v1/responses/input_tokens", {"input": 5})
    assert status == 400, out
    assert cl.responses.create(input="Hi", max_output_tokens=2).status == "incomplete"  # still serving


def test_reasoning():
    # A template that opens <think> (DeepSeek-R1's) with reasoning on: SmolLM2 never closes it
    # within the budget, so the answer is a reasoning item, streamed or not.
    s = Server("--chat-template-file", os.path.join(TEMPLATES, "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"))
    try:
        cl = s.client()
        req = {"model": "", "input": "Name three fruits.", "reasoning": {"effort": "low"}, "temperature": 0, "max_output_tokens": 16}
        r = cl.responses.create(**req)
        rs = [o for o in r.output if o.type == "reasoning"]
        assert rs and rs[0].id.startswith("rs_") and rs[0].content[0].text.strip(), r
        assert r.reasoning.effort == "low" and r.usage.output_tokens_details.reasoning_tokens > 0, r
        with cl.responses.stream(**req) as st:
            deltas = "".join(e.delta for e in st if e.type == "response.reasoning_text.delta")
        assert deltas == rs[0].content[0].text, (deltas, rs[0])
        events, _ = sse(s, req)
        done = [d["item"] for n, d in events if n == "response.output_item.done"]
        assert done[0]["type"] == "reasoning" and done[0]["content"][0]["text"] == deltas, done
        # A reasoning item sent back becomes the assistant's reasoning in the history.
        items = [{"role": "user", "content": "Name three fruits."},
                 {"type": "reasoning", "id": "rs_1", "summary": [],
                  "content": [{"type": "reasoning_text", "text": "The user wants fruits."}]},
                 {"role": "assistant", "content": [{"type": "output_text", "text": "Apple, pear, plum."}]},
                 {"role": "user", "content": "Two more?"}]
        r = cl.responses.create(input=items, reasoning={"effort": "none"}, temperature=0, max_output_tokens=8)
        assert r.status in ("completed", "incomplete"), r
    finally:
        assert s.stop() == 0


def main():
    run_suite("responses", lambda: Server("--chat-template-file", os.path.join(TEMPLATES, "Qwen-Qwen2.5-7B-Instruct.jinja")),
              [test_text_and_stream, test_function_tools, test_json_schema, test_previous_response_id, test_codex_shape, test_bad_requests],
              [test_reasoning])


if __name__ == "__main__":
    main()
