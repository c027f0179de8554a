package publicapi

import (
	"bytes"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// readmeConsumer is the heading line of the README's consumer, a whole
// program an adopter copies.
const readmeConsumer = "A consumer, whole:"

// TestReadmeConsumerCompiles builds the README's consumer as it is written,
// imports included, in a module of its own that requires this one (through
// a replace to the working tree, from the module cache only: no network),
// as an adopter's module would: a renamed API or a missing import fails
// here instead of in the adopter's first build. The block must also be as
// gofmt writes it. Then it runs testdata/readme/main_test.go beside it:
// the block's Handler on batchtest.Lane, with a conflicting duplicate, a
// body that is not JSON and one without the key.
func TestReadmeConsumerCompiles(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	src := readmeBlock(t, filepath.Join(root, "README.md"), readmeConsumer)
	formatted, err := format.Source([]byte(src))
	if err != nil {
		t.Fatalf("README's consumer does not parse: %v", err)
	}
	if string(formatted) != src {
		t.Errorf("README's consumer is not gofmt-formatted; gofmt writes it as:\n%s", formatted)
	}
	dir := t.TempDir()
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	lane, err := os.ReadFile("testdata/readme/main_test.go")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"main.go":      src,
		"main_test.go": string(lane),
		"go.mod":       "module example.com/shipping\n\ngo 1.26\n\nrequire " + module + " v0.0.0\n\nreplace " + module + " => " + root + "\n",
		"go.sum":       string(sum),
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("find the go command: %v", err)
	}
	for _, step := range []struct{ what, args string }{
		{"build", "build -o " + os.DevNull + " ."},
		{"pass its test on the lane in memory", "test -count=1 ."},
	} {
		cmd := exec.Command(goBin, strings.Fields(step.args)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local")
		var out bytes.Buffer
		cmd.Stdout = &out
		cmd.Stderr = &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("README's consumer does not %s: %v\n%s", step.what, err, out.String())
		}
	}
}

// readmeBlock returns the first ```go block after the line that begins
// with heading.
func readmeBlock(t *testing.T, path, heading string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	at := strings.Index(text, "\n"+heading)
	if at < 0 {
		t.Fatalf("%s has no line beginning %q", path, heading)
	}
	_, rest, ok := strings.Cut(text[at:], "\n```go\n")
	if !ok {
		t.Fatalf("%s: no ```go block after %q", path, heading)
	}
	block, _, ok := strings.Cut(rest, "\n```\n")
	if !ok {
		t.Fatalf("%s: the block after %q does not end", path, heading)
	}
	return block + "\n"
}

// TestReadmeUsePrerequisites checks the README's "To use the packages"
// table against the modules: its Go row names the root module's go line,
// its CDK CLI row the aws-cdk-lib that infra/go.mod requires, and it asks
// for nothing only developing homing needs (CONTRIBUTING.md lists that).
func TestReadmeUsePrerequisites(t *testing.T) {
	readme := readFile(t, "../../../README.md")
	start := strings.Index(readme, "\nTo use the packages:\n")
	if start < 0 {
		t.Fatal(`README.md has no line "To use the packages:"`)
	}
	end := strings.Index(readme[start+1:], "\n\n```")
	if end < 0 {
		t.Fatal(`README.md: no code block after "To use the packages:"`)
	}
	end += start + 1
	use := readme[start:end]
	goLine := modLine(t, readFile(t, "../../../go.mod"), "go ")
	major, _, _ := strings.Cut(strings.TrimPrefix(goLine, "go "), ".")
	minor := strings.Split(strings.TrimPrefix(goLine, "go "), ".")[1]
	if want := "| Go | " + major + "." + minor + " or later |"; !strings.Contains(use, want) || !strings.Contains(use, "`"+goLine+"`") {
		t.Errorf("the Go row does not say %q and name go.mod's %q", want, goLine)
	}
	cdk := modLine(t, readFile(t, "../../../infra/go.mod"), "github.com/aws/aws-cdk-go/awscdk/v2 ")
	version := strings.TrimPrefix(strings.Fields(cdk)[1], "v")
	if !strings.Contains(use, "`aws-cdk-lib` "+version) {
		t.Errorf("the CDK CLI row does not name aws-cdk-lib %s, which infra/go.mod requires", version)
	}
	for _, dev := range []string{"| Python", "| GNU make", "| npm"} {
		if strings.Contains(use, dev) {
			t.Errorf("using the packages asks for %q, which only developing homing needs", dev)
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// modLine returns the first line of a go.mod that starts with prefix,
// trimmed (a require inside a block included).
func modLine(t *testing.T, mod, prefix string) string {
	t.Helper()
	for line := range strings.Lines(mod) {
		if l := strings.TrimSpace(line); strings.HasPrefix(l, prefix) {
			return l
		}
	}
	t.Fatalf("go.mod has no line %q", prefix)
	return ""
}
