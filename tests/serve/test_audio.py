#!/usr/bin/env python3
"""Speech to text (issue #47 §2): POST /v1/audio/transcriptions and /v1/audio/translations.

The official `openai` client's audio.transcriptions.create with each response_format (json,
text, srt, vtt, verbose_json, with word timestamps), a prompt, a temperature and stream=True on Whisper tiny.en (--whisper-model) and jfk.wav:
the text and segment times are whisper.cpp 1.8.5's (tests/data/golden/whisper/tiny.en-jfk.json).
jfk.wav as FLAC, Ogg Vorbis and MP3 (encoded here with Debian's flac, vorbis-tools and lame) gives
the same text; a 2-minute file (jfk.wav and 2 s of silence, 10 times) is cut into its 20 segments
across five 30 s windows (seeking). Bad audio, bad fields, an unknown model and a server without
a speech model are 4xx naming the problem; two speech models are picked by name.
Run by tests/serve/test.sh (ZERFOO_CLI, ZERFOO_TEST_MODEL = SmolLM2, ZERFOO_WHISPER_MODEL = tiny.en).
"""
import io
import json
import os
import shutil
import subprocess
import tempfile
import uuid
import wave

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


def encoded():
    """jfk.wav as FLAC, Ogg Vorbis and MP3 ({} when the encoders cannot be installed)."""
    subprocess.run([os.path.join(ROOT, "scripts", "install_deps.sh"), "--no-recommends", "flac", "vorbis-tools", "lame"],
                   check=True, stdout=subprocess.DEVNULL)
    wav = os.path.join(GOLDEN_DIR, "jfk.wav")
    out = {}
    with tempfile.TemporaryDirectory() as d:
        for ext, cmd in (("flac", ["flac", "-s", "-f", "-o", d + "/a.flac", wav]),
                         ("ogg", ["oggenc", "-Q", "-q", "4", "-o", d + "/a.ogg", wav]),
                         ("mp3", ["lame", "--quiet", "-b", "64", wav, d + "/a.mp3"])):
            subprocess.run(cmd, check=True, stderr=subprocess.DEVNULL)
            with open(d + "/a." + ext, "rb") as f:
                out[ext] = f.read()
    return out


def long_wav():
    """About 2 minutes: jfk.wav and 2 s of silence, 10 times (16 kHz mono 16-bit)."""
    with wave.open(os.path.join(GOLDEN_DIR, "jfk.wav")) as w:
        frames = w.readframes(w.getnframes())
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes((frames + b"\0\0" * 32000) * 10)
    return buf.getvalue()


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


def test_temperature_zero_and_model_by_name(s):
    r = s.client().audio.transcriptions.create(model="ggml-tiny.en", file=("jfk.wav", io.BytesIO(JFK)), temperature=0,
                                               language="en")
    assert r.text == TEXT, r.text


def test_stream(s):
    events = list(s.client().audio.transcriptions.create(model="whisper-1", file=("jfk.wav", io.BytesIO(JFK)),
                                                         stream=True))
    assert [e.type for e in events] == ["transcript.text.delta"] * len(SEGMENTS) + ["transcript.text.done"], events
    assert [e.delta for e in events[:-1]] == [g["text"] for g in SEGMENTS], events
    assert events[-1].text == TEXT, events[-1]
    # A bad parameter is still a plain 400 (the stream starts at the first segment).
    try:
        list(s.client().audio.transcriptions.create(model="whisper-1", file=("jfk.wav", io.BytesIO(JFK)), stream=True,
                                                    language="xx"))
        raise AssertionError("language xx streamed")
    except openai.BadRequestError as e:
        assert "language 'xx'" in e.message, e.message


def test_prompt_and_temperature(s):
    # A prompt in quotes conditions the model to quote (whisper.cpp's tiny.en does the same).
    r = transcribe(s, prompt="\"President Kennedy speaking.\"")
    assert r.text.strip().startswith('"And so my fellow Americans') and "ask not what your country" in r.text, r.text
    # Above 0: sampled (a fixed seed), with the fallback; the words survive on this clear clip.
    r = transcribe(s, temperature=0.2)
    assert "ask not what your country can do for you" in r.text.replace(",", ""), r.text


