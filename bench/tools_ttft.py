#!/usr/bin/env python3
"""Time to first token of `zerfoo serve` chat requests that offer 3 tools, with tool_choice "none"
(free: the tools in the prompt, nothing constrained), "required" (constrained from the first token
to the template's own call format, zf_chat_tool_grammar) and "auto" (constrained lazily from the
moment the model opens a call). Per mode: the median latency of a 1-token request (prompt
evaluation + grammar compile + one token, what a client waits for before anything can come) and
of the first streamed delta (content, reasoning or a tool call's first chunk).

  python3 bench/tools_ttft.py --zerfoo build/zerfoo -m MODEL.gguf [--chat-template-file T.jinja]

Standard library only; not a test. The server runs with --parallel 1 on a free loopback port.
"""
import argparse
import http.client
import json
import statistics
import sys
import time

from bench_server import first_delta_seconds, free_port, start, stop

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Current weather of a city",
     "parameters": {"type": "object", "properties": {
         "city": {"type": "string", "description": "City name"},
         "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "Unit"}},
         "required": ["city"]}}},
    {"type": "function", "function": {"name": "search_web", "description": "Search the web",
     "parameters": {"type": "object", "properties": {
         "query": {"type": "string", "description": "Query"},
         "max_results": {"type": "integer", "minimum": 1, "maximum": 20, "description": "How many"}},
         "required": ["query"]}}},
    {"type": "function", "function": {"name": "create_event", "description": "Add a calendar event",
     "parameters": {"type": "object", "properties": {
         "title": {"type": "string", "description": "Title"},
         "start": {"type": "string", "description": "ISO 8601 start time"},
         "attendees": {"type": "array", "items": {"type": "string"}, "maxItems": 8, "description": "Emails"}},
         "required": ["title", "start"]}}},
]
MESSAGES = [{"role": "user", "content": "What is the weather in Paris today?"}]


def post(port, body, stream):
    """Returns (seconds to the answer or to the first streamed delta, status)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    t0 = time.perf_counter()
    c.request("POST", "/v1/chat/completions", json.dumps(dict(body, stream=stream)), {"Content-Type": "application/json"})
    r = c.getresponse()
    if r.status != 200:
        raise RuntimeError("HTTP %d: %s" % (r.status, r.read()[:300]))
    if not stream:
        r.read()
        return time.perf_counter() - t0
    first = first_delta_seconds(r, t0)
    c.close()
    return first


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zerfoo", required=True)
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("--chat-template-file")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=7)
    a = ap.parse_args()
    port = free_port()
    cmd = [a.zerfoo, "serve", "-m", a.model, "--port", str(port), "--parallel", "1", "--threads", str(a.threads)]
    if a.chat_template_file:
        cmd += ["--chat-template-file", a.chat_template_file]
    proc = start("zerfoo", cmd, port, timeout=60, log_name="tools_ttft.log")
    try:
        base = {"messages": MESSAGES, "tools": TOOLS, "temperature": 0}
        post(port, dict(base, max_tokens=1, tool_choice="required"), False)  # the vocabulary's trie, once per model
        print("| tool_choice | 1-token request (median ms) | first streamed delta (median ms) |")
        print("|---|---|---|")
        for mode in ("none", "required", "auto"):
            one = [post(port, dict(base, max_tokens=1, tool_choice=mode), False) for _ in range(a.runs)]
            first = [post(port, dict(base, max_tokens=48, tool_choice=mode), True) for _ in range(a.runs)]
            print("| %s | %.0f | %.0f |" % (mode if mode != "none" else "none (free)",
                                              statistics.median(one) * 1e3, statistics.median(first) * 1e3))
            sys.stdout.flush()
    finally:
        stop(proc)


if __name__ == "__main__":
    main()
