package deadletter_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/homingdlq/homing/infra/deadletter"
)

// laneIDs are the logical ids of a lane's resources.
type laneIDs struct {
	source, dlq, invalid, parking, idempotency, ledger string
	consumer, role, logs, topic, key                   string
	replay, replayRole, replayLogs, schedule, archive  string
}

func (s *synthesized) ids() laneIDs {
	l := s.lane
	return laneIDs{
		source:      s.ref(l.SourceQueue().QueueArn()),
		dlq:         s.ref(l.DeadLetterQueue().QueueArn()),
		invalid:     s.ref(l.InvalidQueue().QueueArn()),
		parking:     s.ref(l.ParkingQueue().QueueArn()),
		idempotency: s.ref(l.IdempotencyTable().TableName()),
		ledger:      s.ref(l.LedgerTable().TableName()),
		consumer:    s.ref(l.Consumer().FunctionName()),
		role:        s.ref(l.ConsumerRole().RoleName()),
		logs:        s.ref(l.ConsumerLogGroup().LogGroupName()),
		topic:       s.ref(l.AlarmTopic().TopicArn()),
		key:         s.ref(l.AlarmTopicKey().KeyArn()),
		replay:      s.ref(l.Replay().FunctionName()),
		replayRole:  s.ref(l.ReplayRole().RoleName()),
		replayLogs:  s.ref(l.ReplayLogGroup().LogGroupName()),
		schedule:    s.ref(l.ReplaySchedule().RuleName()),
		archive:     s.ref(l.Archive().BucketArn()),
	}
}

// sourceQueueName is the CDK-generated name of the source queue.
func (s *synthesized) sourceQueueName(t *testing.T) string {
	t.Helper()
	name, _ := props(s.resources[s.ids().source])["QueueName"].(string)
	if name == "" {
		t.Fatal("the source queue has no generated QueueName")
	}
	return name
}

// sourceArnFor is the formatted ARN by which the DLQ's allow-policy names
// the source queue.
func sourceArnFor(name string) obj {
	return obj{"Fn::Join": arr{"", arr{
		"arn:", refTo("AWS::Partition"), ":sqs:", refTo("AWS::Region"), ":", refTo("AWS::AccountId"), ":" + name,
	}}}
}

