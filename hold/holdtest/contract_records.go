package holdtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/homingdlq/homing/hold"
	"github.com/homingdlq/homing/internal/suite"
)

// TestDrainRacingAppendsLosesNoRecord: a drainer applies and removes the
// held records and ends the hold when it finds none, at the version it
// read, while appenders store more: every record an Append stored is
// drained, none is left behind an ended hold. The race is run for 20
// groups, one after the other, so that its end (the drainer finds none
// while an Append is under way) comes up many times. It needs
// [Features].ConcurrentWrites.
func TestDrainRacingAppendsLosesNoRecord(t *testing.T, h Harness) {
	suite.Needs(t, h.Features.ConcurrentWrites, "ConcurrentWrites")
	s := h.NewStore(t)
	for round := range 20 {
		g := fmt.Sprintf("g-%02d", round)
		stored, drained := raceDrain(t, s, g)
		if hs, err := s.Holds(t.Context(), []string{g}); err != nil || len(hs) != 0 {
			t.Fatalf("%s: Holds = %v, %v after the drain ended the hold", g, hs, err)
		}
		if n := mustCount(t, s, g); n != 0 {
			t.Errorf("%s: %d records left behind the ended hold", g, n)
		}
		if got, want := drained.sorted(), stored.sorted(); !slices.Equal(got, want) {
			t.Fatalf("%s: drained %d records, %d were stored: %v, want %v", g, len(got), len(want), got, want)
		}
	}
}

// raceDrain holds group behind one record and races two appenders of
// three records each against a drain. It returns the Seqs of the records
// stored (their Append succeeded) and of those drained.
func raceDrain(t *testing.T, s hold.Store, group string) (stored, drained *seqSet) {
	t.Helper()
	mustBegin(t, s, group, "m-0", t0)
	first := message("1", "first")
	mustAppend(t, s, group, first, t0)
	stored = newSeqSet()
	stored.add(first.Seq)
	const appenders, each = 2, 3
	var wg sync.WaitGroup
	for a := range appenders {
		wg.Go(func() {
			for i := range each {
				m := message(fmt.Sprint(100+a*each+i), "b")
				_, err := s.Append(t.Context(), group, m, t0)
				switch {
				case errors.Is(err, hold.ErrNotHeld):
					return // the hold ended first: the caller holds the group anew
				case err != nil:
					t.Error(err)
					return
				}
				stored.add(m.Seq)
			}
		})
	}
	drained = drain(t, s, group)
	wg.Wait()
	return stored, drained
}

// drain is the consumer's drain of group: remove what Next returns until
// it returns nothing, then end the hold at the version read before that
// Next, starting over on ErrConflict. It returns the records removed.
func drain(t *testing.T, s hold.Store, group string) *seqSet {
	t.Helper()
	drained := newSeqSet()
	for range 10_000 {
		hs, err := s.Holds(t.Context(), []string{group})
		if err != nil {
			t.Fatal(err)
		}
		cur, ok := hs[group]
		if !ok {
			t.Fatal("the hold vanished under its drainer")
		}
		next := mustNext(t, s, group, 10)
		for _, m := range next {
			mustRemove(t, s, group, m.Seq)
			drained.add(m.Seq)
		}
		if len(next) > 0 {
			continue
		}
		switch err := s.End(t.Context(), cur); {
		case err == nil:
			return drained
		case !errors.Is(err, hold.ErrConflict):
			t.Fatal(err)
		}
	}
	t.Fatal("the drain did not end in 10000 rounds")
	return nil
}

