package publicapi

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// maxReadmeLines is the README's bound: one screen to a running lane;
// the rest lives in CONTRIBUTING.md and docs/.
const maxReadmeLines = 200

// maxPackageDocWords bounds a package doc: its contract, with a link to
// docs/ for the reasons.
const maxPackageDocWords = 150

// longPackageDocs are the packages whose doc is still over the bound, with
// its word count today: a doc may shrink, never grow, and leaves the list
// once it fits (the test says so). Public packages are not listed.
var longPackageDocs = map[string]int{
	"cmd/benchreplay":            367,
	"cmd/soak":                   242,
	"cmd/dlq":                    219,
	"internal/tools/sim":         1871,
	"internal/sample/tax":        671,
	"internal/sample/order":      352,
	"internal/sample/invoicing":  308,
	"internal/sample/taxstub":    220,
	"internal/envelope":          182,
	"examples/ledger":            201,
	"examples/ledger/ledgertest": 162,
}

// TestReadmeIsOneScreen keeps the README at most maxReadmeLines lines.
func TestReadmeIsOneScreen(t *testing.T) {
	readme := readFile(t, "../../../README.md")
	if n := strings.Count(readme, "\n"); n > maxReadmeLines {
		t.Errorf("README.md has %d lines, more than %d: move the detail to CONTRIBUTING.md or docs/", n, maxReadmeLines)
	}
}

