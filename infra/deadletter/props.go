package deadletter

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"

	"github.com/homingdlq/homing/internal/settings"
)

// DefaultCodeDir holds one directory per function with its bootstrap
// binary, as `make build` writes them, relative to infra/.
const DefaultCodeDir = "../bin"

// ErrInvalidProps is wrapped by every error that [LaneProps.Validate] returns,
// and so by the value [NewLane] panics with.
var ErrInvalidProps = errors.New("invalid deadletter.LaneProps")

// LaneProps configures one [Lane]: the lane-wide fields, and one group per
// part of the lane ([QueuesProps], [ConsumerProps], [AlarmProps],
// [ReplayProps]). Every field is optional but Consumer.Records; a nil (or
// zero) field takes the default its comment names. Numbers are *float64 and
// durations awscdk.Duration, so an explicit 0 is refused where invalid.
// Overrides: infra/README.md#overrides-of-the-cdk-props.
type LaneProps struct {
	// Name is the lane's name: the value of its settings.TagLane tag, the
	// prefix of its stack outputs (settings.OutputID(Name, key)), the
	// default of Consumer.Name and Replay.RouteName, what `dlq --lane` takes.
	// Two lanes of one stack need different names. Default the construct id
	// in kebab case ("Orders" -> "orders", "PaymentsLedger" ->
	// "payments-ledger"); 1..64 ASCII letters, digits, '-' and '_',
	// starting with a letter.
	Name *string
	// Fifo makes all four queues FIFO queues (names end in .fifo) with
	// content-based deduplication off: producers set MessageDeduplicationId.
	// Default false (standard queues), or the type of Queues.SourceQueue.
	Fifo *bool
	// CodeDir is the directory holding one sub-directory per function with
	// its `bootstrap` binary (`make build` writes bin/<function>/bootstrap).
	// When set, the replay function's code is CodeDir/replay (functions/replay
	// of github.com/homingdlq/homing; see ReplayProps.CodeDir for what the
	// lane does without it), the consumer's CodeDir/consumer unless
	// Consumer.CodeDir or Consumer.Function says otherwise. A relative path
	// is resolved against the working directory of the CDK app. Default
	// "../bin" for the consumer's code only: unset, the replay function is
	// built from the version the app requires.
	CodeDir *string
	// Architecture of the functions; it must match the bootstrap build
	// (ARCH=arm64 for AWS). Default ARM_64.
	Architecture awslambda.Architecture
	// LogRetention of the functions' log groups. Default one month.
	LogRetention awslogs.RetentionDays
	// RemovalPolicy of everything that holds data or history: the queues,
	// the tables, the log groups and the alarm topic's key. Default
	// RETAIN_ON_UPDATE_OR_DELETE (CloudFormation's RetainExceptOnCreate):
	// kept when the stack is deleted or an update removes or replaces them,
	// but deleted by the rollback of the deploy that created them, so that
	// a failed first deploy leaves nothing behind (the source queue's name
	// above all) and can be retried. RETAIN keeps them on that rollback
	// too; a throw-away emulator stack uses DESTROY.
	RemovalPolicy awscdk.RemovalPolicy
	// DeletionProtection of the lane's tables. Default true with RemovalPolicy
	// RETAIN, false otherwise: a throw-away stack (DESTROY) must be
	// deletable, and the rollback of a failed first deploy
	// (RETAIN_ON_UPDATE_OR_DELETE, the default) must be able to delete the
	// tables it created (DynamoDB refuses to delete a protected table, and
	// CloudFormation's rollback would stop there). Turn it on once the
	// first deploy has succeeded; the stack of this repository does that
	// with its TableDeletionProtection deploy parameter.
	DeletionProtection *bool
	// SystemLogLevel of both functions' platform logs (JSON). Default INFO,
	// which keeps the START and REPORT lines (duration, billed duration, max
	// memory, init duration); WARN drops them.
	SystemLogLevel awslambda.SystemLogLevel
	// ServiceName is both functions' POWERTOOLS_SERVICE_NAME, the Lane
	// dimension of their EMF metrics, which the alarms and the dashboard
	// read. Default the lane's construct path (for the stack's lane,
	// "Homing/Orders"): unique in the app, so the metrics of two lanes
	// never merge. 1..1024 printable ASCII characters.
	ServiceName *string
	// MetricsNamespace is both functions' POWERTOOLS_METRICS_NAMESPACE.
	// Default settings.MetricsNamespace.Default ("Homing"); CloudWatch's
	// namespace rules, not AWS/.
	MetricsNamespace *string

	// Queues configures the source queue, the DLQ, the invalid and the
	// parking queue, or adopts the team's source queue and DLQ.
	Queues QueuesProps
	// Consumer configures the consumer the lane builds, or takes the
	// team's, and the event source mapping that feeds it.
	Consumer ConsumerProps
	// Alarms configures the alarms and their topic.
	Alarms AlarmProps
	// Replay configures the replay function and its schedule.
	Replay ReplayProps
	// Archive configures the archive of the parking and invalid queues.
	Archive ArchiveProps
}