def test_word_timestamps(s):
    r = transcribe(s, response_format="verbose_json", timestamp_granularities=["word", "segment"])
    assert r.text == TEXT and len(r.segments) == len(SEGMENTS), r
    words = [w.word for w in r.words]
    assert " ".join(words) == TEXT.strip().replace("  ", " "), words
    for a, b in zip(r.words, r.words[1:]):
        assert 0 <= a.start <= a.end <= b.start + 1e-6 and b.end <= 11.0, (a, b)


def test_compressed_audio(s):
    for ext, data in encoded().items():
        r = s.client().audio.transcriptions.create(model="whisper-1", file=("jfk." + ext, io.BytesIO(data)),
                                                   response_format="verbose_json")
        assert r.text == TEXT, (ext, r.text)
        assert 10.9 < r.duration < 11.2, (ext, r.duration)
        if ext == "flac":  # lossless: whisper.cpp's segments exactly
            assert [(round(g.start * 100), round(g.end * 100), g.text) for g in r.segments] == \
                   [(g["t0"], g["t1"], g["text"]) for g in SEGMENTS], r.segments


def test_two_minutes(s):
    client = s.client().with_options(timeout=600)  # minutes under the sanitizers
    r = client.audio.transcriptions.create(model="whisper-1", file=("long.wav", io.BytesIO(long_wav())),
                                           response_format="verbose_json")
    assert abs(r.duration - 130.0) < 1e-3, r.duration
    # Each 13 s period holds the two sentences; the windows seek to the last timestamp.
    assert len(r.segments) == 20, [(g.start, g.end, g.text) for g in r.segments]
    for k, g in enumerate(r.segments):
        first = k % 2 == 0
        assert g.text.strip() == (SEGMENTS[0] if first else SEGMENTS[1])["text"].strip(), (k, g)
        assert abs(g.start - (13 * (k // 2) + (0 if first else 8))) <= 1.0, (k, g.start)
    assert r.text.count("ask what you can do for your country") == 10, r.text


def test_concurrent_requests(s):
    # Requests at once (up to --parallel run together, sharing the model's decoder passes): each
    # answer is exactly the one it gets alone, segments and times included.
    from concurrent.futures import ThreadPoolExecutor

    def one(fmt):
        r = transcribe(s, response_format="verbose_json") if fmt == "verbose" else transcribe(s)
        return r.text if fmt == "json" else [(g.start, g.end, g.text) for g in r.segments]
    alone = {f: one(f) for f in ("json", "verbose")}
    with ThreadPoolExecutor(4) as ex:
        got = list(ex.map(one, ["json", "verbose", "json", "verbose"]))
    assert got == [alone["json"], alone["verbose"]] * 2, got
    assert alone["json"] == TEXT, alone["json"]


def test_translation_on_english_only_model(s):
    try:
        s.client().audio.translations.create(model="whisper-1", file=("jfk.wav", io.BytesIO(JFK)))
        raise AssertionError("an English-only model translated")
    except openai.BadRequestError as e:
        assert "translate" in e.message and "English-only" in e.message, e.message


def test_bad_audio(s):
    p = "/v1/audio/transcriptions"
    assert "not a WAV file" in error(s, p, {"model": "whisper-1"}, b"hello, this is not audio at all")
    msg = error(s, p, {"model": "whisper-1"}, b"ID3\x04\x00" + b"\x00" * 100, filename="a.mp3")
    assert "MP3 file could not be decoded" in msg, msg
    assert "FLAC" in error(s, p, {"model": "whisper-1"}, b"fLaC" + b"\x00" * 100)
    assert "Ogg" in error(s, p, {"model": "whisper-1"}, b"OggS" + b"\x00" * 100)
    assert "empty" in error(s, p, {"model": "whisper-1"}, b"")
    # A WAV whose data chunk runs past the end (truncated upload).
    assert "WAV" in error(s, p, {"model": "whisper-1"}, JFK[:30])
    # 25 MB limit on the file.
    msg = error(s, p, {"model": "whisper-1"}, b"\x00" * ((25 << 20) + 1), status=413)
    assert "25 MB" in msg, msg


def test_bad_fields(s):
    p = "/v1/audio/transcriptions"
    assert "file" in error(s, p, {"model": "whisper-1"})
    assert "model" in error(s, p, {}, JFK)
    msg = error(s, p, {"model": "nope"}, JFK, status=404)
    assert "model 'nope' not found" in msg and "ggml-tiny.en" in msg, msg
    assert "response_format" in error(s, p, {"model": "whisper-1", "response_format": "xml"}, JFK)
    assert "temperature" in error(s, p, {"model": "whisper-1", "temperature": "hot"}, JFK)
    assert "temperature" in error(s, p, {"model": "whisper-1", "temperature": "2"}, JFK)
    assert "timestamp_granularities" in error(s, p, {"model": "whisper-1", "timestamp_granularities[]": "char"}, JFK)
    msg = error(s, p, {"model": "whisper-1", "timestamp_granularities[]": "word"}, JFK)
    assert "timestamp_granularities" in msg and "verbose_json" in msg, msg
    assert "stream" in error(s, p, {"model": "whisper-1", "stream": "maybe"}, JFK)
    msg = error(s, p, {"model": "whisper-1", "stream": "true", "response_format": "srt"}, JFK)
    assert "stream" in msg and "srt" in msg, msg
    assert "language 'xx'" in error(s, p, {"model": "whisper-1", "language": "xx"}, JFK)
    assert "English-only" in error(s, p, {"model": "whisper-1", "language": "de"}, JFK)
    assert "language" in error(s, "/v1/audio/translations", {"model": "whisper-1", "language": "de"}, JFK)
    st, _, r = s.request("POST", p, json.dumps({"file": "x"}))
    assert st == 400 and "multipart/form-data" in json.loads(r)["error"]["message"], r
    st, _, r = s.request("POST", p, b"--zz\r\nbroken", {"Content-Type": "multipart/form-data; boundary=zz"})
    assert st == 400, r


def test_two_models():
    """Two names (the same file here: CI fetches one speech model) and --models-dir's .bin files,
    listed by /v1/models as kind "speech" and picked by the request's model field."""
    d = tempfile.mkdtemp()
    try:
        os.symlink(WHISPER, d + "/dir-tiny.bin")
        with open(d + "/notes.bin", "wb") as f:
            f.write(b"not a whisper model")  # skipped: no ggml magic
        s = Server("--whisper-model", WHISPER + "=tiny", "--whisper-model", WHISPER + "=other", "--models-dir", d)
        try:
            st, _, body = s.request("GET", "/v1/models")
            speech = [(m["id"], m["status"]["value"]) for m in json.loads(body)["data"] if m.get("kind") == "speech"]
            assert speech == [("tiny", "loaded"), ("other", "loaded"), ("dir-tiny", "unloaded")], speech
            for name in ("other", "dir-tiny"):  # "tiny" and whisper-1 (the first) load at startup, as tested above
                r = s.client().audio.transcriptions.create(model=name, file=("jfk.wav", io.BytesIO(JFK)))
                assert r.text == TEXT, (name, r.text)
            st, _, body = s.request("GET", "/v1/models")
            assert ("dir-tiny", "loaded") in [(m["id"], m["status"]["value"]) for m in json.loads(body)["data"]], body
            msg = error(s, "/v1/audio/transcriptions", {"model": "ggml-tiny.en"}, JFK, status=404)
            assert "tiny, other, dir-tiny" in msg, msg
        finally:
            assert s.stop() == 0
    finally:
        shutil.rmtree(d)


def test_without_speech_model():
    s = Server()
    try:
        msg = error(s, "/v1/audio/transcriptions", {"model": "w"}, JFK, status=404)
        assert "--whisper-model" in msg, msg
    finally:
        assert s.stop() == 0


def main():
    run_suite("audio", lambda: Server("--whisper-model", WHISPER),
              [test_json, test_text, test_srt, test_vtt, test_verbose_json, test_temperature_zero_and_model_by_name,
               test_stream, test_prompt_and_temperature, test_word_timestamps, test_compressed_audio, test_two_minutes, test_concurrent_requests,
               test_translation_on_english_only_model,
               test_bad_audio, test_bad_fields],
              [test_two_models, test_without_speech_model])


if __name__ == "__main__":
    main()
