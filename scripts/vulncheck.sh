#!/usr/bin/env bash
# govulncheck over the Go modules (root, infra, examples) against the Go vulnerability database as
# the Go module proxy serves it, not vuln.go.dev: the module golang.org/x/vulndb
# carries every report as OSV JSON (data/osv), and its own cmd/indexdb writes
# them out in the layout that `govulncheck -db file://...` reads. Nothing here
# needs more than the Go module proxy, and a pinned snapshot needs it only once
# (it stays in the module cache; the index in .local/vulndb/<version>).
#
#   scripts/vulncheck.sh VERSION   a golang.org/x/vulndb version, or "latest"
set -euo pipefail
cd "$(dirname "$0")/.."

query=${1:?usage: scripts/vulncheck.sh <golang.org/x/vulndb version | latest>}
go=${GO:-go}

json=$($go mod download -json "golang.org/x/vulndb@$query")
field() { sed -n "s/^\t\"$1\": \"\(.*\)\",\{0,1\}\$/\1/p" <<<"$json"; }
version=$(field Version)
src=$(field Dir)
if [ -z "$version" ] || [ ! -d "$src/data/osv" ]; then
	echo "vulncheck: golang.org/x/vulndb@$query has no data/osv:" >&2
	echo "$json" >&2
	exit 1
fi

db=$PWD/.local/vulndb/$version
if [ ! -f "$db/index/db.json" ]; then
	echo "vulncheck: indexing golang.org/x/vulndb@$version into $db"
	mkdir -p "$(dirname "$db")"
	tmp=$(mktemp -d "$db.XXXXXX")
	$go run "golang.org/x/vulndb/cmd/indexdb@$version" -vulns "$src/data/osv" -out "$tmp"
	mv -T "$tmp" "$db" 2>/dev/null || rm -rf "$tmp" # another run indexed it first
fi

echo "vulncheck: $($go version | cut -d' ' -f3), database golang.org/x/vulndb@$version"
rc=0
$go tool govulncheck -db "file://$db" ./... || rc=$?
$go tool govulncheck -C infra -db "file://$db" ./... || rc=$?
$go tool govulncheck -C examples -db "file://$db" ./... || rc=$?
exit $rc
