package fifo

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
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
	Release           string    `json:"release,omitempty"` // the release round's mark (releaseMark)
}

// corruptName keeps an attribute of our name that is not ours, so that
// nothing of the producer's is lost.
const corruptName = "homing-corrupt"

// producerOf returns attrs without our metadata, and the release mark the
// metadata carries ("" when none).
func producerOf(attrs map[string]types.MessageAttributeValue) (producer map[string]types.MessageAttributeValue, mark string) {
	var n note
	producer, found, err := envelope.Unpack(attrs, envelope.ReplayAttributeName, &n)
	if err != nil {
		// Not ours: keep it under another name.
		producer = make(map[string]types.MessageAttributeValue, len(attrs))
		for k, v := range attrs {
			if k == envelope.ReplayAttributeName {
				k = corruptName
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

// Released reports whether attrs and body are a record that release round
// sent back: our note carries the round's mark for that body, which no one
// without the round (it is in the park only) can make for another body.
func Released(attrs map[string]types.MessageAttributeValue, body, round string) bool {
	_, mark := producerOf(attrs)
	return round != "" && hmac.Equal([]byte(mark), []byte(releaseMark(round, body)))
}

// releaseMark is the mark of round on a record of body: an HMAC of the body
// keyed by the round, so that a copy of a released record's note on
// another body is not taken as released.
func releaseMark(round, body string) string {
	h := hmac.New(sha256.New, []byte(round))
	h.Write([]byte(body))
	return hex.EncodeToString(h.Sum(nil))
}

// ParkedAttributes returns the attributes of record id in the parking
// queue: the producer's, and a note of why and when it was parked.
func ParkedAttributes(attrs map[string]types.MessageAttributeValue, id, reason string, at time.Time) (map[string]types.MessageAttributeValue, error) {
	producer, _ := producerOf(attrs)
	return pack(producer, note{OriginalMessageID: id, Reason: reason, ParkedAt: at.UTC()})
}

// ReleasedAttributes returns the attributes of parked record id, of body,
// sent back to the source by release round: the producer's, and the
// round's mark for body (see [Released]).
func ReleasedAttributes(attrs map[string]types.MessageAttributeValue, id, round, body string) (map[string]types.MessageAttributeValue, error) {
	producer, _ := producerOf(attrs)
	return pack(producer, note{OriginalMessageID: id, Release: releaseMark(round, body)})
}

func pack(producer map[string]types.MessageAttributeValue, n note) (map[string]types.MessageAttributeValue, error) {
	out, err := envelope.Pack(producer, envelope.ReplayAttributeName, n)
	if err != nil {
		return nil, fmt.Errorf("fifo: attributes of %s: %w", n.OriginalMessageID, err)
	}
	return out, nil
}
