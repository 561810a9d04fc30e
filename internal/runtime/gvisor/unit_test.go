package gvisor

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/hutch-dev/hutch/internal/runtime"
)

func TestOCISpec(t *testing.T) {
	base := runtime.Spec{ID: "0123456789abcdef", Image: runtime.Artifact{Kind: runtime.ArtifactDir, Path: "/img"}, AgentPath: "/opt/hutch-agent", Hostname: "box"}
	i64 := func(v int64) *int64 { return &v }
	u64 := func(v uint64) *uint64 { return &v }
	tests := []struct {
		name string
		edit func(*runtime.Spec)
		want specs.LinuxResources
	}{
		{"no limits", func(*runtime.Spec) {}, specs.LinuxResources{}},
		{
			"all limits",
			func(s *runtime.Spec) { s.CPUs, s.MemoryMB, s.PidsLimit = 2, 64, 100 },
			specs.LinuxResources{
				Memory: &specs.LinuxMemory{Limit: i64(64 << 20), Swap: i64(64 << 20)},
				CPU:    &specs.LinuxCPU{Quota: i64(200000), Period: u64(100000)},
				Pids:   &specs.LinuxPids{Limit: 100},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := base
			tt.edit(&spec)
			got := ociSpec(spec)
			if got.Version != "1.2.1" {
				t.Errorf("ociVersion = %q; runtime-spec must stay at v1.2.1 for gVisor", got.Version)
			}
			if !equalJSON(t, got.Linux.Resources, &tt.want) {
				t.Errorf("resources = %s, want %s", mustJSON(t, got.Linux.Resources), mustJSON(t, &tt.want))
			}
			if got.Linux.CgroupsPath != "/hutch/"+spec.ID {
				t.Errorf("cgroupsPath = %q", got.Linux.CgroupsPath)
			}
			if got.Root.Path != "rootfs" || got.Root.Readonly {
				t.Errorf("root = %+v; the overlay needs a writable root", got.Root)
			}
			if !slices.Equal(got.Process.Args, []string{"/.hutch/hutch-agent"}) || got.Process.Cwd != "/" ||
				got.Process.User.UID != 0 || got.Process.Terminal || len(got.Process.Env) != 1 {
				t.Errorf("process = %+v", got.Process)
			}
			for _, c := range []string{"CAP_SETUID", "CAP_SETGID", "CAP_KILL", "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER"} {
				if !slices.Contains(got.Process.Capabilities.Effective, c) || !slices.Contains(got.Process.Capabilities.Bounding, c) {
					t.Errorf("capability %s missing", c)
				}
			}
			if slices.Contains(got.Process.Capabilities.Bounding, "CAP_SYS_ADMIN") {
				t.Error("CAP_SYS_ADMIN granted")
			}
			var agentMount *specs.Mount
			var dests []string
			for i, m := range got.Mounts {
				dests = append(dests, m.Destination)
				if m.Destination == runtime.AgentPath {
					agentMount = &got.Mounts[i]
				}
			}
			for _, d := range []string{"/proc", "/dev", "/dev/pts", "/dev/shm", "/sys"} {
				if !slices.Contains(dests, d) {
					t.Errorf("mount %s missing", d)
				}
			}
			if agentMount == nil || agentMount.Source != "/opt/hutch-agent" || !slices.Contains(agentMount.Options, "ro") {
				t.Errorf("agent mount = %+v", agentMount)
			}
			var ns []specs.LinuxNamespaceType
			for _, n := range got.Linux.Namespaces {
				ns = append(ns, n.Type)
			}
			for _, want := range []specs.LinuxNamespaceType{specs.PIDNamespace, specs.IPCNamespace, specs.UTSNamespace, specs.MountNamespace, specs.NetworkNamespace} {
				if !slices.Contains(ns, want) {
					t.Errorf("namespace %s missing", want)
				}
			}
			if got.Hostname != "box" {
				t.Errorf("hostname = %q", got.Hostname)
			}
		})
	}
	noName := base
	noName.Hostname = ""
	if got := ociSpec(noName).Hostname; got != "0123456789ab" {
		t.Errorf("default hostname = %q", got)
	}
}

