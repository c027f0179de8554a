package main

import (
	"runtime/debug"
	"strings"
)

// versionText describes a build of dlq from its build information: the
// module version (a tag or a pseudo-version with `go install …@latest`,
// "(devel)" from a checkout), then the VCS revision, its time and whether
// the tree was modified when the build stamped them, and the Go version.
func versionText(info *debug.BuildInfo, ok bool) string {
	if !ok || info == nil {
		return "unknown (built without module support)"
	}
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, at string
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	var parts []string
	if rev != "" {
		parts = append(parts, "commit "+rev[:min(12, len(rev))])
	}
	if at != "" {
		parts = append(parts, at)
	}
	if modified {
		parts = append(parts, "modified")
	}
	if info.GoVersion != "" {
		parts = append(parts, info.GoVersion)
	}
	if len(parts) == 0 {
		return v
	}
	return v + " (" + strings.Join(parts, ", ") + ")"
}

// version is dlq's own version text.
func version() string { return versionText(debug.ReadBuildInfo()) }
