package deadletter_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/homingdlq/homing/infra/deadletter"
	"github.com/homingdlq/homing/internal/settings"
)

// teamQueue is a team's own source queue, defined in the lane's stack with
// a name of its own.
func teamQueue(stack awscdk.Stack, props *awssqs.QueueProps) awssqs.Queue {
	if props.QueueName == nil {
		props.QueueName = jsii.String("payments-captured")
	}
	props.Encryption = awssqs.QueueEncryption_SQS_MANAGED
	props.EnforceSSL = jsii.Bool(true)
	return awssqs.NewQueue(stack, jsii.String("Captured"), props)
}

// TestExistingSourceQueue: the lane sets the team's queue's redrive policy
// (its DLQ, MaxReceiveCount) and tags, nothing else when the queue sets its
// MaximumMessageSize, and the DLQ's allow-policy names the queue.
func TestExistingSourceQueue(t *testing.T) {
	stack := newStack()
	q := teamQueue(stack, &awssqs.QueueProps{
		VisibilityTimeout:   awscdk.Duration_Minutes(jsii.Number(3)),
		MaxMessageSizeBytes: jsii.Number(262144),
	})
	p := baseProps()
	p.Queues.SourceQueue = q
	p.Queues.MaxReceiveCount = jsii.Number(4)
	s := synthesize(stack, deadletter.NewLane(stack, "Payments", p))
	source := s.ref(q.QueueArn())
	if got := s.ref(s.lane.SourceQueue().QueueArn()); got != source {
		t.Fatalf("SourceQueue() is %s, want the team's %s", got, source)
	}
	dlq := s.ref(s.lane.DeadLetterQueue().QueueArn())
	if got, want := mustJSON(props(s.resources[source])["RedrivePolicy"]), mustJSON(obj{"deadLetterTargetArn": getAtt(dlq, "Arn"), "maxReceiveCount": 4}); got != want {
		t.Errorf("the team's queue's RedrivePolicy is %s, want %s", got, want)
	}
	qp := props(s.resources[source])
	for _, untouched := range []string{"MessageRetentionPeriod", "RedriveAllowPolicy"} {
		if v, ok := qp[untouched]; ok {
			t.Errorf("the lane set %s=%v on the team's queue", untouched, v)
		}
	}
	if qp["VisibilityTimeout"] != 180.0 || qp["MaximumMessageSize"] != 262144.0 || qp["QueueName"] != "payments-captured" {
		t.Errorf("the team's queue changed: %s", mustJSON(qp))
	}
	if got := mustJSON(props(s.resources[dlq])["RedriveAllowPolicy"]); got != mustJSON(obj{"redrivePermission": "byQueue", "sourceQueueArns": arr{sourceArnFor("payments-captured")}}) {
		t.Errorf("DLQ allow-policy %s", got)
	}
	if n := len(s.ofType("AWS::SQS::Queue")); n != 4 {
		t.Errorf("%d queues, want the team's and the lane's three", n)
	}
	check(t, "the mapping consumes the team's queue", func() {
		s.template.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), like(obj{"EventSourceArn": getAtt(source, "Arn")}))
	})
	check(t, "the team's queue carries the lane's tags", func() {
		s.template.HasResourceProperties(jsii.String("AWS::SQS::Queue"), like(obj{
			"QueueName": "payments-captured",
			"Tags":      arrayWith(obj{"Key": settings.TagLane, "Value": "payments"}, obj{"Key": settings.TagRole, "Value": settings.RoleSource}),
		}))
	})
	check(t, "the output names the team's queue", func() {
		s.template.HasOutput(jsii.String("PaymentsSourceQueueUrl"), like(obj{"Value": refTo(source)}))
	})
}

