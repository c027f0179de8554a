package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/homingdlq/homing/infra/deadletter"
	"github.com/homingdlq/homing/internal/settings"
)

var testRoot string

func TestMain(m *testing.M) {
	var err error
	testRoot, err = os.MkdirTemp("", "infra-test-")
	for _, function := range []string{"consumer", "replay", PaymentsFunction} {
		if err == nil {
			err = os.MkdirAll(filepath.Join(testRoot, "bin", function), 0o755)
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(testRoot, "bin", function, "bootstrap"), []byte("#!/bin/sh\n"), 0o755)
		}
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

// env is a fake getenv.
type env map[string]string

func (e env) get(key string) string { return e[key] }

// testEnv points the code directory at the dummy bootstraps.
func testEnv(extra env) env {
	e := env{"HOMING_CODE_DIR": filepath.Join(testRoot, "bin")}
	for k, v := range extra {
		e[k] = v
	}
	return e
}

type synthesized struct {
	outdir    string
	stack     awscdk.Stack
	template  assertions.Template
	resources map[string]map[string]any
	params    map[string]any
}

func newTestApp() awscdk.App {
	outdir, err := os.MkdirTemp(testRoot, "cdk.out-")
	if err != nil {
		panic(err)
	}
	return awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(outdir)})
}

func outdirOf(app awscdk.App) string { return *app.Outdir() }

// profiles holds one synthesized stack per profile, built the way main
// builds it (newApp: profile props, stack, AwsSolutions aspect).
var profiles = map[string]*struct {
	once sync.Once
	s    *synthesized
	err  any
}{ProfileAWS: {}, ProfileLocal: {}}

func profile(t *testing.T, name string) *synthesized {
	t.Helper()
	p := profiles[name]
	p.once.Do(func() {
		defer func() { p.err = recover() }()
		app := newTestApp()
		stack, err := newApp(app, name, testEnv(nil).get)
		if err != nil {
			panic(err)
		}
		tpl := assertions.Template_FromStack(stack, nil)
		raw, err := json.Marshal(tpl.ToJSON())
		if err != nil {
			panic(err)
		}
		var doc struct {
			Resources  map[string]map[string]any
			Parameters map[string]any
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			panic(err)
		}
		p.s = &synthesized{outdir: outdirOf(app), stack: stack, template: tpl, resources: doc.Resources, params: doc.Parameters}
	})
	if p.err != nil {
		t.Fatalf("synthesize the %s profile: %v", name, p.err)
	}
	return p.s
}

// id finds the one resource of typ whose logical id is the order lane's
// construct id plus the CDK's hash, e.g. OrdersSourceQueue1051E0BC.
func (s *synthesized) id(t *testing.T, typ, construct string) string {
	t.Helper()
	return s.find(t, typ, "Orders"+construct)
}

// find finds the one resource of typ whose logical id is path plus the
// CDK's hash, e.g. PaymentsEntries8FB3E591.
func (s *synthesized) find(t *testing.T, typ, path string) string {
	t.Helper()
	re := regexp.MustCompile(`^` + path + `[0-9A-F]{8}$`)
	var found []string
	for lid, r := range s.resources {
		if r["Type"] == typ && re.MatchString(lid) {
			found = append(found, lid)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s %s: found %v", typ, path, found)
	}
	return found[0]
}

func check(t *testing.T, what string, assertion func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s:\n%v", what, r)
		}
	}()
	assertion()
}

type obj = map[string]any
type arr = []any

// mustJSON renders a value, such as a synthesis message, for a failure
// message (the Go type of synthesis messages is deprecated field by field).
func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	return string(b)
}

func like(m obj) assertions.Matcher { return assertions.Match_ObjectLike(&m) }

