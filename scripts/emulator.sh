#!/usr/bin/env bash
# Starts and stops the local AWS emulator (ministack, pinned in
# scripts/requirements-emulator.txt) inside a project-local virtualenv.
#
#   scripts/emulator.sh up     install if needed, start on 127.0.0.1:$EMULATOR_PORT, wait until
#                              it answers; start the tax stand-in (cmd/taxstub) on
#                              127.0.0.1:$TAX_PORT beside it
#   scripts/emulator.sh down   stop both processes this script started (by their recorded PIDs)
#   scripts/emulator.sh moto-up / moto-down
#                              the same for moto's server (scripts/requirements-moto.txt, in
#                              its own virtualenv: its pins differ from ministack's) on
#                              127.0.0.1:$MOTO_PORT, the contract suites' second emulator
#   scripts/emulator.sh cfn-lint-install
#                              install cfn-lint (scripts/requirements-cfnlint.txt) into the
#                              emulator's virtualenv, its shared pins held to ministack's
#                              (scripts/cfnlint.sh runs it)
#
# State, logs and PIDs live under .local/ so nothing leaks outside the checkout.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
emulator="${EMULATOR:-ministack}"   # ministack (default, no Docker) or localstack (localstack/)
venv="${VENV:-$root/.venv}"
port="${EMULATOR_PORT:-4566}"
tax_port="${TAX_PORT:-4580}"
tax_pidfile="$root/.local/taxstub.pid"
tax_log="$root/.local/taxstub.log"
tax_bind="${TAX_BIND:-127.0.0.1}"
state="$root/.local/emulator"
pidfile="$root/.local/emulator.pid"
log="$root/.local/emulator.log"
requirements="$root/scripts/requirements-emulator.txt"
moto_venv="${MOTO_VENV:-$root/.venv-moto}"
moto_port="${MOTO_PORT:-4599}"
moto_pidfile="$root/.local/moto.pid"
moto_log="$root/.local/moto.log"
moto_requirements="$root/scripts/requirements-moto.txt"

