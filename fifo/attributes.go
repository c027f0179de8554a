package fifo

import (
	"fmt"
	"strconv"
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
	Release           string    `json:"release,omitempty"`
}

// corruptName keeps an attribute of our name that is not ours, so that
// nothing of the producer's is lost.
const corruptName = "homing-corrupt"

// producerOf returns attrs without our metadata, and the release round the
// metadata names ("" when none).
func producerOf(attrs map[string]types.MessageAttributeValue) (producer map[string]types.MessageAttributeValue, round string) {
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

// Round returns the release round that attrs name ("" when none).
func Round(attrs map[string]types.MessageAttributeValue) string {
	_, round := producerOf(attrs)
	return round
}

// ParkedAttributes returns the attributes of record id in the parking
// queue: the producer's, and a note of why and when it was parked.
func ParkedAttributes(attrs map[string]types.MessageAttributeValue, id, reason string, at time.Time) (map[string]types.MessageAttributeValue, error) {
	producer, _ := producerOf(attrs)
	return pack(producer, note{OriginalMessageID: id, Reason: reason, ParkedAt: at.UTC()})
}

// ReleasedAttributes returns the attributes of parked record id sent back
// to the source by release round: the producer's, and the round.
func ReleasedAttributes(attrs map[string]types.MessageAttributeValue, id, round string) (map[string]types.MessageAttributeValue, error) {
	producer, _ := producerOf(attrs)
	return pack(producer, note{OriginalMessageID: id, Release: round})
}

func pack(producer map[string]types.MessageAttributeValue, n note) (map[string]types.MessageAttributeValue, error) {
	out, err := envelope.Pack(producer, envelope.ReplayAttributeName, n)
	if err != nil {
		return nil, fmt.Errorf("fifo: attributes of %s: %w", n.OriginalMessageID, err)
	}
	return out, nil
}
