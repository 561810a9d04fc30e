// Package tarfstest holds what the tests of untrusted extraction share: a
// root with host files next to it that no entry may reach, a description
// of what a path is, and a tree to carry through archives (for the tests
// of tarfs, of image layers, of the agent's archives and the integration
// tests). Tar streams to extract are built with ocitest.Tar.
package tarfstest

import (
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Fixture makes an empty root three levels under a directory that also
// holds host files no entry may reach: outside/secret and outside/victim.
// From the root, the outside directory is "../../../outside".
func Fixture(t testing.TB) (root, outside string) {
	t.Helper()
	base := t.TempDir()
	outside = filepath.Join(base, "outside")
	root = filepath.Join(base, "a", "b", "rootfs")
	for _, d := range []string{outside, root} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"secret", "victim"} {
		if err := os.WriteFile(filepath.Join(outside, f), []byte("host "+f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root, outside
}

// Describe renders what is at rel under root: "dir", "file:<content>",
// "link:<target>", "fifo", or "missing" (also below a file).
func Describe(t testing.TB, root, rel string) string {
	t.Helper()
	p := filepath.Join(root, rel)
	st, err := os.Lstat(p)
	if err != nil {
		if os.IsNotExist(err) || errors.Is(err, syscall.ENOTDIR) {
			return "missing"
		}
		t.Fatal(err)
	}
	switch {
	case st.IsDir():
		return "dir"
	case st.Mode()&fs.ModeSymlink != 0:
		target, _ := os.Readlink(p)
		return "link:" + target
	case st.Mode()&fs.ModeNamedPipe != 0:
		return "fifo"
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return "file:" + string(b)
}

// AssertOutsideIntact checks that the host files of Fixture are as it
// made them: the same names, contents, modes and a single link each.
func AssertOutsideIntact(t testing.TB, outside string) {
	t.Helper()
	entries, err := os.ReadDir(outside)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "secret,victim" {
		t.Errorf("outside directory now holds %v", names)
	}
	for _, f := range []string{"secret", "victim"} {
		if got := Describe(t, outside, f); got != "file:host "+f {
			t.Errorf("outside/%s = %s", f, got)
		}
		st, err := os.Lstat(filepath.Join(outside, f))
		if err != nil {
			t.Fatal(err)
		}
		if n := st.Sys().(*syscall.Stat_t).Nlink; n != 1 || st.Mode() != 0o644 {
			t.Errorf("outside/%s: mode %v, %d links", f, st.Mode(), n)
		}
	}
}

// Mtime is the modification time of everything Source makes.
var Mtime = time.Unix(1_700_000_000, 0)

// Source makes a directory tree to carry through archives, and a
// directory outside it that one of its links names:
//
//	bin/run.sh (0755 script)   data/private (0600)   data/deep/ (0750)
//	data/deep/er/random.bin (5 MiB and a bit of random bytes)
//	data/run-link -> ../bin/run.sh   data/hard (a hard link to data/private)
//	out-link -> <outside>   empty/
func Source(t testing.TB) (src, outside string) {
	t.Helper()
	base := t.TempDir()
	src, outside = filepath.Join(base, "src"), filepath.Join(base, "outside")
	random := make([]byte, RandomBytes)
	if _, err := rand.Read(random); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"src/bin", "src/data/deep/er", "src/empty", "outside"} {
		must(os.MkdirAll(filepath.Join(base, d), 0o755))
	}
	must(os.WriteFile(filepath.Join(outside, "secret"), []byte("host secret"), 0o600))
	must(os.WriteFile(filepath.Join(src, "bin/run.sh"), []byte(Script), 0o755))
	must(os.WriteFile(filepath.Join(src, "data/private"), []byte("only mine\n"), 0o600))
	must(os.WriteFile(filepath.Join(src, "data/deep/er/random.bin"), random, 0o644))
	must(os.Link(filepath.Join(src, "data/private"), filepath.Join(src, "data/hard")))
	must(os.Symlink("../bin/run.sh", filepath.Join(src, "data/run-link")))
	must(os.Symlink(outside, filepath.Join(src, "out-link")))
	must(os.Chmod(filepath.Join(src, "data/deep"), 0o750))
	must(filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink != 0 {
			return err
		}
		return os.Chtimes(p, Mtime, Mtime)
	}))
	return src, outside
}

// What Source writes: the script's content, the random file's size, and
// the entries and content bytes of its tar (the hard link's content once).
const (
	Script        = "#!/bin/sh\necho ran from an archive\n"
	RandomBytes   = 5<<20 + 123
	SourceEntries = 11
	SourceBytes   = int64(len(Script) + RandomBytes + len("only mine\n"))
)

// Tree describes every entry under dir, one sorted line each: its path,
// mode, modification time (not for symlinks), and size and SHA-256 for a
// file or target for a symlink. Two trees with the same description have
// the same content byte for byte.
func Tree(t testing.TB, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		line := fmt.Sprintf("%s %v", rel, fi.Mode())
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			line += " -> " + target
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(" %d %d sha256:%x", fi.ModTime().Unix(), len(b), sha256.Sum256(b))
		default:
			line += fmt.Sprintf(" %d", fi.ModTime().Unix())
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
