package deadletter_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/homingdlq/homing/infra/deadletter"
)

func seconds(s float64) awscdk.Duration { return awscdk.Duration_Seconds(jsii.Number(s)) }

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		modify func(*deadletter.LaneProps)
		want   []string // substrings of the error; none means valid
	}{
		{"defaults", func(*deadletter.LaneProps) {}, nil},
		{"archive margin under an hour", func(p *deadletter.LaneProps) { p.Archive.Margin = awscdk.Duration_Minutes(jsii.Number(30)) },
			[]string{"Archive.Margin is 30m, want 1h..312h"}},
		{"archive transition of a day and a half", func(p *deadletter.LaneProps) { p.Archive.TransitionAfter = awscdk.Duration_Hours(jsii.Number(36)) },
			[]string{"Archive.TransitionAfter (days) is 1.5, want a whole number in 1..36500"}},
		{"maxReceiveCount 1", func(p *deadletter.LaneProps) { p.Queues.MaxReceiveCount = jsii.Number(1) }, nil},
		{"maxReceiveCount 1000", func(p *deadletter.LaneProps) { p.Queues.MaxReceiveCount = jsii.Number(1000) }, nil},
		{"maxReceiveCount 0", func(p *deadletter.LaneProps) { p.Queues.MaxReceiveCount = jsii.Number(0) },
			[]string{"Queues.MaxReceiveCount is 0, want a whole number in 1..1000"}},
		{"maxReceiveCount 1001", func(p *deadletter.LaneProps) { p.Queues.MaxReceiveCount = jsii.Number(1001) },
			[]string{"Queues.MaxReceiveCount is 1001, want a whole number in 1..1000"}},
		{"maxReceiveCount 2.5", func(p *deadletter.LaneProps) { p.Queues.MaxReceiveCount = jsii.Number(2.5) },
			[]string{"Queues.MaxReceiveCount is 2.5, want a whole number in 1..1000"}},
		{"DLQ retention equal to source", func(p *deadletter.LaneProps) {
			p.Queues.SourceRetention = awscdk.Duration_Days(jsii.Number(4))
			p.Queues.DeadLetterRetention = awscdk.Duration_Days(jsii.Number(4))
		}, []string{"Queues.DeadLetterRetention (4d) must be longer than SourceRetention (4d)"}},
		{"DLQ retention shorter than source", func(p *deadletter.LaneProps) {
			p.Queues.DeadLetterRetention = awscdk.Duration_Days(jsii.Number(1))
		}, []string{"Queues.DeadLetterRetention (1d) must be longer than SourceRetention (4d)"}},
		{"retention above 14 days", func(p *deadletter.LaneProps) { p.Queues.DeadLetterRetention = awscdk.Duration_Days(jsii.Number(15)) },
			[]string{"Queues.DeadLetterRetention is 15d, want 1m..14d"}},
		{"visibility below 6x default timeout", func(p *deadletter.LaneProps) { p.Queues.VisibilityTimeout = seconds(179) },
			[]string{"Queues.VisibilityTimeout is 179s, want at least 6x Consumer.Timeout (3m)"}},
		{"visibility below 6x timeout", func(p *deadletter.LaneProps) {
			p.Consumer.Timeout = seconds(5)
			p.Queues.VisibilityTimeout = seconds(20)
		}, []string{"Queues.VisibilityTimeout is 20s, want at least 6x Consumer.Timeout (30s)"}},
		{"visibility exactly 6x timeout", func(p *deadletter.LaneProps) {
			p.Consumer.Timeout = seconds(5)
			p.Queues.VisibilityTimeout = seconds(30)
		}, nil},
		{"max concurrency 1", func(p *deadletter.LaneProps) { p.Consumer.MaxConcurrency = jsii.Number(1) },
			[]string{"Consumer.MaxConcurrency is 1, want a whole number in 2..1000"}},
		{"max concurrency 1001", func(p *deadletter.LaneProps) { p.Consumer.MaxConcurrency = jsii.Number(1001) },
			[]string{"Consumer.MaxConcurrency is 1001, want a whole number in 2..1000"}},
		{"FIFO batch size 11", func(p *deadletter.LaneProps) {
			p.Fifo = jsii.Bool(true)
			p.Consumer.BatchSize = jsii.Number(11)
		}, []string{"Consumer.BatchSize (FIFO) is 11, want a whole number in 1..10"}},
		{"FIFO batching window", func(p *deadletter.LaneProps) {
			p.Fifo = jsii.Bool(true)
			p.Consumer.MaxBatchingWindow = seconds(1)
		}, []string{"Consumer.MaxBatchingWindow is 1s, want 0 for FIFO queues"}},
		{"batch size above 10 without window", func(p *deadletter.LaneProps) { p.Consumer.BatchSize = jsii.Number(100) },
			[]string{"Consumer.BatchSize is 100, above 10 it needs a MaxBatchingWindow of at least 1s"}},
		{"batching window above 300s", func(p *deadletter.LaneProps) { p.Consumer.MaxBatchingWindow = seconds(301) },
			[]string{"Consumer.MaxBatchingWindow is 301s, want 0s..5m"}},
		{"timeout above 15 minutes", func(p *deadletter.LaneProps) { p.Consumer.Timeout = seconds(901) },
			[]string{"Consumer.Timeout is 901s, want 1s..15m"}},
		{"health URL https", func(p *deadletter.LaneProps) { p.Replay.HealthURL = jsii.String("https://tax.example.test") }, nil},
		{"health URL http", func(p *deadletter.LaneProps) { p.Replay.HealthURL = jsii.String("http://127.0.0.1:4580") }, nil},
		{"health URL without a scheme", func(p *deadletter.LaneProps) { p.Replay.HealthURL = jsii.String("tax.example.test") },
			[]string{`Replay.HealthURL is "tax.example.test", want an http:// or https:// URL`}},
		{"health URL with credentials and no scheme", func(p *deadletter.LaneProps) { p.Replay.HealthURL = jsii.String("ops:s3cret@tax.example.test/v1") },
			[]string{`Replay.HealthURL is "REDACTED@tax.example.test/v1", want an http:// or https:// URL`}},
		{"health URL scheme only", func(p *deadletter.LaneProps) { p.Replay.HealthURL = jsii.String("https://") },
			[]string{`Replay.HealthURL is "https://"`}},
		{"name", func(p *deadletter.LaneProps) { p.Name = jsii.String("payments_EU-2") }, nil},
		{"name with a space", func(p *deadletter.LaneProps) { p.Name = jsii.String("my lane") },
			[]string{`Name is "my lane", want 1..64 ASCII letters, digits, '-' and '_', starting with a letter`}},
		{"name starting with a digit", func(p *deadletter.LaneProps) { p.Name = jsii.String("1orders") }, []string{`Name is "1orders"`}},
		{"empty name", func(p *deadletter.LaneProps) { p.Name = jsii.String("") }, []string{`Name is ""`}},
		{"operator that is not an ARN", func(p *deadletter.LaneProps) { p.Queues.OperatorArns = []string{"ops-role"} },
			[]string{`Queues.OperatorArns has "ops-role", want an IAM principal ARN`}},
		{"replay: reserved concurrency 0", func(p *deadletter.LaneProps) {
			replay(p, func(r *deadletter.ReplayProps) { r.ReservedConcurrency = jsii.Number(0) })
		}, []string{"Replay.ReservedConcurrency is 0, want a whole number in 1.."}},
		{"replay: reserved concurrency 1", func(p *deadletter.LaneProps) {
			replay(p, func(r *deadletter.ReplayProps) { r.ReservedConcurrency = jsii.Number(1) })
		}, nil},
		{"environment overrides a wired variable", func(p *deadletter.LaneProps) {
			p.Consumer.Environment = map[string]string{"INVALID_QUEUE_URL": "x", "TAX_BUDGET": "2s"}
		}, []string{"Consumer.Environment sets INVALID_QUEUE_URL, which the lane wires itself"}},
		{"alarm period not whole minutes", func(p *deadletter.LaneProps) { p.Alarms.Period = seconds(90) },
			[]string{"Alarms.Period is 90s, want a whole number of minutes"}},
		{"replay: cron schedule with its interval", func(p *deadletter.LaneProps) {
			replay(p, func(r *deadletter.ReplayProps) {
				r.Schedule = jsii.String("cron(0 * * * ? *)")
				r.Interval = awscdk.Duration_Hours(jsii.Number(1))
			})
		}, nil},
		{"replay: cron schedule without interval", func(p *deadletter.LaneProps) {
			replay(p, func(r *deadletter.ReplayProps) { r.Schedule = jsii.String("cron(0 3 * * ? *)") })
		}, []string{`Replay.Interval is required with the Schedule "cron(0 3 * * ? *)"`}},
		{"replay: interval 30s", func(p *deadletter.LaneProps) {
			replay(p, func(r *deadletter.ReplayProps) { r.Interval = seconds(30) })
		}, []string{"Replay.Interval is 30s, want a whole number of minutes in 1m..12h"}},
		{"replay: daily rate", func(p *deadletter.LaneProps) {
			replay(p, func(r *deadletter.ReplayProps) { r.Schedule = jsii.String("rate(1 day)") })
		}, []string{"Replay.Interval is 1d, want a whole number of minutes in 1m..12h"}},
		{"replay: rate in hours", func(p *deadletter.LaneProps) {
			replay(p, func(r *deadletter.ReplayProps) { r.Schedule = jsii.String("rate(2 hours)") })
		}, nil},
		{"replay: schedule not rate or cron", func(p *deadletter.LaneProps) {
			replay(p, func(r *deadletter.ReplayProps) { r.Schedule = jsii.String("every 15 minutes") })
		}, []string{`Replay.Schedule is "every 15 minutes", want an EventBridge schedule expression, rate(...) or cron(...)`}},
		{"replay: schedule not closed", func(p *deadletter.LaneProps) {
			replay(p, func(r *deadletter.ReplayProps) { r.Schedule = jsii.String("rate(5 minutes") })
		}, []string{`Replay.Schedule is "rate(5 minutes"`}},
		{"replay: timeout 10s", func(p *deadletter.LaneProps) {
			replay(p, func(r *deadletter.ReplayProps) { r.Timeout = seconds(10) })
		}, nil},
		{"replay: timeout 9s", func(p *deadletter.LaneProps) {
			replay(p, func(r *deadletter.ReplayProps) { r.Timeout = seconds(9) })
		}, []string{"Replay.Timeout is 9s, want 10s..15m"}},
		{"replay: timeout 901s", func(p *deadletter.LaneProps) {
			replay(p, func(r *deadletter.ReplayProps) { r.Timeout = seconds(901) })
		}, []string{"Replay.Timeout is 901s, want 10s..15m"}},
		{"replay: deadline margin not shorter than the timeout", func(p *deadletter.LaneProps) {
			replay(p, func(r *deadletter.ReplayProps) { r.Timeout = seconds(10); r.DeadlineMargin = seconds(10) })
		}, []string{"Replay.DeadlineMargin is 10s, want above 0 and shorter than Timeout (10s)"}},
		{"replay: default deadline margin against a short timeout", func(p *deadletter.LaneProps) {
			replay(p, func(r *deadletter.ReplayProps) { r.Timeout = seconds(10) })
		}, nil},
		{"replay: backoff base above max", func(p *deadletter.LaneProps) {
			replay(p, func(r *deadletter.ReplayProps) { r.BackoffBase = seconds(60); r.BackoffMax = seconds(30) })
		}, []string{"Replay.BackoffBase (1m) and BackoffMax (30s): want 0 < BackoffBase <= BackoffMax (unset: 5m and 4h)"}},
		{"replay: backoff max below the function's default base", func(p *deadletter.LaneProps) {
			replay(p, func(r *deadletter.ReplayProps) { r.BackoffMax = seconds(60) })
		}, []string{"Replay.BackoffBase (5m) and BackoffMax (1m)"}},
		{"replay: rescue window as long as the DLQ retention", func(p *deadletter.LaneProps) {
			replay(p, func(r *deadletter.ReplayProps) { r.ExpiryRescueWindow = awscdk.Duration_Days(jsii.Number(14)) })
		}, []string{"Replay.ExpiryRescueWindow is 14d, want above 0 and shorter than Queues.DeadLetterRetention (14d)"}},
		{"replay: default rescue window against a 1 day DLQ retention", func(p *deadletter.LaneProps) {
			p.Queues.SourceRetention = awscdk.Duration_Hours(jsii.Number(12))
			p.Queues.DeadLetterRetention = awscdk.Duration_Days(jsii.Number(1))
		}, []string{"Replay.ExpiryRescueWindow is 1d, want above 0 and shorter than Queues.DeadLetterRetention (1d)"}},
		{"replay: counts out of range", func(p *deadletter.LaneProps) {
			replay(p, func(r *deadletter.ReplayProps) {
				r.MaxReplays = jsii.Number(101)
				r.MaxPerRun = jsii.Number(0)
				r.CanaryLimit = jsii.Number(1.5)
				r.RefillThreshold = jsii.Number(-1)
				r.Workers = jsii.Number(17)
				r.Rate = jsii.Number(0.05)
				r.MemorySize = jsii.Number(64)
			})
		}, []string{
			"Replay.MaxReplays is 101, want a whole number in 1..100",
			"Replay.MaxPerRun is 0, want a whole number in 1..",
			"Replay.CanaryLimit is 1.5, want a whole number",
			"Replay.RefillThreshold is -1, want a whole number",
			"Replay.Workers is 17, want a whole number in 1..16",
			"Replay.Rate is 0.05, want 0.1..3000 messages per second",
			"Replay.MemorySize is 64, want a whole number of MB in 128..10240",
		}},
		{"replay: empty route name", func(p *deadletter.LaneProps) {
			replay(p, func(r *deadletter.ReplayProps) { r.RouteName = jsii.String(" ") })
		}, []string{"Replay.RouteName is empty"}},
		{"replay: route name past the sealed metadata's bound", func(p *deadletter.LaneProps) {
			replay(p, func(r *deadletter.ReplayProps) { r.RouteName = jsii.String(strings.Repeat("r", 257)) })
		}, []string{"Replay.RouteName is 257 bytes, want at most 256"}},
		{"replay: environment sets wired and tuning variables", func(p *deadletter.LaneProps) {
			replay(p, func(r *deadletter.ReplayProps) {
				r.Environment = map[string]string{"REPLAY_ROUTES": "[]", "HEALTH_URL": "x", "MAX_REPLAYS": "9", "LOG_LEVEL": "debug"}
			})
		}, []string{
			"Replay.Environment sets REPLAY_ROUTES, which the lane wires itself or from a ReplayProps field",
			"Replay.Environment sets HEALTH_URL",
			"Replay.Environment sets MAX_REPLAYS",
		}},
		{"ConsumerRecords unset", func(p *deadletter.LaneProps) { p.Consumer.Records = "" },
			[]string{"Consumer.Records is required: deadletter.ConsumerWritesRecords if the consumer writes homing's completion records"}},
		{"ConsumerRecords of neither kind", func(p *deadletter.LaneProps) { p.Consumer.Records = "yes" },
			[]string{`Consumer.Records is "yes", want deadletter.ConsumerWritesRecords ("writes-records") or deadletter.ConsumerWritesNoRecords ("no-records")`}},
		{"records without a key", func(p *deadletter.LaneProps) { p.Consumer.Key = nil },
			[]string{"Consumer.Key is required with ConsumerWritesRecords: the replay finds the consumer's records under <Consumer.Name>#<key>"}},
		{"no records, no key", func(p *deadletter.LaneProps) {
			p.Consumer.Records = deadletter.ConsumerWritesNoRecords
			p.Consumer.Key = nil
		}, nil},
		{"a nested key and a payload hash", func(p *deadletter.LaneProps) {
			p.Consumer.Key = jsii.String("detail.shipment.id")
			p.Consumer.PayloadHash = jsii.String("detail.shipment")
		}, nil},
		{"a key that is no JMESPath", func(p *deadletter.LaneProps) { p.Consumer.Key = jsii.String("orders[") },
			[]string{`Consumer.Key is "orders[": not a JMESPath expression`}},
		{"an empty payload hash", func(p *deadletter.LaneProps) { p.Consumer.PayloadHash = jsii.String(" ") },
			[]string{`Consumer.PayloadHash is " ": want a JMESPath expression (unset means none)`}},
		{"a key too long", func(p *deadletter.LaneProps) {
			p.Consumer.Key = jsii.String(strings.Repeat("a", deadletter.MaxExpressionBytes+1))
		},
			[]string{"Consumer.Key is \"" + strings.Repeat("a", deadletter.MaxExpressionBytes+1) + "\": 257 bytes, want at most 256"}},
		{"the consumer's environment sets the key", func(p *deadletter.LaneProps) {
			p.Consumer.Environment = map[string]string{"KEY_EXPRESSION": "id", "PAYLOAD_HASH_EXPRESSION": "a"}
		}, []string{"Consumer.Environment sets KEY_EXPRESSION, which the lane wires itself", "Consumer.Environment sets PAYLOAD_HASH_EXPRESSION, which the lane wires itself"}},
		{"group order on a standard lane", func(p *deadletter.LaneProps) { p.Consumer.GroupOrder = jsii.String(deadletter.GroupOrderHold) },
			[]string{`Consumer.GroupOrder is "hold", but the lane is standard: only FIFO queues have message groups (set LaneProps.Fifo, or leave GroupOrder unset)`}},
		{"skip on a standard lane", func(p *deadletter.LaneProps) { p.Consumer.GroupOrder = jsii.String(deadletter.GroupOrderSkip) },
			[]string{`Consumer.GroupOrder is "skip", but the lane is standard`}},
		{"off on a standard lane", func(p *deadletter.LaneProps) { p.Consumer.GroupOrder = jsii.String(deadletter.GroupOrderOff) }, nil},
		{"skip on a FIFO lane", func(p *deadletter.LaneProps) {
			p.Fifo = jsii.Bool(true)
			p.Consumer.GroupOrder = jsii.String(deadletter.GroupOrderSkip)
		}, nil},
		{"an unknown group order", func(p *deadletter.LaneProps) {
			p.Fifo = jsii.Bool(true)
			p.Consumer.GroupOrder = jsii.String("strict")
		}, []string{`Consumer.GroupOrder is "strict", want "hold", "skip" or "off"`}},
		{"the consumer's environment sets the group order", func(p *deadletter.LaneProps) {
			p.Fifo = jsii.Bool(true)
			p.Consumer.Environment = map[string]string{"GROUP_ORDER": "skip", "SOURCE_QUEUE_URL": "https://sqs.example/q.fifo", "PARKING_QUEUE_URL": "https://sqs.example/p.fifo",
				"LEDGER_TABLE": "l", "SOURCE_RETENTION": "1h", "MAX_RECEIVES": "5"}
		}, []string{"Consumer.Environment sets GROUP_ORDER, which the lane wires itself", "Consumer.Environment sets SOURCE_QUEUE_URL, which the lane wires itself",
			"Consumer.Environment sets PARKING_QUEUE_URL, which", "Consumer.Environment sets LEDGER_TABLE, which", "Consumer.Environment sets SOURCE_RETENTION, which",
			"Consumer.Environment sets MAX_RECEIVES, which"}},
		{"a backstop too close for the consumer to park first", func(p *deadletter.LaneProps) {
			p.Fifo = jsii.Bool(true)
			p.Queues.MaxReceiveCount = jsii.Number(11)
		}, []string{"Queues.MaxReceiveCount is 11, want at least 12 on a FIFO lane that keeps group order: the consumer parks a head 10 deliveries before the redrive (its MAX_RECEIVES)"}},
		{"the closest backstop", func(p *deadletter.LaneProps) {
			p.Fifo = jsii.Bool(true)
			p.Queues.MaxReceiveCount = jsii.Number(12)
		}, nil},
		{"a close redrive without group order", func(p *deadletter.LaneProps) {
			p.Fifo = jsii.Bool(true)
			p.Consumer.GroupOrder = jsii.String(deadletter.GroupOrderOff)
			p.Queues.MaxReceiveCount = jsii.Number(3)
		}, nil},
		{"every problem at once", func(p *deadletter.LaneProps) {
			p.Queues.MaxReceiveCount = jsii.Number(0)
			p.Consumer.MaxConcurrency = jsii.Number(1)
			p.Queues.VisibilityTimeout = seconds(10)
		}, []string{"Queues.MaxReceiveCount is 0", "Consumer.MaxConcurrency is 1", "Queues.VisibilityTimeout is 10s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := baseProps()
			tc.modify(p)
			err := p.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if !errors.Is(err, deadletter.ErrInvalidProps) {
				t.Fatalf("Validate = %v, want an error wrapping ErrInvalidProps", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate = %q\nwant it to contain %q", err, w)
				}
			}
		})
	}
	if err := (*deadletter.LaneProps)(nil).Validate(); err == nil || !strings.Contains(err.Error(), "Consumer.Records is required") {
		t.Errorf("nil props: %v, want Consumer.Records is required (the one prop without a default)", err)
	}

	t.Run("a health URL token is left to its deploy parameter", func(t *testing.T) {
		p := baseProps()
		param := awscdk.NewCfnParameter(newStack(), jsii.String("HealthUrl"), &awscdk.CfnParameterProps{Type: jsii.String("String")})
		p.Replay.HealthURL = param.ValueAsString()
		if err := p.Validate(); err != nil {
			t.Errorf("Validate: %v", err)
		}
	})

	t.Run("replay: a schedule token is left to EventBridge, its interval is the props'", func(t *testing.T) {
		p := baseProps()
		param := awscdk.NewCfnParameter(newStack(), jsii.String("Schedule"), &awscdk.CfnParameterProps{Type: jsii.String("String")})
		p.Replay.Schedule = param.ValueAsString()
		p.Replay.Interval = awscdk.Duration_Minutes(jsii.Number(30))
		if err := p.Validate(); err != nil {
			t.Errorf("Validate: %v", err)
		}
		p.Replay.Interval = nil
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "Replay.Interval is required with the Schedule") {
			t.Errorf("Validate without Interval: %v", err)
		}
	})
}