func TestProfiles(t *testing.T) {
	hostArch := "x86_64"
	if runtime.GOARCH == "arm64" {
		hostArch = "arm64"
	}
	for _, tc := range []struct {
		profile         string
		maxReceiveCount float64
		visibility      float64
		timeout         float64
		arch            string
		deletion        string
		protected       any // the tables' deletion protection
		logDays         float64
		taxURL          any
		extraEnv        obj
		schedule        string
		replayTimeout   float64
		replayTuning    obj // exactly the replay tuning variables
	}{
		// The tables' deletion protection on AWS is the deploy parameter
		// TableDeletionProtection's, by a condition.
		{ProfileAWS, 10, 180, 30, "arm64", "RetainExceptOnCreate", obj{"Fn::If": arr{"TableDeletionProtectionOn", true, false}}, 30, obj{"Ref": "TaxServiceUrl"}, nil,
			"rate(15 minutes)", 600, obj{}},
		{ProfileLocal, 3, 18, 3, hostArch, "Delete", false, 1, DefaultLocalTaxServiceURL, obj{"TAX_BUDGET": "1s", "DEADLINE_MARGIN": "1s"},
			"rate(1 minute)", 30, obj{"MAX_REPLAYS": "3", "BACKOFF_BASE": "2s", "BACKOFF_MAX": "10s", "EXPIRY_RESCUE_WINDOW": "24h", "DEADLINE_MARGIN": "3s", "RATE": "50", "MAX_PER_RUN": "1000"}},
	} {
		t.Run(tc.profile, func(t *testing.T) {
			s := profile(t, tc.profile)
			dlq := s.id(t, "AWS::SQS::Queue", "DeadLetterQueue")
			check(t, "source redrive, visibility >= 6x timeout", func() {
				s.template.HasResourceProperties(jsii.String("AWS::SQS::Queue"), like(obj{
					"RedrivePolicy":     obj{"deadLetterTargetArn": obj{"Fn::GetAtt": arr{dlq, "Arn"}}, "maxReceiveCount": tc.maxReceiveCount},
					"VisibilityTimeout": tc.visibility,
				}))
			})
			if tc.visibility < 6*tc.timeout {
				t.Errorf("visibility %v < 6 x %v", tc.visibility, tc.timeout)
			}
			consumerVars := obj{"TAX_SERVICE_URL": tc.taxURL}
			maps.Copy(consumerVars, tc.extraEnv)
			replayVars := obj{
				"REPLAY_ROUTES":     assertions.Match_AnyValue(),
				"LEDGER_TABLE":      obj{"Ref": s.id(t, "AWS::DynamoDB::Table", "LedgerTable")},
				"IDEMPOTENCY_TABLE": obj{"Ref": s.id(t, "AWS::DynamoDB::Table", "IdempotencyTable")},
				"CONSUMER_NAME":     "invoice",
				"HEALTH_URL":        tc.taxURL,
				// Both functions name their metrics alike: one lane.
				"POWERTOOLS_SERVICE_NAME":      "Homing/Orders",
				"POWERTOOLS_METRICS_NAMESPACE": "Homing",
				"ARCHIVE_BUCKET":               obj{"Ref": s.id(t, "AWS::S3::Bucket", "Archive")},
				"INVALID_QUEUE_URL":            obj{"Ref": s.id(t, "AWS::SQS::Queue", "InvalidQueue")},
			}
			maps.Copy(replayVars, tc.replayTuning)
			for _, fn := range []struct {
				name      string
				timeout   float64
				variables assertions.Matcher
				extra     obj
			}{
				{"consumer", tc.timeout, like(consumerVars), nil},
				// No reserved concurrency: it fails the deploy where the
				// account's quota is small.
				{"replay", tc.replayTimeout, assertions.Match_ObjectEquals(&replayVars), obj{"ReservedConcurrentExecutions": assertions.Match_Absent()}},
			} {
				check(t, fn.name+" function", func() {
					m := obj{
						"Runtime":       "provided.al2023",
						"Handler":       "bootstrap",
						"Architectures": arr{tc.arch},
						"Timeout":       fn.timeout,
						"LoggingConfig": like(obj{"LogFormat": "JSON", "SystemLogLevel": "INFO"}),
						"Environment":   obj{"Variables": fn.variables},
					}
					maps.Copy(m, fn.extra)
					s.template.HasResourceProperties(jsii.String("AWS::Lambda::Function"), like(m))
				})
			}
			check(t, "replay schedule", func() {
				s.template.HasResourceProperties(jsii.String("AWS::Events::Rule"), like(obj{
					"ScheduleExpression": tc.schedule,
					"State":              "ENABLED",
					"Targets":            arr{like(obj{"Arn": obj{"Fn::GetAtt": arr{s.id(t, "AWS::Lambda::Function", "Replay"), "Arn"}}})},
				}))
			})
			check(t, "log retention", func() {
				s.template.AllResourcesProperties(jsii.String("AWS::Logs::LogGroup"), like(obj{"RetentionInDays": tc.logDays}))
			})
			for _, typ := range []string{"AWS::SQS::Queue", "AWS::DynamoDB::Table"} {
				for lid, r := range s.resources {
					if r["Type"] == typ && r["DeletionPolicy"] != tc.deletion {
						t.Errorf("%s: DeletionPolicy %v, want %s", lid, r["DeletionPolicy"], tc.deletion)
					}
				}
			}
			for lid, r := range s.resources {
				if r["Type"] != "AWS::DynamoDB::Table" {
					continue
				}
				if got := r["Properties"].(map[string]any)["DeletionProtectionEnabled"]; mustJSON(got) != mustJSON(tc.protected) {
					t.Errorf("%s: DeletionProtectionEnabled %s, want %s", lid, mustJSON(got), mustJSON(tc.protected))
				}
			}
			param, hasParam := s.params["TaxServiceUrl"]
			if wantParam := tc.profile == ProfileAWS; hasParam != wantParam {
				t.Errorf("TaxServiceUrl parameter present: %v, want %v", hasParam, wantParam)
			}
			if hasParam {
				if got := param.(map[string]any)["AllowedPattern"]; got != `^https://\S+$` {
					t.Errorf("TaxServiceUrl AllowedPattern %v, want https:// only", got)
				}
			}
			// Off unless the deploy says so: an environment's first deploy
			// must be able to roll back its tables.
			protection, hasProtection := s.params[TableDeletionProtectionParameterName]
			if wantParam := tc.profile == ProfileAWS; hasProtection != wantParam {
				t.Errorf("%s parameter present: %v, want %v", TableDeletionProtectionParameterName, hasProtection, wantParam)
			}
			if hasProtection {
				p := protection.(map[string]any)
				if p["Default"] != "false" || mustJSON(p["AllowedValues"]) != `["true","false"]` {
					t.Errorf("%s parameter %s, want true or false, default false", TableDeletionProtectionParameterName, mustJSON(p))
				}
			}
			if got := *s.stack.StackName(); got != "Homing" {
				t.Errorf("stack name %q", got)
			}
		})
	}
}

