package idempotency_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/homingdlq/homing/idempotency"
)

// The same shipment delivered twice: the downstream call (buying its
// label) runs once; a different payload under the same key is a conflict.
func ExampleReceiver_Do() {
	r := &idempotency.Receiver{Store: idempotency.NewMemoryStore(), Scope: "labels"}
	buy := func(context.Context) (string, error) {
		fmt.Println("buying a label")
		return "LBL-000001", nil
	}
	for range 2 {
		out, err := r.Do(context.Background(), "SHP-1", "hash-of-payload", buy)
		fmt.Println(out.Result, out.Duplicate, err)
	}
	_, err := r.Do(context.Background(), "SHP-1", "hash-of-another-payload", buy)
	fmt.Println(errors.Is(err, idempotency.ErrConflict))
	// Output:
	// buying a label
	// LBL-000001 false <nil>
	// LBL-000001 true <nil>
	// true
}

// Validate where the configuration is read, so that a scope that would
// make two consumers' keys collide stops the cold start.
func ExampleReceiver_Validate() {
	r := &idempotency.Receiver{Store: idempotency.NewMemoryStore(), Scope: "labels#eu"}
	err := r.Validate()
	fmt.Println(errors.Is(err, idempotency.ErrInvalidScope))
	fmt.Println(err)
	// Output:
	// true
	// scope "labels#eu": idempotency: the scope must be non-empty and must not contain '#', the key separator
}
