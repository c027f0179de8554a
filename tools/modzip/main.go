// Command modzip writes one module version of a working tree into a
// file-based module proxy (GOPROXY=file://DIR), in the layout the go command
// reads: DIR/<escaped module path>/@v/{list,VERSION.info,VERSION.mod,VERSION.zip}.
// The zip is made with golang.org/x/mod/zip, which applies the go command's
// own rules (no nested modules, no vendor directories, size limits).
//
//	modzip -proxy DIR -module PATH -version vX.Y.Z -dir MODULE_DIR < FILES
//
// FILES are the module's files, one path relative to MODULE_DIR a line (what
// `git ls-files` lists), so that what .gitignore leaves out stays out.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "modzip:", err)
		os.Exit(1)
	}
}

func run() error {
	proxy := flag.String("proxy", "", "the proxy's directory")
	path := flag.String("module", "", "the module path")
	version := flag.String("version", "", "the version, vX.Y.Z")
	dir := flag.String("dir", ".", "the module's directory")
	flag.Parse()
	m := module.Version{Path: *path, Version: *version}
	if err := module.Check(m.Path, m.Version); err != nil || *proxy == "" {
		return fmt.Errorf("want -proxy, -module and -version of a module version: %v", err)
	}
	escaped, err := module.EscapePath(m.Path)
	if err != nil {
		return err
	}
	at := filepath.Join(*proxy, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		return err
	}

	var files []zip.File
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		rel := strings.TrimSpace(in.Text())
		if rel == "" {
			continue
		}
		full := filepath.Join(*dir, filepath.FromSlash(rel))
		info, err := os.Lstat(full)
		if err != nil || !info.Mode().IsRegular() {
			continue // deleted in the working tree, or not a file
		}
		files = append(files, file{rel: rel, full: full, info: info})
	}
	if err := in.Err(); err != nil {
		return err
	}

	out, err := os.Create(filepath.Join(at, m.Version+".zip"))
	if err != nil {
		return err
	}
	if err := zip.Create(out, m, files); err != nil {
		out.Close()
		return fmt.Errorf("zip %s@%s: %w", m.Path, m.Version, err)
	}
	if err := out.Close(); err != nil {
		return err
	}
	gomod, err := os.ReadFile(filepath.Join(*dir, "go.mod"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(at, m.Version+".mod"), gomod, 0o644); err != nil {
		return err
	}
	info, err := json.Marshal(map[string]any{"Version": m.Version, "Time": time.Now().UTC().Format(time.RFC3339)})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(at, m.Version+".info"), info, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(at, "list"), []byte(m.Version+"\n"), 0o644)
}

// file is one file of the module for zip.Create.
type file struct {
	rel, full string
	info      os.FileInfo
}

func (f file) Path() string                 { return f.rel }
func (f file) Lstat() (os.FileInfo, error)  { return f.info, nil }
func (f file) Open() (io.ReadCloser, error) { return os.Open(f.full) }