// replay modifies p's ReplayProps by modify.
func replay(p *deadletter.LaneProps, modify func(*deadletter.ReplayProps)) {
	modify(&p.Replay)
}

// panicOf runs f and returns the error it panicked with.
func panicOf(f func()) (err error) {
	defer func() {
		switch r := recover().(type) {
		case nil:
		case error:
			err = r
		default:
			err = fmt.Errorf("%v", r)
		}
	}()
	f()
	return nil
}

// TestNewLanePanics: synthesis fails with the validation error (the CDK
// convention for invalid props), before any resource is added.
func TestNewLanePanics(t *testing.T) {
	for _, tc := range []struct {
		name   string
		modify func(*deadletter.LaneProps)
		want   string
	}{
		{"maxReceiveCount 0", func(p *deadletter.LaneProps) { p.Queues.MaxReceiveCount = jsii.Number(0) }, "Queues.MaxReceiveCount is 0, want a whole number in 1..1000"},
		{"maxReceiveCount 1001", func(p *deadletter.LaneProps) { p.Queues.MaxReceiveCount = jsii.Number(1001) }, "Queues.MaxReceiveCount is 1001, want a whole number in 1..1000"},
		{"DLQ retention <= source", func(p *deadletter.LaneProps) { p.Queues.DeadLetterRetention = awscdk.Duration_Days(jsii.Number(4)) }, "Queues.DeadLetterRetention (4d) must be longer than SourceRetention (4d)"},
		{"visibility < 6x timeout", func(p *deadletter.LaneProps) { p.Queues.VisibilityTimeout = seconds(60) }, "Queues.VisibilityTimeout is 1m, want at least 6x Consumer.Timeout (3m)"},
		{"max concurrency 1", func(p *deadletter.LaneProps) { p.Consumer.MaxConcurrency = jsii.Number(1) }, "Consumer.MaxConcurrency is 1, want a whole number in 2..1000"},
		{"replay schedule", func(p *deadletter.LaneProps) {
			p.Replay.Schedule = jsii.String("15 minutes")
		}, `Replay.Schedule is "15 minutes", want an EventBridge schedule expression, rate(...) or cron(...)`},
		{"replay timeout", func(p *deadletter.LaneProps) {
			p.Replay.Timeout = awscdk.Duration_Minutes(jsii.Number(16))
		}, "Replay.Timeout is 16m, want 10s..15m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stack := newStack()
			p := baseProps()
			tc.modify(p)
			err := panicOf(func() { deadletter.NewLane(stack, "Orders", p) })
			if !errors.Is(err, deadletter.ErrInvalidProps) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewLane panicked with %v\nwant ErrInvalidProps and %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), `deadletter.NewLane "Orders"`) {
				t.Errorf("the error does not name the lane: %v", err)
			}
			if n := len(*stack.Node().Children()); n != 0 {
				t.Errorf("the stack got %d children before the panic", n)
			}
		})
	}

	t.Run("missing bootstrap", func(t *testing.T) {
		p := baseProps()
		p.CodeDir = jsii.String(filepath.Join(testRoot, "no-such-bin"))
		err := panicOf(func() { deadletter.NewLane(newStack(), "Orders", p) })
		if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "consumer code") ||
			!strings.Contains(err.Error(), "build your consumer's bootstrap for Lambda, GOOS=linux GOARCH=arm64, into Consumer.CodeDir, or pass your function as Consumer.Function") {
			t.Fatalf("NewLane panicked with %v, want a missing-file error that names the consumer and says how to build", err)
		}
	})

	t.Run("missing replay bootstrap", func(t *testing.T) {
		dir := filepath.Join(testRoot, "consumer-only")
		if err := writeBootstrap(dir, "consumer"); err != nil {
			t.Fatal(err)
		}
		p := baseProps()
		p.CodeDir = jsii.String(dir)
		stack := newStack()
		err := panicOf(func() { deadletter.NewLane(stack, "Orders", p) })
		want := filepath.Join(dir, "replay", "bootstrap")
		if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), `deadletter.NewLane "Orders": replay code: `) ||
			!strings.Contains(err.Error(), want) ||
			!strings.Contains(err.Error(), "CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go build -tags lambda.norpc -trimpath -o "+filepath.Join(dir, "replay")+"/bootstrap github.com/homingdlq/homing/functions/replay") ||
			!strings.Contains(err.Error(), "or set neither CodeDir nor Replay.CodeDir, and the lane builds it at synth") {
			t.Fatalf("NewLane panicked with %v, want a missing-file error for %s that says how to build", err, want)
		}
		if n := len(*stack.Node().Children()); n != 0 {
			t.Errorf("the stack got %d children before the panic", n)
		}
	})
}