// TestExistingSourceQueueMessageSize: a team's queue that leaves
// MaximumMessageSize unset (SQS's default, MaxMessageBytes) gets
// SourceMaxMessageBytes and a warning that says why and how to silence it;
// a size of its own, at most SourceMaxMessageBytes, stays, without a warning.
func TestExistingSourceQueueMessageSize(t *testing.T) {
	about := assertions.Match_StringLikeRegexp(jsii.String("MaximumMessageSize"))
	for _, tc := range []struct {
		name string
		set  *float64
		want float64
		warn bool
	}{
		{"unset is set to the limit", nil, deadletter.SourceMaxMessageBytes, true},
		{"256 KiB stays", jsii.Number(262144), 262144, false},
		{"the limit stays", jsii.Number(deadletter.SourceMaxMessageBytes), deadletter.SourceMaxMessageBytes, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stack := newStack()
			q := teamQueue(stack, &awssqs.QueueProps{
				VisibilityTimeout:   awscdk.Duration_Minutes(jsii.Number(3)),
				MaxMessageSizeBytes: tc.set,
			})
			p := baseProps()
			p.Queues.SourceQueue = q
			s := synthesize(stack, deadletter.NewLane(stack, "Payments", p))
			if got := props(s.resources[s.ref(q.QueueArn())])["MaximumMessageSize"]; got != tc.want {
				t.Errorf("the team's queue's MaximumMessageSize is %v, want %v", got, tc.want)
			}
			warnings := *assertions.Annotations_FromStack(stack).FindWarning(jsii.String("*"), about)
			if !tc.warn {
				for _, m := range warnings {
					t.Errorf("warning: %s", mustJSON(m))
				}
				return
			}
			if len(warnings) != 1 {
				t.Fatalf("%d warnings about MaximumMessageSize, want 1: %s", len(warnings), mustJSON(warnings))
			}
			if got, want := *warnings[0].Id, "/"+*q.Node().Path(); got != want {
				t.Errorf("the warning is on %s, want the team's queue %s", got, want)
			}
			msg := mustJSON(warnings[0].Entry.Data)
			for _, w := range []string{
				"set this queue's MaximumMessageSize to 983040",
				"SQS's default of 1048576 bytes",
				"set MaxMessageSizeBytes on the queue yourself, at most 983040",
			} {
				if !strings.Contains(msg, w) {
					t.Errorf("warning %s\nwant it to contain %q", msg, w)
				}
			}
		})
	}
}

func TestExistingSourceQueueValidation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(stack awscdk.Stack, p *deadletter.LaneProps)
		want  []string
	}{
		{"imported", func(stack awscdk.Stack, p *deadletter.LaneProps) {
			p.Queues.SourceQueue = awssqs.Queue_FromQueueArn(stack, jsii.String("Imported"), jsii.String("arn:aws:sqs:us-east-1:123456789012:captured"))
		}, []string{"SourceQueue is imported: the lane cannot set an imported queue's redrive policy"}},
		{"visibility too short, retention too long, messages too large", func(stack awscdk.Stack, p *deadletter.LaneProps) {
			p.Queues.SourceQueue = teamQueue(stack, &awssqs.QueueProps{
				RetentionPeriod:     awscdk.Duration_Days(jsii.Number(14)),
				MaxMessageSizeBytes: jsii.Number(1048576),
			})
		}, []string{
			"SourceQueue's VisibilityTimeout is 30s, want at least 6x Consumer.Timeout (3m)",
			"DeadLetterRetention (14d) must be longer than SourceQueue's MessageRetentionPeriod (14d)",
			"SourceQueue's MaximumMessageSize is 1.048576e+06, want at most 983040",
		}},
		{"props of the lane's own queue", func(stack awscdk.Stack, p *deadletter.LaneProps) {
			p.Queues.SourceQueue = teamQueue(stack, &awssqs.QueueProps{VisibilityTimeout: awscdk.Duration_Minutes(jsii.Number(3))})
			p.Queues.VisibilityTimeout = awscdk.Duration_Minutes(jsii.Number(5))
			p.Queues.SourceRetention = awscdk.Duration_Days(jsii.Number(1))
		}, []string{"Queues.SourceQueue is the team's: Queues.SourceRetention, Queues.VisibilityTimeout configure the queue the lane creates; set them on that queue"}},
		{"FIFO queue, standard lane", func(stack awscdk.Stack, p *deadletter.LaneProps) {
			p.Queues.SourceQueue = teamQueue(stack, &awssqs.QueueProps{QueueName: jsii.String("captured.fifo"), Fifo: jsii.Bool(true), VisibilityTimeout: awscdk.Duration_Minutes(jsii.Number(3))})
			p.Fifo = jsii.Bool(false)
		}, []string{"SourceQueue is FIFO: true, but LaneProps.Fifo is false"}},
		{"a queue of another stack", func(stack awscdk.Stack, p *deadletter.LaneProps) {
			other := awscdk.NewStack(awscdk.App_Of(stack), jsii.String("Queues"), nil)
			p.Queues.SourceQueue = teamQueue(other, &awssqs.QueueProps{VisibilityTimeout: awscdk.Duration_Minutes(jsii.Number(3))})
		}, []string{"SourceQueue Queues/Captured belongs to stack Queues, the lane to Test"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stack := newStack()
			p := baseProps()
			tc.build(stack, p)
			err := panicOf(func() { deadletter.NewLane(stack, "Payments", p) })
			if !errors.Is(err, deadletter.ErrInvalidProps) {
				t.Fatalf("NewLane panicked with %v, want ErrInvalidProps", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nwant it to contain %q", err, w)
				}
			}
		})
	}

	t.Run("a FIFO queue makes a FIFO lane", func(t *testing.T) {
		stack := newStack()
		p := baseProps()
		p.Queues.SourceQueue = teamQueue(stack, &awssqs.QueueProps{QueueName: jsii.String("captured.fifo"), Fifo: jsii.Bool(true), VisibilityTimeout: awscdk.Duration_Minutes(jsii.Number(3))})
		s := synthesize(stack, deadletter.NewLane(stack, "Payments", p))
		check(t, "four FIFO queues", func() {
			s.template.ResourcePropertiesCountIs(jsii.String("AWS::SQS::Queue"), like(obj{"FifoQueue": true}), jsii.Number(4))
		})
	})
}

