package main

import (
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
)

// TestPaymentsLane: the local profile's example lane is FIFO end to end,
// its consumer is the examples module's bootstrap fed by the FIFO source
// with partial batch failures, told its ledger table, allowed on that
// table exactly the calls package ledger makes, and holds its groups (the
// construct's default on a FIFO lane) in its hold table.
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
	// FIFO: by default the lane holds a group behind its failed record, so
	// that an account's entries keep their order through any failure.
	vars := func(fn string) map[string]any {
		return s.resources[fn]["Properties"].(map[string]any)["Environment"].(map[string]any)["Variables"].(map[string]any)
	}
	source := s.find(t, "AWS::SQS::Queue", "PaymentsSourceQueue")
	holds := obj{"Ref": s.find(t, "AWS::DynamoDB::Table", "PaymentsHoldTable")}
	if v := vars(consumer); v["GROUP_ORDER"] != "hold" || mustJSON(v["SOURCE_QUEUE_URL"]) != mustJSON(obj{"Ref": source}) || mustJSON(v["HOLD_TABLE"]) != mustJSON(holds) {
		t.Errorf("payments consumer: GROUP_ORDER %v, SOURCE_QUEUE_URL %s, HOLD_TABLE %s; want hold, its source queue and its hold table",
			v["GROUP_ORDER"], mustJSON(v["SOURCE_QUEUE_URL"]), mustJSON(v["HOLD_TABLE"]))
	}
	if v := vars(s.find(t, "AWS::Lambda::Function", "PaymentsReplay")); mustJSON(v["HOLD_TABLE"]) != mustJSON(holds) {
		t.Errorf("payments replay function: HOLD_TABLE %s; want its hold table", mustJSON(v["HOLD_TABLE"]))
	}
	if v := vars(s.id(t, "AWS::Lambda::Function", "Consumer")); v["GROUP_ORDER"] != nil || v["SOURCE_QUEUE_URL"] != nil || v["HOLD_TABLE"] != nil {
		t.Errorf("orders consumer (a standard lane): GROUP_ORDER %v, SOURCE_QUEUE_URL %v, HOLD_TABLE %v; want none", v["GROUP_ORDER"], v["SOURCE_QUEUE_URL"], v["HOLD_TABLE"])
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
