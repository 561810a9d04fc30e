package networksvc

// Net is the networking of the sandboxes created with network: true, the
// core's sandbox.SandboxNetwork: over the daemon's network service
// (internal/netsvc) it attaches a sandbox's network before its runtime
// starts it and detaches it after, decides and rewrites what its gateway
// forwards, keeps the egress policies in force for hutch's resolver
// (it is the resolver's directory) and reports their refusals as
// egress.denied events.

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/dnsgate"
	"github.com/hutch-dev/hutch/internal/egressproxy"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/events"
	"github.com/hutch-dev/hutch/internal/netplumb"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/sandbox"
	"github.com/hutch-dev/hutch/internal/sandbox/egress"
)

// NetworkService is the daemon's one network service (internal/netsvc),
// shared by every runtime: before a sandbox with network: true starts, it
// makes the sandbox's namespace, addresses, firewall rules and DNS gate
// and hands the runtime an attachment (runtime.Spec.Network); after the
// runtime has destroyed the sandbox, it tears them down. It holds every
// sandbox's egress policy, learned addresses and network peers, whatever
// runtime the sandbox runs in.
type NetworkService interface {
	// Attach makes sandbox id's network: its gateway forwards ports, its
	// egress policy is e, openPrivate opens the private ranges to it. On
	// error it leaves nothing behind.
	Attach(ctx context.Context, id string, ports []uint16, e netplumb.Egress, openPrivate bool) (*runtime.NetworkAttachment, error)
	// Adopt takes over sandbox id's network, which an earlier daemon
	// attached, with egress policy e (issue 35); it says whether the
	// private ranges are open to it.
	Adopt(ctx context.Context, id string, e netplumb.Egress) (*runtime.NetworkAttachment, bool, error)
	// Attachment is sandbox id's attachment; nil if it has none.
	Attachment(id string) *runtime.NetworkAttachment
	// Detach tears sandbox id's network down; it is idempotent.
	Detach(ctx context.Context, id string) error
	// Reconcile tears down the networks of the sandboxes keep rejects.
	Reconcile(ctx context.Context, keep func(id string) bool) ([]string, error)
	// SetEgress replaces sandbox id's egress policy.
	SetEgress(ctx context.Context, id string, e netplumb.Egress) error
	// Learn lets sandbox id reach addrs on port for ttl.
	Learn(ctx context.Context, id string, addrs []netip.Addr, port uint16, ttl time.Duration) error
	// SetPeers replaces the pairs of sandboxes that reach each other.
	SetPeers(ctx context.Context, pairs [][2]string) error
	// Denied counts, per sandbox, the packets its egress policy refused.
	Denied(ctx context.Context) (map[string]uint64, error)
}

// Live is what Net asks the core (a *sandbox.Manager) once it is made.
type Live interface {
	// Running is the owner of sandbox id while it is listed and has not
	// stopped (a pool sandbox is not listed until a create claims it).
	Running(id string) (owner string, ok bool)
	// Done is closed once the core shuts down.
	Done() <-chan struct{}
}

// NetOptions configure a Net.
type NetOptions struct {
	// Service is the daemon's network service; nil refuses network: true
	// (S302).
	Service NetworkService
	// Config gives gateway_ports, forwardable_ports and the package
	// indexes a gateway forwards.
	Config config.Config
	// Events records egress.denied; nil records nothing.
	Events *events.Log
	Logger *slog.Logger
	// Proxy is hutch's egress proxy (internal/egressproxy): while a
	// sandbox's policy has name rules, its connections to the policy's
	// proxy ports are led there. Invalid: names are decided by the
	// resolver alone.
	Proxy netip.AddrPort
	// Decisions lists the proxy's recent decisions about a sandbox.
	Decisions func(id string) []api.EgressDecision
}

// Net is the sandboxes' networking (sandbox.SandboxNetwork) and the
// directory of hutch's resolver (dnsgate.Directory).
type Net struct {
	fw     NetworkService
	proxy  netip.AddrPort
	recent func(id string) []api.EgressDecision
	cfg    config.Config
	events *events.Log
	log    *slog.Logger
	// core is what Bind handed; nets the sandbox networks (New).
	core atomic.Pointer[Live]
	nets atomic.Pointer[Service]
	// protected are the daemon's own ports, never forwarded.
	protected struct {
		mu    sync.Mutex
		ports map[uint16]bool
	}
	mu sync.Mutex
	// policies are the egress policies in force of the attached
	// sandboxes (nil: none), by id; guarded by mu.
	policies map[string]*egress.Policy
	// defaults are the egress defaults of the networks made now; made
	// those each attached sandbox's network was made with (guarded by
	// mu). Issue 41: 4.
	defaults atomic.Pointer[Defaults]
	made     map[string]Defaults
	// denialsOnce starts the watcher of egress refusals; names
	// coalesces the names the resolver refused (once makes it).
	denialsOnce sync.Once
	namesOnce   sync.Once
	names       *events.Denials
	// running are its background reporters (Wait).
	running sync.WaitGroup
}

