package consumer_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/homingdlq/homing/internal/sample/consumer"
)

// TestSampleTable pins docs/SAMPLE.md's configuration table, the first
// table after its "## Configuration" heading, to consumer.Settings.
func TestSampleTable(t *testing.T) {
	const path = "../../../docs/SAMPLE.md"
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(src)
	h := strings.Index(doc, "\n## Configuration\n")
	i := strings.Index(doc[max(h, 0):], "\n| variable |")
	if h < 0 || i < 0 {
		t.Fatalf("%s has no table under ## Configuration", path)
	}
	start := h + i + 1
	end := start
	for end < len(doc) && doc[end] == '|' {
		end += strings.IndexByte(doc[end:], '\n') + 1
	}
	var b strings.Builder
	b.WriteString("| variable | default | meaning |\n|---|---|---|\n")
	for _, s := range consumer.Settings {
		r := s.Row()
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", r.Env, r.Default, r.Doc)
	}
	if doc[start:end] == b.String() {
		return
	}
	if !*update {
		t.Fatalf("%s's configuration table differs from consumer.Settings (go test ./internal/sample/consumer -run TestSampleTable -update); want:\n%s", path, b.String())
	}
	if err := os.WriteFile(path, []byte(doc[:start]+b.String()+doc[end:]), 0o644); err != nil {
		t.Fatal(err)
	}
}
