package idempotency_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/homingdlq/homing/idempotency"
)

// The same order delivered three times: the effect runs once; a different
// payload under the same key is a conflict.
func ExampleReceiver_Do() {
	r := &idempotency.Receiver{Store: idempotency.NewMemoryStore(), Scope: "invoice"}
	issue := func(context.Context) (string, error) {
		fmt.Println("issuing invoice")
		return "INV-000001", nil
	}
	for range 2 {
		out, err := r.Do(context.Background(), "ORD-1", "hash-of-payload", issue)
		fmt.Println(out.Result, out.Duplicate, err)
	}
	_, err := r.Do(context.Background(), "ORD-1", "hash-of-another-payload", issue)
	fmt.Println(errors.Is(err, idempotency.ErrConflict))
	// Output:
	// issuing invoice
	// INV-000001 false <nil>
	// INV-000001 true <nil>
	// true
}
