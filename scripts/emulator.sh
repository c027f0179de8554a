#!/usr/bin/env bash
# Starts and stops the local AWS emulator (ministack, pinned in
# scripts/requirements-emulator.txt) inside a project-local virtualenv.
#
#   scripts/emulator.sh up     install if needed, start on 127.0.0.1:$PORT, wait until it answers
#   scripts/emulator.sh down   stop the process this script started (by its recorded PID)
#
# State, log and PID live under .local/ so nothing leaks outside the checkout.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
venv="${VENV:-$root/.venv}"
port="${EMULATOR_PORT:-4566}"
state="$root/.local/emulator"
pidfile="$root/.local/emulator.pid"
log="$root/.local/emulator.log"
requirements="$root/scripts/requirements-emulator.txt"

running() { [[ -f $pidfile ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

answers() {
  "$venv/bin/python" - "$port" <<'PY' 2>/dev/null
import sys, urllib.request
urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/_ministack/health", timeout=2).read()
PY
}

install() {
  local stamp="$venv/.requirements"
  if [[ -x $venv/bin/ministack ]] && cmp -s "$requirements" "$stamp"; then
    return
  fi
  echo "emulator: installing ministack into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
  cp "$requirements" "$stamp"
}

up() {
  install
  mkdir -p "$state"
  if running; then
    echo "emulator: already running (pid $(cat "$pidfile")) on 127.0.0.1:$port"
    return
  fi
  if answers; then
    echo "emulator: something not started by this project already answers on 127.0.0.1:$port; stop it first" >&2
    exit 1
  fi
  # Every variable the emulator reads for its address and its storage is set
  # here: it listens on loopback only and keeps its state in the checkout.
  BIND_HOST=127.0.0.1 GATEWAY_PORT="$port" MINISTACK_HOST=127.0.0.1 \
    STATE_DIR="$state" S3_DATA_DIR="$state/s3" TMPDIR="$state" \
    MINISTACK_REGION="${AWS_REGION:-us-east-1}" \
    nohup "$venv/bin/ministack" >"$log" 2>&1 &
  echo $! >"$pidfile"
  for _ in $(seq 1 120); do
    if answers; then
      echo "emulator: ministack $(grep -o 'ministack==.*' "$requirements" | cut -d= -f3) up on 127.0.0.1:$port (pid $(cat "$pidfile"), log $log)"
      return
    fi
    if ! running; then
      echo "emulator: exited during start; last lines of $log:" >&2
      tail -n 20 "$log" >&2
      rm -f "$pidfile"
      exit 1
    fi
    sleep 0.5
  done
  echo "emulator: no answer on 127.0.0.1:$port after 60 s; see $log" >&2
  down
  exit 1
}

down() {
  if ! [[ -f $pidfile ]]; then
    echo "emulator: not started by this project (no $pidfile)"
    return
  fi
  local pid
  pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    for _ in $(seq 1 40); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.25
    done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
  fi
  rm -f "$pidfile"
  echo "emulator: stopped (pid $pid)"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
