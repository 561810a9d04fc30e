package integration

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/internal/testutil"
)

// TestRefusedStartIsNoCrash checks that a daemon refused at start for its
// address (in use, or off loopback without api_tokens) exits with a
// message that says so, and that its crash watchdog does not take it for
// a crashed daemon (which it logged, then destroyed "its" sandboxes).
func TestRefusedStartIsNoCrash(t *testing.T) {
	testutil.RequiresIntegration(t)
	hutch, agent := binaries(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"API address in use", []string{"--listen", addr, "--engine-listen", "127.0.0.1:0"}, "--listen " + addr + ": the address is in use"},
		{"engine address in use", []string{"--listen", "127.0.0.1:0", "--engine-listen", addr}, "--engine-listen " + addr + ": the address is in use"},
		{"off loopback", []string{"--listen", "0.0.0.0:0", "--engine-listen", "127.0.0.1:0"}, "--insecure-no-auth"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := filepath.Join(dir, "config.yaml")
			if err := os.WriteFile(cfg, []byte(baseConfig("crash_watchdog: true\n")), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, hutch, append([]string{"serve", "--config", cfg, "--data-dir", filepath.Join(dir, "data"),
				"--runsc-path", testutil.RunscPath(), "--agent-path", agent}, tc.args...)...)
			// Output waits for every holder of stderr: the watchdog too.
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Fatalf("hutch serve: %v, want exit status 1\n%s", err, out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("output does not say %q:\n%s", tc.want, out)
			}
			for _, crash := range []string{"without shutting down", "dead daemon", "watchdog exited"} {
				if strings.Contains(string(out), crash) {
					t.Errorf("a refused start is logged as a crash (%q):\n%s", crash, out)
				}
			}
		})
	}
}