func TestMountPoints(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mountinfo")
	content := `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
36 22 8:1 /img /var/lib/hutch/sandboxes/a/rootfs ro,nosuid,nodev shared:1 - ext4 /dev/sda1 rw
37 22 8:1 /x /var/lib/hutch/sandboxes/with\040space/rootfs ro - ext4 /dev/sda1 rw
`
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := mountPoints(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/", "/var/lib/hutch/sandboxes/a/rootfs", "/var/lib/hutch/sandboxes/with space/rootfs"}
	if !slices.Equal(got, want) {
		t.Errorf("mountPoints = %q, want %q", got, want)
	}
}

func TestIsSandboxProcess(t *testing.T) {
	const root, id = "/state/runsc", "abc"
	tests := []struct {
		args string
		want bool
	}{
		{"runsc-sandbox --root=/state/runsc --platform=systrap boot --bundle=/b abc", true},
		{"runsc-gofer --network=none --root=/state/runsc gofer --bundle /b abc", true},
		{"/usr/bin/runsc --root /state/runsc --platform=systrap run --detach --bundle /b abc", true},
		{"runsc-sandbox --root=/other/runsc boot abc", false},
		{"runsc-sandbox --root=/state/runsc boot abcd", false},
		{"sleep abc --root=/state/runsc abc", false},
	}
	for _, tt := range tests {
		if got := isSandboxProcess(strings.Fields(tt.args), root, id); got != tt.want {
			t.Errorf("isSandboxProcess(%q) = %v, want %v", tt.args, got, tt.want)
		}
	}
}

func TestRunscLogErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, content string
		want          []string
	}{
		{"json", `{"msg":"error setting up FS: opening /x: no such file","level":"error","time":"t"}{"msg":"running container: EOF\n","level":"error"}`,
			[]string{"error setting up FS: opening /x: no such file", "running container: EOF"}},
		{"text", "W1122 first\nW1122 second\n", []string{"W1122 first", "W1122 second"}},
		{"empty", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, tt.name)
			if err := os.WriteFile(p, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := runscLogErrors(p); !slices.Equal(got, tt.want) {
				t.Errorf("runscLogErrors = %q, want %q", got, tt.want)
			}
		})
	}
	if got := runscLogErrors(filepath.Join(dir, "missing")); got != nil {
		t.Errorf("missing file: %q", got)
	}
}

func TestCheckID(t *testing.T) {
	for id, ok := range map[string]bool{
		"0b4c3c64-2a4e-4f36-9f5e-0d5f2b2f6f55": true,
		"hutch_1.a":                            true,
		"":                                     false,
		"../x":                                 false,
		"a/b":                                  false,
		".hidden":                              false,
		strings.Repeat("a", 200):               false,
	} {
		if err := checkID(id); (err == nil) != ok {
			t.Errorf("checkID(%q) = %v, want ok=%v", id, err, ok)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func equalJSON(t *testing.T, a, b any) bool { return mustJSON(t, a) == mustJSON(t, b) }

func TestBootArgs(t *testing.T) {
	spec := runtime.Spec{ID: "sb1", WritableLayerMB: 64}
	for _, off := range []bool{false, true} {
		r := &Runtime{settings: *DefaultSettings()}
		if off {
			r.settings.SystrapFastPath = FastPathOff
		}
		args := r.bootArgs(spec, "/state/sb1", "")
		if got := slices.Contains(args, "--systrap-disable-fast-path"); got != off {
			t.Errorf("fast path off %v: args %v", off, args)
		}
		if i := slices.Index(args, "run"); i < 0 || !slices.Equal(args[i:], []string{"run", "--detach", "--bundle", "/state/sb1", "sb1"}) {
			t.Errorf("args %v do not end with the run command", args)
		}
		if !slices.Contains(args, "--platform=systrap") || !slices.Contains(args, "--network=none") {
			t.Errorf("args %v lack the platform or network", args)
		}
	}
}

// TestRestoreArgsNameTheSentryPid: a restore asks runsc for the Sentry's
// pid in the bundle, which relink signals directly (issue 46); a missing
// or garbled file is 0, which relinks through runsc kill.
func TestRestoreArgsNameTheSentryPid(t *testing.T) {
	r := &Runtime{settings: *DefaultSettings()}
	args := r.bootArgs(runtime.Spec{ID: "sb1"}, "/state/sb1", "/snap")
	want := []string{"restore", "--image-path", "/snap", "--detach", "--pid-file", "/state/sb1/" + sentryPidFile, "--bundle", "/state/sb1", "sb1"}
	if i := slices.Index(args, "restore"); i < 0 || !slices.Equal(args[i:], want) {
		t.Errorf("restore args %v, want them to end with %v", args, want)
	}
	dir := t.TempDir()
	if pid := sentryPid(dir); pid != 0 {
		t.Errorf("no pid file: %d", pid)
	}
	for content, want := range map[string]int{"4242\n": 4242, "x1": 0, "-5": 0, "": 0} {
		if err := os.WriteFile(filepath.Join(dir, sentryPidFile), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if pid := sentryPid(dir); pid != want {
			t.Errorf("pid file %q: %d, want %d", content, pid, want)
		}
	}
}
