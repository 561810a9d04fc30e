package spec

import (
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// TestIdleTimeout: 0 takes the default (42 here), up to
// config.MaxIdleTimeoutSecs is kept, more is S001 naming the field.
func TestIdleTimeout(t *testing.T) {
	tests := []struct {
		in, want uint64
		err      string
	}{
		{0, 42, ""},
		{2, 2, ""},
		{config.MaxIdleTimeoutSecs, config.MaxIdleTimeoutSecs, ""},
		{config.MaxIdleTimeoutSecs + 1, 0, "idle_timeout_secs must be between 1 and 604800"},
		{1 << 63, 0, "idle_timeout_secs must be between"},
	}
	for _, tt := range tests {
		got, err := IdleTimeout(tt.in, 42)
		if tt.err != "" {
			if !errdefs.Is(err, errdefs.CodeMalformed) || err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("IdleTimeout(%d) = %d, %v; want S001 %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("IdleTimeout(%d) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
}

// TestCheckLifetime: 0 is no lifetime only where it is optional; more than
// config.MaxLifetimeSecs is S001.
func TestCheckLifetime(t *testing.T) {
	if err := CheckLifetime(0, true); err != nil {
		t.Errorf("0, optional: %v", err)
	}
	if err := CheckLifetime(config.MaxLifetimeSecs, false); err != nil {
		t.Errorf("the most: %v", err)
	}
	for _, secs := range []uint64{0, config.MaxLifetimeSecs + 1} {
		if err := CheckLifetime(secs, false); !errdefs.Is(err, errdefs.CodeMalformed) || !strings.Contains(err.Error(), "timeout_secs must be between 1 and") {
			t.Errorf("CheckLifetime(%d) = %v, want S001 naming timeout_secs", secs, err)
		}
	}
}

// TestCheckMetadata: labels pass; too many pairs, a bad or long key, a long
// value or one with control characters are S001 naming the field.
func TestCheckMetadata(t *testing.T) {
	if err := CheckMetadata("metadata", map[string]string{"team": "a", "ci.run/id": "42:7"}); err != nil {
		t.Errorf("labels: %v", err)
	}
	many := map[string]string{}
	for i := range maxMetadataPairs + 1 {
		many[strings.Repeat("k", i+1)] = "v"
	}
	for name, md := range map[string]map[string]string{
		"too many pairs":  many,
		"a bad key":       {"-x": "v"},
		"a long key":      {strings.Repeat("k", maxMetadataKeyBytes+1): "v"},
		"a long value":    {"k": strings.Repeat("v", maxMetadataValueBytes+1)},
		"a control in it": {"k": "a\x1bb"},
	} {
		if err := CheckMetadata("metadata", md); !errdefs.Is(err, errdefs.CodeMalformed) || !strings.Contains(err.Error(), "metadata") {
			t.Errorf("%s: %v, want S001 naming metadata", name, err)
		}
	}
}

func TestCreateTermsOnIdle(t *testing.T) {
	for onIdle, want := range map[string]string{"": api.OnIdleStop, api.OnIdlePause: api.OnIdlePause, api.OnIdlePauseFiles: api.OnIdlePauseFiles} {
		got, err := CreateTerms(api.CreateRequest{OnIdle: onIdle}, 60)
		if err != nil || got.OnIdle != want || got.IdleSecs != 60 {
			t.Errorf("on_idle %q: %+v, %v", onIdle, got, err)
		}
	}
	if _, err := CreateTerms(api.CreateRequest{OnIdle: "hibernate"}, 60); !errdefs.Is(err, errdefs.CodeMalformed) {
		t.Errorf("on_idle hibernate: %v; want S001", err)
	}
}
