#!/usr/bin/env bash
# Runs the real coding agents against a running `zerfoo serve`: Claude Code (`claude -p`, Anthropic
# Messages) and Codex CLI (`codex exec`, OpenAI Responses), each for two turns of one conversation
# with a prompt that asks for a shell tool call. Prints each client's output, exit code and the
# wall time of each turn. A one-time demonstration, NOT part of CI (it downloads the clients).
#
#   tests/serve/agents/run_agents.sh [BASE_URL [MODEL]]
#     BASE_URL  default $ZERFOO_URL or http://127.0.0.1:8091 (no /v1 suffix)
#     MODEL     default $ZERFOO_MODEL or the first id GET /v1/models lists (serve's --alias)
#   env: AGENT_TIMEOUT (s per turn, default 300), AGENTS (default "claude codex"),
#        CLAUDE_TOOLS (default "Bash": the full default tool list is ~17k SmolLM2 tokens; set
#        "default" for all of them), ZERFOO_CTX (tells Codex the context window),
#        AGENTS_CACHE (default ~/.cache/zerfoo/agents).
# The agents run in a scratch git repository under a temp dir; their config/state lives there too.
set -u

URL="${1:-${ZERFOO_URL:-http://127.0.0.1:8091}}"
URL="${URL%/}"; URL="${URL%/v1}"
MODEL="${2:-${ZERFOO_MODEL:-}}"
TIMEOUT="${AGENT_TIMEOUT:-300}"
AGENTS="${AGENTS:-claude codex}"
CACHE="${AGENTS_CACHE:-$HOME/.cache/zerfoo/agents}"
CLAUDE_VERSION=2.1.197   # versions the findings in FINDINGS.md were recorded with
CODEX_VERSION=0.171.0
PROMPT1='Use the Bash tool to run `echo hello`, then tell me what it printed.'
PROMPT2='Now use the Bash tool to run `echo bye`, then tell me what it printed.'

install_agents() {
  local bin="$CACHE/node_modules/.bin"
  if [[ -x "$bin/claude" && -x "$bin/codex" ]] && "$bin/claude" --version >/dev/null 2>&1; then
    return 0
  fi
  command -v npm >/dev/null || { echo "run_agents: npm is required" >&2; exit 2; }
  mkdir -p "$CACHE"
  npm install --prefix "$CACHE" --no-fund --no-audit \
    "@anthropic-ai/claude-code@$CLAUDE_VERSION" "@openai/codex@$CODEX_VERSION" >&2 || exit 2
  # npm may skip the postinstall that puts the native claude binary in place; run it ourselves.
  (cd "$CACHE/node_modules/@anthropic-ai/claude-code" && node install.cjs) >&2 || exit 2
}

if ! curl -fsS -m 5 -o /dev/null "$URL/v1/models"; then
  echo "run_agents: no server answers $URL/v1/models (start zerfoo serve first)" >&2
  exit 2
fi
if [[ -z "$MODEL" ]]; then
  MODEL="$(curl -fsS -m 5 "$URL/v1/models" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["data"][0]["id"])')" || {
    echo "run_agents: could not read a model id from $URL/v1/models; pass MODEL" >&2; exit 2; }
fi
install_agents
CLAUDE="$CACHE/node_modules/.bin/claude"
CODEX="$CACHE/node_modules/.bin/codex"

# Not under /tmp: Codex refuses to set up its helper binaries in a CODEX_HOME there.
mkdir -p "$CACHE/runs"
scratch="$(mktemp -d "$CACHE/runs/run.XXXXXX")"
work="$scratch/work"
mkdir -p "$work" "$scratch/claude" "$scratch/codex"
git -C "$work" init -q && echo "scratch repository for run_agents.sh" > "$work/README.md" &&
  git -C "$work" add README.md &&
  git -C "$work" -c user.name=zerfoo -c user.email=zerfoo@localhost commit -qm init

# No telemetry, update checks or error reports from either client.
export DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1 DISABLE_ERROR_REPORTING=1 \
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_BUG_COMMAND=1
export CLAUDE_CONFIG_DIR="$scratch/claude" CODEX_HOME="$scratch/codex"

cat > "$CODEX_HOME/config.toml" <<EOF
model = "$MODEL"
model_provider = "zerfoo"
check_for_update_on_startup = false
${ZERFOO_CTX:+model_context_window = $ZERFOO_CTX}

[model_providers.zerfoo]
name = "zerfoo"
base_url = "$URL/v1"
wire_api = "responses"
env_key = "ZERFOO_AGENT_KEY"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false
EOF

declare -a summary
# run NAME CMD...: one bounded client run in the scratch repo; prints output, exit code, time.
run() {
  local name="$1"; shift
  local t0 t1 rc out
  echo "=== $name: $*"
  t0=$(date +%s.%N)
  out="$(cd "$work" && timeout "$TIMEOUT" "$@" </dev/null 2>&1)"; rc=$?
  t1=$(date +%s.%N)
  printf '%s\n' "$out"
  local secs; secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
  echo "=== $name: exit $rc in ${secs}s$([[ $rc == 124 ]] && echo " (timed out after ${TIMEOUT}s)")"
  summary+=("$(printf '%-14s exit %-3s %7ss' "$name" "$rc" "$secs")")
}

for agent in $AGENTS; do
  case "$agent" in
    claude)
      tools=(--tools "${CLAUDE_TOOLS:-Bash}")
      [[ "${CLAUDE_TOOLS:-Bash}" == default ]] && tools=()
      common=(--model "$MODEL" "${tools[@]}" --allowedTools Bash)
      ANTHROPIC_BASE_URL="$URL" ANTHROPIC_API_KEY=zerfoo \
        run claude-turn1 "$CLAUDE" -p "$PROMPT1" "${common[@]}"
      ANTHROPIC_BASE_URL="$URL" ANTHROPIC_API_KEY=zerfoo \
        run claude-turn2 "$CLAUDE" -p --continue "$PROMPT2" "${common[@]}"
      ;;
    codex)
      # danger-full-access: the scratch repo is throwaway and container kernels often lack the
      # sandbox (landlock/seccomp) that the default read-only mode needs.
      ZERFOO_AGENT_KEY=zerfoo run codex-turn1 "$CODEX" exec --skip-git-repo-check \
        -s danger-full-access "$PROMPT1"
      ZERFOO_AGENT_KEY=zerfoo run codex-turn2 "$CODEX" exec --skip-git-repo-check \
        -s danger-full-access resume --last "$PROMPT2"
      ;;
    *) echo "run_agents: unknown agent '$agent' (claude, codex)" >&2; exit 2 ;;
  esac
done

echo
echo "=== summary ($("$CLAUDE" --version 2>/dev/null | head -1); $("$CODEX" --version 2>/dev/null); $URL, model $MODEL)"
printf '%s\n' "${summary[@]}"
echo "(scratch dir with the agents' state: $scratch)"
