#!/usr/bin/env python3
"""Speech to text (issue #47 §2): POST /v1/audio/transcriptions and /v1/audio/translations.

The official `openai` client's audio.transcriptions.create with each response_format (json,
text, srt, vtt, verbose_json) on Whisper tiny.en (--whisper-model) and jfk.wav: the text and
segment times are whisper.cpp 1.8.5's (tests/data/golden/whisper/tiny.en-jfk.json). Bad audio,
unsupported fields and a server without a speech model are 4xx naming the problem.
Run by tests/serve/test.sh (ZERFOO_CLI, ZERFOO_TEST_MODEL = SmolLM2, ZERFOO_WHISPER_MODEL = tiny.en).
"""
import io
import json
import os
import uuid

import openai

from test_serve import Server, run_suite

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
GOLDEN_DIR = os.path.join(ROOT, "tests", "data", "golden", "whisper")
WHISPER = os.environ["ZERFOO_WHISPER_MODEL"]
with open(os.path.join(GOLDEN_DIR, "tiny.en-jfk.json")) as f:
    SEGMENTS = json.load(f)["greedy"]["segments"]  # t0/t1 in 10 ms units
TEXT = "".join(s["text"] for s in SEGMENTS)
with open(os.path.join(GOLDEN_DIR, "jfk.wav"), "rb") as f:
    JFK = f.read()


