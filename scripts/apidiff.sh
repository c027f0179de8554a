#!/usr/bin/env bash
# The API compatibility check of `make lint`: the root module's public
# packages (apidiff's module mode leaves out internal/) against the last
# release tag vX.Y.Z. With no tag yet it says so and passes. An incompatible
# change fails unless CHANGELOG.md's newest release is a breaking bump of the
# tag (a new major version; before v1, a new minor one), as semantic
# versioning asks. apidiff is pinned in tools/go.mod.
set -euo pipefail
cd "$(dirname "$0")/.."
go=${GO:-go}
module=github.com/homingdlq/homing

tag=$(git tag --list 'v[0-9]*.[0-9]*.[0-9]*' --sort=-v:refname | grep -E '^v[0-9]+\.[0-9]+\.[0-9]+$' | head -n 1 || true)
if [ -z "$tag" ]; then
	echo "apidiff: no release tag (vX.Y.Z) yet: nothing to compare the public API with"
	exit 0
fi

apidiff=$(cd tools && GOWORK=off $go tool -n apidiff)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/old"
# The tag's tree, read from the repository without touching the checkout.
git archive "$tag" | tar -x -C "$tmp/old"
# apidiff names every internal package it leaves out on stderr.
quiet() { "$@" 2> >(grep -v '^Ignoring internal package' >&2); }
(cd "$tmp/old" && GOWORK=off quiet "$apidiff" -m -w "$tmp/old.api" "$module")
report=$(GOWORK=off quiet "$apidiff" -m -incompatible "$tmp/old.api" "$module")
if [ -z "$report" ]; then
	echo "apidiff: the public API is compatible with $tag"
	exit 0
fi

# vX.Y.Z -> "X Y Z"
parts() { local v=${1#v}; echo "${v//./ }"; }
next=$(sed -n 's/^## \(v[0-9]*\.[0-9]*\.[0-9]*\).*/\1/p' CHANGELOG.md | head -n 1)
read -r tmaj tmin _ <<<"$(parts "$tag")"
breaking=false
if [ -n "$next" ]; then
	read -r nmaj nmin _ <<<"$(parts "$next")"
	if [ "$nmaj" -gt "$tmaj" ] || { [ "$tmaj" -eq 0 ] && [ "$nmaj" -eq 0 ] && [ "$nmin" -gt "$tmin" ]; }; then
		breaking=true
	fi
fi
echo "apidiff: incompatible changes of the public API since $tag:"
echo "$report"
if $breaking; then
	echo "apidiff: allowed: CHANGELOG.md's next release $next is a breaking bump of $tag (name each change under its \"Changed\")"
	exit 0
fi
echo "apidiff: CHANGELOG.md's next release is ${next:-missing}: an incompatible change needs v$((tmaj + 1)).0.0$([ "$tmaj" -eq 0 ] && echo " (before v1: v0.$((tmin + 1)).0)"), or keep the old API" >&2
exit 1