var (
	_ sandbox.SandboxNetwork = (*Net)(nil)
	_ dnsgate.Directory      = (*Net)(nil)
	_ egressproxy.Directory  = (*Net)(nil)
)

// NewNet is the sandboxes' networking over opts.Service.
func NewNet(opts NetOptions) *Net {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	n := &Net{fw: opts.Service, proxy: opts.Proxy, recent: opts.Decisions, cfg: opts.Config, events: opts.Events, log: opts.Logger, policies: map[string]*egress.Policy{}, made: map[string]Defaults{}}
	n.SetDefaults(opts.Config)
	return n
}

// Bind hands n the core; the daemon calls it once the core is made,
// before its first create. The refusals of the policies of the sandboxes
// it adopted are watched from then on.
func (n *Net) Bind(core Live) {
	n.core.Store(&core)
	n.mu.Lock()
	pols := slices.Collect(maps.Values(n.policies))
	n.mu.Unlock()
	for _, pol := range pols {
		n.watchDenials(pol)
	}
}

// Wait waits for n's reporters, which end when the core shuts down.
func (n *Net) Wait() { n.running.Wait() }

// service is the daemon's network service; S302 without one.
func (n *Net) service() (NetworkService, error) {
	if n.fw == nil {
		return nil, sandbox.NoNetwork()
	}
	return n.fw, nil
}

// Attach makes sandbox id's network before its runtime starts it.
func (n *Net) Attach(ctx context.Context, id string, ports []uint16, pol *egress.Policy) (*runtime.NetworkAttachment, error) {
	fw, err := n.service()
	if err != nil {
		return nil, err
	}
	d := n.defaultsFor(id)
	nw, err := fw.Attach(ctx, id, ports, n.firewall(pol), d.OpenPrivate)
	if err != nil {
		return nil, errdefs.Wrap(errdefs.CodeBootFailed, err, "setting up the network of sandbox "+id)
	}
	n.mu.Lock()
	n.policies[id], n.made[id] = pol, d
	n.mu.Unlock()
	return nw, nil
}

// Detach tears sandbox id's network down, once its runtime instance is
// destroyed.
func (n *Net) Detach(id string) {
	if n.fw == nil {
		return
	}
	n.mu.Lock()
	delete(n.policies, id)
	n.mu.Unlock()
	if !n.listed(id) {
		n.Forget(id) // kept only for a hibernated sandbox's wake (defaultsFor)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.fw.Detach(ctx, id); err != nil {
		n.log.Error("tearing down a sandbox's network", "sandbox", id, "err", err)
	}
}

// Reconcile tears down what an earlier daemon left of its sandboxes'
// networks, but those adopted (Readopt).
func (n *Net) Reconcile(ctx context.Context) error {
	if n.fw == nil {
		return nil
	}
	done, err := n.fw.Reconcile(ctx, func(id string) bool { return n.fw.Attachment(id) != nil })
	if err != nil {
		return fmt.Errorf("reconciling sandbox networks: %w", err)
	}
	if len(done) > 0 {
		n.log.Info("removed leftover sandbox networks", "count", len(done), "ids", done)
	}
	return nil
}

// Renewed gives the firewall sandbox id's peers again, once its network
// was made anew (a hibernated sandbox woke).
func (n *Net) Renewed(ctx context.Context, id string) {
	if s := n.nets.Load(); s != nil {
		s.Renewed(ctx, id)
	}
}

// attachment is sandbox id's network attachment; nil without one.
func (n *Net) attachment(id string) *runtime.NetworkAttachment {
	if n.fw == nil {
		return nil
	}
	return n.fw.Attachment(id)
}

// Addr is sandbox id's network address; invalid without one.
func (n *Net) Addr(id string) netip.Addr {
	if nw := n.attachment(id); nw != nil {
		return nw.Addr
	}
	return netip.Addr{}
}

// ProtectPorts names host ports that no sandbox reaches through its
// gateway, whatever its env or gateway_ports say: the daemon calls it with
// its API and engine ports as soon as it knows them.
func (n *Net) ProtectPorts(ports ...uint16) {
	n.protected.mu.Lock()
	defer n.protected.mu.Unlock()
	if n.protected.ports == nil {
		n.protected.ports = map[uint16]bool{}
	}
	for _, p := range ports {
		n.protected.ports[p] = true
	}
}

// Protected reports whether port is one of the daemon's own.
func (n *Net) Protected(port uint16) bool {
	n.protected.mu.Lock()
	defer n.protected.mu.Unlock()
	return n.protected.ports[port]
}

