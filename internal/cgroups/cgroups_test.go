package cgroups

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// writeTree creates files (path → content) under root; a path ending in
// "/" is a directory.
func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(root, p)
		if p[len(p)-1] == '/' {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestDetect(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		wantV2  bool
		wantErr bool
	}{
		{"v2", map[string]string{"cgroup.controllers": "cpu memory pids\n"}, true, false},
		{"v1", map[string]string{"memory/memory.limit_in_bytes": "9223372036854771712\n", "pids/": ""}, false, false},
		{"hybrid", map[string]string{"memory/memory.limit_in_bytes": "1\n", "unified/cgroup.controllers": ""}, false, false},
		{"none", map[string]string{"other/": ""}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			writeTree(t, root, tt.files)
			l, err := Detect(root)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Detect: err = %v, want error %v", err, tt.wantErr)
			}
			if err == nil && l.V2 != tt.wantV2 {
				t.Errorf("Detect: V2 = %v, want %v", l.V2, tt.wantV2)
			}
		})
	}
}

func TestPathCleansRel(t *testing.T) {
	l := Layout{Root: "/cg"}
	tests := []struct {
		ctrl, rel, want string
	}{
		{"memory", "hutch/a", "/cg/memory/hutch/a"},
		{"memory", "/hutch/a", "/cg/memory/hutch/a"},
		{"pids", "../../etc", "/cg/pids/etc"},
	}
	for _, tt := range tests {
		if got := l.Path(tt.ctrl, tt.rel); got != tt.want {
			t.Errorf("Path(%q, %q) = %q, want %q", tt.ctrl, tt.rel, got, tt.want)
		}
	}
	if got := (Layout{Root: "/cg", V2: true}).Path("memory", "/hutch/a"); got != "/cg/hutch/a" {
		t.Errorf("v2 Path = %q", got)
	}
}

func TestOOMKillsAndStats(t *testing.T) {
	tests := []struct {
		name      string
		v2        bool
		files     map[string]string
		wantOOM   uint64
		wantHit   bool
		wantStats Stats
	}{
		{
			name: "v1",
			files: map[string]string{
				"memory/memory.limit_in_bytes":             "1\n",
				"memory/hutch/a/memory.oom_control":        "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n",
				"memory/hutch/a/memory.failcnt":            "17\n",
				"memory/hutch/a/memory.usage_in_bytes":     "10485760\n",
				"memory/hutch/a/memory.stat":               "cache 4096\ntotal_inactive_file 1048576\n",
				"cpuacct/hutch/a/cpuacct.usage":            "2500000000\n",
				"pids/hutch/a/pids.current":                "23\n",
				"cpu,cpuacct/hutch/a/cpu.cfs_quota_us":     "100000\n",
				"memory/hutch/b/memory.oom_control":        "oom_kill_disable 0\n",
				"memory/hutch/a/memory.max_usage_in_bytes": "1\n",
			},
			wantOOM:   2,
			wantHit:   true,
			wantStats: Stats{CPUSeconds: 2.5, MemoryBytes: 9 << 20, Pids: 23},
		},
		{
			name: "v2",
			v2:   true,
			files: map[string]string{
				"cgroup.controllers":     "cpu memory pids\n",
				"hutch/a/memory.events":  "low 0\nhigh 0\nmax 5\noom 1\noom_kill 1\noom_group_kill 0\n",
				"hutch/a/memory.current": "20971520\n",
				"hutch/a/memory.stat":    "anon 1\ninactive_file 10485760\n",
				"hutch/a/cpu.stat":       "usage_usec 1500000\nuser_usec 1000000\n",
				"hutch/a/pids.current":   "7\n",
			},
			wantOOM:   1,
			wantHit:   true,
			wantStats: Stats{CPUSeconds: 1.5, MemoryBytes: 10 << 20, Pids: 7},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			writeTree(t, root, tt.files)
			l, err := Detect(root)
			if err != nil {
				t.Fatal(err)
			}
			if l.V2 != tt.v2 {
				t.Fatalf("detected V2=%v, want %v", l.V2, tt.v2)
			}
			n, err := l.OOMKills("/hutch/a")
			if err != nil || n != tt.wantOOM {
				t.Errorf("OOMKills = %d, %v; want %d", n, err, tt.wantOOM)
			}
			hit, err := l.HitMemoryLimit("hutch/a")
			if err != nil || hit != tt.wantHit {
				t.Errorf("HitMemoryLimit = %v, %v; want %v", hit, err, tt.wantHit)
			}
			s, err := l.Stats("hutch/a")
			if err != nil || s != tt.wantStats {
				t.Errorf("Stats = %+v, %v; want %+v", s, err, tt.wantStats)
			}
			if _, err := l.Stats("hutch/missing"); err == nil {
				t.Error("Stats of a missing cgroup: want an error")
			}
		})
	}
}

