#!/usr/bin/env python3
"""Recording fake server for coding-agent clients (Claude Code, Codex CLI).

Speaks just enough Anthropic Messages (/v1/messages, SSE or JSON as asked) and OpenAI Responses
(/v1/responses, typed SSE events) for a client to finish a turn, and writes every request
(method, path, headers, body) plus a summary of the answer to OUT_DIR/NNNN_<api>.json.

The first request of a turn is answered with a call to a shell-like tool from the request's own
tool list; a request that carries the tool's result is answered with text, so a recording covers
one tool round trip. Not part of CI: it exists to learn what the real clients send.

  python3 record_server.py --port 8199 --out /tmp/agent_recordings/run1
  --omit NAME (repeatable) drops one piece of the answer to see what the client needs:
    ping, message_stop, message_delta_usage, content_block_stop, response_created,
    output_item_done, response_completed_usage, response_completed, head (HEAD answers 404)
"""
import argparse
import base64
import itertools
import json
import os
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

COMMAND = os.environ.get("RECORD_TOOL_COMMAND", "echo hello")
FINAL_TEXT = "The command ran and printed: hello"


class Recorder:
    def __init__(self, out_dir):
        self.out_dir = out_dir
        os.makedirs(out_dir, exist_ok=True)
        self.counter = itertools.count(1)
        self.lock = threading.Lock()

    def save(self, api, record):
        with self.lock:
            n = next(self.counter)
        path = os.path.join(self.out_dir, f"{n:04d}_{api}.json")
        with open(path, "w") as f:
            json.dump(record, f, indent=1, ensure_ascii=False)
        print(f"[record] {path} {record['method']} {record['path']} -> {record.get('answer')}",
              file=sys.stderr, flush=True)


# ---------------------------------------------------------------- Anthropic Messages


def last_user_has_tool_result(messages):
    for m in reversed(messages or []):
        if m.get("role") != "user":
            continue
        content = m.get("content")
        if isinstance(content, list):
            return any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
        return False
    return False


def pick_anthropic_tool(tools):
    """Bash if offered, else Read, else nothing (text answer)."""
    names = {t.get("name"): t for t in tools or [] if isinstance(t, dict)}
    if "Bash" in names:
        return "Bash", {"command": COMMAND, "description": "Print hello"}
    if "Read" in names:
        return "Read", {"file_path": os.path.abspath(__file__)}
    return None, None


def anthropic_answer(body):
    """Content blocks + stop_reason for one request."""
    if not last_user_has_tool_result(body.get("messages")):
        name, args = pick_anthropic_tool(body.get("tools"))
        if name:
            block = {"type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:24], "name": name,
                     "input": args}
            return [{"type": "text", "text": "I will run it."}, block], "tool_use"
    text = FINAL_TEXT if last_user_has_tool_result(body.get("messages")) else "ok"
    return [{"type": "text", "text": text}], "end_turn"


def anthropic_message(body, blocks, stop_reason):
    return {
        "id": "msg_" + uuid.uuid4().hex[:24], "type": "message", "role": "assistant",
        "model": body.get("model", "fake"), "content": blocks, "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 0},
    }


def anthropic_sse(msg, omit):
    """Yield (event, data) pairs for one streamed message."""
    start = dict(msg, content=[], stop_reason=None)
    start["usage"] = dict(msg["usage"], output_tokens=1)
    yield "message_start", {"type": "message_start", "message": start}
    if "ping" not in omit:
        yield "ping", {"type": "ping"}
    for i, block in enumerate(msg["content"]):
        if block["type"] == "text":
            yield "content_block_start", {"type": "content_block_start", "index": i,
                                          "content_block": {"type": "text", "text": ""}}
            for piece in (block["text"][:10], block["text"][10:]):
                yield "content_block_delta", {"type": "content_block_delta", "index": i,
                                              "delta": {"type": "text_delta", "text": piece}}
        else:
            yield "content_block_start", {"type": "content_block_start", "index": i,
                                          "content_block": dict(block, input={})}
            args = json.dumps(block["input"])
            for piece in (args[:7], args[7:]):
                yield "content_block_delta", {"type": "content_block_delta", "index": i,
                                              "delta": {"type": "input_json_delta",
                                                        "partial_json": piece}}
        if "content_block_stop" not in omit:
            yield "content_block_stop", {"type": "content_block_stop", "index": i}
    delta = {"type": "message_delta",
             "delta": {"stop_reason": msg["stop_reason"], "stop_sequence": None}}
    if "message_delta_usage" not in omit:
        delta["usage"] = {"output_tokens": msg["usage"]["output_tokens"]}
    yield "message_delta", delta
    if "message_stop" not in omit:
        yield "message_stop", {"type": "message_stop"}