func TestQueues(t *testing.T) {
	s := defaults.get(t)
	id := s.ids()
	tpl := s.template
	queue := jsii.String("AWS::SQS::Queue")

	t.Run("four queues with SSE", func(t *testing.T) {
		check(t, "count", func() { tpl.ResourceCountIs(queue, jsii.Number(4)) })
		check(t, "SQS-managed SSE on every queue", func() {
			tpl.AllResourcesProperties(queue, like(obj{"SqsManagedSseEnabled": true}))
		})
		check(t, "standard queues", func() {
			tpl.AllResourcesProperties(queue, like(obj{"FifoQueue": assertions.Match_Absent()}))
		})
	})

	t.Run("source redrives to the DLQ after 10 receives", func(t *testing.T) {
		check(t, "source", func() {
			tpl.HasResourceProperties(queue, like(obj{
				"RedrivePolicy": obj{
					"deadLetterTargetArn": getAtt(id.dlq, "Arn"),
					"maxReceiveCount":     10,
				},
				"MessageRetentionPeriod": 345600,
				"VisibilityTimeout":      180, // 6 x 30 s
			}))
		})
	})

	t.Run("DLQ keeps messages longer than the source", func(t *testing.T) {
		src := props(s.resources[id.source])["MessageRetentionPeriod"].(float64)
		dlq := props(s.resources[id.dlq])["MessageRetentionPeriod"].(float64)
		if src != 345600 || dlq != 1209600 || dlq <= src {
			t.Errorf("retention: source %v s, DLQ %v s; want 345600 < 1209600", src, dlq)
		}
		for _, q := range []string{id.invalid, id.parking} {
			if got := props(s.resources[q])["MessageRetentionPeriod"]; got != 1209600.0 {
				t.Errorf("%s retention %v, want 1209600", q, got)
			}
		}
	})

	t.Run("DLQ allow-policy names only the source queue", func(t *testing.T) {
		name := s.sourceQueueName(t)
		check(t, "DLQ", func() {
			tpl.HasResourceProperties(queue, like(obj{
				"RedriveAllowPolicy": assertions.Match_ObjectEquals(&obj{
					"redrivePermission": "byQueue",
					"sourceQueueArns":   arr{sourceArnFor(name)},
				}),
				"MessageRetentionPeriod": 1209600,
				"RedrivePolicy":          assertions.Match_Absent(),
			}))
		})
		if got := props(s.resources[id.dlq])["RedriveAllowPolicy"]; mustJSON(got) != mustJSON(obj{"redrivePermission": "byQueue", "sourceQueueArns": arr{sourceArnFor(name)}}) {
			t.Errorf("the DLQ's allow-policy is %s", mustJSON(got))
		}
	})

	t.Run("any message the source accepts fits the other queues with our metadata", func(t *testing.T) {
		if got := props(s.resources[id.source])["MaximumMessageSize"]; got != float64(deadletter.SourceMaxMessageBytes) {
			t.Errorf("source MaximumMessageSize %v, want %d", got, deadletter.SourceMaxMessageBytes)
		}
		for _, q := range []string{id.dlq, id.invalid, id.parking} {
			if got := props(s.resources[q])["MaximumMessageSize"]; got != float64(deadletter.MaxMessageBytes) {
				t.Errorf("%s MaximumMessageSize %v, want %d", q, got, deadletter.MaxMessageBytes)
			}
		}
		if deadletter.SourceMaxMessageBytes+deadletter.MetadataReserveBytes != deadletter.MaxMessageBytes || deadletter.MaxMessageBytes != 1<<20 {
			t.Error("the source's size plus the reserve is not SQS's maximum")
		}
	})

	t.Run("source, invalid and parking queues are never a DLQ target", func(t *testing.T) {
		for _, q := range []string{id.source, id.invalid, id.parking} {
			got := mustJSON(props(s.resources[q])["RedriveAllowPolicy"])
			if got != `{"redrivePermission":"denyAll"}` {
				t.Errorf("%s allow-policy %s, want denyAll", q, got)
			}
		}
	})

	t.Run("TLS-only queue policies", func(t *testing.T) {
		for _, q := range []string{id.source, id.dlq, id.invalid, id.parking} {
			check(t, q, func() {
				tpl.HasResourceProperties(jsii.String("AWS::SQS::QueuePolicy"), like(obj{
					"Queues": arr{refTo(q)},
					"PolicyDocument": like(obj{"Statement": arrayWith(like(obj{
						"Effect":    "Deny",
						"Action":    "sqs:*",
						"Principal": obj{"AWS": "*"},
						"Condition": obj{"Bool": obj{"aws:SecureTransport": "false"}},
						"Resource":  getAtt(q, "Arn"),
					}))}),
				}))
			})
		}
	})

	t.Run("no hand-written physical names", func(t *testing.T) {
		nameProps := []string{"QueueName", "TableName", "FunctionName", "RoleName", "TopicName", "DashboardName", "LogGroupName", "AlarmName", "PolicyName"}
		for lid, r := range s.resources {
			for _, p := range nameProps {
				v, ok := props(r)[p].(string)
				if !ok {
					continue // absent, or a reference to another resource
				}
				switch {
				case lid == id.source && p == "QueueName":
					// generated by the CDK from the construct path (see addQueues)
				case p == "PolicyName" && v == lid:
					// the CDK names inline policies after their logical id
				default:
					t.Errorf("%s has %s %v", lid, p, v)
				}
			}
		}
		if name := s.sourceQueueName(t); !regexp.MustCompile(`^Test-Orders-[0-9A-F]{8}-source$`).MatchString(name) {
			t.Errorf("source queue name %q is not the construct-path name", name)
		}
	})
}

