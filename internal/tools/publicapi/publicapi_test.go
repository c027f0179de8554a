package publicapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/homingdlq/homing"

// known are public packages the derivation must find: a guard that found
// no package would pass vacuously.
var known = []string{
	"batch", "invalid", "idempotency", "idempotency/idempotencytest", "dynamo",
	"payload", "replay", "replay/replaytest",
}

// sample is the sample domain (the order-to-invoice lane, its tax client,
// the stand-in, the consumer's wiring) and tools are the project's own
// tooling (the simulation, the drills, the emulator helpers): both live
// under one folder each, so that a rule names a path, not a list.
var (
	sample = module + "/internal/sample"
	tools  = module + "/internal/tools"
)

const lambda = "github.com/aws/aws-lambda-go"

// laneMains are the mains that ship to every lane, whatever its domain: the
// replay function the construct deploys for each lane, and the operator
// CLI. They are held to the sample rule as the public packages are.
var laneMains = []string{"functions/replay", "cmd/dlq"}

// laneMain reports whether pkg is one of laneMains.
func laneMain(pkg string) bool {
	return slices.ContainsFunc(laneMains, func(m string) bool { return pkg == module+"/"+m })
}

// rule forbids the packages under deny (a path or one below it) to the
// public packages it applies to, and to the mains mains selects; tests
// says whether the packages' tests and Examples are held to it too.
type rule struct {
	why     string
	applies func(pkg string) bool
	mains   func(pkg string) bool // nil: no main
	deny    []string
	tests   bool
}

var rules = []rule{
	{
		why:     "a public package must not depend on the sample domain",
		applies: func(string) bool { return true },
		deny:    []string{sample},
		tests:   true,
	},
	{
		why:     "a public package must not depend on the project's tooling",
		applies: func(string) bool { return true },
		deny:    []string{tools},
	},
	{
		why:     "a main that ships to every lane must not depend on the sample domain: it takes the lane's key, payload hash and consumer from the lane's configuration",
		applies: func(string) bool { return false },
		mains:   laneMain,
		deny:    []string{sample},
		tests:   true,
	},
	{
		why:     "the replay engine and the invalid codec must not depend on Lambda",
		applies: func(pkg string) bool { return pkg == module+"/replay" || pkg == module+"/invalid" },
		deny:    []string{lambda},
	},
}

// under reports whether dep is path or a package below it.
func under(dep, path string) bool {
	return dep == path || strings.HasPrefix(dep, path+"/")
}

// violations returns the dependencies of pkg that r forbids.
func (r rule) violations(deps []string) []string {
	var out []string
	for _, d := range deps {
		if slices.ContainsFunc(r.deny, func(p string) bool { return under(d, p) }) {
			out = append(out, d)
		}
	}
	return out
}

// listed is what `go list -json` says of one package.
type listed struct {
	ImportPath string
	Name       string
	ForTest    string
	Deps       []string
	Error      *struct{ Err string }
}

// public reports whether p is one of the module's public packages: outside
// internal/ and not a main.
func public(p listed) bool {
	rel, ok := strings.CutPrefix(p.ImportPath, module+"/")
	return ok && p.Name != "main" && p.ForTest == "" &&
		!strings.HasPrefix(rel, "internal/") && !strings.Contains(rel, "/internal/")
}

// goList lists every package of the module with its tests, from the module
// root.
func goList(t *testing.T) map[string]listed {
	t.Helper()
	touchSources(t, "../../..")
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("find the go command: %v", err)
	}
	cmd := exec.Command(goBin, "list", "-test", "-e", "-json=ImportPath,Name,ForTest,Deps,Error", "./...")
	cmd.Dir = "../../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	pkgs := map[string]listed{}
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list's output: %v", err)
		}
		if p.Error != nil {
			t.Fatalf("go list %s: %s", p.ImportPath, p.Error.Err)
		}
		pkgs[p.ImportPath] = p
	}
	return pkgs
}

// touchSources stats every Go file and go.mod of the module under root. `go
// test` caches a result on the files the test itself consulted, and cannot
// see what the go list it starts reads: without this, a forbidden import
// added to a public package would find the earlier pass in the cache.
func touchSources(t *testing.T, root string) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && path != root:
			name := d.Name()
			if strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // another module (infra, examples)
			}
		case strings.HasSuffix(path, ".go") || d.Name() == "go.mod" || d.Name() == "go.sum":
			if _, err := os.Stat(path); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("read the module's sources: %v", err)
	}
}