# ---------------------------------------------------------------- OpenAI Responses

TOOL_RESULT_ITEMS = {"function_call_output", "custom_tool_call_output", "local_shell_call_output"}


def last_input_is_tool_result(items):
    if not isinstance(items, list):
        return False
    for item in reversed(items):
        if not isinstance(item, dict):
            continue
        if item.get("type") in TOOL_RESULT_ITEMS:
            return True
        if item.get("role") == "user" or item.get("type") == "message" and item.get("role") == "user":
            return False
    return False


def shell_args(tool):
    """Arguments for a shell-like function tool, shaped by its own JSON schema."""
    props = (tool.get("parameters") or {}).get("properties") or {}
    for key in ("command", "cmd"):
        if key in props:
            if props[key].get("type") == "array":
                return {key: ["bash", "-lc", COMMAND]}
            return {key: COMMAND}
    return None


def pick_responses_tool(tools):
    for t in tools or []:
        if not isinstance(t, dict):
            continue
        if t.get("type") == "local_shell":
            return {"type": "local_shell_call", "call_id": "call_" + uuid.uuid4().hex[:20],
                    "status": "completed",
                    "action": {"type": "exec", "command": ["bash", "-lc", COMMAND]}}
    for preferred in ("shell", "shell_command", "exec_command"):
        for t in tools or []:
            if isinstance(t, dict) and t.get("type") == "function" and t.get("name") == preferred:
                args = shell_args(t)
                if args is not None:
                    return {"type": "function_call", "name": preferred,
                            "arguments": json.dumps(args),
                            "call_id": "call_" + uuid.uuid4().hex[:20], "status": "completed"}
    return None


def responses_output(body):
    if not last_input_is_tool_result(body.get("input")):
        call = pick_responses_tool(body.get("tools"))
        if call:
            call["id"] = "fc_" + uuid.uuid4().hex[:20]
            return [call]
    text = FINAL_TEXT if last_input_is_tool_result(body.get("input")) else "ok"
    return [{"type": "message", "id": "msg_" + uuid.uuid4().hex[:20], "role": "assistant",
             "status": "completed",
             "content": [{"type": "output_text", "text": text, "annotations": []}]}]


def responses_sse(body, output, omit):
    rid = "resp_" + uuid.uuid4().hex[:20]
    base = {"id": rid, "object": "response", "created_at": int(time.time()),
            "model": body.get("model", "fake"), "status": "in_progress", "output": []}
    seq = itertools.count()
    if "response_created" not in omit:
        yield "response.created", {"type": "response.created", "sequence_number": next(seq),
                                   "response": base}
    for i, item in enumerate(output):
        added = dict(item, status="in_progress")
        if item["type"] == "message":
            added["content"] = []
        if item["type"] == "function_call":
            added["arguments"] = ""
        yield "response.output_item.added", {"type": "response.output_item.added",
                                             "sequence_number": next(seq), "output_index": i,
                                             "item": added}
        if item["type"] == "message":
            text = item["content"][0]["text"]
            yield "response.content_part.added", {
                "type": "response.content_part.added", "sequence_number": next(seq),
                "item_id": item["id"], "output_index": i, "content_index": 0,
                "part": {"type": "output_text", "text": "", "annotations": []}}
            for piece in (text[:10], text[10:]):
                yield "response.output_text.delta", {
                    "type": "response.output_text.delta", "sequence_number": next(seq),
                    "item_id": item["id"], "output_index": i, "content_index": 0,
                    "delta": piece}
            yield "response.output_text.done", {
                "type": "response.output_text.done", "sequence_number": next(seq),
                "item_id": item["id"], "output_index": i, "content_index": 0, "text": text}
            yield "response.content_part.done", {
                "type": "response.content_part.done", "sequence_number": next(seq),
                "item_id": item["id"], "output_index": i, "content_index": 0,
                "part": item["content"][0]}
        elif item["type"] == "function_call":
            yield "response.function_call_arguments.delta", {
                "type": "response.function_call_arguments.delta", "sequence_number": next(seq),
                "item_id": item["id"], "output_index": i, "delta": item["arguments"]}
            yield "response.function_call_arguments.done", {
                "type": "response.function_call_arguments.done", "sequence_number": next(seq),
                "item_id": item["id"], "output_index": i, "arguments": item["arguments"]}
        if "output_item_done" not in omit:
            yield "response.output_item.done", {"type": "response.output_item.done",
                                                "sequence_number": next(seq), "output_index": i,
                                                "item": item}
    done = dict(base, status="completed", output=output)
    if "response_completed_usage" not in omit:
        done["usage"] = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
                         "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
                         "total_tokens": 15}
    if "response_completed" not in omit:
        yield "response.completed", {"type": "response.completed", "sequence_number": next(seq),
                                     "response": done}


