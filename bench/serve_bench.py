#!/usr/bin/env python3
"""Load generator for OpenAI-compatible servers (`zerfoo serve`, llama-server): for each
concurrency level, C clients each stream R completions (greedy, ignore_eos, fixed length) and the
script prints aggregate decode tok/s and p50/p99 time to first token and inter-token latency.

  python3 bench/serve_bench.py --url http://127.0.0.1:8080 --concurrency 1,4,8,16
  python3 bench/serve_bench.py --zerfoo build/zerfoo -m MODEL.gguf --parallel 16 --threads 2
  python3 bench/serve_bench.py --llama-server "$(scripts/reference/build_llama_cpp.sh server)/bin/llama-server" \
      -m MODEL.gguf --parallel 16 --threads 2
  python3 bench/serve_bench.py --zerfoo build/zerfoo --llama-server .../llama-server -m MODEL.gguf \
      --threads 2 --repeat 2 --json-out results.json     # both, one after the other, + ratio table
  python3 bench/serve_bench.py --compare zerfoo.json llama.json   # the tables of saved runs
  python3 bench/serve_bench.py --zerfoo build/zerfoo --llama-server .../llama-server -m MODEL.gguf \
      --shared-prefix 2000 --ctx 4096 --concurrency 16    # agents: one long system prompt for all

--lora FILE (repeatable) starts both servers with every adapter (`--lora FILE`) and has client i
stream with adapter i mod N alone ("lora": [{"id": j, "scale": 1 if j == i mod N else 0}], the
per-request field of both servers): batched decode steps then mix N adapters.

--shared-prefix N puts the same ~N-token system text before every prompt and asks for prompt
caching ("cache_prompt": true; llama-server is started with --cache-reuse 256): the warm-up
request evaluates the prefix (its TTFT is printed as the cold one), and the TTFT of the level's
requests shows what the servers make of a prefix they have seen.

With --zerfoo / --llama-server the script starts the server on a free loopback port (--parallel
defaults to the highest concurrency; llama-server's -c is --ctx times --parallel, as it splits its
context over the slots; continuous batching is llama-server's default) and stops it before the
next one starts, so the two never share the machine. Both get the same model file, threads, prompts,
max_tokens and greedy ignore_eos requests. Note that zerfoo's --threads is per session and
llama-server's is for the whole batch. --repeat N runs every level N times and keeps the run with
the highest aggregate tok/s; --rounds N alternates the servers N times (zerfoo, llama-server,
zerfoo, ...) and keeps the best per server and level, so slow phases of a shared machine hit both
(the load average is printed with every run). Standard library only; not a test.
"""
import argparse
import http.client
import json
import os
import subprocess
import sys
import threading
import time
import urllib.parse

from bench_server import free_port, sse_data, start

PROMPTS = ["Once upon a time", "The history of the Roman Empire", "Write a poem about the sea",
           "Explain how a CPU cache works", "The best way to learn a language is"]


