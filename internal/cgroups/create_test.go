package cgroups

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCreateAndJoin: on v1 Create makes the cgroup in the memory, cpu and
// pids hierarchies and Join writes the pid into each; on v2 it enables the
// controllers in every cgroup above it first (issue 38: 5). The kernel
// makes a cgroup's files; the fake tree has them written beforehand.
func TestCreateAndJoin(t *testing.T) {
	const rel = "hutch/vm1"
	write := func(path, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(path string) string {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	v1 := Layout{Root: t.TempDir()}
	for _, c := range confined {
		write(filepath.Join(v1.Root, c, rel, "cgroup.procs"), "")
	}
	write(filepath.Join(v1.Root, "pids", rel, "pids.max"), "max")
	if err := v1.Create(rel); err != nil {
		t.Fatal(err)
	}
	if err := v1.Join(rel, 42); err != nil {
		t.Fatal(err)
	}
	for _, c := range confined {
		if got := read(filepath.Join(v1.Root, c, rel, "cgroup.procs")); got != "42" {
			t.Errorf("v1 %s cgroup.procs = %q", c, got)
		}
	}
	if err := v1.SetLimits(rel, Limits{Pids: 97}); err != nil || read(filepath.Join(v1.Root, "pids", rel, "pids.max")) != "97" {
		t.Errorf("v1 pids.max: %v", err)
	}

	v2 := Layout{Root: t.TempDir(), V2: true}
	write(filepath.Join(v2.Root, "cgroup.subtree_control"), "")
	write(filepath.Join(v2.Root, "hutch", "cgroup.subtree_control"), "")
	if err := v2.Create(rel); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{v2.Root, filepath.Join(v2.Root, "hutch")} {
		if got := read(filepath.Join(dir, "cgroup.subtree_control")); got != "+memory +cpu +pids" {
			t.Errorf("%s subtree_control = %q", dir, got)
		}
	}
	if fi, err := os.Stat(filepath.Join(v2.Root, rel)); err != nil || !fi.IsDir() {
		t.Errorf("v2 cgroup not made: %v", err)
	}
	if err := (Layout{Root: v2.Root, V2: true}).Create("/"); err == nil {
		t.Error("Create of a hierarchy root succeeded")
	}
}
