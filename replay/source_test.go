package replay

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines bounds a function of the engine, so that each reads on one
// screen.
const maxFuncLines = 60

// The engine's source keeps its shape: no function is longer than
// maxFuncLines, and only lifecycle.go assigns a message's outcome (every
// other change goes through item.to).
func TestEngineSourceShape(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok {
				if n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1; n > maxFuncLines {
					t.Errorf("%s: %s is %d lines, over %d", name, fn.Name.Name, n, maxFuncLines)
				}
			}
		}
		if name == "lifecycle.go" {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			as, ok := n.(*ast.AssignStmt)
			if !ok {
				return true
			}
			for _, lhs := range as.Lhs {
				if sel, ok := lhs.(*ast.SelectorExpr); ok && sel.Sel.Name == "outcome" {
					t.Errorf("%s: %s assigns an outcome outside the lifecycle (use item.to)", name, fset.Position(as.Pos()))
				}
			}
			return true
		})
	}
}
