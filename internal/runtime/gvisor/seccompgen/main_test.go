package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gvisor.dev/gvisor/pkg/seccomp/precompiledseccomp"
)

// original is the part of gVisor's filter_precompiled.go that rewrite
// changes.
const original = `package filter

const PrecompilationDisabledAtBuildTime = true

func registerPrograms() {
	programs := make(map[string]precompiledseccomp.Program)
	precompiledPrograms = programs
}
`

func TestRewrite(t *testing.T) {
	programs := []precompiledseccomp.Program{
		{Name: `Platform="systrap" X=1`, Bytecode32: []uint32{1, 2}},
		{Name: `Platform="ptrace" X=1`, Bytecode32: []uint32{3}},
	}
	keepSystrap := func(n string) bool { return hasAll(n, `Platform="systrap"`) }
	tests := []struct {
		name    string
		src     string
		keep    func(string) bool
		want    []string // substrings of the result
		wantErr string
	}{
		{
			name: "registers the kept programs",
			src:  original,
			keep: keepSystrap,
			want: []string{"const PrecompilationDisabledAtBuildTime = false", `programs["Platform=\"systrap\" X=1"] = precompiledseccomp.Program{`, "0x00000002,"},
		},
		{name: "nothing kept", src: original, keep: func(string) bool { return false }, wantErr: "none of the 2 precompiled programs"},
		{name: "gVisor changed the file", src: strings.Replace(original, "= true", "= maybe", 1), keep: keepSystrap, wantErr: "has gVisor changed it?"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			rel := "runsc/boot/filter/filter_precompiled.go"
			path := filepath.Join(dir, rel)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(tt.src), 0o444); err != nil {
				t.Fatal(err)
			}
			// The module cache's directories are read-only.
			if err := os.Chmod(filepath.Dir(path), 0o555); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(filepath.Dir(path), 0o755) })
			err := rewrite(dir, target{rel: rel, keep: tt.keep, programs: func() ([]precompiledseccomp.Program, error) { return programs, nil }})
			got, _ := os.ReadFile(path)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("rewrite = %v, want an error containing %q", err, tt.wantErr)
				}
				if string(got) != tt.src {
					t.Error("a failed rewrite changed the file")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(got), w) {
					t.Errorf("result lacks %q:\n%s", w, got)
				}
			}
			if strings.Contains(string(got), "ptrace") {
				t.Error("a program of another platform was registered")
			}
		})
	}
}

func TestTargetsKeepHutchConfigurations(t *testing.T) {
	hutch := `GOARCH="amd64" Platform="systrap" HostNetwork=false HostNetworkRawSockets=false HostFilesystem=true ProfileEnable=false Instrumentation=false NVProxy=false NVProxyCaps= TPUProxy=false RDMAProxy=false CgoEnabled=false PluginNetwork=false`
	gpu := strings.Replace(hutch, "NVProxy=false", "NVProxy=true", 1)
	if !targets[0].keep(hutch) || targets[0].keep(gpu) {
		t.Error("the Sentry's target keeps the wrong programs")
	}
	gofer := `GOARCH="amd64" UDSOpenEnabled=false UDSCreateEnabled=false ProfileEnabled=false DirectFS=true LisafsNeeded=true Instrumentation=false CgoEnabled=false ExtraRules=false`
	if !targets[1].keep(gofer) || targets[1].keep(strings.Replace(gofer, "CgoEnabled=false", "CgoEnabled=true", 1)) {
		t.Error("the gofer's target keeps the wrong programs")
	}
}
