package deadletter_test

import (
	"debug/elf"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/homingdlq/homing/infra/deadletter"
)

// TestReplayBuiltFromModule: with no code directory (an adopter's CDK app
// around its own consumer), the lane builds functions/replay of the root
// module the app resolves (here the workspace's working tree) for Lambda
// on arm64, and deploys that bootstrap.
func TestReplayBuiltFromModule(t *testing.T) {
	if _, err := os.Stat(filepath.Join(deadletter.DefaultCodeDir, "replay", "bootstrap")); err == nil {
		t.Fatalf("%s/replay/bootstrap exists relative to the test's directory: the lane would take it instead of building", deadletter.DefaultCodeDir)
	}
	stack := newStack()
	p := &deadletter.LaneProps{Consumer: deadletter.ConsumerProps{Function: nodeConsumer(stack), Records: deadletter.ConsumerWritesNoRecords}}
	s := synthesize(stack, deadletter.NewLane(stack, "Shipments", p))
	code := props(s.resources[s.ref(s.lane.Replay().FunctionName())])["Code"].(map[string]any)
	key, _ := code["S3Key"].(string)
	hash, ok := strings.CutSuffix(key, ".zip")
	if !ok {
		t.Fatalf("the replay function's Code is %s, want an asset", mustJSON(code))
	}
	outdir := *awscdk.Stage_Of(s.stack).Outdir()
	bootstrap := filepath.Join(outdir, "asset."+hash, "bootstrap")
	f, err := elf.Open(bootstrap)
	if err != nil {
		t.Fatalf("the deployed asset's bootstrap: %v", err)
	}
	defer f.Close()
	if f.Machine != elf.EM_AARCH64 || f.OSABI != elf.ELFOSABI_NONE && f.OSABI != elf.ELFOSABI_LINUX {
		t.Errorf("bootstrap is %v/%v, want a linux arm64 executable", f.Machine, f.OSABI)
	}
	if f.Section(".go.buildinfo") == nil {
		t.Error("bootstrap has no Go build information: not a Go build")
	}
}

// TestReplayBuildFails: when the lane can neither find nor build the replay
// function, the error says what to run and which prop takes the result.
func TestReplayBuildFails(t *testing.T) {
	t.Setenv("GOFLAGS", "-mod=nonsense")
	stack := newStack()
	p := &deadletter.LaneProps{Consumer: deadletter.ConsumerProps{Function: nodeConsumer(stack), Records: deadletter.ConsumerWritesNoRecords}}
	err := panicOf(func() { deadletter.NewLane(stack, "Shipments", p) })
	if err == nil || errors.Is(err, deadletter.ErrInvalidProps) {
		t.Fatalf("NewLane panicked with %v, want the replay code's error", err)
	}
	for _, want := range []string{
		"replay code: the lane builds the replay function from github.com/homingdlq/homing/functions/replay at synth and could not",
		"CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go build -tags lambda.norpc -trimpath -o <dir>/bootstrap github.com/homingdlq/homing/functions/replay",
		"replay_<version>_lambda_arm64.zip",
		"pass <dir> as ReplayProps.CodeDir",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q\nwant it to contain %q", err, want)
		}
	}
}

// TestReplayPrebuilt: ReplayProps.CodeDir is taken as it is, beside a
// CodeDir for the consumer.
func TestReplayPrebuilt(t *testing.T) {
	dir := filepath.Join(testRoot, "prebuilt")
	if err := writeBootstrap(dir, "replay"); err != nil {
		t.Fatal(err)
	}
	p := baseProps()
	p.Replay.CodeDir = jsii.String(filepath.Join(dir, "replay"))
	synth(p)
	p.Replay.CodeDir = jsii.String(filepath.Join(testRoot, "missing"))
	err := panicOf(func() { synth(p) })
	if err == nil || !strings.Contains(err.Error(), "replay code: no bootstrap in "+filepath.Join(testRoot, "missing")+": ") {
		t.Errorf("NewLane with a Replay.CodeDir without bootstrap: %v", err)
	}
}

// TestReplayIgnoresAStrayBootstrap: with no CodeDir, a bootstrap lying in
// the default CodeDir beside the app (../bin/replay, left by some build of
// another version) is not deployed: the lane builds the version the app
// requires (here it cannot, and says so).
func TestReplayIgnoresAStrayBootstrap(t *testing.T) {
	dir := t.TempDir()
	if err := writeBootstrap(filepath.Join(dir, "bin"), "replay"); err != nil {
		t.Fatal(err)
	}
	app := filepath.Join(dir, "app")
	if err := os.Mkdir(app, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(app) // ../bin/replay/bootstrap is the stray
	t.Setenv("GOFLAGS", "-mod=nonsense")
	stack := newStack()
	p := &deadletter.LaneProps{Consumer: deadletter.ConsumerProps{Function: nodeConsumer(stack), Records: deadletter.ConsumerWritesNoRecords}}
	err := panicOf(func() { deadletter.NewLane(stack, "Shipments", p) })
	if err == nil {
		t.Fatalf("NewLane deployed %s/replay/bootstrap, a bootstrap of unknown version, instead of building %s", deadletter.DefaultCodeDir, deadletter.ReplayPackage)
	}
	if !strings.Contains(err.Error(), "the lane builds the replay function from "+deadletter.ReplayPackage+" at synth and could not") {
		t.Errorf("NewLane: %v, want the build's error", err)
	}
}
