package cli

import (
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/hutch-dev/hutch/client"
)

// unitFiles are where the package's systemd unit (packaging/hutch.service)
// may be installed. Where it is, the unit runs the daemon: the CLI talks
// to it over its socket and never starts a second one beside it.
var unitFiles = []string{
	"/etc/systemd/system/hutch.service",
	"/lib/systemd/system/hutch.service",
	"/usr/lib/systemd/system/hutch.service",
}

// serviceState is the ActiveState systemd reports for hutch.service
// ("active", "activating", "deactivating", "inactive", "failed", ...), or
// "" when the unit is not installed or systemd does not answer.
func serviceState() string {
	installed := false
	for _, f := range unitFiles {
		if _, err := os.Stat(f); err == nil {
			installed = true
			break
		}
	}
	if !installed {
		return ""
	}
	out, err := exec.Command("systemctl", "show", "--property=ActiveState", "--value", "hutch.service").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// serviceComing reports whether a unit in state has a daemon running or
// about to run (a start or a restart in progress).
func serviceComing(state string) bool {
	switch state {
	case "active", "activating", "reloading", "deactivating":
		return true
	}
	return false
}

// awaitServiceSocket waits, up to healthWait, while the package's unit
// starts or restarts the daemon and its socket is not there yet, so that
// a command run just after `systemctl restart hutch` reaches the unit's
// daemon. Without the unit, or with it stopped, it returns at once.
func (a *app) awaitServiceSocket() {
	sock := client.SocketPath(a.getenv)
	deadline := time.Now().Add(a.healthWait)
	for !client.IsSocket(sock) && time.Now().Before(deadline) && serviceComing(a.serviceState()) {
		time.Sleep(healthPoll)
	}
}
