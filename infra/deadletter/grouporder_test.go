package deadletter_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/jsii-runtime-go"

	"github.com/homingdlq/homing/hold"
	"github.com/homingdlq/homing/infra/deadletter"
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
)

// TestGroupOrderValuesAreHolds: the construct's values are the ones the
// functions parse (package hold), which it cannot import.
func TestGroupOrderValuesAreHolds(t *testing.T) {
	for v, want := range map[string]hold.OnError{deadletter.GroupOrderHold: hold.KeepHeld, deadletter.GroupOrderSkip: hold.Skip} {
		if got, err := hold.ParseOnError(v); err != nil || got != want {
			t.Errorf("hold.ParseOnError(%q) = %q, %v; want %q", v, got, err, want)
		}
	}
}

// TestGroupOrder: a FIFO lane holds its groups by default, or skips past a
// dead head when told; then its consumer is told the order and the source
// queue, and may send to the source and use the hold items, and the replay
// function's route says so and it may use the hold items, nothing else of
// the table. Off, and on a standard lane, none of it.
func TestGroupOrder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		f     *fixture
		order string // the order in effect; "" off
	}{
		{"FIFO by default", fifo, deadletter.GroupOrderHold},
		{"FIFO skip", fifoSkip, deadletter.GroupOrderSkip},
		{"FIFO off", fifoOff, ""},
		{"standard", defaults, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.f.get(t)
			id := s.ids()
			on := tc.order != ""

			vars := props(s.resources[id.consumer])["Environment"].(map[string]any)["Variables"].(map[string]any)
			order, hasOrder := vars["GROUP_ORDER"]
			source, hasSource := vars["SOURCE_QUEUE_URL"]
			switch {
			case on && (order != tc.order || mustJSON(source) != mustJSON(refTo(id.source))):
				t.Errorf("consumer: GROUP_ORDER %v, SOURCE_QUEUE_URL %s; want %q and the source queue's URL", order, mustJSON(source), tc.order)
			case !on && (hasOrder || hasSource):
				t.Errorf("consumer: GROUP_ORDER %v, SOURCE_QUEUE_URL %s; want neither", order, mustJSON(source))
			}
			if routes := s.routes(t); len(routes) != 1 || routes[0].Groups != tc.order {
				t.Errorf("REPLAY_ROUTES %s: want one route with groups %q", mustJSON(routes), tc.order)
			}

			onHolds := holdItems(id.idempotency, "orders#holds", "orders#hold#*")
			consumerSource := []string{"sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:ReceiveMessage"}
			want := map[string]map[string][]string{
				"consumer": {id.source: consumerSource},
				"replay":   {id.source: {"sqs:GetQueueAttributes", "sqs:SendMessage"}, id.idempotency: {"dynamodb:BatchGetItem"}},
			}
			if on {
				want["consumer"][id.source] = append(slices.Clone(consumerSource), "sqs:SendMessage")
				want["consumer"][onHolds] = []string{"dynamodb:BatchGetItem", "dynamodb:Query"}
				want["replay"][onHolds] = []string{"dynamodb:BatchGetItem", "dynamodb:GetItem", "dynamodb:Query", "dynamodb:UpdateItem"}
			}
			roles := map[string]string{"consumer": id.role, "replay": id.replayRole}
			for function, resources := range want {
				granted := s.granted(t, roles[function])
				for rid, actions := range resources {
					if got := granted[rid]; !slices.Equal(got, actions) {
						t.Errorf("%s may %v on %s; want %v", function, got, rid, actions)
					}
				}
				for rid, got := range granted {
					if _, ok := resources[rid]; !ok && strings.Contains(rid, "(hold items") {
						t.Errorf("%s may %v on %s; want nothing", function, got, rid)
					}
				}
			}
		})
	}
}

// TestGrantOperatorOnHeldGroups: on a lane that holds its groups, the
// operator may list, count and release them (dlq groups): read and update
// the hold items only, and send the release's drain trigger to the source.
func TestGrantOperatorOnHeldGroups(t *testing.T) {
	for _, tc := range []struct {
		name  string
		order *string
		want  []string // on the hold items; nil for none
	}{
		{"holds", nil, []string{"dynamodb:BatchGetItem", "dynamodb:GetItem", "dynamodb:Query", "dynamodb:UpdateItem"}},
		{"off", jsii.String(deadletter.GroupOrderOff), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stack := newStack()
			p := baseProps()
			p.Fifo = jsii.Bool(true)
			p.Consumer.GroupOrder = tc.order
			lane := deadletter.NewLane(stack, "Orders", p)
			operator := awsiam.NewRole(stack, jsii.String("Operator"), &awsiam.RoleProps{AssumedBy: awsiam.NewAccountRootPrincipal()})
			lane.GrantOperator(operator)
			s := synthesize(stack, lane)
			id := s.ids()
			granted := s.granted(t, s.ref(operator.RoleName()))
			if got := granted[holdItems(id.idempotency, "orders#holds", "orders#hold#*")]; !slices.Equal(got, tc.want) {
				t.Errorf("operator may %v on the hold items; want %v", got, tc.want)
			}
			if got := granted[id.idempotency]; !slices.Equal(got, []string{"dynamodb:BatchGetItem", "dynamodb:GetItem"}) {
				t.Errorf("operator may %v on the idempotency table; want only to read it", got)
			}
			if got := granted[id.source]; !slices.Contains(got, "sqs:SendMessage") || slices.Contains(got, "sqs:ReceiveMessage") {
				t.Errorf("operator may %v on the source queue; want SendMessage (the drain trigger), no receive", got)
			}
		})
	}
}
