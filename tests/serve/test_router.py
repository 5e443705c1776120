#!/usr/bin/env python3
"""One `zerfoo serve`, many models (issue #44 §1): the request's "model" picks the model on every
endpoint, models load on demand (once, however many requests wait for the load), the least
recently used idle model is unloaded beyond --models-max, an unload waits for the running
request, a file that fails to load fails its requests with the loader's message and leaves the
others serving, Ollama's keep_alive 0 unloads, /models/load and /models/unload, --models-dir,
--models-preset and --sleep-idle-seconds.

Models: SmolLM2 (chat), Gemma 3 270M (chat, scripts/fetch_models.sh gemma3), the random-weight
BERT embedder and reranker of tests/capi/make_embed_models.sh (ctest's embed.models fixture,
written here when missing), and a truncated copy of SmolLM2. The official openai client and raw
HTTP.

Environment: ZERFOO_CLI, ZERFOO_TEST_MODEL (as test_serve.py); ZERFOO_EMBED_MODELS (the
directory of the BERT files, default <build>/tests/embed-models).
"""
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time

import openai

from test_serve import CLI, MODEL, Server, run_suite, sse_events

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TMP = tempfile.mkdtemp(prefix="zerfoo-router-")
CHAT = [{"role": "user", "content": "Name three fruits."}]


def embed_models():
    d = os.environ.get("ZERFOO_EMBED_MODELS") or os.path.join(os.path.dirname(os.path.abspath(CLI)), "tests",
                                                               "embed-models")
    if not os.path.exists(os.path.join(d, "split", "smollm2-00003-of-00003.gguf")):
        subprocess.run([os.path.join(ROOT, "tests", "capi", "make_embed_models.sh"), d], check=True)
    return os.path.join(d, "bert-f32.gguf"), os.path.join(d, "bert-rank-f32.gguf")


def split_parts():
    """SmolLM2 in three parts (gguf-py's split writer; the same fixture as the BERT files)."""
    d = os.path.dirname(embed_models()[0])
    return [os.path.join(d, "split", "smollm2-%05d-of-00003.gguf" % i) for i in (1, 2, 3)]


def gemma():
    return subprocess.run([os.path.join(ROOT, "scripts", "fetch_models.sh"), "gemma3"], capture_output=True,
                          text=True, check=True).stdout.strip()


def broken():
    """A truncated copy of SmolLM2: the header reads, the tensors do not."""
    path = os.path.join(TMP, "broken.gguf")
    with open(MODEL, "rb") as f, open(path, "wb") as out:
        out.write(f.read(1 << 20))
    return path


def models(s):
    st, _, body = s.request("GET", "/v1/models")
    assert st == 200, (st, body)
    return {m["id"]: m for m in json.loads(body)["data"]}


def status(s, name):
    return models(s)[name]["status"]["value"]


def wait_status(s, name, want, timeout=10):
    deadline = time.time() + timeout
    while status(s, name) != want:
        assert time.time() < deadline, "%s not %s within %d s: %s" % (name, want, timeout, models(s)[name])
        time.sleep(0.05)


def chat(s, model, n=4, **kw):
    return s.client().chat.completions.create(model=model, messages=CHAT, max_tokens=n, temperature=0, **kw)


def start_main():
    emb, rank = embed_models()
    return Server("-m", emb + "=embed", "-m", rank + "=rank", "-m", gemma() + "=gemma", "-m", broken() + "=broken",
                  "--models-max", "2", "--parallel", "1", "--ctx-size", "512", model=MODEL + "=chat")


# ---- tests on one server: chat (default, loaded at start), embed, rank, gemma, broken ----------


