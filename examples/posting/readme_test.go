package posting_test

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/homingdlq/homing/examples/posting"
)

var update = flag.Bool("update", false, "rewrite the README's configuration table from posting.Settings")

// TestReadmeTable pins the README's configuration table to posting.Settings.
func TestReadmeTable(t *testing.T) {
	const path = "../README.md"
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(src)
	h := strings.Index(readme, "\n## Configuration\n")
	if h < 0 {
		t.Fatal("README.md has no ## Configuration")
	}
	start := h + strings.Index(readme[h:], "\n| variable |") + 1
	end := start
	for end < len(readme) && readme[end] == '|' {
		end += strings.IndexByte(readme[end:], '\n') + 1
	}
	var b strings.Builder
	b.WriteString("| variable | default | meaning |\n|---|---|---|\n")
	for _, s := range posting.Settings {
		r := s.Row()
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", r.Env, r.Default, r.Doc)
	}
	if readme[start:end] == b.String() {
		return
	}
	if !*update {
		t.Fatalf("README.md's configuration table differs from posting.Settings (go test ./posting -run TestReadmeTable -update); want:\n%s", b.String())
	}
	if err := os.WriteFile(path, []byte(readme[:start]+b.String()+readme[end:]), 0o644); err != nil {
		t.Fatal(err)
	}
}
