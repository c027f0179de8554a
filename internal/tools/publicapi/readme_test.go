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
// gofmt writes it.
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
	files := map[string]string{
		"main.go": src,
		"go.mod":  "module example.com/shipping\n\ngo 1.26\n\nrequire " + module + " v0.0.0\n\nreplace " + module + " => " + root + "\n",
		"go.sum":  string(sum),
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
	cmd := exec.Command(goBin, "build", "-o", os.DevNull, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("README's consumer does not build: %v\n%s", err, out.String())
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