def test_listing_and_names(s):
    ms = models(s)
    assert list(ms) == ["chat", "embed", "rank", "gemma", "broken"], list(ms)
    assert ms["chat"]["status"] == {"value": "loaded"} and ms["chat"]["kind"] == "generate", ms["chat"]
    assert ms["chat"]["meta"]["n_ctx"] == 512, ms["chat"]
    for name in ["embed", "rank", "gemma", "broken"]:
        assert ms[name]["status"] == {"value": "unloaded"} and ms[name]["kind"] == "unknown", ms[name]
        assert "meta" not in ms[name] and ms[name]["path"].endswith(".gguf"), ms[name]
    assert [m.id for m in s.client().models.list().data] == list(ms)
    # No model: the default; an unknown name: 404 model_not_found on every OpenAI-shaped route.
    st, _, r = s.post("/v1/chat/completions", {"messages": CHAT, "max_tokens": 2})
    assert st == 200 and r["model"] == "chat", (st, r)
    try:
        chat(s, "gpt-4")
        raise AssertionError("an unknown model was served")
    except openai.NotFoundError as e:
        assert e.status_code == 404 and e.body["code"] == "model_not_found" and "'gpt-4'" in e.body["message"], e.body
    for path, body in [("/v1/embeddings", {"model": "nope", "input": "x"}),
                       ("/v1/rerank", {"model": "nope", "query": "q", "documents": ["d"]}),
                       ("/tokenize", {"model": "nope", "content": "x"}),
                       ("/api/chat", {"model": "nope", "messages": CHAT})]:
        st, _, r = s.post(path, body)
        assert st == 404, (path, st, r)
    # Anthropic's /v1/messages serves any other name with the default model (Claude Code).
    st, _, r = s.post("/v1/messages", {"model": "claude-x", "max_tokens": 2, "messages": CHAT})
    assert st == 200 and r["model"] == "claude-x", (st, r)
    # Ollama's names: alias or alias:latest.
    st, _, r = s.post("/api/chat", {"model": "chat:latest", "messages": CHAT, "stream": False,
                                    "options": {"num_predict": 2}})
    assert st == 200 and r["done"], (st, r)


def test_three_kinds_and_eviction(s):
    """Chat, embeddings and rerank by name; --models-max 2 unloads the least recently used idle one."""
    out = chat(s, "chat")
    assert out.model == "chat" and out.choices[0].message.content, out
    e = s.client().embeddings.create(model="embed", input=["a panda", "a bear"])
    assert e.model == "embed" and len(e.data) == 2 and len(e.data[0].embedding) > 8, e
    # An encoder cannot chat: 501, and the model stays loaded.
    st, _, r = s.post("/v1/chat/completions", {"model": "embed", "messages": CHAT})
    assert st == 501 and r["error"]["code"] == "not_supported", (st, r)
    st, _, r = s.post("/v1/rerank", {"model": "rank", "query": "What is a panda?",
                                     "documents": ["hi", "The giant panda is a bear."]})
    assert st == 200 and r["model"] == "rank" and len(r["results"]) == 2, (st, r)
    ms = models(s)
    # chat was used before embed: chat went when rank came.
    assert [ms[n]["status"]["value"] for n in ["chat", "embed", "rank"]] == ["unloaded", "loaded", "loaded"], ms
    assert ms["embed"]["kind"] == "embed" and ms["rank"]["kind"] == "rerank" and ms["chat"]["kind"] == "generate"
    # chat again: embed is now the least recently used.
    chat(s, "chat")
    ms = models(s)
    assert [ms[n]["status"]["value"] for n in ["chat", "embed", "rank"]] == ["loaded", "unloaded", "loaded"], ms
    # Per-model metrics carry the model's name.
    m = s.metrics()
    assert m['zerfoo:rerank_requests_total{model="rank"}'] == 1, m
    assert m['zerfoo:embedding_requests_total{model="embed"}'] == 1, m
    assert m['zerfoo:requests_total{model="chat",outcome="ok"}'] >= 3, m
    assert 'vllm:num_requests_running{model="gemma"}' in m


def test_concurrent_first_requests_load_once(s):
    assert status(s, "gemma") == "unloaded"
    before = s.logtext().count("loading model 'gemma'")
    results = [None] * 4

    def one(i):
        try:
            results[i] = chat(s, "gemma", n=2).model
        except Exception as e:  # noqa: BLE001
            results[i] = repr(e)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    seen_loading = False
    while any(t.is_alive() for t in threads):
        seen_loading = seen_loading or status(s, "gemma") == "loading"
        time.sleep(0.01)
    assert results == ["gemma"] * 4, results
    assert s.logtext().count("loading model 'gemma'") == before + 1, s.logtext()[-2000:]
    assert status(s, "gemma") == "loaded" and models(s)["gemma"]["kind"] == "generate"
    print("    (saw status loading: %s)" % seen_loading)


def test_failed_load(s):
    for attempt in range(2):  # each request tries again
        st, _, r = s.post("/v1/chat/completions", {"model": "broken", "messages": CHAT, "max_tokens": 2})
        assert st == 500 and r["error"]["code"] == "model_load_failed", (st, r)
        assert r["error"]["message"].startswith("model 'broken' failed to load: "), r
        assert len(r["error"]["message"]) > len("model 'broken' failed to load: ") + 5, r
    assert s.logtext().count("loading model 'broken'") == 2
    b = models(s)["broken"]
    assert b["status"]["value"] == "unloaded" and b["status"]["failed"] is True and b["status"]["error"], b
    # The others still serve.
    assert chat(s, "chat").model == "chat"
    st, _, r = s.request("GET", "/health")
    assert st == 200


