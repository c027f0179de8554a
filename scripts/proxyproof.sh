#!/usr/bin/env bash
# Proves that a release can be fetched as an adopter fetches it (issue 17):
# the working tree's root module and infra, tagged VERSION (default the
# newest release of CHANGELOG.md), go into a file-based module proxy made
# with golang.org/x/mod/zip (tools/modzip); then, from an empty module with
# no workspace and no replace, against that proxy first and the default
# proxy after it (for every third-party module):
#   - go get of every public package of the root module and of infra,
#   - go install .../cmd/dlq@VERSION, and dlq --version,
#   - go build of a small CDK app that adds a lane around its own consumer,
#   - cdk synth of that app (SYNTH=0 skips it), in which the lane builds the
#     replay function from the module it was fetched with.
# It changes nothing in the repository; KEEP=1 keeps the temporary
# directory.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
go=${GO:-go}
root=github.com/homingdlq/homing
version=${VERSION:-$(sed -n 's/^## \(v[0-9]*\.[0-9]*\.[0-9]*\).*/\1/p' CHANGELOG.md | head -n 1)}
[ -n "$version" ] || { echo "proxyproof: no VERSION and no release in CHANGELOG.md" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/homing-proxyproof.XXXXXX")
if [ -z "${KEEP:-}" ]; then trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT; else echo "proxyproof: keeping $tmp"; fi
proxy=$tmp/proxy

# The working tree as git sees it (tracked files and new ones .gitignore
# does not leave out), one module at a time; zip.Create leaves out nested
# modules itself.
files() { git -C "$repo/$1" ls-files --cached --others --exclude-standard; }
(cd tools && GOWORK=off $go build -o "$tmp/modzip" ./modzip)
modzip=$tmp/modzip
files . | "$modzip" -proxy "$proxy" -module "$root" -version "$version" -dir "$repo"
files infra | "$modzip" -proxy "$proxy" -module "$root/infra" -version "$version" -dir "$repo/infra"
echo "proxyproof: $root@$version and $root/infra@$version in file://$proxy"

# The adopter: no workspace, no replace, the file proxy before the default.
export GOWORK=off GOFLAGS=-mod=mod GOPROXY="file://$proxy,$($go env GOPROXY)"
# Not in the public checksum database: the file proxy is trusted instead.
export GONOSUMDB=$root GOMODCACHE=$tmp/modcache GOBIN=$tmp/bin GIT_TERMINAL_PROMPT=0
# The lane caches the replay bootstrap it builds per version: a snapshot
# of the same VERSION must not find the last one's.
export XDG_CACHE_HOME=$tmp/cache GOCACHE=$($go env GOCACHE)
app=$tmp/app
mkdir -p "$app"
cd "$app"
$go mod init example.com/adopter >/dev/null 2>&1

# Every public package: the root's packages outside internal/, cmd/ and functions/.
packages=$(cd "$repo" && GOWORK=off GOFLAGS= GOPROXY=off GOMODCACHE= $go list -f '{{if ne .Name "main"}}{{.ImportPath}}{{end}}' ./... | grep -v '/internal/')
for p in $packages; do
	$go get "$p@$version"
done
$go get "$root/infra/deadletter@$version"
echo "proxyproof: go get of $(wc -w <<<"$packages") public packages and of infra@$version"

$go install "$root/cmd/dlq@$version"
"$GOBIN/dlq" --version
echo "proxyproof: go install $root/cmd/dlq@$version"

cat >main.go <<'GO'
// Command adopter is a team's CDK app: a lane around its own consumer.
package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"

	"github.com/homingdlq/homing/infra/deadletter"
)

func main() {
	defer jsii.Close()
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Shipping"), nil)
	consumer := awslambda.NewFunction(stack, jsii.String("Carrier"), &awslambda.FunctionProps{
		Runtime: awslambda.Runtime_NODEJS_22_X(),
		Handler: jsii.String("index.handler"),
		Code:    awslambda.Code_FromInline(jsii.String("exports.handler = async () => ({ batchItemFailures: [] });")),
		Timeout: awscdk.Duration_Seconds(jsii.Number(20)),
	})
	deadletter.NewLane(stack, "Shipments", &deadletter.LaneProps{
		Consumer: deadletter.ConsumerProps{
			Function: consumer,
			Records:  deadletter.ConsumerWritesNoRecords,
			Key:      jsii.String("shipmentId"),
		},
	})
	app.Synth(nil)
}
GO
$go mod tidy
if grep -n '^replace\|=>' go.mod; then echo "proxyproof: the app's go.mod has a replace" >&2; exit 1; fi
$go build -o /dev/null .
echo "proxyproof: go build of a CDK app with a lane around its own consumer"

if [ "${SYNTH:-1}" != 0 ]; then
	echo '{"app": "go run ."}' >cdk.json
	PATH=$repo/node_modules/.bin:$PATH CDK_DISABLE_VERSION_CHECK=1 "$repo/node_modules/.bin/cdk" synth --no-notices --ci -q
	template=cdk.out/Shipping.template.json
	grep -q '"Runtime": "provided.al2023"' "$template"
	grep -q 'KEY_EXPRESSION' "$template"
	echo "proxyproof: cdk synth: $(grep -c '"Type": "AWS::' "$template") resources; the replay function built from $root@$version"
fi
echo "proxyproof: ok"
