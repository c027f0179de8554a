package settings_test

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/homingdlq/homing/internal/settings"
)

var update = flag.Bool("update", false, "rewrite docs/CONFIGURATION.md's tables from the declarations")

// docs/CONFIGURATION.md's tables (once the README's, hence the test's
// name) are generated from the declarations: the first table under each
// heading below must be what table() writes.
// `go test ./internal/settings -run TestReadmeTables -update` rewrites them.
func TestReadmeTables(t *testing.T) {
	const path = "../../docs/CONFIGURATION.md"
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(src)
	for _, c := range []struct {
		heading string
		list    []settings.Setting
	}{
		{"## Consumer configuration", settings.Consumer},
		{"## Replay configuration", settings.Replay},
	} {
		start, end, err := tableAfter(readme, c.heading)
		if err != nil {
			t.Fatal(err)
		}
		want := table(c.list)
		if readme[start:end] == want {
			continue
		}
		if *update {
			readme = readme[:start] + want + readme[end:]
			continue
		}
		t.Errorf("docs/CONFIGURATION.md's table under %q differs from the declarations in internal/settings/ (run `go test ./internal/settings -run TestReadmeTables -update`); want:\n%s", c.heading, want)
	}
	if *update && readme != string(src) {
		if err := os.WriteFile(path, []byte(readme), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// table writes a configuration table in Markdown, one row per setting.
func table(list []settings.Setting) string {
	var b strings.Builder
	b.WriteString("| variable | default | meaning |\n|---|---|---|\n")
	for _, s := range list {
		r := s.Row()
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", r.Env, r.Default, r.Doc)
	}
	return b.String()
}

// tableAfter finds the first table (consecutive lines starting with '|')
// after heading, as byte offsets of its first line and past its last.
func tableAfter(doc, heading string) (start, end int, err error) {
	h := strings.Index(doc, "\n"+heading+"\n")
	if h < 0 {
		return 0, 0, fmt.Errorf("the document has no heading %q", heading)
	}
	i := strings.Index(doc[h:], "\n| variable |")
	if i < 0 {
		return 0, 0, fmt.Errorf("the document has no table under %q", heading)
	}
	start = h + i + 1
	if next := strings.Index(doc[h+1:], "\n## "); next >= 0 && h+1+next < start {
		return 0, 0, fmt.Errorf("the document has no table under %q before the next heading", heading)
	}
	end = start
	for end < len(doc) && doc[end] == '|' {
		nl := strings.IndexByte(doc[end:], '\n')
		if nl < 0 {
			end = len(doc)
			break
		}
		end += nl + 1
	}
	return start, end, nil
}

func TestTableAfter(t *testing.T) {
	doc := "# x\n\n## A\n\ntext\n\n| variable | d |\n|---|---|\n| `X` | 1 |\n\nafter\n## B\n\n## C\n| variable |\n"
	start, end, err := tableAfter(doc, "## A")
	if err != nil || doc[start:end] != "| variable | d |\n|---|---|\n| `X` | 1 |\n" {
		t.Fatalf("table = %q, %v", doc[start:end], err)
	}
	if _, _, err := tableAfter(doc, "## B"); err == nil {
		t.Fatal("B has no table of its own: want an error")
	}
	if _, _, err := tableAfter(doc, "## D"); err == nil {
		t.Fatal("no heading D: want an error")
	}
}
