package integration

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// TestOpsReload: `hutch admin reload` applies new api_tokens, owners'
// limits (quota) and image_allowlist live and names a key that needs a restart; a config that does not load, sent
// by SIGHUP, changes nothing and the daemon keeps serving; only an
// operator may reload.
func TestOpsReload(t *testing.T) {
	const (
		aliceOld = "alice-reload-0123456789ab"
		aliceNew = "alice-reload-new-0123456789"
		bobTok   = "bob-reload-0123456789abcd"
	)
	d := startDaemon(t, baseConfig("api_tokens: {alice: "+aliceOld+", bob: "+bobTok+"}\nadmin_owners: [alice]\n"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var env *api.ErrorEnvelope
	if _, err := client.New(d.url, bobTok).AdminReload(ctx); !errors.As(err, &env) || env.Code != "S110" {
		t.Errorf("reload by a non-operator: %v, want S110", err)
	}

	cfg, err := os.ReadFile(d.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	// A create of 2 cpus is refused once the reload sets a limit of 1
	// (before any boot: no sandbox is made either way).
	twoCPUs := api.CreateRequest{Image: "python", CPUs: 2}
	next := strings.Replace(string(cfg), aliceOld, aliceNew, 1) + "max_concurrent_sandboxes: 7\nquota: {default: {cpus: 1}}\nimage_allowlist: [python]\n"
	if err := os.WriteFile(d.cfgPath, []byte(next), 0o600); err != nil {
		t.Fatal(err)
	}
	hutch, _ := binaries(t)
	cmd := exec.Command(hutch, "admin", "reload")
	cmd.Env = append(os.Environ(), "HUTCH_URL="+d.url, "HUTCH_TOKEN="+aliceOld)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "applied: image_allowlist, api_tokens, quota") ||
		!strings.Contains(string(out), "needs a restart (old values kept): max_concurrent_sandboxes") {
		t.Fatalf("hutch admin reload: %v\n%s", err, out)
	}
	if _, err := client.New(d.url, aliceOld).List(ctx); !errors.As(err, &env) {
		t.Errorf("alice's old token after the reload: %v, want refused", err)
	}
	if _, err := client.New(d.url, aliceNew).List(ctx); err != nil {
		t.Errorf("alice's new token after the reload: %v", err)
	}
	overQuota := func(when string) {
		t.Helper()
		_, err := client.New(d.url, bobTok).Create(ctx, twoCPUs)
		if !errors.As(err, &env) || env.Code != "S401" || !strings.Contains(env.Message, "quota.default.cpus") {
			t.Errorf("%s: a create of 2 cpus: %v, want S401 naming quota.default.cpus", when, err)
		}
	}
	overQuota("after the reload")
	notAllowed := func(when string) {
		t.Helper()
		_, err := client.New(d.url, bobTok).Create(ctx, api.CreateRequest{Image: "node"})
		if !errors.As(err, &env) || env.Code != "S100" {
			t.Errorf("%s: a create of node, no longer in image_allowlist: %v, want S100", when, err)
		}
	}
	notAllowed("after the reload")

	// A broken file on SIGHUP: logged, nothing changes.
	if err := os.WriteFile(d.cfgPath, []byte("api_tokens: [not, a, map]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, func() bool { return strings.Contains(d.log.String(), "the config does not load") },
		"the daemon logs the broken config")
	if _, err := client.New(d.url, aliceNew).List(ctx); err != nil {
		t.Errorf("after a broken reload: %v", err)
	}
	overQuota("after a broken reload")
	notAllowed("after a broken reload")
}
