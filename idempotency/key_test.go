package idempotency_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/replay"
)

func TestKey(t *testing.T) {
	long := strings.Repeat("9", 3000)
	tests := []struct {
		name, scope, id string
		want            string // "" when the key is hashed
	}{
		{"plain", "invoice", "ORD-1", "invoice#ORD-1"},
		{"grammar's longest id", "invoice", strings.Repeat("A", 128), "invoice#" + strings.Repeat("A", 128)},
		{"over the bound", "invoice", long, ""},
		{"looks hashed", "invoice", "sha256~abc", ""},
		{"long scope", strings.Repeat("s", 300), "ORD-1", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := idempotency.Key(tt.scope, tt.id)
			if len(got) > idempotency.MaxKeyBytes {
				t.Fatalf("key is %d bytes, bound is %d", len(got), idempotency.MaxKeyBytes)
			}
			if got != idempotency.Key(tt.scope, tt.id) {
				t.Fatal("not deterministic")
			}
			if tt.want != "" && got != tt.want {
				t.Fatalf("Key = %q, want %q", got, tt.want)
			}
			if tt.want == "" && strings.Contains(got, tt.id) {
				t.Fatalf("Key = %q, want the id hashed", got)
			}
		})
	}
	if idempotency.Key("invoice", long) == idempotency.Key("invoice", long+"0") {
		t.Fatal("two long ids share a key")
	}
	if idempotency.Key("invoice", long) == idempotency.Key("shipping", long) {
		t.Fatal("two scopes share a key")
	}
	// A plain id can never spell the hashed key of another id.
	hashed := idempotency.Key("invoice", long)
	id, _ := strings.CutPrefix(hashed, "invoice#")
	if idempotency.Key("invoice", id) == hashed {
		t.Fatal("an id equal to a hashed key's tail gets that key")
	}
}

// TestKeyMarkerNeverCollides: an id that starts with the hash marker is
// hashed too, so an id spelling the hashed form of another id never gets
// that id's key, in each of Key's three forms (docs/CONTRACT.md).
func TestKeyMarkerNeverCollides(t *testing.T) {
	scopes := map[string]string{"short scope": "invoice", "long scope": strings.Repeat("s", 300)}
	for name, scope := range scopes {
		t.Run(name, func(t *testing.T) {
			for _, id := range []string{strings.Repeat("9", 3000), "sha256~x", "ORD-1"} {
				hashed := idempotency.Key(scope, id)
				tail := hashed[strings.LastIndex(hashed, "#")+1:]
				sum := sha256.Sum256([]byte(id))
				for _, spelled := range []string{tail, hashed, "sha256~" + hex.EncodeToString(sum[:])} {
					if spelled != id && idempotency.Key(scope, spelled) == hashed {
						t.Fatalf("id %.40q gets the key of id %.40q: %s", spelled, id, hashed)
					}
				}
			}
		})
	}
}

// TestKeyContractDoc checks docs/CONTRACT.md's section "Keys in the
// records": its bounds are the code's, and each row of its pk table is
// what Key returns.
func TestKeyContractDoc(t *testing.T) {
	src, err := os.ReadFile("../docs/CONTRACT.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(src)
	row := func(prefix string) string {
		for _, line := range strings.Split(doc, "\n") {
			if strings.HasPrefix(line, prefix) {
				return line
			}
		}
		t.Fatalf("CONTRACT.md has no row starting %q", prefix)
		return ""
	}
	pk := row("| idempotency `pk` (`idempotency.Key`) |")
	longestScope := idempotency.MaxKeyBytes - len("#sha256~") - 2*sha256.Size
	for _, want := range []string{
		"is at most " + strconv.Itoa(idempotency.MaxKeyBytes) + " bytes and the key does not start with `sha256~`",
		"when that is over " + strconv.Itoa(idempotency.MaxKeyBytes) + " bytes (a name over " + strconv.Itoa(longestScope) + " bytes",
	} {
		if !strings.Contains(pk, want) {
			t.Errorf("the idempotency row does not say %q:\n%s", want, pk)
		}
	}
	if ledger := row("| replay ledger (history key) |"); !strings.Contains(ledger, "the key is at most "+strconv.Itoa(replay.MaxKeyID)+" bytes and does not start with `sha256~`") {
		t.Errorf("the replay row does not name its bound, %d bytes:\n%s", replay.MaxKeyID, ledger)
	}
	start := strings.Index(doc, "\n| CONSUMER_NAME | key | `pk` |\n")
	if start < 0 {
		t.Fatal("CONTRACT.md has no pk table")
	}
	rows := 0
	for _, line := range strings.Split(doc[start+1:], "\n")[2:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) != 3 {
			t.Fatalf("row %q: want 3 cells", line)
		}
		for i := range cells {
			cells[i] = strings.Trim(cells[i], "`")
		}
		if got := idempotency.Key(cells[0], cells[1]); got != cells[2] {
			t.Errorf("Key(%q, %q) = %q; the page says %q", cells[0], cells[1], got, cells[2])
		}
		rows++
	}
	if rows < 2 {
		t.Fatalf("the pk table has %d rows", rows)
	}
}