alive() { [[ -f $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }
running() { alive "$pidfile"; }

# answers URL: true when URL answers 2xx within 2 s.
answers() {
  python3 - "$1" <<'PY' 2>/dev/null
import sys, urllib.request
urllib.request.urlopen(sys.argv[1], timeout=2).read()
PY
}

# install_into VENV REQUIREMENTS PROGRAM [CONSTRAINTS]: install REQUIREMENTS
# into VENV (held to CONSTRAINTS, the pins of what else shares VENV) unless
# PROGRAM is there from the same requirements. Each requirements file has
# its own stamp, so two of them can share a virtualenv.
install_into() {
  local venv=$1 requirements=$2 program=$3 constraints=${4:-} stamp
  stamp="$venv/.$(basename "$requirements")"
  if [[ -x $venv/bin/$program ]] && cmp -s "$requirements" "$stamp"; then
    return
  fi
  echo "emulator: installing $program into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements" ${constraints:+-c "$constraints"}
  cp "$requirements" "$stamp"
}

install() { install_into "$venv" "$requirements" ministack; }

up() {
  install
  mkdir -p "$state"
  if running; then
    echo "emulator: already running (pid $(cat "$pidfile")) on 127.0.0.1:$port"
    tax_up
    return
  fi
  if answers "http://127.0.0.1:$port/_ministack/health"; then
    echo "emulator: something not started by this project already answers on 127.0.0.1:$port; stop it first" >&2
    exit 1
  fi
  # Every variable the emulator reads for its address and its storage is set
  # here: it listens on loopback only and keeps its state in the checkout.
  # AWS_ENDPOINT_URL is what the emulator hands to the functions it runs, so
  # their SDK clients call it back instead of AWS.
  BIND_HOST=127.0.0.1 GATEWAY_PORT="$port" MINISTACK_HOST=127.0.0.1 AWS_ENDPOINT_URL="http://127.0.0.1:$port" \
    STATE_DIR="$state" S3_DATA_DIR="$state/s3" TMPDIR="$state" \
    MINISTACK_REGION="${AWS_REGION:-us-east-1}" \
    nohup "$venv/bin/ministack" >"$log" 2>&1 &
  echo $! >"$pidfile"
  for _ in $(seq 1 120); do
    if answers "http://127.0.0.1:$port/_ministack/health"; then
      echo "emulator: ministack $(grep -o 'ministack==.*' "$requirements" | cut -d= -f3) up on 127.0.0.1:$port (pid $(cat "$pidfile"), log $log)"
      tax_up
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
  stop emulator "$pidfile"
  exit 1
}

# stop NAME PIDFILE: stop the process recorded in PIDFILE, if it is ours.
stop() {
  local name=$1 file=$2 pid
  if ! [[ -f $file ]]; then
    echo "$name: not started by this project (no $file)"
    return
  fi
  pid=$(cat "$file")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    for _ in $(seq 1 40); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.25
    done
    if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid"; fi
  fi
  rm -f "$file"
  echo "$name: stopped (pid $pid)"
}

tax_up() {
  if alive "$tax_pidfile"; then
    return
  fi
  mkdir -p "$root/.local"
  (cd "$root" && go build -o "$root/.local/taxstub" ./cmd/taxstub)
  nohup "$root/.local/taxstub" -addr "$tax_bind:$tax_port" >"$tax_log" 2>&1 &
  echo $! >"$tax_pidfile"
  for _ in $(seq 1 40); do
    if answers "http://127.0.0.1:$tax_port/health"; then
      echo "taxstub: up on 127.0.0.1:$tax_port (pid $(cat "$tax_pidfile"), log $tax_log)"
      return
    fi
    sleep 0.25
  done
  echo "taxstub: no answer on 127.0.0.1:$tax_port; see $tax_log" >&2
  exit 1
}

moto_up() {
  install_into "$moto_venv" "$moto_requirements" moto_server
  mkdir -p "$root/.local"
  local health="http://127.0.0.1:$moto_port/moto-api/data.json"
  if alive "$moto_pidfile"; then
    echo "moto: already running (pid $(cat "$moto_pidfile")) on 127.0.0.1:$moto_port"
    return
  fi
  if answers "$health"; then
    echo "moto: something not started by this project already answers on 127.0.0.1:$moto_port; stop it first" >&2
    exit 1
  fi
  # Loopback only; moto keeps its state in memory.
  nohup "$moto_venv/bin/moto_server" -H 127.0.0.1 -p "$moto_port" >"$moto_log" 2>&1 &
  echo $! >"$moto_pidfile"
  for _ in $(seq 1 120); do
    if answers "$health"; then
      echo "moto: $(grep -o '^moto.*==.*' "$moto_requirements") up on 127.0.0.1:$moto_port (pid $(cat "$moto_pidfile"), log $moto_log)"
      return
    fi
    if ! alive "$moto_pidfile"; then
      echo "moto: exited during start; last lines of $moto_log:" >&2
      tail -n 20 "$moto_log" >&2
      rm -f "$moto_pidfile"
      exit 1
    fi
    sleep 0.25
  done
  echo "moto: no answer on 127.0.0.1:$moto_port after 30 s; see $moto_log" >&2
  stop moto "$moto_pidfile"
  exit 1
}

compose() { docker compose -f "$root/localstack/docker-compose.yml" "$@"; }

localstack_up() {
  mkdir -p "$root/.local/localstack"
  compose up -d
  for _ in $(seq 1 120); do
    if answers "http://127.0.0.1:$port/_localstack/health"; then
      echo "emulator: LocalStack up on 127.0.0.1:$port"
      tax_up
      return
    fi
    sleep 1
  done
  echo "emulator: LocalStack did not answer on 127.0.0.1:$port; see: docker compose -f localstack/docker-compose.yml logs" >&2
  exit 1
}

down() {
  stop taxstub "$tax_pidfile"
  if [[ $emulator == localstack ]]; then
    compose down
    return
  fi
  stop emulator "$pidfile"
}

case "${1:-}" in
  up) if [[ $emulator == localstack ]]; then localstack_up; else up; fi ;;
  down) down ;;
  moto-up) moto_up ;;
  moto-down) stop moto "$moto_pidfile" ;;
  cfn-lint-install) install_into "$venv" "$root/scripts/requirements-cfnlint.txt" cfn-lint "$requirements" ;;
  *) echo "usage: $0 up|down|moto-up|moto-down|cfn-lint-install" >&2; exit 2 ;;
esac