func TestOutputs(t *testing.T) {
	for _, name := range []string{ProfileAWS, ProfileLocal} {
		t.Run(name, func(t *testing.T) {
			s := profile(t, name)
			ref := func(typ, construct string) obj { return obj{"Ref": s.id(t, typ, construct)} }
			arn := func(typ, construct string) obj { return obj{"Fn::GetAtt": arr{s.id(t, typ, construct), "Arn"}} }
			const queue, table = "AWS::SQS::Queue", "AWS::DynamoDB::Table"
			// The order lane's outputs, by the keys `dlq` reads.
			byKey := map[string]obj{
				settings.OutputSourceQueueURL:       ref(queue, "SourceQueue"),
				settings.OutputSourceQueueARN:       arn(queue, "SourceQueue"),
				settings.OutputDeadLetterQueueURL:   ref(queue, "DeadLetterQueue"),
				settings.OutputDeadLetterQueueARN:   arn(queue, "DeadLetterQueue"),
				settings.OutputInvalidQueueURL:      ref(queue, "InvalidQueue"),
				settings.OutputParkingQueueURL:      ref(queue, "ParkingQueue"),
				settings.OutputIdempotencyTableName: ref(table, "IdempotencyTable"),
				settings.OutputLedgerTableName:      ref(table, "LedgerTable"),
				settings.OutputConsumerFunctionName: ref("AWS::Lambda::Function", "Consumer"),
				settings.OutputReplayFunctionName:   ref("AWS::Lambda::Function", "Replay"),
				settings.OutputReplayScheduleName:   ref("AWS::Events::Rule", "ReplaySchedule"),
				settings.OutputAlarmTopicARN:        ref("AWS::SNS::Topic", "AlarmTopic"),
				settings.OutputDashboardName:        ref("AWS::CloudWatch::Dashboard", "Dashboard"),
				settings.OutputConsumerLogGroupName: ref("AWS::Logs::LogGroup", "ConsumerLogs"),
				settings.OutputReplayLogGroupName:   ref("AWS::Logs::LogGroup", "ReplayLogs"),
				settings.OutputArchiveBucketName:    ref("AWS::S3::Bucket", "Archive"),
			}
			want := map[string]obj{}
			for key, value := range byKey {
				want[settings.OutputID("orders", key)] = value
			}
			// The local profile holds the example lane too: the same keys,
			// and its ledger's table.
			if name == ProfileLocal {
				for key := range byKey {
					want[settings.OutputID("payments", key)] = obj{}
				}
				want["PaymentsEntriesTableName"] = obj{"Ref": s.find(t, "AWS::DynamoDB::Table", "PaymentsEntries")}
			}
			if _, ok := want["OrdersDeadLetterQueueUrl"]; !ok {
				t.Errorf("outputs %v lack OrdersDeadLetterQueueUrl", want)
			}
			for id, value := range want {
				check(t, id, func() { s.template.HasOutput(jsii.String(id), like(obj{"Value": value})) })
			}
			if got := len(*s.template.FindOutputs(jsii.String("*"), nil)); got != len(want) {
				t.Errorf("%d outputs, want %d", got, len(want))
			}
		})
	}
}

