package deadletter_test

import (
	"slices"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/jsii-runtime-go"

	"github.com/homingdlq/homing/hold"
	"github.com/homingdlq/homing/infra/deadletter"
	"github.com/homingdlq/homing/settings"
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
	// retainedFIFO: a FIFO lane whose tables are retained and so
	// protected from deletion.
	retainedFIFO = &fixture{props: func() *deadletter.LaneProps {
		p := baseProps()
		p.Fifo = jsii.Bool(true)
		p.RemovalPolicy = awscdk.RemovalPolicy_RETAIN
		return p
	}}
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

// envOf is the environment of the function fn.
func (s *synthesized) envOf(fn string) map[string]any {
	return props(s.resources[fn])["Environment"].(map[string]any)["Variables"].(map[string]any)
}

// TestGroupOrder: a FIFO lane holds its groups by default, or skips past a
// dead head when told; then it has a hold table, its consumer is told the
// order, the source queue and the hold table, and may send to the source
// and use the hold table, and the replay function's route says so, it is
// told the hold table and may read and update holds there, and neither
// gains anything on the idempotency table. Off, and on a standard lane,
// none of it.
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
			if hasTable := id.holds != ""; hasTable != on {
				t.Fatalf("the lane has a hold table: %v, want %v", hasTable, on)
			}

			vars := s.envOf(id.consumer)
			order, hasOrder := vars["GROUP_ORDER"]
			source, hasSource := vars["SOURCE_QUEUE_URL"]
			table, hasTable := vars["HOLD_TABLE"]
			switch {
			case on && (order != tc.order || mustJSON(source) != mustJSON(refTo(id.source)) || mustJSON(table) != mustJSON(refTo(id.holds))):
				t.Errorf("consumer: GROUP_ORDER %v, SOURCE_QUEUE_URL %s, HOLD_TABLE %s; want %q, the source queue's URL and the hold table", order, mustJSON(source), mustJSON(table), tc.order)
			case !on && (hasOrder || hasSource || hasTable):
				t.Errorf("consumer: GROUP_ORDER %v, SOURCE_QUEUE_URL %s, HOLD_TABLE %s; want none", order, mustJSON(source), mustJSON(table))
			}
			replayTable, hasReplayTable := s.envOf(id.replay)["HOLD_TABLE"]
			if on && mustJSON(replayTable) != mustJSON(refTo(id.holds)) || !on && hasReplayTable {
				t.Errorf("replay: HOLD_TABLE %s; want the hold table: %v", mustJSON(replayTable), on)
			}
			if routes := s.routes(t); len(routes) != 1 || routes[0].Groups != tc.order {
				t.Errorf("REPLAY_ROUTES %s: want one route with groups %q", mustJSON(routes), tc.order)
			}

			consumerSource := []string{"sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:ReceiveMessage"}
			want := map[string]map[string][]string{
				"consumer": {
					id.source:      consumerSource,
					id.idempotency: {"dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"},
				},
				"replay": {id.source: {"sqs:GetQueueAttributes", "sqs:SendMessage"}, id.idempotency: {"dynamodb:BatchGetItem"}},
			}
			if on {
				want["consumer"][id.source] = append(slices.Clone(consumerSource), "sqs:SendMessage")
				want["consumer"][id.holds] = []string{"dynamodb:BatchGetItem", "dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem"}
				want["replay"][id.holds] = []string{"dynamodb:BatchGetItem", "dynamodb:GetItem", "dynamodb:Query", "dynamodb:UpdateItem"}
			}
			roles := map[string]string{"consumer": id.role, "replay": id.replayRole}
			for function, resources := range want {
				granted := s.granted(t, roles[function])
				for rid, actions := range resources {
					if got := granted[rid]; !slices.Equal(got, actions) {
						t.Errorf("%s may %v on %s; want %v", function, got, rid, actions)
					}
				}
			}
		})
	}
}

