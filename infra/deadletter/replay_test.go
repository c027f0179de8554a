package deadletter_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/homingdlq/homing/infra/deadletter"
)

// routes parses the replay function's REPLAY_ROUTES, an Fn::Join of the
// queue URLs, with "Ref(id)" in place of each URL.
// route is one route of REPLAY_ROUTES in replay.Route's JSON: its queues,
// and the contract of its consumer (issue 16).
type route struct {
	Name        string `json:"name"`
	DLQURL      string `json:"dlqUrl"`
	SourceURL   string `json:"sourceUrl"`
	ParkingURL  string `json:"parkingUrl"`
	Key         string `json:"key"`
	PayloadHash string `json:"payloadHash"`
	Records     bool   `json:"records"`
}

func (s *synthesized) routes(t *testing.T) []route {
	t.Helper()
	vars, _ := props(s.resources[s.ids().replay])["Environment"].(map[string]any)["Variables"].(map[string]any)
	text, err := joined(vars["REPLAY_ROUTES"])
	if err != nil {
		t.Fatalf("REPLAY_ROUTES: %v", err)
	}
	var routes []route
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&routes); err != nil {
		t.Fatalf("REPLAY_ROUTES %s: %v", text, err)
	}
	return routes
}

func TestReplayFunction(t *testing.T) {
	s := defaults.get(t)
	id := s.ids()
	tpl := s.template

	check(t, "provided.al2023 bootstrap on arm64, 10 min, 256 MB, JSON logs, no reserved concurrency, wired environment only", func() {
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), like(obj{
			"Runtime":                      "provided.al2023",
			"Handler":                      "bootstrap",
			"Architectures":                arr{"arm64"},
			"Timeout":                      600,
			"MemorySize":                   256,
			"ReservedConcurrentExecutions": assertions.Match_Absent(),
			"Role":                         getAtt(id.replayRole, "Arn"),
			"LoggingConfig": assertions.Match_ObjectEquals(&obj{
				"LogFormat":           "JSON",
				"ApplicationLogLevel": "INFO",
				"SystemLogLevel":      "INFO", // keeps the REPORT lines
				"LogGroup":            refTo(id.replayLogs),
			}),
			// No tuning variable: the function's own defaults apply.
			"Environment": obj{"Variables": assertions.Match_ObjectEquals(&obj{
				"REPLAY_ROUTES":                assertions.Match_AnyValue(),
				"LEDGER_TABLE":                 refTo(id.ledger),
				"IDEMPOTENCY_TABLE":            refTo(id.idempotency),
				"CONSUMER_NAME":                "orders",
				"HEALTH_URL":                   taxURL,
				"POWERTOOLS_SERVICE_NAME":      "Test/Orders",
				"POWERTOOLS_METRICS_NAMESPACE": "Homing",
				"ARCHIVE_BUCKET":               refTo(id.archive),
				"INVALID_QUEUE_URL":            refTo(id.invalid),
			})},
		}))
	})

	t.Run("REPLAY_ROUTES names the lane's queues", func(t *testing.T) {
		want := []route{{
			Name:       "orders",
			DLQURL:     "Ref(" + id.dlq + ")",
			SourceURL:  "Ref(" + id.source + ")",
			ParkingURL: "Ref(" + id.parking + ")",
			Key:        "orderId",
			Records:    true,
		}}
		if got := s.routes(t); mustJSON(got) != mustJSON(want) {
			t.Errorf("REPLAY_ROUTES = %s\nwant %s", mustJSON(got), mustJSON(want))
		}
	})

	t.Run("its own log group, same retention as the consumer's", func(t *testing.T) {
		logs := props(s.resources[id.replayLogs])
		if id.replayLogs == id.logs || logs["RetentionInDays"] != 30.0 {
			t.Errorf("replay log group %s: %s", id.replayLogs, mustJSON(logs))
		}
	})

	check(t, "no asynchronous retries: the next schedule is the retry", func() {
		tpl.ResourceCountIs(jsii.String("AWS::Lambda::EventInvokeConfig"), jsii.Number(1))
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::EventInvokeConfig"), assertions.Match_ObjectEquals(&obj{
			"FunctionName":         refTo(id.replay),
			"Qualifier":            "$LATEST",
			"MaximumRetryAttempts": 0,
		}))
	})

	t.Run("no event source mapping", func(t *testing.T) {
		for _, esm := range s.ofType("AWS::Lambda::EventSourceMapping") {
			if fn := mustJSON(props(s.resources[esm])["FunctionName"]); strings.Contains(fn, id.replay) {
				t.Errorf("%s maps an event source to the replay function", esm)
			}
		}
	})
}

