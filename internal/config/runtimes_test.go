package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/runtime/gvisor"
	"github.com/hutch-dev/hutch/internal/runtime/microvm"
)

// block is runtime name's block of c, decoded.
func block[T any](t *testing.T, c Config, name string) T {
	t.Helper()
	s, err := c.Runtimes.Decode(name)
	if err != nil {
		t.Fatalf("runtimes.%s: %v", name, err)
	}
	p, ok := any(s).(*T)
	if !ok {
		t.Fatalf("runtimes.%s is a %T", name, s)
	}
	return *p
}

func TestRuntimesBlock(t *testing.T) {
	tests := []struct {
		name, yaml     string
		want           gvisor.Settings
		wantDeprecated int
		wantErr        string
	}{
		{name: "defaults", want: gvisor.Settings{Platform: "systrap", SystrapFastPath: "on", RestoreAhead: 2, RestoreAheadSources: 4}},
		{name: "block", yaml: "runtimes:\n  gvisor:\n    runsc_path: /opt/runsc\n    platform: ptrace\n    systrap_fast_path: \"off\"\n    debug: true\n    restore_ahead: 0\n    restore_ahead_sources: 1\n",
			want: gvisor.Settings{RunscPath: "/opt/runsc", Platform: "ptrace", SystrapFastPath: "off", Debug: true, RestoreAheadSources: 1}},
		{name: "deprecated top-level key", yaml: "systrap_fast_path: \"off\"\n",
			want: gvisor.Settings{Platform: "systrap", SystrapFastPath: "off", RestoreAhead: 2, RestoreAheadSources: 4}, wantDeprecated: 1},
		{name: "deprecated key in the seed's worker block", yaml: "workers:\n- name: iii-sandbox\n  config:\n    systrap_fast_path: \"off\"\n",
			want: gvisor.Settings{Platform: "systrap", SystrapFastPath: "off", RestoreAhead: 2, RestoreAheadSources: 4}, wantDeprecated: 1},
		{name: "old and new key both set", yaml: "systrap_fast_path: \"off\"\nruntimes:\n  gvisor:\n    systrap_fast_path: \"on\"\n",
			wantErr: "keep only runtimes.gvisor.systrap_fast_path"},
		{name: "unknown key in the block", yaml: "runtimes:\n  gvisor:\n    runsc: /x\n", wantErr: `line 3: unknown key "runtimes.gvisor.runsc"`},
		{name: "unknown runtime block", yaml: "runtimes:\n  firecracker: {}\n", wantErr: `unknown key "runtimes.firecracker"`},
		{name: "bad platform", yaml: "runtimes:\n  gvisor:\n    platform: kvm2\n", wantErr: `runtimes.gvisor.platform must be one of systrap, ptrace, got "kvm2"`},
		{name: "restore_ahead out of range", yaml: "runtimes:\n  gvisor:\n    restore_ahead: 100\n", wantErr: "restore_ahead must be 0-16"}, // issue 46
		{name: "bad deprecated value names the new key", yaml: "systrap_fast_path: fast\n", wantErr: `runtimes.gvisor.systrap_fast_path must be one of on, off, got "fast"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ok := parseCase(t, tt.yaml, tt.wantErr)
			if !ok {
				return
			}
			if g := block[gvisor.Settings](t, c, "gvisor"); g != tt.want || len(c.Deprecated) != tt.wantDeprecated || c.SystrapFastPath != "" {
				t.Errorf("gvisor %+v, deprecated %q, top-level %q; want %+v and %d warnings", g, c.Deprecated, c.SystrapFastPath, tt.want, tt.wantDeprecated)
			}
		})
	}
}

func TestRuntimeSettings(t *testing.T) {
	c := Default()
	if err := c.Runtimes.Set("gvisor", "runsc_path", "/opt/runsc"); err != nil {
		t.Fatal(err)
	}
	raw, err := c.RuntimeSettings("gvisor")
	if err != nil {
		t.Fatal(err)
	}
	var g gvisor.Settings
	if err := json.Unmarshal(raw, &g); err != nil || g != block[gvisor.Settings](t, c, "gvisor") || g.RunscPath != "/opt/runsc" {
		t.Errorf("settings %s decode to %+v (%v)", raw, g, err)
	}
	// The JSON keys are those the runtime decodes (the crash watchdog
	// gets them over a pipe): unchanged.
	if want := `{"runsc_path":"/opt/runsc","platform":"systrap","systrap_fast_path":"on","debug":false,"restore_ahead":2,"restore_ahead_sources":4}`; string(raw) != want {
		t.Errorf("settings %s, want %s", raw, want)
	}
	if raw, err := c.RuntimeSettings("microvm"); err != nil || string(raw) != `{"accel":"auto"}` {
		t.Errorf("microvm settings %s, %v", raw, err)
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
	if !strings.Contains(out, "\nruntimes:\n") || !strings.Contains(out, "\n  gvisor:\n    platform: systrap\n") || !strings.Contains(out, "systrap_fast_path: \"off\"") || strings.Contains(out, "\nsystrap_fast_path") {
		t.Errorf("Marshal:\n%s", out)
	}
	// What Marshal prints parses back to the same settings.
	back, err := Parse(c.Marshal())
	if err != nil {
		t.Fatalf("round trip: %v", err)
	}
	for _, name := range []string{"gvisor", "microvm"} {
		a, _ := c.RuntimeSettings(name)
		b, _ := back.RuntimeSettings(name)
		if string(a) != string(b) {
			t.Errorf("round trip of runtimes.%s: %s, want %s", name, b, a)
		}
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
		want       microvm.Settings
		wantErr    string
	}{
		{name: "defaults", want: microvm.Settings{Accel: "auto"}},
		{name: "block", yaml: "runtimes:\n  microvm:\n    qemu_path: /opt/qemu\n    kernel: /boot/vmlinuz-x\n    accel: tcg\n",
			want: microvm.Settings{QEMUPath: "/opt/qemu", Kernel: "/boot/vmlinuz-x", Accel: "tcg"}},
		{name: "bad accel", yaml: "runtimes:\n  microvm:\n    accel: hvf\n", wantErr: `runtimes.microvm.accel must be one of auto, kvm, tcg, got "hvf"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ok := parseCase(t, tt.yaml, tt.wantErr)
			if !ok {
				return
			}
			if m := block[microvm.Settings](t, c, "microvm"); m != tt.want {
				t.Errorf("microvm %+v, want %+v", m, tt.want)
			}
		})
	}
}

