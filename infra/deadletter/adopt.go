package deadletter

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	jsiiruntime "github.com/aws/jsii-runtime-go/runtime"

	"github.com/homingdlq/homing/internal/settings"
)

// Adopting the team's existing resources (issue 17): what the lane takes
// over, and what it refuses with the safe way forward. docs/ADOPTING.md
// walks a team through it with `cdk import` and `cdk diff`.

// Ids of the lane's warnings on adopted resources.
const (
	warnDeadLetterRetention = "homing-deadletter:DeadLetterQueueRetention"
	warnSourceQueueName     = "homing-deadletter:SourceQueueReplaced"
)

// adoptSourceRedrive reads the dead-letter queue the team's queue q (cfn
// its resource) redrives to, if any: the lane adopts it when it is the
// DeadLetterQueue prop, and refuses it otherwise.
func (r *queuesResolved) adoptSourceRedrive(p *QueuesProps, q awssqs.Queue, cfn awssqs.CfnQueue) {
	own := q.DeadLetterQueue()
	switch {
	case own != nil && p.DeadLetterQueue == nil:
		r.sourceProblems = append(r.sourceProblems, fmt.Sprintf(
			"redrives to a dead-letter queue of its own (%s): pass that queue as Queues.DeadLetterQueue, and the lane adopts it as its DLQ, "+
				"keeping its messages (do not remove it from the queue: its messages would be replayed by nothing)", *own.Queue.Node().Path()))
		return
	case own == nil && cfn.RedrivePolicy() != nil:
		r.sourceProblems = append(r.sourceProblems,
			"has a RedrivePolicy set on its CfnQueue: define it as the awssqs.Queue's DeadLetterQueue prop and pass that queue as Queues.DeadLetterQueue, so that the lane knows it")
		return
	case own != nil && *own.Queue.Node().Path() != *p.DeadLetterQueue.Node().Path():
		r.sourceProblems = append(r.sourceProblems, fmt.Sprintf("redrives to %s, but Queues.DeadLetterQueue is %s: the lane adopts the queue's own DLQ, or none",
			*own.Queue.Node().Path(), *p.DeadLetterQueue.Node().Path()))
		return
	}
	if own != nil && p.MaxReceiveCount == nil {
		// The team's own count stays unless the props say otherwise.
		if r.receivesUnknown = *awscdk.Token_IsUnresolved(own.MaxReceiveCount); !r.receivesUnknown {
			r.maxReceiveCount = *own.MaxReceiveCount
		}
	}
	if p.DeadLetterQueue != nil {
		r.adoptDeadLetter(p)
	}
}

// adoptSourceName reads the name of the team's queue (cfn its resource):
// the DLQ's redrive allow-policy names the source queue by name.
func (r *queuesResolved) adoptSourceName(p *QueuesProps, cfn awssqs.CfnQueue) {
	// An awssqs.Queue without a QueueName renders one lazily: a token.
	name := cfn.QueueName()
	if name != nil && *awscdk.Token_IsUnresolved(name) {
		name = nil
	}
	switch {
	case name != nil && p.SourceQueueName != nil && *p.SourceQueueName != *name:
		r.sourceProblems = append(r.sourceProblems, fmt.Sprintf("is named %q, but Queues.SourceQueueName is %q: leave it unset for a queue with a QueueName", *name, *p.SourceQueueName))
	case name != nil:
		r.sourceName = *name
	case p.SourceQueueName != nil:
		r.sourceName = *p.SourceQueueName
		if !validQueueName(r.sourceName, r.fifo) {
			r.sourceProblems = append(r.sourceProblems, fmt.Sprintf("Queues.SourceQueueName is %q, want the queue's deployed name (1..80 letters, digits, '-' and '_', ending in .fifo for a FIFO queue)", r.sourceName))
		}
	case r.allowReplacement:
		r.nameSource = true
	default:
		r.sourceProblems = append(r.sourceProblems, "has no QueueName, and the DLQ's redrive allow-policy must name it (by reference it would be a cycle). "+
			"If the queue is deployed, set Queues.SourceQueueName to its deployed name (the queue's physical id: "+
			"`aws cloudformation describe-stack-resource --stack-name <stack> --logical-resource-id <id>`); do not add a QueueName: "+
			"CloudFormation would replace the queue, and its messages would be lost. "+
			"If it is not deployed yet (or empty), give it a QueueName, or set Queues.AllowQueueReplacement and the lane names it")
	}
}

