package sandbox

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The core's size (issue 34, item 1): internal/sandbox keeps what must
// share the manager's lock; services live in packages beside it
// (internal/sandbox/<name>svc) and reach it through Sandboxes and Handle,
// and the logic that only needs a narrow interface of the core is in
// packages of its own (warmpool, idle, tracing, egress, spec, ...). The
// core stays under 4,000 non-test lines and under 60 methods on Manager.
const (
	coreLinesMax   = 4000
	coreMethodsMax = 60
)

// TestCoreSize measures the package's non-test lines (the files go build
// compiles here, without tests) and Manager's methods, exported and not.
func TestCoreSize(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	lines, methods, exported := 0, 0, 0
	for _, name := range pkg.GoFiles {
		src, err := os.ReadFile(filepath.Join(pkg.Dir, name))
		if err != nil {
			t.Fatal(err)
		}
		lines += strings.Count(string(src), "\n")
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || len(fn.Recv.List) != 1 || recvName(fn.Recv.List[0].Type) != "Manager" {
				continue
			}
			methods++
			if fn.Name.IsExported() {
				exported++
			}
		}
	}
	t.Logf("internal/sandbox: %d non-test lines (under %d); Manager: %d methods, %d exported (under %d)",
		lines, coreLinesMax, methods, exported, coreMethodsMax)
	if lines >= coreLinesMax {
		t.Errorf("internal/sandbox has %d non-test lines, not under %d: put a service in its own package (internal/sandbox/<name>svc) behind Handle", lines, coreLinesMax)
	}
	if methods >= coreMethodsMax {
		t.Errorf("Manager has %d methods, not under %d: put a service in its own package behind Handle", methods, coreMethodsMax)
	}
}

// recvName is the type name of a method's receiver (Manager for *Manager).
func recvName(e ast.Expr) string {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}
