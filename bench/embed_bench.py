#!/usr/bin/env python3
"""Embedding throughput, `zerfoo serve` against llama-server --embeddings: embeddings per second
for batches of --inputs token arrays of --tokens tokens each (POST /v1/embeddings, one request per
batch), on the same files and threads.

  python3 scripts/synth_embed.py /tmp/embed-bench --bench    # bert-base-q8_0, qwen3-0.6b-q8_0
  python3 bench/embed_bench.py --zerfoo build/zerfoo \\
      --llama-server ~/.cache/zerfoo/reference/build/bin/llama-server \\
      -m /tmp/embed-bench/bert-base-q8_0.gguf -m /tmp/embed-bench/qwen3-0.6b-q8_0.gguf --threads 2 --rounds 3

The servers never run at the same time: per model and round, zerfoo serve starts, answers a
warm-up request and --requests timed ones, stops; then llama-server does the same. Rounds
alternate the two (zerfoo, llama-server, zerfoo, ...) so slow phases of a shared machine hit both;
the table keeps each server's best request and prints the ratio of every round's pair (same
phase) besides the ratio of the bests. The token ids are the same fixed pseudo-random ordinary
tokens for both servers (valid in the BERT and Qwen vocabularies), sent as token arrays so that
tokenization is not timed and both evaluate exactly the same tokens.

llama-server gets --embeddings, -t/-tb THREADS, --parallel --llama-parallel (default 16) slots of
2 * --tokens context each, and a batch that holds all slots' inputs (-b = -ub = slots * tokens:
llama.cpp evaluates a non-causal input in one micro-batch), i.e. continuous batching over 16
inputs at a time; --llama-args adds flags. zerfoo serve gets --threads THREADS (embedding calls
run outside its generation slots, all inputs of a request in steps of up to 512 tokens).
Standard library only; not a test.
"""
import argparse
import http.client
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(kind, binary, model, a):
    port = free_port()
    if kind == "zerfoo":
        cmd = [binary, "serve", "-m", model, "--port", str(port), "--threads", str(a.threads)] + a.zerfoo_args.split()
    else:
        slots = a.llama_parallel
        batch = slots * a.tokens
        cmd = [binary, "-m", model, "--host", "127.0.0.1", "--port", str(port), "--embeddings", "-t", str(a.threads),
               "-tb", str(a.threads), "--parallel", str(slots), "-c", str(2 * batch), "-b", str(batch), "-ub",
               str(batch)] + a.llama_args.split()
    log = open(os.path.join(tempfile.gettempdir(), "embed_bench-%s.log" % kind), "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 600
    while True:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            c.request("GET", "/health")
            if c.getresponse().status == 200:
                break
        except OSError:
            pass
        if time.time() > deadline or proc.poll() is not None:
            proc.kill()
            sys.exit("%s did not become healthy: %s (log %s)" % (kind, " ".join(cmd), log.name))
        time.sleep(0.2)
    print("# %s: %s" % (kind, " ".join(cmd)), file=sys.stderr, flush=True)
    return proc, port


def embed_once(port, body):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=3600)
    t0 = time.perf_counter()
    c.request("POST", "/v1/embeddings", body=body, headers={"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    dt = time.perf_counter() - t0
    if r.status != 200:
        sys.exit("HTTP %d: %s" % (r.status, data[:300]))
    n = len(json.loads(data)["data"])
    return dt, n


def run(kind, binary, model, a, body):
    proc, port = start(kind, binary, model, a)
    try:
        embed_once(port, body)  # warm-up: first-touch of the weights, buffers
        times = []
        for _ in range(a.requests):
            dt, n = embed_once(port, body)
            assert n == a.inputs, (n, a.inputs)
            times.append(dt)
        return min(times)
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zerfoo", required=True)
    ap.add_argument("--llama-server", required=True)
    ap.add_argument("-m", "--model", action="append", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--inputs", type=int, default=64)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--requests", type=int, default=3, help="timed requests per server and round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--llama-parallel", type=int, default=16)
    ap.add_argument("--llama-args", default="")
    ap.add_argument("--zerfoo-args", default="")
    a = ap.parse_args()
    rng = random.Random(29)
    inputs = [[rng.randrange(1000, 20000) for _ in range(a.tokens)] for _ in range(a.inputs)]
    body = json.dumps({"input": inputs, "encoding_format": "float"})
    rows = []
    for model in a.model:
        best = {"zerfoo": [], "llama-server": []}
        for r in range(a.rounds):
            for kind, binary in (("zerfoo", a.zerfoo), ("llama-server", a.llama_server)):
                t = run(kind, binary, model, a, body)
                best[kind].append(t)
                load = os.getloadavg()[0]
                print("%s round %d %s: %.3f s per %d inputs = %.1f emb/s (load %.1f)" %
                      (os.path.basename(model), r, kind, t, a.inputs, a.inputs / t, load), flush=True)
        pair = [l / z for z, l in zip(best["zerfoo"], best["llama-server"])]
        rows.append((os.path.basename(model), a.inputs / min(best["zerfoo"]), a.inputs / min(best["llama-server"]),
                     min(best["llama-server"]) / min(best["zerfoo"]), pair))
    print("\n| model | zerfoo emb/s | llama-server emb/s | ratio (bests) | ratio per round |")
    print("|---|---|---|---|---|")
    for name, z, l, ratio, pair in rows:
        print("| %s | %.1f | %.1f | %.2fx | %s (median %.2fx) |" %
              (name, z, l, ratio, " ".join("%.2f" % p for p in pair), statistics.median(pair)))


if __name__ == "__main__":
    main()
