#!/usr/bin/env python3
"""Load generator for OpenAI-compatible servers (`zerfoo serve`, llama-server): for each
concurrency level, C clients each stream R completions (greedy, ignore_eos, fixed length) and the
script prints aggregate decode tok/s and p50/p99 time to first token and inter-token latency.

  python3 bench/serve_bench.py --url http://127.0.0.1:8080 --concurrency 1,4,8,16
  python3 bench/serve_bench.py --zerfoo build/zerfoo -m MODEL.gguf --parallel 16 --threads 2

With --zerfoo the script starts `zerfoo serve` on a free loopback port (--parallel defaults to the
highest concurrency) and stops it at the end. Standard library only; not a test.
"""
import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse

PROMPTS = ["Once upon a time", "The history of the Roman Empire", "Write a poem about the sea",
           "Explain how a CPU cache works", "The best way to learn a language is"]


def pct(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    k = min(len(values) - 1, max(0, int(round(p / 100.0 * (len(values) - 1)))))
    return values[k]


def stream_one(host, port, prompt, n_tokens, timeout):
    """Returns (ttft_s, [inter-token gaps], tokens) of one streamed completion."""
    c = http.client.HTTPConnection(host, port, timeout=timeout)
    body = {"prompt": prompt, "max_tokens": n_tokens, "temperature": 0, "stream": True, "ignore_eos": True,
            "n_predict": n_tokens, "cache_prompt": False}
    t0 = time.perf_counter()
    c.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    if r.status != 200:
        raise RuntimeError("HTTP %d: %s" % (r.status, r.read()[:200]))
    buf, times = b"", []
    while True:
        chunk = r.read1(65536)
        if not chunk:
            break
        buf += chunk
        while b"\n\n" in buf:
            event, buf = buf.split(b"\n\n", 1)
            data = event[len(b"data: "):]
            if data == b"[DONE]":
                continue
            j = json.loads(data)
            if j.get("choices") and j["choices"][0].get("text"):
                times.append(time.perf_counter())
    c.close()
    if not times:
        return None, [], 0
    gaps = [b - a for a, b in zip(times, times[1:])]
    return times[0] - t0, gaps, len(times)


def run_level(host, port, conc, reqs, n_tokens, timeout):
    ttfts, gaps, tokens, errors = [], [], [0], []
    lock = threading.Lock()

    def client(i):
        for k in range(reqs):
            try:
                t, g, n = stream_one(host, port, PROMPTS[(i + k) % len(PROMPTS)], n_tokens, timeout)
            except Exception as e:  # noqa: BLE001 - counted and printed
                with lock:
                    errors.append(repr(e))
                continue
            with lock:
                if t is not None:
                    ttfts.append(t)
                gaps.extend(g)
                tokens[0] += n

    threads = [threading.Thread(target=client, args=(i,)) for i in range(conc)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    return {"concurrency": conc, "requests": conc * reqs, "tokens": tokens[0], "wall_s": round(wall, 2),
            "aggregate_tok_s": round(tokens[0] / wall, 1),
            "ttft_p50_ms": round(pct(ttfts, 50) * 1e3, 1), "ttft_p99_ms": round(pct(ttfts, 99) * 1e3, 1),
            "itl_p50_ms": round(pct(gaps, 50) * 1e3, 1), "itl_p99_ms": round(pct(gaps, 99) * 1e3, 1),
            "errors": len(errors)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", help="a running server, e.g. http://127.0.0.1:8080")
    ap.add_argument("--zerfoo", help="start this zerfoo binary's `serve` instead")
    ap.add_argument("-m", "--model")
    ap.add_argument("--parallel", type=int, default=0)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--concurrency", default="1,4,8,16")
    ap.add_argument("--requests", type=int, default=2, help="streams per client per level")
    ap.add_argument("--tokens", type=int, default=64, help="tokens per stream")
    ap.add_argument("--timeout", type=float, default=600)
    a = ap.parse_args()
    levels = [int(x) for x in a.concurrency.split(",")]
    proc = None
    if a.zerfoo:
        if not a.model:
            ap.error("--zerfoo needs -m MODEL")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        parallel = a.parallel or max(levels)
        proc = subprocess.Popen([a.zerfoo, "serve", "-m", a.model, "--port", str(port), "--parallel", str(parallel),
                                 "--threads", str(a.threads), "--queue", str(4 * max(levels))],
                                stderr=subprocess.DEVNULL)
        host = "127.0.0.1"
        deadline = time.time() + 120
        while True:
            try:
                c = http.client.HTTPConnection(host, port, timeout=5)
                c.request("GET", "/health")
                if c.getresponse().status == 200:
                    break
            except OSError:
                pass
            if time.time() > deadline or proc.poll() is not None:
                sys.exit("server did not become healthy")
            time.sleep(0.1)
    else:
        if not a.url:
            ap.error("give --url or --zerfoo")
        u = urllib.parse.urlparse(a.url)
        host, port = u.hostname, u.port or 80
    try:
        stream_one(host, port, PROMPTS[0], 4, a.timeout)  # warm-up
        for conc in levels:
            print(json.dumps(run_level(host, port, conc, a.requests, a.tokens, a.timeout)), flush=True)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(60)


if __name__ == "__main__":
    main()
