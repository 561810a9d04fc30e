package integration

import (
	"context"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/hutch-dev/hutch/api"
)

// hostileDeath writes 200 KiB of terminal escapes (a title change, a screen
// clear, a bidi override) to PID 1's stderr, which the host keeps for the
// stop reason, then ends PID 1.
const hostileDeath = `import os, sys
chunk = "\x1b]0;pwned\x07\x1b[2J\u202e" + "A" * 40
with open("/proc/1/fd/2", "w") as f:
    f.write(chunk * 4000)
    f.flush()
os.kill(1, 15)
`

// rawControl reports whether s holds a character a terminal interprets.
func rawControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool {
		return r != '\n' && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r))
	})
}

func TestStopReasonFromSandboxBytesIsClean(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	id := d.create(api.CreateRequest{Image: "python"})
	// The exec ends with its sandbox; its own error is not the point.
	_, _ = d.c.Exec(context.Background(), api.ExecRequest{SandboxID: id, Argv: []string{"python3", "-c", hostileDeath}})
	if !eventually(time.Minute, func() bool { _, stopped := d.listed(id); return stopped }) {
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
