package replaytest

import (
	"reflect"
	"strings"
	"testing"

	"github.com/homingdlq/homing/idempotency"
	"github.com/homingdlq/homing/internal/suite"
	"github.com/homingdlq/homing/replay"
)

// Every exported test function of a suite is in its table, once: a test
// left out of the table would never run.
func TestTablesListEveryTestFunction(t *testing.T) {
	suite.CheckTable(t, "QueueHarness", queueRules())
	suite.CheckTable(t, "CompletionsHarness", completionsRules())
}

// Each field of QueueFeatures has one feature named after it, whose
// declared reads that field alone, and SQSFeatures declares every field.
func TestQueueFeaturesCoverEveryField(t *testing.T) {
	typ := reflect.TypeFor[QueueFeatures]()
	features := queueFeatures()
	if len(features) != typ.NumField() {
		t.Fatalf("%d features for %d fields of QueueFeatures", len(features), typ.NumField())
	}
	for i, f := range features {
		field := typ.Field(i)
		if f.name != field.Name {
			t.Errorf("feature %d is named %s, the field %s", i, f.name, field.Name)
		}
		var only QueueFeatures
		reflect.ValueOf(&only).Elem().Field(i).SetBool(true)
		all := SQSFeatures()
		reflect.ValueOf(&all).Elem().Field(i).SetBool(false)
		if !f.declared(only) || f.declared(all) {
			t.Errorf("%s's declared does not read QueueFeatures.%s", f.name, field.Name)
		}
		if !reflect.ValueOf(SQSFeatures()).Field(i).Bool() {
			t.Errorf("SQSFeatures does not declare %s", field.Name)
		}
	}
}

// The completions tests use keys of their own: they pass on one store.
func TestCompletionsTestsShareOneStore(t *testing.T) {
	s := idempotency.NewMemoryStore()
	RunCompletions(t, CompletionsHarness{NewPair: func(*testing.T) (idempotency.Store, replay.Completions) {
		return s, &MemoryCompletions{Store: s, Scope: CompletionsScope}
	}})
}

// A queue name is t's own and a valid SQS name within 80 characters with
// its role, also for long test names that differ only at the front.
func TestQueueNameIsTheTests(t *testing.T) {
	if got := queueName(t, "q.fifo"); got != "TestQueueNameIsTheTests-q.fifo" {
		t.Fatalf("queueName = %q", got)
	}
	long := strings.Repeat(" a very long subtest name", 8)
	var got []string
	for _, name := range []string{"one" + long, "two" + long} {
		t.Run(name, func(t *testing.T) {
			n := queueName(t, "src.fifo")
			if len(n) > 80 || !strings.HasSuffix(n, "-src.fifo") || strings.ContainsAny(n, " /_") {
				t.Fatalf("queueName = %q (%d characters)", n, len(n))
			}
			got = append(got, n)
		})
	}
	if len(got) != 2 || got[0] == got[1] {
		t.Fatalf("two tests got the queue names %q", got)
	}
}

// A test that needs a feature the harness does not declare skips, naming
// the feature, before it touches the implementation.
func TestUndeclaredFeatureSkips(t *testing.T) {
	for name, test := range map[string]func(t *testing.T){
		"AttributeLimit": func(t *testing.T) {
			testMoreThanTenAttributesAreRefused(t, QueueHarness{NewQueue: func(*testing.T, string) string {
				t.Error("a queue was made: the test ran without its feature")
				return ""
			}})
		},
	} {
		var skipped bool
		t.Run(name, func(t *testing.T) {
			defer func() { skipped = t.Skipped() }()
			test(t)
		})
		if !skipped {
			t.Errorf("the test that needs %s did not skip without it", name)
		}
	}
}
