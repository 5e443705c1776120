#!/usr/bin/env python3
"""Images from every client (issue #46 §2): `zerfoo serve --mmproj` and `zerfoo generate/chat --image`.

Gemma 3 270M with tests/vision's synthesized projector (random weights: the answers are noise,
so the checks are that a request with an image succeeds, that usage counts the image's 256
positions, and that the same greedy request gives the same text twice). The official `openai`,
`anthropic` and `ollama` clients send the images as each API does (image_url data: URLs and plain
base64, Anthropic image blocks, Ollama `images`, Responses input_image); every refusal is a 4xx
naming the part and the reason: http(s) URLs without --allow-image-urls, bad base64, bytes that
are no image, WebP, an image over --image-max-mb (413), a text-only model, another model's
projector. --allow-image-urls fetches from a local HTTP server (and refuses a 404 and an image
over the limit). --models-dir finds a projector in a model's folder and as mmproj-NAME.gguf.
Run by tests/serve/test.sh (ZERFOO_CLI, ZERFOO_TEST_MODEL = SmolLM2, ZERFOO_GEMMA3_MODEL,
ZERFOO_VISION_MODELS = tests/vision/make_models.sh's folder).
"""
import base64
import http.server
import json
import os
import struct
import subprocess
import tempfile
import threading
import zlib

import anthropic
import ollama
import openai

from test_serve import CLI, CTX, MODEL, THREADS, Server, run_suite

GEMMA3 = os.environ["ZERFOO_GEMMA3_MODEL"]
MMPROJ = os.path.join(os.environ["ZERFOO_VISION_MODELS"], "mmproj-gemma3-f16.gguf")
IMAGE_TOKENS = 256  # Gemma 3: 256 embeddings per image


def png(w, h, seed=0):
    """An RGB PNG of w x h made here (a gradient; `seed` shifts it)."""
    rows = b"".join(b"\x00" + b"".join(bytes(((x * 7 + y * 3 + seed) % 256, (x + seed) % 256, (y * 5) % 256))
                                       for x in range(w)) for y in range(h))

    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xffffffff)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


PNG = png(64, 48)
B64 = base64.b64encode(PNG).decode()
DATA_URL = "data:image/png;base64," + B64
GREEDY = dict(temperature=0, max_tokens=8)


