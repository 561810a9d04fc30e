package cgroups

import "testing"

func TestPidsLimitHits(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		want    uint64
		wantErr bool
	}{
		{"v1", map[string]string{
			"memory/memory.limit_in_bytes": "1\n",
			"pids/hutch/a/pids.events":     "max 12\n",
		}, 12, false},
		{"v2", map[string]string{
			"cgroup.controllers":    "memory pids\n",
			"hutch/a/pids.events":   "max 3\n",
			"hutch/a/pids.current":  "7\n",
			"hutch/b/pids.events":   "max 0\n",
			"hutch/a/memory.events": "max 0\n",
		}, 3, false},
		{"never hit", map[string]string{
			"cgroup.controllers":  "pids\n",
			"hutch/a/pids.events": "max 0\n",
		}, 0, false},
		{"missing cgroup", map[string]string{
			"cgroup.controllers": "pids\n",
		}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			writeTree(t, root, tt.files)
			l, err := Detect(root)
			if err != nil {
				t.Fatal(err)
			}
			n, err := l.PidsLimitHits("hutch/a")
			if n != tt.want || (err != nil) != tt.wantErr {
				t.Fatalf("PidsLimitHits = %d, %v; want %d (error %v)", n, err, tt.want, tt.wantErr)
			}
		})
	}
}
