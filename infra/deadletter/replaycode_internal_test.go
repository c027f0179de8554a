package deadletter

import (
	"archive/zip"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// TestReplayBuildCacheFollowsTheContent: the lane caches the replay
// function it builds from a version of the root module; a snapshot of the
// same version rebuilt with other content (a file proxy made again, the
// module cache cleaned) is built again, not served from the cache.
func TestReplayBuildCacheFollowsTheContent(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	proxy := filepath.Join(dir, "proxy")
	modcache := filepath.Join(dir, "modcache")
	app := filepath.Join(dir, "app")
	if err := os.MkdirAll(app, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(app, "go.mod"), []byte("module example.com/app\n\ngo 1.21\n\nrequire "+rootModule+" v0.0.1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"GOPROXY": "file://" + filepath.ToSlash(proxy), "GOSUMDB": "off", "GOFLAGS": "-mod=mod", "GOWORK": "off",
		"GOMODCACHE": modcache, "XDG_CACHE_HOME": filepath.Join(dir, "cache"), "GOTOOLCHAIN": "local",
	} {
		t.Setenv(k, v)
	}
	t.Cleanup(func() { _ = exec.Command(goBin, "clean", "-modcache").Run() }) // its files are read-only
	t.Chdir(app)

	built := map[string]string{}
	for _, snapshot := range []string{"snapshot-A", "snapshot-B"} {
		publish(t, proxy, "v0.0.1", snapshot)
		if out, err := exec.Command(goBin, "clean", "-modcache").CombinedOutput(); err != nil {
			t.Fatalf("go clean -modcache: %v: %s", err, out)
		}
		_ = os.Remove(filepath.Join(app, "go.sum"))
		out, err := buildReplay(runtime.GOARCH)
		if err != nil {
			t.Fatalf("%s: %v", snapshot, err)
		}
		bin, err := os.ReadFile(filepath.Join(out, "bootstrap"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(bin, []byte(snapshot)) {
			t.Fatalf("the replay built for %s of v0.0.1 (%s) is not that snapshot's: a stale cache", snapshot, out)
		}
		built[snapshot] = out
	}
	if built["snapshot-A"] == built["snapshot-B"] {
		t.Errorf("both snapshots cached in %s", built["snapshot-A"])
	}
}

// publish writes version of a root module whose functions/replay prints
// marker into the file proxy at proxy, replacing what was there.
func publish(t *testing.T, proxy, version, marker string) {
	t.Helper()
	at := filepath.Join(proxy, filepath.FromSlash(rootModule), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	mod := "module " + rootModule + "\n\ngo 1.21\n"
	var z bytes.Buffer
	w := zip.NewWriter(&z)
	for name, body := range map[string]string{
		"go.mod":                   mod,
		"functions/replay/main.go": "package main\n\nfunc main() { println(\"" + marker + "\") }\n",
	} {
		f, err := w.Create(rootModule + "@" + version + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string][]byte{
		"list":            []byte(version + "\n"),
		version + ".info": []byte(`{"Version":"` + version + `","Time":"2026-01-01T00:00:00Z"}`),
		version + ".mod":  []byte(mod),
		version + ".zip":  z.Bytes(),
	} {
		if err := os.WriteFile(filepath.Join(at, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
