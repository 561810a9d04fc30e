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
type soakFlags struct{ duration, window time.Duration }

// soakOwners are the owners of the private daemon's soak, with tokens.
var soakOwners = map[string]string{"soak-a": "soak-a-0123456789abcdef", "soak-b": "soak-b-0123456789abcdef", "soak-c": "soak-c-0123456789abcdef"}

// runSoak runs the soak against the daemon at $HUTCH_URL (one owner), or
// with private against a daemon of its own with three owners, and prints
// and writes its report.
func (a *app) runSoak(ctx context.Context, f soakFlags, image, imageCache string, private bool, jsonOut string) error {
	opts := bench.SoakOptions{Duration: f.duration, Window: f.window, Image: image, Progress: a.stderr}
	owners := []*client.Client{a.client()}
	var d *privateDaemon
	if private {
		if imageCache == "" {
			imageCache = a.defaultImageCache()
		}
		cfg := privateConfig(imageCache, image, 16) + "api_tokens:\n"
		owners = nil
		for owner, tok := range soakOwners {
			cfg += fmt.Sprintf("  %s: %s\n", owner, tok)
		}
		var err error
		if d, err = startPrivateDaemon(ctx, cfg, a.stderr); err != nil {
			return err
		}
		for _, tok := range soakOwners {
			owners = append(owners, client.New(d.url, tok))
		}
		opts.DaemonPID = d.cmd.Process.Pid
	}
	rep, err := bench.Soak(ctx, owners, opts)
	if d != nil {
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
	return nil
}
