package deadletter_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/homingdlq/homing/infra/deadletter"
)

// testRoot holds the dummy bootstrap builds and every cloud assembly of the
// test binary; TestMain removes it.
var testRoot string

// codeDir is a CodeDir with a dummy consumer/bootstrap and replay/bootstrap.
func codeDir() string { return filepath.Join(testRoot, "bin") }

func TestMain(m *testing.M) {
	var err error
	if testRoot, err = os.MkdirTemp("", "deadletter-test-"); err == nil {
		err = writeBootstrap(codeDir(), "consumer")
	}
	if err == nil {
		err = writeBootstrap(codeDir(), "replay")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	code := m.Run()
	jsii.Close()
	os.RemoveAll(testRoot)
	os.Exit(code)
}

func writeBootstrap(dir, function string) error {
	if err := os.MkdirAll(filepath.Join(dir, function), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, function, "bootstrap"), []byte("#!/bin/sh\n"), 0o755)
}

// synthesized is one lane in its own app and stack, synthesized with the
// AwsSolutions checks.
type synthesized struct {
	stack     awscdk.Stack
	lane      deadletter.Lane
	template  assertions.Template
	resources map[string]map[string]any // logical id -> resource, from the template JSON
}

// newStack returns a fresh app's stack whose cloud assembly goes under testRoot.
func newStack() awscdk.Stack {
	outdir, err := os.MkdirTemp(testRoot, "cdk.out-")
	if err != nil {
		panic(err)
	}
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(outdir)})
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
	return awscdk.NewStack(app, jsii.String("Test"), nil)
}

func synth(props *deadletter.LaneProps) *synthesized {
	stack := newStack()
	return synthesize(stack, deadletter.NewLane(stack, "Orders", props))
}

// synthesize synthesizes stack, whose lane (of several, one) is lane.
func synthesize(stack awscdk.Stack, lane deadletter.Lane) *synthesized {
	template := assertions.Template_FromStack(stack, nil)
	s := &synthesized{stack: stack, lane: lane, template: template, resources: map[string]map[string]any{}}
	raw, err := json.Marshal(template.ToJSON())
	if err != nil {
		panic(err)
	}
	var doc struct {
		Resources map[string]map[string]any
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		panic(err)
	}
	s.resources = doc.Resources
	return s
}

// fixture synthesizes once per test binary and shares the result; jsii
// start-up and synthesis are the slow part of these tests.
type fixture struct {
	once  sync.Once
	props func() *deadletter.LaneProps
	s     *synthesized
	err   any
	// extra is a further lane of the fixture's stack, if any.
	extra deadletter.Lane
}

func (f *fixture) get(t *testing.T) *synthesized {
	t.Helper()
	f.once.Do(func() {
		defer func() { f.err = recover() }()
		f.s = synth(f.props())
	})
	if f.err != nil {
		t.Fatalf("synthesize: %v", f.err)
	}
	return f.s
}

// taxURL is the fixtures' HealthURL.
const taxURL = "https://tax.example.test"

// operatorArn is the tuned fixture's operator role pattern.
const operatorArn = "arn:aws:iam::123456789012:role/aws-reserved/sso.amazonaws.com/*/AWSReservedSSO_Ops_*"

func baseProps() *deadletter.LaneProps {
	return &deadletter.LaneProps{
		CodeDir:  jsii.String(codeDir()),
		Consumer: deadletter.ConsumerProps{Records: deadletter.ConsumerWritesRecords, Key: jsii.String("orderId")},
		Replay:   deadletter.ReplayProps{HealthURL: jsii.String(taxURL)},
	}
}

