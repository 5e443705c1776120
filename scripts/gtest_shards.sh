#!/usr/bin/env bash
# Runs a GoogleTest binary as N shards in parallel processes (GTEST_TOTAL_SHARDS /
# GTEST_SHARD_INDEX: gtest splits the tests left after --gtest_filter between the shards), then
# prints each shard's output in order and fails if any shard failed.
#   scripts/gtest_shards.sh N COMMAND [ARGS...]      e.g. N=2 on a 2-core CI machine
# Why: the sanitizer stages run their test binaries under ASan/TSan mostly on one thread; two
# processes use both cores (the tests already run concurrently under ctest, so they share no
# fixed paths). COMMAND may be a wrapper (qemu-aarch64 ... BINARY): the variables reach it.
set -uo pipefail
n="${1:?usage: gtest_shards.sh N COMMAND [ARGS...]}"
shift
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
pids=()
for ((i = 0; i < n; ++i)); do
  GTEST_TOTAL_SHARDS="$n" GTEST_SHARD_INDEX="$i" "$@" > "$dir/$i.log" 2>&1 &
  pids+=($!)
done
rc=0
for ((i = 0; i < n; ++i)); do
  wait "${pids[$i]}" || rc=1
  echo "---- shard $((i + 1))/$n"
  cat "$dir/$i.log"
done
[ "$rc" = 0 ] || echo "gtest_shards: a shard failed (see above)"
exit "$rc"
