package main

import (
	"os"
	"regexp"
	"testing"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
)

// rootModule is the module this one releases with.
const rootModule = "github.com/homingdlq/homing"

// TestReleasedTogether: infra/go.mod requires a real version of the root
// module, the release the CHANGELOG names last, with no replace: Go
// ignores a replace in a dependency, so `go get .../infra@vX.Y.Z` would
// fail on a pseudo-version nothing publishes (issue 17).
func TestReleasedTogether(t *testing.T) {
	data, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	changelog, err := os.ReadFile("../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	release := latestRelease(changelog)
	if release == "" {
		t.Fatal("CHANGELOG.md names no release (a heading ## vX.Y.Z)")
	}
	for _, problem := range releaseProblems(data, release) {
		t.Error(problem)
	}
}

// latestRelease is the version of the first "## vX.Y.Z" heading of a
// changelog, "" when it has none.
func latestRelease(changelog []byte) string {
	m := regexp.MustCompile(`(?m)^## (v[0-9]+\.[0-9]+\.[0-9]+)\b`).FindSubmatch(changelog)
	if m == nil {
		return ""
	}
	return string(m[1])
}

// releaseProblems are the reasons the go.mod data does not release with
// the root's version release.
func releaseProblems(data []byte, release string) []string {
	f, err := modfile.Parse("go.mod", data, nil)
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	for _, r := range f.Replace {
		if r.Old.Path == rootModule {
			problems = append(problems, "go.mod replaces "+rootModule+": Go ignores a replace in a dependency; the workspace (go.work) builds against the working tree")
		}
	}
	var version string
	for _, r := range f.Require {
		if r.Mod.Path == rootModule {
			version = r.Mod.Version
		}
	}
	switch {
	case version == "":
		problems = append(problems, "go.mod does not require "+rootModule)
	case module.IsPseudoVersion(version):
		problems = append(problems, "go.mod requires "+rootModule+" at the pseudo-version "+version+", which no proxy serves: require the release "+release)
	case !semver.IsValid(version) || semver.Canonical(version) != version || semver.Prerelease(version) != "":
		problems = append(problems, "go.mod requires "+rootModule+" at "+version+", want a release version vX.Y.Z")
	case version != release:
		problems = append(problems, "go.mod requires "+rootModule+" "+version+", but CHANGELOG.md's latest release is "+release+": the two modules are tagged together")
	}
	return problems
}

// TestReleaseProblems: the check refuses what issue 17 found, and what
// drifts from the CHANGELOG.
func TestReleaseProblems(t *testing.T) {
	head := "module github.com/homingdlq/homing/infra\n\ngo 1.26.0\n\n"
	for _, tc := range []struct {
		name, gomod string
		want        string // "" for none
	}{
		{"the release", "require github.com/homingdlq/homing v0.3.0\n", ""},
		{"the pseudo-version and replace of before", "require github.com/homingdlq/homing v0.0.0-00010101000000-000000000000\nreplace github.com/homingdlq/homing => ../\n",
			"go.mod replaces github.com/homingdlq/homing"},
		{"a pseudo-version", "require github.com/homingdlq/homing v0.0.0-20261130155748-d939f1bc32fb\n", "at the pseudo-version v0.0.0-20261130155748-d939f1bc32fb, which no proxy serves: require the release v0.3.0"},
		{"a pre-release", "require github.com/homingdlq/homing v0.3.0-rc.1\n", "want a release version vX.Y.Z"},
		{"another release", "require github.com/homingdlq/homing v0.2.0\n", "but CHANGELOG.md's latest release is v0.3.0"},
		{"no requirement", "", "does not require github.com/homingdlq/homing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			problems := releaseProblems([]byte(head+tc.gomod), "v0.3.0")
			if tc.want == "" {
				if len(problems) != 0 {
					t.Errorf("problems %q, want none", problems)
				}
				return
			}
			found := false
			for _, p := range problems {
				found = found || regexp.MustCompile(regexp.QuoteMeta(tc.want)).MatchString(p)
			}
			if !found {
				t.Errorf("problems %q, want one with %q", problems, tc.want)
			}
		})
	}
	if got := latestRelease([]byte("# Changelog\n\n## v1.2.3 (unreleased)\n\n## v1.2.2\n")); got != "v1.2.3" {
		t.Errorf("latestRelease = %q, want v1.2.3", got)
	}
}
