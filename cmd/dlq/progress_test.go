package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/homingdlq/homing/replay"
)

// Off a terminal a run writes one line per route, when the route's pass
// ends, and no carriage return.
func TestProgressOffATerminal(t *testing.T) {
	var out bytes.Buffer
	p := newProgress(&out, false)
	for _, pr := range []replay.Progress{
		{Route: "orders", Depth: 3},
		{Route: "orders", Depth: 3, Counts: replay.Counts{Examined: 2, Replayed: 2}},
		{Route: "orders", Depth: 3, Counts: replay.Counts{Examined: 3, Replayed: 2, Parked: map[string]int{"replay-exhausted": 1}}},
		{Route: "payments", Depth: 0},
	} {
		p.update(pr)
	}
	p.finish()
	p.finish() // idempotent
	want := "route orders: examined 3 of 3 (the DLQ's depth at the start); replayed 2, parked 1, delayed 0, errors 0\n" +
		"route payments: examined 0 of 0 (the DLQ's depth at the start); replayed 0, parked 0, delayed 0, errors 0\n"
	if out.String() != want {
		t.Fatalf("output:\n%q\nwant\n%q", out.String(), want)
	}
	if strings.Contains(out.String(), "\r") {
		t.Fatal("a carriage return off a terminal")
	}
}

func TestProgressWithoutARunWritesNothing(t *testing.T) {
	var out bytes.Buffer
	newProgress(&out, false).finish()
	if out.Len() != 0 {
		t.Fatalf("output %q", out.String())
	}
}
