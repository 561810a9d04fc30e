//go:build failpoints

package failpoint

import (
	"os"
	"syscall"
)

// armed is the point named by HUTCH_FAILPOINT, read once at start.
var armed = os.Getenv(Env)

// Hit kills this process with SIGKILL when name is the armed point: a
// crash at that step, with no deferred cleanup and no flush.
func Hit(name string) {
	if armed != "" && name == armed {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
}

// Enabled reports whether this binary was built with failpoints.
const Enabled = true
