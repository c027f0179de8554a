package main

import (
	"fmt"
	"strings"

	"github.com/homingdlq/homing/internal/tools/drill"
)

// story is what the demo publishes and what it expects at the end.
type story struct {
	messages     []string       // bodies, in publishing order
	valid        []string       // orderIds that must be invoiced exactly once
	invalid      map[string]int // reason -> messages expected in the invalid queue
	deadLettered int            // messages that must go through the DLQ
	duplicates   int            // extra deliveries of valid orders, absorbed by idempotency
	rejectID     string         // valid for us, refused by the tax service
}

// newStory builds the demo's orders: mostly valid, some of each invalid
// reason, some duplicate deliveries and one conflicting duplicate.
func newStory(run string, valid int) story {
	s := story{invalid: map[string]int{}}
	id := func(n int) string { return fmt.Sprintf("ORD-%s-%04d", run, n) }
	for n := 1; n <= valid; n++ {
		s.messages = append(s.messages, drill.Encode(drill.Order(id(n), n)))
		s.valid = append(s.valid, id(n))
	}
	// Producers retry: five orders are delivered twice, same payload.
	for n := 1; n <= 5; n++ {
		s.messages = append(s.messages, drill.Encode(drill.Order(id(n*3), n*3)))
		s.duplicates++
	}
	// The same orderId with another payload.
	s.messages = append(s.messages, drill.Encode(drill.Conflicting(drill.Order(id(2), 2))))
	s.invalid["conflicting-duplicate"]++
	// Valid for us, refused by the tax service once it is back.
	s.rejectID = fmt.Sprintf("ORD-%s-REJECT", run)
	s.messages = append(s.messages, drill.Encode(drill.Order(s.rejectID, 1)))
	s.invalid["rejected-by-tax-service"]++
	// Everything valid in shape waits in the DLQ during the outage.
	s.deadLettered = len(s.messages)

	for _, reason := range drill.InvalidReasons {
		s.messages = append(s.messages, drill.Invalid(reason, fmt.Sprintf("ORD-%s-BAD-%s", run, strings.ToUpper(reason))))
		s.invalid[reason]++
	}
	return s
}
