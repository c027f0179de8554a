package deadletter

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
)

// rootModule is the module whose functions/replay the lane deploys: the
// module of the same release as this construct (infra/go.mod requires it).
const rootModule = "github.com/homingdlq/homing"

// replayPackage is the replay function's main package.
const replayPackage = rootModule + "/functions/replay"

// replayCode is the directory of the replay function's bootstrap: the
// prebuilt one of Replay.CodeDir or CodeDir/replay when the props name one,
// else one the lane builds from the root module its CDK app requires
// (never a bootstrap that happens to lie in the default CodeDir: it may be
// of another version).
func (r resolved) replayCode() (string, error) {
	prebuilt := func(dir string) (string, error) {
		abs, err := bootstrapDir(dir)
		if err != nil {
			return "", fmt.Errorf("%w (build it: `CGO_ENABLED=0 GOOS=linux GOARCH=%s go build -tags lambda.norpc -trimpath -o %s/bootstrap %s`, "+
				"`make build` in homing's repository; or set neither CodeDir nor Replay.CodeDir, and the lane builds it at synth)", err, r.goArch(), dir, replayPackage)
		}
		return abs, nil
	}
	switch {
	case r.replay.codeDir != nil:
		return prebuilt(*r.replay.codeDir)
	case r.codeDirSet:
		return prebuilt(filepath.Join(r.codeDir, "replay"))
	}
	return buildReplay(r.goArch())
}

// goArch is the GOARCH of the lane's functions.
func (r resolved) goArch() string {
	if *r.architecture.Name() == *awslambda.Architecture_X86_64().Name() {
		return "amd64"
	}
	return "arm64"
}

// goModule is what `go list -m -json` and `go mod download -json` say of a
// module.
type goModule struct {
	Path, Version, Dir string
	Sum                string // the hash of the module's content, as go.sum holds it
	Replace            *goModule
	Error              *struct{ Err string }
}

// buildReplay builds functions/replay of the root module that the CDK
// app's module (the working directory's) requires, for Lambda on arch,
// into a cache directory, and returns that directory. A version is built
// once per machine and content (a snapshot of the same version with other
// content, as a rebuilt file proxy serves, is built again); a working tree
// (a workspace or a replace) on every synth, from Go's build cache. The
// error says how to build it instead.
func buildReplay(arch string) (string, error) {
	howto := fmt.Sprintf("the lane builds the replay function from %s at synth and could not; build it yourself "+
		"(`CGO_ENABLED=0 GOOS=linux GOARCH=%s go build -tags lambda.norpc -trimpath -o <dir>/bootstrap %s` in your CDK app's module, "+
		"or unzip the release's replay_<version>_lambda_%s.zip into <dir>) and pass <dir> as ReplayProps.CodeDir", replayPackage, arch, replayPackage, arch)
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("%s: no go command on PATH: %w", howto, err)
	}
	mod, err := locateRoot(goBin)
	if err != nil {
		return "", fmt.Errorf("%s: %w", howto, err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	out := filepath.Join(cache, "homing", "replay", "devel", arch)
	if mod.Version != "" {
		// Keyed by the content too: a version names what was published,
		// and a snapshot rebuilt under the same version is another build.
		sum := sha256.Sum256([]byte(mod.Sum))
		out = filepath.Join(cache, "homing", "replay", mod.Version+"-"+hex.EncodeToString(sum[:8]), arch)
		if dir, err := bootstrapDir(out); err == nil {
			return dir, nil
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", fmt.Errorf("%s: %w", howto, err)
	}
	cmd := exec.Command(goBin, "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(out, "bootstrap"), "./functions/replay")
	cmd.Dir = mod.Dir
	// The module as published: its own go.mod and go.sum, no workspace.
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+arch, "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=-mod=readonly")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s: go build in %s: %w: %s", howto, mod.Dir, err, strings.TrimSpace(stderr.String()))
	}
	return bootstrapDir(out)
}

// locateRoot finds the root module's source as the working directory's
// module resolves it: a directory of the workspace or of a replace, or the
// required version in the module cache (downloaded if it is not there).
func locateRoot(goBin string) (goModule, error) {
	var mod goModule
	if err := goJSON(goBin, &mod, "list", "-m", "-json", rootModule); err != nil {
		return mod, err
	}
	if mod.Replace != nil {
		mod = *mod.Replace
		if mod.Version == "" && !filepath.IsAbs(mod.Path) {
			return mod, fmt.Errorf("%s is replaced by the relative directory %s, and `go list` gave no Dir", rootModule, mod.Path)
		}
	}
	if mod.Version == "" {
		if mod.Dir == "" {
			return mod, fmt.Errorf("`go list -m %s` names neither a directory nor a version", rootModule)
		}
		return mod, nil // a working tree
	}
	// A version: its directory in the module cache and the hash of its
	// content (downloaded if it is not there).
	var dl goModule
	if err := goJSON(goBin, &dl, "mod", "download", "-json", mod.Path+"@"+mod.Version); err != nil {
		return dl, err
	}
	if dl.Dir == "" || dl.Sum == "" {
		return dl, fmt.Errorf("`go mod download %s@%s` gave no directory or no hash", mod.Path, mod.Version)
	}
	dl.Version = mod.Version
	return dl, nil
}

// goJSON runs the go command with args and decodes its JSON output into v.
func goJSON(goBin string, v *goModule, args ...string) error {
	cmd := exec.Command(goBin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("go %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	if err := json.Unmarshal(out, v); err != nil {
		return fmt.Errorf("go %s: %w", strings.Join(args, " "), err)
	}
	if v.Error != nil {
		return fmt.Errorf("go %s: %s", strings.Join(args, " "), v.Error.Err)
	}
	return nil
}

// errNoBootstrap is wrapped when a code directory holds no bootstrap.
var errNoBootstrap = errors.New("no bootstrap")