// Gateway decides which host loopback ports sandbox id of owner reaches
// at its gateway: gateway_ports and the ports of the loopback URLs in its
// env that config.Forwardable admits, never the daemon's own. Refused are
// the ports its env names that are not forwarded. Both are sorted,
// without duplicates.
func (n *Net) Gateway(id, owner string, env []string) (forward, refused []uint16) {
	named := egress.SortedSet(egress.LoopbackPorts(env))
	for _, p := range n.cfg.GatewayPorts {
		forward = append(forward, uint16(p)) // 1..65535 (config.Validate)
	}
	// The operator's package indexes on the host (sandbox::interpreter::install).
	forward = append(forward, egress.LoopbackPorts(indexEnv(n.cfg.PackageIndexes.URLs()))...)
	for _, p := range named {
		if n.cfg.Forwardable(int(p)) {
			forward = append(forward, p)
		}
	}
	forward = slices.DeleteFunc(egress.SortedSet(forward), func(p uint16) bool {
		if n.Protected(p) {
			n.log.Warn("not forwarding the daemon's own port to a sandbox", "sandbox", id, "port", p)
			return true
		}
		return false
	})
	for _, p := range named {
		if !slices.Contains(forward, p) {
			refused = append(refused, p)
		}
	}
	if len(refused) > 0 {
		n.log.Info("not forwarding ports named in a sandbox's env", "sandbox", id, "owner", owner, "ports", refused)
	}
	return forward, refused
}

// indexEnv makes env entries of urls, for the loopback URL helpers.
func indexEnv(urls []string) []string {
	out := make([]string, len(urls))
	for i, u := range urls {
		out[i] = "INDEX=" + u
	}
	return out
}

// UseGateway is env with its loopback URLs whose ports are forwarded
// pointed at sandbox id's gateway, once the sandbox has a network.
func (n *Net) UseGateway(id string, env []string, ports []uint16) []string {
	nw := n.attachment(id)
	if nw == nil || !nw.Gateway.IsValid() {
		return env
	}
	n.log.Info("sandbox network", "sandbox", id, "gateway", nw.Gateway.String(), "gateway_ports", ports)
	return withCAEnv(egress.RewriteLocalhost(env, nw.Gateway, ports), nw.CACert)
}

// caEnv are the variables that point TLS clients at the CA bundle a
// runtime installs hutch's egress CA in (issue 37): OpenSSL and Python,
// requests, node.
var caEnv = []string{"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS"}

// withCAEnv is env with caEnv set to the system bundle where env does not
// set them, when the sandbox has an egress CA.
func withCAEnv(env []string, caCert string) []string {
	if caCert == "" {
		return env
	}
	for _, k := range caEnv {
		if !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, k+"=") }) {
			env = append(env, k+"=/etc/ssl/certs/ca-certificates.crt")
		}
	}
	return env
}

// HostURL is u, a URL on the host's loopback, as sandbox id reaches it:
// through its gateway; unchanged without a network.
func (n *Net) HostURL(id, u string) string {
	if nw := n.attachment(id); u != "" && nw != nil && nw.Gateway.IsValid() {
		return strings.TrimPrefix(egress.RewriteLocalhost([]string{"I=" + u}, nw.Gateway, egress.LoopbackPorts([]string{"I=" + u}))[0], "I=")
	}
	return u
}

// SetEgress makes pol (nil: none) sandbox id's egress policy: its
// firewall chain rewritten and its sets emptied of what they held or had
// learned, then its resolver's names.
func (n *Net) SetEgress(ctx context.Context, id string, pol *egress.Policy) error {
	fw, err := n.service()
	if err != nil {
		return err
	}
	if err := n.stale(id); err != nil { // issue 41: 4
		return err
	}
	if err := fw.SetEgress(ctx, id, n.firewall(pol)); err != nil {
		return errdefs.Wrap(errdefs.CodeInternal, err, "changing the egress policy")
	}
	n.mu.Lock()
	n.policies[id] = pol
	n.mu.Unlock()
	n.watchDenials(pol)
	return nil
}

// firewall is pol in the firewall's terms: with name rules and a proxy,
// the ports the proxy decides on are led to it.
func (n *Net) firewall(pol *egress.Policy) netplumb.Egress {
	e := pol.Firewall()
	if n.proxy.IsValid() && pol.Named() {
		e.Proxy, e.ProxyPorts = n.proxy, pol.ProxyPorts()
	}
	return e
}

// policy is sandbox id's egress policy in force; nil for none.
func (n *Net) policy(id string) *egress.Policy {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.policies[id]
}

