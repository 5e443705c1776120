#!/usr/bin/env bash
# `zerfoo bench`, the tool the comparison with llama-bench in doc/performance.md rests on: its JSON rows line
# up with llama-bench's (one row per test, the fields bench/compare_llama_cpp.sh reads), the
# numbers are sane, and bad input fails with a message naming the problem, not a crash.
#   tests/cli/bench_test.sh ZERFOO_BIN   (exit 77: the model is not fetched)
set -uo pipefail
zf="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
model="$("$root/tests/common/model_path.sh" smollm2)" || exit 77
fail() { echo "FAIL: $*"; exit 1; }

json="$("$zf" bench -m "$model" -t 2 -p 16 -n 4 -r 2 -o json)" || fail "bench exited $?"
python3 - "$json" "$(basename "$model")" <<'PY' || exit 1
import json, sys
rows = json.loads(sys.argv[1])
assert isinstance(rows, list) and len(rows) == 2, f"want a pp row and a tg row, got {rows}"
pp, tg = rows
for r in rows:
    for f in ("model_filename", "model_size", "n_threads", "n_prompt", "n_gen", "avg_ts", "stddev_ts", "samples_ts"):
        assert f in r, f"field {f} missing in {r}"
    assert r["model_filename"] == sys.argv[2], r["model_filename"]
    assert r["n_threads"] == 2, r
    assert len(r["samples_ts"]) == 2, "one sample per repetition"
    assert r["avg_ts"] > 0 and r["stddev_ts"] >= 0, r
    assert abs(sum(r["samples_ts"]) / 2 - r["avg_ts"]) < 1e-3 * r["avg_ts"], "avg_ts is the samples' mean"
    assert r["model_size"] > 50_000_000, "the file's tensor bytes"
assert (pp["n_prompt"], pp["n_gen"]) == (16, 0) and (tg["n_prompt"], tg["n_gen"]) == (0, 4), rows
print("bench JSON ok:", pp["avg_ts"], tg["avg_ts"])
PY

table="$("$zf" bench -m "$model" -t 1 -p 8 -n 0 -r 1)" || fail "markdown bench exited $?"
grep -q '| pp8 |' <<<"$table" || fail "no pp8 row in: $table"

# -d: llama-bench's depth (tokens already in the context), a row per depth and test.
json="$("$zf" bench -m "$model" -t 2 -p 8 -n 4 -d 0,64 -r 2 -o json)" || fail "bench -d exited $?"
python3 - "$json" <<'PY' || exit 1
import json, sys
rows = json.loads(sys.argv[1])
got = [(r["n_prompt"], r["n_gen"], r["n_depth"]) for r in rows]
assert got == [(8, 0, 0), (0, 4, 0), (8, 0, 64), (0, 4, 64)], got
assert all(r["avg_ts"] > 0 and len(r["samples_ts"]) == 2 for r in rows), rows
print("bench -d ok:", [round(r["avg_ts"], 1) for r in rows])
PY
table="$("$zf" bench -m "$model" -t 1 -p 0 -n 2 -d 32 -r 1)" || fail "markdown bench -d exited $?"
grep -q '| tg2 @ d32 |' <<<"$table" || fail "no 'tg2 @ d32' row in: $table"

err="$("$zf" bench -m /nonexistent/model.gguf -p 4 -n 0 -r 1 2>&1)" && fail "a missing file succeeded"
grep -q "/nonexistent/model.gguf" <<<"$err" || fail "the error does not name the file: $err"
for bad in "-t 0" "-r 0" "-p abc" "-d -1"; do
  # shellcheck disable=SC2086
  err="$("$zf" bench -m "$model" $bad 2>&1)"; rc=$?
  [ "$rc" -eq 2 ] || fail "'$bad': exit $rc, want 2 (usage error)"
  grep -q -- "error: ${bad%% *}:" <<<"$err" || fail "'$bad': the error does not name the flag: $err"
done
echo "PASS"