func TestTables(t *testing.T) {
	s := defaults.get(t)
	id := s.ids()
	tpl := s.template
	table := jsii.String("AWS::DynamoDB::Table")
	common := obj{
		"BillingMode":                      "PAY_PER_REQUEST",
		"PointInTimeRecoverySpecification": obj{"PointInTimeRecoveryEnabled": true},
		"SSESpecification":                 obj{"SSEEnabled": true},
		"TimeToLiveSpecification":          obj{"AttributeName": "expiresAt", "Enabled": true},
	}
	with := func(extra obj) assertions.Matcher {
		m := obj{}
		for k, v := range common {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return like(m)
	}

	check(t, "two tables", func() { tpl.ResourceCountIs(table, jsii.Number(2)) })
	check(t, "idempotency table: pk S, TTL expiresAt, PITR, SSE, on demand", func() {
		tpl.HasResourceProperties(table, with(obj{
			"KeySchema":            arr{obj{"AttributeName": "pk", "KeyType": "HASH"}},
			"AttributeDefinitions": arr{obj{"AttributeName": "pk", "AttributeType": "S"}},
		}))
	})
	check(t, "ledger table: pk S, sk S, TTL expiresAt, PITR, SSE, on demand", func() {
		tpl.HasResourceProperties(table, with(obj{
			"KeySchema": arr{
				obj{"AttributeName": "pk", "KeyType": "HASH"},
				obj{"AttributeName": "sk", "KeyType": "RANGE"},
			},
			"AttributeDefinitions": arr{
				obj{"AttributeName": "pk", "AttributeType": "S"},
				obj{"AttributeName": "sk", "AttributeType": "S"},
			},
		}))
	})
	// Kept on stack deletion and replacement, but deleted by the rollback
	// of the deploy that created them (RETAIN_ON_UPDATE_OR_DELETE), so a
	// failed first deploy can be retried; no deletion protection, which
	// would stop that rollback.
	for _, lid := range []string{id.idempotency, id.ledger} {
		r := s.resources[lid]
		if r["DeletionPolicy"] != "RetainExceptOnCreate" || r["UpdateReplacePolicy"] != "Retain" {
			t.Errorf("%s: DeletionPolicy %v, UpdateReplacePolicy %v; want RetainExceptOnCreate and Retain by default", lid, r["DeletionPolicy"], r["UpdateReplacePolicy"])
		}
		if got := props(r)["DeletionProtectionEnabled"]; got != false {
			t.Errorf("%s: DeletionProtectionEnabled %v, want false by default", lid, got)
		}
	}
	if got := props(s.resources[id.idempotency])["KeySchema"]; mustJSON(got) != `[{"AttributeName":"pk","KeyType":"HASH"}]` {
		t.Errorf("idempotency key schema %s", mustJSON(got))
	}
}

func TestConsumerFunction(t *testing.T) {
	s := defaults.get(t)
	id := s.ids()
	tpl := s.template

	check(t, "two functions, the consumer and the replay function", func() {
		tpl.ResourceCountIs(jsii.String("AWS::Lambda::Function"), jsii.Number(2))
	})
	check(t, "provided.al2023 bootstrap on arm64, JSON logs, wired environment", func() {
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), like(obj{
			"Runtime":       "provided.al2023",
			"Handler":       "bootstrap",
			"Architectures": arr{"arm64"},
			"Timeout":       30,
			"MemorySize":    256,
			"Role":          getAtt(id.role, "Arn"),
			"LoggingConfig": assertions.Match_ObjectEquals(&obj{
				"LogFormat":           "JSON",
				"ApplicationLogLevel": "INFO",
				"SystemLogLevel":      "INFO", // keeps the REPORT lines
				"LogGroup":            refTo(id.logs),
			}),
			"Environment": obj{"Variables": assertions.Match_ObjectEquals(&obj{
				"INVALID_QUEUE_URL": refTo(id.invalid),
				"IDEMPOTENCY_TABLE": refTo(id.idempotency),
				// The lane's name, from its construct id.
				"CONSUMER_NAME": "orders",
				// The route's key (LaneProps.Key); no PayloadHash, so no
				// PAYLOAD_HASH_EXPRESSION.
				"KEY_EXPRESSION": "orderId",
				// The redrive's maxReceiveCount, at which a failure is
				// recorded, and failure records on by default.
				"MAX_RECEIVE_COUNT": "10",
				"FAILURE_RECORDS":   "on",
				// The lane's construct path and the default namespace.
				"POWERTOOLS_SERVICE_NAME":      "Test/Orders",
				"POWERTOOLS_METRICS_NAMESPACE": "Homing",
			})},
			"ReservedConcurrentExecutions": assertions.Match_Absent(),
		}))
	})
	check(t, "log groups with one month retention", func() {
		tpl.AllResourcesProperties(jsii.String("AWS::Logs::LogGroup"), like(obj{"RetentionInDays": 30}))
	})
	check(t, "roles without managed policies", func() {
		tpl.ResourceCountIs(jsii.String("AWS::IAM::Role"), jsii.Number(2))
		tpl.AllResourcesProperties(jsii.String("AWS::IAM::Role"), like(obj{
			"AssumeRolePolicyDocument": like(obj{"Statement": arr{like(obj{"Principal": obj{"Service": "lambda.amazonaws.com"}})}}),
			"ManagedPolicyArns":        assertions.Match_Absent(),
			"Policies":                 assertions.Match_Absent(),
		}))
	})
}

