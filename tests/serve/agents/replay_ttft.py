#!/usr/bin/env python3
"""Replays requests an agent sent (the JSON files tests/serve/agents/record_server.py writes) against
a server, streamed, with the output cut to 4 tokens; prints each request's time to the first
output event and its usage (the prefix cache's hits). Anthropic requests keep their model name
(any is served); Responses requests get "" (the served model).
Usage: replay_ttft.py BASE_URL FILE.json [FILE.json ...]  e.g. a conversation's first and second
request: replay_ttft.py http://127.0.0.1:8080 rec/claude/0002_messages.json rec/claude/0003_messages.json"""
import http.client, json, sys, time, urllib.parse

base = urllib.parse.urlparse(sys.argv[1])
for path in sys.argv[2:]:
    rec = json.load(open(path))
    body = rec["body"] if not isinstance(rec["body"], str) else json.loads(rec["body"])
    url = rec["path"]
    body["stream"] = True
    if "/v1/responses" in url:
        body["model"] = ""
    if "/v1/messages" in url:
        body["max_tokens"] = 4
    else:
        body["max_output_tokens"] = 4
    c = http.client.HTTPConnection(base.hostname, base.port, timeout=600)
    t0 = time.time()
    c.request("POST", url, body=json.dumps(body), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    first = None
    usage = None
    buf = b""
    while True:
        chunk = r.read1(65536)
        if not chunk:
            break
        buf += chunk
        while b"\n\n" in buf:
            ev, buf = buf.split(b"\n\n", 1)
            data = [l[6:] for l in ev.split(b"\n") if l.startswith(b"data: ")]
            if not data:
                continue
            j = json.loads(data[0])
            t = j.get("type", "")
            if first is None and t in ("content_block_delta", "response.output_text.delta", "response.function_call_arguments.delta", "response.reasoning_text.delta"):
                first = time.time() - t0
            if t == "message_delta":
                usage = j.get("usage")
            if t in ("response.completed", "response.incomplete"):
                usage = j["response"].get("usage")
    print("%s %s status %d ttft %.2f s total %.2f s usage %s" % (path.split("/")[-2] + "/" + path.split("/")[-1], url, r.status,
          first or -1, time.time() - t0, json.dumps(usage)))
