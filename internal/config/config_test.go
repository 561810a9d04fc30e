package config

import (
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		check   func(t *testing.T, c Config)
		wantErr string
	}{
		{name: "empty file gives defaults", yaml: "", check: func(t *testing.T, c Config) {
			if !c.AutoInstall || c.MaxConcurrentSandboxes != 32 || len(c.ImageAllowlist) != len(DefaultAllowed) {
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
		{name: "per-owner jobs over the total", yaml: "jobs_max_running: 2\njobs_max_running_per_owner: 3\n", wantErr: "jobs_max_running_per_owner must be between 0 (one less than jobs_max_running) and jobs_max_running (2), got 3"},
		{name: "preset shadowing", yaml: "custom_images:\n  python: ghcr.io/evil/python:1\n", wantErr: `custom_images key "python" shadows`},
		{name: "worker block without sandbox entry", yaml: "workers:\n- name: other\n", wantErr: "no entry named iii-sandbox"},
		{name: "unknown key in worker block", yaml: "workers:\n- name: iii-sandbox\n  config:\n    bogus: 1\n", wantErr: `line 4: unknown key "bogus"`},
		{name: "not a mapping", yaml: "- a\n- b\n", wantErr: "must be a mapping"},
		{name: "timeouts inconsistent", yaml: "default_exec_timeout_ms: 600000\n", wantErr: "default_exec_timeout_ms must be between"},
		{name: "unknown MCP tool set", yaml: "mcp_tools: default,bogus\n", wantErr: `mcp_tools: unknown tool set "bogus"`},
		{name: "MCP tool areas", yaml: "mcp_tools: default,env,volumes\n", check: func(t *testing.T, c Config) {
			if c.MCPTools != "default,env,volumes" {
				t.Errorf("mcp_tools = %q", c.MCPTools)
			}
		}},
		{name: "crash watchdog on by default", yaml: "", check: func(t *testing.T, c Config) {
			if !c.CrashWatchdog {
				t.Error("crash_watchdog is off by default")
			}
		}},
		{name: "crash watchdog off", yaml: "crash_watchdog: false\n", check: func(t *testing.T, c Config) {
			if c.CrashWatchdog {
				t.Error("crash_watchdog: false left it on")
			}
		}},
		{name: "crash watchdog not a boolean", yaml: "crash_watchdog: sometimes\n", wantErr: "line 1"},
		{name: "client bounds", yaml: "max_connections: 8\nhttp_read_timeout_secs: 2\nchannel_buffer_mb: 16\nchannel_buffer_per_owner_mb: 8\n", check: func(t *testing.T, c Config) {
			if read, write, idle := c.HTTPTimeouts(); c.MaxConnections != 8 || read != 2*time.Second || write != time.Minute || idle != 2*time.Minute ||
				c.ChannelBufferMB != 16 || c.ChannelBufferPerOwnerMB != 8 || c.EngineSessionsPerOwner != 64 {
				t.Errorf("got %+v", c)
			}
		}},
		{name: "no connections", yaml: "max_connections: 0\n", wantErr: "max_connections must be between"},
		{name: "zero timeout", yaml: "http_idle_timeout_secs: 0\n", wantErr: "http_idle_timeout_secs must be between"},
		{name: "no sessions", yaml: "engine_sessions_per_owner: 0\n", wantErr: "engine_sessions_per_owner must be between"},
		{name: "owner share above the budget", yaml: "channel_buffer_mb: 8\nchannel_buffer_per_owner_mb: 16\n", wantErr: "channel_buffer_per_owner_mb must be between 4 and channel_buffer_mb (8)"},
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
			c, ok := parseCase(t, tt.yaml, tt.wantErr)
			if !ok {
				return
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

func TestWebKeys(t *testing.T) {
	c, err := Parse([]byte("allowed_hosts: [hutch.example.com, '*.lan.example', 10.0.0.5]\nallowed_origins: ['http://localhost:5173']\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.AllowedHosts) != 3 || len(c.AllowedOrigins) != 1 {
		t.Errorf("got hosts %v, origins %v", c.AllowedHosts, c.AllowedOrigins)
	}
	if d := Default(); len(d.AllowedHosts) != 0 || len(d.AllowedOrigins) != 0 {
		t.Errorf("defaults allow %v and %v, want loopback only", d.AllowedHosts, d.AllowedOrigins)
	}
	for yaml, want := range map[string]string{
		"allowed_hosts: ['hutch.example.com:3111']\n": `allowed_hosts: "hutch.example.com:3111"`,
		"allowed_origins: [localhost:5173]\n":         `allowed_origins: "localhost:5173"`,
	} {
		if _, err := Parse([]byte(yaml)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an error with %q", yaml, err, want)
		}
	}
}

// parseCase parses yaml; with wantErr set it checks that parsing fails
// with an error containing it and returns false, otherwise it fails t on
// an error and returns the config.
func parseCase(t *testing.T, yaml, wantErr string) (Config, bool) {
	t.Helper()
	c, err := Parse([]byte(yaml))
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("err = %v, want it to contain %q", err, wantErr)
		}
		return Config{}, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return c, true
}
