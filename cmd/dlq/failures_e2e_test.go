//go:build e2e

package main

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/homingdlq/homing/internal/tools/emulatortest"
	"github.com/homingdlq/homing/replay"
)

// taxClass is the failure class of the sample's tax client when its
// service answers 503, as the tax stand-in does while down.
const taxClass = "tax-service-503"

// An outage of the tax service dead-letters orders, each with the failure
// record its last delivery wrote: inspect counts them under the tax
// client's class, peek shows each one's class, message and failures, and
// replay --error replays that class and no other.
func TestE2EFailureClasses(t *testing.T) {
	l := deployedLane(t)
	admin := emulatortest.NewTaxAdmin(t, emulatortest.Output(t, l.stack, "TaxServiceAdminUrl"))
	admin.SetMode("down")
	t.Cleanup(func() { admin.SetMode("up") })
	ids := []string{"ORD-" + l.run + "-F1", "ORD-" + l.run + "-F2", "ORD-" + l.run + "-F3"}
	for _, id := range ids {
		l.send(t, l.out[outSource], l.orderBody(t, id), nil)
	}
	t.Cleanup(func() { l.remove(t, l.out[outDLQ]) })

	// MAX_RECEIVE_COUNT deliveries (3 locally), a visibility timeout apart,
	// then the redrive.
	mine := map[string]peekedMessage{}
	emulatortest.Eventually(t, 180*time.Second, func() (bool, string) {
		r := l.dlq(t, "--json", "peek", "-n", "1000")
		r.want(t, exitOK)
		for _, m := range decode[peekReport](t, r).Messages {
			if slices.Contains(ids, m.Key) && m.Failure != nil {
				mine[m.Key] = m
			}
		}
		return len(mine) == len(ids), fmt.Sprintf("%d of %d orders dead-lettered with a failure record", len(mine), len(ids))
	})
	// A delivery that outlives the consumer's timeout (the tax client's
	// retries, on a loaded machine) leaves its claim locked, and the next
	// delivery fails on the lock: the record is of the last delivery, so
	// such an order's class is the idempotency store's. Each order has a
	// record of its 3 deliveries; the tax outage's are the tax class.
	var tax []string
	for id, m := range mine {
		f := m.Failure
		if f.Failures != 3 || f.Replays != 0 || f.FirstAt.IsZero() || f.LastAt.Before(f.FirstAt) {
			t.Errorf("%s: failure %+v, want 3 deliveries", id, f)
		}
		switch {
		case f.Class == taxClass && strings.Contains(f.Message, "503"):
			tax = append(tax, id)
		case strings.Contains(f.Message, "being processed by another invocation"):
			t.Logf("%s: its last delivery failed on the claim of a delivery that outlived its timeout: %s: %s", id, f.Class, f.Message)
		default:
			t.Errorf("%s: failure %+v, want %s", id, f, taxClass)
		}
	}
	if len(tax) == 0 {
		t.Fatalf("none of the orders failed with %s: %+v", taxClass, mine)
	}

	r := l.dlq(t, "--json", "inspect", "--sample", "1000")
	r.want(t, exitOK)
	rep := decode[inspectReport](t, r)
	i := slices.IndexFunc(rep.Sample.ByClass, func(c classCount) bool { return c.Class == taxClass })
	if !rep.FailureRecords.Read || i < 0 || rep.Sample.ByClass[i].Messages < len(tax) || rep.Sample.ByClass[i].OldestFailedAt.IsZero() {
		t.Fatalf("inspect: byClass %+v, failure records %+v; want at least %d %s", rep.Sample.ByClass, rep.FailureRecords, len(tax), taxClass)
	}
	r = l.dlq(t, "inspect", "--sample", "1000")
	r.want(t, exitOK)
	if !strings.Contains(r.stdout, "ERROR CLASS") || !strings.Contains(r.stdout, " "+taxClass+" since ") {
		t.Fatalf("inspect table:\n%s", r.stdout)
	}
	r = l.dlq(t, "peek", "-n", "1000", "--width", "400")
	r.want(t, exitOK)
	if !regexp.MustCompile(`failed +`+taxClass+`: [^\n]*tax service answered 503`).MatchString(r.stdout) ||
		!regexp.MustCompile(`failures +3 in its latest round; first `).MatchString(r.stdout) {
		t.Fatalf("peek table lacks the class, message and failures:\n%s", r.stdout)
	}

	// replay --error: a dry run of another class replays none of them, a
	// dry run of the tax class every one of it; once the service is back a run
	// of the tax class replays them and the consumer invoices them. The
	// run's own route name keeps the scheduled runs' gates out of it.
	base := []string{"--json", "replay", "--route", "e2e-" + l.run}
	for _, id := range tax {
		base = append(base, "--order", id)
	}
	r = l.dlq(t, append(base, "--dry-run", "--no-health-gate", "--error", "panic")...)
	r.want(t, exitOK)
	if s := decode[replay.Summary](t, r); s.Total.Replayed != 0 || s.Filter == nil || !slices.Equal(s.Filter.ErrorClasses, []string{"panic"}) {
		t.Fatalf("dry run of class panic = %+v", s)
	}
	emulatortest.Eventually(t, 30*time.Second, func() (bool, string) {
		r := l.dlq(t, append(base, "--dry-run", "--no-health-gate", "--error", taxClass)...)
		r.want(t, exitOK)
		s := decode[replay.Summary](t, r)
		return s.Total.Replayed == len(tax), fmt.Sprintf("dry run of %s: %+v", taxClass, s.Total)
	})
	admin.SetMode("up")
	replayed := 0
	emulatortest.Eventually(t, 90*time.Second, func() (bool, string) {
		r := l.dlq(t, append(base, "--yes", "--error", taxClass)...)
		if r.code != exitOK && r.code != exitIncomplete {
			t.Fatalf("replay: exit %d: %s", r.code, r.stderr)
		}
		s := decode[replay.Summary](t, r)
		replayed += s.Total.Replayed
		left := 0
		r = l.dlq(t, "--json", "peek", "-n", "1000")
		for _, m := range decode[peekReport](t, r).Messages {
			if slices.Contains(tax, m.Key) {
				left++
			}
		}
		return left == 0, fmt.Sprintf("replayed %d, %d of the %s orders still in the DLQ", replayed, left, taxClass)
	})
	// The schedule may have taken one meanwhile: the class's run took
	// the others, and every order is invoiced once.
	if replayed == 0 {
		t.Fatal("dlq replay --error replayed none of the orders")
	}
	emulatortest.Eventually(t, 60*time.Second, func() (bool, string) {
		inv := admin.Invoices()
		n := 0
		for _, id := range tax {
			n += inv[id]
		}
		return n == len(tax), fmt.Sprintf("invoices %v", inv)
	})
}