func TestOOMKillsMissingField(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"memory/memory.limit_in_bytes":      "1\n",
		"memory/hutch/a/memory.oom_control": "oom_kill_disable 0\nunder_oom 0\n",
	})
	l := Layout{Root: root}
	if _, err := l.OOMKills("hutch/a"); err == nil {
		t.Error("OOMKills without an oom_kill line: want an error")
	}
}

func TestRemove(t *testing.T) {
	tests := []struct {
		name  string
		v2    bool
		dirs  []string
		rel   string
		gone  []string
		stays []string
	}{
		{
			name:  "v1 all hierarchies and children",
			dirs:  []string{"memory/hutch/a/child/grand/", "pids/hutch/a/", "cpu,cpuacct/hutch/a/", "memory/hutch/b/", "freezer/"},
			rel:   "hutch/a",
			gone:  []string{"memory/hutch/a", "pids/hutch/a", "cpu,cpuacct/hutch/a"},
			stays: []string{"memory/hutch", "memory/hutch/b", "pids/hutch", "freezer"},
		},
		{
			name:  "v2",
			v2:    true,
			dirs:  []string{"hutch/a/x/", "hutch/b/"},
			rel:   "/hutch/a",
			gone:  []string{"hutch/a"},
			stays: []string{"hutch/b"},
		},
		{
			name:  "missing is fine",
			dirs:  []string{"memory/hutch/"},
			rel:   "hutch/nope",
			stays: []string{"memory/hutch"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			files := map[string]string{}
			for _, d := range tt.dirs {
				files[d] = ""
			}
			writeTree(t, root, files)
			if !tt.v2 {
				// A co-mounted pair reached through a symlink counts once.
				if err := os.Symlink("cpu,cpuacct", filepath.Join(root, "cpu")); err != nil {
					t.Fatal(err)
				}
			}
			l := Layout{Root: root, V2: tt.v2}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := l.Remove(ctx, tt.rel); err != nil {
				t.Fatalf("Remove: %v", err)
			}
			for _, p := range tt.gone {
				if _, err := os.Stat(filepath.Join(root, p)); !os.IsNotExist(err) {
					t.Errorf("%s still exists (err %v)", p, err)
				}
			}
			for _, p := range tt.stays {
				if _, err := os.Stat(filepath.Join(root, p)); err != nil {
					t.Errorf("%s was removed: %v", p, err)
				}
			}
			if l.Exists(tt.rel) {
				t.Errorf("Exists(%q) after Remove", tt.rel)
			}
		})
	}
}

func TestRemoveRefusesRoot(t *testing.T) {
	l := Layout{Root: t.TempDir()}
	for _, rel := range []string{"", "/", "..", "/../"} {
		if err := l.Remove(context.Background(), rel); err == nil {
			t.Errorf("Remove(%q): want an error", rel)
		}
	}
}

func TestRemoveBusyTimesOut(t *testing.T) {
	// A non-empty plain directory stands in for a cgroup that still has
	// tasks: rmdir keeps failing, so Remove must give up when ctx ends.
	root := t.TempDir()
	writeTree(t, root, map[string]string{"memory/hutch/a/file": "x"})
	l := Layout{Root: root}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := l.Remove(ctx, "hutch/a"); err == nil {
		t.Fatal("Remove of a busy cgroup: want an error")
	}
}
