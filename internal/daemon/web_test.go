package daemon

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/config"
)

func TestCheckExposure(t *testing.T) {
	tokens := config.Default()
	tokens.APITokens = map[string]string{"alice": "alice-0123456789abcdef"}
	tests := []struct {
		name     string
		opts     Options
		cfg      config.Config
		wantFlag string // the flag the error names; "" for no error
	}{
		{"defaults", Options{Listen: DefaultListen, EngineListen: DefaultEngineListen}, config.Default(), ""},
		{"localhost and v6", Options{Listen: "localhost:1", EngineListen: "[::1]:2"}, config.Default(), ""},
		{"engine off", Options{Listen: DefaultListen}, config.Default(), ""},
		{"all interfaces", Options{Listen: "0.0.0.0:3111", EngineListen: DefaultEngineListen}, config.Default(), "--listen"},
		{"empty host", Options{Listen: ":3111"}, config.Default(), "--listen"},
		{"engine on a LAN address", Options{Listen: DefaultListen, EngineListen: "10.0.0.5:49134"}, config.Default(), "--engine-listen"},
		{"a name", Options{Listen: "hutch.example.com:3111"}, config.Default(), "--listen"},
		{"tokens", Options{Listen: "0.0.0.0:3111", EngineListen: ":49134"}, tokens, ""},
		{"insecure flag", Options{Listen: "0.0.0.0:3111", InsecureNoAuth: true}, config.Default(), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := checkExposure(tc.opts, tc.cfg)
			switch {
			case tc.wantFlag == "" && err != nil:
				t.Fatalf("checkExposure = %v, want nil", err)
			case tc.wantFlag != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.wantFlag+" ") ||
				!strings.Contains(err.Error(), InsecureNoAuthFlag) || !strings.Contains(err.Error(), "api_tokens")):
				t.Fatalf("checkExposure = %v, want an error naming %s, api_tokens and %s", err, tc.wantFlag, InsecureNoAuthFlag)
			}
		})
	}
}

// TestWebGuardAllowsListenHost checks that a client dialling the daemon by
// the host it listens on gets through, and a wildcard address allows no
// Host beyond loopback.
func TestWebGuardAllowsListenHost(t *testing.T) {
	cfg := config.Default()
	cfg.AllowedHosts = []string{"hutch.example.com"}
	guard, err := webGuard(cfg, "10.0.0.5:3111", "0.0.0.0:49134")
	if err != nil {
		t.Fatal(err)
	}
	for host, allowed := range map[string]bool{
		"10.0.0.5:3111": true, "hutch.example.com:3111": true, "127.0.0.1:3111": true,
		"0.0.0.0:49134": false, "10.0.0.6:3111": false, "evil.example:3111": false,
	} {
		r := httptest.NewRequest("GET", "/healthz", nil)
		r.Host = host
		if got := guard.Check(r) == nil; got != allowed {
			t.Errorf("Host %s: allowed %v, want %v", host, got, allowed)
		}
	}
}