func TestEventSourceMapping(t *testing.T) {
	s := defaults.get(t)
	id := s.ids()
	check(t, "report batch item failures, batch 10, max concurrency 5, no batching window", func() {
		s.template.ResourceCountIs(jsii.String("AWS::Lambda::EventSourceMapping"), jsii.Number(1))
		s.template.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), like(obj{
			"EventSourceArn":                 getAtt(id.source, "Arn"),
			"FunctionName":                   refTo(id.consumer),
			"FunctionResponseTypes":          arr{"ReportBatchItemFailures"},
			"BatchSize":                      10,
			"ScalingConfig":                  obj{"MaximumConcurrency": 5},
			"MaximumBatchingWindowInSeconds": assertions.Match_Absent(),
		}))
	})
	visibility := props(s.resources[id.source])["VisibilityTimeout"].(float64)
	timeout := props(s.resources[id.consumer])["Timeout"].(float64)
	if visibility < 6*timeout {
		t.Errorf("visibility %v s < 6 x timeout %v s", visibility, timeout)
	}
}

// granted walks every policy attached to role and returns its permission
// set: the logical id of the resource (from Fn::GetAtt [id, Arn]), or
// onPartition of it for a grant on one partition, -> sorted actions. It
// reports wildcards, and statements that are neither plain Allows nor
// Allows on one partition.
func (s *synthesized) granted(t *testing.T, role string) map[string][]string {
	t.Helper()
	granted := map[string][]string{}
	policies := 0
	for lid, r := range s.resources {
		if r["Type"] != "AWS::IAM::Policy" && r["Type"] != "AWS::IAM::ManagedPolicy" {
			continue
		}
		if !strings.Contains(mustJSON(props(r)["Roles"]), `"`+role+`"`) {
			continue
		}
		policies++
		doc := props(r)["PolicyDocument"].(map[string]any)
		for _, st := range asList(doc["Statement"]) {
			st := st.(map[string]any)
			text := mustJSON(st)
			if st["Effect"] == "Deny" {
				continue // grants nothing (the operator's seal denials: TestGrantOperator pins them)
			}
			partition, ok := leadingKey(st["Condition"])
			if st["Effect"] != "Allow" || !ok || st["NotAction"] != nil || st["NotResource"] != nil {
				t.Errorf("%s: unexpected statement shape %s", lid, text)
				continue
			}
			for _, res := range asList(st["Resource"]) {
				target := mustJSON(res)
				objects := s.bucketObjects(res)
				if objects == "" && (target == `"*"` || strings.Contains(target, "*")) {
					t.Errorf("%s: wildcard resource in %s", lid, text)
				}
				rid := objects
				if m, ok := res.(map[string]any); ok {
					if ga, ok := m["Fn::GetAtt"].([]any); ok && ga[1] == "Arn" {
						rid = ga[0].(string)
					}
				}
				if partition != "" {
					rid = onPartition(rid, partition)
				}
				for _, a := range asList(st["Action"]) {
					if strings.Contains(a.(string), "*") {
						t.Errorf("%s: wildcard action %v", lid, a)
					}
					granted[rid] = append(granted[rid], a.(string))
				}
			}
		}
	}
	if policies == 0 {
		t.Fatalf("no policy is attached to the role %s", role)
	}
	for rid, actions := range granted {
		slices.Sort(actions)
		granted[rid] = slices.Compact(actions)
	}
	return granted
}

// bucketObjects is the key of granted's actions on the objects of a bucket
// of the stack ("<bucket id>/*", from the Fn::Join of its Arn and "/*"),
// or "" when res is something else.
func (s *synthesized) bucketObjects(res any) string {
	m, _ := res.(map[string]any)
	join, _ := m["Fn::Join"].([]any)
	if len(join) != 2 || join[0] != "" {
		return ""
	}
	parts, _ := join[1].([]any)
	if len(parts) != 2 || parts[1] != "/*" {
		return ""
	}
	arn, _ := parts[0].(map[string]any)
	ga, _ := arn["Fn::GetAtt"].([]any)
	if len(ga) != 2 || ga[1] != "Arn" || s.resources[ga[0].(string)]["Type"] != "AWS::S3::Bucket" {
		return ""
	}
	return ga[0].(string) + "/*"
}

// onPartition is the key of granted's actions on the items of one
// partition of the table tableID (a grant with a dynamodb:LeadingKeys
// condition).
func onPartition(tableID, partition string) string { return tableID + " partition " + partition }

// leadingKey reads a statement's condition: none (""), or the one
// partition its dynamodb:LeadingKeys allows, as grantParks writes it;
// false for any other condition.
func leadingKey(cond any) (string, bool) {
	if cond == nil {
		return "", true
	}
	c, _ := cond.(map[string]any)
	eq, _ := c["ForAllValues:StringEquals"].(map[string]any)
	keys := asList(eq["dynamodb:LeadingKeys"])
	if len(c) != 1 || len(eq) != 1 || len(keys) != 1 {
		return "", false
	}
	p, ok := keys[0].(string)
	return p, ok && p != ""
}

