package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/homingdlq/homing/internal/settings"
)

// sampleWords are the sample lane's vocabulary (orders, invoiced by a tax
// service, ids ORD-...), which dlq, a tool for any lane, must not speak:
// it speaks of a message, its key, its consumer.
var sampleWords = regexp.MustCompile(`(?i)tax|invoic|order|\bORD-`)

// sampleWordsIn returns the sample's words in s, but for --order, the
// alias of --key, and the flag's name itself.
func sampleWordsIn(s string) []string {
	s = strings.ReplaceAll(s, "--order", "")
	if s == "order" {
		return nil
	}
	return sampleWords.FindAllString(s, -1)
}

// The help of every command speaks of any lane, not of the sample. The
// default route name is settings' (the route's name when nothing names
// it), quoted as it is.
func TestHelpSpeaksOfAnyLane(t *testing.T) {
	f := newFixture(t)
	for _, args := range [][]string{{"--help"}, {"inspect", "--help"}, {"peek", "--help"}, {"replay", "--help"}, {"audit", "--help"}, {"groups", "--help"}, {"groups", "release", "--help"}} {
		r := f.runRaw(args...)
		r.want(t, exitOK)
		for i, line := range strings.Split(r.stdout, "\n") {
			if w := sampleWordsIn(strings.ReplaceAll(line, strconv.Quote(settings.DefaultRouteName), "")); len(w) > 0 {
				t.Errorf("dlq %s, line %d speaks of the sample (%s): %s", strings.Join(args, " "), i+1, strings.Join(w, ", "), line)
			}
		}
	}
	r := f.runRaw("audit", "--help")
	if !strings.Contains(r.stdout, "--order string") || !strings.Contains(r.stdout, "alias of --key") {
		t.Errorf("audit --help does not describe --order as the alias of --key:\n%s", r.stdout)
	}
	if f.connects != 0 {
		t.Fatalf("--help connected to AWS %d time(s)", f.connects)
	}
}

// No string of dlq's code (help, errors, output) speaks of the sample.
func TestNoSampleWordsInStrings(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				t.Fatalf("%s: %v", fset.Position(lit.Pos()), err)
			}
			if w := sampleWordsIn(s); len(w) > 0 {
				t.Errorf("%s: a string speaks of the sample (%s): %s", fset.Position(lit.Pos()), strings.Join(w, ", "), s)
			}
			return true
		})
	}
}
