package main

import (
	"strconv"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/homingdlq/homing/infra/deadletter"
)

// TestPaymentsLane: the local profile's example lane is FIFO end to end,
// its consumer is the examples module's bootstrap fed by the FIFO source
// with partial batch failures, told its ledger table, allowed on that
// table exactly the calls package ledger makes, and keeps each account's
// order (the construct's default on a FIFO lane), parking a head at its
// PaymentsParkReceives-th delivery.
func TestPaymentsLane(t *testing.T) {
	s := profile(t, ProfileLocal)
	for _, q := range []string{"PaymentsSourceQueue", "PaymentsDeadLetterQueue", "PaymentsInvalidQueue", "PaymentsParkingQueue"} {
		lid := s.find(t, "AWS::SQS::Queue", q)
		if got := s.resources[lid]["Properties"].(map[string]any)["FifoQueue"]; got != true {
			t.Errorf("%s: FifoQueue %v, want true", q, got)
		}
	}
	consumer := s.find(t, "AWS::Lambda::Function", "PaymentsConsumer")
	entries := s.find(t, "AWS::DynamoDB::Table", "PaymentsEntries")
	check(t, "the FIFO event source mapping reports batch item failures", func() {
		s.template.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), like(obj{
			"EventSourceArn":                 obj{"Fn::GetAtt": arr{s.find(t, "AWS::SQS::Queue", "PaymentsSourceQueue"), "Arn"}},
			"FunctionName":                   obj{"Ref": consumer},
			"FunctionResponseTypes":          arr{"ReportBatchItemFailures"},
			"MaximumBatchingWindowInSeconds": assertions.Match_Absent(),
		}))
	})
	check(t, "the consumer knows its ledger table", func() {
		s.template.HasResourceProperties(jsii.String("AWS::Lambda::Function"), like(obj{
			"Runtime":     "provided.al2023",
			"Environment": obj{"Variables": like(obj{"ENTRIES_TABLE": obj{"Ref": entries}, "CONSUMER_NAME": "payments", "DEADLINE_MARGIN": "1s"})},
		}))
	})
	// FIFO: by default the lane keeps each account's order through any
	// failure: its consumer parks a head that can never succeed, the
	// redrive 10 deliveries later is a backstop.
	vars := func(fn string) map[string]any {
		return s.resources[fn]["Properties"].(map[string]any)["Environment"].(map[string]any)["Variables"].(map[string]any)
	}
	source := s.find(t, "AWS::SQS::Queue", "PaymentsSourceQueue")
	want := map[string]any{
		"GROUP_ORDER":       "hold",
		"SOURCE_QUEUE_URL":  obj{"Ref": source},
		"PARKING_QUEUE_URL": obj{"Ref": s.find(t, "AWS::SQS::Queue", "PaymentsParkingQueue")},
		"LEDGER_TABLE":      obj{"Ref": s.find(t, "AWS::DynamoDB::Table", "PaymentsLedgerTable")},
		"SOURCE_RETENTION":  "96h",
		"MAX_RECEIVES":      strconv.Itoa(PaymentsParkReceives),
	}
	v := vars(consumer)
	for k, w := range want {
		if mustJSON(v[k]) != mustJSON(w) {
			t.Errorf("payments consumer: %s %s, want %s", k, mustJSON(v[k]), mustJSON(w))
		}
	}
	redrive := s.resources[source]["Properties"].(map[string]any)["RedrivePolicy"].(map[string]any)
	if redrive["maxReceiveCount"] != float64(PaymentsParkReceives+deadletter.ParkMargin) {
		t.Errorf("payments source: maxReceiveCount %v, want the backstop %d deliveries behind MAX_RECEIVES", redrive["maxReceiveCount"], deadletter.ParkMargin)
	}
	if v := vars(s.id(t, "AWS::Lambda::Function", "Consumer")); v["GROUP_ORDER"] != nil || v["SOURCE_QUEUE_URL"] != nil || v["PARKING_QUEUE_URL"] != nil {
		t.Errorf("orders consumer (a standard lane): GROUP_ORDER %v, SOURCE_QUEUE_URL %v, PARKING_QUEUE_URL %v; want none", v["GROUP_ORDER"], v["SOURCE_QUEUE_URL"], v["PARKING_QUEUE_URL"])
	}
	check(t, "the consumer may get, put and update entries, nothing more", func() {
		s.template.HasResourceProperties(jsii.String("AWS::IAM::Policy"), like(obj{
			"PolicyDocument": like(obj{"Statement": assertions.Match_ArrayWith(&[]any{obj{
				"Action":   arr{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"},
				"Effect":   "Allow",
				"Resource": arr{obj{"Fn::GetAtt": arr{entries, "Arn"}}},
			}})}),
		}))
	})
	props := s.resources[entries]["Properties"].(map[string]any)
	if props["DeletionProtectionEnabled"] != false || s.resources[entries]["DeletionPolicy"] != "Delete" {
		t.Errorf("entries table of the local profile: %v, DeletionPolicy %v; want deletable", props, s.resources[entries]["DeletionPolicy"])
	}
}
