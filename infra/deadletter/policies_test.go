package deadletter_test

import (
	"testing"

	"github.com/homingdlq/homing/infra/deadletter"
)

// queuePolicy returns the statements of the one queue policy attached to
// the queue with logical id queue.
func (s *synthesized) queuePolicy(t *testing.T, queue string) []any {
	t.Helper()
	var found []any
	n := 0
	for _, lid := range s.ofType("AWS::SQS::QueuePolicy") {
		p := props(s.resources[lid])
		if mustJSON(p["Queues"]) != mustJSON(arr{refTo(queue)}) {
			continue
		}
		n++
		found = asList(p["PolicyDocument"].(map[string]any)["Statement"])
	}
	if n != 1 {
		t.Fatalf("%d queue policies on %s, want 1", n, queue)
	}
	return found
}

func tlsOnly(queue string) obj {
	return obj{
		"Action":    "sqs:*",
		"Condition": obj{"Bool": obj{"aws:SecureTransport": "false"}},
		"Effect":    "Deny",
		"Principal": obj{"AWS": "*"},
		"Resource":  getAtt(queue, "Arn"),
	}
}

// onlySends is the deny of SendMessage to every IAM principal but senders
// (ARNs or ArnLike patterns); without senders, to every IAM principal.
func onlySends(queue string, senders ...any) obj {
	condition := obj{"Bool": obj{"aws:PrincipalIsAWSService": "false"}}
	if len(senders) > 0 {
		condition["ArnNotLike"] = obj{"aws:PrincipalArn": arr(senders)}
	}
	return obj{
		"Sid":       deadletter.SidOnlyLaneSends,
		"Action":    "sqs:SendMessage",
		"Condition": condition,
		"Effect":    "Deny",
		"Principal": obj{"AWS": "*"},
		"Resource":  getAtt(queue, "Arn"),
	}
}

func noNativeRedrive(queue string) obj {
	return obj{
		"Sid":       deadletter.SidNoNativeRedrive,
		"Action":    "sqs:StartMessageMoveTask",
		"Effect":    "Deny",
		"Principal": obj{"AWS": "*"},
		"Resource":  getAtt(queue, "Arn"),
	}
}

// TestQueuePolicies pins every statement of every queue policy: TLS only
// everywhere; the DLQ takes messages from SQS's redrive only and refuses
// native redrive; the invalid queue takes them from the consumer, the
// parking queue from the replay function and the operators; nothing is
// allowed by a queue policy (the roles' own policies grant).
func TestQueuePolicies(t *testing.T) {
	byDefault := func(id laneIDs) map[string]arr {
		return map[string]arr{
			id.source:  {tlsOnly(id.source)},
			id.dlq:     {tlsOnly(id.dlq), onlySends(id.dlq), noNativeRedrive(id.dlq)},
			id.invalid: {tlsOnly(id.invalid), onlySends(id.invalid, getAtt(id.role, "Arn"))},
			id.parking: {tlsOnly(id.parking), onlySends(id.parking, getAtt(id.replayRole, "Arn"))},
		}
	}
	for _, tc := range []struct {
		fixture string
		f       *fixture
		want    func(id laneIDs) map[string]arr
	}{
		{"defaults", defaults, byDefault},
		// The consumer parks its groups' records (group order hold).
		{"fifo", fifo, func(id laneIDs) map[string]arr {
			p := byDefault(id)
			p[id.parking] = arr{tlsOnly(id.parking), onlySends(id.parking, getAtt(id.replayRole, "Arn"), getAtt(id.role, "Arn"))}
			return p
		}},
		// AllowNativeRedrive and OperatorArns set.
		{"tuned", tuned, func(id laneIDs) map[string]arr {
			return map[string]arr{
				id.source:  {tlsOnly(id.source)},
				id.dlq:     {tlsOnly(id.dlq), onlySends(id.dlq)},
				id.invalid: {tlsOnly(id.invalid), onlySends(id.invalid, getAtt(id.role, "Arn"))},
				id.parking: {tlsOnly(id.parking), onlySends(id.parking, getAtt(id.replayRole, "Arn"), operatorArn)},
			}
		}},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			s := tc.f.get(t)
			want := tc.want(s.ids())
			if got := len(s.ofType("AWS::SQS::QueuePolicy")); got != len(want) {
				t.Errorf("%d queue policies, want %d", got, len(want))
			}
			for queue, statements := range want {
				if got := s.queuePolicy(t, queue); mustJSON(got) != mustJSON(statements) {
					t.Errorf("policy of %s:\n got %s\nwant %s", queue, mustJSON(got), mustJSON(statements))
				}
			}
		})
	}
}
