#!/usr/bin/env python3
"""Three `zerfoo serve` replicas on loopback behind nginx (issue #20 §3), with SmolLM2.

nginx (the Debian package, run as this user from a config in a temporary directory, not as a
service) proxies to an upstream of three replicas with least_conn, SSE unbuffered over HTTP/1.1,
and retries a request that no replica has accepted yet on the next one (proxy_next_upstream).
Each proxied answer carries the replica that served it in an `X-Upstream` header. Shown and
asserted:
  (a) spread: concurrent requests reach all three replicas (the header, each replica's
      zerfoo:requests_total counter and nginx's access log agree), and a greedy prompt answers
      the same text on every replica;
  (b) a replica killed with SIGKILL mid-stream: its streams end at once with an error (a
      truncated chunked body, never a [DONE] and never a hang), the streams on the other two
      finish with [DONE], and new requests succeed on the other two;
  (c) a replica drained with SIGTERM: its running streams complete with every token and [DONE],
      it exits 0, and new requests meanwhile go to the other replicas.
Standard library only; every wait is bounded.

Environment: ZERFOO_CLI, ZERFOO_TEST_MODEL (SmolLM2 GGUF), NGINX (default: nginx on PATH or
/usr/sbin/nginx), ZERFOO_SERVE_THREADS (default 1).
"""
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback

import procs  # tests/serve/procs.py (the script's folder is on sys.path)