def test_load_unload_routes(s):
    st, _, r = s.post("/models/load", {"model": "embed"})
    assert st == 200 and r == {"success": True}, (st, r)
    assert status(s, "embed") == "loaded"
    st, _, r = s.post("/models/unload", {"model": "embed"})
    assert st == 200 and r == {"success": True}, (st, r)
    assert status(s, "embed") == "unloaded"
    st, _, r = s.post("/models/unload", {"model": "embed"})
    assert st == 400 and r["error"]["code"] == "model_not_loaded", (st, r)
    for path in ["/models/load", "/models/unload"]:
        st, _, r = s.post(path, {"model": "nope"})
        assert st == 404 and r["error"]["code"] == "model_not_found", (path, st, r)
        st, _, r = s.post(path, {"name": "embed"})
        assert st == 400 and "'model'" in r["error"]["message"], (path, st, r)
    st, _, r = s.post("/models/load", {"model": "broken"})
    assert st == 500 and r["error"]["code"] == "model_load_failed", (st, r)


def test_unload_waits_for_running_request(s):
    chat(s, "chat", n=1)  # loaded
    n = 160  # long enough to still run when the unload comes (ignore_eos: every token)
    c = s.conn(120)
    c.request("POST", "/v1/completions", body=json.dumps(
        {"model": "chat", "prompt": "Once upon a time", "max_tokens": n, "temperature": 0, "ignore_eos": True,
         "stream": True, "stream_options": {"include_usage": True}}), headers={"Content-Type": "application/json"})
    resp = c.getresponse()
    assert resp.status == 200
    events = sse_events(resp)
    assert "text_completion" in next(events)
    done = {}

    def unload():
        done["status"] = s.post("/models/unload", {"model": "chat"})[0]
        done["t"] = time.time()

    t = threading.Thread(target=unload)
    t.start()
    time.sleep(0.2)
    if s.metrics()['vllm:num_requests_running{model="chat"}'] == 1:
        assert t.is_alive(), "the unload did not wait for the running request"
        assert status(s, "chat") == "loaded"
    rest = list(events)
    t_end = time.time()
    c.close()
    t.join(30)
    assert rest[-1] == "[DONE]" and json.loads(rest[-2])["usage"]["completion_tokens"] == n, rest[-3:]
    assert done["status"] == 200 and done["t"] >= t_end - 0.5, (done, t_end)
    assert status(s, "chat") == "unloaded"
    # The next request loads it again.
    assert chat(s, "chat").model == "chat" and status(s, "chat") == "loaded"


def test_keep_alive_zero(s):
    st, _, r = s.post("/api/embed", {"model": "embed", "input": "x", "keep_alive": 0})
    assert st == 200 and len(r["embeddings"]) == 1, (st, r)
    wait_status(s, "embed", "unloaded", timeout=5)
    st, _, r = s.post("/api/embed", {"model": "embed", "input": "x", "keep_alive": "5m"})
    assert st == 200
    st, _, body = s.request("GET", "/api/ps")
    names = [m["name"] for m in json.loads(body)["models"]]
    assert "embed:latest" in names and "broken:latest" not in names, names
    st, _, body = s.request("GET", "/api/tags")
    assert len(json.loads(body)["models"]) == 5, body
    st, _, r = s.post("/api/embed", {"model": "embed", "input": "x", "keep_alive": "soon"})
    assert st == 400 and "keep_alive" in r["error"], (st, r)


# ---- a server of --models-dir and --models-preset, nothing loaded at start -------------------


