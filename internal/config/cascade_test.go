package config

import (
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// TestOutOfRangeReportsOnlyItsKey sets each numeric key alone to values
// out of its range and checks that every error names that key: none is
// about a key the config never set whose check depends on it (e.g.
// default_exec_timeout_ms when max_exec_timeout_ms is 0).
func TestOutOfRangeReportsOnlyItsKey(t *testing.T) {
	ty := reflect.TypeFor[Config]()
	for i := range ty.NumField() {
		f := ty.Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch f.Type.Kind() {
		case reflect.Int, reflect.Int64, reflect.Uint32, reflect.Uint64:
		default:
			continue
		}
		own := regexp.MustCompile(`^(line \d+: )?` + regexp.QuoteMeta(key) + `\b`)
		for _, v := range []string{"0", "-1", "99999999999"} {
			_, err := Parse([]byte(key + ": " + v + "\n"))
			if err == nil {
				continue
			}
			for line := range strings.Lines(err.Error()) {
				if !own.MatchString(line) {
					t.Errorf("%s: %s: an error about another key: %q", key, v, strings.TrimSpace(line))
				}
			}
		}
	}
}

// TestDefaultsFollowBounds checks that a bound set lower than the default
// of a key the config does not set takes that default along.
func TestDefaultsFollowBounds(t *testing.T) {
	tests := []struct {
		yaml string
		got  func(Config) int64
		want int64
	}{
		{"max_exec_timeout_ms: 2000\n", func(c Config) int64 { return int64(c.DefaultExecTimeoutMs) }, 2000},
		{"max_processes_per_sandbox: 4\n", func(c Config) int64 { return int64(c.MaxPtysPerSandbox) }, 4},
		{"channel_buffer_mb: 8\n", func(c Config) int64 { return c.ChannelBufferPerOwnerMB }, 8},
		{"volume_max_size_mb: 100\n", func(c Config) int64 { return int64(c.VolumeDefaultSizeMB) }, 100},
		{"max_exec_timeout_ms: 600000\n", func(c Config) int64 { return int64(c.DefaultExecTimeoutMs) }, int64(Default().DefaultExecTimeoutMs)},
	}
	for _, tt := range tests {
		c, err := Parse([]byte(tt.yaml))
		if err != nil {
			t.Errorf("%q: %v", tt.yaml, err)
			continue
		}
		if got := tt.got(c); got != tt.want {
			t.Errorf("%q: the default became %d, want %d", tt.yaml, got, tt.want)
		}
	}
}

// TestRelatedKeysStillChecked checks that a key set against a bound that
// is itself fine is still refused, and that two bad keys are both named.
func TestRelatedKeysStillChecked(t *testing.T) {
	for _, y := range []string{"default_exec_timeout_ms: 600000\n", "max_exec_timeout_ms: 2000\ndefault_exec_timeout_ms: 3000\n"} {
		if _, err := Parse([]byte(y)); err == nil || !strings.Contains(err.Error(), "default_exec_timeout_ms must be between 1 and max_exec_timeout_ms") {
			t.Errorf("%q: default above the max: %v", y, err)
		}
	}
	_, err := Parse([]byte("max_processes_per_sandbox: 0\nmax_concurrent_sandboxes: 0\n"))
	if err == nil || !strings.Contains(err.Error(), "max_processes_per_sandbox must") || !strings.Contains(err.Error(), "max_concurrent_sandboxes must") {
		t.Errorf("two bad keys: %v", err)
	}
}
