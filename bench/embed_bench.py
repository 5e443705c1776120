#!/usr/bin/env python3
"""Embedding throughput, `zerfoo serve` against llama-server --embeddings: embeddings per second
for batches of --inputs token arrays of --tokens tokens each (POST /v1/embeddings, one request per
batch), on the same files and threads.

  python3 scripts/synth_embed.py /tmp/embed-bench --bench    # bert-base-q8_0, qwen3-0.6b-q8_0
  python3 bench/embed_bench.py --zerfoo build/zerfoo \\
      --llama-server ~/.cache/zerfoo/reference/build/bin/llama-server \\
      -m /tmp/embed-bench/bert-base-q8_0.gguf -m /tmp/embed-bench/qwen3-0.6b-q8_0.gguf --threads 2 --rounds 3

The servers never run at the same time: per model and round, zerfoo serve starts, answers a
warm-up request (8 of the inputs) and --requests timed ones, stops; then llama-server does the
same. Rounds alternate the two (zerfoo, llama-server, zerfoo, ...) so slow phases of a shared
machine hit both; the table gives each server's best request, the wall-time ratio
(llama-server / zerfoo: above 1 = zerfoo faster) of every round's pair, and the ratio of the CPU
seconds the servers spent on the timed request (steadier than wall time on a machine loaded by
other work, blind to idle threads). The token ids are the same fixed pseudo-random ordinary
tokens for both servers (valid in the BERT and Qwen vocabularies), sent as token arrays so that
tokenization is not timed and both evaluate exactly the same tokens.

llama-server gets --embeddings, -t/-tb THREADS, --parallel --llama-parallel (default 16) slots of
2 * --tokens context each, and a batch that holds all slots' inputs (-b = -ub = slots * tokens:
llama.cpp evaluates a non-causal input in one micro-batch), i.e. continuous batching over 16
inputs at a time; --llama-args adds flags. zerfoo serve gets --threads THREADS (an embedding call
holds one of its slots, all inputs of a request in steps of up to 512 tokens).
--llama-embedding BIN instead of --llama-server (before llama-server is built): llama.cpp's
llama-embedding tool gets the same texts (--inputs copies of "hello hello ...", as many words as
make --tokens tokens with the model's special tokens, counted by zerfoo's usage.prompt_tokens;
zerfoo serve gets the same texts), -t THREADS and a batch of --llama-parallel inputs
(-c = -b = -ub = slots * tokens); its time is the process's wall time from its first
batch_decode log line (model load and tokenization done) to its exit.
Standard library only; not a test.
"""
import argparse
import http.client
import re
import json
import os
import random
import statistics
import subprocess
import sys
import time

from bench_server import free_port, start, stop


def start_server(kind, binary, model, a):
    port = free_port()
    if kind == "zerfoo":
        cmd = [binary, "serve", "-m", model, "--port", str(port), "--threads", str(a.threads)] + a.zerfoo_args.split()
    else:
        slots = a.llama_parallel
        batch = slots * a.tokens
        cmd = [binary, "-m", model, "--host", "127.0.0.1", "--port", str(port), "--embeddings", "-t", str(a.threads),
               "-tb", str(a.threads), "--parallel", str(slots), "-c", str(2 * batch), "-b", str(batch), "-ub",
               str(batch)] + a.llama_args.split()
    return start(kind, cmd, port, timeout=600, log_name="embed_bench-%s.log" % kind), port


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


