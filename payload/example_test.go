package payload_test

import (
	"fmt"

	"github.com/homingdlq/homing/payload"
)

func ExampleKey_Of() {
	key, err := payload.NewKey("shipmentId")
	if err != nil {
		panic(err)
	}
	for _, body := range []string{`{"shipmentId":" SHP-1 "}`, `{"shipmentId":12}`, `{"shipmentId":null}`, `not json`} {
		k, ok := key.Of([]byte(body))
		fmt.Printf("%-25s %q %v\n", body, k, ok)
	}
	// Output:
	// {"shipmentId":" SHP-1 "}  "SHP-1" true
	// {"shipmentId":12}         "12" true
	// {"shipmentId":null}       "" false
	// not json                  "" false
}

func ExampleHash_Sum() {
	whole, err := payload.NewHash("")
	if err != nil {
		panic(err)
	}
	a, _ := whole.Sum([]byte(`{"id":"P-1","amount":"10.00"}`))
	b, _ := whole.Sum([]byte(`{ "amount": "10.00", "id": "P-1" }`))
	fmt.Println(a == b, payload.HashVersionOf(a))

	part, err := payload.NewHash("{id: id, amount: amount}")
	if err != nil {
		panic(err)
	}
	c, _ := part.Sum([]byte(`{"id":"P-1","amount":"10.00","traceId":"t-1"}`))
	d, _ := part.Sum([]byte(`{"id":"P-1","amount":"10.00","traceId":"t-2"}`))
	fmt.Println(c == d)
	// Output:
	// true jcs1
	// true
}

func ExampleHash_Same() {
	h, err := payload.NewHash("")
	if err != nil {
		panic(err)
	}
	body := []byte(`{"id":"P-1","amount":"10.00"}`)
	recorded, _ := h.Sum(body)
	fmt.Println(h.Same(recorded, body))
	fmt.Println(h.Same(recorded, []byte(`{"id":"P-1","amount":"10.01"}`)))
	// A hash an earlier build wrote, without a version, does not compare:
	// the caller must not call it a conflict.
	fmt.Println(h.Same("3f6d8e7f93d1385fba351ecc3300fc1d26fec6aa484806d2c32677caf01a3f96", body))
	// Output:
	// true true
	// false true
	// false false
}
