package archive

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/parking"
)

// The key layout (docs/OPERATIONS.md#the-archive):
//
//	<lane>/<queue>/<yyyy>/<mm>/<dd>/<order>-<message id>.json   the object
//	<lane>/key/<business key>/<queue>/<yyyy>/<mm>/<dd>/<order>-<message id>.json   its index, empty
//
// The day is the day the message was sent to its queue (UTC); order is its
// FIFO sequence number (40 digits) or its send time in Unix milliseconds (13
// digits), so a listing is in queue order. Every segment is path-escaped.
const (
	indexSegment = "key"
	suffix       = ".json"
	// maxKeySegment bounds the business key's segment: a longer one is cut
	// and ends in "~" and 16 hex digits of its SHA-256.
	maxKeySegment = 256
)

// DayPrefix is the prefix of the objects of lane's queue sent on day (UTC);
// a zero day lists the queue's every day.
func DayPrefix(lane, queue string, day time.Time) string {
	p := segment(lane) + "/" + segment(queue) + "/"
	if day.IsZero() {
		return p
	}
	return p + day.UTC().Format("2006/01/02") + "/"
}

// KeyPrefix is the prefix of the index objects of business key k in lane.
func KeyPrefix(lane, k string) string {
	return segment(lane) + "/" + indexSegment + "/" + keySegment(k) + "/"
}

// ObjectKey is the key of o's object.
func ObjectKey(o Object) string {
	return DayPrefix(o.Lane, o.Queue, o.SentAt) + name(o)
}

// IndexKey is the key of o's index object, "" when o has no business key.
func IndexKey(o Object) string {
	if o.Key == "" {
		return ""
	}
	return KeyPrefix(o.Lane, o.Key) + segment(o.Queue) + "/" + o.SentAt.UTC().Format("2006/01/02") + "/" + name(o)
}

// ObjectOf returns the object key an index key points to; ok is false when
// key is not an index key.
func ObjectOf(key string) (object string, ok bool) {
	parts := strings.Split(key, "/")
	// lane, "key", business key, queue, yyyy, mm, dd, name
	if len(parts) != 8 || parts[1] != indexSegment || !strings.HasSuffix(parts[7], suffix) {
		return "", false
	}
	return strings.Join(append([]string{parts[0]}, parts[3:]...), "/"), true
}

// name is o's file name: its order, then its message id.
func name(o Object) string {
	order := fmt.Sprintf("%013d", o.SentAt.UnixMilli())
	if seq := parking.SeqKey(o.System[string(types.MessageSystemAttributeNameSequenceNumber)]); seq != "" {
		order = seq
	}
	return order + "-" + segment(o.MessageID) + suffix
}

// segment escapes s as one path segment; "_" stands for the empty one.
func segment(s string) string {
	if s == "" {
		return "_"
	}
	return url.PathEscape(s)
}

// keySegment is segment(k), bounded by maxKeySegment.
func keySegment(k string) string {
	s := segment(k)
	if len(s) <= maxKeySegment {
		return s
	}
	sum := sha256.Sum256([]byte(k))
	cut := s[:maxKeySegment-17]
	// Never cut inside an escape ("%2F").
	if i := strings.LastIndexByte(cut, '%'); i >= len(cut)-2 {
		cut = cut[:i]
	}
	return cut + "~" + hex.EncodeToString(sum[:8])
}
