package integration

import (
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// rawControl reports whether s holds a character a terminal interprets.
func rawControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool {
		return r != '\n' && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r))
	})
}

func TestStopReasonFromSandboxBytesIsClean(t *testing.T) {
	d := startDaemonWithAgent(t, baseConfig(""), hostileAgent(t))
	id := d.create(api.CreateRequest{Image: "python"})
	// The agent writes terminal escapes to its stderr, which the host
	// keeps for the stop reason, and exits. The exec ends with its
	// sandbox; its own error is not the point.
	_ = d.provoke(id, "hostile-death")
	if !testutil.Poll(time.Minute, func() bool { _, stopped := d.listed(id); return stopped }) {
		t.Fatalf("sandbox %s still running after its PID 1 was ended", id)
	}

	reason := sandboxState(t, d, id).StopReason
	t.Logf("stop reason: %q", reason)
	if rawControl(reason) || len(reason) > 512 {
		t.Errorf("stop reason has raw control characters or %d bytes (max 512): %q", len(reason), reason)
	}
	if !strings.Contains(reason, `\x1b]0;pwned\x07`) {
		t.Errorf("stop reason does not show the sandbox's stderr escaped: %q", reason)
	}

	out, errOut, code := d.cli("", "list")
	if code != 0 {
		t.Fatalf("hutch list: exit %d: %s", code, errOut)
	}
	if rawControl(out) || !strings.Contains(out, `\x1b]0;pwned\x07`) {
		t.Errorf("hutch list printed the stop reason raw:\n%q", out)
	}
}
