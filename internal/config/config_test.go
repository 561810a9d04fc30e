package config

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		check   func(t *testing.T, c Config)
		wantErr string
	}{
		{name: "empty file gives defaults", yaml: "", check: func(t *testing.T, c Config) {
			if !c.AutoInstall || c.MaxConcurrentSandboxes != 32 || len(c.ImageAllowlist) != 2 {
				t.Errorf("defaults not applied: %+v", c)
			}
		}},
		{name: "bare keys", yaml: "max_concurrent_sandboxes: 4\nauto_install: false\n", check: func(t *testing.T, c Config) {
			if c.MaxConcurrentSandboxes != 4 || c.AutoInstall {
				t.Errorf("got %+v", c)
			}
			if c.DefaultMemoryMB != 512 {
				t.Errorf("unset key lost its default: %d", c.DefaultMemoryMB)
			}
		}},
		{name: "seed worker block", yaml: `workers:
- name: iii-sandbox
  config:
    auto_install: true
    image_allowlist:
    - python
    default_idle_timeout_secs: 60
    per_image_caps:
      python: {max_cpus: 2, max_memory_mb: 1024}
`, check: func(t *testing.T, c Config) {
			if c.DefaultIdleTimeoutSecs != 60 || len(c.ImageAllowlist) != 1 || c.PerImageCaps["python"].MaxCPUs != 2 {
				t.Errorf("got %+v", c)
			}
		}},
		{name: "empty allowlist denies all", yaml: "image_allowlist: []\n", check: func(t *testing.T, c Config) {
			if len(c.ImageAllowlist) != 0 {
				t.Errorf("allowlist = %v", c.ImageAllowlist)
			}
		}},
		{name: "unknown key with line", yaml: "auto_install: true\nmax_sandboxes: 3\n", wantErr: `line 2: unknown key "max_sandboxes"`},
		{name: "typo suggestion", yaml: "maxConcurrentSandboxes: 3\n", wantErr: `did you mean "max_concurrent_sandboxes"`},
		{name: "nested unknown key", yaml: "per_image_caps:\n  python:\n    max_cpu: 2\n", wantErr: `line 3: unknown key "per_image_caps.python.max_cpu"`},
		{name: "wrong type with line", yaml: "max_concurrent_sandboxes: lots\n", wantErr: "line 1"},
		{name: "negative limit", yaml: "default_cpus: -1\n", wantErr: "line 1"},
		{name: "absurd limit names field", yaml: "max_concurrent_sandboxes: 0\n", wantErr: "max_concurrent_sandboxes must be between"},
		{name: "preset shadowing", yaml: "custom_images:\n  python: ghcr.io/evil/python:1\n", wantErr: `custom_images key "python" shadows`},
		{name: "worker block without sandbox entry", yaml: "workers:\n- name: other\n", wantErr: "no entry named iii-sandbox"},
		{name: "unknown key in worker block", yaml: "workers:\n- name: iii-sandbox\n  config:\n    bogus: 1\n", wantErr: `line 4: unknown key "bogus"`},
		{name: "not a mapping", yaml: "- a\n- b\n", wantErr: "must be a mapping"},
		{name: "timeouts inconsistent", yaml: "default_exec_timeout_ms: 600000\n", wantErr: "default_exec_timeout_ms must be between"},
		{name: "hardening defaults", yaml: "", check: func(t *testing.T, c Config) {
			if c.MaxImageUnpackedMB != 8192 || !c.BlockPrivateNetworks {
				t.Errorf("max_image_unpacked_mb %d, block_private_networks %v; want 8192, true", c.MaxImageUnpackedMB, c.BlockPrivateNetworks)
			}
		}},
		{name: "hardening keys", yaml: "max_image_unpacked_mb: 100\nblock_private_networks: false\n", check: func(t *testing.T, c Config) {
			if c.MaxImageUnpackedMB != 100 || c.BlockPrivateNetworks {
				t.Errorf("max_image_unpacked_mb %d, block_private_networks %v", c.MaxImageUnpackedMB, c.BlockPrivateNetworks)
			}
		}},
		{name: "unpack bound too small", yaml: "max_image_unpacked_mb: 1\n", wantErr: "max_image_unpacked_mb must be between 64 and"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.yaml))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}

func TestDefaultIsValid(t *testing.T) {
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}