// TestHoldTable: the hold table is keyed as dynamo.HoldStore keys its
// items (pk and sk strings), on demand, encrypted, with point-in-time
// recovery and no TTL (a hold lasts until its group drains), and is
// removed and protected from deletion as the lane's other tables are,
// whatever the removal policy. A lane that does not hold has none.
func TestHoldTable(t *testing.T) {
	for _, tc := range []struct {
		name      string
		f         *fixture
		tables    int
		protected bool // the lane's tables' DeletionProtectionEnabled
	}{
		{"FIFO", fifo, 3, false},
		{"FIFO retained", retainedFIFO, 3, true},
		{"FIFO off", fifoOff, 2, false},
		{"standard", defaults, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.f.get(t)
			id := s.ids()
			if n := len(s.ofType("AWS::DynamoDB::Table")); n != tc.tables {
				t.Errorf("%d tables, want %d", n, tc.tables)
			}
			if id.holds == "" {
				if tc.tables == 3 {
					t.Fatal("no hold table")
				}
				return
			}
			hold := s.resources[id.holds]
			p := props(hold)
			for field, want := range map[string]any{
				"KeySchema":                        arr{obj{"AttributeName": "pk", "KeyType": "HASH"}, obj{"AttributeName": "sk", "KeyType": "RANGE"}},
				"AttributeDefinitions":             arr{obj{"AttributeName": "pk", "AttributeType": "S"}, obj{"AttributeName": "sk", "AttributeType": "S"}},
				"BillingMode":                      "PAY_PER_REQUEST",
				"PointInTimeRecoverySpecification": obj{"PointInTimeRecoveryEnabled": true},
				"SSESpecification":                 obj{"SSEEnabled": true},
			} {
				if mustJSON(p[field]) != mustJSON(want) {
					t.Errorf("hold table %s: %s, want %s", field, mustJSON(p[field]), mustJSON(want))
				}
			}
			if ttl, ok := p["TimeToLiveSpecification"]; ok {
				t.Errorf("hold table TimeToLiveSpecification %s, want none", mustJSON(ttl))
			}
			idempotency := s.resources[id.idempotency]
			for _, field := range []string{"DeletionPolicy", "UpdateReplacePolicy"} {
				if mustJSON(hold[field]) != mustJSON(idempotency[field]) {
					t.Errorf("hold table %s %s, the idempotency table's %s", field, mustJSON(hold[field]), mustJSON(idempotency[field]))
				}
			}
			for name, table := range map[string]string{"hold": id.holds, "idempotency": id.idempotency} {
				if got := props(s.resources[table])["DeletionProtectionEnabled"]; got != tc.protected {
					t.Errorf("%s table: DeletionProtectionEnabled %v, want %v", name, got, tc.protected)
				}
			}
		})
	}
}

// TestHoldTableOutput: a lane that holds its groups outputs its hold
// table's name (HoldTableName), by which dlq groups finds it; one that
// does not, none.
func TestHoldTableOutput(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    *fixture
	}{{"FIFO", fifo}, {"FIFO off", fifoOff}, {"standard", defaults}} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.f.get(t)
			id := settings.OutputID(s.lane.Name(), settings.OutputHoldTableName)
			outputs := *s.template.FindOutputs(jsii.String(id), nil)
			got, ok := outputs[id]
			switch holds := s.ids().holds; {
			case holds != "" && !ok:
				t.Errorf("no output %s", id)
			case holds != "" && mustJSON((*got)["Value"]) != mustJSON(refTo(holds)):
				t.Errorf("output %s = %s, want the hold table's name", id, mustJSON(got))
			case holds == "" && ok:
				t.Errorf("output %s on a lane without a hold table: %s", id, mustJSON(got))
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

// TestGrantOperatorOnHeldGroups: on a lane that holds its groups, the
// operator may list, count and release them (dlq groups): read and update
// holds in the hold table, and send the release's drain trigger to the
// source; on the idempotency table only what it may anyway.
func TestGrantOperatorOnHeldGroups(t *testing.T) {
	for _, tc := range []struct {
		name  string
		order *string
		want  []string // on the hold table; nil for none (no table)
	}{
		{"holds", nil, []string{"dynamodb:BatchGetItem", "dynamodb:GetItem", "dynamodb:Query", "dynamodb:UpdateItem"}},
		{"off", jsii.String(deadletter.GroupOrderOff), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, role := operatorOn(tc.order)
			id := s.ids()
			granted := s.granted(t, role)
			switch got := granted[id.holds]; {
			case (id.holds == "") != (tc.want == nil):
				t.Errorf("hold table %q, want one: %v", id.holds, tc.want != nil)
			case id.holds != "" && !slices.Equal(got, tc.want):
				t.Errorf("operator may %v on the hold table; want %v", got, tc.want)
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
