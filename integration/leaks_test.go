package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/internal/hostscan"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// leftovers lists what remains on the host of sandboxes (hostscan.Leftovers).
func leftovers(dataDir string, ids []string) []string { return hostscan.Leftovers(dataDir, ids) }

// networkLeftovers lists the network devices and nftables lines of ids or
// dataDir (hostscan.NetworkLeftovers).
func networkLeftovers(dataDir string, ids []string) []string {
	return hostscan.NetworkLeftovers(dataDir, ids)
}

// assertNoLeftovers waits up to 60 s (a busy machine tears down slowly) for the sandboxes of dataDir (all of
// them when dataDir is not "", else only the given ids) to leave nothing
// behind, then fails listing what remains.
func assertNoLeftovers(t *testing.T, dataDir string, ids ...string) {
	t.Helper()
	var left []string
	if testutil.Poll(60*time.Second, func() bool { left = leftovers(dataDir, ids); return len(left) == 0 }) {
		return
	}
	t.Errorf("leftovers of %s:\n  %s", dataDir, strings.Join(left, "\n  "))
}
