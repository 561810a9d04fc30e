package cli

// `hutch bench --soak` (issue 38: 4).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/hutch-dev/hutch/client"
	"github.com/hutch-dev/hutch/internal/bench"
)

// soakFlags are the soak's flags.
type soakFlags struct {
	duration, window time.Duration
	pprof            string // the private daemon's --pprof
}

// soakOwners are the owners of the private daemon's soak, with their
// API tokens and E2B keys.
var soakOwners = []struct{ name, token, e2bKey string }{
	{"soak-a", "soak-a-0123456789abcdef", "e2b_50a0000000000000000000000000000a"},
	{"soak-b", "soak-b-0123456789abcdef", "e2b_50a0000000000000000000000000000b"},
	{"soak-c", "soak-c-0123456789abcdef", "e2b_50a0000000000000000000000000000c"},
}

// soakEventsPerOwner bounds the private daemon's event log per owner;
// soakRetentionSecs is how long it lists a stopped sandbox.
const (
	soakEventsPerOwner = 1000
	soakRetentionSecs  = 60
)

// runSoak runs the soak against the daemon at $HUTCH_URL (one owner, the
// E2B key of $E2B_API_KEY), or with private against a daemon of its own
// with three owners, whose data dir it scans for leaks after stopping it;
// it prints and writes its report.
func (a *app) runSoak(ctx context.Context, f soakFlags, image, imageCache string, private bool, jsonOut string) error {
	opts := bench.SoakOptions{Duration: f.duration, Window: f.window, Image: image, Progress: a.stderr}
	owners := []bench.SoakOwner{{Client: a.client(), Token: a.getenv("HUTCH_TOKEN"), E2BKey: a.getenv("E2B_API_KEY")}}
	var d *privateDaemon
	if private {
		if imageCache == "" {
			imageCache = a.defaultImageCache()
		}
		// The event log keeps up to 25,000 events per owner by default,
		// which the soak's owners fill in more than an hour: memory that
		// grows by design until then. A bound of soakEventsPerOwner is
		// reached in the first window, so that the slopes after it measure
		// what is not bounded.
		// Likewise a stopped sandbox stays listed (the manager keeps its
		// record) for stopped_retention_secs, 10 minutes by default: the
		// soak's soakRetentionSecs is reached in the first window.
		cfg := privateConfig(imageCache, image, 16) + fmt.Sprintf("events_max_count_per_owner: %d\nstopped_retention_secs: %d\n", soakEventsPerOwner, soakRetentionSecs) + "api_tokens:\n"
		keys := "e2b:\n  api_keys:\n"
		owners = nil
		for _, o := range soakOwners {
			cfg += fmt.Sprintf("  %s: %s\n", o.name, o.token)
			keys += fmt.Sprintf("    %s: %s\n", o.name, o.e2bKey)
			owners = append(owners, bench.SoakOwner{Token: o.token, E2BKey: o.e2bKey})
		}
		var extra []string
		if f.pprof != "" {
			extra = []string{"--pprof", f.pprof}
		}
		var err error
		if d, err = startPrivateDaemon(ctx, cfg+keys, a.stderr, extra...); err != nil {
			return err
		}
		for i := range owners {
			owners[i].Client = client.New(d.url, owners[i].Token)
		}
		opts.DaemonPID = d.cmd.Process.Pid
		opts.DataDir = d.dataDir()
	}
	rep, err := bench.Soak(ctx, owners, opts)
	if d != nil {
		// The leak scan: once the daemon stopped (and its sandboxes with
		// it), nothing of its data dir or of the soak's sandboxes remains.
		d.beforeRemove = func() {
			rep.Leaks = append(rep.Leaks, bench.SoakLeakScan(d.dataDir(), rep.IDs)...)
			rep.LeakScan = fmt.Sprintf("host objects of the daemon's data dir and of the %d sandboxes it had, after it stopped", len(rep.IDs))
		}
		err = errors.Join(err, d.stop())
	}
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "%s\n", b)
	if jsonOut != "" {
		if err := os.WriteFile(jsonOut, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("writing results: %w", err)
		}
	}
	if len(rep.Leaks) > 0 {
		return fmt.Errorf("the leak scan found %d host objects left after the soak", len(rep.Leaks))
	}
	return nil
}
