#!/usr/bin/env python3
"""Transcription speed of zerfoo beside whisper.cpp's whisper-cli (issue #47's benchmark table).

Each engine loads the same whisper.cpp .bin model and transcribes the same WAV file as one process
(`zerfoo transcribe` / `whisper-cli`), with the same threads and decoding; the table gives the
median wall time of --runs runs (the engines alternate run by run), the real-time factor (wall / audio length) and the ratio.
Files: tests/data/golden/whisper/jfk.wav (11 s) and a 2-minute file this script writes once into
the speech-data cache: the five LibriVox clips of scripts/fetch_speech_clips.sh and jfk.wav, each
followed by a second of silence, repeated to 120 s (16 kHz mono PCM16), so decoding seeks over
four 30 s windows as real long audio does.

    scripts/fetch_speech_clips.sh
    nice -n -15 bench/whisper_bench.py --zerfoo build-test/zerfoo --whisper-cli PATH/whisper-cli \
        --model ~/.cache/zerfoo/models/ggml-tiny.en.bin --model ~/.cache/zerfoo/models/ggml-base.bin

Run it on a quiet machine (or at a raised priority, as above, on a shared one): whisper-cli's
OpenMP threads spin, so it slows down far more than zerfoo when other processes run.
"""
import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import time
import wave

ROOT = pathlib.Path(__file__).resolve().parent.parent
JFK = ROOT / "tests" / "data" / "golden" / "whisper" / "jfk.wav"
CACHE = pathlib.Path(os.environ.get("ZERFOO_CACHE", pathlib.Path.home() / ".cache" / "zerfoo")) / "speech-data"


def pcm16(path):
    with wave.open(str(path)) as w:
        if (w.getframerate(), w.getnchannels(), w.getsampwidth()) != (16000, 1, 2):
            sys.exit(f"{path}: expected 16 kHz mono PCM16")
        return w.readframes(w.getnframes())


def two_minute_file():
    out = CACHE / "two-minutes.wav"
    if out.exists():
        return out
    clips = sorted((CACHE / "pocketsphinx-5.1.1" / "test" / "data" / "librivox").glob("*.wav"))
    if not clips:
        sys.exit("LibriVox clips missing: run scripts/fetch_speech_clips.sh first")
    silence = b"\0\0" * 16000
    pieces = [pcm16(c) + silence for c in clips + [JFK]]
    data, i = b"", 0
    while len(data) < 120 * 16000 * 2:
        data += pieces[i % len(pieces)]
        i += 1
    data = data[: 120 * 16000 * 2]
    tmp = out.with_suffix(".tmp")
    with wave.open(str(tmp), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(data)
    tmp.rename(out)
    return out


def seconds_of(path):
    with wave.open(str(path)) as w:
        return w.getnframes() / w.getframerate()


def wall(cmd):
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def timed_pair(a, b, runs):
    """Median walls of commands a and b, run alternately so that both see the same machine load."""
    wa, wb = [], []
    for _ in range(runs):
        wa.append(wall(a))
        wb.append(wall(b))
    return statistics.median(wa), statistics.median(wb)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--zerfoo", required=True)
    ap.add_argument("--whisper-cli", required=True)
    ap.add_argument("--model", action="append", required=True, help="a .bin model (repeatable)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--beam", type=int, default=1, help="beam size for both (1 = greedy, the default)")
    args = ap.parse_args()

    files = [JFK, two_minute_file()]
    beam = max(args.beam, 1)
    print(f"{args.threads} threads, {'greedy' if beam == 1 else f'beam {beam}'}, median of {args.runs} runs "
          "(load + transcribe, one process each)")
    print("| model | audio | zerfoo | RTF | whisper.cpp | RTF | ratio |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for model in args.model:
        for f in files:
            ours = [args.zerfoo, "transcribe", "-m", model, "-t", str(args.threads), "-l", "en"]
            if beam > 1:
                ours += ["--beam-size", str(beam)]
            theirs = [args.whisper_cli, "-m", model, "-t", str(args.threads), "-l", "en", "-np",
                      "-bs", str(beam), "-bo", "1" if beam == 1 else "5", "-f", str(f)]
            a, b = timed_pair(ours + [str(f)], theirs, args.runs)
            dur = seconds_of(f)
            print(f"| {pathlib.Path(model).name} | {f.name} ({dur:.0f} s) | {a:.2f} s | {a / dur:.3f} | "
                  f"{b:.2f} s | {b / dur:.3f} | {b / a:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
