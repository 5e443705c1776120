#!/usr/bin/env python3
"""Audio in chat requests (issue #46): `zerfoo serve --mmproj` with an audio projector and
`zerfoo generate/chat --audio`.

SmolLM2 with tests/vision's synthesized ultravox projector (random weights: the answers are noise,
so the checks are that a request with a clip succeeds, that usage counts the clip's 375 positions,
that the same greedy request gives the same text twice, and that the same samples sent as 16-bit
WAV at 16 kHz and as 32-bit float WAV give the same answer). The official `openai` client sends
OpenAI input_audio parts; every refusal is a 400 naming the part and the reason: bad base64, a
format not taken, bytes that are no audio, an image to an audio model, audio to a text-only or
vision model. /props and /v1/models say "audio". Run by tests/serve/test.sh (ZERFOO_CLI,
ZERFOO_TEST_MODEL = SmolLM2, ZERFOO_VISION_MODELS = the folder whose audio/ holds
tests/vision/make_audio_models.sh's files).
"""
import base64
import io
import json
import os
import struct
import subprocess
import tempfile
import wave

import openai

from test_serve import CLI, CTX, MODEL, THREADS, Server, run_suite

HERE = os.path.dirname(os.path.abspath(__file__))
MMPROJ = os.path.join(os.environ["ZERFOO_VISION_MODELS"], "audio", "mmproj-ultravox-f16.gguf")
VISION_MMPROJ = os.path.join(os.environ["ZERFOO_VISION_MODELS"], "mmproj-gemma3-f16.gguf")
WAV_FILE = os.path.join(HERE, "..", "data", "audio", "test-2-4s.wav")  # 4 s of tools/mtmd/test-2.mp3, 16 kHz
AUDIO_TOKENS = 375  # ultravox as synthesized: one 30 s chunk -> 1500 frames / 2 (pool) / 2 (stack)
GREEDY = dict(temperature=0, max_tokens=8)

with open(WAV_FILE, "rb") as f:
    WAV = f.read()


def samples16(wav_bytes):
    with wave.open(io.BytesIO(wav_bytes)) as w:
        assert w.getframerate() == 16000 and w.getnchannels() == 1 and w.getsampwidth() == 2
        return w.readframes(w.getnframes())


def float_wav(pcm16):
    """The same samples as a 32-bit float WAV (format 3)."""
    n = len(pcm16) // 2
    data = struct.pack("<%df" % n, *(x / 32768.0 for x in struct.unpack("<%dh" % n, pcm16)))
    fmt = struct.pack("<HHIIHH", 3, 1, 16000, 64000, 4, 32)
    return (b"RIFF" + struct.pack("<I", 4 + 8 + len(fmt) + 8 + len(data)) + b"WAVE" + b"fmt " +
            struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(data)) + data)


def chat(s, data, fmt="wav", text="What is said?", **kw):
    content = [{"type": "input_audio", "input_audio": {"data": base64.b64encode(data).decode(), "format": fmt}},
               {"type": "text", "text": text}]
    return s.client().chat.completions.create(model="smol", messages=[{"role": "user", "content": content}],
                                              **dict(GREEDY, **kw))


def refused(fn, status, *needles):
    try:
        fn()
    except openai.APIStatusError as e:
        assert e.status_code == status, (e.status_code, str(e))
        for n in needles:
            assert n in str(e), (n, str(e))
        return
    raise AssertionError("accepted; expected %d %s" % (status, needles))


# ---- One server: SmolLM2 with the ultravox projector. ----

def test_input_audio_chat(s):
    a = chat(s, WAV)
    b = chat(s, WAV)
    assert a.choices[0].message.content == b.choices[0].message.content, (a, b)
    assert a.usage.prompt_tokens >= AUDIO_TOKENS, a.usage
    # The same samples as float WAV: the same rows, the same answer.
    c = chat(s, float_wav(samples16(WAV)))
    assert c.choices[0].message.content == a.choices[0].message.content, (a, c)
    assert c.usage.prompt_tokens == a.usage.prompt_tokens, (a.usage, c.usage)


def test_stream_with_audio(s):
    text = "".join(ch.choices[0].delta.content or "" for ch in chat(s, WAV, stream=True) if ch.choices)
    assert text == chat(s, WAV).choices[0].message.content


def test_capabilities(s):
    status, _, data = s.request("GET", "/props")
    props = json.loads(data)
    assert status == 200 and props["modalities"] == {"vision": False, "audio": True}, props
    m = s.client().models.list().data[0].model_dump()
    assert m["modalities"] == {"vision": False, "audio": True} and "multimodal" in m["capabilities"], m


