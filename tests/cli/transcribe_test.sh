#!/usr/bin/env bash
# `zerfoo transcribe` (issue #47 §2): tiny.en on jfk.wav gives whisper.cpp 1.8.5's greedy
# transcript (tests/data/golden/whisper/tiny.en-jfk.json) in each output format, several files
# in one run, and bad input fails with a message naming the problem. jfk.wav encoded here as FLAC
# (lossless: the same segments), Ogg Vorbis and MP3 (lossy: the same text) with Debian's flac,
# vorbis-tools and lame (installed by scripts/install_deps.sh) goes in through miniaudio.
#   tests/cli/transcribe_test.sh ZERFOO_BIN   (the model: ZF_MODEL_WHISPER_TINY_EN, else
#   scripts/fetch_models.sh whisper-tiny-en; ctest's fixture speech.model fetches it)
set -uo pipefail
zf="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
model="${ZF_MODEL_WHISPER_TINY_EN:-$("$root/scripts/fetch_models.sh" whisper-tiny-en)}" || { echo "FAIL: no tiny.en"; exit 1; }
golden="$root/tests/data/golden/whisper/tiny.en-jfk.json"
wav="$root/tests/data/golden/whisper/jfk.wav"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$zf" transcribe -m "$model" -t 2 "$wav" > "$tmp/txt" || fail "txt exited $?"
"$zf" transcribe -m "$model" -t 2 -of srt "$wav" > "$tmp/srt" || fail "srt exited $?"
"$zf" transcribe -m "$model" -t 2 -of vtt "$wav" > "$tmp/vtt" || fail "vtt exited $?"
"$zf" transcribe -m "$model" -t 2 -of json "$wav" > "$tmp/json" || fail "json exited $?"
"$zf" transcribe -m "$model" -t 2 -of json "$wav" "$wav" > "$tmp/two.json" || fail "two files exited $?"
"$zf" transcribe -m "$model" -t 2 "$wav" "$wav" > "$tmp/two.txt" || fail "two txt files exited $?"
# whisper.cpp's decoding options: word timestamps, a prompt, beam search, a sampled first pass.
"$zf" transcribe -m "$model" -t 2 -wt -of json "$wav" > "$tmp/words.json" || fail "-wt exited $?"
"$zf" transcribe -m "$model" -t 2 --prompt '"President Kennedy speaking."' "$wav" > "$tmp/prompt.txt" || fail "--prompt exited $?"
"$zf" transcribe -m "$model" -t 2 -bs 5 "$wav" > "$tmp/beam.txt" || fail "-bs 5 exited $?"
"$zf" transcribe -m "$model" -t 2 -tp 0.4 -bo 2 --seed 7 "$wav" > "$tmp/sampled.txt" || fail "-tp 0.4 exited $?"
python3 - "$golden" "$tmp" "$wav" <<'PY' || exit 1
import json, sys
segs = json.load(open(sys.argv[1]))["greedy"]["segments"]  # t0/t1 in 10 ms units
d, wav = sys.argv[2], sys.argv[3]
text = "".join(s["text"] for s in segs)
def ts(u, mark):
    ms = u * 10
    return "%02d:%02d:%02d%s%03d" % (ms // 3600000, ms // 60000 % 60, ms // 1000 % 60, mark, ms % 1000)
got = open(d + "/txt").read()
assert got == text.strip() + "\n", (got, text)
want = "".join("%d\n%s --> %s\n%s\n\n" % (i + 1, ts(s["t0"], ","), ts(s["t1"], ","), s["text"].strip()) for i, s in enumerate(segs))
assert open(d + "/srt").read() == want, open(d + "/srt").read()
want = "WEBVTT\n\n" + "".join("%s --> %s\n%s\n\n" % (ts(s["t0"], "."), ts(s["t1"], "."), s["text"].strip()) for s in segs)
assert open(d + "/vtt").read() == want, open(d + "/vtt").read()
j = json.loads(open(d + "/json").read())
assert j["text"] == text and j["language"] == "en" and j["task"] == "transcribe" and abs(j["duration"] - 11) < 1e-3, j
assert [(round(s["start"] * 100), round(s["end"] * 100), s["text"], s["tokens"]) for s in j["segments"]] == \
       [(s["t0"], s["t1"], s["text"], s["tokens"]) for s in segs], j["segments"]
for s in j["segments"]:
    assert "".join(t["text"] for t in s["token_probs"]) == s["text"], s
    assert all(0 < t["p"] <= 1 for t in s["token_probs"]), s
lines = open(d + "/two.json").read().splitlines()
assert len(lines) == 2 and all(json.loads(l)["file"] == wav and json.loads(l)["text"] == text for l in lines), lines
two = open(d + "/two.txt").read()
assert two == ("==> %s <==\n%s\n" % (wav, text.strip())) * 2, two
w = json.loads(open(d + "/words.json").read())
assert w["text"] == text, w["text"]
assert " ".join(x["word"] for x in w["words"]) == text.strip(), w["words"]
assert all(0 <= a["start"] <= a["end"] <= b["start"] + 1e-6 for a, b in zip(w["words"], w["words"][1:])), w["words"]
assert all(0 < x["probability"] <= 1 for x in w["words"]), w["words"]
assert open(d + "/prompt.txt").read().startswith('"And so my fellow Americans'), open(d + "/prompt.txt").read()
for f in ("beam.txt", "sampled.txt"):
    assert "ask not what your country can do for you" in open(d + "/" + f).read().replace(",", ""), open(d + "/" + f).read()
print("transcribe: txt, srt, vtt, json and two files match whisper.cpp's segments; -wt, --prompt, -bs, -tp work")
PY

# MP3, FLAC and Ogg Vorbis (miniaudio; a build without it names them and is checked below).
"$root/scripts/install_deps.sh" --no-recommends flac vorbis-tools lame >/dev/null
flac -s -f -o "$tmp/jfk.flac" "$wav" 2>/dev/null || fail "flac"
oggenc -Q -q 4 -o "$tmp/jfk.ogg" "$wav" 2>/dev/null || fail "oggenc"
lame --quiet -b 64 "$wav" "$tmp/jfk.mp3" 2>/dev/null || fail "lame"
# Resampled on the way (44.1 kHz stereo): the WAV path's averaging and resampling after decoding.
lame --quiet --resample 44.1 -m j -b 128 "$wav" "$tmp/jfk44.mp3" 2>/dev/null || fail "lame 44.1 kHz"
codecs=1
if "$zf" transcribe -m "$model" -t 2 "$tmp/jfk.flac" 2>&1 >/dev/null | grep -q "only WAV is decoded"; then
  codecs=0
  echo "note: this build has no MP3/FLAC/Ogg decoding (ZF_AUDIO_CODECS off): checked that they are refused"
  fi
if [ "$codecs" = 1 ]; then
  for f in jfk.flac jfk.ogg jfk.mp3 jfk44.mp3; do
    "$zf" transcribe -m "$model" -t 2 -of json "$tmp/$f" > "$tmp/$f.json" || fail "$f exited $?"
  done
  "$zf" transcribe -m "$model" -t 2 -of srt "$tmp/jfk.flac" > "$tmp/flac.srt" || fail "flac srt exited $?"
  "$zf" transcribe -m "$model" -t 2 -of vtt "$tmp/jfk.ogg" > "$tmp/ogg.vtt" || fail "ogg vtt exited $?"
  "$zf" transcribe -m "$model" -t 2 -of srt "$tmp/jfk.mp3" > "$tmp/mp3.srt" || fail "mp3 srt exited $?"
  python3 - "$golden" "$tmp" <<'PY' || exit 1
import json, sys
segs = json.load(open(sys.argv[1]))["greedy"]["segments"]
d = sys.argv[2]
text = "".join(s["text"] for s in segs)
# FLAC is lossless: whisper.cpp's segments exactly, as from the WAV.
j = json.loads(open(d + "/jfk.flac.json").read())
assert [(round(s["start"] * 100), round(s["end"] * 100), s["text"], s["tokens"]) for s in j["segments"]] == \
       [(s["t0"], s["t1"], s["text"], s["tokens"]) for s in segs], j["segments"]
assert abs(j["duration"] - 11) < 1e-3, j["duration"]
# Lossy codecs: the same words (the encoders' delay and padding move the end a little).
for f in ("jfk.ogg", "jfk.mp3", "jfk44.mp3"):
    j = json.loads(open(d + "/" + f + ".json").read())
    assert j["text"] == text, (f, j["text"])
    assert 10.9 < j["duration"] < 11.2, (f, j["duration"])
srt = open(d + "/flac.srt").read()
assert srt.startswith("1\n00:00:00,000 --> 00:00:08,000\nAnd so my fellow Americans"), srt
assert open(d + "/ogg.vtt").read().startswith("WEBVTT\n\n00:00:00.000 --> "), open(d + "/ogg.vtt").read()
assert "ask what you can do for your country." in open(d + "/mp3.srt").read()
print("transcribe: FLAC = whisper.cpp's segments; Ogg Vorbis and MP3 (16 and 44.1 kHz) = its text")
PY
fi

expect_error() {  # WANT_RC WORDS... -- ARGS...
  local want="$1"; shift
  local words=()
  while [ "$1" != "--" ]; do words+=("$1"); shift; done
  shift
  local err rc
  err="$("$zf" transcribe "$@" 2>&1 >/dev/null)"; rc=$?
  [ "$rc" = "$want" ] || fail "transcribe $* exited $rc, want $want: $err"
  for w in "${words[@]}"; do grep -qF -- "$w" <<<"$err" || fail "transcribe $*: '$w' not in: $err"; done
}
printf 'ID3\004\000\000\000\000\000\000' > "$tmp/a.mp3"
printf 'fLaC\000\000\000\042' > "$tmp/a.flac"
printf 'not audio at all, just some text' > "$tmp/a.txt"
printf '\000\000\000\040ftypM4A \000\000\000\000' > "$tmp/a.m4a"
{ head -c 28 "$tmp/jfk.ogg"; printf 'OpusHead'; head -c 64 /dev/zero; } > "$tmp/a.opus"
if [ "$codecs" = 1 ]; then
  expect_error 1 "MP3 file could not be decoded" "$tmp/a.mp3" -- -m "$model" "$tmp/a.mp3"
  expect_error 1 "FLAC file could not be decoded" -- -m "$model" "$tmp/a.flac"
  { head -c 200 "$tmp/jfk.ogg"; head -c 4000 /dev/urandom; } > "$tmp/bad.ogg"
  expect_error 1 "Ogg Vorbis file could not be decoded" -- -m "$model" "$tmp/bad.ogg"
  expect_error 1 "MP4/M4A audio is not supported" "MP3, FLAC and Ogg Vorbis" -- -m "$model" "$tmp/a.m4a"
  expect_error 1 "Ogg Opus audio is not supported" -- -m "$model" "$tmp/a.opus"
  expect_error 1 "not a WAV file" "nor is it MP3" -- -m "$model" "$tmp/a.txt"
else
  expect_error 1 "MP3 audio is not supported" "only WAV" "$tmp/a.mp3" -- -m "$model" "$tmp/a.mp3"
  expect_error 1 "FLAC audio is not supported" -- -m "$model" "$tmp/a.flac"
  expect_error 1 "not a WAV file" -- -m "$model" "$tmp/a.txt"
fi
expect_error 1 "cannot read" -- -m "$model" "$tmp/missing.wav"
expect_error 1 "language 'xx'" -- -m "$model" -l xx "$wav"
expect_error 1 "English-only" -- -m "$model" --translate "$wav"
expect_error 1 "GGUF" -- -m "$("$root/scripts/fetch_models.sh" smollm2)" "$wav"
expect_error 2 "--model is required" -- "$wav"
expect_error 2 "no audio FILE" -- -m "$model"
expect_error 2 "expected txt, srt, vtt or json" -- -m "$model" -of xml "$wav"
expect_error 2 "-bo" "out of range" -- -m "$model" -bo 9 "$wav"
expect_error 2 "-tp" "out of range" -- -m "$model" -tp 1.5 "$wav"
# A bad file among good ones: the others are still transcribed, the exit code says one failed.
out="$("$zf" transcribe -m "$model" -t 2 "$tmp/a.mp3" "$wav" 2>/dev/null)"; rc=$?
[ "$rc" = 1 ] || fail "a bad file among good ones exited $rc"
grep -q "ask not what your country" <<<"$out" || fail "the good file was not transcribed: $out"
echo "transcribe CLI tests passed"
