package emf_test

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/homingdlq/homing/batch"
	"github.com/homingdlq/homing/emf"
	"github.com/homingdlq/homing/internal/settings"
)

// The construct (infra, its own Go module) names the consumer's metrics in
// its alarms and dashboard: each of its names must be the one emf writes,
// as settings declares it, either spelled alike or read from settings.
func TestInfraWatchesTheNamesWritten(t *testing.T) {
	src, err := os.ReadFile("../infra/deadletter/alarms.go")
	if err != nil {
		t.Fatal(err)
	}
	// infra's names are settings' names.
	for name, value := range map[string]string{
		"MetricRecordsProcessed":      settings.MetricRecordsProcessed,
		"MetricRecordsFailed":         settings.MetricRecordsFailed,
		"MetricRecordsInvalid":        settings.MetricRecordsInvalid,
		"MetricDuplicatesAbsorbed":    settings.MetricDuplicatesAbsorbed,
		"MetricCompletionsUnrecorded": settings.MetricCompletionsUnrecorded,
		"MetricInDoubtTakeovers":      settings.MetricInDoubtTakeovers,
		"DimensionLane":               settings.DimensionLane,
		"DimensionReason":             settings.DimensionReason,
		// The replay's (the replay engine writes them through internal/emfline).
		"DimensionRoute":            settings.DimensionRoute,
		"MetricOldestDeadLetterAge": settings.MetricOldestDeadLetterAge,
		"MetricSecondsToExpiry":     settings.MetricSecondsToExpiry,
		"MetricInRescueWindow":      settings.MetricInRescueWindow,
		"MetricRunCompleted":        settings.MetricRunCompleted,
	} {
		first := name[:1] + strings.ToLower(name[:1]) // exported or not
		decl := regexp.MustCompile(`\b[` + first + `]` + name[1:] + `\s*=\s*("` + regexp.QuoteMeta(value) + `"|settings\.` + name + `\b)`)
		if !decl.Match(src) {
			t.Errorf("infra/deadletter/alarms.go does not declare %s = %q (or settings.%s)", name, value, name)
		}
	}
}

// What the recorder writes is what settings declares and docs/CONFIGURATION.md's
// consumer table lists (settings.Consumer's POWERTOOLS_METRICS_NAMESPACE
// row).
func TestTheConsumerTableListsTheNamesWritten(t *testing.T) {
	var doc string
	for _, s := range settings.Consumer {
		if r := s.Row(); r.Env == settings.MetricsNamespace.Env {
			doc = r.Doc
		}
	}
	listed := regexp.MustCompile("`([A-Za-z]+)`").FindAllStringSubmatch(doc, -1)
	var names []string
	for _, m := range listed {
		names = append(names, m[1])
	}
	want := slices.Clone(settings.ConsumerMetrics)
	want = slices.Insert(want, slices.Index(want, settings.MetricRecordsInvalid)+1, settings.DimensionReason) // "(also by `Reason`)"
	want = append(want, settings.MetricRecordsFailed, settings.DimensionErrorClass)                           // "`RecordsFailed` by `ErrorClass`"
	if !slices.Equal(names, want) {
		t.Fatalf("the consumer table lists %v, want %v", names, want)
	}
}

// emf counts outcomes in batch's words without importing batch: every
// constant of type batch.Outcome (read from batch's source, so that a new
// one is not missed) must be classified as batch classifies it,
// acknowledged (Succeeded, Invalid, Parked) or a batch item failure.
func TestOutcomesAreBatchs(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "../batch/batch.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var outcomes []batch.Outcome
	ast.Inspect(f, func(n ast.Node) bool {
		spec, ok := n.(*ast.ValueSpec)
		if !ok || spec.Type == nil || types(spec.Type) != "Outcome" {
			return true
		}
		for _, v := range spec.Values {
			if lit, ok := v.(*ast.BasicLit); ok {
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				outcomes = append(outcomes, batch.Outcome(s))
			}
		}
		return true
	})
	if len(outcomes) < 6 {
		t.Fatalf("found %d outcomes in batch/batch.go: %v", len(outcomes), outcomes)
	}
	for _, o := range outcomes {
		tally := &emf.Tally{}
		tally.Outcome(string(o), "r")
		got := tally.Counts()
		acknowledged := o == batch.Succeeded || o == batch.Invalid || o == batch.Parked
		if got.Processed != 1 || (got.Failed == 0) != acknowledged || (got.InvalidTotal() == 1) != (o == batch.Invalid) {
			t.Errorf("outcome %q counted as %+v", o, got)
		}
	}
}

func types(e ast.Expr) string {
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// emf is dependency-free: it imports the standard library and settings
// only (settings imports nothing else), so that a consumer that is not
// built on batch, or the CDK module, can import it.
func TestImportsOnlyTheStandardLibrary(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("find the go command: %v", err)
	}
	out, err := exec.Command(goBin, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/homingdlq/homing/emf") {
		t.Fatalf("go list found no emf among %v", deps)
	}
	for _, d := range deps {
		if d != "github.com/homingdlq/homing/emf" && d != "github.com/homingdlq/homing/internal/settings" && d != "github.com/homingdlq/homing/internal/emfline" {
			t.Errorf("emf depends on %s", d)
		}
	}
}

// docs/OPERATIONS.md shows a consumer in another runtime the lines to
// write ("Feed the lane's alarms from your consumer"): they must be the
// recorder's, byte for byte, for the invocation the page describes.
func TestOperationsShowsTheLinesWritten(t *testing.T) {
	doc, err := os.ReadFile("../docs/OPERATIONS.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "## Feed the lane's alarms from your consumer")
	if !ok {
		t.Fatal("docs/OPERATIONS.md has no section \"Feed the lane's alarms from your consumer\"")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var shown []string
	for _, l := range strings.Split(section, "\n") {
		if strings.HasPrefix(l, `{"_aws"`) {
			shown = append(shown, l+"\n")
		}
	}
	var out bytes.Buffer
	rec := emf.NewRecorder(&out, emf.Config{Namespace: settings.MetricsNamespace.Default, Lane: "Homing/Payments"})
	rec.Now = func() time.Time { return at }
	// "10 records, 2 failed, 1 invalid (malformed-json) and 3 duplicates"
	if err := rec.Write(emf.Counts{Processed: 10, Failed: 2, Invalid: map[string]int{"malformed-json": 1}, Duplicates: 3}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(shown, ""); got != out.String() {
		t.Fatalf("the page shows\n%s\nthe recorder writes\n%s", got, out.String())
	}
}
