#!/usr/bin/env bash
# Starts and stops LocalStack's last open-source runtime (localstack-core, pinned in
# scripts/requirements-localstack.txt) in host mode, without Docker, inside a project-local
# virtualenv: the queue contract suites' third implementation (make e2e).
#
#   scripts/localstack.sh up      install if needed, start on 127.0.0.1:$LOCALSTACK_PORT, wait until
#                                 /_localstack/init/ready says it is ready
#   scripts/localstack.sh down    stop the process this script started (by its recorded PID)
#   scripts/localstack.sh python  print the Python it would build the virtualenv with
#
# localstack-core 2026.3.0 needs Python >= 3.13 (it imports warnings.deprecated). The first
# found is used: $LOCALSTACK_PYTHON when set (then it must qualify), else python3.14, python3.13
# and python3 on PATH, then pyenv's versions, newest first. With none, `up` fails and says what
# to install: the LocalStack part never passes silently.
#
# Host mode runs SQS ($LOCALSTACK_SERVICES, default sqs; CloudFormation, EventBridge, CloudWatch
# and Logs exist too, see localstack/README.md), never DynamoDB (LocalStack would download
# Amazon's DynamoDB Local, not open source) nor Lambda (its executor needs Docker).
# State, caches, logs and the PID live under .local/ so nothing leaks outside the checkout.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
venv="${LOCALSTACK_VENV:-$root/.venv-localstack}"
port="${LOCALSTACK_PORT:-4610}"
services="${LOCALSTACK_SERVICES:-sqs}"
state="$root/.local/localstack-host"
pidfile="$root/.local/localstack.pid"
log="$root/.local/localstack.log"
requirements="$root/scripts/requirements-localstack.txt"
ready="http://127.0.0.1:$port/_localstack/init/ready"

