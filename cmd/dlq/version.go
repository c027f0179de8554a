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

// release is the version a release build stamps into dlq (GoReleaser's
// -ldflags "-X main.release=v{{.Version}}", .goreleaser.yaml); empty in
// any other build, whose module version then stands.
var release string

// version is dlq's own version text.
func version() string { return releaseText(release, versionText(debug.ReadBuildInfo())) }

// releaseText is text, the build information's version text, with its
// version replaced by stamped when a release build set it.
func releaseText(stamped, text string) string {
	if stamped == "" {
		return text
	}
	if _, rest, ok := strings.Cut(text, " ("); ok && !strings.HasPrefix(text, "unknown") {
		return stamped + " (" + rest
	}
	return stamped
}