// packageDirs returns every directory of the repository, relative to its
// root, that holds a Go package (a non-test .go file), in any of its
// modules.
func packageDirs(t *testing.T, root string) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || name == "cdk.out" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
			rel, err := filepath.Rel(root, filepath.Dir(path))
			if err != nil {
				return err
			}
			if rel = filepath.ToSlash(rel); !slices.Contains(dirs, rel) {
				dirs = append(dirs, rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < len(known) {
		t.Fatalf("found %d package directories, fewer than the %d known public packages", len(dirs), len(known))
	}
	return dirs
}

// TestLayoutNamesEveryPackage checks that CONTRIBUTING.md's layout table
// has a row for every package of the repository, and no row for a package
// that is gone.
func TestLayoutNamesEveryPackage(t *testing.T) {
	doc := readFile(t, "../../../CONTRIBUTING.md")
	_, layout, ok := strings.Cut(doc, "\n## Layout\n")
	if !ok {
		t.Fatal("CONTRIBUTING.md has no ## Layout")
	}
	layout, _, _ = strings.Cut(layout, "\n## ")
	rows := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)/` \\|").FindAllStringSubmatch(layout, -1) {
		rows[m[1]] = true
	}
	for _, dir := range packageDirs(t, "../../..") {
		if !rows[dir] {
			t.Errorf("CONTRIBUTING.md's layout table has no row | `%s/` |", dir)
		}
		delete(rows, dir)
	}
	for dir := range rows {
		t.Errorf("CONTRIBUTING.md's layout table names %s/, which holds no package", dir)
	}
}

// packageDocWords returns the number of words of the package doc of the
// package in dir (every file's, though one file should carry it).
// parseDir parses the Go files of dir (its tests too when tests), by path.
func parseDir(t *testing.T, dir string, tests bool, mode parser.Mode) map[string]*ast.File {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	files := map[string]*ast.File{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || !tests && strings.HasSuffix(name, "_test.go") {
			continue
		}
		path := filepath.Join(dir, name)
		f, err := parser.ParseFile(fset, path, nil, mode)
		if err != nil {
			t.Fatal(err)
		}
		files[path] = f
	}
	return files
}

func packageDocWords(t *testing.T, dir string) int {
	t.Helper()
	words := 0
	for _, f := range parseDir(t, dir, false, parser.ParseComments|parser.PackageClauseOnly) {
		if f.Doc != nil {
			words += len(strings.Fields(f.Doc.Text()))
		}
	}
	return words
}

// TestPackageDocsAreShort keeps every package doc at most
// maxPackageDocWords words, but for longPackageDocs, which may not grow.
func TestPackageDocsAreShort(t *testing.T) {
	root := "../../.."
	seen := map[string]bool{}
	for _, dir := range packageDirs(t, root) {
		seen[dir] = true
		n := packageDocWords(t, filepath.Join(root, dir))
		limit, listed := longPackageDocs[dir]
		switch {
		case n == 0:
			t.Errorf("%s has no package doc", dir)
		case listed && n <= maxPackageDocWords:
			t.Errorf("%s's package doc is %d words, within the bound: remove it from longPackageDocs", dir, n)
		case listed && n > limit:
			t.Errorf("%s's package doc grew to %d words (it was %d, the bound is %d): move the reasons to docs/", dir, n, limit, maxPackageDocWords)
		case !listed && n > maxPackageDocWords:
			t.Errorf("%s's package doc is %d words, more than %d: state the contract, move the reasons to docs/", dir, n, maxPackageDocWords)
		}
	}
	for dir := range longPackageDocs {
		if !seen[dir] {
			t.Errorf("longPackageDocs lists %s, which holds no package", dir)
		}
	}
}

// maxDocWords bounds the doc comment of an exported name: what it does,
// returns and refuses; the reasons, history and comparisons go in docs/.
const maxDocWords = 100

// TestDocCommentsAreShort keeps the doc comment of every exported name of
// the public packages and the construct at most maxDocWords words.
func TestDocCommentsAreShort(t *testing.T) {
	root := "../../.."
	for _, dir := range append(publicPackages(t), "infra/deadletter") {
		files := parseDir(t, filepath.Join(root, dir), false, parser.ParseComments)
		if len(files) == 0 {
			t.Errorf("%s holds no Go file", dir)
		}
		for _, path := range slices.Sorted(maps.Keys(files)) {
			for _, d := range docWords(files[path]) {
				if d.words > maxDocWords {
					t.Errorf("%s.%s (%s): its doc comment is %d words, more than %d: say what it does, returns and refuses; move the reasons to docs/",
						dir, d.name, filepath.Base(path), d.words, maxDocWords)
				}
			}
		}
	}
}

// documented is an exported name, or a group of them, and the number of
// words of its doc comment.
type documented struct {
	name  string
	words int
}

// docWords returns the exported top-level names of f and the exported
// methods of its exported types that have a doc comment, with the comment's
// word count. A declaration's doc counts for its one spec; a group's shared
// doc counts once, for the group, and each spec's own doc for that spec.
func docWords(f *ast.File) []documented {
	var out []documented
	add := func(name string, doc *ast.CommentGroup) {
		if doc != nil {
			out = append(out, documented{name, len(strings.Fields(doc.Text()))})
		}
	}
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			if d.Recv == nil {
				add(d.Name.Name, d.Doc)
			} else if recv := receiverName(d.Recv.List[0].Type); ast.IsExported(recv) {
				add(recv+"."+d.Name.Name, d.Doc)
			}
		case *ast.GenDecl:
			var all []string
			shared := d.Doc // the declaration's doc, unless its one spec takes it
			for _, spec := range d.Specs {
				var names []string
				var doc *ast.CommentGroup
				switch s := spec.(type) {
				case *ast.TypeSpec:
					names, doc = []string{s.Name.Name}, s.Doc
				case *ast.ValueSpec:
					for _, n := range s.Names {
						names = append(names, n.Name)
					}
					doc = s.Doc
				}
				names = slices.DeleteFunc(names, func(n string) bool { return !ast.IsExported(n) })
				if len(names) == 0 {
					continue
				}
				all = append(all, names...)
				if len(d.Specs) == 1 && doc == nil {
					doc, shared = d.Doc, nil
				}
				add(strings.Join(names, ", "), doc)
			}
			if len(all) > 0 {
				add(d.Tok.String()+" ("+strings.Join(all, ", ")+")", shared)
			}
		}
	}
	return out
}

// receiverName returns the name of a method's receiver type: T of T, *T,
// T[P] and *T[P, Q].
func receiverName(x ast.Expr) string {
	for {
		switch e := x.(type) {
		case *ast.StarExpr:
			x = e.X
		case *ast.IndexExpr:
			x = e.X
		case *ast.IndexListExpr:
			x = e.X
		case *ast.ParenExpr:
			x = e.X
		case *ast.Ident:
			return e.Name
		default:
			return ""
		}
	}
}

func TestDocWords(t *testing.T) {
	src := `package p

// F does one two three.
func F() {}

// f is unexported.
func f() {}

// T is a type.
type T struct{}

// M is a method of T.
func (*T) M() {}

// M is a method of an unexported type.
func (u) M() {}

// N is a method of a generic type.
func (G[K, V]) N() {}

// The group's doc, once.
const (
	// A is one.
	A = 1
	B, c = 2, 3
	d = 4
)

// One var, its doc on the declaration.
var V = 1

// Only unexported names.
var (
	x = 1
	y = 2
)

type (
	// U is grouped.
	U int
	W int
)

// A group of one.
var (
	// Z has its own doc.
	Z = 1
)
`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	want := []documented{
		{"F", 5}, {"T", 4}, {"T.M", 6}, {"G.N", 8},
		{"A", 3}, {"const (A, B)", 4},
		{"V", 7},
		{"U", 3},
		{"Z", 5}, {"var (Z)", 4},
	}
	if got := docWords(f); !slices.Equal(got, want) {
		t.Errorf("docWords = %v, want %v", got, want)
	}
}

// link is a Markdown link's target, outside code.
var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocLinks checks every relative link of the README, CONTRIBUTING.md
// and docs/: the file it names exists, and its #fragment, if any, is a
// heading of that file (as GitHub makes anchors of headings).
func TestDocLinks(t *testing.T) {
	root := "../../.."
	files := []string{"README.md", "CONTRIBUTING.md", "CHANGELOG.md", "infra/README.md", "localstack/README.md"}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		rel, _ := filepath.Rel(root, d)
		files = append(files, filepath.ToSlash(rel))
	}
	for _, file := range files {
		text := readFile(t, filepath.Join(root, file))
		for _, m := range link.FindAllStringSubmatch(prose(text), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, fragment, _ := strings.Cut(target, "#")
			resolved := filepath.Join(root, file)
			if path != "" {
				resolved = filepath.Join(root, filepath.Dir(file), path)
				if _, err := os.Stat(resolved); err != nil {
					t.Errorf("%s links to %s, which does not exist", file, target)
					continue
				}
			}
			if fragment == "" {
				continue
			}
			if !slices.Contains(anchors(readFile(t, resolved)), fragment) {
				t.Errorf("%s links to %s: no heading makes the anchor #%s", file, target, fragment)
			}
		}
	}
}

// prose returns text without its fenced code blocks and inline code spans.
func prose(text string) string {
	var b strings.Builder
	fenced := false
	for line := range strings.Lines(text) {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			b.WriteString(regexp.MustCompile("`[^`]*`").ReplaceAllString(line, ""))
		}
	}
	return b.String()
}