def chat(s, url, text="What is in this picture?", **kw):
    content = [{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": url}}]
    return s.client().chat.completions.create(model="gemma3", messages=[{"role": "user", "content": content}],
                                              **dict(GREEDY, **kw))


def refused(fn, status, *needles):
    """fn() must fail with `status` and a message holding every needle."""
    try:
        fn()
    except (openai.APIStatusError, anthropic.APIStatusError) as e:
        assert e.status_code == status, (e.status_code, str(e))
        for n in needles:
            assert n in str(e), (n, str(e))
        return
    except ollama.ResponseError as e:
        assert e.status_code == status, (e.status_code, str(e))
        for n in needles:
            assert n in str(e), (n, str(e))
        return
    raise AssertionError("accepted; expected %d %s" % (status, needles))


# ---- One server: Gemma 3 270M with the projector (--image-max-mb 1). ----

def test_image_url_chat(s):
    a = chat(s, DATA_URL)
    b = chat(s, DATA_URL)
    assert a.choices[0].message.content == b.choices[0].message.content, (a, b)
    assert a.choices[0].finish_reason in ("stop", "length")
    # The image's positions are prompt tokens: 256 more than the same text without it.
    t = s.client().chat.completions.create(
        model="gemma3", messages=[{"role": "user", "content": [{"type": "text", "text": "What is in this picture?"}]}],
        **GREEDY)
    assert a.usage.prompt_tokens >= t.usage.prompt_tokens + IMAGE_TOKENS, (a.usage, t.usage)


def test_plain_base64_and_other_picture(s):
    # Base64 without the data: prefix is the same image, and so is a scheme in capitals.
    same = chat(s, DATA_URL).choices[0].message.content
    assert chat(s, B64).choices[0].message.content == same
    assert chat(s, "DATA:image/PNG;BASE64," + B64).choices[0].message.content == same
    # Another picture: still answered (its tokens are not the first picture's).
    other = chat(s, "data:image/png;base64," + base64.b64encode(png(30, 70, seed=99)).decode())
    assert other.usage.prompt_tokens >= IMAGE_TOKENS


def test_stream_with_image(s):
    whole = chat(s, DATA_URL)
    text = "".join(c.choices[0].delta.content or "" for c in chat(s, DATA_URL, stream=True) if c.choices)
    assert text == whole.choices[0].message.content, (text, whole)


def test_anthropic_image(s):
    c = anthropic.Anthropic(base_url=s.base, api_key="none", max_retries=0, timeout=120)
    msg = [{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": B64}},
        {"type": "text", "text": "What is in this picture?"}]}]
    r1 = c.messages.create(model="gemma3", max_tokens=8, messages=msg, extra_body={"temperature": 0})
    r2 = c.messages.create(model="gemma3", max_tokens=8, messages=msg, extra_body={"temperature": 0})
    assert r1.content == r2.content and r1.usage.input_tokens >= IMAGE_TOKENS, (r1, r2)
    # Counting the request's tokens gives the answer's prompt (the image's rows included; Anthropic's
    # usage splits it into input_tokens and the cache's reads and writes).
    n = c.messages.count_tokens(model="gemma3", messages=msg)
    u = r1.usage
    assert n.input_tokens == u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens, (n, u)
    # A screenshot tool's result: the image goes into the tool message.
    shot = [{"role": "user", "content": "Take a screenshot."},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "screenshot", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [
                {"type": "text", "text": "Here it is."},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": B64}}]}]}]
    tools = [{"name": "screenshot", "description": "Takes a screenshot.", "input_schema": {"type": "object"}}]
    r = c.messages.create(model="gemma3", max_tokens=4, messages=shot, tools=tools, extra_body={"temperature": 0})
    assert r.usage.input_tokens >= IMAGE_TOKENS, r
    shot[2]["content"][0]["content"][1]["source"]["data"] = "%%%"
    refused(lambda: c.messages.create(model="gemma3", max_tokens=4, messages=shot, tools=tools), 400,
            "messages[2].content[0].content[1].source.data")
    refused(lambda: c.messages.create(model="gemma3", max_tokens=8, messages=[{"role": "user", "content": [
        {"type": "image", "source": {"type": "file", "file_id": "f"}}]}]), 400, "messages[0].content[0].source.type")
    refused(lambda: c.messages.create(model="gemma3", max_tokens=8, messages=[{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "text/plain", "data": B64}}]}]), 400,
        "messages[0].content[0].source.media_type")
    refused(lambda: c.messages.create(model="gemma3", max_tokens=8, messages=[{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "%%%"}}]}]), 400,
        "messages[0].content[0].source.data")


def test_ollama_images(s):
    c = ollama.Client(host=s.base, timeout=120)
    opts = {"temperature": 0, "num_predict": 8}
    r1 = c.chat(model="gemma3", messages=[{"role": "user", "content": "What is this?", "images": [PNG]}], options=opts)
    r2 = c.chat(model="gemma3", messages=[{"role": "user", "content": "What is this?", "images": [B64]}], options=opts)
    assert r1.message.content == r2.message.content and r1.prompt_eval_count >= IMAGE_TOKENS, (r1, r2)
    g = c.generate(model="gemma3", prompt="What is this?", images=[PNG], options=opts)
    assert g.prompt_eval_count >= IMAGE_TOKENS, g
    assert "vision" in c.show("gemma3").capabilities
    refused(lambda: c.generate(model="gemma3", prompt="x", images=[PNG], raw=True, options=opts), 400, "raw")
    refused(lambda: c.chat(model="gemma3", messages=[{"role": "user", "content": "x", "images": ["aGVsbG8="]}]), 400,
            "messages[0].images[0]", "not a PNG")


def test_responses_input_image(s):
    body = {"model": "gemma3", "max_output_tokens": 8, "temperature": 0, "input": [{"role": "user", "content": [
        {"type": "input_text", "text": "What is this?"}, {"type": "input_image", "image_url": DATA_URL}]}]}
    status, _, r1 = s.post("/v1/responses", body)
    assert status == 200, r1
    status, _, r2 = s.post("/v1/responses", body)
    assert r1["output"][-1]["content"] == r2["output"][-1]["content"] and r1["usage"]["input_tokens"] >= IMAGE_TOKENS
    body["input"][0]["content"][1] = {"type": "input_image", "file_id": "file-1"}
    status, _, r = s.post("/v1/responses", body)
    assert status == 400 and "input[0].content[1].file_id" in r["error"]["message"], r