// TestCdkNag: both profiles synthesize without an unsuppressed AwsSolutions
// error or warning (or any other), and every suppression has a reason.
func TestCdkNag(t *testing.T) {
	for _, name := range []string{ProfileAWS, ProfileLocal} {
		t.Run(name, func(t *testing.T) {
			s := profile(t, name)
			annotations := assertions.Annotations_FromStack(s.stack)
			for _, pattern := range []string{"AwsSolutions-.*", ".*"} {
				m := assertions.Match_StringLikeRegexp(jsii.String(pattern))
				for _, e := range *annotations.FindError(jsii.String("*"), m) {
					t.Errorf("error: %s", mustJSON(e))
				}
				for _, w := range *annotations.FindWarning(jsii.String("*"), m) {
					t.Errorf("warning: %s", mustJSON(w))
				}
			}
			// What main checks after synthesis: the cloud assembly records no
			// error-level finding.
			if findings, err := errorFindings(s.outdir); err != nil || len(findings) > 0 {
				t.Errorf("errorFindings = %v, %v", findings, err)
			}
			suppressions := 0
			for lid, r := range s.resources {
				meta, _ := r["Metadata"].(map[string]any)
				nag, _ := meta["cdk_nag"].(map[string]any)
				rules, _ := nag["rules_to_suppress"].([]any)
				for _, rule := range rules {
					rule := rule.(map[string]any)
					suppressions++
					if reason, _ := rule["reason"].(string); len(strings.TrimSpace(reason)) < 10 {
						t.Errorf("%s: suppression of %v without a reason", lid, rule["id"])
					}
				}
			}
			lanes := 1
			if name == ProfileLocal {
				lanes = 2 // the example lane's
			}
			if suppressions != 4*lanes {
				t.Errorf("%d suppressions, want 4 of each of %d lanes: SQS3 of the invalid and parking queues, S1 of the archive bucket, IAM5 of its write policy", suppressions, lanes)
			}
		})
	}
}

func TestProfileProps(t *testing.T) {
	if _, err := ProfileProps("staging", env{}.get); err == nil || !strings.Contains(err.Error(), `unknown profile "staging"`) {
		t.Errorf("unknown profile: %v", err)
	}
	p, err := ProfileProps(ProfileAWS, env{"TAX_SERVICE_URL": "https://tax.example.com", "HOMING_CODE_DIR": "/b"}.get)
	if err != nil {
		t.Fatal(err)
	}
	if p.TaxServiceURL == nil || *p.TaxServiceURL != "https://tax.example.com" || *p.Orders.CodeDir != "/b" {
		t.Errorf("aws profile ignores TAX_SERVICE_URL or HOMING_CODE_DIR: %+v", p)
	}
	if p.Orders.RemovalPolicy != "" || p.Orders.Architecture != nil ||
		!reflect.ValueOf(p.Orders.Queues).IsZero() || !reflect.ValueOf(p.Orders.Consumer).IsZero() ||
		!reflect.ValueOf(p.Orders.Alarms).IsZero() || !reflect.ValueOf(p.Orders.Replay).IsZero() {
		t.Errorf("aws profile must keep the construct's production defaults: %+v", p.Orders)
	}
	// Order bodies carry tax ids: the aws profile refuses a plain HTTP tax
	// service when it synthesizes.
	p, err = ProfileProps(ProfileAWS, env{"TAX_SERVICE_URL": "http://tax.example.com"}.get)
	if err != nil {
		t.Fatal(err)
	}
	if err := validateTaxURL(*p.TaxServiceURL, false); err == nil || !strings.Contains(err.Error(), `TaxServiceURL is "http://tax.example.com", want an https:// URL`) {
		t.Errorf("aws profile with an http:// tax service: validateTaxURL = %v", err)
	}
	if _, err := newApp(newTestApp(), ProfileAWS, testEnv(env{"TAX_SERVICE_URL": "http://tax.example.com"}).get); !errors.Is(err, ErrInvalidStackProps) ||
		!strings.Contains(err.Error(), "aws profile") || !strings.Contains(err.Error(), "want an https:// URL") {
		t.Errorf("synthesize the aws profile with an http:// tax service: %v, want an invalid-props error", err)
	}
	p, err = ProfileProps(ProfileLocal, env{"TAX_SERVICE_URL": "http://127.0.0.1:9999"}.get)
	if err != nil {
		t.Fatal(err)
	}
	if *p.TaxServiceURL != "http://127.0.0.1:9999" || p.Orders.CodeDir == nil || *p.Orders.CodeDir != deadletter.DefaultCodeDir {
		t.Errorf("local profile: %+v", p)
	}
	if err := validateTaxURL(*p.TaxServiceURL, *p.AllowPlainHTTP); err != nil {
		t.Errorf("local profile's tax service is invalid: %v", err)
	}
	orders := p.Orders
	ordersContract(&orders)
	if err := orders.Validate(); err != nil {
		t.Errorf("local profile props are invalid: %v", err)
	}
	// The example lane's redrive is a backstop behind its consumer's parks.
	if p.Payments == nil || *p.Payments.Queues.MaxReceiveCount != PaymentsParkReceives+deadletter.ParkMargin || p.Payments.Consumer.Environment["DEADLINE_MARGIN"] != "1s" {
		t.Errorf("local profile's example lane: %+v", p.Payments)
	}
	if aws, _ := ProfileProps(ProfileAWS, env{}.get); aws.Payments != nil {
		t.Error("the aws profile deploys the example lane: it belongs to the local stack only")
	}
}

