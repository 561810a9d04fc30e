package config

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestRuntimesBlock(t *testing.T) {
	tests := []struct {
		name, yaml     string
		want           GVisor
		wantDeprecated int
		wantErr        string
	}{
		{name: "defaults", want: GVisor{Platform: "systrap", SystrapFastPath: "on"}},
		{name: "block", yaml: "runtimes:\n  gvisor:\n    runsc_path: /opt/runsc\n    platform: ptrace\n    systrap_fast_path: \"off\"\n    debug: true\n",
			want: GVisor{RunscPath: "/opt/runsc", Platform: "ptrace", SystrapFastPath: "off", Debug: true}},
		{name: "deprecated top-level key", yaml: "systrap_fast_path: \"off\"\n",
			want: GVisor{Platform: "systrap", SystrapFastPath: "off"}, wantDeprecated: 1},
		{name: "deprecated key in the seed's worker block", yaml: "workers:\n- name: iii-sandbox\n  config:\n    systrap_fast_path: \"off\"\n",
			want: GVisor{Platform: "systrap", SystrapFastPath: "off"}, wantDeprecated: 1},
		{name: "old and new key both set", yaml: "systrap_fast_path: \"off\"\nruntimes:\n  gvisor:\n    systrap_fast_path: \"on\"\n",
			wantErr: "keep only runtimes.gvisor.systrap_fast_path"},
		{name: "unknown key in the block", yaml: "runtimes:\n  gvisor:\n    runsc: /x\n", wantErr: `line 3: unknown key "runtimes.gvisor.runsc"`},
		{name: "unknown runtime block", yaml: "runtimes:\n  firecracker: {}\n", wantErr: `unknown key "runtimes.firecracker"`},
		{name: "bad platform", yaml: "runtimes:\n  gvisor:\n    platform: kvm2\n", wantErr: `runtimes.gvisor.platform must be one of systrap, ptrace, got "kvm2"`},
		{name: "bad deprecated value names the new key", yaml: "systrap_fast_path: fast\n", wantErr: `runtimes.gvisor.systrap_fast_path must be one of on, off, got "fast"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ok := parseCase(t, tt.yaml, tt.wantErr)
			if !ok {
				return
			}
			if c.Runtimes.GVisor != tt.want || len(c.Deprecated) != tt.wantDeprecated || c.SystrapFastPath != "" {
				t.Errorf("gvisor %+v, deprecated %q, top-level %q; want %+v and %d warnings", c.Runtimes.GVisor, c.Deprecated, c.SystrapFastPath, tt.want, tt.wantDeprecated)
			}
		})
	}
}

func TestRuntimeSettings(t *testing.T) {
	c := Default()
	c.Runtimes.GVisor.RunscPath = "/opt/runsc"
	raw, err := c.RuntimeSettings("gvisor")
	if err != nil {
		t.Fatal(err)
	}
	var g GVisor
	if err := json.Unmarshal(raw, &g); err != nil || g != c.Runtimes.GVisor {
		t.Errorf("settings %s decode to %+v (%v)", raw, g, err)
	}
	if raw, err := c.RuntimeSettings("other"); raw != nil || err != nil {
		t.Errorf("a runtime without a block: %s, %v", raw, err)
	}
}

func TestRuntimeAlias(t *testing.T) {
	c, err := Parse([]byte("runtime: microvm\n"))
	if err != nil || c.DefaultRuntime != "microvm" || c.Runtime != "" || len(c.Deprecated) != 1 {
		t.Fatalf("runtime: microvm parses to default_runtime %q (runtime %q, deprecated %v): %v", c.DefaultRuntime, c.Runtime, c.Deprecated, err)
	}
	if _, err := Parse([]byte("runtime: microvm\ndefault_runtime: gvisor\n")); err == nil {
		t.Error("runtime and default_runtime both set: no error")
	}
	if _, err := Parse([]byte("offered_runtimes: [microvm]\n")); err == nil || !strings.Contains(err.Error(), "offered_runtimes") {
		t.Errorf("offered_runtimes without the default: %v", err)
	}
}

func TestMarshalShowsTheBlockNotTheAlias(t *testing.T) {
	c, err := Parse([]byte("systrap_fast_path: \"off\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	out := string(c.Marshal())
	if !strings.Contains(out, "runtimes:\n  gvisor:\n") || !strings.Contains(out, "systrap_fast_path: \"off\"") || strings.Contains(out, "\nsystrap_fast_path") {
		t.Errorf("Marshal:\n%s", out)
	}
	// What Marshal prints parses back to the same settings.
	back, err := Parse(c.Marshal())
	if err != nil || back.Runtimes != c.Runtimes {
		t.Errorf("round trip: %+v, %v", back.Runtimes, err)
	}
}

func TestBounds(t *testing.T) {
	for _, tt := range []struct {
		cpus, mem uint32
		ok        bool
	}{{1, 32, true}, {256, 1 << 20, true}, {0, 512, false}, {257, 512, false}, {1, 31, false}, {1, 1<<20 + 1, false}} {
		ok := CheckCPUs(tt.cpus) == nil && CheckMemoryMB(tt.mem) == nil
		if ok != tt.ok {
			t.Errorf("cpus %d memory %d: ok %v, want %v", tt.cpus, tt.mem, ok, tt.ok)
		}
	}
	if err := CheckMemoryMB(1); err == nil || err.Error() != "memory_mb must be between 32 and 1048576, got 1" {
		t.Errorf("CheckMemoryMB(1) = %v", err)
	}
}

func TestMicroVMBlock(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       MicroVM
		wantErr    string
	}{
		{name: "defaults", want: MicroVM{Accel: "auto"}},
		{name: "block", yaml: "runtimes:\n  microvm:\n    qemu_path: /opt/qemu\n    kernel: /boot/vmlinuz-x\n    accel: tcg\n",
			want: MicroVM{QEMUPath: "/opt/qemu", Kernel: "/boot/vmlinuz-x", Accel: "tcg"}},
		{name: "bad accel", yaml: "runtimes:\n  microvm:\n    accel: hvf\n", wantErr: `runtimes.microvm.accel must be one of auto, kvm, tcg, got "hvf"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ok := parseCase(t, tt.yaml, tt.wantErr)
			if ok && c.Runtimes.MicroVM != tt.want {
				t.Errorf("microvm %+v, want %+v", c.Runtimes.MicroVM, tt.want)
			}
		})
	}
}