var (
	// defaults: only the required props.
	defaults = &fixture{props: baseProps}
	// fifo: FIFO queues, otherwise defaults.
	fifo = &fixture{props: func() *deadletter.LaneProps {
		p := baseProps()
		p.Fifo = jsii.Bool(true)
		return p
	}}
	// tuned: every tuning prop away from its default.
	tuned = &fixture{props: func() *deadletter.LaneProps {
		p := baseProps()
		p.Queues.MaxReceiveCount = jsii.Number(3)
		p.Queues.SourceRetention = awscdk.Duration_Days(jsii.Number(1))
		p.Queues.DeadLetterRetention = awscdk.Duration_Days(jsii.Number(7))
		p.Consumer.Timeout = awscdk.Duration_Seconds(jsii.Number(10))
		p.Consumer.MaxBatchingWindow = awscdk.Duration_Seconds(jsii.Number(5))
		p.Consumer.BatchSize = jsii.Number(100)
		p.Consumer.MaxConcurrency = jsii.Number(20)
		p.Consumer.ReservedConcurrency = jsii.Number(50)
		p.Consumer.MemorySize = jsii.Number(512)
		p.Consumer.Name = jsii.String("billing")
		p.Consumer.Environment = map[string]string{"CONCURRENCY": "4"}
		p.RemovalPolicy = awscdk.RemovalPolicy_DESTROY
		p.LogRetention = awslogs.RetentionDays_ONE_DAY
		p.Alarms.Period = awscdk.Duration_Minutes(jsii.Number(5))
		p.Queues.AllowNativeRedrive = jsii.Bool(true)
		p.Queues.OperatorArns = []string{operatorArn}
		p.SystemLogLevel = awslambda.SystemLogLevel_DEBUG
		p.Archive = deadletter.ArchiveProps{
			OnArrival:       jsii.Bool(true),
			Margin:          awscdk.Duration_Hours(jsii.Number(72)),
			TransitionAfter: awscdk.Duration_Days(jsii.Number(30)),
		}
		p.Replay = deadletter.ReplayProps{
			HealthURL:           p.Replay.HealthURL,
			RouteName:           jsii.String("billing-orders"),
			Schedule:            jsii.String("cron(0/5 * * * ? *)"),
			Interval:            awscdk.Duration_Minutes(jsii.Number(5)),
			Enabled:             jsii.Bool(false),
			Timeout:             awscdk.Duration_Minutes(jsii.Number(2)),
			MemorySize:          jsii.Number(512),
			ReservedConcurrency: jsii.Number(1),
			MaxReplays:          jsii.Number(5),
			BackoffBase:         awscdk.Duration_Seconds(jsii.Number(90)),
			BackoffMax:          awscdk.Duration_Hours(jsii.Number(2)),
			ExpiryRescueWindow:  awscdk.Duration_Minutes(jsii.Number(750)),
			Rate:                jsii.Number(12.5),
			MaxPerRun:           jsii.Number(200),
			CanaryLimit:         jsii.Number(2),
			RefillThreshold:     jsii.Number(40),
			DeadlineMargin:      awscdk.Duration_Millis(jsii.Number(2500)),
			Workers:             jsii.Number(8),
			Environment:         map[string]string{"LOG_LEVEL": "debug"},
		}
		return p
	}}
)

// check runs one assertions call; a failed assertion (a jsii panic) becomes a
// test error instead of aborting the test binary.
func check(t *testing.T, what string, assertion func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s:\n%v", what, r)
		}
	}()
	assertion()
}

// obj and arr shorten the matcher literals.
type obj = map[string]any
type arr = []any

func like(m obj) assertions.Matcher { return assertions.Match_ObjectLike(&m) }
func arrayWith(a ...any) assertions.Matcher {
	return assertions.Match_ArrayWith(&a)
}

// ref returns the logical id a Ref/GetAtt token resolves to in s's stack.
func (s *synthesized) ref(token *string) string {
	resolved := s.stack.Resolve(token)
	m, ok := resolved.(map[string]any)
	if !ok {
		panic(fmt.Sprintf("token resolves to %#v, not a reference", resolved))
	}
	if id, ok := m["Ref"].(string); ok {
		return id
	}
	if ga, ok := m["Fn::GetAtt"].([]any); ok {
		return ga[0].(string)
	}
	panic(fmt.Sprintf("token resolves to %#v, not a reference", resolved))
}

// joined renders a resolved Fn::Join as a string in which every Ref to a
// logical id reads "Ref(id)", so that a JSON document built from tokens can
// be parsed and compared whole.
func joined(v any) (string, error) {
	join, ok := v.(map[string]any)["Fn::Join"].([]any)
	if !ok || len(join) != 2 || join[0] != "" {
		return "", fmt.Errorf("not an Fn::Join with an empty separator: %s", mustJSON(v))
	}
	var b strings.Builder
	for _, part := range join[1].([]any) {
		switch p := part.(type) {
		case string:
			b.WriteString(p)
		case map[string]any:
			id, ok := p["Ref"].(string)
			if !ok {
				return "", fmt.Errorf("a part other than a Ref: %s", mustJSON(p))
			}
			b.WriteString("Ref(" + id + ")")
		default:
			return "", fmt.Errorf("unexpected part %s", mustJSON(p))
		}
	}
	return b.String(), nil
}

func getAtt(id, attr string) obj { return obj{"Fn::GetAtt": arr{id, attr}} }
func refTo(id string) obj        { return obj{"Ref": id} }

// ofType lists the logical ids of the resources of type typ, sorted.
func (s *synthesized) ofType(typ string) []string {
	var ids []string
	for id, r := range s.resources {
		if r["Type"] == typ {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

func props(r map[string]any) map[string]any {
	p, _ := r["Properties"].(map[string]any)
	return p
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// asList turns a policy's Action or Resource (one value or a list) into a list.
func asList(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	return []any{v}
}

func containsAll(s string, subs ...string) error {
	var missing []string
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			missing = append(missing, sub)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing %q", missing)
	}
	return nil
}
