package daemon

// issue 35: `hutch serve --kubeconfig` joins a Kubernetes cluster as a
// node (internal/kubenode); without it nothing here runs.

import (
	"context"
	"net"

	"github.com/hutch-dev/hutch/internal/kubenode"
)

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
