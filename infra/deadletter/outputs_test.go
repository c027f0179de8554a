package deadletter_test

import (
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/homingdlq/homing/infra/deadletter"
	"github.com/homingdlq/homing/internal/settings"
)

// outputKeys are every settings.Output* key: the outputs of a lane the
// construct builds.
var outputKeys = []string{
	settings.OutputSourceQueueURL, settings.OutputSourceQueueARN, settings.OutputDeadLetterQueueURL,
	settings.OutputDeadLetterQueueARN, settings.OutputInvalidQueueURL, settings.OutputParkingQueueURL,
	settings.OutputIdempotencyTableName, settings.OutputLedgerTableName, settings.OutputConsumerFunctionName,
	settings.OutputReplayFunctionName, settings.OutputReplayScheduleName, settings.OutputAlarmTopicARN,
	settings.OutputDashboardName, settings.OutputConsumerLogGroupName, settings.OutputReplayLogGroupName,
	settings.OutputArchiveBucketName,
}

// twoLanes: the orders lane (standard) and a FIFO payments lane with its own
// consumer code and a name of its own, side by side in one stack.
var twoLanes = &fixture{props: func() *deadletter.LaneProps { return nil }}

func twoLaneStack(t *testing.T) (orders, payments *synthesized) {
	t.Helper()
	var p deadletter.Lane
	twoLanes.once.Do(func() {
		defer func() { twoLanes.err = recover() }()
		stack := newStack()
		o := deadletter.NewLane(stack, "Orders", baseProps())
		pp := baseProps()
		pp.Fifo = jsii.Bool(true)
		pp.Name = jsii.String("payments")
		pp.Consumer.CodeDir = jsii.String(codeDir() + "/consumer")
		p = deadletter.NewLane(stack, "PaymentsLedger", pp)
		twoLanes.s = synthesize(stack, o)
		twoLanes.extra = p
	})
	if twoLanes.err != nil {
		t.Fatalf("synthesize: %v", twoLanes.err)
	}
	other := *twoLanes.s
	other.lane = twoLanes.extra
	return twoLanes.s, &other
}

// TestOutputs: every lane declares one output per settings key, named
// settings.OutputID(lane name, key), whose value is its resource, the FIFO
// lane as the standard one; two lanes in one stack do not collide.
func TestOutputs(t *testing.T) {
	orders, payments := twoLaneStack(t)
	if got := payments.lane.Name(); got != "payments" {
		t.Errorf("Name() = %q, want the Name prop", got)
	}
	if got := orders.lane.Name(); got != "orders" {
		t.Errorf("Name() = %q, want the kebab-case construct id", got)
	}
	var want []string
	for _, s := range []*synthesized{orders, payments} {
		l := s.lane
		values := map[string]any{
			settings.OutputSourceQueueURL:       refTo(s.ref(l.SourceQueue().QueueArn())),
			settings.OutputSourceQueueARN:       getAtt(s.ref(l.SourceQueue().QueueArn()), "Arn"),
			settings.OutputDeadLetterQueueURL:   refTo(s.ref(l.DeadLetterQueue().QueueArn())),
			settings.OutputDeadLetterQueueARN:   getAtt(s.ref(l.DeadLetterQueue().QueueArn()), "Arn"),
			settings.OutputInvalidQueueURL:      refTo(s.ref(l.InvalidQueue().QueueArn())),
			settings.OutputParkingQueueURL:      refTo(s.ref(l.ParkingQueue().QueueArn())),
			settings.OutputIdempotencyTableName: refTo(s.ref(l.IdempotencyTable().TableName())),
			settings.OutputLedgerTableName:      refTo(s.ref(l.LedgerTable().TableName())),
			settings.OutputConsumerFunctionName: refTo(s.ref(l.Consumer().FunctionName())),
			settings.OutputReplayFunctionName:   refTo(s.ref(l.Replay().FunctionName())),
			settings.OutputReplayScheduleName:   refTo(s.ref(l.ReplaySchedule().RuleName())),
			settings.OutputAlarmTopicARN:        refTo(s.ref(l.AlarmTopic().TopicArn())),
			settings.OutputDashboardName:        refTo(s.ref(l.Dashboard().DashboardName())),
			settings.OutputConsumerLogGroupName: refTo(s.ref(l.ConsumerLogGroup().LogGroupName())),
			settings.OutputReplayLogGroupName:   refTo(s.ref(l.ReplayLogGroup().LogGroupName())),
			settings.OutputArchiveBucketName:    refTo(s.ref(l.Archive().BucketArn())),
		}
		keys := outputKeys
		if len(values) != len(keys) {
			t.Fatalf("the test checks %d keys of %d", len(values), len(keys))
		}
		for _, key := range keys {
			id := settings.OutputID(l.Name(), key)
			want = append(want, id)
			check(t, id, func() { s.template.HasOutput(jsii.String(id), like(obj{"Value": values[key]})) })
		}
	}
	var got []string
	for id := range *orders.template.FindOutputs(jsii.String("*"), nil) {
		got = append(got, id)
	}
	sort.Strings(got)
	sort.Strings(want)
	if mustJSON(got) != mustJSON(want) {
		t.Errorf("outputs %v\nwant %v", got, want)
	}
	if _, ok := (*orders.template.FindOutputs(jsii.String("PaymentsDeadLetterQueueUrl"), nil))["PaymentsDeadLetterQueueUrl"]; !ok {
		t.Error("no output PaymentsDeadLetterQueueUrl")
	}
}