func TestPublicPackagesKeepTheirBoundary(t *testing.T) {
	pkgs := goList(t)
	var found []string
	for _, p := range pkgs {
		if !public(p) {
			continue
		}
		found = append(found, strings.TrimPrefix(p.ImportPath, module+"/"))
		for _, r := range rules {
			if !r.applies(p.ImportPath) {
				continue
			}
			if bad := r.violations(p.Deps); len(bad) > 0 {
				t.Errorf("%s: %s; it depends on %s", p.ImportPath, r.why, strings.Join(bad, ", "))
			}
			// The test binary's dependencies are the package's, its
			// tests' and its Examples'.
			if tb, ok := pkgs[p.ImportPath+".test"]; ok && r.tests {
				if bad := r.violations(tb.Deps); len(bad) > 0 {
					t.Errorf("%s (tests and Examples): %s; they depend on %s", p.ImportPath, r.why, strings.Join(bad, ", "))
				}
			}
		}
	}
	for _, k := range known {
		if !slices.Contains(found, k) {
			t.Errorf("public package %s not found among %v", k, found)
		}
	}
}

func TestLaneMainsKeepTheirBoundary(t *testing.T) {
	pkgs := goList(t)
	var found []string
	for _, p := range pkgs {
		if p.Name != "main" || p.ForTest != "" {
			continue
		}
		for _, r := range rules {
			if r.mains == nil || !r.mains(p.ImportPath) {
				continue
			}
			found = append(found, strings.TrimPrefix(p.ImportPath, module+"/"))
			if bad := r.violations(p.Deps); len(bad) > 0 {
				t.Errorf("%s: %s; it depends on %s", p.ImportPath, r.why, strings.Join(bad, ", "))
			}
			if tb, ok := pkgs[p.ImportPath+".test"]; ok && r.tests {
				if bad := r.violations(tb.Deps); len(bad) > 0 {
					t.Errorf("%s (tests): %s; they depend on %s", p.ImportPath, r.why, strings.Join(bad, ", "))
				}
			}
		}
	}
	// A guard that found no main would pass vacuously.
	for _, m := range laneMains {
		if !slices.Contains(found, m) {
			t.Errorf("main %s not found among %v", m, found)
		}
	}
}

func TestTheSampleRuleHoldsTheLaneMains(t *testing.T) {
	i := slices.IndexFunc(rules, func(r rule) bool { return r.mains != nil })
	if i < 0 {
		t.Fatal("no rule holds a main")
	}
	r := rules[i]
	for _, m := range laneMains {
		if !r.mains(module + "/" + m) {
			t.Errorf("the rule does not apply to %s", m)
		}
	}
	for _, other := range []string{"functions/consumer", "cmd/demo", "cmd/soak", "functions/replayx", "cmd/dlq/sub"} {
		if r.mains(module + "/" + other) {
			t.Errorf("the rule applies to %s, which may use the sample", other)
		}
	}
	// What the replay function imported before issue 16: refused.
	deps := []string{module + "/replay", module + "/internal/sample/invoicing", module + "/internal/sample/order"}
	if got := r.violations(deps); !slices.Equal(got, deps[1:]) {
		t.Errorf("violations(%v) = %v, want the sample's packages", deps, got)
	}
}

func TestRulesMatchPackagesAndThoseBelow(t *testing.T) {
	sampleRule, lambdaRule := rules[0], rules[3]
	for _, tc := range []struct {
		name string
		r    rule
		deps []string
		want []string
	}{
		{"the package itself", sampleRule, []string{"context", module + "/internal/sample/order"}, []string{module + "/internal/sample/order"}},
		{"a package below it", lambdaRule, []string{lambda + "/events"}, []string{lambda + "/events"}},
		{"a sibling that shares a prefix", sampleRule, []string{module + "/internal/samplex", module + "/internal/samples/order"}, nil},
		{"shared internals", sampleRule, []string{module + "/internal/envelope", module + "/internal/clip"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.violations(tc.deps); !slices.Equal(got, tc.want) {
				t.Errorf("violations(%v) = %v, want %v", tc.deps, got, tc.want)
			}
		})
	}
	if !lambdaRule.applies(module+"/replay") || !lambdaRule.applies(module+"/invalid") || lambdaRule.applies(module+"/internal/handler") || lambdaRule.applies(module+"/batch") {
		t.Error("the Lambda rule must hold replay and invalid, and only them")
	}
}
