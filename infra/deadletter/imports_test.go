package deadletter_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportsAnOutsiderCanReach: another team's CDK app `go get`s this
// package, so it imports only what that app can import: the CDK, cdk-nag,
// jsii and, of homing, internal/settings (every setting declared once; Go
// allows the import, the construct's path being under homing's) and
// payload (so that synth compiles a lane's key and hash expressions as the
// replay does); no other internal package, nothing that brings Lambda or
// the AWS SDK into a CDK app.
func TestImportsAnOutsiderCanReach(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			homing := strings.HasPrefix(path, "github.com/homingdlq/")
			allowed := path == "github.com/homingdlq/homing/internal/settings" || path == "github.com/homingdlq/homing/payload"
			if !allowed && (homing || strings.Contains(path, "/internal")) {
				t.Errorf("%s imports %s, which an outside module cannot (or need not) import", name, path)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no source file checked")
	}
}
