package agent

import (
	"os"
	"path/filepath"
	"testing"
)

func TestOOMKills(t *testing.T) {
	cases := []struct {
		name   string
		events string // "" writes no file
		want   uint64
	}{
		{"no memory controller", "", 0},
		{"none", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n", 0},
		{"killed", "low 0\nhigh 0\nmax 3\noom 1\noom_kill 2\noom_group_kill 0\n", 2},
		{"no trailing newline", "oom 1\noom_kill 1", 1},
		{"only a group kill", "oom_group_kill 1\n", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.events != "" {
				writeTree(t, dir, map[string]string{"memory.events": tc.events})
			}
			if got := oomKills(dir); got != tc.want {
				t.Errorf("oomKills = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestProcCgroupEnd: a process's cgroup reports its OOM kills and goes,
// later if something still holds it.
func TestProcCgroupEnd(t *testing.T) {
	old := procCgroups
	procCgroups = t.TempDir()
	t.Cleanup(func() { procCgroups = old })

	c, err := newProcCgroup()
	if err != nil || c.fd < 0 {
		t.Fatalf("newProcCgroup = %+v, %v", c, err)
	}
	// A directory with a file stands for a cgroup with tasks left in it.
	writeTree(t, c.dir, map[string]string{"memory.events": "oom 1\noom_kill 1\n"})
	if !c.end() {
		t.Error("end = false, want the OOM kill")
	}
	if c.fd != -1 {
		t.Errorf("descriptor %d left open", c.fd)
	}
	if _, err := os.Stat(c.dir); err != nil {
		t.Fatalf("a busy cgroup was not kept: %v", err)
	}
	// Once free, the next end removes it too.
	if err := os.Remove(filepath.Join(c.dir, "memory.events")); err != nil {
		t.Fatal(err)
	}
	next, err := newProcCgroup()
	if err != nil {
		t.Fatal(err)
	}
	if next.dir == c.dir {
		t.Errorf("two processes share cgroup %s", c.dir)
	}
	if next.end() {
		t.Error("end = true without an OOM kill")
	}
	for _, d := range []string{c.dir, next.dir} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s left: %v", d, err)
		}
	}
	var none *procCgroup
	if none.end() {
		t.Error("no cgroup reported an OOM kill")
	}
}

// TestNoProcCgroupOutsideVM: outside a microVM processes get no cgroup.
func TestNoProcCgroupOutsideVM(t *testing.T) {
	if c, err := newProcCgroup(); c != nil || err != nil {
		t.Errorf("newProcCgroup = %+v, %v; want none", c, err)
	}
}
