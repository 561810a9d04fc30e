package config

import (
	"maps"
	"strings"
	"testing"
)

func TestWarmPool(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       map[string]int
		// wantOff: the automatic pool is off.
		wantOff bool
		wantErr []string // substrings of the error
	}{
		{name: "none pinned by default, automatic", yaml: "", want: nil},
		{name: "absent key", yaml: "max_concurrent_sandboxes: 8\n", want: nil},
		{name: "null is absent", yaml: "warm_pool:\n", want: nil},
		{name: "empty map turns it off", yaml: "warm_pool: {}\n", want: map[string]int{}, wantOff: true},
		{name: "empty map in the seed's block", yaml: "workers:\n  - name: iii-sandbox\n    config:\n      warm_pool: {}\n", want: map[string]int{}, wantOff: true},
		{name: "warm_pool_auto false", yaml: "warm_pool_auto: false\n", want: nil, wantOff: true},
		{name: "pinned and automatic off", yaml: "warm_pool_auto: false\nwarm_pool: {python: 2}\n", want: map[string]int{"python": 2}, wantOff: true},
		{name: "empty map and auto true", yaml: "warm_pool: {}\nwarm_pool_auto: true\n", wantErr: []string{"line 1", "warm_pool: {} turns the warm pool off"}},
		{name: "presets", yaml: "warm_pool: {python: 2, node: 1}\n", want: map[string]int{"python": 2, "node": 1}},
		{name: "zero is allowed", yaml: "warm_pool: {python: 0}\n", want: map[string]int{"python": 0}},
		{name: "warm_pool_max", yaml: "warm_pool_max: 0\n", wantErr: []string{"warm_pool_max must be between 1 and 10000, got 0"}},
		{name: "warm_pool_memory_mb", yaml: "warm_pool_memory_mb: -1\n", wantErr: []string{"warm_pool_memory_mb must be between 0 and 1048576, got -1"}},
		{name: "max_concurrent_boots", yaml: "max_concurrent_boots: -2\n", wantErr: []string{"max_concurrent_boots must be between 0 (the host's CPUs) and 1024, got -2"}},
		{
			name: "custom image",
			yaml: "custom_images: {alpine: alpine:3.20}\nimage_allowlist: [python, alpine]\nwarm_pool: {alpine: 1}\n",
			want: map[string]int{"alpine": 1},
		},
		{
			name: "inside the seed's worker block",
			yaml: "workers:\n  - name: iii-sandbox\n    config:\n      warm_pool: {node: 3}\n",
			want: map[string]int{"node": 3},
		},
		{name: "unknown image", yaml: "warm_pool: {ruby: 1}\n", wantErr: []string{"warm_pool.ruby names no catalog image"}},
		{name: "not allowlisted", yaml: "image_allowlist: [python]\nwarm_pool: {node: 1}\n", wantErr: []string{"warm_pool.node: image_allowlist does not allow node"}},
		{name: "negative", yaml: "warm_pool: {python: -1}\n", wantErr: []string{"warm_pool.python must be at least 0, got -1"}},
		{name: "not a number", yaml: "warm_pool: {python: lots}\n", wantErr: []string{"line 1", "warm_pool.python must be a whole number, not lots"}},
		{name: "not a mapping", yaml: "warm_pool: [python]\n", wantErr: []string{"line 1", "map[string]int"}},
		{
			name:    "over capacity",
			yaml:    "max_concurrent_sandboxes: 2\nwarm_pool: {python: 2, node: 1}\n",
			wantErr: []string{"warm_pool keeps 3 sandboxes ready, more than max_concurrent_sandboxes (2)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.yaml))
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatal("no error")
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(c.WarmPool, tt.want) {
				t.Errorf("warm_pool = %v, want %v", c.WarmPool, tt.want)
			}
			if c.WarmPoolAuto == tt.wantOff {
				t.Errorf("warm_pool_auto = %v, want %v", c.WarmPoolAuto, !tt.wantOff)
			}
			// What --print-config shows reads back the same.
			back, err := Parse(c.Marshal())
			if err != nil {
				t.Fatalf("the marshalled config does not parse: %v", err)
			}
			if back.WarmPoolAuto != c.WarmPoolAuto || len(back.WarmPool) != len(c.WarmPool) {
				t.Errorf("marshalled and read back: warm_pool %v auto %v, want %v %v", back.WarmPool, back.WarmPoolAuto, c.WarmPool, c.WarmPoolAuto)
			}
		})
	}
}
