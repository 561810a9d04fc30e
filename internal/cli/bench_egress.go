package cli

// issue 37: the egress scenarios' daemon and server.

import (
	"context"
	"fmt"

	"github.com/hutch-dev/hutch/client"
	"github.com/hutch-dev/hutch/internal/bench"
)

// egressConfig is the egress daemon's config: the image cache, the
// target's resolver for the sandboxes' names, and private ranges open
// (the target is on one).
func egressConfig(imageCache, resolver string) string {
	return fmt.Sprintf("image_cache_dir: %q\nblock_private_networks: false\nsandbox_nameservers: [%q]\nwarm_pool_auto: false\n", imageCache, resolver)
}

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
	d, err := startPrivateDaemonEnv(ctx, egressConfig(imageCache, t.Resolver), []string{"SSL_CERT_FILE=" + t.Roots}, a.stderr)
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