alive() { [[ -f $pidfile ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

# qualifies PYTHON: true when PYTHON runs and is 3.13 or newer.
qualifies() {
  "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 13) else 1)' >/dev/null 2>&1
}

# find_python: print the Python to build the virtualenv with, or fail
# saying what to install.
find_python() {
  if [[ -n ${LOCALSTACK_PYTHON:-} ]]; then
    if qualifies "$LOCALSTACK_PYTHON"; then
      echo "$LOCALSTACK_PYTHON"
      return
    fi
    echo "localstack: LOCALSTACK_PYTHON=$LOCALSTACK_PYTHON is not a Python >= 3.13" >&2
    return 1
  fi
  local candidate pyenv_root
  for candidate in python3.14 python3.13 python3; do
    # A pyenv shim on PATH fails unless its version is selected: qualifies runs it.
    if command -v "$candidate" >/dev/null && qualifies "$candidate"; then
      command -v "$candidate"
      return
    fi
  done
  pyenv_root="${PYENV_ROOT:-$HOME/.pyenv}"
  if command -v pyenv >/dev/null; then pyenv_root=$(pyenv root); fi
  for candidate in $(ls "$pyenv_root/versions" 2>/dev/null | grep -E '^3\.[0-9]+' | sort -t. -k1,1nr -k2,2nr -k3,3nr); do
    if qualifies "$pyenv_root/versions/$candidate/bin/python3"; then
      echo "$pyenv_root/versions/$candidate/bin/python3"
      return
    fi
  done
  cat >&2 <<MSG
localstack: no Python >= 3.13 found (tried LOCALSTACK_PYTHON, python3.14, python3.13 and python3 on
PATH, and $pyenv_root/versions). LocalStack's host mode needs one: localstack-core 2026.3.0 imports
warnings.deprecated, new in 3.13. Install one (for example \`pyenv install 3.13\`, or your system's
python3.13 package with its venv module) or point LOCALSTACK_PYTHON at one, then run make again.
MSG
  return 1
}

# install: build the virtualenv from the pins unless it holds them already.
install() {
  local stamp="$venv/.$(basename "$requirements")" python
  if [[ -x $venv/bin/python ]] && cmp -s "$requirements" "$stamp" && qualifies "$venv/bin/python"; then
    return
  fi
  python=$(find_python)
  echo "localstack: installing localstack-core into $venv with $python ($("$python" -V 2>&1))"
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
  cp "$requirements" "$stamp"
}

# answers URL: true when URL answers 2xx within 2 s.
answers() {
  "$venv/bin/python" - "$1" <<'PY' 2>/dev/null
import sys, urllib.request
urllib.request.urlopen(sys.argv[1], timeout=2).read()
PY
}

# is_ready: true when LocalStack says its READY stage completed.
is_ready() {
  "$venv/bin/python" - "$ready" <<'PY' 2>/dev/null
import json, sys, urllib.request
sys.exit(0 if json.load(urllib.request.urlopen(sys.argv[1], timeout=2)).get("completed") is True else 1)
PY
}

up() {
  install
  mkdir -p "$state/tmp" "$state/volume" "$state/cache"
  if alive; then
    echo "localstack: already running (pid $(cat "$pidfile")) on 127.0.0.1:$port"
    return
  fi
  if answers "http://127.0.0.1:$port/_localstack/health"; then
    echo "localstack: something not started by this project already answers on 127.0.0.1:$port; stop it first" >&2
    exit 1
  fi
  # Host mode, loopback only, state in the checkout:
  #   OVERRIDE_IN_DOCKER=0       else it takes itself for its container and writes to /var/lib/localstack;
  #   GATEWAY_SERVER=hypercorn   the default server ignores GATEWAY_LISTEN's host and binds 0.0.0.0;
  #   DNS_ADDRESS=0              else it opens a DNS server on port 53;
  #   SKIP_SSL_CERT_DOWNLOAD=1, DISABLE_EVENTS=1: nothing fetched from or sent to outside;
  #   TMPDIR, LOCALSTACK_VOLUME_DIR, XDG_CACHE_HOME (plux's entry-point cache): under .local/.
  local started
  started=$(date +%s%N)
  env OVERRIDE_IN_DOCKER=0 GATEWAY_SERVER=hypercorn GATEWAY_LISTEN="127.0.0.1:$port" \
    DNS_ADDRESS=0 SKIP_SSL_CERT_DOWNLOAD=1 DISABLE_EVENTS=1 \
    SERVICES="$services" LOCALSTACK_VOLUME_DIR="$state/volume" TMPDIR="$state/tmp" \
    XDG_CACHE_HOME="$state/cache" \
    nohup "$venv/bin/python" -m localstack.runtime.main >"$log" 2>&1 &
  echo $! >"$pidfile"
  for _ in $(seq 1 240); do
    if is_ready; then
      echo "localstack: localstack-core $(grep -o '^localstack-core.*==.*' "$requirements" | cut -d= -f3) ($services) up on 127.0.0.1:$port in $(( ($(date +%s%N) - started) / 1000000 )) ms (pid $(cat "$pidfile"), log $log)"
      return
    fi
    if ! alive; then
      echo "localstack: exited during start; last lines of $log:" >&2
      tail -n 20 "$log" >&2
      rm -f "$pidfile"
      exit 1
    fi
    sleep 0.25
  done
  echo "localstack: not ready on 127.0.0.1:$port after 60 s; see $log" >&2
  down
  exit 1
}

# down: stop the process recorded in the PID file, if it is ours.
down() {
  local pid
  if ! [[ -f $pidfile ]]; then
    echo "localstack: not started by this project (no $pidfile)"
    return
  fi
  pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    for _ in $(seq 1 40); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.25
    done
    if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid"; fi
  fi
  rm -f "$pidfile"
  echo "localstack: stopped (pid $pid)"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  python) find_python ;;
  *) echo "usage: $0 up|down|python" >&2; exit 2 ;;
esac
