// Package suite runs homing's contract suites (replaytest's and
// idempotencytest's) in the style of watermill's tests.TestPubSub: each rule
// is a test function of its own, testX(t *testing.T, h Harness), listed in
// its package's table and run as a subtest named TestX, and a
// rule that needs a feature the harness does not declare skips, naming it.
package suite

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// Run runs each test against h as a subtest named after its function
// (testSeenIsWrittenOnce runs as <parent>/TestSeenIsWrittenOnce).
func Run[H any, F ~func(*testing.T, H)](t *testing.T, h H, tests []F) {
	t.Helper()
	for _, test := range tests {
		t.Run(Name(test), func(t *testing.T) { test(t, h) })
	}
}

// Name is the subtest name of a test's function: testSeenIsWrittenOnce
// runs as TestSeenIsWrittenOnce.
func Name[F any](test F) string {
	name := runtime.FuncForPC(reflect.ValueOf(test).Pointer()).Name()
	return "T" + strings.TrimPrefix(name[strings.LastIndex(name, ".")+1:], "t")
}

// Needs skips t unless the harness declares the feature named (the field
// of its Features).
func Needs(t *testing.T, declared bool, feature string) {
	t.Helper()
	if !declared {
		t.Skipf("needs Features.%s, which the harness does not declare", feature)
	}
}

// CheckTable fails t unless table lists, once each, the test functions
// (testX) whose second parameter is harness among the non-test files of
// the package in the current directory: a rule left out of its table would
// never run.
func CheckTable[F any](t *testing.T, harness string, table []F) {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "test") || len(fn.Type.Params.List) != 2 {
				continue
			}
			if h, ok := fn.Type.Params.List[1].Type.(*ast.Ident); ok && h.Name == harness {
				declared = append(declared, "T"+fn.Name.Name[1:])
			}
		}
	}
	listed := make([]string, 0, len(table))
	for _, test := range table {
		listed = append(listed, Name(test))
	}
	slices.Sort(declared)
	slices.Sort(listed)
	if len(slices.Compact(slices.Clone(listed))) != len(listed) {
		t.Errorf("the table of %s lists a test twice: %v", harness, listed)
	}
	if !slices.Equal(listed, declared) {
		t.Errorf("the table of %s lists %v, the package declares %v", harness, listed, declared)
	}
}

// Key is t's own business key (its name), or a second one of t's when
// other is not empty: a contract's tests share one store without meeting.
func Key(t *testing.T, other string) string {
	if other == "" {
		return t.Name()
	}
	return t.Name() + "/" + other
}