// Client finds the running sandbox whose address is src (hutch's
// resolver).
func (n *Net) Client(src netip.Addr) (dnsgate.Client, bool) {
	id, owner, ok := n.find(src)
	if !ok {
		return nil, false
	}
	return client{n: n, id: id, owner: owner}, true
}

// Sandbox finds the running sandbox whose address is src, with its
// policy in force (hutch's egress proxy).
func (n *Net) Sandbox(src netip.Addr) (egressproxy.Sandbox, bool) {
	id, owner, ok := n.find(src)
	if !ok {
		return egressproxy.Sandbox{}, false
	}
	d := n.madeWith(id)
	return egressproxy.Sandbox{ID: id, Owner: owner, Policy: n.policy(id), OpenPrivate: d.OpenPrivate, Nameservers: d.Nameservers}, true
}

// find is the id and owner of the running sandbox whose address is src.
func (n *Net) find(src netip.Addr) (id, owner string, ok bool) {
	core := n.core.Load()
	if core == nil {
		return "", "", false
	}
	n.mu.Lock()
	ids := make([]string, 0, len(n.policies))
	for id := range n.policies {
		ids = append(ids, id)
	}
	n.mu.Unlock()
	for _, id := range ids {
		if n.Addr(id) != src {
			continue
		}
		if owner, ok := (*core).Running(id); ok {
			return id, owner, true
		}
	}
	return "", "", false
}

// client is one sandbox, for the resolver.
type client struct {
	n         *Net
	id, owner string
}

func (c client) Peer(name string) []netip.Addr {
	if s := c.n.nets.Load(); s != nil {
		return s.Peers(c.id, name)
	}
	return nil
}

func (c client) Check(name string) dnsgate.Verdict { return c.n.policy(c.id).Verdict(name) }

func (c client) Learn(ctx context.Context, addrs []netip.Addr, ports []uint16, ttl time.Duration) error {
	fw, err := c.n.service()
	if err != nil {
		return err
	}
	for _, p := range ports {
		if err := fw.Learn(ctx, c.id, addrs, p, ttl); err != nil {
			return err
		}
	}
	return nil
}

func (c client) Denied(name string) { c.n.deniedName(c.owner, c.id, name) }

func (c client) Nameservers() []string { return c.n.madeWith(c.id).Nameservers }

// denialPoll is how often the firewall's refusal counters are read while
// any sandbox has a policy, and the refused names are reported.
const denialPoll = 5 * time.Second

// done is closed once the core shuts down; nil before Bind.
func (n *Net) done() <-chan struct{} {
	if core := n.core.Load(); core != nil {
		return (*core).Done()
	}
	return nil
}

// deniedName records that sandbox id's policy refused name, coalesced
// into egress.denied events (events.Denials) every denialPoll.
func (n *Net) deniedName(owner, id, name string) {
	n.namesOnce.Do(func() {
		n.names = events.NewDenials(n.events, api.EventEgressDenied)
		n.running.Go(func() { n.names.Run(n.done(), denialPoll) })
	})
	n.names.Denied(owner, id, name)
}

// watchDenials starts the watcher of refused connections once a policy
// exists.
func (n *Net) watchDenials(pol *egress.Policy) {
	if pol != nil {
		n.denialsOnce.Do(func() { n.running.Go(n.reportDenials) })
	}
}

// reportDenials records an egress.denied event for each sandbox whose
// policy refused packets since the last look.
func (n *Net) reportDenials() {
	core := n.core.Load()
	if core == nil {
		return
	}
	seen := map[string]uint64{}
	t := time.NewTicker(denialPoll)
	defer t.Stop()
	for {
		select {
		case <-(*core).Done():
			return
		case <-t.C:
		}
		counts, err := n.denied(*core)
		if err != nil {
			n.log.Debug("reading egress refusals", "err", err)
			continue
		}
		for id, total := range counts {
			if total > seen[id] {
				if owner, ok := (*core).Running(id); ok {
					n.emit(owner, id, map[string]any{"packets": total - seen[id], "total": total})
				}
			}
		}
		seen = counts
	}
}

// denied is the network service's refusal counts, by sandbox; it fails
// when they cannot be read, so that no count is taken for zero.
func (n *Net) denied(core Live) (map[string]uint64, error) {
	fw, err := n.service()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() { // ends with the core, as the call did on its context
		select {
		case <-core.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	return fw.Denied(ctx)
}

// emit records an egress.denied event about sandbox id of owner.
func (n *Net) emit(owner, id string, data any) {
	if n.events == nil {
		return
	}
	raw, err := json.Marshal(data)
	if err != nil {
		n.log.Error("encoding an event", "type", api.EventEgressDenied, "err", err)
		return
	}
	n.events.Append(events.Event{Type: api.EventEgressDenied, Owner: owner, SandboxID: id, Data: raw})
}