// anchors returns the anchors GitHub makes of a Markdown file's headings:
// lower case, punctuation but '-' and '_' dropped, spaces as '-', a
// repeated one suffixed -1, -2...
func anchors(text string) []string {
	var out []string
	count := map[string]int{}
	fenced := false
	for line := range strings.Lines(text) {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		heading := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(heading) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := count[a]; n > 0 {
			out = append(out, a+"-"+itoa(n))
		} else {
			out = append(out, a)
		}
		count[a]++
	}
	return out
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

func TestAnchors(t *testing.T) {
	got := anchors("# A b\n```\n# not a heading\n```\n## On a real AWS account: what `x` says\n## A b\n")
	want := []string{"a-b", "on-a-real-aws-account-what-x-says", "a-b-1"}
	if !slices.Equal(got, want) {
		t.Fatalf("anchors = %q, want %q", got, want)
	}
}

// docRef is a reference to a page of docs/ in a Go comment, with its anchor.
var docRef = regexp.MustCompile(`docs/([A-Z]+\.md)(#[a-z0-9_-]+)?`)

// TestCommentDocRefs checks that every docs/ page a Go comment sends its
// reader to exists, with the anchor it names.
func TestCommentDocRefs(t *testing.T) {
	root := "../../.."
	for _, dir := range packageDirs(t, root) {
		for name, f := range parseDir(t, filepath.Join(root, dir), true, parser.ParseComments) {
			for _, c := range f.Comments {
				for _, m := range docRef.FindAllStringSubmatch(c.Text(), -1) {
					page := filepath.Join(root, "docs", m[1])
					if _, err := os.Stat(page); err != nil {
						t.Errorf("%s sends its reader to docs/%s, which does not exist", name, m[1])
						continue
					}
					if m[2] != "" && !slices.Contains(anchors(readFile(t, page)), m[2][1:]) {
						t.Errorf("%s names docs/%s%s: no such heading", name, m[1], m[2])
					}
				}
			}
		}
	}
}
