package ledgertest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/homingdlq/homing/examples/ledger"
)

// Every exported test function of the package is in Tests, once: a test
// left out of the table would never run.
func TestTestsListsEveryTestFunction(t *testing.T) {
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
			if ok && fn.Recv == nil && fn.Name.IsExported() && strings.HasPrefix(fn.Name.Name, "Test") && len(fn.Type.Params.List) == 2 {
				declared = append(declared, fn.Name.Name)
			}
		}
	}
	var listed []string
	for _, test := range Tests() {
		listed = append(listed, testName(test))
	}
	slices.Sort(declared)
	slices.Sort(listed)
	if !slices.Equal(listed, declared) || len(slices.Compact(slices.Clone(listed))) != len(listed) {
		t.Fatalf("Tests lists %v, the package declares %v", listed, declared)
	}
}

// The tests use accounts and payments of their own: they pass on one
// ledger shared by all.
func TestRunSharesOneLedger(t *testing.T) {
	shared := &ledger.Memory{}
	Run(t, Harness{NewLedger: func(*testing.T) ledger.Ledger { return shared }, Features: Features{ConcurrentTransactions: true}})
}

// A test that needs a feature the harness does not declare skips, naming
// the feature, before it touches the ledger.
func TestUndeclaredFeatureSkips(t *testing.T) {
	var skipped bool
	t.Run("without ConcurrentTransactions", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		TestConcurrentAppendsNeverSkipOrRepeat(t, Harness{NewLedger: func(*testing.T) ledger.Ledger {
			t.Error("the ledger was made: the test ran without its feature")
			return &ledger.Memory{}
		}})
	})
	if !skipped {
		t.Fatal("TestConcurrentAppendsNeverSkipOrRepeat did not skip without ConcurrentTransactions")
	}
}
