#!/usr/bin/env bash
# `zerfoo transcribe` (issue #47 §2): tiny.en on jfk.wav gives whisper.cpp 1.8.5's greedy
# transcript (tests/data/golden/whisper/tiny.en-jfk.json) in each output format, several files
# in one run, and bad input fails with a message naming the problem.
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
print("transcribe: txt, srt, vtt, json and two files match whisper.cpp's segments")
PY

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
expect_error 1 "MP3 audio is not supported" "only WAV" "$tmp/a.mp3" -- -m "$model" "$tmp/a.mp3"
expect_error 1 "FLAC" -- -m "$model" "$tmp/a.flac"
expect_error 1 "not a WAV file" -- -m "$model" "$tmp/a.txt"
expect_error 1 "cannot read" -- -m "$model" "$tmp/missing.wav"
expect_error 1 "language 'xx'" -- -m "$model" -l xx "$wav"
expect_error 1 "English-only" -- -m "$model" --translate "$wav"
expect_error 1 "GGUF" -- -m "$("$root/scripts/fetch_models.sh" smollm2)" "$wav"
expect_error 2 "--model is required" -- "$wav"
expect_error 2 "no audio FILE" -- -m "$model"
expect_error 2 "expected txt, srt, vtt or json" -- -m "$model" -of xml "$wav"
# A bad file among good ones: the others are still transcribed, the exit code says one failed.
out="$("$zf" transcribe -m "$model" -t 2 "$tmp/a.mp3" "$wav" 2>/dev/null)"; rc=$?
[ "$rc" = 1 ] || fail "a bad file among good ones exited $rc"
grep -q "ask not what your country" <<<"$out" || fail "the good file was not transcribed: $out"
echo "transcribe CLI tests passed"
