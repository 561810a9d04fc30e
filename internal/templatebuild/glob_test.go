package templatebuild

import (
	"archive/tar"
	"bytes"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/errdefs"
)

// TestGlob: a COPY --from source's wildcards expand one element at a
// time over the stage's directories; nothing matched is no match; a bad
// pattern is S001.
func TestGlob(t *testing.T) {
	tree := map[string][]Match{
		"/":         {{Path: "app", Dir: true}, {Path: "etc", Dir: true}},
		"/app":      {{Path: "a.js"}, {Path: "b.js"}, {Path: ".hidden.js"}, {Path: "lib", Dir: true}, {Path: "lib2", Dir: true}, {Path: "c.css"}},
		"/app/lib":  {{Path: "x.js"}},
		"/app/lib2": {{Path: "y.js"}},
		"/etc":      {},
	}
	ls := func(dir string) ([]Match, error) {
		e, ok := tree[dir]
		if !ok {
			return nil, errors.New("no such directory " + dir)
		}
		return e, nil
	}
	paths := func(ms []Match) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.Path)
		}
		return out
	}
	for _, tc := range []struct {
		pattern string
		want    []string
	}{
		{"/app/*.js", []string{"/app/.hidden.js", "/app/a.js", "/app/b.js"}},
		{"/app/lib*", []string{"/app/lib", "/app/lib2"}},
		{"/app/lib*/*.js", []string{"/app/lib/x.js", "/app/lib2/y.js"}},
		{"/a?p/[bc].*", []string{"/app/b.js", "/app/c.css"}},
		{"/app/*.py", nil},
	} {
		got, err := Glob(tc.pattern, ls)
		if err != nil || !reflect.DeepEqual(paths(got), tc.want) {
			t.Errorf("Glob(%s) = %v %v, want %v", tc.pattern, paths(got), err, tc.want)
		}
	}
	if got, _ := Glob("/app/lib*", ls); len(got) != 2 || !got[0].Dir {
		t.Errorf("directories matched: %+v", got)
	}
	if _, err := Glob("/app/[", ls); !errdefs.Is(err, errdefs.CodeMalformed) {
		t.Errorf("a bad pattern: %v", err)
	}
}

// TestPickedAndUnder: a pack's entries are placed under a target, or
// only those picked, at their targets.
func TestPickedAndUnder(t *testing.T) {
	pick := Picked(map[string]string{"a.js": "/dst/a.js", "lib": "/dst/lib"})
	for rel, want := range map[string]string{"a.js": "/dst/a.js", "lib/x.js": "/dst/lib/x.js", "b.js": ""} {
		got, ok := pick(rel)
		if got != want || ok != (want != "") {
			t.Errorf("Picked(%s) = %q %v, want %q", rel, got, ok, want)
		}
	}
	if got, _ := Under("/dst")("lib/x.js"); got != "/dst/lib/x.js" {
		t.Errorf("Under: %s", got)
	}
}

// TestContextGlobs: a context whose tar lists no directories still has
// them; a glob matching directories copies their contents; one matching
// several files makes the destination a directory; one matching nothing
// is S001.
func TestContextGlobs(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []string{"src/one/a.txt", "src/two/b.txt", "src/c.md", "src/d.md"} {
		_ = tw.WriteHeader(&tar.Header{Name: f, Typeflag: tar.TypeReg, Mode: 0o644, Size: 1})
		_, _ = tw.Write([]byte("x"))
	}
	_ = tw.Close()
	c, err := LoadContext(&buf, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	names := func(cp *Copy) []string {
		var out []string
		tr := tar.NewReader(bytes.NewReader(cp.Tar))
		for {
			h, err := tr.Next()
			if err != nil {
				break
			}
			out = append(out, h.Name)
		}
		slices.Sort(out)
		return out
	}
	for _, tc := range []struct {
		srcs []string
		dest string
		want []string
	}{
		{[]string{"src"}, "/dst", []string{"dst/c.md", "dst/d.md", "dst/one", "dst/one/a.txt", "dst/two", "dst/two/b.txt"}},
		{[]string{"src/*"}, "/dst/", []string{"dst/a.txt", "dst/b.txt", "dst/c.md", "dst/d.md"}},
		{[]string{"src/*.md"}, "/dst", []string{"dst/c.md", "dst/d.md"}},
		{[]string{"src/c.*"}, "/dst", []string{"dst"}},
	} {
		cp, err := c.Plan(tc.srcs, tc.dest, CopyOptions{})
		if err != nil || !reflect.DeepEqual(names(cp), tc.want) {
			t.Errorf("COPY %v %s: %v %v, want %v", tc.srcs, tc.dest, names(cp), err, tc.want)
		}
	}
	if _, err := c.Plan([]string{"src/*.py"}, "/dst/", CopyOptions{}); !errdefs.Is(err, errdefs.CodeMalformed) || !strings.Contains(err.Error(), "matches nothing") {
		t.Errorf("a glob matching nothing: %v", err)
	}
}