# ---------------------------------------------------------------- HTTP


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    recorder = None
    omit = frozenset()

    def log_message(self, fmt, *args):  # the recorder prints its own line per request
        pass

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            return self.rfile.read(n)
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        return b""

    def record(self, raw, answer):
        rec = {"time": time.time(), "method": self.command, "path": self.path,
               "headers": dict(self.headers.items()), "answer": answer}
        try:
            rec["body"] = json.loads(raw) if raw else None
        except ValueError:
            rec["body_base64"] = base64.b64encode(raw).decode()
        api = ("messages" if self.path.startswith("/v1/messages") else
               "responses" if "/responses" in self.path else "other")
        self.recorder.save(api, rec)

    def send_json(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_sse(self, events):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for name, data in events:
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()
        self.close_connection = True

    def do_HEAD(self):
        status = 404 if "head" in self.omit else 200
        self.record(b"", f"{status} empty")
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        self.read_body()
        path = self.path.split("?")[0]
        if path.rstrip("/").endswith("/models"):
            self.record(b"", "model list")
            self.send_json(200, {"object": "list", "data": [
                {"id": "fake-model", "object": "model", "type": "model",
                 "display_name": "fake-model", "created_at": "2025-01-01T00:00:00Z"}],
                "models": [], "has_more": False, "first_id": "fake-model",
                "last_id": "fake-model"})
            return
        self.record(b"", "404")
        self.send_json(404, {"error": {"type": "not_found_error", "message": path}})

    def do_POST(self):
        raw = self.read_body()
        path = self.path.split("?")[0]
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = None
        if not isinstance(body, dict):
            self.record(raw, "400 not json")
            self.send_json(400, {"error": {"type": "invalid_request_error",
                                           "message": "body is not a JSON object"}})
            return
        if path == "/v1/messages/count_tokens":
            chars = len(json.dumps(body))
            self.record(raw, f"count_tokens {chars // 4}")
            self.send_json(200, {"input_tokens": chars // 4})
        elif path == "/v1/messages":
            blocks, stop = anthropic_answer(body)
            msg = anthropic_message(body, blocks, stop)
            kinds = [b["type"] + (":" + b["name"] if b["type"] == "tool_use" else "")
                     for b in blocks]
            self.record(raw, f"{'sse' if body.get('stream') else 'json'} {kinds} {stop}")
            if body.get("stream"):
                self.send_sse(anthropic_sse(msg, self.omit))
            else:
                self.send_json(200, msg)
        elif path.endswith("/responses"):
            output = responses_output(body)
            kinds = [o["type"] + (":" + o["name"] if "name" in o else "") for o in output]
            self.record(raw, f"{'sse' if body.get('stream') else 'json'} {kinds}")
            if body.get("stream"):
                self.send_sse(responses_sse(body, output, self.omit))
            else:
                events = list(responses_sse(body, output, frozenset()))
                self.send_json(200, events[-1][1]["response"])
        else:
            self.record(raw, "404")
            self.send_json(404, {"error": {"type": "not_found_error", "message": path}})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=8199)
    ap.add_argument("--out", default="/tmp/agent_recordings/run")
    ap.add_argument("--omit", action="append", default=[])
    args = ap.parse_args()
    Handler.recorder = Recorder(args.out)
    Handler.omit = frozenset(args.omit)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(f"[record] listening on 127.0.0.1:{args.port}, writing {args.out}", file=sys.stderr,
          flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
