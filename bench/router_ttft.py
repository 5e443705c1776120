#!/usr/bin/env python3
"""Time to first token of a model the server has not loaded (load + prefill + first token), and of
the same request once it is loaded, for `zerfoo serve --models-dir` and llama-server's router mode
(`llama-server --models-dir`, no -m: it starts a child server per model) on the same files.

  python3 bench/router_ttft.py --zerfoo build/zerfoo --llama-server .../bin/llama-server \\
      MODEL.gguf [MODEL.gguf ...] --threads 2 --rounds 3

Each round, per model: POST /models/unload (and wait for /v1/models to say "unloaded"), then a
streamed chat completion (cold), then the same request again (warm; prompt caching off, so it is
evaluated again). The model files stay in the page cache between rounds (the first round reads
them from disk): "cold" means not loaded by the server, as after --sleep-idle-seconds or an
eviction. The two servers run one after the other with the same flags (--threads,
--ctx-size, --parallel 1) and the median per model is printed with the ratio. Standard library only.
"""
import argparse
import http.client
import json
import os
import statistics
import sys
import tempfile
import time

from bench_server import first_delta_seconds, free_port, start, stop

MESSAGES = [{"role": "user", "content": "Write one sentence about the sea."}]


def request(port, method, path, body=None, timeout=300):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    c.request(method, path, json.dumps(body) if body is not None else None, {"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def status(port, name):
    st, body = request(port, "GET", "/v1/models")
    if st != 200:
        return None
    for m in json.loads(body)["data"]:
        if m["id"] == name:
            return m.get("status", {}).get("value")
    return None


def wait_status(port, name, want, timeout=120):
    deadline = time.time() + timeout
    while status(port, name) != want:
        if time.time() > deadline:
            sys.exit("%s did not become %s" % (name, want))
        time.sleep(0.05)


def ttft(port, name):
    """Seconds from sending a streamed chat completion to its first content chunk."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    body = {"model": name, "messages": MESSAGES, "max_tokens": 8, "temperature": 0, "stream": True,
            "cache_prompt": False}
    t0 = time.perf_counter()
    c.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    if r.status != 200:
        sys.exit("HTTP %d: %s" % (r.status, r.read()[:300]))
    first = first_delta_seconds(r, t0)
    c.close()
    return first


def start_server(kind, binary, models_dir, a):
    port = free_port()
    common = ["--models-dir", models_dir, "--port", str(port), "--threads", str(a.threads), "--ctx-size",
              str(a.ctx), "--parallel", "1"]
    cmd = [binary, "serve"] + common if kind == "zerfoo" else [binary, "--host", "127.0.0.1"] + common
    return start(kind, cmd, port, timeout=60, log_name="router_ttft-%s.log" % kind), port


def run(kind, binary, models_dir, names, a):
    proc, port = start_server(kind, binary, models_dir, a)
    out = {n: {"cold": [], "warm": []} for n in names}
    try:
        for rnd in range(a.rounds):
            for n in names:
                if status(port, n) != "unloaded":
                    request(port, "POST", "/models/unload", {"model": n})
                    wait_status(port, n, "unloaded")
                cold = ttft(port, n)
                warm = ttft(port, n)
                out[n]["cold"].append(cold)
                out[n]["warm"].append(warm)
                print(json.dumps({"server": kind, "round": rnd, "model": n, "cold_ms": round(cold * 1e3, 1),
                                  "warm_ms": round(warm * 1e3, 1), "load": round(os.getloadavg()[0], 2)}), flush=True)
    finally:
        stop(proc)
    return {n: {k: statistics.median(v) for k, v in d.items()} for n, d in out.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="+", help="GGUF files (served as their file names without .gguf)")
    ap.add_argument("--zerfoo")
    ap.add_argument("--llama-server")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ctx", type=int, default=2048)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="router-ttft-")
    names = []
    for m in a.models:
        name = os.path.basename(m)[:-5]
        os.symlink(os.path.abspath(m), os.path.join(d, name + ".gguf"))
        names.append(name)
    results = {}
    if a.zerfoo:
        results["zerfoo"] = run("zerfoo", a.zerfoo, d, names, a)
    if a.llama_server:
        results["llama-server"] = run("llama-server", a.llama_server, d, names, a)
    print("\n| model | server | cold TTFT ms (load + prefill) | warm TTFT ms |\n|---|---|---|---|")
    for n in names:
        for k, r in results.items():
            print("| %s | %s | %.0f | %.1f |" % (n, k, r[n]["cold"] * 1e3, r[n]["warm"] * 1e3))
    if len(results) == 2:
        z, l = results["zerfoo"], results["llama-server"]
        for n in names:
            print("| %s | llama-server / zerfoo | %.2fx | %.2fx |" % (n, l[n]["cold"] / z[n]["cold"],
                                                                    l[n]["warm"] / z[n]["warm"]))


if __name__ == "__main__":
    main()