// TestTags: every taggable resource of a lane carries settings.TagLane, its
// queues, tables and functions settings.TagRole.
func TestTags(t *testing.T) {
	orders, payments := twoLaneStack(t)
	for _, s := range []*synthesized{orders, payments} {
		l := s.lane
		roles := map[string]string{
			s.ref(l.SourceQueue().QueueArn()):       settings.RoleSource,
			s.ref(l.DeadLetterQueue().QueueArn()):   settings.RoleDeadLetter,
			s.ref(l.InvalidQueue().QueueArn()):      settings.RoleInvalid,
			s.ref(l.ParkingQueue().QueueArn()):      settings.RoleParking,
			s.ref(l.IdempotencyTable().TableName()): settings.RoleIdempotency,
			s.ref(l.LedgerTable().TableName()):      settings.RoleLedger,
			s.ref(l.Consumer().FunctionName()):      settings.RoleConsumer,
			s.ref(l.Replay().FunctionName()):        settings.RoleReplay,
			s.ref(l.Archive().BucketArn()):          settings.RoleArchive,
		}
		for id, role := range roles {
			tags := mustJSON(props(s.resources[id])["Tags"])
			for _, tag := range []obj{{"Key": settings.TagLane, "Value": l.Name()}, {"Key": settings.TagRole, "Value": role}} {
				if !containsJSON(tags, tag) {
					t.Errorf("%s: tags %s lack %s", id, tags, mustJSON(tag))
				}
			}
		}
		// Every other taggable resource of the lane: its lane, no role.
		prefix := *l.Node().Id()
		tagged := 0
		for id, r := range s.resources {
			p := props(r)
			if _, taggable := p["Tags"]; !taggable || len(id) < len(prefix) || id[:len(prefix)] != prefix {
				continue
			}
			tagged++
			if !containsJSON(mustJSON(p["Tags"]), obj{"Key": settings.TagLane, "Value": l.Name()}) {
				t.Errorf("%s (%s) lacks the lane tag: %s", id, r["Type"], mustJSON(p["Tags"]))
			}
			if _, hasRole := roles[id]; !hasRole && containsJSON(mustJSON(p["Tags"]), obj{"Key": settings.TagRole}) {
				t.Errorf("%s (%s) has a role tag", id, r["Type"])
			}
		}
		if tagged < 12 {
			t.Errorf("lane %s: only %d tagged resources", l.Name(), tagged)
		}
	}
}

// containsJSON reports whether the JSON list of tags holds an object with
// tag's fields.
func containsJSON(tags string, tag obj) bool {
	m := assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&tag)})
	var v any
	if err := jsonUnmarshal(tags, &v); err != nil {
		return false
	}
	return !*m.Test(v).HasFailed()
}

// TestFIFOLane: the FIFO lane beside a standard one: four FIFO queues
// without content-based deduplication, a FIFO ESM with a batch of at most
// 10 and no batching window.
func TestFIFOLane(t *testing.T) {
	_, payments := twoLaneStack(t)
	l := payments.lane
	for _, q := range []string{
		payments.ref(l.SourceQueue().QueueArn()), payments.ref(l.DeadLetterQueue().QueueArn()),
		payments.ref(l.InvalidQueue().QueueArn()), payments.ref(l.ParkingQueue().QueueArn()),
	} {
		p := props(payments.resources[q])
		if p["FifoQueue"] != true || p["ContentBasedDeduplication"] != false {
			t.Errorf("%s: FifoQueue %v, ContentBasedDeduplication %v", q, p["FifoQueue"], p["ContentBasedDeduplication"])
		}
	}
	check(t, "FIFO event source", func() {
		payments.template.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), like(obj{
			"EventSourceArn":                 getAtt(payments.ref(l.SourceQueue().QueueArn()), "Arn"),
			"FunctionName":                   refTo(payments.ref(l.Consumer().FunctionName())),
			"BatchSize":                      10,
			"FunctionResponseTypes":          arr{"ReportBatchItemFailures"},
			"MaximumBatchingWindowInSeconds": assertions.Match_Absent(),
		}))
	})
}

// TestCdkNagTwoLanes: two lanes in one stack (unique construct ids, alarm
// names and dashboards) raise no finding and no warning.
func TestCdkNagTwoLanes(t *testing.T) {
	orders, payments := twoLaneStack(t)
	annotations := assertions.Annotations_FromStack(orders.stack)
	anything := assertions.Match_AnyValue()
	for _, m := range *annotations.FindError(jsii.String("*"), anything) {
		t.Errorf("error: %s", mustJSON(m))
	}
	for _, m := range *annotations.FindWarning(jsii.String("*"), anything) {
		t.Errorf("warning: %s", mustJSON(m))
	}
	if n := len(orders.ofType("AWS::CloudWatch::Dashboard")); n != 2 {
		t.Errorf("%d dashboards, want one per lane", n)
	}
	for _, s := range []*synthesized{orders, payments} {
		body := mustJSON(props(s.resources[s.ref(s.lane.Dashboard().DashboardName())])["DashboardBody"])
		if !strings.Contains(body, "Dead-letter lane `"+s.lane.Name()+"`") {
			t.Errorf("the %s dashboard is not titled by its lane: %.200s", s.lane.Name(), body)
		}
	}
}
