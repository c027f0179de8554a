package payload_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"

	"github.com/homingdlq/homing/payload"
)

// contractDoc is the page that states the contract for other runtimes.
const contractDoc = "../docs/CONTRACT.md"

// blocks returns the fenced code blocks of doc by their tag, the word after
// the language ("```json example-body"), without the final newline or the
// fence's indentation.
func blocks(t *testing.T, doc string) map[string]string {
	t.Helper()
	out := map[string]string{}
	lines := strings.Split(doc, "\n")
	for i := 0; i < len(lines); i++ {
		// A block may be indented, inside a list item.
		fence := strings.TrimLeft(lines[i], " ")
		indent := lines[i][:len(lines[i])-len(fence)]
		info, ok := strings.CutPrefix(fence, "```")
		fields := strings.Fields(info)
		if !ok || len(fields) != 2 {
			continue
		}
		var body []string
		for i++; i < len(lines) && lines[i] != indent+"```"; i++ {
			body = append(body, strings.TrimPrefix(lines[i], indent))
		}
		if _, dup := out[fields[1]]; dup {
			t.Fatalf("%s: two blocks tagged %s", contractDoc, fields[1])
		}
		out[fields[1]] = strings.Join(body, "\n")
	}
	return out
}

// TestContractDoc checks the worked example of docs/CONTRACT.md: the
// canonical bytes are RFC 8785 of the body (and of the part), the hashes
// are the version ("jcs1", or "jcs1p" and 11 hex digits of the SHA-256 of
// the part's text), ':' and the SHA-256 of those bytes, and Hash.Sum gives
// them; the version the page names for the part is that one.
func TestContractDoc(t *testing.T) {
	src, err := os.ReadFile(contractDoc)
	if err != nil {
		t.Fatal(err)
	}
	b := blocks(t, string(src))
	for _, tag := range []string{"example-body", "example-canonical", "example-hash", "example-part", "example-part-canonical", "example-part-version", "example-part-hash"} {
		if b[tag] == "" {
			t.Fatalf("%s has no block tagged %s", contractDoc, tag)
		}
	}
	body := []byte(b["example-body"])
	canonical, err := jcs.Transform(body)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(canonical, []byte(b["example-canonical"])) {
		t.Errorf("RFC 8785 of the body is\n%s\nthe page says\n%s", canonical, b["example-canonical"])
	}
	if v := version(b["example-part"]); b["example-part-version"] != v {
		t.Errorf("the page's version of the part is %s, want %s", b["example-part-version"], v)
	}
	tests := []struct {
		name, part, canonical, hash string
	}{
		{"whole body", "", b["example-canonical"], b["example-hash"]},
		{"part", b["example-part"], b["example-part-canonical"], b["example-part-hash"]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			digest := sha256.Sum256([]byte(tt.canonical))
			if want := version(tt.part) + ":" + hex.EncodeToString(digest[:]); tt.hash != want {
				t.Errorf("the page's hash %s is not the part's version, ':' and the SHA-256 of its canonical bytes (%s)", tt.hash, want)
			}
			h, err := payload.NewHash(tt.part)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := h.Sum(body); err != nil || got != tt.hash {
				t.Errorf("Sum = %s, %v; the page says %s", got, err, tt.hash)
			}
		})
	}
}

// TestContractDocKeys checks the key table of docs/CONTRACT.md against
// Key.Of: each row's expression over its body gives its key, or none.
func TestContractDocKeys(t *testing.T) {
	src, err := os.ReadFile(contractDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(src)
	start := strings.Index(doc, "\n| expression | body | key |\n")
	if start < 0 {
		t.Fatalf("%s has no key table", contractDoc)
	}
	rows := 0
	for _, line := range strings.Split(doc[start+1:], "\n")[2:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cells) != 3 {
			t.Fatalf("row %q: want 3 cells", line)
		}
		unquote := func(s string) string { return strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(s), "`"), "`") }
		expr, body, want := unquote(cells[0]), unquote(cells[1]), unquote(cells[2])
		k, err := payload.NewKey(expr)
		if err != nil {
			t.Fatalf("row %q: %v", line, err)
		}
		got, ok := k.Of([]byte(body))
		switch {
		case want == "(none)" && ok:
			t.Errorf("Key(%s).Of(%s) = %q; the page says no key", expr, body, got)
		case want != "(none)" && (!ok || got != want):
			t.Errorf("Key(%s).Of(%s) = %q, %v; the page says %q", expr, body, got, ok, want)
		}
		rows++
	}
	if rows < 5 {
		t.Fatalf("the key table has %d rows", rows)
	}
}