func TestReplaySchedule(t *testing.T) {
	for _, tc := range []struct {
		fixture    string
		f          *fixture
		expression string
		state      string
	}{
		{"defaults", defaults, "rate(15 minutes)", "ENABLED"},
		{"tuned", tuned, "cron(0/5 * * * ? *)", "DISABLED"},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			s := tc.f.get(t)
			id := s.ids()
			check(t, "one rule, on schedule, targeting the replay function", func() {
				s.template.ResourceCountIs(jsii.String("AWS::Events::Rule"), jsii.Number(1))
				s.template.HasResourceProperties(jsii.String("AWS::Events::Rule"), like(obj{
					"ScheduleExpression": tc.expression,
					"State":              tc.state,
					"EventPattern":       assertions.Match_Absent(),
					"Targets":            arr{like(obj{"Arn": getAtt(id.replay, "Arn"), "Input": assertions.Match_Absent()})},
				}))
			})
			check(t, "EventBridge may invoke the replay function, from this rule only", func() {
				s.template.ResourceCountIs(jsii.String("AWS::Lambda::Permission"), jsii.Number(1))
				s.template.HasResourceProperties(jsii.String("AWS::Lambda::Permission"), assertions.Match_ObjectEquals(&obj{
					"Action":       "lambda:InvokeFunction",
					"FunctionName": getAtt(id.replay, "Arn"),
					"Principal":    "events.amazonaws.com",
					"SourceArn":    getAtt(id.schedule, "Arn"),
				}))
			})
		})
	}
}

// TestReplayRunsOverlap: a schedule that starts runs more often than the
// replay function's timeout lets them end is warned about on the schedule,
// with both values and the way forward; runs that cannot overlap are not.
// Overlapping runs are safe (the ledger leases each message to one run),
// so the lane warns rather than refuses: each run applies its own rate.
func TestReplayRunsOverlap(t *testing.T) {
	for _, tc := range []struct {
		name     string
		schedule string
		interval awscdk.Duration
		timeout  awscdk.Duration
		want     []string // substrings of the one warning; none: no warning
	}{
		{"the defaults", "", nil, nil, nil},
		{"every minute, a 10 minute timeout", "rate(1 minute)", nil, nil, []string{
			"the replay schedule rate(1 minute) starts a run every 1m, but Replay.Timeout is 10m",
			"up to 10 times the rate",
			"Set a Replay.Schedule of at least 10m, or a Replay.Timeout of at most 1m",
		}},
		{"every 5 minutes by cron, a 10 minute timeout", "cron(0/5 * * * ? *)", awscdk.Duration_Minutes(jsii.Number(5)), nil, []string{
			"the replay schedule cron(0/5 * * * ? *) starts a run every 5m, but Replay.Timeout is 10m", "up to 2 times the rate",
		}},
		{"a schedule as long as the timeout", "rate(10 minutes)", nil, nil, nil},
		{"every minute, a 30 second timeout", "rate(1 minute)", nil, seconds(30), nil},
		{"a schedule token", "", awscdk.Duration_Minutes(jsii.Number(1)), nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stack := newStack()
			p := baseProps()
			if tc.schedule != "" {
				p.Replay.Schedule = jsii.String(tc.schedule)
			}
			if tc.name == "a schedule token" {
				p.Replay.Schedule = awscdk.NewCfnParameter(stack, jsii.String("Schedule"), &awscdk.CfnParameterProps{Type: jsii.String("String")}).ValueAsString()
			}
			p.Replay.Interval = tc.interval
			p.Replay.Timeout = tc.timeout
			lane := deadletter.NewLane(stack, "Orders", p)
			annotations := assertions.Annotations_FromStack(stack)
			overlap := assertions.Match_StringLikeRegexp(jsii.String("homing-deadletter:ReplayRunsOverlap"))
			all := *annotations.FindWarning(jsii.String("*"), overlap)
			if len(tc.want) == 0 {
				for _, w := range all {
					t.Errorf("warning: %s", mustJSON(w))
				}
				return
			}
			onSchedule := *annotations.FindWarning(jsii.String("/"+*lane.ReplaySchedule().Node().Path()), overlap)
			if len(all) != 1 || len(onSchedule) != 1 {
				t.Fatalf("overlap warnings %s, want one, on the schedule", mustJSON(all))
			}
			if err := containsAll(mustJSON(onSchedule[0]), tc.want...); err != nil {
				t.Errorf("warning %s: %v", mustJSON(onSchedule[0]), err)
			}
		})
	}
}