// TestLeastPrivilege walks every policy attached to each function's role:
// each has exactly its permission set, no more.
func TestLeastPrivilege(t *testing.T) {
	s := defaults.get(t)
	id := s.ids()

	for _, tc := range []struct {
		function, role string
		// allowed is the whole permission set: resource -> actions.
		allowed map[string][]string
		// none are resources the function must have no permission on.
		none []string
	}{
		{"consumer", id.role, map[string][]string{
			id.logs:        {"logs:CreateLogStream", "logs:PutLogEvents"},
			id.invalid:     {"sqs:SendMessage"},                                                                    // invalid.Sender
			id.idempotency: {"dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"}, // dynamo's idempotencyAPI
			// The event source mapping's grant (awslambdaeventsources), used by Lambda's poller.
			id.source: {"sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:ReceiveMessage"},
		}, []string{id.dlq, id.parking, id.ledger}},
		{"replay", id.replayRole, map[string][]string{
			id.replayLogs: {"logs:CreateLogStream", "logs:PutLogEvents"},
			// replay.Queue: ReceiveMessage, ChangeMessageVisibility(Batch),
			// DeleteMessageBatch, GetQueueAttributes (depth, retention).
			id.dlq: {"sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ReceiveMessage"},
			// SendMessageBatch; GetQueueAttributes for its MaximumMessageSize.
			id.source:         {"sqs:GetQueueAttributes", "sqs:SendMessage"},
			id.parking:        {"sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ReceiveMessage", "sqs:SendMessage"}, // SendMessageBatch; archive.Receiver
			id.invalid:        {"sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ReceiveMessage"},                    // archive.Receiver
			id.archive + "/*": {"s3:PutObject"},                                                                                                        // archive.S3's PutObject
			id.ledger:         {"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem"},                                       // dynamo's ledgerAPI
			id.idempotency:    {"dynamodb:BatchGetItem"},                                                                                               // dynamo's completionsAPI, dynamo.FailureLog
		}, []string{id.logs}},
	} {
		t.Run(tc.function, func(t *testing.T) {
			granted := s.granted(t, tc.role)
			for rid, actions := range granted {
				if want, ok := tc.allowed[rid]; !ok || !slices.Equal(actions, want) {
					t.Errorf("%s may %v on %q; want exactly %v", tc.function, actions, rid, want)
				}
			}
			for rid := range tc.allowed {
				if _, ok := granted[rid]; !ok {
					t.Errorf("%s has no permission on %s", tc.function, rid)
				}
			}
			for _, rid := range tc.none {
				if actions, ok := granted[rid]; ok {
					t.Errorf("%s may %v on %s; want nothing", tc.function, actions, rid)
				}
			}
		})
	}

	t.Run("every role is one of the two above", func(t *testing.T) {
		if roles := s.ofType("AWS::IAM::Role"); len(roles) != 2 || !slices.Contains(roles, id.role) || !slices.Contains(roles, id.replayRole) {
			t.Errorf("roles %v, want exactly the consumer's and the replay function's", roles)
		}
	})

	for _, r := range s.resources {
		if r["Type"] == "AWS::IAM::Role" && props(r)["ManagedPolicyArns"] != nil {
			t.Errorf("a role has managed policies: %s", mustJSON(props(r)["ManagedPolicyArns"]))
		}
	}
	if text := mustJSON(s.resources); strings.Contains(text, "FullAccess") {
		t.Error("the template mentions a *FullAccess managed policy")
	}
}

