package deadletter_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	homingfifo "github.com/homingdlq/homing/fifo"
	"github.com/homingdlq/homing/infra/deadletter"
	"github.com/homingdlq/homing/internal/settings"
)

// fifoWith is a FIFO lane with Consumer.GroupOrder order.
func fifoWith(order string) *fixture {
	return &fixture{props: func() *deadletter.LaneProps {
		p := baseProps()
		p.Fifo = jsii.Bool(true)
		p.Consumer.GroupOrder = jsii.String(order)
		return p
	}}
}

var (
	// fifoSkip: a FIFO lane that lets a group go on past a dead head.
	fifoSkip = fifoWith(deadletter.GroupOrderSkip)
	// fifoOff: a FIFO lane that keeps SQS's order only.
	fifoOff = fifoWith(deadletter.GroupOrderOff)
	// fifoTuned: a FIFO lane that parks heads early, with a short
	// retention (the local profile's example lane does so).
	fifoTuned = &fixture{props: func() *deadletter.LaneProps {
		p := baseProps()
		p.Fifo = jsii.Bool(true)
		p.Queues.MaxReceiveCount = jsii.Number(14)
		p.Queues.SourceRetention = awscdk.Duration_Hours(jsii.Number(6))
		return p
	}}
)

// TestGroupOrderValuesAreFifos: the construct's values are the ones the
// consumer parses (package fifo), and its defaults the Keeper's.
func TestGroupOrderValuesAreFifos(t *testing.T) {
	for v, want := range map[string]homingfifo.OnError{deadletter.GroupOrderHold: homingfifo.Hold, deadletter.GroupOrderSkip: homingfifo.Skip} {
		if got, err := homingfifo.ParseOnError(v); err != nil || got != want {
			t.Errorf("homingfifo.ParseOnError(%q) = %q, %v; want %q", v, got, err, want)
		}
	}
	if got := deadletter.DefaultGroupMaxReceiveCount - deadletter.ParkMargin; got != settings.DefaultMaxReceives {
		t.Errorf("the default backstop parks at %d deliveries, fifo.Keeper at %d", got, settings.DefaultMaxReceives)
	}
	if got := deadletter.DefaultSourceRetentionDays * 24; got != int(settings.DefaultSourceRetention.Hours()) {
		t.Errorf("the default source retention is %dh, fifo.Keeper's %v", got, settings.DefaultSourceRetention)
	}
}

// envOf is the environment of the function fn.
func (s *synthesized) envOf(fn string) map[string]any {
	return props(s.resources[fn])["Environment"].(map[string]any)["Variables"].(map[string]any)
}

// TestGroupOrder: a FIFO lane keeps group order by default (hold), or
// skips past a dead head when told. Then the redrive is a far backstop,
// the consumer is told the order, the source and parking queues, the
// source's retention and when to park (and with hold the ledger), may send
// to the parking queue and with hold use the parks' partition of the
// ledger, and nothing else on it; the lane has no third table, and the
// replay function is as on any lane. Off, and on a standard lane, none of
// it.
func TestGroupOrder(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		f                       *fixture
		order                   string // the order in effect; "" off
		maxReceiveCount         float64
		retention, parkReceives string // the consumer's SOURCE_RETENTION, MAX_RECEIVES
	}{
		{"FIFO by default", fifo, deadletter.GroupOrderHold, 100, "96h", "90"},
		{"FIFO skip", fifoSkip, deadletter.GroupOrderSkip, 100, "96h", "90"},
		{"FIFO tuned", fifoTuned, deadletter.GroupOrderHold, 14, "6h", "4"},
		{"FIFO off", fifoOff, "", 10, "", ""},
		{"standard", defaults, "", 10, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.f.get(t)
			id := s.ids()
			on := tc.order != ""
			if n := len(s.ofType("AWS::DynamoDB::Table")); n != 2 {
				t.Errorf("%d tables, want the idempotency table and the ledger", n)
			}
			redrive := props(s.resources[id.source])["RedrivePolicy"].(map[string]any)
			if redrive["maxReceiveCount"] != tc.maxReceiveCount {
				t.Errorf("maxReceiveCount %v, want %v", redrive["maxReceiveCount"], tc.maxReceiveCount)
			}

			vars := s.envOf(id.consumer)
			want := map[string]any{}
			if on {
				want = map[string]any{
					"GROUP_ORDER":       tc.order,
					"SOURCE_QUEUE_URL":  refTo(id.source),
					"PARKING_QUEUE_URL": refTo(id.parking),
					"SOURCE_RETENTION":  tc.retention,
					"MAX_RECEIVES":      tc.parkReceives,
				}
				if tc.order == deadletter.GroupOrderHold {
					want["LEDGER_TABLE"] = refTo(id.ledger)
				}
			}
			for _, k := range []string{"GROUP_ORDER", "SOURCE_QUEUE_URL", "PARKING_QUEUE_URL", "SOURCE_RETENTION", "MAX_RECEIVES", "LEDGER_TABLE", "HOLD_TABLE"} {
				got, ok := vars[k]
				w, wantIt := want[k]
				if ok != wantIt || mustJSON(got) != mustJSON(w) {
					t.Errorf("consumer %s = %s (set %t), want %s (set %t)", k, mustJSON(got), ok, mustJSON(w), wantIt)
				}
			}
			if _, ok := s.envOf(id.replay)["HOLD_TABLE"]; ok {
				t.Error("the replay function is told a HOLD_TABLE")
			}
			if routes := s.routes(t); len(routes) != 1 {
				t.Errorf("REPLAY_ROUTES %s: want one route (routes says nothing of groups)", mustJSON(routes))
			}

			// The event source mapping's grant lets the consumer set a
			// head's visibility (sqs:ChangeMessageVisibility).
			consumer := map[string][]string{
				id.source:      {"sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:ReceiveMessage"},
				id.idempotency: {"dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"},
				id.invalid:     {"sqs:SendMessage"},
				id.logs:        {"logs:CreateLogStream", "logs:PutLogEvents"},
			}
			if on {
				consumer[id.parking] = []string{"sqs:SendMessage"}
			}
			if tc.order == deadletter.GroupOrderHold {
				consumer[onPartition(id.ledger, settings.GroupsPartition)] = []string{"dynamodb:BatchGetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"}
			}
			if got := s.granted(t, id.role); mustJSON(got) != mustJSON(consumer) {
				t.Errorf("consumer may %s\nwant %s", mustJSON(got), mustJSON(consumer))
			}
			replay := s.granted(t, id.replayRole)
			for rid := range replay {
				if strings.Contains(rid, " partition ") {
					t.Errorf("replay may %v on %s: it has no part in group order", replay[rid], rid)
				}
			}

			// The parking queue's policy lets the consumer send there.
			senders := mustJSON(s.queuePolicy(t, id.parking))
			if named := strings.Contains(senders, `"`+id.role+`"`); named != on {
				t.Errorf("the parking queue's senders name the consumer's role: %t, want %t: %s", named, on, senders)
			}
		})
	}
}

