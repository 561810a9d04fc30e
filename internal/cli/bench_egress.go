package cli

// issue 37: the egress scenarios' daemon and server.

import (
	"context"
	"fmt"

	"github.com/hutch-dev/hutch/client"
	"github.com/hutch-dev/hutch/internal/bench"
)

// startEgress sets up the egress scenarios' server and a daemon of their
// own that resolves and trusts it; the returned stop undoes both. When
// that cannot be done here, it says why on the log and the scenarios
// skip.
func (a *app) startEgress(ctx context.Context, imageCache string) (*bench.EgressDaemon, func() error) {
	t, err := bench.StartEgressTarget()
	if err != nil {
		fmt.Fprintf(a.stderr, "bench: no egress target (the egress scenarios need root): %v\n", err)
		return nil, func() error { return nil }
	}
	d, err := startPrivateDaemonEnv(ctx, fmt.Sprintf("image_cache_dir: %q\nwarm_pool_auto: false\n", imageCache)+t.DaemonConfig(), t.DaemonEnv(), a.stderr)
	if err != nil {
		t.Close()
		fmt.Fprintf(a.stderr, "bench: no egress daemon: %v\n", err)
		return nil, func() error { return nil }
	}
	return &bench.EgressDaemon{Client: client.New(d.url, ""), PID: d.cmd.Process.Pid, Target: t}, func() error {
		defer t.Close()
		return d.stop()
	}
}
