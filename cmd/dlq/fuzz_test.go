package main

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/homingdlq/homing/internal/settings"
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
//     or refuses; every value it picks passes the check of its flag;
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
	f.Add([]byte(`{"Homing":{"OrdersDeadLetterQueueUrl":"https://sqs.us-east-1.amazonaws.com/000000000000/orders-dlq","OrdersLedgerTableName":"ledger","OrdersReplayFunctionName":"fn"}}`), "orders")
	f.Add([]byte(`{"DeadLetterQueueUrl":"https://u:p@sqs.us-east-1.amazonaws.com/000000000000/q","SourceQueueUrl":"http://localhost:4566/000000000000/q\u0000"}`), "")
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
				if !slices.Contains(laneKeys, k) || out[l.prefix+k] != v {
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
		for k, v := range res.values {
			if v != "" && checkOf(k)("output", v) != nil {
				t.Fatalf("picked a lane whose %s = %q fails its flag's check", k, v)
			}
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

// FuzzOutputsFileValues reads an outputs file with one lane whose one
// output is built from fuzzed parts in a class an outputs file may bring:
// a URL with credentials, with a token in its query or fragment, in
// another account, with control bytes, huge, or credentials without a
// scheme. Properties:
//   - reading and picking the lane never panic;
//   - a value accepted passes its flag's check and has no '@' (no
//     userinfo), no control byte, and at most 512 bytes;
//   - no error text holds the password (when the text would not hold it
//     anyway) and no error text is longer than 2 KiB;
//   - an accepted source queue outside the DLQ's account is refused as
//     where replays go.
func FuzzOutputsFileValues(f *testing.F) {
	f.Add(uint8(0), "AKIAUSER", "s3cr3t-pass", "sqs.us-east-1.amazonaws.com", "000000000000", "orders")
	f.Add(uint8(1), "", "tok3n-value", "sqs.us-east-1.amazonaws.com", "000000000000", "orders")
	f.Add(uint8(8), "", "password", "sqs.eu-west-1.amazonaws.com", "999999999999", "orders")
	f.Add(uint8(3), "\x1b[2J", "secret\n", "localhost:4566", "000000000000", "orders\x00")
	f.Add(uint8(4), "x", "hugeSecret", "sqs.us-east-1.amazonaws.com", "000000000000", "q")
	f.Add(uint8(5), "user", "p@ss:w/rd?#", "h", "1", "n")
	f.Add(uint8(11), "u", "ab//", "h", "000000000000", "n")
	const dlq = "https://sqs.us-east-1.amazonaws.com/000000000000/orders-dlq"
	f.Fuzz(func(t *testing.T, class uint8, user, pass, host, account, name string) {
		value := func(pass string) string {
			switch class % 6 {
			case 0:
				return "https://" + user + ":" + pass + "@" + host + "/" + account + "/" + name
			case 1:
				return "https://" + host + "/" + account + "/" + name + "?X-Amz-Security-Token=" + pass
			case 2:
				return "https://" + host + "/" + account + "/" + name
			case 3:
				return "http://" + host + user + "/" + account + "/" + name + "#" + pass
			case 4:
				return "https://" + host + "/" + account + "/" + strings.Repeat(name+"q", 1+int(class)*50)
			}
			return user + ":" + pass + "@" + host
		}
		key := laneKeys[int(class/6)%len(laneKeys)]
		read := func(v string) (*resources, error) {
			out := map[string]string{"Orders" + outDLQ: dlq, "Orders" + key: v}
			file, err := json.Marshal(map[string]any{"Homing": out})
			if err != nil {
				t.Fatal(err)
			}
			stacks, _, err := parseOutputs(file)
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			return (&app{}).pickLane(stacks, "outputs file F")
		}
		v := value(pass)
		res, err := read(v)
		if err != nil {
			if res != nil {
				t.Fatalf("refused with %v, and resources %v", err, res)
			}
			text := err.Error()
			if len(text) > 2048 {
				t.Fatalf("an error of %d bytes", len(text))
			}
			// The password, unless the error for another password, or the
			// other parts, hold it.
			_, ref := read(value("\x01"))
			if len(pass) >= 4 && utf8.ValidString(pass) && strings.Contains(text, pass) &&
				(ref == nil || !strings.Contains(ref.Error(), pass)) && !strings.Contains(user+host+account+name, pass) {
				t.Fatalf("the error shows the password %q: %s", pass, text)
			}
			return
		}
		for k, got := range res.values {
			if err := checkOf(k)("output", got); err != nil || strings.Contains(got, "@") || len(got) > 512 ||
				strings.ContainsFunc(got, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
				t.Fatalf("accepted %s = %q (check: %v)", k, got, err)
			}
		}
		if key != outSource {
			return
		}
		_, _, err = (&replayFlags{}).destination(res, dlq, laneConfig{})
		if placeOf(v).account != "000000000000" && err == nil {
			t.Fatalf("replays may go to %s, in another account than the DLQ %s", v, dlq)
		}
	})
}
