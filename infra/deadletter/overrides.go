package deadletter

import (
	"fmt"
	"reflect"
	"slices"
)

// Pass-through overrides, in the style of aws-solutions-constructs
// (queueProps, deadLetterQueueProps, lambdaFunctionProps,
// sqsEventSourceProps): [QueuesProps].QueueProps, DeadLetterQueueProps,
// InvalidQueueProps and ParkingQueueProps, [ConsumerProps].FunctionProps
// and EventSourceProps, and [ReplayProps].FunctionProps are the CDK props
// the lane builds one of its own resources from. Which wins:
//
//  1. the lane's own settings win over the override: a field the lane sets
//     itself (a queue's retention, redrive and encryption; a function's
//     code, role, log group, timeout and environment; the event source's
//     batch size and batch item failures) may not be set in an override.
//     Validate refuses it, naming the field and what sets it instead;
//  2. the override wins over the lane's defaults (a function's Description
//     and ApplicationLogLevelV2);
//  3. every other field is passed to the CDK as the override gives it.
//
// An override configures a resource the lane creates: beside an adopted
// one (Queues.SourceQueue, Queues.DeadLetterQueue, Consumer.Function) it
// is refused, since the team configures its own resource itself.

// overrideRule is what the lane does with one override's fields: the
// fields it owns, each with what sets it instead (rule 1), and the fields
// it only defaults (rule 2).
type overrideRule struct {
	owns     []ownedField
	defaults []string
}

// ownedField is a field of an override that the lane sets itself; use says
// what sets it instead, or why nothing may.
type ownedField struct{ field, use string }

// refused reports the owned fields that override (a pointer to the CDK
// props struct, nil when unset) sets, each named as prop.field.
func (rule overrideRule) refused(prop string, override any) []error {
	v := reflect.ValueOf(override)
	if v.IsNil() {
		return nil
	}
	v = v.Elem()
	var errs []error
	for _, o := range rule.owns {
		if !field(v, o.field).IsZero() {
			errs = append(errs, fmt.Errorf("%s.%s is set, but the lane sets it: %s", prop, o.field, o.use))
		}
	}
	return errs
}

// overlay returns the props a resource is built from: a copy of override
// (the team's props stay as they are) with the fields own sets on top, a
// default field only where override leaves it unset. own may set only the
// fields rule names; any other is a bug of the lane, and overlay panics.
func overlay[T any](rule overrideRule, override *T, own T) *T {
	merged := own
	if override != nil {
		merged = *override
	}
	mv, ov := reflect.ValueOf(&merged).Elem(), reflect.ValueOf(own)
	ruled := map[string]bool{}
	for _, o := range rule.owns {
		ruled[o.field] = true
	}
	for _, d := range rule.defaults {
		if f := field(mv, d); f.IsZero() {
			f.Set(field(ov, d))
		}
		ruled[d] = true
	}
	for i := range ov.NumField() {
		name := ov.Type().Field(i).Name
		switch f := ov.Field(i); {
		case f.IsZero():
		case !ruled[name]:
			panic(fmt.Sprintf("deadletter: the lane sets %s.%s, which its override rule does not name", ov.Type().Name(), name))
		case !slices.Contains(rule.defaults, name):
			mv.Field(i).Set(f)
		}
	}
	return &merged
}

// field is v's field name; a name the struct does not have is a bug of the
// lane's rules, and field panics.
func field(v reflect.Value, name string) reflect.Value {
	f := v.FieldByName(name)
	if !f.IsValid() {
		panic(fmt.Sprintf("deadletter: %s has no field %s", v.Type().Name(), name))
	}
	return f
}
