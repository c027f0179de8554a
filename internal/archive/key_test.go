package archive_test

import (
	"strings"
	"testing"
	"time"

	"github.com/homingdlq/homing/internal/archive"
)

func TestKeys(t *testing.T) {
	sent := time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC)
	for _, tt := range []struct {
		name        string
		o           archive.Object
		object, idx string
	}{
		{"standard, by send time",
			archive.Object{Lane: "orders", Queue: archive.Invalid, MessageID: "m1", Key: "o-1", SentAt: sent},
			"orders/invalid/2026/01/02/1767323045006-m1.json", "orders/key/o-1/invalid/2026/01/02/1767323045006-m1.json"},
		{"fifo, by sequence number",
			archive.Object{Lane: "orders", Queue: archive.Parking, MessageID: "m2", Key: "a/b c", SentAt: sent, System: map[string]string{"SequenceNumber": "18890"}},
			"orders/parking/2026/01/02/0000000000000000000000000000000000018890-m2.json", "orders/key/a%2Fb%20c/parking/2026/01/02/0000000000000000000000000000000000018890-m2.json"},
		{"no business key, no index",
			archive.Object{Lane: "a/b", Queue: archive.Parking, MessageID: "m3", SentAt: sent},
			"a%2Fb/parking/2026/01/02/1767323045006-m3.json", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := archive.ObjectKey(tt.o); got != tt.object {
				t.Errorf("object key %s, want %s", got, tt.object)
			}
			if got := archive.IndexKey(tt.o); got != tt.idx {
				t.Errorf("index key %s, want %s", got, tt.idx)
			}
			if tt.idx == "" {
				return
			}
			if got, ok := archive.ObjectOf(tt.idx); !ok || got != tt.object {
				t.Errorf("ObjectOf(index) = %s, %v; want %s", got, ok, tt.object)
			}
			if _, ok := archive.ObjectOf(tt.object); ok {
				t.Errorf("ObjectOf(object key) is ok")
			}
		})
	}
}

// A long business key is cut, on an escape's boundary, and keeps a hash
// of the whole: two keys alike in their first 300 bytes index apart.
func TestLongBusinessKey(t *testing.T) {
	a := strings.Repeat("/", 300) + "a"
	b := strings.Repeat("/", 300) + "b"
	pa, pb := archive.KeyPrefix("orders", a), archive.KeyPrefix("orders", b)
	if pa == pb {
		t.Fatal("two keys share an index prefix")
	}
	seg := strings.Split(pa, "/")[2]
	cut := seg[:strings.LastIndex(seg, "~")]
	if len(seg) > 256 || len(cut)%3 != 0 || strings.ReplaceAll(cut, "%2F", "") != "" {
		t.Fatalf("segment of %d bytes: %s", len(seg), seg)
	}
	o := archive.Object{Lane: "orders", Queue: archive.Parking, MessageID: "m", Key: a, SentAt: time.Now()}
	if got, ok := archive.ObjectOf(archive.IndexKey(o)); !ok || got != archive.ObjectKey(o) {
		t.Fatalf("ObjectOf = %s, %v", got, ok)
	}
}
