package cli

// `hutch bench --cluster` (issue 35): a control plane from `make
// kube-deps`'s cache and three private daemons joined to it as nodes, on
// loopback, measured by bench.RunCluster, then all stopped.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hutch-dev/hutch/client"
	"github.com/hutch-dev/hutch/internal/bench"
	"github.com/hutch-dev/hutch/internal/kubecp"
)

const (
	// clusterNodes is how many daemons join the bench's cluster.
	clusterNodes = 3
	// clusterLostGrace is their cluster.lost_grace_secs.
	clusterLostGrace = 3 * time.Second
)

// clusterFlags are --cluster's flags.
type clusterFlags struct {
	on      bool
	pods    int
	kubeBin string
}

// runClusterBench starts the cluster, runs bench.RunCluster on it, prints
// and writes its report, and stops everything.
func (a *app) runClusterBench(ctx context.Context, f clusterFlags, opts bench.Options, jsonOut string) (err error) {
	dir, err := os.MkdirTemp("", "hutch-bench-cluster-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	fmt.Fprintf(a.stderr, "bench: starting a control plane from %s…\n", f.kubeBin)
	cp, err := kubecp.Start(kubecp.Options{BinDir: f.kubeBin, Dir: dir})
	if err != nil {
		return err
	}
	defer cp.Stop()
	daemons := make([]*privateDaemon, clusterNodes)
	defer func() {
		for _, d := range daemons {
			if d != nil {
				err = errors.Join(err, d.stop())
			}
		}
	}()
	nodes := make([]bench.ClusterNode, clusterNodes)
	for i := range daemons {
		name := "hutch-bench-" + strconv.Itoa(i)
		cfg, err := clusterNodeConfig(cp, name, opts, f.pods)
		if err != nil {
			return err
		}
		if daemons[i], err = startPrivateDaemon(ctx, cfg, a.stderr, "--kubeconfig", cp.Kubeconfig); err != nil {
			return err
		}
		nodes[i] = bench.ClusterNode{Name: name, Client: client.New(daemons[i].url, "")}
	}
	// Many Pods at once: client-go's default 5 requests/s would time the
	// client, not the cluster.
	cfg := rest.CopyConfig(cp.Config)
	cfg.QPS, cfg.Burst = 1000, 1000
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := bench.ClusterReady(ctx, kc, nodes); err != nil {
		return err
	}
	killed := -1
	rep, err := bench.RunCluster(ctx, bench.ClusterOptions{
		Options: opts, Kube: kc, Nodes: nodes, Pods: f.pods,
		Kill:         func(i int) error { killed = i; return daemons[i].kill() },
		LostGrace:    kubecp.NodeMonitorGrace + clusterLostGrace,
		ControlPlane: cp.PIDs(),
	})
	if killed >= 0 {
		// Launched again on its data dir, the killed daemon cleans up
		// what it left; its stop then ends it.
		if lerr := daemons[killed].launch(context.WithoutCancel(ctx), a.stderr); lerr != nil {
			daemons[killed] = nil
			err = errors.Join(err, lerr)
		}
	}
	if err != nil {
		return err
	}
	return a.reportBench(rep, jsonOut, "a measurement failed or a target was missed (see the targets)")
}

// clusterNodeConfig is node name's config: the private daemon's with room
// for all pods, and the cluster block with a kubelet API certificate of
// the control plane's CA for 127.0.0.1.
func clusterNodeConfig(cp *kubecp.ControlPlane, name string, opts bench.Options, pods int) (string, error) {
	cert, key, err := cp.ServingCert(name, net.IPv4(127, 0, 0, 1))
	if err != nil {
		return "", err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return privateConfig(opts.ImageCache, opts.Image, pods) + fmt.Sprintf(`cluster:
  node_name: %s
  node_ip: 127.0.0.1
  kubelet_listen: 127.0.0.1:%d
  tls_cert_file: %q
  tls_key_file: %q
  client_ca_file: %q
  lost_grace_secs: %d
`, name, port, cert, key, cp.CAFile, int(clusterLostGrace.Seconds())), nil
}
