package daemon

// issue 35: `hutch serve --kubeconfig` joins a Kubernetes cluster as a
// node (internal/kubenode); without it nothing here runs.

import (
	"context"
	"net"
	"time"

	"github.com/hutch-dev/hutch/internal/kubenode"
)

// reattach is the manager's Options.Reattach on a cluster node with
// cluster.reattach_grace_secs: a Pod's sandbox without a network outlives
// the daemon; nil elsewhere.
func (d *daemon) reattach() func(meta map[string]string, network bool) bool {
	if d.opts.Kubeconfig == "" || d.cfg.Cluster.ReattachGraceSecs == 0 {
		return nil
	}
	return func(meta map[string]string, network bool) bool { return !network && meta[kubenode.MetaUID] != "" }
}

// reattachGrace is how long the crash watchdog leaves reattachable
// sandboxes to a restarted daemon.
func (d *daemon) reattachGrace() time.Duration {
	if d.reattach() == nil {
		return 0
	}
	return time.Duration(d.cfg.Cluster.ReattachGraceSecs) * time.Second
}

// startCluster registers the node and starts its controllers; they stop
// when ctx ends, before the manager closes its sandboxes.
func (d *daemon) startCluster(ctx context.Context) error {
	if d.opts.Kubeconfig == "" {
		return nil
	}
	nodeCtx, cancel := context.WithCancel(ctx)
	node, err := kubenode.Start(nodeCtx, kubenode.Options{
		Kubeconfig: d.opts.Kubeconfig,
		Config:     d.cfg,
		Table:      d.table,
		Runtimes:   d.rts.Names(),
		OnStop:     d.mgr.OnStop,
		Dial: func(ctx context.Context, id string, port int) (net.Conn, error) {
			t, err := d.ports.PortFor(ctx, id, port)
			if err != nil {
				return nil, err
			}
			return d.ports.Dial(ctx, t)
		},
		Addr:   d.sbnet.Addr,
		Events: d.evlog,
		Logger: d.log,
	})
	if err != nil {
		cancel()
		return err
	}
	d.held.Push("leaving the cluster", func(context.Context) error { cancel(); return node.Wait() })
	return nil
}
