// Package parking is the wire format of a FIFO lane's parked and released
// records: our note in the replay's attribute beside the producer's, the
// release round's mark, and the order of sequence numbers.
package parking

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/homingdlq/homing/internal/envelope"
)

// note is our metadata on a parked record (in the parking queue) and on a
// released one (back in the source). It is written in the replay's
// attribute, with the replay metadata's field names, so that dlq reads a
// parked record's reason as it reads the replay's.
type note struct {
	OriginalMessageID string    `json:"originalMessageId"`
	Reason            string    `json:"reason,omitempty"`
	ParkedAt          time.Time `json:"parkedAt,omitzero"`
	Release           string    `json:"release,omitempty"` // "<number>.<mark>" of a record sent back
}

// corruptName keeps an attribute of our name that is not ours, so that
// nothing of the producer's is lost.
const corruptName = "homing-corrupt"

// producerOf returns attrs without our metadata, and the release mark the
// metadata carries ("" when none).
func producerOf(attrs map[string]types.MessageAttributeValue) (producer map[string]types.MessageAttributeValue, release string) {
	var n note
	producer, found, err := envelope.Unpack(attrs, envelope.ReplayAttributeName, &n)
	if err != nil {
		// Not ours: keep it under another name, one the producer does
		// not use.
		name := corruptName
		for i := 1; attrs[name].DataType != nil; i++ {
			name = corruptName + "-" + strconv.Itoa(i)
		}
		producer = make(map[string]types.MessageAttributeValue, len(attrs))
		for k, v := range attrs {
			if k == envelope.ReplayAttributeName {
				k = name
			}
			producer[k] = v
		}
		return producer, ""
	}
	if !found {
		return attrs, ""
	}
	return producer, n.Release
}

// Released returns the number of a record sent back by release round:
// its attrs carry a mark of round over its number and body. It returns 0
// for any other record, whatever its attributes say.
func Released(attrs map[string]types.MessageAttributeValue, body, round string) int {
	_, release := producerOf(attrs)
	num, _, ok := strings.Cut(release, ".")
	n, err := strconv.Atoi(num)
	if round == "" || !ok || err != nil || n < 1 || !hmac.Equal([]byte(release), []byte(mark(round, n, body))) {
		return 0
	}
	return n
}

// mark is the release note of record number n of round: only who knows
// the round (the park, never a message) can write it.
func mark(round string, n int, body string) string {
	h := hmac.New(sha256.New, []byte(round))
	fmt.Fprintf(h, "%d\n%s", n, body)
	return strconv.Itoa(n) + "." + hex.EncodeToString(h.Sum(nil)[:16])
}

// Attributes returns the attributes of record id in the parking
// queue: the producer's, and a note of why and when it was parked.
func Attributes(attrs map[string]types.MessageAttributeValue, id, reason string, at time.Time) (map[string]types.MessageAttributeValue, error) {
	producer, _ := producerOf(attrs)
	return pack(producer, note{OriginalMessageID: id, Reason: reason, ParkedAt: at.UTC()})
}

// ReleasedAttributes returns the attributes of parked record id sent back
// to the source as number n of release round: the producer's, and the
// round's mark (see Released).
func ReleasedAttributes(attrs map[string]types.MessageAttributeValue, id, body, round string, n int) (map[string]types.MessageAttributeValue, error) {
	producer, _ := producerOf(attrs)
	return pack(producer, note{OriginalMessageID: id, Release: mark(round, n, body)})
}

func pack(producer map[string]types.MessageAttributeValue, n note) (map[string]types.MessageAttributeValue, error) {
	out, err := envelope.Pack(producer, envelope.ReplayAttributeName, n)
	if err != nil {
		return nil, fmt.Errorf("parking: attributes of %s: %w", n.OriginalMessageID, err)
	}
	return out, nil
}

// SeqKey returns the SQS sequence number seq in a form that orders as
// strings do (zero-padded to 40 digits); "" when seq is not one.
func SeqKey(seq string) string {
	if seq == "" || len(seq) > 40 || strings.Trim(seq, "0123456789") != "" {
		return ""
	}
	return strings.Repeat("0", 40-len(seq)) + seq
}