def ts(units, mark):
    ms = units * 10
    return "%02d:%02d:%02d%s%03d" % (ms // 3600000, ms // 60000 % 60, ms // 1000 % 60, mark, ms % 1000)


def transcribe(s, **kw):
    return s.client().audio.transcriptions.create(model="whisper-1", file=("jfk.wav", io.BytesIO(JFK)), **kw)


def multipart(fields, file_bytes=None, filename="a.wav"):
    """A multipart/form-data body for raw requests (what the client cannot send)."""
    b = uuid.uuid4().hex
    out = b""
    for k, v in fields.items():
        out += b"--%s\r\nContent-Disposition: form-data; name=\"%s\"\r\n\r\n%s\r\n" % (b.encode(), k.encode(), v.encode())
    if file_bytes is not None:
        out += (b"--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"%s\"\r\n"
                b"Content-Type: application/octet-stream\r\n\r\n" % (b.encode(), filename.encode())) + file_bytes + b"\r\n"
    out += b"--%s--\r\n" % b.encode()
    return out, {"Content-Type": "multipart/form-data; boundary=" + b}


def raw(s, path, fields, file_bytes=None, filename="a.wav"):
    body, headers = multipart(fields, file_bytes, filename)
    st, _, r = s.request("POST", path, body, headers)
    return st, r


def error(s, path, fields, file_bytes=None, status=400, filename="a.wav"):
    st, r = raw(s, path, fields, file_bytes, filename)
    assert st == status, (st, r)
    return json.loads(r)["error"]["message"]


def test_json(s):
    r = transcribe(s)
    assert r.text == TEXT, r.text


def test_text(s):
    r = transcribe(s, response_format="text")
    assert r.strip() == TEXT.strip(), r


def test_srt(s):
    r = transcribe(s, response_format="srt")
    want = "".join("%d\n%s --> %s\n%s\n\n" % (i + 1, ts(g["t0"], ","), ts(g["t1"], ","), g["text"].strip())
                   for i, g in enumerate(SEGMENTS))
    assert r == want, (r, want)


def test_vtt(s):
    r = transcribe(s, response_format="vtt")
    want = "WEBVTT\n\n" + "".join("%s --> %s\n%s\n\n" % (ts(g["t0"], "."), ts(g["t1"], "."), g["text"].strip())
                                  for g in SEGMENTS)
    assert r == want, (r, want)


def test_verbose_json(s):
    r = transcribe(s, response_format="verbose_json", timestamp_granularities=["segment"])
    assert r.text == TEXT and r.language == "en" and abs(r.duration - 11.0) < 1e-3, r
    assert len(r.segments) == len(SEGMENTS), r.segments
    for got, g in zip(r.segments, SEGMENTS):
        assert got.text == g["text"] and abs(got.start - g["t0"] / 100) < 1e-6 and abs(got.end - g["t1"] / 100) < 1e-6, got
        assert got.tokens == g["tokens"], (got.tokens, g["tokens"])
        assert got.avg_logprob < 0 and 0 <= got.no_speech_prob <= 1, got


def test_temperature_zero_and_model_name_accepted(s):
    r = s.client().audio.transcriptions.create(model="any-name", file=("jfk.wav", io.BytesIO(JFK)), temperature=0,
                                               language="en")
    assert r.text == TEXT, r.text


def test_translation_on_english_only_model(s):
    try:
        s.client().audio.translations.create(model="whisper-1", file=("jfk.wav", io.BytesIO(JFK)))
        raise AssertionError("an English-only model translated")
    except openai.BadRequestError as e:
        assert "translate" in e.message and "English-only" in e.message, e.message


def test_bad_audio(s):
    p = "/v1/audio/transcriptions"
    assert "not a WAV file" in error(s, p, {"model": "w"}, b"hello, this is not audio at all")
    msg = error(s, p, {"model": "w"}, b"ID3\x04\x00" + b"\x00" * 100, filename="a.mp3")
    assert "MP3 file could not be decoded" in msg, msg
    assert "FLAC" in error(s, p, {"model": "w"}, b"fLaC" + b"\x00" * 100)
    assert "Ogg" in error(s, p, {"model": "w"}, b"OggS" + b"\x00" * 100)
    assert "empty" in error(s, p, {"model": "w"}, b"")
    # A WAV whose data chunk runs past the end (truncated upload).
    assert "WAV" in error(s, p, {"model": "w"}, JFK[:30])
    # 25 MB limit on the file.
    msg = error(s, p, {"model": "w"}, b"\x00" * ((25 << 20) + 1), status=413)
    assert "25 MB" in msg, msg


def test_bad_fields(s):
    p = "/v1/audio/transcriptions"
    assert "file" in error(s, p, {"model": "w"})
    assert "model" in error(s, p, {}, JFK)
    assert "response_format" in error(s, p, {"model": "w", "response_format": "xml"}, JFK)
    assert "temperature" in error(s, p, {"model": "w", "temperature": "0.4"}, JFK)
    assert "temperature" in error(s, p, {"model": "w", "temperature": "hot"}, JFK)
    assert "prompt" in error(s, p, {"model": "w", "prompt": "Kennedy"}, JFK)
    assert "timestamp_granularities" in error(s, p, {"model": "w", "timestamp_granularities[]": "word"}, JFK)
    assert "stream" in error(s, p, {"model": "w", "stream": "true"}, JFK)
    assert "language 'xx'" in error(s, p, {"model": "w", "language": "xx"}, JFK)
    assert "English-only" in error(s, p, {"model": "w", "language": "de"}, JFK)
    assert "language" in error(s, "/v1/audio/translations", {"model": "w", "language": "de"}, JFK)
    st, _, r = s.request("POST", p, json.dumps({"file": "x"}))
    assert st == 400 and "multipart/form-data" in json.loads(r)["error"]["message"], r
    st, _, r = s.request("POST", p, b"--zz\r\nbroken", {"Content-Type": "multipart/form-data; boundary=zz"})
    assert st == 400, r


def test_without_speech_model():
    s = Server()
    try:
        msg = error(s, "/v1/audio/transcriptions", {"model": "w"}, JFK, status=404)
        assert "--whisper-model" in msg, msg
    finally:
        assert s.stop() == 0


def main():
    run_suite("audio", lambda: Server("--whisper-model", WHISPER),
              [test_json, test_text, test_srt, test_vtt, test_verbose_json, test_temperature_zero_and_model_name_accepted,
               test_translation_on_english_only_model, test_bad_audio, test_bad_fields],
              [test_without_speech_model])


if __name__ == "__main__":
    main()