// TestReplayTuning: every tuning prop becomes its variable, in the format
// the function parses; the route name and the passthrough too.
func TestReplayTuning(t *testing.T) {
	s := tuned.get(t)
	id := s.ids()
	check(t, "replay function", func() {
		s.template.HasResourceProperties(jsii.String("AWS::Lambda::Function"), like(obj{
			"Timeout":                      120,
			"MemorySize":                   512,
			"ReservedConcurrentExecutions": 1,
			"Role":                         getAtt(id.replayRole, "Arn"),
			"LoggingConfig":                like(obj{"SystemLogLevel": "DEBUG"}),
			"Environment": obj{"Variables": assertions.Match_ObjectEquals(&obj{
				"REPLAY_ROUTES":                assertions.Match_AnyValue(),
				"LEDGER_TABLE":                 refTo(id.ledger),
				"IDEMPOTENCY_TABLE":            refTo(id.idempotency),
				"CONSUMER_NAME":                "billing",
				"HEALTH_URL":                   taxURL,
				"POWERTOOLS_SERVICE_NAME":      "Test/Orders",
				"POWERTOOLS_METRICS_NAMESPACE": "Homing",
				"ARCHIVE_BUCKET":               refTo(id.archive),
				"INVALID_QUEUE_URL":            refTo(id.invalid),
				"ARCHIVE_MODE":                 "on-arrival",
				"ARCHIVE_MARGIN":               "72h",
				"MAX_REPLAYS":                  "5",
				"BACKOFF_BASE":                 "1m30s",
				"BACKOFF_MAX":                  "2h",
				"EXPIRY_RESCUE_WINDOW":         "12h30m",
				"RATE":                         "12.5",
				"MAX_PER_RUN":                  "200",
				"CANARY_LIMIT":                 "2",
				"REFILL_THRESHOLD":             "40",
				"WORKERS":                      "8",
				"DEADLINE_MARGIN":              "2.5s",
				"LOG_LEVEL":                    "debug",
			})},
		}))
	})
	if routes := s.routes(t); len(routes) != 1 || routes[0].Name != "billing-orders" {
		t.Errorf("REPLAY_ROUTES = %s, want the route named billing-orders", mustJSON(routes))
	}
	check(t, "the dashboard's replay duration shows the replay timeout", func() {
		body := mustJSON(props(s.resources[s.ofType("AWS::CloudWatch::Dashboard")[0]])["DashboardBody"])
		if !strings.Contains(body, `\"value\":120000`) {
			panic("no annotation at 120000 ms: " + body)
		}
	})
}
