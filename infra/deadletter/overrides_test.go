package deadletter

import (
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
)

// Every field an override rule names is a field of the CDK props it rules,
// named once, and a default is not also owned.
func TestOverrideRulesNameTheirFields(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rule  overrideRule
		props any
	}{
		{"source queue", queueRule(queueSource), awssqs.QueueProps{}},
		{"DLQ", queueRule(queueDeadLetter), awssqs.QueueProps{}},
		{"invalid and parking queues", queueRule(queueLastResort), awssqs.QueueProps{}},
		{"consumer function", functionRule("Consumer"), awslambda.FunctionProps{}},
		{"replay function", functionRule("Replay"), awslambda.FunctionProps{}},
		{"event source", eventSourceRule, awslambdaeventsources.SqsEventSourceProps{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			typ := reflect.TypeOf(tc.props)
			seen := map[string]bool{}
			names := append([]string{}, tc.rule.defaults...)
			for _, o := range tc.rule.owns {
				names = append(names, o.field)
				if strings.TrimSpace(o.use) == "" {
					t.Errorf("%s is owned without saying what sets it", o.field)
				}
			}
			for _, name := range names {
				if _, ok := typ.FieldByName(name); !ok {
					t.Errorf("%s has no field %s", typ.Name(), name)
				}
				if seen[name] {
					t.Errorf("%s is named twice", name)
				}
				seen[name] = true
			}
		})
	}
}

// testProps stands for a CDK props struct in TestOverlay.
type testProps struct {
	Owned, Default, Free *string
}

func TestOverlay(t *testing.T) {
	s := func(v string) *string { return &v }
	rule := overrideRule{owns: []ownedField{{"Owned", "set X"}}, defaults: []string{"Default"}}
	own := testProps{Owned: s("lane"), Default: s("lane default")}
	for _, tc := range []struct {
		name     string
		override *testProps
		want     testProps
	}{
		{"no override: the lane's props", nil, testProps{Owned: s("lane"), Default: s("lane default")}},
		{"a free field passes through", &testProps{Free: s("team")}, testProps{Owned: s("lane"), Default: s("lane default"), Free: s("team")}},
		{"the override wins over a default", &testProps{Default: s("team")}, testProps{Owned: s("lane"), Default: s("team")}},
		{"the lane wins over the override", &testProps{Owned: s("team")}, testProps{Owned: s("lane"), Default: s("lane default")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before testProps
			if tc.override != nil {
				before = *tc.override
			}
			got := overlay(rule, tc.override, own)
			if !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("overlay = %s, want %s", show(*got), show(tc.want))
			}
			if tc.override != nil && !reflect.DeepEqual(*tc.override, before) {
				t.Errorf("overlay changed the override to %s", show(*tc.override))
			}
		})
	}
	t.Run("refused: the owned field, with what sets it", func(t *testing.T) {
		errs := rule.refused("Group.Props", &testProps{Owned: s("team"), Default: s("team"), Free: s("team")})
		if len(errs) != 1 || errs[0].Error() != "Group.Props.Owned is set, but the lane sets it: set X" {
			t.Errorf("refused = %v, want the one owned field", errs)
		}
		if errs := rule.refused("Group.Props", (*testProps)(nil)); errs != nil {
			t.Errorf("refused(nil) = %v", errs)
		}
	})
	t.Run("the lane setting a field its rule does not name is a bug", func(t *testing.T) {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(r.(string), "testProps.Free") {
				t.Errorf("recovered %v, want a panic naming testProps.Free", r)
			}
		}()
		overlay(rule, nil, testProps{Free: s("lane")})
	})
}

func show(p testProps) string {
	v := func(s *string) string {
		if s == nil {
			return "nil"
		}
		return *s
	}
	return "{Owned:" + v(p.Owned) + " Default:" + v(p.Default) + " Free:" + v(p.Free) + "}"
}