def test_capabilities(s):
    status, _, data = s.request("GET", "/props")
    props = json.loads(data)
    assert status == 200 and props["modalities"] == {"vision": True, "audio": False}, props
    m = s.client().models.list().data[0].model_dump()
    assert m["modalities"]["vision"] and "multimodal" in m["capabilities"] and m["mmproj"] == MMPROJ, m


def test_errors(s):
    base = "messages[0].content[1].image_url.url"
    refused(lambda: chat(s, "http://127.0.0.1:1/a.png"), 400, base, "--allow-image-urls")
    refused(lambda: chat(s, "https://example.invalid/a.png"), 400, "--allow-image-urls")
    refused(lambda: chat(s, "data:image/png;base64,@@@@"), 400, base, "not a base64 character")
    refused(lambda: chat(s, "data:image/png," + B64), 400, base, "base64")
    refused(lambda: chat(s, "data:text/plain;base64," + B64), 400, base, "not an image")
    refused(lambda: chat(s, "data:image/png;base64,"), 400, base, "empty")
    refused(lambda: chat(s, base64.b64encode(b"hello, world").decode()), 400, base, "not a PNG, JPEG, GIF or BMP")
    webp = b"RIFF\x24\x00\x00\x00WEBPVP8 " + bytes(24)
    refused(lambda: chat(s, base64.b64encode(webp).decode()), 400, base, "WebP")
    # A truncated PNG: the library's decoder says why (a 400, the part named).
    refused(lambda: chat(s, "data:image/png;base64," + base64.b64encode(PNG[:60]).decode()), 400, "messages[0]")
    # Over --image-max-mb 1: 413 naming the limit.
    big = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(1 << 20)).decode()
    refused(lambda: chat(s, big), 413, base, "--image-max-mb")
    # A part without its URL.
    status, _, r = s.post("/v1/chat/completions", {"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {}}]}]})
    assert status == 400 and "messages[0].content[0].image_url.url" in r["error"]["message"], r
    status, _, r = s.post("/v1/chat/completions", {"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": 5}}]}]})
    assert status == 400 and "must be a string" in r["error"]["message"], r


# ---- Alone: other servers and the CLI. ----

def test_text_only_model():
    s = Server("--alias", "gemma3")  # SmolLM2 under the name the requests use, no projector
    try:
        refused(lambda: chat(s, DATA_URL), 400, "messages[0].content[1]", "vision model", "--mmproj")
        status, _, data = s.request("GET", "/props")
        assert json.loads(data)["modalities"]["vision"] is False
    finally:
        assert s.stop() == 0


def test_wrong_projector():
    # Gemma 3's projector for SmolLM2: the load fails with the library's reason, naming the file.
    p = subprocess.run([CLI, "serve", "-m", MODEL, "--mmproj", MMPROJ, "--port", "0", "-t", THREADS],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode != 0 and "--mmproj " + MMPROJ in p.stderr and "width" in p.stderr, p.stderr
    p = subprocess.run([CLI, "serve", "--models-dir", "/tmp", "--mmproj", MMPROJ], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 2 and "--mmproj" in p.stderr, p.stderr


class _Images(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        body = {"/a.png": PNG, "/big.png": b"\x89PNG\r\n\x1a\n" + bytes(2 << 20)}.get(self.path)
        if body is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_allow_image_urls():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Images)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = "http://127.0.0.1:%d" % httpd.server_address[1]
    s = Server("--mmproj", MMPROJ, "--alias", "gemma3", "--allow-image-urls", "--image-max-mb", "1",
               "--image-url-timeout", "5", model=GEMMA3)
    try:
        assert chat(s, url + "/a.png").choices[0].message.content == chat(s, DATA_URL).choices[0].message.content
        assert chat(s, url.replace("http", "HTTP") + "/a.png").usage.prompt_tokens >= IMAGE_TOKENS
        refused(lambda: chat(s, url + "/missing.png"), 400, "messages[0].content[1].image_url.url", "HTTP 404")
        refused(lambda: chat(s, url + "/big.png"), 413, "--image-max-mb")
        refused(lambda: chat(s, "http://127.0.0.1:1/a.png"), 400, "failed")
    finally:
        httpd.shutdown()
        assert s.stop() == 0


def test_models_dir():
    with tempfile.TemporaryDirectory() as d:
        os.mkdir(d + "/gemma-vision")  # llama-server's router layout: the model and its projector in a folder
        os.symlink(GEMMA3, d + "/gemma-vision/model.gguf")
        os.symlink(MMPROJ, d + "/gemma-vision/mmproj-f16.gguf")
        os.symlink(GEMMA3, d + "/g3.gguf")  # mmproj-NAME.gguf beside NAME.gguf
        os.symlink(MMPROJ, d + "/mmproj-g3.gguf")
        os.symlink(MODEL, d + "/smol.gguf")
        s = Server("--models-dir", d)
        try:
            models = {m.id: m.model_dump() for m in s.client().models.list().data}
            assert models["gemma-vision"]["modalities"]["vision"] and models["g3"]["modalities"]["vision"], models
            assert not models["smol"]["modalities"]["vision"] and "mmproj-g3" not in models, models
            r = s.client().chat.completions.create(model="gemma-vision", messages=[{"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": DATA_URL}}]}], **GREEDY)
            assert r.usage.prompt_tokens >= IMAGE_TOKENS
            status, _, data = s.request("GET", "/props?model=g3")
            assert json.loads(data)["modalities"]["vision"] is True
        finally:
            assert s.stop() == 0