// TestExistingAlarmTopic: the alarms notify the team's topic; the lane
// creates no topic and no key, and lets CloudWatch publish to it.
func TestExistingAlarmTopic(t *testing.T) {
	stack := newStack()
	topic := awssns.NewTopic(stack, jsii.String("Pager"), &awssns.TopicProps{EnforceSSL: jsii.Bool(true)})
	p := baseProps()
	p.Alarms.Topic = topic
	s := synthesize(stack, deadletter.NewLane(stack, "Payments", p))
	id := s.ref(topic.TopicArn())
	if s.lane.AlarmTopicKey() != nil {
		t.Error("AlarmTopicKey is not nil")
	}
	check(t, "one topic, no key", func() {
		s.template.ResourceCountIs(jsii.String("AWS::SNS::Topic"), jsii.Number(1))
		s.template.ResourceCountIs(jsii.String("AWS::KMS::Key"), jsii.Number(0))
	})
	for _, a := range s.lane.Alarms().All() {
		r := props(s.resources[s.ref(a.AlarmArn())])
		if !strings.Contains(mustJSON(r["AlarmActions"]), id) || !strings.Contains(mustJSON(r["OKActions"]), id) {
			t.Errorf("alarm %s notifies %s / %s", s.ref(a.AlarmArn()), mustJSON(r["AlarmActions"]), mustJSON(r["OKActions"]))
		}
	}
	check(t, "CloudWatch may publish", func() {
		s.template.HasResourceProperties(jsii.String("AWS::SNS::TopicPolicy"), like(obj{
			"Topics": arr{refTo(id)},
			"PolicyDocument": like(obj{"Statement": arrayWith(like(obj{
				"Sid": "CloudWatchAlarmsPublish", "Principal": obj{"Service": "cloudwatch.amazonaws.com"}, "Action": "sns:Publish",
			}))}),
		}))
		s.template.HasOutput(jsii.String("PaymentsAlarmTopicArn"), like(obj{"Value": refTo(id)}))
	})
}

