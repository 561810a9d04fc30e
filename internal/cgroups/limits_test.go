package cgroups

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSetLimits(t *testing.T) {
	const rel = "hutch/abc"
	v1 := map[string]string{
		"memory/memory.limit_in_bytes":                 "9223372036854771712\n",
		"memory/hutch/abc/memory.limit_in_bytes":       "536870912\n",
		"memory/hutch/abc/memory.memsw.limit_in_bytes": "536870912\n",
		"cpu/hutch/abc/cpu.cfs_quota_us":               "100000\n",
		"cpu/hutch/abc/cpu.cfs_period_us":              "100000\n",
	}
	v2 := map[string]string{
		"cgroup.controllers":         "cpu memory pids\n",
		"hutch/abc/memory.max":       "536870912\n",
		"hutch/abc/memory.swap.max":  "0\n",
		"hutch/abc/cpu.max":          "100000 100000\n",
		"hutch/abc/cgroup.procs":     "",
		"hutch/abc/memory.current":   "1\n",
		"hutch/abc/memory.swap.peak": "0\n",
	}
	without := func(files map[string]string, drop string) map[string]string {
		out := map[string]string{}
		for k, v := range files {
			if k != drop {
				out[k] = v
			}
		}
		return out
	}
	tests := []struct {
		name    string
		tree    map[string]string
		lim     Limits
		want    map[string]string // file → content after
		wantErr string
	}{
		{
			name: "v1 lower memory and cpu",
			tree: v1,
			lim:  Limits{MemoryBytes: 256 << 20, CPUQuotaUs: 50000, CPUPeriodUs: 100000},
			want: map[string]string{
				"memory/hutch/abc/memory.limit_in_bytes":       "268435456",
				"memory/hutch/abc/memory.memsw.limit_in_bytes": "268435456",
				"cpu/hutch/abc/cpu.cfs_quota_us":               "50000",
				"cpu/hutch/abc/cpu.cfs_period_us":              "100000",
			},
		},
		{
			name: "v1 raise memory only",
			tree: v1,
			lim:  Limits{MemoryBytes: 1 << 30},
			want: map[string]string{
				"memory/hutch/abc/memory.limit_in_bytes":       "1073741824",
				"memory/hutch/abc/memory.memsw.limit_in_bytes": "1073741824",
				"cpu/hutch/abc/cpu.cfs_quota_us":               "100000\n",
			},
		},
		{
			name: "v1 without swap accounting",
			tree: without(v1, "memory/hutch/abc/memory.memsw.limit_in_bytes"),
			lim:  Limits{MemoryBytes: 128 << 20},
			want: map[string]string{"memory/hutch/abc/memory.limit_in_bytes": "134217728"},
		},
		{
			name: "v2",
			tree: v2,
			lim:  Limits{MemoryBytes: 64 << 20, CPUQuotaUs: 200000, CPUPeriodUs: 100000},
			want: map[string]string{
				"hutch/abc/memory.max":      "67108864",
				"hutch/abc/memory.swap.max": "0",
				"hutch/abc/cpu.max":         "200000 100000",
			},
		},
		{name: "nothing to change", tree: v2, lim: Limits{}, want: map[string]string{"hutch/abc/memory.max": "536870912\n"}},
		{name: "no such cgroup", tree: without(v2, "hutch/abc/memory.max"), lim: Limits{MemoryBytes: 64 << 20}, wantErr: "setting memory limit of cgroup hutch/abc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			writeTree(t, root, tt.tree)
			l, err := Detect(root)
			if err != nil {
				t.Fatal(err)
			}
			err = l.SetLimits(rel, tt.lim)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("SetLimits = %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("SetLimits = %v", err)
			}
			for file, want := range tt.want {
				got, err := os.ReadFile(filepath.Join(root, file))
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != want {
					t.Errorf("%s = %q, want %q", file, got, want)
				}
			}
			if _, err := os.Stat(filepath.Join(root, "memory/hutch/abc/memory.memsw.limit_in_bytes")); tt.tree["memory/hutch/abc/memory.memsw.limit_in_bytes"] == "" && err == nil {
				t.Error("SetLimits created memory.memsw.limit_in_bytes")
			}
		})
	}
}

func TestSetLimitsRefusesRoot(t *testing.T) {
	l := Layout{Root: t.TempDir(), V2: true}
	if err := l.SetLimits("/", Limits{MemoryBytes: 1}); err == nil {
		t.Fatal("SetLimits of the root succeeded")
	}
}