// resolved is LaneProps with every default applied and every duration in
// seconds, as Validate checks it and NewLane builds from it.
type resolved struct {
	name               string
	codeDir            string
	codeDirSet         bool
	architecture       awslambda.Architecture
	logRetention       awslogs.RetentionDays
	removalPolicy      awscdk.RemovalPolicy
	deletionProtection bool
	systemLogLevel     awslambda.SystemLogLevel
	serviceName        *string // nil: the lane's construct path
	namespace          string

	queues   queuesResolved
	consumer consumerResolved
	alarms   alarmsResolved
	replay   replayResolved
	archive  archiveResolved
}

// resolve applies the defaults; id is the lane's construct id, the source
// of the default Name. The groups resolve in the order of what they take
// from each other: the consumer (its timeout), the queues (the visibility
// timeout from the consumer's), the consumer's group order (from the
// queues' type, and on a lane that keeps it the backstop's receive
// count), the alarms (the source age from both).
func (p *LaneProps) resolve(id string) resolved {
	r := resolved{
		name:           kebab(id),
		codeDir:        DefaultCodeDir,
		architecture:   p.Architecture,
		logRetention:   p.LogRetention,
		removalPolicy:  p.RemovalPolicy,
		systemLogLevel: p.SystemLogLevel,
		serviceName:    p.ServiceName,
		namespace:      settings.MetricsNamespace.Default,
	}
	if p.Name != nil {
		r.name = *p.Name
	}
	if p.CodeDir != nil {
		r.codeDir = *p.CodeDir
		r.codeDirSet = true
	}
	if r.architecture == nil {
		r.architecture = awslambda.Architecture_ARM_64()
	}
	if r.logRetention == "" {
		r.logRetention = awslogs.RetentionDays_ONE_MONTH
	}
	if r.removalPolicy == "" {
		r.removalPolicy = awscdk.RemovalPolicy_RETAIN_ON_UPDATE_OR_DELETE
	}
	r.deletionProtection = r.removalPolicy == awscdk.RemovalPolicy_RETAIN
	if p.DeletionProtection != nil {
		r.deletionProtection = *p.DeletionProtection
	}
	if r.systemLogLevel == "" {
		r.systemLogLevel = awslambda.SystemLogLevel_INFO
	}
	if p.MetricsNamespace != nil {
		r.namespace = *p.MetricsNamespace
	}
	r.consumer = p.Consumer.resolve(r.name, r.codeDir)
	r.queues = p.Queues.resolve(p.Fifo, r.consumer)
	r.consumer.groupOrder = groupOrder(r.consumer.groupOrderProp, r.queues.fifo)
	if r.consumer.groupOrder != "" && p.Queues.MaxReceiveCount == nil {
		// The redrive is the backstop (an adopted queue's own count too).
		r.queues.maxReceiveCount = defaultGroupMaxReceiveCount
	}
	r.alarms = p.Alarms.resolve(r.queues.visibility, r.consumer.timeout)
	r.replay = p.Replay.resolve(r.name)
	r.archive = p.Archive.resolve()
	return r
}

// Validate reports every invalid field at once, by its path, its value and
// the accepted range (durations as 15d, 4h, 90s); the error wraps
// [ErrInvalidProps]. [NewLane] also checks the default Name, that
// Consumer.Function, Queues.SourceQueue and Alarms.Topic can be wired from
// the lane's stack, and that the bootstraps exist. It panics on a duration
// that is an unresolved token.
func (p *LaneProps) Validate() error {
	if p == nil {
		p = &LaneProps{}
	}
	return joinInvalid(p.resolve("lane").validate())
}

// joinInvalid wraps the problems in [ErrInvalidProps], or returns nil.
func joinInvalid(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalidProps, errors.Join(errs...))
}