// validQueueName reports whether name can be an SQS queue's name.
func validQueueName(name string, fifo bool) bool {
	base := name
	if fifo {
		var ok bool
		if base, ok = strings.CutSuffix(name, settings.FIFOSuffix); !ok {
			return false
		}
	}
	if len(name) == 0 || len(name) > 80 || base == "" {
		return false
	}
	for _, c := range base {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// adoptDeadLetter reads what the lane needs of p.DeadLetterQueue, the
// team's DLQ, and notes why it cannot use it, if so.
func (r *queuesResolved) adoptDeadLetter(p *QueuesProps) {
	q, ok := p.DeadLetterQueue.(awssqs.Queue)
	var cfn awssqs.CfnQueue
	if ok {
		cfn, ok = q.Node().DefaultChild().(awssqs.CfnQueue)
	}
	if !ok {
		r.deadLetterProblems = append(r.deadLetterProblems, "is imported: the lane sets its redrive allow-policy, which needs the queue in the lane's stack (`cdk import` a deployed one)")
		return
	}
	r.deadLetterQueue = q
	if p.DeadLetterRetention != nil {
		r.deadLetterProblems = append(r.deadLetterProblems, "is the team's: Queues.DeadLetterRetention configures the DLQ the lane creates; set RetentionPeriod on that queue")
	}
	if p.DeadLetterQueueProps != nil {
		r.deadLetterProblems = append(r.deadLetterProblems, "is the team's: Queues.DeadLetterQueueProps configure the DLQ the lane creates; set them on that queue")
	}
	if q.DeadLetterQueue() != nil || cfn.RedrivePolicy() != nil {
		r.deadLetterProblems = append(r.deadLetterProblems, "redrives to a queue of its own: a DLQ behind the DLQ would hide dead letters from the replay; remove it")
	}
	if cfn.RedriveAllowPolicy() != nil {
		r.deadLetterProblems = append(r.deadLetterProblems, "has a redrive allow-policy of its own: remove it, the lane sets byQueue naming the source queue")
	}
	if f := q.Fifo(); f != nil && *f != r.fifo {
		r.deadLetterProblems = append(r.deadLetterProblems, fmt.Sprintf("is FIFO: %v, but LaneProps.Fifo is %v: all four queues are of one type", *f, r.fifo))
	}
	if v := cfn.MaximumMessageSize(); v != nil && !*awscdk.Token_IsUnresolved(v) && *v < maxMessageBytes {
		r.deadLetterProblems = append(r.deadLetterProblems, fmt.Sprintf("has a MaximumMessageSize of %v, want it unset or %d: the lane's metadata travels with each dead letter", *v, maxMessageBytes))
	}
	switch v := cfn.MessageRetentionPeriod(); {
	case v == nil:
		r.deadLetterUnsetRetention = true
	case *awscdk.Token_IsUnresolved(v):
		r.deadLetterRetention = math.NaN()
	default:
		r.deadLetterRetention = *v
	}
}

// adoptDeadLetterQueue makes the team's DLQ the lane's: its redrive
// allow-policy names the source queue (source), and its retention, if it
// leaves it unset, becomes DeadLetterRetention.
func (l *lane) adoptDeadLetterQueue(source awssqs.IQueue) {
	r := l.props.queues
	q := r.deadLetterQueue
	cfn := q.Node().DefaultChild().(awssqs.CfnQueue)
	cfn.SetRedriveAllowPolicy(map[string]any{
		"redrivePermission": "byQueue",
		"sourceQueueArns":   []any{source.QueueArn()},
	})
	if r.deadLetterUnsetRetention {
		cfn.SetMessageRetentionPeriod(jsii.Number(r.deadLetterRetention))
		awscdk.Annotations_Of(q).AddWarningV2(jsii.String(warnDeadLetterRetention), jsii.String(fmt.Sprintf(
			"the dead-letter lane set this queue's MessageRetentionPeriod to %s (Queues.DeadLetterRetention's default): unset, it is SQS's default of 4 days, "+
				"no longer than the source queue's, and SQS keeps a message's original enqueue time when it moves it to the DLQ. "+
				"The change updates the queue without interruption. To silence this warning, set RetentionPeriod on the queue yourself.",
			human(r.deadLetterRetention))), nil)
	}
	l.deadLetter = q
}

// nameTeamQueue names the team's unnamed source queue (cfn) name, which
// makes CloudFormation replace a deployed queue: only with
// AllowQueueReplacement, and with a warning that says so.
func nameTeamQueue(q constructs.IConstruct, cfn awssqs.CfnQueue, name string) {
	cfn.SetQueueName(jsii.String(name))
	awscdk.Annotations_Of(q).AddWarningV2(jsii.String(warnSourceQueueName), jsii.String(fmt.Sprintf(
		"the dead-letter lane named this queue %q (Queues.AllowQueueReplacement): if the queue is deployed, CloudFormation replaces it and its messages are lost", name)), nil)
}

// eventSourcesOn are the paths of the event source mappings of stack that
// consume queue, and whether one of them is fn's with the construct id
// that the lane's own mapping will have (AddEventSource's id).
func eventSourcesOn(stack awscdk.Stack, fn awslambda.Function, queue awssqs.IQueue) (paths []string, sameID bool) {
	arn := mustText(stack.Resolve(queue.QueueArn()))
	for _, c := range *stack.Node().FindAll(constructs.ConstructOrder_PREORDER) {
		cfn, ok := c.(awscdk.CfnResource)
		if !ok || *cfn.CfnResourceType() != "AWS::Lambda::EventSourceMapping" {
			continue
		}
		mapping, ok := c.(awslambda.CfnEventSourceMapping)
		if !ok || mustText(stack.Resolve(mapping.EventSourceArn())) != arn {
			continue
		}
		paths = append(paths, *c.Node().Path())
	}
	id := "SqsEventSource:" + *awscdk.Names_NodeUniqueId(queue.Node())
	sameID = fn.Node().TryFindChild(jsii.String(id)) != nil
	return paths, sameID
}

// environmentOf is fn's environment as the template will render it: each
// variable's value as JSON text (a string quoted, a token as its
// intrinsic); nil when it has none.
func environmentOf(fn awslambda.Function) map[string]string {
	cfn, ok := fn.Node().DefaultChild().(awslambda.CfnFunction)
	if !ok {
		return nil
	}
	// The L2 function renders its environment lazily: the L1 property is a
	// token, which the typed getter cannot return, so it is read as one.
	var env awscdk.IResolvable
	jsiiruntime.Get(cfn, "environment", &env)
	if env == nil {
		return nil
	}
	stack := awscdk.Stack_Of(fn)
	// A token in a value makes the JSON an Fn::Join of its parts: the
	// intrinsics become placeholders, then the values they fill alone.
	var text strings.Builder
	intrinsics := map[string]string{}
	switch v := stack.Resolve(stack.ToJsonString(env, nil)).(type) {
	case string:
		text.WriteString(v)
	case map[string]any:
		join, _ := v["Fn::Join"].([]any)
		if len(join) != 2 {
			return nil
		}
		parts, _ := join[1].([]any)
		for i, part := range parts {
			if p, ok := part.(string); ok {
				text.WriteString(p)
				continue
			}
			placeholder := fmt.Sprintf("\x00homing-token-%d\x00", i)
			intrinsics[placeholder] = mustText(part)
			text.WriteString(placeholder)
		}
	default:
		return nil
	}
	var doc struct {
		Variables map[string]string `json:"variables"`
	}
	if err := json.Unmarshal([]byte(text.String()), &doc); err != nil {
		return nil
	}
	vars := map[string]string{}
	for k, v := range doc.Variables {
		if intrinsic, ok := intrinsics[v]; ok {
			vars[k] = intrinsic
		} else {
			vars[k] = mustText(v)
		}
	}
	return vars
}

// wayForward names what makes the lane's value of a consumer variable agree
// with the team's.
var wayForward = map[string]string{
	settings.ConsumerName.Env:     "set LaneProps.Consumer.Name to the function's value (it scopes the idempotency keys the function already wrote), or remove the variable from the function",
	settings.ServiceName.Env:      "set LaneProps.ServiceName to the function's value (the lane's alarms and dashboard then read the metrics under the name they already carry), or remove the variable from the function",
	settings.MetricsNamespace.Env: "set LaneProps.MetricsNamespace to the function's value, or remove the variable from the function",
	envKeyExpression:              "set LaneProps.Consumer.Key to the function's value, or remove the variable from the function",
	envPayloadHashExpression:      "set LaneProps.Consumer.PayloadHash to the function's value, or remove the variable from the function",
	settings.InvalidQueueURL.Env:  "remove the variable from the function: the lane brings its invalid queue (or adopt no consumer and keep the team's wiring)",
	settings.IdempotencyTable.Env: "remove the variable from the function: the lane brings its idempotency table",
	settings.GroupOrder.Env:       "set LaneProps.Consumer.GroupOrder to the function's value, or remove the variable from the function",
	settings.SourceQueueURL.Env:   "remove the variable from the function: the lane brings its source queue",
	settings.ParkingQueueURL.Env:  "remove the variable from the function: the lane brings its parking queue",
	settings.ParksTable.Env:       "remove the variable from the function: the lane keeps its parks in its ledger",
	settings.SourceRetention.Env:  "remove the variable from the function: the lane tells it its source queue's retention",
	settings.MaxReceives.Env:      "set LaneProps.Queues.MaxReceiveCount to the function's value plus " + strconv.Itoa(ParkMargin) + ", or remove the variable from the function",
}

// environmentClashes are the variables of wanted that the team's function
// fn sets to another value, each with both values and the way forward.
// The same value is no clash: the lane leaves it as it is.
func environmentClashes(fn awslambda.Function, wanted map[string]*string) []error {
	own := environmentOf(fn)
	if own == nil {
		return nil
	}
	stack := awscdk.Stack_Of(fn)
	keys := make([]string, 0, len(wanted))
	for k := range wanted {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs []error
	for _, k := range keys {
		theirs, ok := own[k]
		if !ok {
			continue
		}
		ours := mustText(stack.Resolve(wanted[k]))
		if theirs == ours {
			continue
		}
		errs = append(errs, fmt.Errorf("Consumer.Function %s sets %s to %s, and the lane needs %s: the lane never overwrites a variable the function sets; %s",
			*fn.Node().Path(), k, theirs, ours, wayForward[k]))
	}
	return errs
}

// mustText is v as JSON: a string quoted, a token as its intrinsic.
func mustText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
