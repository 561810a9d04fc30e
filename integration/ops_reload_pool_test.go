package integration

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/internal/testutil"
)

// TestOpsReloadPool: a reload that changes warm_pool resizes the pool
// live (issue 41: 4): growing fills it, shrinking tears the extra pooled
// sandboxes down, leaving nothing of them on the host; the reload names
// warm_pool as applied, not as needing a restart.
func TestOpsReloadPool(t *testing.T) {
	d := startDaemon(t, baseConfig("warm_pool: {python: 1}\n"))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	d.waitPoolReady("python", 1)
	reload := func(from, to string) {
		t.Helper()
		cfg, err := os.ReadFile(d.cfgPath)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(d.cfgPath, []byte(strings.Replace(string(cfg), from, to, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
		res, err := d.c.AdminReload(ctx)
		if err != nil || !slices.Contains(res.Applied, "warm_pool") || len(res.RestartNeeded) != 0 {
			t.Fatalf("reload %s: %+v, %v; want warm_pool applied, nothing needing a restart", to, res, err)
		}
	}
	reload("python: 1", "python: 3")
	d.waitPoolReady("python", 3)
	grown := runscSandboxIDs(d.dataDir)
	if len(grown) != 3 {
		t.Fatalf("runsc runs %v after growing the pool to 3", grown)
	}
	reload("python: 3", "python: 1")
	d.waitPoolReady("python", 1)
	var kept []string
	testutil.Eventually(t, time.Minute, func() bool { kept = runscSandboxIDs(d.dataDir); return len(kept) == 1 },
		"one runsc sandbox left after shrinking the pool to 1")
	gone := slices.DeleteFunc(grown, func(id string) bool { return slices.Contains(kept, id) })
	if len(gone) != 2 {
		t.Fatalf("the pool kept %v of %v", kept, grown)
	}
	assertNoLeftovers(t, "", gone...)
}
