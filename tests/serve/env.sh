# Sourced by the serve test stages (test.sh, replicas.sh): sets here, root, ZERFOO_CLI (default
# build/zerfoo) and ZERFOO_TEST_MODEL (default: SmolLM2 via scripts/fetch_models.sh), exported,
# and fails unless the CLI was built with `serve`.
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
ZERFOO_CLI="${ZERFOO_CLI:-$root/build/zerfoo}"
ZERFOO_TEST_MODEL="${ZERFOO_TEST_MODEL:-$("$root/scripts/fetch_models.sh" smollm2)}"
export ZERFOO_CLI ZERFOO_TEST_MODEL

if ! "$ZERFOO_CLI" serve --help >/dev/null 2>&1; then
  echo "tests/serve: '$ZERFOO_CLI serve' is missing (was libcpp-httplib-dev installed at configure time?)" >&2
  exit 1
fi
