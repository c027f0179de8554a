package publicapi

import (
	"go/ast"
	"testing"
)

// maxRunMethods bounds the replay engine's core: the methods of *run, the
// state of one run that its passes share (issue 31: 64 when counted first).
// The pass's phases are the worker's methods and each gate is a value of
// its own: a new gate is a new file, not a method of the run.
const maxRunMethods = 25

// TestRunMethods prints how many methods *run has and fails above
// maxRunMethods.
func TestRunMethods(t *testing.T) {
	n := 0
	for _, f := range parseDir(t, "../../../replay", false, 0) {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil {
				continue
			}
			if star, ok := fn.Recv.List[0].Type.(*ast.StarExpr); ok {
				if id, ok := star.X.(*ast.Ident); ok && id.Name == "run" {
					n++
				}
			}
		}
	}
	t.Logf("*run has %d methods (at most %d)", n, maxRunMethods)
	if n == 0 || n > maxRunMethods {
		t.Fatalf("*run has %d methods, want 1 to %d: move a phase to the worker or a gate to a file of its own", n, maxRunMethods)
	}
}