func TestAlarms(t *testing.T) {
	s := defaults.get(t)
	id := s.ids()
	tpl := s.template
	actions := arr{refTo(id.topic)}
	queueAlarm := func(queue, metric string, threshold float64) assertions.Matcher {
		return like(obj{
			"Namespace":          "AWS/SQS",
			"MetricName":         metric,
			"Dimensions":         arr{obj{"Name": "QueueName", "Value": getAtt(queue, "QueueName")}},
			"Statistic":          "Maximum",
			"Period":             60,
			"Threshold":          threshold,
			"ComparisonOperator": "GreaterThanThreshold",
			"EvaluationPeriods":  1,
			"TreatMissingData":   "notBreaching",
			"AlarmActions":       actions,
			"OKActions":          actions,
		})
	}
	functionAlarm := func(function, metric string) assertions.Matcher {
		return like(obj{
			"Namespace":          "AWS/Lambda",
			"MetricName":         metric,
			"Dimensions":         arr{obj{"Name": "FunctionName", "Value": refTo(function)}},
			"Statistic":          "Sum",
			"Period":             60,
			"Threshold":          0,
			"ComparisonOperator": "GreaterThanThreshold",
			"EvaluationPeriods":  1,
			"TreatMissingData":   "notBreaching",
			"AlarmActions":       actions,
			"OKActions":          actions,
		})
	}
	alarm := jsii.String("AWS::CloudWatch::Alarm")
	check(t, "twelve alarms", func() { tpl.ResourceCountIs(alarm, jsii.Number(12)) })
	check(t, "archive failed > 0", func() {
		tpl.HasResourceProperties(alarm, like(obj{"MetricName": "ArchiveFailed", "Namespace": "Homing", "Statistic": "Sum", "Threshold": 0,
			"ComparisonOperator": "GreaterThanThreshold", "Dimensions": arr{obj{"Name": "Lane", "Value": "Test/Orders"}}}))
	})
	for name, m := range map[string]assertions.Matcher{
		"DLQ depth > 0":          queueAlarm(id.dlq, "ApproximateNumberOfMessagesVisible", 0),
		"invalid depth > 0":      queueAlarm(id.invalid, "ApproximateNumberOfMessagesVisible", 0),
		"parking depth > 0":      queueAlarm(id.parking, "ApproximateNumberOfMessagesVisible", 0),
		"consumer errors > 0":    functionAlarm(id.consumer, "Errors"),
		"consumer throttles > 0": functionAlarm(id.consumer, "Throttles"),
		"replay errors > 0":      functionAlarm(id.replay, "Errors"),
	} {
		check(t, name, func() { tpl.HasResourceProperties(alarm, m) })
	}
	check(t, "every alarm notifies the topic and fires on one breaching period", func() {
		tpl.AllResourcesProperties(alarm, like(obj{"AlarmActions": actions, "OKActions": actions, "EvaluationPeriods": 1, "DatapointsToAlarm": 1}))
	})
	// Missing data: not breaching, but for the consumer's failures (no
	// records keep the state) and the replay's heartbeat (no run breaches).
	a := s.lane.Alarms()
	for _, c := range []struct {
		alarm   interface{ AlarmArn() *string }
		missing string
	}{
		{a.DeadLetterDepth, "notBreaching"}, {a.DeadLetterAge, "notBreaching"}, {a.InvalidDepth, "notBreaching"}, {a.ParkingDepth, "notBreaching"},
		{a.ConsumerErrors, "notBreaching"}, {a.ConsumerThrottles, "notBreaching"}, {a.ReplayErrors, "notBreaching"},
		{a.ConsumerFailures, "ignore"}, {a.SourceAge, "notBreaching"}, {a.RescueWindow, "notBreaching"}, {a.ReplayHeartbeat, "breaching"},
	} {
		lid := s.ref(c.alarm.AlarmArn())
		if got := props(s.resources[lid])["TreatMissingData"]; got != c.missing {
			t.Errorf("%s: TreatMissingData %v, want %s", lid, got, c.missing)
		}
	}
	if got := len(a.All()); got != 12 {
		t.Errorf("Alarms().All() has %d alarms", got)
	}
}

func TestAlarmTopic(t *testing.T) {
	s := defaults.get(t)
	id := s.ids()
	tpl := s.template
	check(t, "topic encrypted with the lane's key", func() {
		tpl.HasResourceProperties(jsii.String("AWS::SNS::Topic"), like(obj{"KmsMasterKeyId": getAtt(id.key, "Arn")}))
	})
	check(t, "key rotates and lets CloudWatch of this account use it", func() {
		tpl.HasResourceProperties(jsii.String("AWS::KMS::Key"), like(obj{
			"EnableKeyRotation": true,
			"KeyPolicy": like(obj{"Statement": arrayWith(assertions.Match_ObjectEquals(&obj{
				"Sid":       "CloudWatchAlarmsUseTheKey",
				"Effect":    "Allow",
				"Principal": obj{"Service": "cloudwatch.amazonaws.com"},
				"Action":    arr{"kms:Decrypt", "kms:GenerateDataKey*"},
				"Resource":  "*",
				"Condition": obj{"StringEquals": obj{"aws:SourceAccount": refTo("AWS::AccountId")}},
			}))}),
		}))
	})
	check(t, "topic policy: TLS only, CloudWatch of this account may publish", func() {
		tpl.HasResourceProperties(jsii.String("AWS::SNS::TopicPolicy"), like(obj{
			"Topics": arr{refTo(id.topic)},
			"PolicyDocument": like(obj{"Statement": arrayWith(
				like(obj{
					"Effect":    "Deny",
					"Action":    "sns:Publish",
					"Condition": obj{"Bool": obj{"aws:SecureTransport": "false"}},
				}),
				like(obj{
					"Effect":    "Allow",
					"Action":    "sns:Publish",
					"Principal": obj{"Service": "cloudwatch.amazonaws.com"},
					"Condition": obj{"StringEquals": obj{"aws:SourceAccount": refTo("AWS::AccountId")}},
				}),
			)}),
		}))
	})
}

