#!/bin/sh
# Builds the C# binding with Mono's mcs (C# 7.2; the .NET-only files are not compiled here) and
# runs its NUnit tests under Mono against a freshly built library and SmolLM2. Installs Mono and
# NUnit from Debian (mono-mcs mono-runtime nunit-console libnunit-cil-dev, no recommends) when
# missing. Environment (defaults for a local build in ./build):
#   ZERFOO_LIBRARY     libzerfoo.so.0          (default: build/libzerfoo.so.0)
#   ZERFOO_CLI         the C CLI               (default: build/zerfoo)
#   ZERFOO_TEST_MODEL  SmolLM2 GGUF            (default: scripts/fetch_models.sh smollm2)
#   ZERFOO_WHISPER_MODEL  Whisper tiny.en .bin (default: scripts/fetch_models.sh whisper-tiny-en)
#   ZERFOO_VISION_MODELS  mmproj files      (default: ~/.cache/zerfoo/vision_models, written by tests/vision/make_models.sh)
#   ZERFOO_GEMMA3_MODEL   Gemma 3 270M GGUF (default: scripts/fetch_models.sh gemma3)
#   (audio projectors: tests/vision/make_audio_models.sh writes $ZERFOO_VISION_MODELS/audio)
#   ZERFOO_CSHARP_OUT  build output directory  (default: build-csharp)
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"

# Detected by package (scripts/install_deps.sh asks dpkg), without Recommends.
"$root/scripts/install_deps.sh" --no-recommends mono-mcs mono-runtime nunit-console libnunit-cil-dev

ZERFOO_LIBRARY="${ZERFOO_LIBRARY:-$root/build/libzerfoo.so.0}"
ZERFOO_CLI="${ZERFOO_CLI:-$root/build/zerfoo}"
ZERFOO_TEST_MODEL="${ZERFOO_TEST_MODEL:-$("$root/scripts/fetch_models.sh" smollm2)}"
ZERFOO_WHISPER_MODEL="${ZERFOO_WHISPER_MODEL:-$("$root/scripts/fetch_models.sh" whisper-tiny-en)}"
# VisionTests.cs: tests/vision's synthesized Gemma 3 projectors (written once, cached), Gemma 3 270M.
ZERFOO_VISION_MODELS="${ZERFOO_VISION_MODELS:-$HOME/.cache/zerfoo/vision_models}"
"$root/tests/vision/make_models.sh" "$ZERFOO_VISION_MODELS" >&2
ZERFOO_GEMMA3_MODEL="${ZERFOO_GEMMA3_MODEL:-$("$root/scripts/fetch_models.sh" gemma3)}"
# AudioTests.cs: the synthesized audio projectors (bound to SmolLM2) and a 4 s clip.
"$root/tests/vision/make_audio_models.sh" "$ZERFOO_VISION_MODELS/audio" >&2
out="${ZERFOO_CSHARP_OUT:-$root/build-csharp}"
case "$out" in /*) ;; *) out="$root/$out" ;; esac
mkdir -p "$out"

nunit=/usr/lib/cli/nunit.framework-2.6.3/nunit.framework.dll
mcs_() { echo "== mcs $*" | cut -c1-160; mcs -langversion:7.2 -warnaserror+ -nowarn:1591 "$@"; }
mcs_ -target:library -unsafe -optimize+ -out:"$out/Zerfoo.dll" "$here"/src/*.cs
cp "$here/Zerfoo.dll.config" "$out/"
# The .NET-only branch (#if NET5_0_OR_GREATER), minus the async iterator, against API stubs.
mcs_ -target:library -unsafe -define:NET5_0_OR_GREATER -out:"$out/net5-check.dll" \
  $(ls "$here"/src/*.cs | grep -v 'Session\.Async\.cs$') "$here/tests/net5_stubs.cs"
mcs_ -target:library -out:"$out/ZerfooTests.dll" -r:"$out/Zerfoo.dll" -r:"$nunit" -r:System.Core "$here/tests/ZerfooTests.cs" "$here/tests/ChatTurnTests.cs" "$here/tests/LoraTests.cs" "$here/tests/SpeechTests.cs" "$here/tests/VisionTests.cs" "$here/tests/AudioTests.cs"
mcs_ -out:"$out/LoadCheck.exe" -r:"$out/Zerfoo.dll" "$here/tests/LoadCheck.cs"
mcs_ -out:"$out/Chat.exe" -r:"$out/Zerfoo.dll" "$here/examples/Chat/Chat.cs"
mcs_ -out:"$out/Bench.exe" -r:"$out/Zerfoo.dll" "$here/bench/Bench.cs"
cp "$nunit" "$out/"

# The ABI table from the header (function kinds from the prototypes, struct layouts from the C
# compiler), and stand-in libraries with the wrong version / no zf_version.
python3 "$here/tests/abi_table.py" "$root/include/zerfoo.h" "$out/abi.txt" "${CC:-cc}"
for v in 0.0:7 1.5:1005000 none:; do
  d="$out/fake-${v%%:*}"; mkdir -p "$d"
  def=""; [ -n "${v#*:}" ] && def="-DFAKE_VERSION=${v#*:}u"
  ${CC:-cc} -shared -fPIC -fvisibility=hidden $def -Wl,-soname,libzerfoo.so.0 -o "$d/libzerfoo.so.0" "$here/tests/fake_zerfoo.c"
done

export ZERFOO_LIBRARY ZERFOO_CLI ZERFOO_TEST_MODEL ZERFOO_WHISPER_MODEL ZERFOO_VISION_MODELS ZERFOO_GEMMA3_MODEL
export ZERFOO_SPEECH_GOLDEN_DIR="$root/tests/data/golden/whisper"  # SpeechTests.cs
export ZERFOO_AUDIO_CLIP="$root/tests/data/audio/test-2-4s.wav"  # AudioTests.cs
export ZERFOO_ABI_TABLE="$out/abi.txt" ZERFOO_LOADCHECK="$out/LoadCheck.exe"
export ZERFOO_CHAT_TEMPLATES="$root/tests/data/chat_templates/templates"
export ZERFOO_FIM_SCRIPT="$root/scripts/fim_model.py"  # writes the FIM test model
export ZERFOO_LORA_SCRIPT="$root/scripts/synth_lora.py"  # writes the LoRA test adapters

echo "== example: Chat.exe (one turn from stdin)"
reply="$(echo "Name a color." | timeout 120 mono "$out/Chat.exe" "$ZERFOO_TEST_MODEL" -n 12 2>/dev/null)"
[ -n "$(echo "$reply" | tr -d '> \n')" ] || { echo "FAIL: Chat.exe printed no reply" >&2; exit 1; }

echo "== nunit-console ZerfooTests.dll"
rc=0
rm -f "$out/TestResult.xml"  # a crashed run must not report an older run's counts
# Bounded: 2 minutes per test, 10 for the run (a hang fails the stage instead of stalling CI).
timeout 600 nunit-console -nologo -labels -timeout=120000 -result="$out/TestResult.xml" "$out/ZerfooTests.dll" || rc=$?
# NUnit 2.6 counts errors and failures apart; the summary every CI reader knows:
attr() { sed -n "s/.*<test-results[^>]* $1=\"\([0-9]*\)\".*/\1/p" "$out/TestResult.xml" | head -1; }
if [ -f "$out/TestResult.xml" ]; then
  total="$(attr total)"; errors="$(attr errors)"; failures="$(attr failures)"; inconclusive="$(attr inconclusive)"
  echo "csharp: $((total - errors - failures - inconclusive)) passed, $((errors + failures)) failed, $inconclusive skipped"
fi
exit "$rc"
