package deadletter

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"

	"github.com/homingdlq/homing/internal/settings"
)

// Every replay tuning field sets a variable the replay function declares
// (settings.Replay), and infra/README.md's row of them names each variable
// and its function default, in the fields' order, as settings declares
// them: the README cannot share code with the declarations, so this pins it.
func TestReplayTuningIsTheFunctionsSettings(t *testing.T) {
	declared := map[string]string{} // variable -> its default as the table writes it
	for _, s := range settings.Replay {
		r := s.Row()
		declared[r.Env] = strings.Trim(r.Default, "`")
	}
	var vars, defaults, fields []string
	for _, tu := range (&ReplayProps{}).resolve("orders").tuning.list() {
		def, ok := declared[tu.key]
		if !ok {
			t.Errorf("ReplayProps.%s sets %s, which the replay function does not declare", tu.field, tu.key)
		}
		vars = append(vars, "`"+tu.key+"`")
		defaults = append(defaults, def)
		fields = append(fields, tu.field)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	row := "| " + strings.Join(vars, ", ") + " | set only when the matching `ReplayProps` field (`" + fields[0] + "`, `" + fields[1] +
		"`, …) is set; otherwise the function's default applies (" + strings.Join(defaults, ", ") + ") |"
	if !strings.Contains(string(readme), row) {
		t.Errorf("infra/README.md does not have the row of the replay tuning as settings declares it:\n%s", row)
	}
}

// The doc comment of every tuning field of ReplayProps names its variable
// and the function's default as settings declares them.
func TestReplayTuningDocsStateTheDefaults(t *testing.T) {
	docs := fieldDocs(t, "replayprops.go", "ReplayProps")
	declared := map[string]string{}
	for _, s := range settings.Replay {
		r := s.Row()
		declared[r.Env] = strings.Trim(r.Default, "`")
	}
	for _, tu := range (&ReplayProps{}).resolve("orders").tuning.list() {
		doc := docs[tu.field]
		for _, want := range []string{"(" + tu.key + ")", "Function default " + declared[tu.key] + ";"} {
			if !strings.Contains(doc, want) {
				t.Errorf("the doc of ReplayProps.%s does not say %q:\n%s", tu.field, want, doc)
			}
		}
	}
}

// fieldDocs returns the doc comments of the fields of struct typ in file,
// each on one line.
func fieldDocs(t *testing.T, file, typ string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || ts.Name.Name != typ {
			return true
		}
		for _, field := range ts.Type.(*ast.StructType).Fields.List {
			for _, name := range field.Names {
				docs[name.Name] = strings.Join(strings.Fields(field.Doc.Text()), " ")
			}
		}
		return false
	})
	if len(docs) == 0 {
		t.Fatalf("no struct %s in %s", typ, file)
	}
	return docs
}