def test_errors(s):
    part = "messages[0].content[0]"
    refused(lambda: chat(s, WAV, fmt="aac"), 400, part + ".input_audio.format")
    refused(lambda: chat(s, b"", fmt="wav"), 400, part, "empty")
    refused(lambda: chat(s, b"hello, this is no audio at all", fmt="mp3"), 400, part)
    refused(lambda: chat(s, WAV[:30]), 400, part)
    status, _, r = s.post("/v1/chat/completions", {"messages": [{"role": "user", "content": [
        {"type": "input_audio", "input_audio": {"data": "@@@@", "format": "wav"}}]}]})
    assert status == 400 and part + ".input_audio.data" in r["error"]["message"], r
    status, _, r = s.post("/v1/chat/completions", {"messages": [{"role": "user", "content": [
        {"type": "input_audio"}]}]})
    assert status == 400 and part + ".input_audio" in r["error"]["message"], r
    # An image to an audio model.
    status, _, r = s.post("/v1/chat/completions", {"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]}]})
    assert status == 400 and part in r["error"]["message"] and "audio projector" in r["error"]["message"], r


# ---- Alone: other servers and the CLI. ----

def test_text_and_vision_models_refuse_audio():
    s = Server("--alias", "smol")
    try:
        refused(lambda: chat(s, WAV), 400, "messages[0].content[0]", "audio projector", "--mmproj")
        status, _, data = s.request("GET", "/props")
        assert json.loads(data)["modalities"] == {"vision": False, "audio": False}
    finally:
        assert s.stop() == 0


def cli(*args, stdin=None):
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=300, input=stdin)


def test_cli_generate_and_chat():
    common = ["-m", MODEL, "--mmproj", MMPROJ, "--temp", "0", "-n", "8", "--ctx", str(CTX), "-t", THREADS]
    a = cli("generate", *common, "--audio", WAV_FILE, "-p", "Transcribe:", "--json")
    assert a.returncode == 0, a.stderr
    b = cli("generate", *common, "--audio", WAV_FILE, "-p", "<__media__>Transcribe:", "--json")
    assert b.returncode == 0 and json.loads(a.stdout)["text"] == json.loads(b.stdout)["text"], (a.stdout, b.stdout)
    assert json.loads(a.stdout)["prompt_tokens"] >= AUDIO_TOKENS, a.stdout
    r = cli("generate", *common, "--audio", WAV_FILE, "-p", "<__media__><__media__>")
    assert r.returncode == 2 and "2 <__media__> markers but 1 --image/--audio" in r.stderr, r.stderr
    with tempfile.TemporaryDirectory() as d:
        png = d + "/a.png"
        with open(png, "wb") as f:
            f.write(b"\x89PNG\r\n\x1a\n" + bytes(32))
        r = cli("generate", *common, "--image", png, "-p", "x")
        assert r.returncode == 1 and "--image " + png in r.stderr and "takes audio only" in r.stderr, r.stderr
        with open(d + "/bad.wav", "wb") as f:
            f.write(WAV[:30])
        r = cli("generate", *common, "--audio", d + "/bad.wav", "-p", "x")
        assert r.returncode == 1 and "--audio " + d + "/bad.wav" in r.stderr, r.stderr
    r = cli("generate", "-m", MODEL, "--mmproj", VISION_MMPROJ, "--audio", WAV_FILE, "-p", "x")
    assert r.returncode == 1 and "--mmproj " + VISION_MMPROJ in r.stderr, r.stderr
    c1 = cli("chat", *common, "--audio", WAV_FILE, "--json", stdin="What is said?\n")
    c2 = cli("chat", *common, "--audio", WAV_FILE, "--json", stdin="What is said?\n")
    assert c1.returncode == 0 and c2.returncode == 0, (c1.stderr, c2.stderr)
    t1, t2 = json.loads(c1.stdout.splitlines()[0]), json.loads(c2.stdout.splitlines()[0])
    assert t1["message"] == t2["message"] and t1["prompt_tokens"] >= AUDIO_TOKENS, (t1, t2)


if __name__ == "__main__":
    run_suite("audio chat", lambda: Server("--mmproj", MMPROJ, "--alias", "smol"),
              [test_input_audio_chat, test_stream_with_audio, test_capabilities, test_errors],
              [test_text_and_vision_models_refuse_audio, test_cli_generate_and_chat])
