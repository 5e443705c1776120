#!/bin/sh
# CI stage: three `zerfoo serve` replicas on loopback behind nginx (issue #20 §3), driven by
# tests/serve/test_replicas.py (standard library only): requests spread over the three, a
# SIGKILLed replica's streams fail cleanly while the others keep serving, a SIGTERMed replica
# finishes its streams and exits 0. nginx runs as this user from a temporary config (no service).
# Installs nginx (Debian) if missing, without starting the system service.
# Environment: ZERFOO_CLI (default build/zerfoo), ZERFOO_TEST_MODEL (default: SmolLM2 via
# scripts/fetch_models.sh).
set -eu
# shellcheck source=tests/serve/env.sh
. "$(dirname "$0")/env.sh"
NGINX=/usr/sbin/nginx
# Detected by package (dpkg), like every other tool the stages install.
if ! dpkg-query -W -f='${Status}' nginx 2>/dev/null | grep -q "install ok installed"; then
  # The package's postinst starts the system service unless policy-rc.d forbids it (Docker's
  # Debian images ship one that does): forbid it for the install if there is none.
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  policy=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | $sudo tee /usr/sbin/policy-rc.d >/dev/null
    $sudo chmod +x /usr/sbin/policy-rc.d
    policy=1
  fi
  "$root/scripts/install_deps.sh" nginx || { [ -z "$policy" ] || $sudo rm -f /usr/sbin/policy-rc.d; exit 1; }
  [ -z "$policy" ] || $sudo rm -f /usr/sbin/policy-rc.d
fi
export NGINX
exec timeout 240 "${PYTHON:-python3}" "$here/test_replicas.py"