def test_models_dir_and_preset():
    d = os.path.join(TMP, "dir")
    os.makedirs(os.path.join(d, "sub"), exist_ok=True)
    os.makedirs(os.path.join(d, "empty"), exist_ok=True)
    os.symlink(MODEL, os.path.join(d, "small.gguf"))
    os.symlink(MODEL, os.path.join(d, "split-00001-of-00002.gguf"))
    os.symlink(MODEL, os.path.join(d, "split-00002-of-00002.gguf"))
    for part in split_parts():  # a real split model in a subfolder: served as "sub"
        os.symlink(part, os.path.join(d, "sub", os.path.basename(part)))
    # A projector file is no model (mmproj-NAME.gguf beside NAME.gguf would be NAME's projector:
    # test_vision.py; this one belongs to no model here).
    os.symlink(MODEL, os.path.join(d, "mmproj-unpaired.gguf"))
    with open(os.path.join(d, "notes.txt"), "w") as f:
        f.write("not a model")
    preset = os.path.join(TMP, "models.ini")
    with open(preset, "w") as f:
        f.write("# a comment\n[tiny]\npath = %s  # the file\nctx-size = 256\nparallel = 1\nn-predict = 3 ; tokens\n"
                "[mean]\npath = %s\npooling = mean\n[last]\npath = %s\npooling = last\n" % (MODEL, MODEL, MODEL))
    port_server = Server.__new__(Server)  # started by hand: no -m
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    log = open(os.path.join(TMP, "dir.log"), "w+")
    proc = subprocess.Popen([CLI, "serve", "--models-dir", d, "--models-preset", preset, "--port", str(port),
                             "-t", "1", "--ctx-size", "512", "-np", "1", "--sleep-idle-seconds", "1"],
                            stdout=log, stderr=subprocess.STDOUT)
    port_server.proc, port_server.port, port_server.log = proc, port, log
    port_server.base = "http://127.0.0.1:%d" % port
    s = port_server
    try:
        deadline = time.time() + 30
        while True:
            assert proc.poll() is None, s.logtext()
            try:
                if s.request("GET", "/health")[0] == 200:
                    break
            except OSError:
                pass
            assert time.time() < deadline
            time.sleep(0.05)
        ms = models(s)
        assert list(ms) == ["tiny", "mean", "last", "small", "split", "sub"], list(ms)
        assert all(m["status"]["value"] == "unloaded" for m in ms.values()), ms
        assert ms["split"]["path"].endswith("split-00001-of-00002.gguf"), ms["split"]
        # No model named: the first one (the preset's), with its own options.
        st, _, r = s.post("/v1/chat/completions", {"messages": CHAT})
        assert st == 200 and r["model"] == "tiny" and r["usage"]["completion_tokens"] <= 3, (st, r)
        assert models(s)["tiny"]["meta"]["n_ctx"] == 256
        assert chat(s, "small").model == "small" and models(s)["small"]["meta"]["n_ctx"] == 512
        # The split model answers as the whole file does (greedy).
        assert chat(s, "sub", n=8).choices[0].message.content == chat(s, "small", n=8).choices[0].message.content
        # pooling = mean / last: a generative model pools its last token by default.
        def vector(model):
            return s.client().embeddings.create(model=model, input="Pooling picks the states.").data[0].embedding
        small, mean, last = vector("small"), vector("mean"), vector("last")
        assert last == small and mean != small and len(mean) == len(small), (mean[:3], small[:3])
        # --sleep-idle-seconds 1: both go once idle.
        for name in ("small", "tiny", "sub", "mean", "last"):
            wait_status(s, name, "unloaded", timeout=6)
        assert "unloaded model 'small' (--sleep-idle-seconds)" in s.logtext()
    finally:
        assert s.stop() == 0, s.logtext()[-2000:]
    # A bad preset line is a usage error naming the file and the line.
    with open(preset, "w") as f:
        f.write("[x]\npath = %s\nbogus = 1\n" % MODEL)
    out = subprocess.run([CLI, "serve", "--models-preset", preset, "--port", "0"], capture_output=True, text=True,
                         timeout=30)
    assert out.returncode == 2 and re.search(r"models\.ini:3: unknown key 'bogus'", out.stderr), out.stderr
    with open(preset, "w") as f:
        f.write("[x]\npath = %s\npooling = max\n" % MODEL)
    out = subprocess.run([CLI, "serve", "--models-preset", preset, "--port", "0"], capture_output=True, text=True,
                         timeout=30)
    assert out.returncode == 2 and "models.ini:3: pooling: 'max' is not one of mean, cls, last, rank" in out.stderr, \
        out.stderr
    out = subprocess.run([CLI, "serve", "-m", MODEL, "--pooling", "none", "--port", "0"], capture_output=True,
                         text=True, timeout=30)
    assert out.returncode == 2 and "--pooling none (one vector per token) is not supported" in out.stderr, out.stderr


def main():
    try:
        run_suite("router", start_main,
                  [test_listing_and_names, test_three_kinds_and_eviction, test_concurrent_first_requests_load_once,
                   test_failed_load, test_load_unload_routes, test_unload_waits_for_running_request,
                   test_keep_alive_zero],
                  [test_models_dir_and_preset])
    finally:
        shutil.rmtree(TMP, ignore_errors=True)


if __name__ == "__main__":
    main()
