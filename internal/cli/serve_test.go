package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/client"
	"github.com/hutch-dev/hutch/internal/daemon"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
)

// TestServeRefusesExposedListen checks that `hutch serve` without
// api_tokens refuses to listen off loopback unless --insecure-no-auth is
// given. The binaries do not exist, so a daemon that gets past the check
// stops at the runsc lookup.
func TestServeRefusesExposedListen(t *testing.T) {
	h := newHarness(t, &functionstest.Fake{})
	missing := filepath.Join(t.TempDir(), "no-runsc")
	base := []string{"serve", "--data-dir", t.TempDir(), "--runsc-path", missing, "--agent-path", missing}
	tests := []struct {
		name    string
		args    []string
		exposed bool
	}{
		{"all interfaces", []string{"--listen", "0.0.0.0:0"}, true},
		{"engine on all interfaces", []string{"--listen", "127.0.0.1:0", "--engine-listen", ":0"}, true},
		{"loopback", []string{"--listen", "127.0.0.1:0", "--engine-listen", "127.0.0.1:0"}, false},
		{"insecure flag", []string{"--listen", "0.0.0.0:0", "--engine-listen", ":0", "--insecure-no-auth"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := h.run("", append(base, tc.args...)...)
			refused := strings.Contains(stderr, "--insecure-no-auth")
			if code == 0 || refused != tc.exposed {
				t.Fatalf("exit %d, stderr %q; want a failure that names --insecure-no-auth: %v", code, stderr, tc.exposed)
			}
		})
	}
}

// TestDefaultSocket: the CLI's client looks for the socket where the
// package's daemon makes it (issue 41).
func TestDefaultSocket(t *testing.T) {
	if client.DefaultSocket != daemon.DefaultSocket {
		t.Errorf("client.DefaultSocket %s, daemon.DefaultSocket %s", client.DefaultSocket, daemon.DefaultSocket)
	}
}