func TestSelectProfile(t *testing.T) {
	for _, tc := range []struct {
		context any
		env     string
		want    string
	}{
		{nil, "", ProfileAWS},
		{"local", "", ProfileLocal},
		{nil, "local", ProfileLocal},
		{"aws", "local", ProfileAWS}, // -c profile=... wins over HOMING_PROFILE
		{"", "local", ProfileLocal},
	} {
		if got := selectProfile(tc.context, tc.env); got != tc.want {
			t.Errorf("selectProfile(%v, %q) = %q, want %q", tc.context, tc.env, got, tc.want)
		}
	}
}

// TestEnvironmentFromCLI: the local stack is in the environment the CDK CLI
// resolved (the emulator's); the aws one in none, whatever the CLI says, so
// that one assembly deploys to every region.
func TestEnvironmentFromCLI(t *testing.T) {
	cli := env{"CDK_DEFAULT_ACCOUNT": "000000000000", "CDK_DEFAULT_REGION": "us-east-1"}
	stack, err := newApp(newTestApp(), ProfileLocal, testEnv(cli).get)
	if err != nil {
		t.Fatal(err)
	}
	if *stack.Account() != "000000000000" || *stack.Region() != "us-east-1" {
		t.Errorf("local stack env %s/%s", *stack.Account(), *stack.Region())
	}
	stack, err = newApp(newTestApp(), ProfileAWS, testEnv(cli).get)
	if err != nil {
		t.Fatal(err)
	}
	if !*awscdk.Token_IsUnresolved(stack.Account()) || !*awscdk.Token_IsUnresolved(stack.Region()) {
		t.Errorf("aws stack env %s/%s, want the deploy's (tokens)", *stack.Account(), *stack.Region())
	}
}

// TestErrorFindings reads findings both from the manifest and from an
// artifact's additional metadata file, where cdk-nag's errors land.
func TestErrorFindings(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("manifest.json", `{"artifacts":{
		"Homing":{"additionalMetadataFile":"Homing.metadata.json","metadata":{"/Homing/A":[{"type":"aws:cdk:error","data":"inline error"}]}},
		"Tree":{}}}`)
	write("Homing.metadata.json", `{
		"/Homing/Orders/ParkingQueue/Resource":[{"type":"aws:cdk:logicalId","data":"X"},{"type":"aws:cdk:error","data":"AwsSolutions-SQS3: no DLQ"}],
		"/Homing/B":[{"type":"aws:cdk:warning","data":"only a warning"}]}`)
	got, err := errorFindings(dir)
	want := []string{"/Homing/A: inline error", "/Homing/Orders/ParkingQueue/Resource: AwsSolutions-SQS3: no DLQ"}
	if err != nil || strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("errorFindings = %q, %v; want %q", got, err, want)
	}
	if _, err := errorFindings(t.TempDir()); err == nil {
		t.Error("errorFindings of an empty directory: no error")
	}
}