func TestDashboard(t *testing.T) {
	s := defaults.get(t)
	check(t, "one dashboard", func() { s.template.ResourceCountIs(jsii.String("AWS::CloudWatch::Dashboard"), jsii.Number(1)) })
	ids := s.ofType("AWS::CloudWatch::Dashboard")
	if len(ids) != 1 {
		t.Fatalf("dashboards %v", ids)
	}
	body := mustJSON(props(s.resources[ids[0]])["DashboardBody"])
	id := s.ids()
	if err := containsAll(body,
		"ApproximateNumberOfMessagesVisible", "ApproximateAgeOfOldestMessage",
		"Invocations", "Errors", "Throttles", "Duration", "Replay invocations", "Replay duration",
		id.source, id.dlq, id.invalid, id.parking, id.consumer, id.replay); err != nil {
		t.Errorf("dashboard body: %v", err)
	}
	var alarms []string
	for _, a := range s.lane.Alarms().All() {
		alarms = append(alarms, s.ref(a.AlarmArn()))
	}
	if err := containsAll(body, alarms...); err != nil {
		t.Errorf("dashboard body: %v", err)
	}
}

func TestFIFO(t *testing.T) {
	s := fifo.get(t)
	id := s.ids()
	check(t, "all four queues FIFO without content-based deduplication", func() {
		s.template.ResourcePropertiesCountIs(jsii.String("AWS::SQS::Queue"), like(obj{
			"FifoQueue":                 true,
			"ContentBasedDeduplication": false,
			"SqsManagedSseEnabled":      true,
		}), jsii.Number(4))
	})
	name := s.sourceQueueName(t)
	if !strings.HasSuffix(name, "-source.fifo") || len(name) > 80 {
		t.Errorf("FIFO source queue name %q", name)
	}
	if got := mustJSON(props(s.resources[id.dlq])["RedriveAllowPolicy"]); got != mustJSON(obj{"redrivePermission": "byQueue", "sourceQueueArns": arr{sourceArnFor(name)}}) {
		t.Errorf("FIFO DLQ allow-policy %s", got)
	}
	check(t, "source redrive", func() {
		s.template.HasResourceProperties(jsii.String("AWS::SQS::Queue"), like(obj{
			"QueueName": name,
			// The backstop behind the consumer's parks (TestGroupOrder).
			"RedrivePolicy": obj{"deadLetterTargetArn": getAtt(id.dlq, "Arn"), "maxReceiveCount": deadletter.DefaultGroupMaxReceiveCount},
		}))
	})
	check(t, "event source", func() {
		s.template.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), like(obj{
			"BatchSize":                      10,
			"FunctionResponseTypes":          arr{"ReportBatchItemFailures"},
			"MaximumBatchingWindowInSeconds": assertions.Match_Absent(),
		}))
	})
}

