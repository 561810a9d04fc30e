package daemon

import (
	"context"
	"net"
	"net/netip"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hutch-dev/hutch/internal/egressproxy"
	"github.com/hutch-dev/hutch/internal/netplumb"
	"github.com/hutch-dev/hutch/internal/secrets"
)

// startEgressProxy opens the owners' secrets and the daemon's egress CA
// and starts hutch's egress proxy (issue 37), which decides by name on
// the connections of sandboxes whose policy has name rules or transforms;
// it resolves names as their resolver does, reaches nothing the firewall
// closes to sandboxes, and writes secrets into the requests of
// transforms. It exports hutch_egress_denied_total{kind}, the refusals.
func (d *daemon) startEgressProxy() error {
	var err error
	if d.secrets, err = secrets.Open(filepath.Join(d.opts.DataDir, "secrets")); err != nil {
		return err
	}
	ca, err := egressproxy.LoadCA(filepath.Dir(egressCAFile(d.opts.DataDir)))
	if err != nil {
		return err
	}
	var pool netip.Prefix
	if d.cfg.NetworkPool != "" {
		p, err := netip.ParsePrefix(d.cfg.NetworkPool)
		if err != nil {
			return err
		}
		pool = p
	}
	p, err := egressproxy.Listen("127.0.0.1", egressproxy.Options{
		Resolver: d.resolver,
		Closed:   netplumb.ClosedRanges(pool),
		Private:  netplumb.PrivateRanges(), // issue 41: 4: open to the sandboxes whose record says so
		Events:   d.evlog,
		Logger:   d.log,
		CA:       ca,
		Secrets:  d.secrets,
	})
	if err != nil {
		return err
	}
	d.proxy = p
	for _, kind := range egressproxy.DeniedKinds {
		d.obs.metrics.Registry().MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "hutch_egress_denied_total",
			Help:        "Connections and requests of sandboxes the egress proxy refused, by what named the destination (sni, host, address).",
			ConstLabels: prometheus.Labels{"kind": kind},
		}, func() float64 { return float64(p.Denied(kind)) }))
	}
	d.held.Push("stopping the egress proxy", func(context.Context) error { return p.Close() })
	return nil
}

// dialForBuild connects for a template build's ADD of a URL as the proxy
// would for a sandbox made now, with the egress defaults in force (issue
// 41: 4).
func (d *daemon) dialForBuild(ctx context.Context, sb egressproxy.Sandbox, host string, port uint16) (net.Conn, error) {
	return d.proxy.Dial(ctx, d.sbnet.WithDefaults(sb), host, port)
}

// egressCAFile is the egress CA's certificate in dataDir, which the
// sandboxes' network service has runtimes install.
func egressCAFile(dataDir string) string {
	return filepath.Join(dataDir, "egress-ca", egressproxy.CACertFile)
}
