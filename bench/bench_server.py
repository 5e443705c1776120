"""What the server benchmarks share (serve_bench, embed_bench, tools_ttft, router_ttft): a free
loopback port, starting a server and waiting for its /health, and reading an SSE stream up to
its first generated delta. Standard library only; imported from the scripts' own folder."""
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def healthy(port):
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        c.request("GET", "/health")
        ok = c.getresponse().status == 200
        c.close()
        return ok
    except OSError:
        return False


def start(kind, cmd, port, timeout=300, log_name=None):
    """Runs `cmd` (a server listening on `port`) with its output in a log file under the temp
    folder, waits until /health answers 200 and returns the process; exits naming the command
    and the log when it stops or does not answer within `timeout` seconds."""
    log = open(os.path.join(tempfile.gettempdir(), log_name or "%s.log" % kind), "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + timeout
    while not healthy(port):
        if time.time() > deadline or proc.poll() is not None:
            proc.kill()
            sys.exit("%s did not become healthy: %s (log %s)" % (kind, " ".join(cmd), log.name))
        time.sleep(0.1)
    print("# %s: %s (log: %s)" % (kind, " ".join(cmd), log.name), file=sys.stderr, flush=True)
    return proc


def stop(proc):
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()


def sse_data(response):
    """The data of each event of a streamed (SSE) response, as parsed JSON; [DONE] ends it."""
    buf = b""
    while True:
        chunk = response.read1(65536)
        if not chunk:
            return
        buf += chunk
        while b"\n\n" in buf:
            event, buf = buf.split(b"\n\n", 1)
            data = event[len(b"data: "):]
            if data == b"[DONE]":
                return
            yield json.loads(data)


def first_delta_seconds(response, t0):
    """Seconds from t0 to the first chat chunk with content, reasoning or a tool call (NaN if
    none); reads the rest of the stream."""
    first = float("nan")
    for j in sse_data(response):
        d = ((j.get("choices") or [{}])[0]).get("delta") or {}
        if first != first and (d.get("content") or d.get("reasoning_content") or d.get("tool_calls")):
            first = time.perf_counter() - t0
    response.read()
    return first
