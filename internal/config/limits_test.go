package config

import (
	"strings"
	"testing"
)

func TestLimitsNameTheField(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string // substrings of the error
	}{
		{"negative idle timeout", "default_idle_timeout_secs: -1\n", []string{"line 1", "default_idle_timeout_secs must be a whole number", "-1"}},
		{"zero idle timeout", "default_idle_timeout_secs: 0\n", []string{"default_idle_timeout_secs must be at least 1"}},
		{"absurd idle timeout", "default_idle_timeout_secs: 99999999999\n", []string{"default_idle_timeout_secs must be at most 604800"}},
		{"negative exec cap", "max_concurrent_exec_per_sandbox: -1\n", []string{"max_concurrent_exec_per_sandbox must be between 1 and 1024, got -1"}},
		{"zero exec cap", "max_concurrent_exec_per_sandbox: 0\n", []string{"max_concurrent_exec_per_sandbox must be between"}},
		{"negative sandboxes", "max_concurrent_sandboxes: -3\n", []string{"max_concurrent_sandboxes must be between 1 and 10000, got -3"}},
		{"absurd sandboxes", "max_concurrent_sandboxes: 1000000\n", []string{"max_concurrent_sandboxes must be between"}},
		{"absurd exec timeout", "max_exec_timeout_ms: 18446744073709551615\n", []string{"max_exec_timeout_ms must be at most 86400000"}},
		{"negative exec timeout", "default_exec_timeout_ms: -5\n", []string{"line 1", "default_exec_timeout_ms must be a whole number", "-5"}},
		{"absurd retention", "stopped_retention_secs: 99999999999\n", []string{"stopped_retention_secs must be at most"}},
		{"tiny pids limit", "pids_limit: 10\n", []string{"pids_limit must be between 64 and 4194304, got 10"}},
		{"negative pids limit", "pids_limit: -1\n", []string{"pids_limit must be between"}},
		{"absurd pids limit", "pids_limit: 100000000\n", []string{"pids_limit must be between"}},
		{"tiny writable layer", "writable_layer_mb: 1\n", []string{"writable_layer_mb must be between 16 and 1048576, got 1"}},
		{"negative writable layer", "writable_layer_mb: -1\n", []string{"writable_layer_mb must be a whole number"}},
		{"cpus over uint32", "default_cpus: 99999999999\n", []string{"default_cpus must be a whole number from 0 to 4294967295"}},
		{"absurd cpus", "default_cpus: 1000\n", []string{"default_cpus must be between 1 and 256, got 1000"}},
		{"negative cap", "per_image_caps:\n  python:\n    max_memory_mb: -1\n", []string{"line 3", "per_image_caps.python.max_memory_mb must be a whole number"}},
		{"wrong type", "auto_install: maybe\n", []string{"auto_install must be true or false, not maybe"}},
		{"short token", "api_tokens:\n  alice: abc\n", []string{"api_tokens.alice", "at least 16 bytes"}},
		{"shared token", "api_tokens:\n  alice: 0123456789abcdef0\n  bob: 0123456789abcdef0\n", []string{"api_tokens.bob", "owner alice"}},
		{"unknown fast path", "systrap_fast_path: fast\n", []string{`systrap_fast_path must be one of on, off, got "fast"`}},
		{"boolean fast path", "systrap_fast_path: true\n", []string{`systrap_fast_path must be one of on, off, got "true"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestLimitsAccepted(t *testing.T) {
	c, err := Parse([]byte(`default_idle_timeout_secs: 2
max_concurrent_exec_per_sandbox: 1
max_concurrent_sandboxes: 1
max_exec_timeout_ms: 1000
default_exec_timeout_ms: 500
writable_layer_mb: 64
pids_limit: 64
api_tokens:
  alice: alice-0123456789abcdef
  bob: bob-0123456789abcdef00
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.DefaultIdleTimeoutSecs != 2 || c.WritableLayerMB != 64 || len(c.APITokens) != 2 {
		t.Fatalf("got %+v", c)
	}
	if d := Default(); d.WritableLayerMB != 2048 || d.APITokens != nil {
		t.Fatalf("defaults: writable_layer_mb %d, api_tokens %v", d.WritableLayerMB, d.APITokens)
	}
}

func TestMarshalRedactsTokens(t *testing.T) {
	c := Default()
	c.APITokens = map[string]string{"alice": "alice-0123456789abcdef"}
	out := string(c.Marshal())
	if strings.Contains(out, "alice-0123456789abcdef") || !strings.Contains(out, "alice: <redacted>") {
		t.Fatalf("printed config:\n%s", out)
	}
	if c.APITokens["alice"] != "alice-0123456789abcdef" {
		t.Fatal("Marshal changed the config it printed")
	}
}

func TestWebhooksAreChecked(t *testing.T) {
	good := "webhooks:\n  - url: https://hooks.example.com/hutch\n    events: [\"sandbox.*\"]\n    secret: 0123456789abcdef\n"
	c, err := Parse([]byte(good))
	if err != nil || len(c.Webhooks) != 1 || c.Webhooks[0].Events[0] != "sandbox.*" {
		t.Fatalf("a good webhook: %+v %v", c.Webhooks, err)
	}
	if out := string(c.Marshal()); strings.Contains(out, "0123456789abcdef") {
		t.Errorf("--print-config shows the webhook's secret:\n%s", out)
	}
	for name, cfg := range map[string]string{
		"url":    "webhooks:\n  - url: ftp://x\n    events: [\"*\"]\n    secret: 0123456789abcdef\n",
		"events": "webhooks:\n  - url: http://x\n    secret: 0123456789abcdef\n",
		"secret": "webhooks:\n  - url: http://x\n    events: [\"*\"]\n    secret: short\n",
		"glob":   "webhooks:\n  - url: http://x\n    events: [\"[\"]\n    secret: 0123456789abcdef\n",
	} {
		if _, err := Parse([]byte(cfg)); err == nil || !strings.Contains(err.Error(), "webhooks[0]") {
			t.Errorf("a bad %s: %v", name, err)
		}
	}
}