// sizeSettings is the block of a runtime only these tests register
// (runtimes.config-test): a backend's block needs nothing in this package.
type sizeSettings struct {
	Size int `yaml:"size" json:"size"`
}

func (s *sizeSettings) Check() []error {
	if s.Size < 1 {
		return []error{fmt.Errorf("size must be at least 1, got %d", s.Size)}
	}
	return nil
}

func init() {
	runtime.Register(runtime.Registration{
		Name:     "config-test",
		New:      func(runtime.Options) (runtime.Runtime, error) { return nil, errors.New("never started") },
		Settings: func() runtime.Settings { return &sizeSettings{Size: 3} },
	})
}

// TestABackendOwnsItsBlock: a runtime registered with a block of settings
// gets its key under runtimes, its defaults, strict keys with their line,
// typed values and its own checks, with nothing added to this package.
func TestABackendOwnsItsBlock(t *testing.T) {
	tests := []struct {
		name, yaml, wantJSON, wantErr string
	}{
		{name: "defaults", wantJSON: `{"size":3}`},
		{name: "block", yaml: "runtimes:\n  config-test:\n    size: 5\n", wantJSON: `{"size":5}`},
		{name: "inside the seed's worker block", yaml: "workers:\n- name: iii-sandbox\n  config:\n    runtimes:\n      config-test: {size: 7}\n", wantJSON: `{"size":7}`},
		{name: "its check", yaml: "runtimes:\n  config-test:\n    size: 0\n", wantErr: "runtimes.config-test.size must be at least 1, got 0"},
		{name: "unknown key", yaml: "runtimes:\n  config-test:\n    sise: 1\n", wantErr: `line 3: unknown key "runtimes.config-test.sise"`},
		{name: "wrong type", yaml: "runtimes:\n  config-test:\n    size: many\n", wantErr: "line 3: runtimes.config-test.size must be a whole number, not many"},
		{name: "not a mapping", yaml: "runtimes:\n  config-test: 5\n", wantErr: "line 2: runtimes.config-test must be a mapping, not 5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ok := parseCase(t, tt.yaml, tt.wantErr)
			if !ok {
				return
			}
			raw, err := c.RuntimeSettings("config-test")
			if err != nil || string(raw) != tt.wantJSON {
				t.Errorf("settings %s (%v), want %s", raw, err, tt.wantJSON)
			}
			if out := string(c.Marshal()); !strings.Contains(out, "\n  config-test:\n    size: ") {
				t.Errorf("Marshal shows no config-test block:\n%s", out)
			}
		})
	}
	// A flag sets a key as the file would; Validate checks it.
	c := Default()
	if err := c.Runtimes.Set("config-test", "size", -1); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "runtimes.config-test.size must be at least 1, got -1") {
		t.Errorf("a bad value set: %v", err)
	}
}