def cli(*args, stdin=None):
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=300, input=stdin)


def test_cli_generate_and_chat():
    with tempfile.TemporaryDirectory() as d:
        img = d + "/a.png"
        with open(img, "wb") as f:
            f.write(PNG)
        common = ["-m", GEMMA3, "--mmproj", MMPROJ, "--temp", "0", "-n", "8", "--ctx", str(CTX), "-t", THREADS]
        a = cli("generate", *common, "--image", img, "-p", "Describe:", "--json")
        assert a.returncode == 0, a.stderr
        b = cli("generate", *common, "--image", img, "-p", "<__media__>Describe:", "--json")
        assert b.returncode == 0 and json.loads(a.stdout)["text"] == json.loads(b.stdout)["text"], (a.stdout, b.stdout)
        two = cli("generate", *common, "--image", img, "--image", img, "-p", "A <__media__> and <__media__>.", "--json")
        assert two.returncode == 0, two.stderr
        r = cli("generate", *common, "--image", img, "-p", "<__media__><__media__>")
        assert r.returncode == 2 and "2 <__media__> markers but 1 --image" in r.stderr, r.stderr
        r = cli("generate", "-m", GEMMA3, "--image", img, "-p", "x")
        assert r.returncode == 2 and "--mmproj" in r.stderr, r.stderr
        r = cli("generate", *common, "--image", d + "/missing.png", "-p", "x")
        assert r.returncode == 1 and "--image " + d + "/missing.png" in r.stderr, r.stderr
        with open(d + "/bad.png", "wb") as f:
            f.write(PNG[:60])
        r = cli("generate", *common, "--image", d + "/bad.png", "-p", "x")
        assert r.returncode == 1 and d + "/bad.png" in r.stderr, r.stderr
        r = cli("generate", "-m", MODEL, "--mmproj", MMPROJ, "--image", img, "-p", "x")
        assert r.returncode == 1 and "--mmproj " + MMPROJ in r.stderr and "width" in r.stderr, r.stderr
        c1 = cli("chat", *common, "--image", img, "--json", stdin="What is this?\n")
        c2 = cli("chat", *common, "--image", img, "--json", stdin="What is this?\n")
        assert c1.returncode == 0 and c2.returncode == 0, (c1.stderr, c2.stderr)
        t1, t2 = json.loads(c1.stdout.splitlines()[0]), json.loads(c2.stdout.splitlines()[0])
        assert t1["message"] == t2["message"] and t1["prompt_tokens"] >= IMAGE_TOKENS, (t1, t2)
        # generate counts the image's positions in its prompt too.
        assert json.loads(a.stdout)["prompt_tokens"] >= IMAGE_TOKENS, a.stdout


if __name__ == "__main__":
    run_suite("vision", lambda: Server("--mmproj", MMPROJ, "--alias", "gemma3", "--image-max-mb", "1", model=GEMMA3),
              [test_image_url_chat, test_plain_base64_and_other_picture, test_stream_with_image, test_anthropic_image,
               test_ollama_images, test_responses_input_image, test_capabilities, test_errors],
              [test_text_only_model, test_wrong_projector, test_allow_image_urls, test_models_dir,
               test_cli_generate_and_chat])