// operatorOn is a FIFO lane of Consumer.GroupOrder order (nil: the
// default) with an operator role granted, and that role's logical id.
func operatorOn(order *string) (*synthesized, string) {
	stack := newStack()
	p := baseProps()
	p.Fifo = jsii.Bool(true)
	p.Consumer.GroupOrder = order
	lane := deadletter.NewLane(stack, "Orders", p)
	operator := awsiam.NewRole(stack, jsii.String("Operator"), &awsiam.RoleProps{AssumedBy: awsiam.NewAccountRootPrincipal()})
	lane.GrantOperator(operator)
	s := synthesize(stack, lane)
	return s, s.ref(operator.RoleName())
}

// TestGrantOperatorOnParkedGroups: on a lane that parks its groups, the
// operator may list and release them (dlq groups): move the parking
// queue's records to the source, and read and end parks on the ledger's
// partition of parks only; on a lane that parks none, nothing more than
// on any lane.
func TestGrantOperatorOnParkedGroups(t *testing.T) {
	for _, tc := range []struct {
		name  string
		order *string
		parks []string // on the parks' partition; nil for none
	}{
		{"hold", nil, []string{"dynamodb:BatchGetItem", "dynamodb:DeleteItem"}},
		{"skip", jsii.String(deadletter.GroupOrderSkip), nil},
		{"off", jsii.String(deadletter.GroupOrderOff), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, role := operatorOn(tc.order)
			id := s.ids()
			granted := s.granted(t, role)
			if got := granted[onPartition(id.ledger, settings.GroupsPartition)]; !slices.Equal(got, tc.parks) {
				t.Errorf("operator may %v on the parks, want %v", got, tc.parks)
			}
			if got := granted[id.ledger]; !slices.Equal(got, []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem"}) {
				t.Errorf("operator may %v on the ledger", got)
			}
			if got := granted[id.parking]; !slices.Equal(got, []string{"sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:ReceiveMessage", "sqs:SendMessage"}) {
				t.Errorf("operator may %v on the parking queue", got)
			}
			if got := granted[id.source]; !slices.Contains(got, "sqs:SendMessage") || slices.Contains(got, "sqs:ReceiveMessage") {
				t.Errorf("operator may %v on the source queue; want SendMessage (a release), no receive", got)
			}
			if got := granted[id.idempotency]; !slices.Equal(got, []string{"dynamodb:BatchGetItem", "dynamodb:GetItem"}) {
				t.Errorf("operator may %v on the idempotency table; want only to read it", got)
			}
		})
	}
}

// TestGroupBackstopOnAdoptedQueue: on the team's FIFO queue the lane sets
// the backstop's receive count whatever the queue's own, unless GroupOrder
// is off or the props set one.
func TestGroupBackstopOnAdoptedQueue(t *testing.T) {
	for _, tc := range []struct {
		name  string
		order *string
		count *float64
		want  float64
	}{
		{"hold", nil, nil, deadletter.DefaultGroupMaxReceiveCount},
		{"hold, a count of the props", nil, jsii.Number(30), 30},
		{"off", jsii.String(deadletter.GroupOrderOff), nil, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stack := newStack()
			own := awssqs.NewQueue(stack, jsii.String("OwnDLQ"), &awssqs.QueueProps{Fifo: jsii.Bool(true), Encryption: awssqs.QueueEncryption_SQS_MANAGED, EnforceSSL: jsii.Bool(true)})
			q := teamQueue(stack, &awssqs.QueueProps{QueueName: jsii.String("captured.fifo"), Fifo: jsii.Bool(true),
				VisibilityTimeout: awscdk.Duration_Minutes(jsii.Number(3)),
				DeadLetterQueue:   &awssqs.DeadLetterQueue{Queue: own, MaxReceiveCount: jsii.Number(5)},
			})
			p := baseProps()
			p.Queues.SourceQueue = q
			p.Queues.DeadLetterQueue = own
			p.Queues.MaxReceiveCount = tc.count
			p.Consumer.GroupOrder = tc.order
			s := synthesize(stack, deadletter.NewLane(stack, "Payments", p))
			redrive := props(s.resources[s.ref(q.QueueArn())])["RedrivePolicy"].(map[string]any)
			if redrive["maxReceiveCount"] != tc.want {
				t.Errorf("maxReceiveCount %v, want %v", redrive["maxReceiveCount"], tc.want)
			}
		})
	}
}
