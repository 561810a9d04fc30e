package daemon

// issue 35: `hutch serve --kubeconfig` joins a Kubernetes cluster as a
// node (internal/kubenode); without it nothing here runs.

import (
	"context"
	"net"
	"strconv"
	"time"

	"github.com/hutch-dev/hutch/internal/clusterapi"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/kubenode"
)

// reattach is the manager's Options.Reattach on a cluster node with
// cluster.reattach_grace_secs: a Pod's sandbox outlives the daemon, its
// network too; nil elsewhere.
func (d *daemon) reattach() func(meta map[string]string, network bool) bool {
	if d.opts.Kubeconfig == "" || d.cfg.Cluster.ReattachGraceSecs == 0 {
		return nil
	}
	return func(meta map[string]string, _ bool) bool { return meta[kubenode.MetaUID] != "" }
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
	apiURL, err := d.clusterAPIURL()
	if err != nil {
		return err
	}
	nodeCtx, cancel := context.WithCancel(ctx)
	node, err := kubenode.Start(nodeCtx, kubenode.Options{
		APIURL:     apiURL, // issue 36
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
	if d.clusterAPI != nil { // issue 36: the API serves for the cluster
		d.clusterAPI.Attach(node.Client(), node.Name())
		d.srv.Handler = d.clusterAPI.Wrap(d.srv.Handler)
	}
	return nil
}

// issue 36: newClusterAPI makes the cluster API on a node with
// cluster.api (sandbox::create's Pods, the events of every node; the
// node-to-node channel, put in front of the HTTP API by startCluster)
// and gives it to the table's deps; nothing elsewhere.
func (d *daemon) newClusterAPI(local clusterapi.Local, deps *functions.Deps) {
	if d.opts.Kubeconfig == "" || !d.cfg.Cluster.API {
		return
	}
	d.clusterAPI = clusterapi.New(clusterapi.Options{Config: d.cfg, Tokens: d.tokens, Local: local, Logger: d.log})
	deps.Cluster = d.clusterAPI
	if deps.Events != nil {
		deps.Events = d.clusterAPI.Events(deps.Events)
	}
}

// clusterAPIURL is where the other nodes reach this node's API:
// cluster.api_url, else the node's address and the API's port; "" without
// the cluster API.
func (d *daemon) clusterAPIURL() (string, error) {
	if d.clusterAPI == nil {
		return "", nil
	}
	if u := d.cfg.Cluster.APIURL; u != "" {
		return u, nil
	}
	ip, err := kubenode.NodeIP(d.cfg.Cluster)
	if err != nil {
		return "", err
	}
	scheme := "http"
	if d.certs != nil {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(ip, strconv.Itoa(d.ln.Addr().(*net.TCPAddr).Port)), nil
}