def pct(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    k = min(len(values) - 1, max(0, int(round(p / 100.0 * (len(values) - 1)))))
    return values[k]


CACHE_PROMPT = False  # --shared-prefix sets it
N_LORA = 0  # --lora: the adapters both servers load


def shared_prefix_prompts(n_tokens):
    """PROMPTS behind one system text of about n_tokens tokens (~20 tokens per sentence)."""
    sentence = "You are a careful assistant for the Acme support desk; answer briefly and cite the manual. "
    prefix = sentence * max(1, n_tokens // 20)
    return [prefix + "\n\nRequest %d: %s" % (i, p) for i, p in enumerate(PROMPTS)]


def stream_one(host, port, prompt, n_tokens, timeout, client=0):
    """Returns (ttft_s, [inter-token gaps], tokens) of one streamed completion."""
    c = http.client.HTTPConnection(host, port, timeout=timeout)
    body = {"prompt": prompt, "max_tokens": n_tokens, "temperature": 0, "stream": True, "ignore_eos": True,
            "n_predict": n_tokens, "cache_prompt": CACHE_PROMPT, "stream_options": {"include_usage": True}}
    if N_LORA:
        body["lora"] = [{"id": j, "scale": 1.0 if j == client % N_LORA else 0.0} for j in range(N_LORA)]
    t0 = time.perf_counter()
    c.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    if r.status != 200:
        raise RuntimeError("HTTP %d: %s" % (r.status, r.read()[:200]))
    times, usage = [], None
    for j in sse_data(r):
        if j.get("usage"):
            usage = j["usage"]
        if j.get("choices") and j["choices"][0].get("text"):
            times.append(time.perf_counter())
    c.close()
    if not times:
        return None, [], 0
    gaps = [b - a for a, b in zip(times, times[1:])]
    n = usage["completion_tokens"] if usage and usage.get("completion_tokens") else len(times)
    return times[0] - t0, gaps, n


def run_level(host, port, conc, reqs, n_tokens, timeout):
    ttfts, gaps, tokens, errors = [], [], [0], []
    lock = threading.Lock()

    def client(i):
        for k in range(reqs):
            try:
                t, g, n = stream_one(host, port, PROMPTS[(i + k) % len(PROMPTS)], n_tokens, timeout, client=i)
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


def start_server(kind, binary, a, levels):
    """Starts `zerfoo serve` or llama-server on a free loopback port; returns (proc, port)."""
    port = free_port()
    parallel = a.parallel or max(levels)
    if kind == "zerfoo":
        cmd = [binary, "serve", "-m", a.model, "--port", str(port), "--parallel", str(parallel),
               "--threads", str(a.threads), "--ctx-size", str(a.ctx), "--queue", str(4 * max(levels))] + a.zerfoo_args.split()
    else:
        cmd = [binary, "-m", a.model, "--host", "127.0.0.1", "--port", str(port), "--parallel", str(parallel),
               "--threads", str(a.threads or os.cpu_count()), "--ctx-size", str(a.ctx * parallel)]
        if a.shared_prefix:
            cmd += ["--cache-reuse", "256"]
    for f in a.lora:
        cmd += ["--lora", f]
    return start(kind, cmd, port, log_name="serve_bench-%s.log" % kind), port


def memory_mib(pid):
    """The server's memory after a level: PSS (every page it maps, shared ones divided among
    their mappings: the prefix cache's pages mapped into many slots count once) and its private
    anonymous memory, in MiB from /proc/PID/smaps_rollup; {} where unavailable."""
    out = {}
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("Pss", "Anonymous"):
                    out[{"Pss": "pss_mib", "Anonymous": "anon_mib"}[k]] = round(int(v.split()[0]) / 1024.0, 1)
    except OSError:
        pass
    return out


def bench(host, port, levels, a, label, pid=None):
    """Every level --repeat times; the run with the highest aggregate tok/s per level."""
    cold, _, _ = stream_one(host, port, PROMPTS[0], 4, a.timeout)  # warm-up
    if a.shared_prefix:
        print("# %s: cold TTFT (the shared prefix evaluated) %.1f ms" % (label, cold * 1e3), file=sys.stderr, flush=True)
    best = {}
    for rep in range(a.repeat):
        for conc in levels:
            r = run_level(host, port, conc, a.requests, a.tokens, a.timeout)
            r.update(server=label, rep=rep, load=round(os.getloadavg()[0], 2))
            if pid is not None:
                r.update(memory_mib(pid))
            print(json.dumps(r), flush=True)
            if conc not in best or (r["errors"], -r["aggregate_tok_s"]) < (best[conc]["errors"],
                                                                           -best[conc]["aggregate_tok_s"]):
                best[conc] = r
    return [best[c] for c in levels]


COLS = [("aggregate_tok_s", "tok/s"), ("ttft_p50_ms", "TTFT p50"), ("ttft_p99_ms", "TTFT p99"),
        ("itl_p50_ms", "ITL p50"), ("itl_p99_ms", "ITL p99")]


def print_table(results):
    """A markdown table per server, then zerfoo / llama-server ratios when both are present."""
    cols = COLS + [(k, h) for k, h in (("pss_mib", "PSS MiB"), ("anon_mib", "anon MiB"))
                   if all(k in r for r in results)]
    servers = list(dict.fromkeys(r["server"] for r in results))
    print("\n| server | streams | " + " | ".join(h + (" (ms)" if k.endswith("_ms") else "") for k, h in cols)
          + " | errors |")
    print("|---" * (len(cols) + 3) + "|")
    for r in results:
        print("| %s | %d | " % (r["server"], r["concurrency"]) + " | ".join(str(r[k]) for k, _ in cols)
              + " | %d |" % r["errors"])
    if len(servers) == 2:
        a, b = servers
        by = {(r["server"], r["concurrency"]): r for r in results}
        print("\n| streams | %s / %s: " % (a, b) + " | ".join(h for _, h in cols) + " |")
        print("|---" * (len(cols) + 1) + "|")
        for conc in sorted({r["concurrency"] for r in results}):
            if (a, conc) in by and (b, conc) in by:
                ra, rb = by[(a, conc)], by[(b, conc)]
                print("| %d | " % conc + " | ".join(
                    "%.2fx" % (ra[k] / rb[k]) if rb[k] else "-" for k, _ in cols) + " |")
        print("(tok/s: higher is better for %s; latencies and memory: below 1 is better for %s)" % (a, a))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", help="a running server, e.g. http://127.0.0.1:8080")
    ap.add_argument("--zerfoo", help="start this zerfoo binary's `serve`")
    ap.add_argument("--llama-server", help="start this llama-server binary (after zerfoo's run, if both)")
    ap.add_argument("-m", "--model")
    ap.add_argument("--parallel", type=int, default=0, help="slots (default: the highest concurrency)")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--ctx", type=int, default=1024, help="context per slot")
    ap.add_argument("--concurrency", default="1,4,8,16")
    ap.add_argument("--requests", type=int, default=2, help="streams per client per level")
    ap.add_argument("--tokens", type=int, default=64, help="tokens per stream")
    ap.add_argument("--repeat", type=int, default=1, help="runs per level; the best is kept")
    ap.add_argument("--rounds", type=int, default=1,
                    help="start the server(s) this many times, alternating zerfoo and llama-server; the best "
                         "run per server and level is kept")
    ap.add_argument("--shared-prefix", type=int, default=0, metavar="N",
                    help="the same ~N-token system text before every prompt, with prompt caching")
    ap.add_argument("--lora", action="append", default=[], metavar="FILE",
                    help="a LoRA adapter for both servers (repeatable); client i uses adapter i mod N")
    ap.add_argument("--zerfoo-args", default="", help="extra `zerfoo serve` flags, e.g. \"--no-cache-prompt --prefix-cache-mib -1\"")
    ap.add_argument("--label", help="name of the --url server in the tables")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--json-out", help="write the kept results (a JSON list) here")
    ap.add_argument("--compare", nargs="+", metavar="JSON", help="print the tables of --json-out files (the best run per server and level)")
    a = ap.parse_args()
    if a.compare:
        best = {}  # the best run per server and level over all the files
        for path in a.compare:
            with open(path) as f:
                for r in json.load(f):
                    key = (r["server"], r["concurrency"])
                    if key not in best or (r["errors"], -r["aggregate_tok_s"]) < (best[key]["errors"],
                                                                                -best[key]["aggregate_tok_s"]):
                        best[key] = r
        print_table(sorted(best.values(), key=lambda r: (r["server"] != "zerfoo", r["server"], r["concurrency"])))
        return
    levels = [int(x) for x in a.concurrency.split(",")]
    global N_LORA
    N_LORA = len(a.lora)
    if a.shared_prefix:
        global PROMPTS, CACHE_PROMPT
        PROMPTS, CACHE_PROMPT = shared_prefix_prompts(a.shared_prefix), True
    runs = [(k, b) for k, b in (("zerfoo", a.zerfoo), ("llama-server", a.llama_server)) if b]
    if runs and not a.model:
        ap.error("--zerfoo / --llama-server need -m MODEL")
    if not runs and not a.url:
        ap.error("give --url, --zerfoo or --llama-server")
    print("# %s; load average %s; model %s" % (
        subprocess.run(["sh", "-c", "lscpu | grep 'Model name' | sed 's/.*: *//'"], capture_output=True,
                       text=True).stdout.strip(), os.getloadavg(), a.model or a.url), file=sys.stderr)
    results = []
    if a.url:
        u = urllib.parse.urlparse(a.url)
        results += bench(u.hostname, u.port or 80, levels, a, a.label or a.url)
    best = {}
    for rnd in range(a.rounds):
        for kind, binary in runs:
            proc, port = start_server(kind, binary, a, levels)
            try:
                for r in bench("127.0.0.1", port, levels, a, kind, proc.pid):
                    key = (kind, r["concurrency"])
                    if key not in best or (r["errors"], -r["aggregate_tok_s"]) < (best[key]["errors"],
                                                                                -best[key]["aggregate_tok_s"]):
                        best[key] = r
            finally:
                proc.terminate()
                try:
                    proc.wait(60)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
    results += [best[(kind, c)] for kind, _ in runs for c in levels]
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(results, f, indent=1)
    print_table(results)


if __name__ == "__main__":
    main()
