package main

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/homingdlq/homing/settings"
)

// FuzzParseOutputs reads outputs files (as `cdk deploy --outputs-file`
// writes them, flat as `make deploy-local` does, or anything) and picks a
// lane in them. Properties:
//   - parseOutputs refuses with an error and nothing else, or returns
//     outputs that written back as JSON read the same (the same form);
//   - every lane lanesOf finds is an output <prefix>DeadLetterQueueUrl of a
//     stack of the file, its values only the keys dlq reads, each the
//     stack's output of that name; its name spells its prefix again
//     (settings.OutputID), so that --lane NAME picks it;
//   - pickLane with --lane picks the lane of that prefix and nothing else,
//     or refuses;
//   - what is read is at most three times the file's size (invalid UTF-8
//     reads as U+FFFD): decoding costs what the file costs.
func FuzzParseOutputs(f *testing.F) {
	f.Add([]byte(`{"Homing":{"OrdersDeadLetterQueueUrl":"u","OrdersSourceQueueUrl":"s"},"Other":{}}`), "orders")
	f.Add([]byte(` {"DeadLetterQueueUrl": "u", "LedgerTableName": "l"} `), "")
	f.Add([]byte(`{"A":{"PaymentsLedgerDeadLetterQueueUrl":"u"},"B":{"PaymentsLedgerDeadLetterQueueUrl":"v","DeadLetterQueueUrl":"v"}}`), "payments-ledger")
	f.Add([]byte(`{"ordersDeadLetterQueueUrl":"u","x-yDeadLetterQueueUrl":"v","ÄDeadLetterQueueUrl":"w"}`), "orders")
	f.Add([]byte(`{"Homing":{"A":"b"},"C":"d"}`), "")
	f.Add([]byte(`{"A":1}`), "")
	f.Add([]byte(`{"S":{"K":null}}`), "")
	f.Add([]byte(`null`), "")
	f.Fuzz(func(t *testing.T, file []byte, lane string) {
		stacks, flat, err := parseOutputs(file)
		if err != nil {
			if stacks != nil || flat {
				t.Fatalf("refused with %v, and outputs %v (flat %v)", err, stacks, flat)
			}
			return
		}
		var doc any = stacks
		if flat {
			doc = stacks[""]
		}
		written, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		again, flatAgain, err := parseOutputs(written)
		if err != nil || flatAgain != flat || !reflect.DeepEqual(again, stacks) {
			t.Fatalf("written back as %s, read %v, %v, %v; want %v, %v", written, again, flatAgain, err, stacks, flat)
		}
		size := 0
		for name, out := range stacks {
			size += len(name)
			for k, v := range out {
				size += len(k) + len(v)
			}
		}
		if size > 3*len(file) { // each byte of invalid UTF-8 reads as U+FFFD, 3 bytes
			t.Fatalf("read %d bytes of names and values from a file of %d", size, len(file))
		}

		lanes := lanesOf(stacks)
		for _, l := range lanes {
			out, ok := stacks[l.stack]
			if _, isLane := out[l.prefix+outDLQ]; !ok || !isLane {
				t.Fatalf("lane %v: no output %s%s in stack %q", l, l.prefix, outDLQ, l.stack)
			}
			for k, v := range l.values {
				if !slices.Contains(outputKeys, k) || out[l.prefix+k] != v {
					t.Fatalf("lane %v: value %s = %q, the stack's is %q", l, k, v, out[l.prefix+k])
				}
			}
			if l.prefix != "" && settings.OutputID(l.name(), "") != l.prefix {
				t.Fatalf("lane of prefix %q is named %q, and --lane %s picks prefix %q", l.prefix, l.name(), l.name(), settings.OutputID(l.name(), ""))
			}
		}

		a := &app{flags: globalFlags{lane: lane, laneFrom: "--lane"}}
		res, err := a.pickLane(stacks, "outputs file")
		if err != nil {
			if res != nil {
				t.Fatalf("refused with %v, and resources %v", err, res)
			}
			return
		}
		// The lanes it may have picked (two may hold the same values).
		ok := slices.ContainsFunc(lanes, func(l laneOutputs) bool {
			return maps.Equal(l.values, res.values) && (lane == "" || l.prefix == "" || l.prefix == settings.OutputID(lane, ""))
		})
		if !ok {
			t.Fatalf("--lane %q picked %v: not a lane of the file, or not of that name", lane, res.values)
		}
	})
}
