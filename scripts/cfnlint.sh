#!/usr/bin/env bash
# cfn-lint on every template the CDK app synthesizes: both profiles' cloud
# assemblies (aws and local) and the pipeline stack's. cfn-lint is pinned in
# scripts/requirements-cfnlint.txt and installed into the emulator's
# project-local virtualenv (scripts/emulator.sh cfn-lint-install); its
# configuration, with the reason of each suppressed check, is infra/.cfnlintrc.
# Fails on any error or warning that the configuration does not suppress.
#
# The functions' code does not change a template but for its asset hash, so
# the app synthesizes with placeholder bootstraps: no `make build` needed.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
venv="${VENV:-$root/.venv}"
go="${GO:-go}"

"$root/scripts/emulator.sh" cfn-lint-install

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for function in consumer replay payments; do
  mkdir -p "$work/bin/$function"
  printf '#!/bin/sh\n' >"$work/bin/$function/bootstrap"
  chmod +x "$work/bin/$function/bootstrap"
done

# One build, two syntheses (the app is what `cdk synth` runs: cdk.json).
(cd "$root/infra" && "$go" build -o "$work/app" .)
synth() { # PROFILE CONTEXT_JSON
  (cd "$root/infra" && env -u CDK_DEFAULT_ACCOUNT -u CDK_DEFAULT_REGION -u HOMING_PROFILE -u TAX_SERVICE_URL \
    HOMING_CODE_DIR="$work/bin" CDK_OUTDIR="$work/$1" CDK_CONTEXT_JSON="$2" "$work/app")
}
synth aws '{"profile":"aws","pipelineRepository":"example/homing"}'
synth local '{"profile":"local"}'

templates=("$work"/aws/*.template.json "$work"/local/*.template.json)
echo "cfn-lint $("$venv/bin/cfn-lint" --version | cut -d' ' -f2): ${#templates[@]} templates (aws: Homing, HomingPipeline; local: Homing)"
"$venv/bin/cfn-lint" --config-file "$root/infra/.cfnlintrc" --non-zero-exit-code warning -- "${templates[@]}"
echo "cfn-lint: no errors, no unsuppressed warnings"
