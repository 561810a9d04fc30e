package api_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// functionIDs are the values of package api's Fn* constants, read from its
// source: every function id, by its constant's name.
func functionIDs(t *testing.T) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	matches, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, name := range matches {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if !strings.HasPrefix(n.Name, "Fn") || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Errorf("%s: %s is not a string literal", fset.Position(n.Pos()), n.Name)
						continue
					}
					v, _ := strconv.Unquote(lit.Value)
					if prev, dup := ids[v]; dup {
						t.Errorf("%s: %s spells %q, as %s does", fset.Position(n.Pos()), n.Name, v, prev)
					}
					ids[v] = n.Name
				}
			}
		}
	}
	return ids
}

// TestNoFunctionIDLiterals: a function id is spelled once, as a constant of
// package api. A string literal elsewhere in the repository's Go code that
// is a function id, or the start of one ("sandbox::git::" + op), fails the
// test in non-test files and is reported in test files.
func TestNoFunctionIDLiterals(t *testing.T) {
	ids := functionIDs(t)
	if len(ids) < 100 {
		t.Fatalf("found %d function ids in package api, want every one", len(ids))
	}
	for _, want := range []string{"sandbox::create", "sandbox::exec", "sandbox::fs::read", "sandbox::fs::write", "sandbox::catalog::list", "sandbox::run"} {
		if _, ok := ids[want]; !ok {
			t.Errorf("no api.Fn* constant for %s", want)
		}
	}
	// prefixes are the groups of ids: "sandbox::fs::" of sandbox::fs::ls.
	prefixes := map[string]bool{}
	for id := range ids {
		for i := strings.Index(id, "::"); i >= 0; {
			prefixes[id[:i+2]] = true
			j := strings.Index(id[i+2:], "::")
			if j < 0 {
				break
			}
			i += 2 + j
		}
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	var inTests []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "node_modules", "testdata", ".git":
				return filepath.SkipDir
			}
			if path == filepath.Join(root, "api") {
				return filepath.SkipDir // the constants' own package (its subpackages are checked)
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			v, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			what := ""
			if name, ok := ids[v]; ok {
				what = "api." + name
			} else if prefixes[v] {
				what = "the api.Fn* constants of the group " + v
			}
			if what == "" {
				return true
			}
			pos := fset.Position(lit.Pos())
			msg := rel + ":" + strconv.Itoa(pos.Line) + ": " + lit.Value + ": use " + what
			if strings.HasSuffix(path, "_test.go") {
				inTests = append(inTests, msg)
			} else {
				t.Error(msg)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(inTests)
	for _, m := range inTests {
		t.Log("in a test: " + m)
	}
}