// TestHeldRecordRoundTrips: a held record comes back as it was appended,
// its body, id, attributes and message attributes (string, number and
// binary values) alike, with no receipt handle; changing the caller's copy
// after Append, or the one Next returned, changes nothing held.
func TestHeldRecordRoundTrips(t *testing.T, h Harness) {
	s := h.NewStore(t)
	mustBegin(t, s, "g", "m-0", t0)
	in := fullMessage()
	mustAppend(t, s, "g", in, t0)
	want := fullRecord()
	want.ReceiptHandle = ""

	for i := range in.Record {
		in.Record[i] = ' '
	}
	got := mustNext(t, s, "g", 1)
	if len(got) != 1 || got[0].Seq != fullMessage().Seq || !reflect.DeepEqual(recordOf(t, got[0]), want) {
		t.Fatalf("held records =\n%s\nwant\n[%s]", asJSON(got), asJSON(want))
	}
	for i := range got[0].Record {
		got[0].Record[i] = ' '
	}
	if again := mustNext(t, s, "g", 1); !reflect.DeepEqual(recordOf(t, again[0]), want) {
		t.Fatalf("a change to Next's copy reached the store:\n%s", asJSON(again))
	}
}

// asJSON shows v in a failure: the pointers of a record's attributes as
// the values they point to.
func asJSON(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// fullRecord is a FIFO record with every field set.
func fullRecord() events.SQSMessage {
	r := &events.SQSMessage{Body: `{"id":"r-1","note":"ünïcode \"quoted\""}`, Attributes: map[string]string{"SequenceNumber": "12345678901234567890"}}
	r.MessageId = "5fea7756-0ea4-451a-a703-a558b933e274"
	r.ReceiptHandle = "AQEB-receipt"
	r.Md5OfBody = "e4e68fb7bd0e697a0ae8f1bb342846b3"
	r.Md5OfMessageAttributes = "00484c68...59e48f06"
	r.Attributes["MessageGroupId"] = "g"
	r.Attributes["ApproximateReceiveCount"] = "2"
	r.Attributes["MessageDeduplicationId"] = "dedup-1"
	r.MessageAttributes = map[string]events.SQSMessageAttribute{
		"trace":  {DataType: "String", StringValue: aws.String("abc-123")},
		"amount": {DataType: "Number", StringValue: aws.String("12.50")},
		"blob":   {DataType: "Binary", BinaryValue: []byte{0, 1, 2, 0xfe, 0xff}},
	}
	r.EventSourceARN = "arn:aws:sqs:us-east-1:000000000000:orders.fifo"
	r.EventSource = "aws:sqs"
	r.AWSRegion = "us-east-1"
	return *r
}

// fullMessage is fullRecord, held.
func fullMessage() hold.Message { return held(fullRecord()) }

// TestGroupsDoNotCollide: groups whose names hold the characters a key is
// built of ('#', spaces), or are 128 characters long, keep their holds and
// records apart, even records of the same Seq; List orders them by name.
func TestGroupsDoNotCollide(t *testing.T, h Harness) {
	s := h.NewStore(t)
	groups := []string{"a", "a#", "#a", "a#b", "a b", "a  b", " a", "holds", "hold#a", "A",
		strings.Repeat("x", 128), strings.Repeat("x", 127) + "y"}
	want := map[string]hold.Hold{}
	for _, g := range groups {
		mustBegin(t, s, g, "head:"+g, t0)
		want[g] = mustAppend(t, s, g, message("1", "body:"+g), t0)
	}
	got, err := s.Holds(t.Context(), groups)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		mustBeHold(t, fmt.Sprintf("Holds[%q]", g), got[g], want[g])
		if b := bodies(mustNext(t, s, g, 10)); !slices.Equal(b, []string{"body:" + g}) {
			t.Errorf("group %q holds %q", g, b)
		}
	}
	var listed []string
	for _, l := range mustList(t, s) {
		listed = append(listed, l.Group)
	}
	if sorted := slices.Sorted(maps.Keys(want)); !slices.Equal(listed, sorted) {
		t.Fatalf("List = %q, want %q", listed, sorted)
	}
	mustEnd(t, s, want["a"])
	if got, err := s.Holds(t.Context(), groups); err != nil || len(got) != len(groups)-1 {
		t.Fatalf("after ending a's hold, Holds has %d, %v; want %d", len(got), err, len(groups)-1)
	}
}