func TestTunedProps(t *testing.T) {
	s := tuned.get(t)
	id := s.ids()
	tpl := s.template
	check(t, "source", func() {
		tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), like(obj{
			"RedrivePolicy":          obj{"deadLetterTargetArn": getAtt(id.dlq, "Arn"), "maxReceiveCount": 3},
			"MessageRetentionPeriod": 86400,
			"VisibilityTimeout":      65, // 6 x 10 s + the 5 s batching window
		}))
	})
	check(t, "DLQ retention", func() {
		tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), like(obj{
			"RedriveAllowPolicy":     like(obj{"redrivePermission": "byQueue"}),
			"MessageRetentionPeriod": 604800,
		}))
	})
	check(t, "event source", func() {
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), like(obj{
			"BatchSize":                      100,
			"MaximumBatchingWindowInSeconds": 5,
			"ScalingConfig":                  obj{"MaximumConcurrency": 20},
			"FunctionResponseTypes":          arr{"ReportBatchItemFailures"},
		}))
	})
	check(t, "function", func() {
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), like(obj{
			"Timeout":                      10,
			"MemorySize":                   512,
			"ReservedConcurrentExecutions": 50,
			"Architectures":                arr{"arm64"},
			"Environment": obj{"Variables": like(obj{
				"CONSUMER_NAME": "billing",
				"CONCURRENCY":   "4",
			})},
		}))
	})
	check(t, "log retention", func() {
		tpl.HasResourceProperties(jsii.String("AWS::Logs::LogGroup"), like(obj{"RetentionInDays": 1}))
	})
	check(t, "alarm period and source age threshold follow the props", func() {
		tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), like(obj{
			"MetricName": "ApproximateAgeOfOldestMessage",
			"Period":     300,
			"Threshold":  65 + 10 + 60, // visibility + consumer timeout + margin
		}))
	})
	check(t, "the DLQ age threshold follows the retention, the report period the Interval", func() {
		tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), like(obj{
			"MetricName": "OldestDeadLetterAgeSeconds",
			"Period":     600, // 2 x 5 minutes
			"Threshold":  0.75 * 604800,
		}))
	})
	for _, typ := range []string{"AWS::SQS::Queue", "AWS::DynamoDB::Table", "AWS::Logs::LogGroup", "AWS::KMS::Key"} {
		for _, lid := range s.ofType(typ) {
			if got := s.resources[lid]["DeletionPolicy"]; got != "Delete" {
				t.Errorf("%s %s: DeletionPolicy %v, want Delete with RemovalPolicy DESTROY", typ, lid, got)
			}
		}
	}
	for _, lid := range s.ofType("AWS::DynamoDB::Table") {
		if got := props(s.resources[lid])["DeletionProtectionEnabled"]; got != false {
			t.Errorf("%s: DeletionProtectionEnabled %v, want false with RemovalPolicy DESTROY", lid, got)
		}
	}
}

// TestCdkNag synthesizes every fixture with the AwsSolutions checks: no
// unsuppressed error or warning, and every suppression is the expected one
// and carries a reason.
func TestCdkNag(t *testing.T) {
	for name, f := range map[string]*fixture{"defaults": defaults, "fifo": fifo, "tuned": tuned} {
		t.Run(name, func(t *testing.T) {
			s := f.get(t)
			annotations := assertions.Annotations_FromStack(s.stack)
			nag := assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*"))
			for _, m := range *annotations.FindError(jsii.String("*"), nag) {
				t.Errorf("cdk-nag error: %s", mustJSON(m))
			}
			for _, m := range *annotations.FindWarning(jsii.String("*"), nag) {
				t.Errorf("cdk-nag warning: %s", mustJSON(m))
			}
			// Anything else cdk-nag or the CDK warns about (for example a rule
			// that could not be evaluated) counts too.
			anything := assertions.Match_AnyValue()
			for _, m := range *annotations.FindError(jsii.String("*"), anything) {
				t.Errorf("error: %s", mustJSON(m))
			}
			for _, m := range *annotations.FindWarning(jsii.String("*"), anything) {
				t.Errorf("warning: %s", mustJSON(m))
			}

			id := s.ids()
			want := map[string]string{id.invalid: "AwsSolutions-SQS3", id.parking: "AwsSolutions-SQS3", id.archive: "AwsSolutions-S1"}
			for lid, r := range s.resources {
				if r["Type"] == "AWS::IAM::Policy" && strings.HasPrefix(lid, "OrdersArchiveWrite") {
					want[lid] = "AwsSolutions-IAM5" // s3:PutObject on the archive's objects
				}
			}
			got := map[string]string{}
			for lid, r := range s.resources {
				meta, _ := r["Metadata"].(map[string]any)
				nagMeta, _ := meta["cdk_nag"].(map[string]any)
				for _, rule := range asList(nagMeta["rules_to_suppress"]) {
					rule, ok := rule.(map[string]any)
					if !ok {
						continue
					}
					reason, _ := rule["reason"].(string)
					if len(strings.TrimSpace(reason)) < 10 {
						t.Errorf("%s: suppression of %v has no real reason: %q", lid, rule["id"], reason)
					}
					got[lid] += rule["id"].(string)
				}
			}
			if mustJSON(got) != mustJSON(want) {
				t.Errorf("suppressions %v, want %v", got, want)
			}
		})
	}
}

// TestLaneIsAScope: a lane can parent further constructs, as its replay
// function and schedule do.
func TestLaneIsAScope(t *testing.T) {
	stack := newStack()
	lane := deadletter.NewLane(stack, "Orders", baseProps())
	q := awssqs.NewQueue(lane, jsii.String("Extra"), &awssqs.QueueProps{EnforceSSL: jsii.Bool(true)})
	if got := *q.Node().Path(); got != "Test/Orders/Extra" {
		t.Errorf("path %q", got)
	}
}
