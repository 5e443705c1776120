#!/usr/bin/env python3
"""End-to-end tests of `zerfoo serve` on loopback with SmolLM2.

Clients nobody here wrote (the `openai` package, curl) plus raw http.client for the framing and
the failure paths. Greedy outputs are compared with `zerfoo generate` run on the same prompt text
(chat prompts rendered by the server's /apply-template, which is the zf_chat_apply_template the
`zerfoo chat` command uses). Every wait is bounded.

Environment: ZERFOO_CLI (the zerfoo binary), ZERFOO_TEST_MODEL (SmolLM2 GGUF).
"""
import base64
import http.client
import json
import math
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import traceback

import jsonschema
import openai

import procs  # tests/serve/procs.py (the script's folder is on sys.path)
from structured_schemas import SCHEMAS

CLI = os.environ["ZERFOO_CLI"]
MODEL = os.environ["ZERFOO_TEST_MODEL"]
CTX = 2048
N_TOK = 24  # tokens per greedy comparison: long enough to diverge, short for a 2-core CI
THREADS = os.environ.get("ZERFOO_SERVE_THREADS", "1")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, *extra, model=MODEL):
        self.port = free_port()
        self.log = open(f"/tmp/zerfoo-serve-test-{self.port}.log", "w+")
        self.proc = subprocess.Popen(
            [CLI, "serve", "-m", model, "--port", str(self.port), "--ctx-size", str(CTX), "-t", THREADS,
             *extra],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while True:
            assert self.proc.poll() is None, "server exited during startup: " + self.logtext()
            try:
                status, _, _ = self.request("GET", "/health")
                if status == 200:
                    break
                assert status == 503, status  # still loading
            except OSError:
                pass
            assert time.time() < deadline, "server not healthy within 60 s"
            time.sleep(0.05)
        self.base = f"http://127.0.0.1:{self.port}"

    def logtext(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def conn(self, timeout=60):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, timeout=60):
        c = self.conn(timeout)
        try:
            if isinstance(body, (dict, list)):
                body = json.dumps(body)
            h = {"Content-Type": "application/json"}
            h.update(headers or {})
            c.request(method, path, body=body, headers=h)
            r = c.getresponse()
            return r.status, dict(r.getheaders()), r.read()
        finally:
            c.close()

    def post(self, path, body, headers=None):
        status, hdrs, data = self.request("POST", path, body, headers)
        return status, hdrs, json.loads(data) if data else None

    def metrics(self):
        status, _, data = self.request("GET", "/metrics")
        assert status == 200
        out = {}
        for line in data.decode().splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                out[name] = float(value)
        return out

    def stop(self, sig=signal.SIGTERM, timeout=30):
        return procs.stop(self.proc, "server", sig, timeout)

    def client(self, **kw):
        return openai.OpenAI(base_url=self.base + "/v1", api_key=kw.pop("api_key", "none"), max_retries=0,
                             timeout=120, **kw)


def cli_generate(prompt, n=N_TOK):
    out = subprocess.run([CLI, "generate", "-m", MODEL, "-p", prompt, "--temp", "0", "-n", str(n), "--ctx",
                          str(CTX), "-t", THREADS, "--json"], capture_output=True, timeout=120, check=True)
    return json.loads(out.stdout)


def sse_events(resp, limit=10000):
    """Yields the `data:` payloads of an http.client response; checks the framing."""
    buf = b""
    for _ in range(limit):
        chunk = resp.read1(65536) if hasattr(resp, "read1") else resp.read(1)
        if not chunk:
            break
        buf += chunk
        while b"\n\n" in buf:
            event, buf = buf.split(b"\n\n", 1)
            assert event.startswith(b"data: "), event
            yield event[len(b"data: "):].decode()
    assert buf == b"", "trailing bytes after the last event: %r" % buf


PROMPTS = ["The capital of France is", "Once upon a time, in a small village,",
           "def fibonacci(n):", "The three primary colors are"]
CHAT = [{"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Name three fruits."}]

# ---- tests (each gets the shared server) ---------------------------------------------------


def test_models_health_metrics(s):
    status, _, data = s.request("GET", "/health")
    assert status == 200 and json.loads(data)["status"] == "ok"
    models = s.client().models.list()
    ids = [m.id for m in models.data]
    assert ids == ["smollm2"], ids
    m = s.metrics()
    for name in ["vllm:num_requests_waiting", "vllm:num_requests_running", "vllm:kv_cache_usage_perc",
                 "vllm:gpu_cache_usage_perc", "zerfoo:generation_tokens_total",
                 "zerfoo:time_to_first_token_seconds_count", "zerfoo:inter_token_latency_seconds_count"]:
        assert name in m, name


def test_tokenize_round_trip(s):
    text = "Hello, world! Ünïcödé 日本語 <|im_start|>"
    st, _, tok = s.post("/tokenize", {"content": text})
    assert st == 200 and len(tok["tokens"]) > 5, tok
    cli = subprocess.run([CLI, "tokenize", "-m", MODEL, "--parse-special", "--no-special", text],
                         capture_output=True, timeout=60, check=True)
    cli_tokens = [int(x) for x in cli.stdout.split()]
    assert tok["tokens"] == cli_tokens, (tok["tokens"], cli_tokens)
    st, _, de = s.post("/detokenize", {"tokens": tok["tokens"]})
    assert st == 200
    # Control tokens are not rendered by /detokenize (llama-server's default too).
    assert de["content"] == text.replace("<|im_start|>", ""), de


def test_completions_equal_cli(s):
    c = s.client()
    for p in PROMPTS[:2]:
        ref = cli_generate(p)
        r = c.completions.create(model="smollm2", prompt=p, max_tokens=N_TOK, temperature=0)
        assert r.choices[0].text == ref["text"], (r.choices[0].text, ref["text"])
        assert r.usage.prompt_tokens == ref["prompt_tokens"], (r.usage, ref)
        assert r.usage.completion_tokens == ref["generated_tokens"], (r.usage, ref)
        assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens
        assert r.choices[0].finish_reason == ("length" if ref["stop_reason"] == "max_tokens" else "stop")
        # Streaming gives the same text, chunk by chunk, and usage on request.
        text, usage, finish = "", None, None
        for ch in c.completions.create(model="smollm2", prompt=p, max_tokens=N_TOK, temperature=0, stream=True,
                                       stream_options={"include_usage": True}):
            if ch.usage is not None:
                usage = ch.usage
            for choice in ch.choices:
                text += choice.text
                finish = choice.finish_reason or finish
        assert text == ref["text"], (text, ref["text"])
        assert usage is not None and usage.completion_tokens == ref["generated_tokens"], usage
        assert finish in ("length", "stop")


def test_chat_equal_cli(s):
    c = s.client()
    st, _, rendered = s.post("/apply-template", {"messages": CHAT})
    assert st == 200 and "<|im_start|>user" in rendered["prompt"], rendered
    ref = cli_generate(rendered["prompt"])
    r = c.chat.completions.create(model="smollm2", messages=CHAT, max_tokens=N_TOK, temperature=0)
    assert r.choices[0].message.role == "assistant"
    assert r.choices[0].message.content == ref["text"], (r.choices[0].message.content, ref["text"])
    assert r.usage.prompt_tokens == ref["prompt_tokens"] and r.usage.completion_tokens == ref["generated_tokens"]
    text, roles = "", []
    for ch in c.chat.completions.create(model="smollm2", messages=CHAT, max_tokens=N_TOK, temperature=0,
                                        stream=True):
        for choice in ch.choices:
            if choice.delta.role:
                roles.append(choice.delta.role)
            text += choice.delta.content or ""
    assert roles == ["assistant"] and text == ref["text"], (roles, text, ref["text"])
    # max_completion_tokens, a stop string, top_k/top_p/min_p/seed accepted; sampling with a seed
    # is reproducible.
    r1 = c.chat.completions.create(model="smollm2", messages=CHAT, max_completion_tokens=8, temperature=0.9,
                                   top_p=0.9, seed=7, extra_body={"top_k": 20, "min_p": 0.05})
    r2 = c.chat.completions.create(model="smollm2", messages=CHAT, max_completion_tokens=8, temperature=0.9,
                                   top_p=0.9, seed=7, extra_body={"top_k": 20, "min_p": 0.05})
    assert r1.choices[0].message.content == r2.choices[0].message.content
    assert r1.usage.completion_tokens <= 8
    words = ref["text"].split()
    if len(words) >= 3:
        stop = words[2]
        r = c.chat.completions.create(model="smollm2", messages=CHAT, max_tokens=N_TOK, temperature=0, stop=[stop])
        assert stop not in r.choices[0].message.content and r.choices[0].finish_reason == "stop", r


def test_logprobs(s):
    """Chat `logprobs`/`top_logprobs` and the legacy completions `logprobs`, plain and streamed."""
    c = s.client()
    r = c.chat.completions.create(model="smollm2", messages=CHAT, max_tokens=N_TOK, temperature=0, logprobs=True,
                                  top_logprobs=3)
    content = r.choices[0].logprobs.content
    assert len(content) == r.usage.completion_tokens, (len(content), r.usage)
    for e in content:
        assert len(e.top_logprobs) == 3 and e.logprob <= 0, e
        assert e.top_logprobs[0].token == e.token and e.top_logprobs[0].logprob == e.logprob, e  # greedy: the top
        assert all(a.logprob >= b.logprob for a, b in zip(e.top_logprobs, e.top_logprobs[1:])), e
        assert sum(2.718281828459045 ** a.logprob for a in e.top_logprobs) <= 1 + 1e-5, e
    assert b"".join(bytes(e.bytes) for e in content).decode() == r.choices[0].message.content
    streamed = []
    for ch in c.chat.completions.create(model="smollm2", messages=CHAT, max_tokens=N_TOK, temperature=0,
                                        logprobs=True, top_logprobs=3, stream=True):
        for choice in ch.choices:
            if choice.logprobs is not None:
                streamed += choice.logprobs.content
    assert [e.token for e in streamed] == [e.token for e in content]
    assert all(abs(a.logprob - b.logprob) < 1e-3 for a, b in zip(streamed, content))
    plain = c.chat.completions.create(model="smollm2", messages=CHAT, max_tokens=4, temperature=0)
    assert plain.choices[0].logprobs is None
    # Legacy completions: logprobs = n alternatives (0: the chosen token's only).
    for n in (0, 2):
        r = c.completions.create(model="smollm2", prompt=PROMPTS[0], max_tokens=8, temperature=0, logprobs=n)
        lp = r.choices[0].logprobs
        assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == len(lp.text_offset)
        assert len(lp.tokens) == r.usage.completion_tokens
        assert "".join(lp.tokens) == r.choices[0].text
        assert lp.text_offset[0] == 0 and all(o >= 0 for o in lp.text_offset)
        for tok, v, top in zip(lp.tokens, lp.token_logprobs, lp.top_logprobs):
            assert v <= 0 and len(top) <= n
            if n:
                assert abs(max(top.values()) - v) < 1e-6 and top.get(tok) == v, (tok, v, top)
    toks, offsets = [], []
    for ch in c.completions.create(model="smollm2", prompt=PROMPTS[0], max_tokens=8, temperature=0, logprobs=2,
                                   stream=True):
        for choice in ch.choices:
            if choice.logprobs is not None:
                toks += choice.logprobs.tokens
                offsets += choice.logprobs.text_offset
    assert toks == lp.tokens and offsets == lp.text_offset, (toks, lp.tokens, offsets, lp.text_offset)
    # Errors: top_logprobs beyond 20, top_logprobs without logprobs, completions logprobs beyond 20.
    for body in ({"messages": CHAT, "logprobs": True, "top_logprobs": 21},
                 {"messages": CHAT, "top_logprobs": 2}):
        st, _, err = s.post("/v1/chat/completions", body)
        assert st == 400 and "top_logprobs" in err["error"]["message"], (st, err)
    st, _, err = s.post("/v1/completions", {"prompt": "x", "logprobs": 21})
    assert st == 400 and "logprobs" in err["error"]["message"], (st, err)


def test_sse_framing_curl(s):
    body = json.dumps({"model": "smollm2", "prompt": PROMPTS[0], "max_tokens": 8, "temperature": 0,
                       "stream": True, "stream_options": {"include_usage": True}})
    out = subprocess.run(["curl", "-sS", "-N", "--max-time", "60", "-H", "Content-Type: application/json",
                          "-d", body, s.base + "/v1/completions"], capture_output=True, timeout=90, check=True)
    raw = out.stdout.decode()
    assert raw.endswith("data: [DONE]\n\n"), raw[-200:]
    events = raw.split("\n\n")[:-1]
    assert all(e.startswith("data: ") for e in events), events
    payloads = [json.loads(e[6:]) for e in events[:-1]]
    assert all(p["object"] == "text_completion" for p in payloads)
    assert payloads[-1]["choices"] == [] and payloads[-1]["usage"]["completion_tokens"] == 8, payloads[-1]
    assert payloads[-2]["choices"][0]["finish_reason"] == "length"
    text = "".join(p["choices"][0]["text"] for p in payloads[:-1])
    assert text == cli_generate(PROMPTS[0], 8)["text"]


def test_concurrent_16(s):
    # Reference: each prompt alone (completions, greedy).
    c = s.client()
    alone = {p: c.completions.create(model="smollm2", prompt=p, max_tokens=N_TOK, temperature=0).choices[0].text
             for p in PROMPTS}
    for p, text in alone.items():
        assert text and text == cli_generate(p)["text"], (p, text)
    results, errors = {}, []

    def worker(i):
        try:
            p = PROMPTS[i % len(PROMPTS)]
            if i % 2:
                text = "".join(ch.choices[0].text for ch in c.completions.create(
                    model="smollm2", prompt=p, max_tokens=N_TOK, temperature=0, stream=True) if ch.choices)
            else:
                text = c.completions.create(model="smollm2", prompt=p, max_tokens=N_TOK,
                                            temperature=0).choices[0].text
            results[i] = (p, text)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append((i, repr(e)))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
    t0 = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not any(t.is_alive() for t in threads), "clients still running after 300 s"
    assert not errors, errors
    for i, (p, text) in results.items():
        assert text == alone[p], (i, p, text, alone[p])
    print("    16 clients: %.1f s" % (time.time() - t0))


def test_invalid_mixed_with_valid(s):
    bad = [
        (b'{"model": "smollm2", "prompt": ', 400, "invalid_json"),
        ({"model": "smollm2", "prompt": "hi", "temperature": "hot"}, 400, "invalid_type"),
        ({"model": "smollm2", "prompt": "hi", "max_tokens": "5"}, 400, "invalid_type"),
        ({"model": "gpt-4", "prompt": "hi"}, 404, "model_not_found"),
        ({"model": "smollm2", "prompt": "hi", "max_tokens": 0}, 400, "invalid_value"),
        ({"model": "smollm2", "prompt": "hi", "max_tokens": -3}, 400, "invalid_value"),
        ({"model": "smollm2", "prompt": "word " * (CTX + 10)}, 400, "context_length_exceeded"),
        (b'{"model": "smollm2", "prompt": "caf\xc3\x28 bad utf8"}', 400, "invalid_json"),
        ({"model": "smollm2"}, 400, "missing_field"),
        ({"model": "smollm2", "prompt": "hi", "stop": 5}, 400, "invalid_type"),
        ([1, 2, 3], 400, "invalid_json"),
    ]
    c = s.client()
    ref = c.completions.create(model="smollm2", prompt=PROMPTS[3], max_tokens=8, temperature=0).choices[0].text
    errors = []

    def valid():
        try:
            t = c.completions.create(model="smollm2", prompt=PROMPTS[3], max_tokens=8, temperature=0).choices[0].text
            if t != ref:
                errors.append(("mismatch", t, ref))
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    threads = []
    for body, status, code in bad:
        th = threading.Thread(target=valid)
        th.start()
        threads.append(th)
        st, _, err = s.post("/v1/completions", body)
        assert st == status, (body if isinstance(body, bytes) else str(body)[:80], st, err)
        assert set(err["error"]) >= {"message", "type", "code"} and err["error"]["code"] == code, err
    # A chat message of the wrong shape; invalid UTF-8 in a chat message.
    st, _, err = s.post("/v1/chat/completions", {"model": "smollm2", "messages": [{"role": "user", "content": 3}]})
    assert st == 400 and err["error"]["type"] == "invalid_request_error", err
    st, _, err = s.post("/v1/chat/completions", b'{"messages": [{"role": "user", "content": "\xff"}]}')
    assert st == 400, err
    # The openai client raises its typed errors.
    try:
        c.completions.create(model="smollm2", prompt="hi", max_tokens=0)
        raise AssertionError("max_tokens=0 accepted")
    except openai.BadRequestError as e:
        assert e.status_code == 400
    try:
        c.chat.completions.create(model="nope", messages=CHAT)
        raise AssertionError("unknown model accepted")
    except openai.NotFoundError:
        pass
    for th in threads:
        th.join(120)
    assert not errors, errors
    # Unknown endpoint: JSON error too.
    st, _, data = s.request("GET", "/v1/nothing")
    assert st == 404 and json.loads(data)["error"]["code"] == "not_found"


def test_disconnect_cancels(s):
    before = s.metrics()
    c = s.conn(60)
    c.request("POST", "/v1/completions", body=json.dumps(
        {"model": "smollm2", "prompt": PROMPTS[1], "max_tokens": 3000, "temperature": 0, "stream": True,
         "ignore_eos": True}), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    assert r.status == 200
    n = 0
    for _ in sse_events_partial(r, 3):
        n += 1
    assert n == 3
    during = s.metrics()
    assert during["vllm:num_requests_running"] == 1 and during["vllm:kv_cache_usage_perc"] > 0, during
    c.sock.shutdown(socket.SHUT_RDWR)
    c.close()
    t0 = time.time()
    while True:
        m = s.metrics()
        if m["vllm:num_requests_running"] == 0:
            break
        assert time.time() - t0 < 5, "generation still running 5 s after the client left"
        time.sleep(0.02)
    assert m["vllm:kv_cache_usage_perc"] == 0, m  # no running request holds KV positions
    gen = m["zerfoo:generation_tokens_total"] - before["zerfoo:generation_tokens_total"]
    assert gen < 200, "the cancelled stream generated %d tokens" % gen
    assert m['zerfoo:requests_total{outcome="disconnected"}'] == before['zerfoo:requests_total{outcome="disconnected"}'] + 1
    print("    slot free %.0f ms after disconnect, %d tokens generated" % ((time.time() - t0) * 1000, gen))
    # The slot serves the next request normally.
    text = s.client().completions.create(model="smollm2", prompt=PROMPTS[0], max_tokens=N_TOK,
                                         temperature=0).choices[0].text
    assert text == cli_generate(PROMPTS[0])["text"]


def sse_events_partial(resp, count):
    buf = b""
    got = 0
    deadline = time.time() + 60
    while got < count and time.time() < deadline:
        chunk = resp.read1(4096)
        if not chunk:
            return
        buf += chunk
        while b"\n\n" in buf and got < count:
            event, buf = buf.split(b"\n\n", 1)
            assert event.startswith(b"data: ")
            got += 1
            yield event


def test_prompt_cache_multi_turn(s):
    # A second turn that extends the first conversation (with the reply the server gave) reuses
    # the slot's cache: the cached-token counter grows.
    c = s.client()
    before = s.metrics()["zerfoo:prompt_tokens_cached_total"]
    msgs = [{"role": "user", "content": "Say hello."}]
    cache = {"cache_prompt": True}
    r = c.chat.completions.create(model="smollm2", messages=msgs, max_tokens=N_TOK, temperature=0, extra_body=cache)
    msgs += [{"role": "assistant", "content": r.choices[0].message.content},
             {"role": "user", "content": "Again, please."}]
    r2 = c.chat.completions.create(model="smollm2", messages=msgs, max_tokens=N_TOK, temperature=0,
                                   extra_body=cache)
    after = s.metrics()["zerfoo:prompt_tokens_cached_total"]
    print("    second turn reused %d cached prompt tokens" % (after - before))
    assert after > before, "no prompt tokens reused"
    st, _, rendered = s.post("/apply-template", {"messages": msgs})
    ref = cli_generate(rendered["prompt"])
    assert r2.usage.prompt_tokens == ref["prompt_tokens"], (r2.usage, ref)
    assert r2.choices[0].message.content, r2
    # Reuse is exact (prefill computes every row as a one-token step would): the cached turn is
    # the CLI's full-prefill answer, and so is the same turn with the cache off.
    assert r2.choices[0].message.content == ref["text"], (r2.choices[0].message.content, ref["text"])
    # Both turns count: the first may take rows from an earlier test's prompt (the prefix cache
    # shares to the token, a prompt's partial last block included).
    cached = r.usage.prompt_tokens_details.cached_tokens + r2.usage.prompt_tokens_details.cached_tokens
    assert cached == after - before, (r.usage, r2.usage, after - before)
    # cache_prompt false: the slot's session starts empty; the model's prefix cache (shared by
    # every session) still supplies whole blocks, and usage says how many.
    r3 = c.chat.completions.create(model="smollm2", messages=msgs, max_tokens=N_TOK, temperature=0,
                                   extra_body={"cache_prompt": False})
    assert s.metrics()["zerfoo:prompt_tokens_cached_total"] - after == r3.usage.prompt_tokens_details.cached_tokens
    assert r3.choices[0].message.content == ref["text"], (r3.choices[0].message.content, ref["text"])
    # A partial match: same long prefix, another ending. The slot that ran the first request is
    # chosen and keeps the shared prefix (zf_session_truncate drops the rest).
    prefix = "Here is a list of facts about the solar system, one per line, numbered. " * 4
    st, _, tok = s.post("/tokenize", {"content": prefix, "add_special": True})
    c.completions.create(model="smollm2", prompt=prefix + "First, the Sun", max_tokens=4, temperature=0,
                         extra_body=cache)
    before = s.metrics()["zerfoo:prompt_tokens_cached_total"]
    r = c.completions.create(model="smollm2", prompt=prefix + "Second, the Moon", max_tokens=4, temperature=0,
                             extra_body=cache)
    reused = s.metrics()["zerfoo:prompt_tokens_cached_total"] - before
    print("    partial prefix: %d of %d prompt tokens reused" % (reused, r.usage.prompt_tokens))
    assert len(tok["tokens"]) - 2 <= reused < r.usage.prompt_tokens, (reused, len(tok["tokens"]))
    # The model's prefix cache holds the blocks of those prompts once, for every slot.
    m = s.metrics()
    assert m["zerfoo:prefix_cache_blocks"] >= 1 and m["zerfoo:prefix_cache_bytes"] > 0, m
    assert m["zerfoo:prefix_cache_bytes"] <= m["zerfoo:prefix_cache_capacity_bytes"], m
    # The slots' sessions read the blocks of their kept conversations in place (Linux: mapped).
    if sys.platform.startswith("linux"):
        assert m["zerfoo:prefix_cache_mapped_blocks"] >= 1, m


# ---- tests with their own server -----------------------------------------------------------


def test_queue_full_auth_and_drain():
    s = Server("--parallel", "1", "--queue", "1", "--api-key", "sekret", "--grace", "20", "--alias", "tiny")
    try:
        auth = {"Authorization": "Bearer sekret", "Content-Type": "application/json"}
        # Without the key: 401, OpenAI error shape; the openai client raises AuthenticationError.
        st, _, err = s.post("/v1/completions", {"prompt": "hi", "max_tokens": 2})
        assert st == 401 and err["error"]["code"] == "invalid_api_key", err
        try:
            s.client(api_key="wrong").models.list()
            raise AssertionError("wrong key accepted")
        except openai.AuthenticationError:
            pass
        assert [m.id for m in s.client(api_key="sekret").models.list().data] == ["tiny"]
        # Slot busy with a long stream, one request queued, the next is refused.
        c1 = s.conn(60)
        c1.request("POST", "/v1/completions", body=json.dumps(
            {"model": "tiny", "prompt": PROMPTS[1], "max_tokens": 3000, "stream": True, "ignore_eos": True,
             "temperature": 0}), headers=auth)
        r1 = c1.getresponse()
        assert r1.status == 200
        list(sse_events_partial(r1, 1))
        queued = {}

        def waiter():
            queued["resp"] = s.post("/v1/completions", {"model": "tiny", "prompt": PROMPTS[0], "max_tokens": 4,
                                                        "temperature": 0}, auth)

        tq = threading.Thread(target=waiter)
        tq.start()
        t0 = time.time()
        while s.metrics()["vllm:num_requests_waiting"] < 1:
            assert time.time() - t0 < 10, "request not queued"
            time.sleep(0.02)
        st, hdrs, err = s.post("/v1/completions", {"model": "tiny", "prompt": "x", "max_tokens": 2}, auth)
        assert st == 503 and "Retry-After" in hdrs and err["error"]["code"] == "server_busy", (st, hdrs, err)
        # Embeddings and rerank take a slot as completions do: refused while the slot and the
        # queue are full; the key applies first.
        st, _, err = s.post("/v1/embeddings", {"input": "hi"})
        assert st == 401 and err["error"]["code"] == "invalid_api_key", err
        st, hdrs, err = s.post("/v1/embeddings", {"input": "hi"}, auth)
        assert st == 503 and "Retry-After" in hdrs and err["error"]["code"] == "server_busy", (st, hdrs, err)
        # Disconnecting the stream lets the queued request through; then embeddings are answered.
        c1.sock.shutdown(socket.SHUT_RDWR)
        c1.close()
        tq.join(60)
        assert not tq.is_alive()
        st, _, body = queued["resp"]
        assert st == 200 and body["usage"]["completion_tokens"] >= 1, body
        st, _, e = s.post("/v1/embeddings", {"input": "hi"}, auth)
        assert st == 200 and len(e["data"]) == 1, (st, e)
        assert s.client(api_key="sekret").embeddings.create(model="tiny", input=["a", "b"]).usage.prompt_tokens >= 2

        # Drain: a stream in flight when SIGTERM arrives finishes with [DONE]; then exit 0.
        c2 = s.conn(60)
        c2.request("POST", "/v1/completions", body=json.dumps(
            {"model": "tiny", "prompt": PROMPTS[2], "max_tokens": 40, "stream": True, "ignore_eos": True,
             "temperature": 0}), headers=auth)
        r2 = c2.getresponse()
        events = list(sse_events_partial(r2, 1))
        s.proc.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        # New connections are refused or answered 503 while draining.
        try:
            st, _, _ = s.request("GET", "/health", timeout=5)
            assert st == 503, st
        except OSError:
            pass
        rest = [e for e in sse_events(r2)]
        assert rest[-1] == "[DONE]", rest[-3:]
        n = sum(1 for e in events + rest if e != b"[DONE]" and e != "[DONE]")
        assert n >= 40 - 1, n  # all 40 tokens (+ final chunk) arrived
        c2.close()
        rc = s.proc.wait(30)
        assert rc == 0, (rc, s.logtext())
    finally:
        s.stop()


def test_lookup_speculation():
    # --lookup drafts from the prompt: a copying answer is the CLI's (non-speculative) answer
    # token for token, drafts are counted in /metrics, a request's "speculative.n_max": 0 opts out
    # and an out-of-range one is a 400. Two slots: they share decode steps, and a request alone
    # drafts, verified between them.
    s = Server("--parallel", "2", "--lookup")
    try:
        text = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma"
        prompt = "Repeat the list exactly.\nList: " + text + "\nList: " + text + "\nList: alpha beta"
        st, _, r = s.post("/v1/completions", {"prompt": prompt, "max_tokens": 24, "temperature": 0})
        assert st == 200, r
        ref = cli_generate(prompt, 24)
        assert r["choices"][0]["text"] == ref["text"], (r["choices"][0]["text"], ref["text"])
        m = s.metrics()
        print("    %d drafted, %d accepted" % (m["zerfoo:draft_tokens_total"], m["zerfoo:draft_accepted_tokens_total"]))
        assert m["zerfoo:draft_accepted_tokens_total"] > 0, m
        st, _, r = s.post("/v1/completions", {"prompt": prompt, "max_tokens": 24, "temperature": 0,
                                              "speculative.n_max": 0})
        assert st == 200 and r["choices"][0]["text"] == ref["text"], r
        assert s.metrics()["zerfoo:draft_tokens_total"] == m["zerfoo:draft_tokens_total"]
        st, _, r = s.post("/v1/completions", {"prompt": prompt, "max_tokens": 4, "speculative.n_max": 17})
        assert st == 400 and "speculative.n_max" in r["error"]["message"], r
    finally:
        s.stop()


def test_draft_model_speculation():
    # -md: the model as its own draft (a draft session per slot on the one loaded draft): the
    # answer is the CLI's plain greedy answer, drafts are counted and kept, the per-request opt-out
    # drafts nothing.
    s = Server("--parallel", "2", "-md", MODEL)
    try:
        prompt = "The history of the printing press begins"
        st, _, r = s.post("/v1/completions", {"prompt": prompt, "max_tokens": 24, "temperature": 0})
        assert st == 200, r
        ref = cli_generate(prompt, 24)
        assert r["choices"][0]["text"] == ref["text"], (r["choices"][0]["text"], ref["text"])
        m = s.metrics()
        print("    %d drafted, %d accepted" % (m["zerfoo:draft_tokens_total"], m["zerfoo:draft_accepted_tokens_total"]))
        assert m["zerfoo:draft_accepted_tokens_total"] > 0, m
        st, _, r = s.post("/v1/completions", {"prompt": prompt, "max_tokens": 24, "temperature": 0,
                                              "speculative.n_max": 0})
        assert st == 200 and r["choices"][0]["text"] == ref["text"], r
        assert s.metrics()["zerfoo:draft_tokens_total"] == m["zerfoo:draft_tokens_total"]
    finally:
        s.stop()


def test_grace_cancels():
    s = Server("--parallel", "1", "--grace", "1")
    try:
        c = s.conn(60)
        c.request("POST", "/v1/completions", body=json.dumps(
            {"prompt": PROMPTS[1], "max_tokens": 100000, "stream": True, "ignore_eos": True}),
            headers={"Content-Type": "application/json"})
        r = c.getresponse()
        list(sse_events_partial(r, 1))
        t0 = time.time()
        s.proc.send_signal(signal.SIGTERM)
        events = list(sse_events(r))
        assert events[-1] == "[DONE]", events[-2:]
        rc = s.proc.wait(30)
        elapsed = time.time() - t0
        assert rc == 0 and elapsed < 10, (rc, elapsed)
        print("    exited %.1f s after SIGTERM with --grace 1" % elapsed)
    finally:
        s.stop()


def test_startup_errors():
    # A missing model: error on stderr, exit 1, promptly (the listener is shut down again).
    p = subprocess.run([CLI, "serve", "-m", "/nonexistent/model.gguf", "--port", str(free_port())],
                       capture_output=True, timeout=30)
    assert p.returncode == 1 and b"ZF_ERR_IO" in p.stderr, p
    # The port is taken: exit 1.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        p = subprocess.run([CLI, "serve", "-m", MODEL, "--port", str(taken.getsockname()[1])],
                           capture_output=True, timeout=30)
    assert p.returncode == 1 and b"cannot listen" in p.stderr, p
    # Usage errors: exit 2.
    for args in (["serve"], ["serve", "-m", MODEL, "--parallel", "0"], ["serve", "-m", MODEL, "--bogus"]):
        p = subprocess.run([CLI, *args], capture_output=True, timeout=30)
        assert p.returncode == 2, (args, p)


TEMPLATES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "chat_templates", "templates")
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Current weather of a city",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
         {"type": "function", "function": {"name": "search", "description": "Web search",
          "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}]
TOOL_TURNS = [{"role": "user", "content": "Weather in Paris?"},
              {"role": "assistant", "content": None, "tool_calls": [
                  {"id": "call_1", "type": "function",
                   "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
              {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp_c\": 21}"},
              {"role": "user", "content": "And what should I wear?"}]


def stream_message(s, body):
    """Streams a chat request over raw HTTP; returns (message assembled from deltas, finish_reason)."""
    c = s.conn()
    c.request("POST", "/v1/chat/completions", body=json.dumps(dict(body, stream=True)),
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    assert r.status == 200, r.read()
    msg = {"content": "", "reasoning_content": "", "tool_calls": []}
    finish = None
    for data in sse_events(r):
        if data == "[DONE]":
            break
        ch = json.loads(data)["choices"][0]
        d = ch["delta"]
        msg["content"] += d.get("content") or ""
        msg["reasoning_content"] += d.get("reasoning_content") or ""
        for tc in d.get("tool_calls") or []:
            # As OpenAI streams a call: its first chunk has index, id, type and name with
            # arguments ""; later chunks (index only) carry argument fragments.
            if tc["index"] == len(msg["tool_calls"]):
                assert tc["id"] and tc["type"] == "function" and tc["function"]["name"], tc
                assert tc["function"]["arguments"] == "", tc
                msg["tool_calls"].append({"id": tc["id"], "type": tc["type"], "function": dict(tc["function"])})
            else:
                assert tc["index"] == len(msg["tool_calls"]) - 1 and set(tc) == {"index", "function"}, tc
                assert set(tc["function"]) == {"arguments"}, tc
                msg["tool_calls"][-1]["function"]["arguments"] += tc["function"]["arguments"]
                msg["fragments"] = msg.get("fragments", 0) + 1
        finish = ch["finish_reason"] or finish
    c.close()
    return msg, finish


def test_structured_outputs(s):
    # Every schema of structured_schemas.py through the openai client's response_format: the
    # answer is JSON that `jsonschema` validates (SmolLM2, greedy, 4 at a time).
    cl = s.client()

    def one(item):
        name, schema = item
        r = cl.chat.completions.create(
            model="", messages=[{"role": "user", "content": "Give an example value as JSON."}], temperature=0,
            max_tokens=160, response_format={"type": "json_schema", "json_schema": {"name": name, "schema": schema}})
        text = r.choices[0].message.content
        if r.choices[0].finish_reason != "stop":
            return "%s: finish_reason %s: %s" % (name, r.choices[0].finish_reason, text[:120])
        try:
            jsonschema.validate(json.loads(text), schema)
        except Exception as e:  # noqa: BLE001
            return "%s: %s: %s" % (name, type(e).__name__, text[:120])
        return None

    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(4) as ex:
        errors = [e for e in ex.map(one, SCHEMAS) if e]
    assert not errors and len(SCHEMAS) >= 25, "\n".join(errors)
    print("    %d schemas validated" % len(SCHEMAS))
    # json_object, streamed == whole; vLLM's regex and choice (also at the top level); a Lark grammar.
    body = {"messages": CHAT[1:], "temperature": 0, "max_tokens": 80, "response_format": {"type": "json_object"}}
    status, _, full = s.post("/v1/chat/completions", body)
    assert status == 200 and isinstance(json.loads(full["choices"][0]["message"]["content"]), dict), full
    streamed, _ = stream_message(s, body)
    assert streamed["content"] == full["choices"][0]["message"]["content"], (streamed, full)
    import re
    for extra, check in [({"structured_outputs": {"regex": "[A-Z][a-z]{2,8}, [A-Z][a-z]{2,8}"}},
                          lambda t: re.fullmatch("[A-Z][a-z]{2,8}, [A-Z][a-z]{2,8}", t)),
                         ({"regex": "(yes|no)[.!]"}, lambda t: re.fullmatch("(yes|no)[.!]", t)),
                         ({"structured_outputs": {"choice": ["apple", "banana", "cherry"]}},
                          lambda t: t in ("apple", "banana", "cherry")),
                         ({"grammar": 'start: "Fruits: " f ", " f\nf: "apple" | "pear" | "plum"'},
                          lambda t: re.fullmatch("Fruits: (apple|pear|plum), (apple|pear|plum)", t))]:
        status, _, out = s.post("/v1/chat/completions", dict({"messages": CHAT[1:], "temperature": 0, "max_tokens": 32}, **extra))
        assert status == 200, (extra, out)
        t = out["choices"][0]["message"]["content"]
        assert check(t), (extra, t)
    status, _, out = s.post("/v1/completions", {"prompt": "The answer is", "max_tokens": 8, "temperature": 0,
                                                "structured_outputs": {"choice": [" yes", " no"]}})
    assert status == 200 and out["choices"][0]["text"] in (" yes", " no"), out
    # Bad constraints: a 400 naming the field, before anything is generated; the server keeps serving.
    for bad, code, word in [({"response_format": {"type": "json_schema", "json_schema": {"name": "x",
                                                                                        "schema": {"type": "nonsense"}}}},
                             "invalid_value", "response_format"),
                            ({"response_format": {"type": "json_schema", "json_schema": {"name": "x"}}},
                             "invalid_value", "schema"),
                            ({"response_format": {"type": "xml"}}, "invalid_value", "response_format.type"),
                            ({"regex": "([a-z"}, "invalid_value", "regex"),
                            ({"structured_outputs": {"choice": []}}, "invalid_type", "choice"),
                            ({"grammar": "start: nothing_defined"}, "invalid_value", "grammar"),
                            ({"regex": "a+", "structured_outputs": {"choice": ["a"]}}, "invalid_value", "both")]:
        status, _, out = s.post("/v1/chat/completions", dict({"messages": CHAT[1:], "max_tokens": 4}, **bad))
        assert status == 400 and out["error"]["code"] == code and word in out["error"]["message"], (bad, status, out)
    assert s.request("GET", "/health")[0] == 200


def test_tools_and_reasoning():
    # A tool-calling template (Qwen 2.5's Hermes format) on SmolLM2: the tools and a whole tool
    # conversation (assistant call, tool result) reach the prompt; answers read back the same
    # whether streamed or not.
    s = Server("--chat-template-file", os.path.join(TEMPLATES, "Qwen-Qwen2.5-7B-Instruct.jinja"))
    try:
        status, _, out = s.post("/apply-template", {"messages": TOOL_TURNS, "tools": TOOLS})
        assert status == 200, out
        p = out["prompt"]
        assert "<tools>" in p and '"name": "get_weather"' in p, p
        assert '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>' in p, p
        assert "<tool_response>\n{\"temp_c\": 21}\n</tool_response>" in p, p
        body = {"model": "", "messages": TOOL_TURNS, "tools": TOOLS, "temperature": 0, "max_tokens": N_TOK}
        cl = s.client()
        full = cl.chat.completions.create(**body)
        m = full.choices[0].message
        streamed, finish = stream_message(s, body)
        assert streamed["content"] == (m.content or ""), (streamed, m)
        assert len(streamed["tool_calls"]) == len(m.tool_calls or []), (streamed, m)
        for a, b in zip(streamed["tool_calls"], m.tool_calls or []):
            assert a["function"]["name"] == b.function.name and a["id"] == b.id, (a, b)
            assert a["function"]["arguments"] == b.function.arguments, (a, b)  # fragments add up exactly
        assert finish == full.choices[0].finish_reason, (finish, full.choices[0].finish_reason)
        assert finish in ("stop", "length", "tool_calls"), finish
        # tool_choice "none" never reads calls; a named choice offers that tool only.
        out = cl.chat.completions.create(**dict(body, tool_choice="none"))
        assert not out.choices[0].message.tool_calls and out.choices[0].finish_reason != "tool_calls"
        # tool_choice "required": the output is constrained to calls with valid arguments (the
        # generic JSON form), streamed or not; a named choice calls that tool; without
        # parallel_tool_calls exactly one call.
        params = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
        for extra, names in [({"tool_choice": "required", "max_tokens": 320}, None),
                             ({"tool_choice": {"type": "function", "function": {"name": "search"}},
                               "parallel_tool_calls": False}, ["search"]),
                             ({"tool_choice": "required", "parallel_tool_calls": False}, None)]:
            req = dict(dict(body, messages=TOOL_TURNS[:1], max_tokens=96), **extra)
            r = cl.chat.completions.create(**req)
            calls = r.choices[0].message.tool_calls
            assert r.choices[0].finish_reason == "tool_calls" and calls, (extra, r)
            assert extra.get("parallel_tool_calls", True) or len(calls) == 1, (extra, calls)
            for c in calls:
                assert names is None or c.function.name in names, (extra, c)
                jsonschema.validate(json.loads(c.function.arguments), params[c.function.name])
            streamed, finish = stream_message(s, req)
            assert finish == "tool_calls" and streamed["content"] == "", (extra, streamed)
            assert [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in streamed["tool_calls"]] == \
                [(c.id, c.function.name, c.function.arguments) for c in calls], (streamed, calls)
            # The openai client's streaming, calls assembled from its chunks as agent frameworks do.
            acc = {}
            for ch in cl.chat.completions.create(**dict(req, stream=True)):
                for tc in ch.choices[0].delta.tool_calls or []:
                    e = acc.setdefault(tc.index, {"id": tc.id, "name": "", "arguments": ""})
                    e["name"] += (tc.function and tc.function.name) or ""
                    e["arguments"] += (tc.function and tc.function.arguments) or ""
            assert [(e["id"], e["name"], e["arguments"]) for _, e in sorted(acc.items())] == \
                [(c.id, c.function.name, c.function.arguments) for c in calls], (acc, calls)
            print("    %s: %d calls, %d argument fragments streamed" % (extra, len(calls), streamed.get("fragments", 0)))
        # tool_choice "auto" is constrained lazily: free until the model opens a call (here it
        # follows the earlier turns' calls), then the arguments follow the tool's schema (free,
        # the same model writes {"city": "Oslo"}, which the enum does not allow).
        strict = [{"type": "function", "function": {"name": "get_weather", "parameters": {
            "type": "object", "properties": {"city": {"enum": ["OSLO-NO", "ROME-IT"]},
                                             "unit": {"enum": ["celsius", "fahrenheit"]}},
            "required": ["city", "unit"]}}}]
        shots = [TOOL_TURNS[0], TOOL_TURNS[1], {"role": "user", "content": "Weather in Rome?"},
                 {"role": "assistant", "content": None, "tool_calls": [
                     {"id": "call_2", "type": "function",
                      "function": {"name": "get_weather", "arguments": "{\"city\": \"Rome\"}"}}]},
                 {"role": "user", "content": "Weather in Oslo?"}]
        auto = {"model": "", "messages": shots, "tools": strict, "temperature": 0, "max_tokens": 80}
        free = cl.chat.completions.create(**dict(auto, tool_choice="none")).choices[0].message.content
        r = cl.chat.completions.create(**auto)
        calls = r.choices[0].message.tool_calls
        assert r.choices[0].finish_reason == "tool_calls" and calls, (r, free)
        for c in calls:
            jsonschema.validate(json.loads(c.function.arguments), strict[0]["function"]["parameters"])
        streamed, finish = stream_message(s, auto)
        assert finish == "tool_calls" and [c["function"]["arguments"] for c in streamed["tool_calls"]] == \
            [c.function.arguments for c in calls], (streamed, calls)
        print("    auto: free %r; constrained %s" % (free[:80], calls[0].function.arguments))
        status, _, out = s.post("/v1/chat/completions", dict(body, tool_choice="required", regex="a+"))
        assert status == 400 and "both constrain" in out["error"]["message"], out
        status, _, out = s.post("/apply-template", {"messages": TOOL_TURNS[:1], "tools": TOOLS,
                                                    "tool_choice": {"type": "function", "function": {"name": "search"}}})
        assert status == 200 and '"name": "search"' in out["prompt"] and "get_weather" not in out["prompt"], out
        # Bad tool requests: 400 with an OpenAI error object, and the server keeps serving.
        for bad, code in [({"tools": {"name": "f"}}, "invalid_type"),
                          ({"tools": [{"type": "function", "function": {}}]}, "invalid_value"),
                          ({"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "nope"}}}, "invalid_value"),
                          ({"tool_choice": "required"}, "invalid_value"),
                          ({"tools": TOOLS, "tool_choice": "sometimes"}, "invalid_value"),
                          ({"reasoning_format": "verbose"}, "invalid_value"),
                          ({"chat_template_kwargs": [1]}, "invalid_type"),
                          ({"messages": [{"role": "assistant", "tool_calls": [{"function": {}}]}]}, "invalid_type")]:
            req = dict({"messages": TOOL_TURNS[:1], "max_tokens": 2}, **bad)
            status, _, out = s.post("/v1/chat/completions", req)
            assert status == 400 and out["error"]["code"] == code, (bad, status, out)
        try:
            cl.chat.completions.create(**dict(body, tool_choice={"type": "function", "function": {"name": "nope"}}))
            raise AssertionError("an unknown tool_choice was accepted")
        except openai.BadRequestError as e:
            assert "nope" in str(e), e
        assert s.request("GET", "/health")[0] == 200
    finally:
        assert s.stop() == 0
    # Reasoning opened by the prompt (DeepSeek-R1's template with enable_thinking): SmolLM2 never
    # closes it within the budget, so the whole answer is reasoning_content, streamed or not;
    # reasoning_format "none" keeps it as content.
    s = Server("--chat-template-file", os.path.join(TEMPLATES, "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"))
    try:
        body = {"messages": CHAT[1:], "temperature": 0, "max_tokens": N_TOK,
                "chat_template_kwargs": {"enable_thinking": True}}
        status, _, full = s.post("/v1/chat/completions", body)
        assert status == 200, full
        m = full["choices"][0]["message"]
        assert m["reasoning_content"] and m["content"] == "", m
        streamed, finish = stream_message(s, body)
        assert streamed["reasoning_content"] == m["reasoning_content"] and streamed["content"] == "", (streamed, m)
        assert finish == full["choices"][0]["finish_reason"]
        status, _, raw = s.post("/v1/chat/completions", dict(body, reasoning_format="none"))
        assert status == 200 and "reasoning_content" not in raw["choices"][0]["message"], raw
        assert raw["choices"][0]["message"]["content"].strip() == m["reasoning_content"], (raw, m)
    finally:
        assert s.stop() == 0


def test_tools_xml_format():
    # Qwen3-Coder's XML parameters: tool_choice "required" is constrained to that format (one
    # element per parameter, a string value up to its close marker, other values as JSON of their
    # schema); the call reads back as JSON arguments valid for the tool, streamed as fragments
    # that add up to them.
    s = Server("--chat-template-file", os.path.join(TEMPLATES, "Qwen3-Coder.jinja"))
    try:
        tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
                     "type": "object", "properties": {"city": {"type": "string"},
                                                      "days": {"type": "integer", "minimum": 1, "maximum": 7}},
                     "required": ["city", "days"]}}},
                 {"type": "function", "function": {"name": "search", "parameters": {
                     "type": "object", "properties": {"q": {"type": "string"}}}}}]
        body = {"model": "", "messages": [{"role": "user", "content": "Weather in Paris for 3 days?"}], "tools": tools,
                "tool_choice": "required", "parallel_tool_calls": False, "temperature": 0, "max_tokens": 100}
        r = s.client().chat.completions.create(**body)
        calls = r.choices[0].message.tool_calls
        assert r.choices[0].finish_reason == "tool_calls" and len(calls) == 1, r
        params = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
        jsonschema.validate(json.loads(calls[0].function.arguments), params[calls[0].function.name])
        streamed, finish = stream_message(s, body)
        assert finish == "tool_calls" and streamed.get("fragments", 0) > 1, streamed
        assert [(c["id"], c["function"]["arguments"]) for c in streamed["tool_calls"]] == \
            [(c.id, c.function.arguments) for c in calls], (streamed, calls)
        print("    %s(%s), %d fragments" % (calls[0].function.name, calls[0].function.arguments, streamed["fragments"]))
    finally:
        assert s.stop() == 0


# ---- embeddings and rerank -----------------------------------------------------------------


def norm(v):
    return math.sqrt(sum(x * x for x in v))


def max_diff(a, b):
    assert len(a) == len(b), (len(a), len(b))
    return max(abs(x - y) for x, y in zip(a, b))


def embed_raw(s, body, headers=None):
    """POST /v1/embeddings; returns (status, body) with base64 vectors decoded."""
    st, _, out = s.post("/v1/embeddings", body, headers)
    if st == 200:
        for d in out["data"]:
            if isinstance(d["embedding"], str):
                raw = base64.b64decode(d["embedding"])
                d["embedding"] = list(struct.unpack("<%df" % (len(raw) // 4), raw))
    return st, out


def test_embeddings(s):
    c = s.client()
    texts = ["The capital of France is Paris.", "Bananas are yellow.", "The capital of France is Paris."]
    m0 = s.metrics()
    # The openai client asks for base64 itself and decodes it; raw HTTP gets the float lists.
    one = c.embeddings.create(model="smollm2", input=texts[0])
    assert one.object == "list" and one.model == "smollm2" and len(one.data) == 1, one
    assert one.data[0].index == 0 and one.data[0].object == "embedding", one.data[0]
    v = one.data[0].embedding
    assert len(v) >= 64 and abs(norm(v) - 1) < 1e-4, (len(v), norm(v))
    st, tok = s.post("/tokenize", {"content": texts[0], "add_special": True})[::2]
    assert st == 200
    assert one.usage.prompt_tokens == len(tok["tokens"]) == one.usage.total_tokens, (one.usage, tok)
    st, flt = embed_raw(s, {"input": texts[0], "encoding_format": "float"})
    assert st == 200 and flt["data"][0]["embedding"] == v, "float and base64 vectors differ"
    st, b64 = s.post("/v1/embeddings", {"input": texts[0], "encoding_format": "base64"})[::2]
    assert st == 200 and isinstance(b64["data"][0]["embedding"], str)
    assert len(base64.b64decode(b64["data"][0]["embedding"])) == 4 * len(v)
    again = c.embeddings.create(model="smollm2", input=texts[0]).data[0].embedding
    assert again == v, "the same text gave another vector"
    # A batch: one library call; each vector as a call of its own.
    batch = c.embeddings.create(model="smollm2", input=texts)
    assert [d.index for d in batch.data] == [0, 1, 2]
    bv = [d.embedding for d in batch.data]
    separate = [c.embeddings.create(model="smollm2", input=t).data[0].embedding for t in texts]
    for a, b in zip(bv, separate):
        assert max_diff(a, b) < 1e-5, max_diff(a, b)
    assert max_diff(bv[0], bv[2]) < 1e-5 and max_diff(bv[0], bv[1]) > 1e-3
    print("    dim %d; batch vs separate max |diff| %.2g, identical texts in a batch %.2g" %
          (len(v), max(max_diff(a, b) for a, b in zip(bv, separate)), max_diff(bv[0], bv[2])))
    n1 = len(s.post("/tokenize", {"content": texts[1], "add_special": True})[2]["tokens"])
    assert batch.usage.prompt_tokens == 2 * one.usage.prompt_tokens + n1, batch.usage
    # Matryoshka truncation: the first values, normalized again.
    d64 = c.embeddings.create(model="smollm2", input=texts[0], dimensions=64).data[0].embedding
    head = v[:64]
    assert len(d64) == 64 and max_diff(d64, [x / norm(head) for x in head]) < 1e-5
    # Token-id input (nothing added): the tokens the text gives equal the text.
    t1 = c.embeddings.create(model="smollm2", input=tok["tokens"])
    assert max_diff(t1.data[0].embedding, v) < 1e-5 and t1.usage.prompt_tokens == len(tok["tokens"])
    t2 = c.embeddings.create(model="smollm2", input=[tok["tokens"], tok["tokens"][:3]])
    assert len(t2.data) == 2 and max_diff(t2.data[0].embedding, v) < 1e-5
    assert t2.usage.prompt_tokens == len(tok["tokens"]) + 3
    # Errors: 400 with an OpenAI error object naming the field; the openai client raises.
    n_vocab = s.request("GET", "/v1/models")
    meta = json.loads(n_vocab[2])["data"][0]["meta"]
    bad = [({}, "input"), ({"input": ""}, "input"), ({"input": []}, "input"), ({"input": [[]]}, "input"),
           ({"input": 5}, "input"), ({"input": [1.5]}, "input"), ({"input": ["a", 3]}, "input"),
           ({"input": [[1, 2], "a"]}, "input"), ({"input": [1, "a"]}, "input"),
           ({"input": [meta["n_vocab"]]}, "vocabulary"), ({"input": [-1]}, "vocabulary"),
           ({"input": [1] * (meta["n_ctx_train"] + 1)}, "context"),
           ({"input": "x", "encoding_format": "hex"}, "encoding_format"),
           ({"input": "x", "dimensions": 0}, "dimensions"), ({"input": "x", "dimensions": 1 << 20}, "dimensions"),
           ({"input": "x", "dimensions": "64"}, "dimensions")]
    for body, word in bad:
        st, err = embed_raw(s, body)
        assert st == 400 and word in err["error"]["message"], (body if len(str(body)) < 200 else word, st, err)
        assert err["error"]["type"] == "invalid_request_error", err
    st, _, data = s.request("POST", "/v1/embeddings", "{not json")
    assert st == 400 and json.loads(data)["error"]["code"] == "invalid_json"
    try:
        c.embeddings.create(model="smollm2", input="x", dimensions=1 << 20)
        raise AssertionError("dimensions over the model's size accepted")
    except openai.BadRequestError:
        pass
    st, also = embed_raw(s, {"input": texts[0], "encoding_format": "float"})
    assert st == 200 and also["data"][0]["embedding"] == v
    st, alias = s.post("/embeddings", {"input": texts[0]})[::2]
    assert st == 200 and alias["data"][0]["embedding"] == v
    m1 = s.metrics()
    assert m1["zerfoo:embedding_requests_total"] - m0["zerfoo:embedding_requests_total"] >= 12, m1
    assert m1["zerfoo:embedding_inputs_total"] > m0["zerfoo:embedding_inputs_total"]
    assert m1['zerfoo:requests_total{outcome="error"}'] - m0['zerfoo:requests_total{outcome="error"}'] >= len(bad)


def test_request_validation(s):
    # Wrong types and values are 400s naming the field, never ignored or a 500; logit_bias is
    # refused rather than ignored (the generation ABI has no bias).
    tools = [{"type": "function", "function": {"name": "f"}}]
    bad = [({"prompt": "hi", "frequency_penalty": "x"}, "frequency_penalty"),
           ({"prompt": "hi", "presence_penalty": 0.5}, "presence_penalty"),
           ({"prompt": "hi", "logit_bias": [1, 2]}, "logit_bias"),
           ({"prompt": "hi", "logit_bias": {"abc": 10}}, "logit_bias"),
           ({"prompt": "hi", "logit_bias": {"5": "x"}}, "logit_bias"),
           ({"prompt": "hi", "logit_bias": {"5": 10}}, "logit_bias is not supported"),
           ({"prompt": "hi", "repeat_last_n": -5}, "repeat_last_n"),
           ({"prompt": "hi", "repeat_penalty": 0}, "repeat_penalty"),
           ({"prompt": "hi", "user": [1]}, "user"),
           ({"prompt": "hi", "max_tokens": 2 ** 31}, "too large"),
           ({"messages": [{"role": "user", "content": None}]}, "content"),
           ({"messages": [{"role": "system", "content": None}, {"role": "user", "content": "hi"}]}, "content"),
           ({"messages": [{"role": "user", "content": "hi"}], "tools": tools + tools}, "two tools"),
           ({"messages": [{"role": "user", "content": "hi"}],
             "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "nonsense"}}}]}, "tools[0] ('f')")]
    for body, word in bad:
        path = "/v1/chat/completions" if "messages" in body else "/v1/completions"
        st, _, err = s.post(path, body)
        assert st == 400 and word in err["error"]["message"], (body, st, err)
        assert "at least 1" not in err["error"]["message"], err
    # The neutral values are served.
    st, _, r = s.post("/v1/completions", {"prompt": "hi", "max_tokens": 1, "logit_bias": {}, "user": "u",
                                          "frequency_penalty": 0, "presence_penalty": 0, "repeat_last_n": -1})
    assert st == 200, r
    # A tool follow-up as OpenAI clients send it (content null) on SmolLM2's template, which has no tool syntax.
    st, _, r = s.post("/v1/chat/completions", {"messages": TOOL_TURNS, "max_tokens": 1})
    assert st == 200, r
    # Wrong methods on known paths: 405 with Allow; unknown paths stay 404.
    for method, path, allow in [("GET", "/v1/chat/completions", "POST"), ("POST", "/health", "GET, HEAD"),
                                ("DELETE", "/v1/embeddings", "POST"), ("PUT", "/v1/models", "GET, HEAD")]:
        st, hdrs, data = s.request(method, path, "{}")
        assert st == 405 and hdrs.get("Allow") == allow, (method, path, st, hdrs)
        assert json.loads(data)["error"]["code"] == "method_not_allowed"
    st, _, _ = s.request("GET", "/v2/nothing")
    assert st == 404


def test_defaults_limits_slow_clients():
    # Defaults: min(4, cores) slots for SmolLM2 (its full contexts fit), a deep queue: six
    # concurrent embedding requests are all answered. Limits: body size (Content-Length and
    # chunked), inputs and documents per request, the server's context (not the training one)
    # for embeddings. Clients that stall mid-header neither block /health nor stay forever.
    s = Server("--max-body-mb", "1", "--max-inputs", "4", "--max-documents", "3", "--timeout", "1",
               "--ctx-size", "128")
    try:
        meta = json.loads(s.request("GET", "/v1/models")[2])["data"][0]["meta"]
        assert meta["slots"] == min(4, os.cpu_count()), meta
        results = []

        def embed(i):
            results.append(s.post("/v1/embeddings", {"input": ["text %d" % i, "more %d" % i]})[0])

        threads = [threading.Thread(target=embed, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert results == [200] * 6, results
        # Sizes.
        st, hdrs, data = s.request("POST", "/v1/embeddings", b'{"input": "' + b"a" * (1 << 20) + b'"}')
        assert st == 413 and json.loads(data)["error"]["code"] == "request_too_large", (st, data[:200])
        c = s.conn(30)
        c.request("POST", "/v1/completions", body=(b"x" * 65536 for _ in range(32)), encode_chunked=True,
                  headers={"Transfer-Encoding": "chunked", "Content-Type": "application/json"})
        r = c.getresponse()
        assert r.status == 413, r.status
        c.close()
        st, _, err = s.post("/v1/embeddings", {"input": ["a"] * 5})
        assert st == 400 and "at most 4" in err["error"]["message"], err
        st, _, err = s.post("/v1/rerank", {"query": "q", "documents": ["a"] * 4})
        assert st == 400 and "at most 3" in err["error"]["message"], err
        # An input longer than --ctx-size: 400 naming both lengths, alone or in a batch; cut
        # when asked (truncate: the first tokens; truncate_prompt_tokens: the last k).
        long = "word " * 300
        n_long = len(s.post("/tokenize", {"content": long, "add_special": True})[2]["tokens"])
        for body in [{"input": long}, {"input": ["short", long]}]:
            st, _, err = s.post("/v1/embeddings", body)
            msg = err["error"]["message"]
            assert st == 400 and str(n_long) in msg and "128" in msg, (st, err)
        st, _, r = s.post("/v1/embeddings", {"input": ["short", long], "truncate": True})
        assert st == 200 and len(r["data"]) == 2 and r["usage"]["prompt_tokens"] <= 128 + 8, r["usage"]
        toks = s.post("/tokenize", {"content": long, "add_special": True})[2]["tokens"]
        st, _, r = s.post("/v1/embeddings", {"input": long, "truncate_prompt_tokens": 10})
        assert st == 200 and r["usage"]["prompt_tokens"] == 10, r["usage"]
        st, _, ref = s.post("/v1/embeddings", {"input": toks[-10:]})
        assert max_diff(r["data"][0]["embedding"], ref["data"][0]["embedding"]) < 1e-5
        st, _, err = s.post("/v1/embeddings", {"input": "x", "truncate_prompt_tokens": 129})
        assert st == 400, err
        # Slow clients: 16 connections that sent half a request header.
        socks = []
        try:
            for _ in range(16):
                k = socket.create_connection(("127.0.0.1", s.port), timeout=5)
                k.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-")
                socks.append(k)
            t0 = time.time()
            st, _, _ = s.request("GET", "/health", timeout=5)
            assert st == 200 and time.time() - t0 < 2, (st, time.time() - t0)
            # ... and after --timeout seconds of silence the server hangs up on them.
            try:
                socks[0].recv(4096)  # an error answer or the end of the stream, not a 5 s timeout
            except ConnectionResetError:
                pass
            assert time.time() - t0 < 4, time.time() - t0
        finally:
            for k in socks:
                k.close()
    finally:
        assert s.stop() == 0


def test_rerank_unsupported(s):
    # SmolLM2 has no classification head: 501 as llama-server answers a /rerank it cannot serve.
    body = {"model": "smollm2", "query": "What is a panda?", "documents": ["hi", "The giant panda is a bear."]}
    for path in ["/v1/rerank", "/rerank"]:
        st, _, err = s.post(path, body)
        assert st == 501 and err["error"]["type"] == "not_supported_error", (st, err)
        assert "smollm2" in err["error"]["message"], err
    for bad in [{"documents": ["a"]}, {"query": "q"}, {"query": "q", "documents": []},
                {"query": 1, "documents": ["a"]}, {"query": "q", "documents": [1]},
                {"query": "q", "documents": ["a"], "top_n": 0}, {"query": "", "documents": ["a"]},
                {"query": "q", "documents": ["a", ""]}, {"query": "q", "documents": [{"text": ""}]}]:
        st, _, err = s.post("/v1/rerank", bad)
        assert st == 400 and err["error"]["type"] == "invalid_request_error", (bad, st, err)


def test_rerank_model():
    """/v1/rerank on the random-weight BERT reranker of the ctest fixture embed.models."""
    path = os.environ.get("ZERFOO_RERANK_MODEL") or os.path.join(
        os.path.dirname(os.path.abspath(CLI)), "tests", "embed-models", "bert-rank-f32.gguf")
    if not os.path.exists(path):
        print("    skipped: no %s (ctest -R embed.models writes it)" % path)
        return
    s = Server("--parallel", "1", "--alias", "rank", model=path)
    try:
        docs = ["hi", "The giant panda is a bear native to China.", "paris", "bananas are yellow", "hi"]
        st, _, r = s.post("/v1/rerank", {"model": "rank", "query": "What is a panda?", "documents": docs})
        assert st == 200 and r["model"] == "rank" and len(r["results"]) == len(docs), (st, r)
        scores = [x["relevance_score"] for x in r["results"]]
        assert scores == sorted(scores, reverse=True), scores
        assert sorted(x["index"] for x in r["results"]) == list(range(len(docs)))
        by_index = {x["index"]: x["relevance_score"] for x in r["results"]}
        assert abs(by_index[0] - by_index[4]) < 1e-5, by_index  # the same document, the same score
        assert r["usage"]["total_tokens"] > 0, r
        if os.path.basename(path).startswith("bert"):
            # Usage counts the pairs as scored: [CLS] query [SEP] document.
            def ntok(t):
                return len(s.post("/tokenize", {"content": t, "parse_special": False})[2]["tokens"])
            q = ntok("What is a panda?")
            assert r["usage"]["prompt_tokens"] == sum(q + ntok(d) + 2 for d in docs), (r["usage"], q)
        st, _, top = s.post("/rerank", {"query": "What is a panda?", "documents": docs, "top_n": 2,
                                        "return_documents": True})
        assert st == 200 and [x["index"] for x in top["results"]] == [x["index"] for x in r["results"][:2]], top
        assert top["results"][0]["document"]["text"] == docs[top["results"][0]["index"]]
        m = s.metrics()
        assert m["zerfoo:rerank_requests_total"] == 2 and m["zerfoo:rerank_documents_total"] == 10, m
        # An encoder serves embeddings too; completions are 501 (it has no sessions).
        st, _, e = s.post("/v1/embeddings", {"input": ["a panda", "a bear"]})
        assert st == 200 and len(e["data"]) == 2, (st, e)
        st, _, err = s.post("/v1/completions", {"prompt": "hi", "max_tokens": 2})
        assert st == 501 and "rank" in err["error"]["message"], (st, err)
    finally:
        assert s.stop() == 0


def main():
    run_suite("serve", lambda: Server("--parallel", "4", "--queue", "16", "--alias", "smollm2"),
              [test_models_health_metrics, test_tokenize_round_trip, test_completions_equal_cli, test_chat_equal_cli,
               test_logprobs, test_sse_framing_curl, test_concurrent_16, test_invalid_mixed_with_valid,
               test_disconnect_cancels, test_prompt_cache_multi_turn, test_structured_outputs, test_embeddings,
               test_rerank_unsupported, test_request_validation],
              [test_tools_and_reasoning, test_tools_xml_format, test_lookup_speculation, test_draft_model_speculation,
               test_queue_full_auth_and_drain, test_defaults_limits_slow_clients, test_rerank_model, test_grace_cancels,
               test_startup_errors])


def run_suite(name, server, shared, alone=()):
    """Runs a test file's suite: `shared` tests against one server (started by server(), a
    Server), checking it stays up, then `alone` tests (each starts what it needs); prints the
    summary line and exits 1 on a failure, with the shared server's log tail."""
    t_all = time.time()
    failed = []
    s = server()
    try:
        for t in shared:
            run(t, failed, s)
            assert s.proc.poll() is None, "server died: " + s.logtext()[-2000:]
    finally:
        rc = s.stop()
    if rc != 0:
        failed.append("server exit code %s" % rc)
    for t in alone:
        run(t, failed)
    print("%s tests: %d failed, %.1f s" % (name, len(failed), time.time() - t_all))
    if failed:
        print("FAILED: " + ", ".join(failed))
        print(s.logtext()[-3000:])
        sys.exit(1)


def run(t, failed, *args):
    t0 = time.time()
    try:
        t(*args)
        print("PASS %s (%.1f s)" % (t.__name__, time.time() - t0), flush=True)
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        print("FAIL %s (%.1f s)" % (t.__name__, time.time() - t0), flush=True)
        failed.append(t.__name__)


if __name__ == "__main__":
    main()
