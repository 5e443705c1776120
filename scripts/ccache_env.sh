# Sourced by scripts/test.sh (and usable by hand: `. scripts/ccache_env.sh`): every CMake build
# configured after it compiles through ccache, so a test run after an earlier one (CI right after
# a session, a second rehearsal, another clone) recompiles only what changed. The cache lives
# under ~/.cache/zerfoo/ccache (scripts/fresh_machine_check.sh removes it: a rehearsal is timed
# cold). Paths are hashed relative to the checkout (CCACHE_BASEDIR, CCACHE_NOHASHDIR), so clones
# in other folders hit the same entries. Without ccache (install failed) builds run as before.
if command -v ccache >/dev/null 2>&1; then
  export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/zerfoo/ccache}"
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
  export CCACHE_NOHASHDIR=true
  export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-6G}"
  # CMake (>= 3.17) takes these as the default compiler launchers of a new build directory.
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
  mkdir -p "$CCACHE_DIR"
fi