// TestGrantOperator: the operator's role gets exactly the runbook's actions
// on the lane's resources, and may send to the parking queue; it is denied
// every item action on the ledger's seal key and every write of its public
// key (the replay function keeps both).
func TestGrantOperator(t *testing.T) {
	stack := newStack()
	lane := deadletter.NewLane(stack, "Orders", baseProps())
	operator := awsiam.NewRole(stack, jsii.String("Operator"), &awsiam.RoleProps{AssumedBy: awsiam.NewAccountRootPrincipal()})
	lane.GrantOperator(operator)
	s := synthesize(stack, lane)
	id := s.ids()
	role := s.ref(operator.RoleName())

	got := map[string][]string{} // resource -> actions
	var denied []any
	for _, r := range s.resources {
		if r["Type"] != "AWS::IAM::Policy" || !strings.Contains(mustJSON(props(r)["Roles"]), role) {
			continue
		}
		for _, st := range props(r)["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			st := st.(map[string]any)
			if st["Effect"] == "Deny" {
				denied = append(denied, st)
				continue
			}
			if st["Effect"] != "Allow" {
				t.Errorf("statement %s", mustJSON(st))
			}
			for _, res := range asList(st["Resource"]) {
				for _, a := range asList(st["Action"]) {
					got[mustJSON(res)] = append(got[mustJSON(res)], a.(string))
				}
			}
		}
	}
	queue := func(id string) string { return mustJSON(getAtt(id, "Arn")) }
	want := map[string][]string{
		queue(id.source):                        {"sqs:GetQueueUrl", "sqs:GetQueueAttributes", "sqs:SendMessage"},
		queue(id.dlq):                           {"sqs:GetQueueUrl", "sqs:GetQueueAttributes", "sqs:ReceiveMessage", "sqs:ChangeMessageVisibility", "sqs:DeleteMessage"},
		queue(id.invalid):                       {"sqs:GetQueueUrl", "sqs:GetQueueAttributes", "sqs:ReceiveMessage", "sqs:ChangeMessageVisibility", "sqs:DeleteMessage"},
		queue(id.parking):                       {"sqs:GetQueueUrl", "sqs:GetQueueAttributes", "sqs:ReceiveMessage", "sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:SendMessage"},
		mustJSON(getAtt(id.ledger, "Arn")):      {"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"},
		mustJSON(getAtt(id.idempotency, "Arn")): {"dynamodb:GetItem", "dynamodb:BatchGetItem"},
		mustJSON(getAtt(id.replay, "Arn")):      {"lambda:InvokeFunction", "lambda:GetFunctionConfiguration"},
		mustJSON(getAtt(id.consumer, "Arn")):    {"lambda:GetFunctionConfiguration", "lambda:GetFunctionConcurrency"},
		mustJSON(getAtt(id.schedule, "Arn")):    {"events:DescribeRule", "events:DisableRule", "events:EnableRule"},
		mustJSON(refTo(id.topic)):               {"sns:Subscribe"},
		mustJSON(refTo("AWS::StackId")):         {"cloudformation:DescribeStacks"},
		// dlq archive ls and show.
		mustJSON(getAtt(id.archive, "Arn")):                                      {"s3:ListBucket"},
		mustJSON(obj{"Fn::Join": arr{"", arr{getAtt(id.archive, "Arn"), "/*"}}}): {"s3:GetObject"},
	}
	// Both log groups, by their ARN and the ARN of the group itself (without
	// ":*"), as LogGroup.GrantRead names them.
	readLogs := []string{"logs:FilterLogEvents", "logs:GetLogEvents", "logs:GetLogGroupFields", "logs:DescribeLogGroups", "logs:DescribeLogStreams"}
	for _, group := range []string{id.logs, id.replayLogs} {
		want[mustJSON(getAtt(group, "Arn"))] = readLogs
		want[mustJSON(obj{"Fn::Join": arr{"", arr{"arn:", refTo("AWS::Partition"), ":logs:", refTo("AWS::Region"), ":", refTo("AWS::AccountId"), ":log-group:", refTo(group)}}})] = readLogs
	}
	for res, actions := range want {
		if mustJSON(sorted(got[res])) != mustJSON(sorted(actions)) {
			t.Errorf("on %s: %v\nwant %v", res, sorted(got[res]), sorted(actions))
		}
	}
	for res, actions := range got {
		if _, ok := want[res]; !ok {
			t.Errorf("unexpected grant on %s: %v", res, actions)
		}
	}
	// The seal key: no item action reads or writes it, whatever the
	// Allows (dynamodb:LeadingKeys is the partition of every key a call
	// names; Scan, which names none, is granted to no one).
	deny := func(partition string, actions ...string) obj {
		return obj{"Effect": "Deny", "Action": actions, "Resource": getAtt(id.ledger, "Arn"),
			"Condition": obj{"ForAnyValue:StringEquals": obj{"dynamodb:LeadingKeys": arr{partition}}}}
	}
	wantDenied := []any{
		deny(settings.SealKeyPartition, "dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query", "dynamodb:ConditionCheckItem",
			"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem",
			"dynamodb:PartiQLSelect", "dynamodb:PartiQLInsert", "dynamodb:PartiQLUpdate", "dynamodb:PartiQLDelete"),
		deny(settings.SealPublicKeyPartition, "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem",
			"dynamodb:PartiQLInsert", "dynamodb:PartiQLUpdate", "dynamodb:PartiQLDelete"),
	}
	if mustJSON(denied) != mustJSON(wantDenied) {
		t.Errorf("the operator's denials:\n%s\nwant\n%s", mustJSON(denied), mustJSON(wantDenied))
	}
	// The replay function keeps the seal key: nothing denies it anything.
	replayPolicies, readsLedger := 0, false
	for _, r := range s.resources {
		if r["Type"] != "AWS::IAM::Policy" || !strings.Contains(mustJSON(props(r)["Roles"]), `"`+id.replayRole+`"`) {
			continue
		}
		replayPolicies++
		doc := mustJSON(props(r)["PolicyDocument"])
		if strings.Contains(doc, `"Deny"`) {
			t.Errorf("the replay function's policy denies: %s", doc)
		}
		readsLedger = readsLedger || strings.Contains(doc, "dynamodb:GetItem")
	}
	if replayPolicies == 0 || !readsLedger {
		t.Errorf("%d policies of the replay function's role, reads the ledger: %v", replayPolicies, readsLedger)
	}
	// Every action the operator is granted on the ledger is one the seal
	// key's denial covers: none reaches it another way.
	for _, a := range got[mustJSON(getAtt(id.ledger, "Arn"))] {
		if !strings.Contains(mustJSON(wantDenied[0]), `"`+a+`"`) {
			t.Errorf("the operator's %s on the ledger is not denied on the seal key", a)
		}
	}

	check(t, "the parking queue lets the operator send", func() {
		s.template.HasResourceProperties(jsii.String("AWS::SQS::QueuePolicy"), like(obj{
			"Queues": arr{refTo(id.parking)},
			"PolicyDocument": like(obj{"Statement": arrayWith(like(obj{
				"Sid":       deadletter.SidOnlyLaneSends,
				"Condition": like(obj{"ArnNotLike": obj{"aws:PrincipalArn": arr{getAtt(id.replayRole, "Arn"), getAtt(role, "Arn")}}}),
			}))}),
		}))
	})
	check(t, "the DLQ still denies every sender", func() {
		s.template.HasResourceProperties(jsii.String("AWS::SQS::QueuePolicy"), like(obj{
			"Queues": arr{refTo(id.dlq)},
			"PolicyDocument": like(obj{"Statement": arrayWith(like(obj{
				"Sid":       deadletter.SidOnlyLaneSends,
				"Condition": assertions.Match_ObjectEquals(&obj{"Bool": obj{"aws:PrincipalIsAWSService": "false"}}),
			}))}),
		}))
	})
	annotations := assertions.Annotations_FromStack(stack)
	for _, m := range *annotations.FindError(jsii.String("*"), assertions.Match_AnyValue()) {
		t.Errorf("error: %s", mustJSON(m))
	}
	for _, m := range *annotations.FindWarning(jsii.String("*"), assertions.Match_AnyValue()) {
		t.Errorf("warning: %s", mustJSON(m))
	}

	err := panicOf(func() { lane.GrantOperator(awsiam.NewServicePrincipal(jsii.String("ec2.amazonaws.com"), nil)) })
	if err == nil || !strings.Contains(err.Error(), "no role, user or ArnPrincipal") {
		t.Errorf("GrantOperator to a service principal: %v", err)
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}