// validate reports the invalid lane-wide props, then each group's.
func (r resolved) validate() []error {
	c := checker{}
	if !validName(r.name) {
		c.bad("Name is %q, want 1..64 ASCII letters, digits, '-' and '_', starting with a letter", r.name)
	}
	if strings.TrimSpace(r.codeDir) == "" {
		c.bad("CodeDir is empty")
	}
	// The names follow CloudWatch's rules, as the functions check them
	// (internal/metrics.Config.Validate).
	ns := r.namespace
	if strings.TrimSpace(ns) == "" || len(ns) > 255 || strings.HasPrefix(ns, "AWS/") ||
		strings.IndexFunc(ns, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(".-_/#: ", r))
		}) >= 0 {
		c.bad("MetricsNamespace is %q, want 1..255 ASCII letters, digits, spaces and . - _ / # :, not blank, not AWS/...", ns)
	}
	if r.serviceName != nil {
		name := *r.serviceName
		if strings.TrimSpace(name) == "" || len(name) > 1024 || strings.IndexFunc(name, func(r rune) bool { return r < 0x20 || r > 0x7e }) >= 0 {
			c.bad("ServiceName is %q, want 1..1024 printable ASCII characters, not blank", name)
		}
	}
	errs := c.errs
	errs = append(errs, r.queues.validate(r.consumer.timeout)...)
	errs = append(errs, r.consumer.validate(r.queues.fifo)...)
	errs = append(errs, r.validateGroups()...)
	errs = append(errs, r.alarms.validate()...)
	errs = append(errs, r.replay.validate(r.queues.deadLetterRetention)...)
	errs = append(errs, r.archive.validate()...)
	return errs
}

// checker collects the problems of one group of props, each error naming
// its field under the group's prefix ("Replay." + "Timeout is ...").
type checker struct {
	prefix string
	errs   []error
}

func (c *checker) bad(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf(c.prefix+format, args...))
}

// whole checks that v is a whole number in lo..hi.
func (c *checker) whole(name string, v, lo, hi float64) {
	if v != math.Trunc(v) || v < lo || v > hi {
		c.bad("%s is %v, want a whole number in %v..%v", name, v, lo, hi)
	}
}

// memory checks a function's memory size in MB.
func (c *checker) memory(name string, mb float64) {
	if mb < 128 || mb > 10240 || mb != math.Trunc(mb) {
		c.bad("%s is %v, want a whole number of MB in 128..10240", name, mb)
	}
}

// validName reports whether name is a lane name: 1..64 ASCII letters,
// digits, '-' and '_', starting with a letter.
func validName(name string) bool {
	if len(name) == 0 || len(name) > 64 || !(name[0] >= 'a' && name[0] <= 'z' || name[0] >= 'A' && name[0] <= 'Z') {
		return false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// kebab is the default lane name of a construct id: "Orders" -> "orders",
// "PaymentsLedger" -> "payments-ledger", "EU_Orders" -> "eu-orders".
func kebab(id string) string {
	var b strings.Builder
	prevLower := false
	for _, r := range id {
		switch {
		case r >= 'A' && r <= 'Z':
			if prevLower {
				b.WriteByte('-')
			}
			b.WriteRune(r + 'a' - 'A')
			prevLower = false
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
			prevLower = true
		default:
			if b.Len() > 0 && !strings.HasSuffix(b.String(), "-") {
				b.WriteByte('-')
			}
			prevLower = false
		}
	}
	return strings.Trim(b.String(), "-")
}

// seconds converts d to seconds, or returns def when d is nil. A duration
// that is an unresolved token panics, as the CDK does.
func seconds(d awscdk.Duration, def float64) float64 {
	if d == nil {
		return def
	}
	return *d.ToMilliseconds(nil) / 1000
}

// optionalSeconds is d in seconds, nil when d is.
func optionalSeconds(d awscdk.Duration) *float64 {
	if d == nil {
		return nil
	}
	s := seconds(d, 0)
	return &s
}

// number is *n, or def when n is nil.
func number(n *float64, def float64) float64 {
	if n == nil {
		return def
	}
	return *n
}

// setProps are the names of the props that are set, in the order given.
func setProps(fields ...namedSet) []string {
	var names []string
	for _, f := range fields {
		if f.set {
			names = append(names, f.name)
		}
	}
	return names
}

// namedSet is one prop of setProps: its name and whether it is set.
type namedSet struct {
	name string
	set  bool
}

// bootstrapDir is the absolute path of dir, a directory holding a
// bootstrap; the error says when the bootstrap is missing.
func bootstrapDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("resolve code directory %s: %w", dir, err)
	}
	if _, err := os.Stat(filepath.Join(abs, "bootstrap")); err != nil {
		return "", fmt.Errorf("%w in %s: %w", errNoBootstrap, abs, err)
	}
	return abs, nil
}