def cpu_seconds(pid):
    """User + system CPU time of a process so far (Linux /proc)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(kind, binary, model, a, body, warm):
    """(best wall seconds, the server's CPU seconds for that request) over --requests requests."""
    proc, port = start_server(kind, binary, model, a)
    try:
        embed_once(port, warm)  # warm-up: first touch of the weights and buffers
        best = None
        for _ in range(a.requests):
            c0 = cpu_seconds(proc.pid)
            dt, n = embed_once(port, body)
            cpu = cpu_seconds(proc.pid) - c0
            assert n == a.inputs, (n, a.inputs)
            if best is None or dt < best[0]:
                best = (dt, cpu)
        return best
    finally:
        stop(proc)


def run_llama_embedding(binary, model, a, n_words):
    """Wall seconds of llama-embedding's decoding of --inputs texts (after load and tokenization)."""
    batch = a.llama_parallel * a.tokens
    text = " ".join(["hello"] * n_words)
    cmd = [binary, "-m", model, "-t", str(a.threads), "-c", str(batch), "-b", str(batch), "-ub", str(batch),
           "--embd-separator", "<#sep#>", "--embd-output-format", "array", "-p", "<#sep#>".join([text] * a.inputs)]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True)
    total = time.perf_counter() - t0
    if out.returncode != 0:
        sys.exit("llama-embedding failed: %s" % out.stderr[-500:])
    m = re.search(r"^(\d+)\.(\d\d)\.(\d\d\d)\.(\d\d\d) I batch_decode", out.stdout + out.stderr, re.M)
    if not m:
        sys.exit("no batch_decode line in llama-embedding's log")
    mi, sec, ms, us = (int(g) for g in m.groups())  # the log's minutes.seconds.ms.us since start
    started = mi * 60 + sec + ms / 1e3 + us / 1e6
    print("# llama-embedding: %s" % " ".join(cmd[:-1]), file=sys.stderr, flush=True)
    return total - started, float("nan")


def words_for(a, model):
    """How many "hello" words make --tokens tokens with the model's special tokens (zerfoo's count)."""
    proc, port = start_server("zerfoo", a.zerfoo, model, a)
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        c.request("POST", "/v1/embeddings", body=json.dumps({"input": " ".join(["hello"] * 32)}),
                  headers={"Content-Type": "application/json"})
        used = json.loads(c.getresponse().read())["usage"]["prompt_tokens"]
        return a.tokens - (used - 32)
    finally:
        stop(proc)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zerfoo", required=True)
    ref = ap.add_mutually_exclusive_group(required=True)
    ref.add_argument("--llama-server")
    ref.add_argument("--llama-embedding")
    ap.add_argument("-m", "--model", action="append", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--inputs", type=int, default=64)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--requests", type=int, default=1, help="timed requests per server and round")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--llama-parallel", type=int, default=16)
    ap.add_argument("--llama-args", default="")
    ap.add_argument("--zerfoo-args", default="")
    a = ap.parse_args()
    rng = random.Random(29)
    inputs = [[rng.randrange(1000, 20000) for _ in range(a.tokens)] for _ in range(a.inputs)]
    body = json.dumps({"input": inputs, "encoding_format": "float"})
    warm = json.dumps({"input": inputs[:8], "encoding_format": "float"})
    rows = []
    other = "llama-server" if a.llama_server else "llama-embedding"
    for model in a.model:
        if a.llama_embedding:  # texts, the same for both
            n_words = words_for(a, model)
            text = " ".join(["hello"] * n_words)
            body = json.dumps({"input": [text] * a.inputs, "encoding_format": "float"})
            warm = json.dumps({"input": [text] * 8, "encoding_format": "float"})
        wall = {"zerfoo": [], other: []}
        cpu = {"zerfoo": [], other: []}
        for r in range(a.rounds):
            for kind, binary in (("zerfoo", a.zerfoo), (other, a.llama_server or a.llama_embedding)):
                if kind == "llama-embedding":
                    t, c = run_llama_embedding(binary, model, a, n_words)
                else:
                    t, c = run(kind, binary, model, a, body, warm)
                wall[kind].append(t)
                cpu[kind].append(c)
                print("%s round %d %s: %.2f s (server CPU %.1f s) per %d inputs = %.2f emb/s (load %.1f)" %
                      (os.path.basename(model), r, kind, t, c, a.inputs, a.inputs / t, os.getloadavg()[0]), flush=True)
        pair = [l / z for z, l in zip(wall["zerfoo"], wall[other])]
        cpu_ratio = statistics.median(l / z for z, l in zip(cpu["zerfoo"], cpu[other]))
        rows.append((os.path.basename(model), a.inputs / min(wall["zerfoo"]), a.inputs / min(wall[other]),
                     pair, cpu_ratio))
    print("\n| model | zerfoo emb/s (best) | %s emb/s (best) | wall-time ratio per round | CPU-time ratio (median) |"
          % other)
    print("|---|---|---|---|---|")
    for name, z, l, pair, cpu_ratio in rows:
        print("| %s | %.2f | %.2f | %s (median %.2fx) | %.2fx |" %
              (name, z, l, " ".join("%.2f" % p for p in pair), statistics.median(pair), cpu_ratio))


if __name__ == "__main__":
    main()
