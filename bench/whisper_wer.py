#!/usr/bin/env python3
"""Word error rate of zerfoo's Whisper beside whisper.cpp's, on clips with reference texts.

Issue #47 asks for accuracy on real speech, not only identity on jfk.wav: the five LibriVox clips
of the pocketsphinx sdist (test/data/librivox/, English, reference .txt beside each .wav) and the
24 clips in 9 languages of the pytest-audioeval wheel (samples/audio/<lang>/<name>.{wav,txt}).
Both engines transcribe each clip with the same model file, threads and decoding (greedy unless
--beam), and the script prints per-language error rates: WER on words, CER (characters) for
Chinese and Japanese, which are written without spaces.

    scripts/fetch_speech_clips.sh                # downloads and unpacks both sets (cached)
    bench/whisper_wer.py --zerfoo build-test/zerfoo --whisper-cli PATH/whisper-cli \
        --model ~/.cache/zerfoo/models/ggml-base.bin --set audioeval --language auto
    bench/whisper_wer.py ... --model ggml-tiny.en.bin --set librivox --language en

Text normalisation (the same for both engines and the reference): Unicode NFKC, lower case,
punctuation removed, spaces collapsed. Numbers are not spelled out, so "10" against "ten" counts
as an error for both engines alike: compare the columns, not the absolute rates to published ones.
"""
import argparse
import collections
import os
import pathlib
import subprocess
import sys
import unicodedata

CACHE = pathlib.Path(os.environ.get("ZERFOO_CACHE", pathlib.Path.home() / ".cache" / "zerfoo")) / "speech-data"
CHAR_LANGS = {"zh", "ja"}


def clips(which):
    """(language, wav path, reference text) for the chosen set."""
    out = []
    if which == "librivox":
        root = CACHE / "pocketsphinx-5.1.1" / "test" / "data" / "librivox"
        for wav in sorted(root.glob("*.wav")):
            out.append(("en", wav, wav.with_suffix(".txt").read_text(encoding="utf-8")))
    else:
        root = CACHE / "audioeval" / "pytest_audioeval" / "samples" / "audio"
        for wav in sorted(root.glob("*/*.wav")):
            out.append((wav.parent.name, wav, wav.with_suffix(".txt").read_text(encoding="utf-8")))
    if not out:
        sys.exit(f"no clips under {root}: run scripts/fetch_speech_clips.sh first")
    return out


def normalise(text):
    text = unicodedata.normalize("NFKC", text).lower()
    text = "".join(" " if unicodedata.category(c).startswith("P") else c for c in text)
    return " ".join(text.split())


def units(text, lang):
    text = normalise(text)
    return list(text.replace(" ", "")) if lang in CHAR_LANGS else text.split()


def edits(ref, hyp):
    """Levenshtein distance between two token lists."""
    prev = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        cur = [i]
        for j, h in enumerate(hyp, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (r != h)))
        prev = cur
    return prev[-1]


def run_zerfoo(args, wav):
    cmd = [args.zerfoo, "transcribe", "-m", args.model, "-l", args.language, "-t", str(args.threads), "-nt"]
    if args.beam > 1:
        cmd += ["--beam-size", str(args.beam)]
    return subprocess.run(cmd + [str(wav)], check=True, capture_output=True, text=True).stdout


def run_whisper_cpp(args, wav):
    beam = max(args.beam, 1)
    cmd = [args.whisper_cli, "-m", args.model, "-l", args.language, "-t", str(args.threads), "-nt", "-np",
           "-bs", str(beam), "-bo", "1" if beam == 1 else "5", "-f", str(wav)]
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--zerfoo", required=True)
    ap.add_argument("--whisper-cli", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--set", choices=["librivox", "audioeval"], required=True)
    ap.add_argument("--language", default="auto", help="a Whisper language code or auto (default)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--beam", type=int, default=1, help="beam size (1 = greedy, the default)")
    ap.add_argument("--verbose", action="store_true", help="print every clip's two transcripts")
    args = ap.parse_args()

    # language -> [reference units, zerfoo edits, whisper.cpp edits, clips, identical texts]
    totals = collections.defaultdict(lambda: [0, 0, 0, 0, 0])
    for lang, wav, ref in clips(args.set):
        ours, theirs = run_zerfoo(args, wav), run_whisper_cpp(args, wav)
        ref_u = units(ref, lang)
        t = totals[lang]
        t[0] += len(ref_u)
        t[1] += edits(ref_u, units(ours, lang))
        t[2] += edits(ref_u, units(theirs, lang))
        t[3] += 1
        t[4] += normalise(ours) == normalise(theirs)
        if args.verbose:
            print(f"{wav.name}\n  ref:     {ref.strip()}\n  zerfoo:  {ours.strip()}\n  whisper: {theirs.strip()}")

    print(f"model {pathlib.Path(args.model).name}, set {args.set}, language {args.language}, "
          f"{'greedy' if args.beam <= 1 else f'beam {args.beam}'}, {args.threads} threads")
    print("| language | clips | metric | zerfoo | whisper.cpp | same text |")
    print("|---|---:|---|---:|---:|---:|")
    all_t = [0, 0, 0, 0, 0]
    for lang in sorted(totals):
        n, ours, theirs, count, same = totals[lang]
        metric = "CER" if lang in CHAR_LANGS else "WER"
        print(f"| {lang} | {count} | {metric} | {100 * ours / n:.1f}% | {100 * theirs / n:.1f}% | {same}/{count} |")
        all_t = [a + b for a, b in zip(all_t, totals[lang])]
    if len(totals) > 1:
        n, ours, theirs, count, same = all_t
        print(f"| all | {count} | WER/CER | {100 * ours / n:.1f}% | {100 * theirs / n:.1f}% | {same}/{count} |")


if __name__ == "__main__":
    main()