CLI = os.environ["ZERFOO_CLI"]
MODEL = os.environ["ZERFOO_TEST_MODEL"]
NGINX = os.environ.get("NGINX") or shutil.which("nginx") or "/usr/sbin/nginx"
THREADS = os.environ.get("ZERFOO_SERVE_THREADS", "1")
PARALLEL = 2  # slots per replica
PROMPTS = ["The capital of France is", "Once upon a time, in a small village,", "def fibonacci(n):",
           "The three primary colors are", "Water boils at", "The quick brown fox"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(port, path, timeout=10):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


class Replica:
    def __init__(self, tmp, port=None):
        self.port = port or free_port()
        self.addr = "127.0.0.1:%d" % self.port
        self.logpath = os.path.join(tmp, "replica-%d.log" % self.port)
        self.log = open(self.logpath, "a")
        self.proc = subprocess.Popen(
            [CLI, "serve", "-m", MODEL, "--port", str(self.port), "--parallel", str(PARALLEL), "-t", THREADS,
             "--ctx-size", "512", "--alias", "smollm2", "--grace", "30"],
            stdout=self.log, stderr=subprocess.STDOUT)

    def wait_healthy(self, timeout=60):
        deadline = time.time() + timeout
        while True:
            assert self.proc.poll() is None, "replica %s exited during startup:\n%s" % (self.addr, self.logtext())
            try:
                if http_get(self.port, "/health", 2)[0] == 200:
                    return
            except OSError:
                pass
            assert time.time() < deadline, "replica %s not healthy within %d s" % (self.addr, timeout)
            time.sleep(0.05)

    def logtext(self):
        self.log.flush()
        with open(self.logpath) as f:
            return f.read()

    def requests_ok(self):
        status, data = http_get(self.port, "/metrics")
        assert status == 200, status
        for line in data.decode().splitlines():
            if line.startswith('zerfoo:requests_total{outcome="ok"}'):
                return int(float(line.rsplit(" ", 1)[1]))
        raise AssertionError("no zerfoo:requests_total{outcome=\"ok\"} in /metrics")

    def stop(self, sig=signal.SIGTERM, timeout=40):
        return procs.stop(self.proc, "replica " + self.addr, sig, timeout)


NGINX_CONF = """\
{user}worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log info;
events {{ worker_connections 256; }}
http {{
  log_format upstream '$request_uri $status upstream=$upstream_addr upstream_status=$upstream_status';
  access_log {tmp}/access.log upstream;
  client_body_temp_path {tmp}/body;
  proxy_temp_path {tmp}/proxy;
  fastcgi_temp_path {tmp}/fastcgi;
  uwsgi_temp_path {tmp}/uwsgi;
  scgi_temp_path {tmp}/scgi;
  upstream zerfoo {{
    least_conn;
{servers}
  }}
  server {{
    listen 127.0.0.1:{port};
    location / {{
      proxy_pass http://zerfoo;
      proxy_http_version 1.1;           # chunked SSE from the replicas
      proxy_set_header Connection "";
      proxy_buffering off;              # each SSE event reaches the client as the replica writes it
      proxy_read_timeout 60s;
      proxy_connect_timeout 2s;
      # A request no replica has accepted (connection refused: killed or draining) or that one
      # refused with 503 (queue full) goes to the next replica; a started stream is never retried.
      proxy_next_upstream error timeout http_503;
      proxy_next_upstream_tries 3;
      add_header X-Upstream $upstream_addr always;
    }}
  }}
}}
"""


class Nginx:
    def __init__(self, tmp, replicas):
        self.tmp, self.port = tmp, free_port()
        servers = "\n".join("    server %s max_fails=1 fail_timeout=2s;" % r.addr for r in replicas)
        # As root nginx would switch its worker to `nobody`: keep it this user's too.
        user = "user root;\n" if os.geteuid() == 0 else ""
        self.conf = os.path.join(tmp, "nginx.conf")
        with open(self.conf, "w") as f:
            f.write(NGINX_CONF.format(user=user, tmp=tmp, servers=servers, port=self.port))
        self.proc = subprocess.Popen([NGINX, "-p", tmp, "-c", self.conf, "-e", os.path.join(tmp, "error.log"),
                                      "-g", "daemon off;"], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        deadline = time.time() + 10
        while True:
            assert self.proc.poll() is None, "nginx exited:\n" + self.errors()
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    break
            except OSError:
                pass
            assert time.time() < deadline, "nginx not listening within 10 s"
            time.sleep(0.05)

    def errors(self):
        try:
            with open(os.path.join(self.tmp, "error.log")) as f:
                return f.read()
        except OSError:
            return ""

    def access_upstreams(self):
        with open(os.path.join(self.tmp, "access.log")) as f:
            return [w[len("upstream="):] for line in f for w in line.split() if w.startswith("upstream=")]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)  # graceful shutdown
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Stream:
    """One streamed /v1/completions through nginx, read on its own thread."""

    def __init__(self, port, prompt, max_tokens, timeout=60):
        self.tokens, self.text, self.done, self.error, self.usage = 0, "", False, None, None
        self.upstream, self.status, self.ended_at = None, None, None
        self.first = threading.Event()  # the first token arrived (or the stream ended)
        self.ended = threading.Event()
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        body = {"model": "smollm2", "prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "stream": True,
                "ignore_eos": True, "stream_options": {"include_usage": True}}
        self.conn.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        try:
            r = self.conn.getresponse()
            self.status, self.upstream = r.status, r.getheader("X-Upstream")
            if r.status != 200:
                self.error = "HTTP %d: %r" % (r.status, r.read()[:300])
                return
            buf = b""
            while True:
                chunk = r.read1(65536)
                if not chunk:
                    break
                buf += chunk
                while b"\n\n" in buf:
                    event, buf = buf.split(b"\n\n", 1)
                    assert event.startswith(b"data: "), event
                    data = event[len(b"data: "):]
                    if data == b"[DONE]":
                        self.done = True
                        continue
                    j = json.loads(data)
                    if j.get("usage"):
                        self.usage = j["usage"]
                    for ch in j.get("choices") or []:
                        if ch.get("text"):
                            self.text += ch["text"]
                    if j.get("choices"):
                        self.tokens += 1
                        self.first.set()
            if not self.done:
                self.error = "stream ended without [DONE]"
        except Exception as e:  # noqa: BLE001 - the outcome is asserted by the tests
            self.error = repr(e)
        finally:
            self.ended_at = time.time()
            self.conn.close()
            self.first.set()
            self.ended.set()

    def wait(self, timeout):
        assert self.ended.wait(timeout), "stream via %s did not end within %d s (a hang)" % (self.upstream, timeout)
        return self


def wait_tokens(streams, n, timeout):
    deadline = time.time() + timeout
    while any(s.tokens < n and not s.ended.is_set() for s in streams):
        assert time.time() < deadline, "streams stalled: %s" % [(s.upstream, s.tokens) for s in streams]
        time.sleep(0.02)
    for s in streams:
        assert s.error is None and s.tokens >= n, (s.upstream, s.tokens, s.error)


def complete(port, prompt, max_tokens=6):
    """A short non-streaming completion through nginx: (status, upstream, text)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        c.request("POST", "/v1/completions", json.dumps({"model": "smollm2", "prompt": prompt, "temperature": 0,
                                                        "max_tokens": max_tokens}),
                  {"Content-Type": "application/json"})
        r = c.getresponse()
        body = r.read()
        text = json.loads(body)["choices"][0]["text"] if r.status == 200 else body.decode(errors="replace")
        return r.status, r.getheader("X-Upstream"), text
    finally:
        c.close()


def by_upstream(streams):
    out = {}
    for s in streams:
        out.setdefault(s.upstream, []).append(s)
    return out


def test_spread(nginx, replicas):
    before = {r.addr: r.requests_ok() for r in replicas}
    # 2 x replicas x slots concurrent streams of one prompt: least_conn fills every replica.
    streams = [Stream(nginx.port, PROMPTS[0], 8) for _ in range(2 * len(replicas) * PARALLEL)]
    for s in streams:
        s.wait(60)
        assert s.status == 200 and s.error is None and s.done, (s.upstream, s.status, s.error)
        assert s.usage and s.usage["completion_tokens"] == 8, s.usage
    groups = by_upstream(streams)
    assert set(groups) == {r.addr for r in replicas}, "streams reached only %s" % sorted(groups)
    texts = {s.text for s in streams}
    assert len(texts) == 1, "greedy answers differ between replicas: %s" % texts
    after = {r.addr: r.requests_ok() for r in replicas}
    for r in replicas:
        served = after[r.addr] - before[r.addr]
        assert served == len(groups[r.addr]), (r.addr, served, len(groups[r.addr]))
    logged = nginx.access_upstreams()
    assert all(r.addr in logged for r in replicas), logged
    print("  spread: %s" % {a: len(g) for a, g in sorted(groups.items())})


# Long enough that no stream on the killed replica can finish before the kill (decode runs at
# hundreds of tokens a second).
KILL_TOKENS = 128


def test_kill(nginx, replicas):
    # One long stream per slot on every replica, then SIGKILL the replica of the first stream.
    streams = [Stream(nginx.port, PROMPTS[i % len(PROMPTS)], KILL_TOKENS) for i in range(len(replicas) * PARALLEL)]
    wait_tokens(streams, 2, 60)
    groups = by_upstream(streams)
    assert len(groups) == len(replicas), "streams not on every replica: %s" % sorted(groups)
    victim = next(r for r in replicas if r.addr == streams[0].upstream)
    t_kill = time.time()
    victim.proc.send_signal(signal.SIGKILL)
    victim.proc.wait(10)
    for s in groups[victim.addr]:
        s.wait(10)
        assert not s.done and s.error is not None, "a killed replica's stream ended cleanly: %s" % s.text
        assert s.ended_at - t_kill < 5, "the killed replica's stream took %.1f s to fail" % (s.ended_at - t_kill)
        assert s.tokens < KILL_TOKENS
        print("    killed stream: %d tokens, %s" % (s.tokens, s.error))
    # New requests succeed on the two others (the first may try the dead replica: refused, retried).
    for i in range(2 * len(replicas)):
        status, upstream, text = complete(nginx.port, PROMPTS[i % len(PROMPTS)])
        assert status == 200 and text, (status, upstream, text)
        assert upstream.split(", ")[-1] != victim.addr, upstream
    for s in streams:
        if s not in groups[victim.addr]:
            s.wait(90)
            assert s.done and s.error is None and s.usage["completion_tokens"] == KILL_TOKENS, (s.upstream, s.error, s.usage)
    print("  kill: %d streams on %s failed within %.2f s; %d streams and %d new requests on the others ok" % (
        len(groups[victim.addr]), victim.addr, max(s.ended_at for s in groups[victim.addr]) - t_kill,
        len(streams) - len(groups[victim.addr]), 2 * len(replicas)))
    return victim


DRAIN_TOKENS = 256


def test_drain(nginx, replicas):
    # One stream per replica (least_conn), so every replica keeps a free slot for new requests.
    # Long enough to still be draining when the new requests are answered: 64 tokens sometimes
    # finished first once decode ran at ~400 tok/s.
    streams = [Stream(nginx.port, PROMPTS[i % len(PROMPTS)], DRAIN_TOKENS) for i in range(len(replicas))]
    wait_tokens(streams, 2, 60)
    groups = by_upstream(streams)
    assert len(groups) == len(replicas), "streams not on every replica: %s" % sorted(groups)
    target = next(r for r in replicas if r.addr == streams[0].upstream)
    target.proc.send_signal(signal.SIGTERM)
    # While it drains, new requests go to the others (its listener is closed: refused, retried).
    time.sleep(0.2)
    answered = []
    for i in range(len(replicas)):
        status, upstream, text = complete(nginx.port, PROMPTS[i % len(PROMPTS)])
        answered.append(time.time())
        assert status == 200 and text, (status, upstream, text)
        assert upstream.split(", ")[-1] != target.addr, upstream
    for s in streams:
        s.wait(90)
        assert s.done and s.error is None and s.usage["completion_tokens"] == DRAIN_TOKENS, (s.upstream, s.error, s.usage)
    served_during = sum(t < min(s.ended_at for s in groups[target.addr]) for t in answered)
    rc = target.stop(timeout=40)
    assert rc == 0, "the drained replica exited %s:\n%s" % (rc, target.logtext()[-2000:])
    assert "draining" in target.logtext(), target.logtext()[-2000:]
    assert served_during >= 1, "no new request was served while the replica drained"
    print("  drain: %d streams on %s finished with [DONE], exit 0; %d new requests served by the others "
          "meanwhile" % (len(groups[target.addr]), target.addr, served_during))


def main():
    t0 = time.time()
    tmp = tempfile.mkdtemp(prefix="zerfoo-replicas-")
    os.chmod(tmp, 0o755)
    replicas, nginx, ok = [], None, False
    try:
        replicas = [Replica(tmp) for _ in range(3)]
        for r in replicas:
            r.wait_healthy()
        nginx = Nginx(tmp, replicas)
        print("3 replicas %s behind nginx on 127.0.0.1:%d (%.1f s)" % (
            [r.addr for r in replicas], nginx.port, time.time() - t0))
        t = time.time()
        test_spread(nginx, replicas)
        print("ok   spread (%.1f s)" % (time.time() - t), flush=True)
        t = time.time()
        victim = test_kill(nginx, replicas)
        print("ok   kill (%.1f s)" % (time.time() - t), flush=True)
        # The killed replica comes back on its port; nginx tries it again after fail_timeout (2 s),
        # counted on nginx's clock of whole seconds: "now - failed > 2" needs up to 3 s (2.1 s
        # failed once in CI: the drain test's streams then skipped the restarted replica).
        idx = replicas.index(victim)
        replicas[idx] = Replica(tmp, victim.port)
        replicas[idx].wait_healthy()
        time.sleep(3.1)
        t = time.time()
        test_drain(nginx, replicas)
        print("ok   drain (%.1f s)" % (time.time() - t), flush=True)
        for r in replicas:
            assert r.stop() == 0, "replica %s exit status %s" % (r.addr, r.proc.returncode)
        ok = True
    except Exception:  # noqa: BLE001 - printed with the logs
        traceback.print_exc()
    finally:
        if nginx:
            nginx.stop()
        for r in replicas:
            if r.proc.poll() is None:
                r.proc.kill()
                r.proc.wait()
        if not ok:
            print("---- nginx error.log (tail)\n" + (nginx.errors()[-3000:] if nginx else ""))
            for r in replicas:
                print("---- %s log (tail)\n%s" % (r.addr, r.logtext()[-1500:]))
        shutil.rmtree(tmp, ignore_errors=True)
    print("%s: nginx replica test (%.1f s)" % ("OK" if ok else "FAIL", time.time() - t0))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
