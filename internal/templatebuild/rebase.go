package templatebuild

import (
	"archive/tar"
	"io"
	"path"
	"sort"
	"strings"

	"github.com/hutch-dev/hutch/internal/errdefs"
)

// Rebase copies the tar stream r of a sandbox's pack of a directory (a
// COPY --from source) to w, each entry at the path place gives its path
// in the pack (Under, Picked), or left out. chmod ("" for none) sets
// every entry's mode; the paths written are appended to paths.
func Rebase(r io.Reader, w io.Writer, place func(rel string) (string, bool), chmod string, paths *[]string) error {
	mode, err := chmodOf(chmod)
	if err != nil {
		return err
	}
	tr, err := tarReader(r)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return tw.Close()
		}
		if err != nil {
			return err
		}
		rel, ok := cleanRel(h.Name)
		if !ok || rel == "." {
			continue
		}
		name, ok := place(rel)
		if !ok {
			continue
		}
		if name == "/" || (h.Typeflag != tar.TypeReg && h.Typeflag != tar.TypeDir && h.Typeflag != tar.TypeSymlink) {
			continue
		}
		out := &tar.Header{Name: strings.TrimPrefix(name, "/"), Typeflag: h.Typeflag, Mode: h.Mode & 0o7777, Linkname: h.Linkname, Size: h.Size, ModTime: h.ModTime, Format: tar.FormatPAX}
		if mode >= 0 && h.Typeflag != tar.TypeSymlink {
			out.Mode = mode
		}
		if err := tw.WriteHeader(out); err != nil {
			return err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return err
		}
		*paths = append(*paths, name)
	}
}

// Under places every entry of a pack under target.
func Under(target string) func(rel string) (string, bool) {
	return func(rel string) (string, bool) { return path.Join(target, rel), true }
}

// Picked places the pack's entries named in targets (and what is under
// them) at their targets, and leaves the others out.
func Picked(targets map[string]string) func(rel string) (string, bool) {
	return func(rel string) (string, bool) {
		top, rest, _ := strings.Cut(rel, "/")
		t, ok := targets[top]
		if !ok {
			return "", false
		}
		return path.Join(t, rest), true
	}
}

// Match is a path a glob matched.
type Match struct {
	Path string
	Dir  bool
}

// Bounds of a glob's expansion.
const (
	maxGlobMatches = 10_000
	maxGlobLists   = 1_000
)

// HasGlob says p has a wildcard (*, ? or [).
func HasGlob(p string) bool { return strings.ContainsAny(p, "*?[") }

// Glob expands pattern (absolute) with ls, which lists a directory's
// entries (Path their name), one path element at a time as buildkit
// resolves a COPY source's wildcards (path.Match on each element; "*"
// matches names starting with "." too). The matches are sorted; at most
// 10,000 (S001 beyond).
func Glob(pattern string, ls func(dir string) ([]Match, error)) ([]Match, error) {
	elems := strings.Split(strings.Trim(path.Clean("/"+pattern), "/"), "/")
	cur := []Match{{Path: "/", Dir: true}}
	lists := 0
	for _, el := range elems {
		if _, err := path.Match(el, ""); err != nil {
			return nil, errdefs.Malformed("the pattern %q: %v", clip(pattern), err)
		}
		var next []Match
		for _, c := range cur {
			if !c.Dir {
				continue
			}
			if lists++; lists > maxGlobLists {
				return nil, errdefs.Malformed("the pattern %q lists more than %d directories", clip(pattern), maxGlobLists)
			}
			entries, err := ls(c.Path)
			if err != nil {
				return nil, err
			}
			for _, e := range entries {
				if ok, _ := path.Match(el, e.Path); ok {
					next = append(next, Match{Path: path.Join(c.Path, e.Path), Dir: e.Dir})
				}
			}
			if len(next) > maxGlobMatches {
				return nil, errdefs.Malformed("the pattern %q matches more than %d paths", clip(pattern), maxGlobMatches)
			}
		}
		cur = next
	}
	sort.Slice(cur, func(i, j int) bool { return cur[i].Path < cur[j].Path })
	return cur, nil
}
