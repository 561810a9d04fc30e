package sandbox

import (
	"context"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/netplumb"
	"github.com/hutch-dev/hutch/internal/runtime"
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
	// egress policy is e. On error it leaves nothing behind.
	Attach(ctx context.Context, id string, ports []uint16, e netplumb.Egress) (*runtime.NetworkAttachment, error)
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

// networkService is the daemon's network service; S302 without one.
func (m *Manager) networkService() (NetworkService, error) {
	if m.netsvc == nil {
		return nil, errdefs.New(errdefs.CodeUnsupported, "this daemon has no network service: network: true, egress policies and sandbox networks are unavailable")
	}
	return m.netsvc, nil
}

// attachNetwork makes the network of rec's sandbox, whose gateway
// forwards ports, before its runtime starts it; nil without network: true.
func (m *Manager) attachNetwork(ctx context.Context, rec *record, ports []uint16) (*runtime.NetworkAttachment, error) {
	if !rec.Network {
		return nil, nil
	}
	svc, err := m.networkService()
	if err != nil {
		return nil, err
	}
	nw, err := svc.Attach(ctx, rec.ID, ports, mustCompileEgress(rec.Egress).firewallRules())
	if err != nil {
		return nil, errdefs.Wrap(errdefs.CodeBootFailed, err, "setting up the network of sandbox "+rec.ID)
	}
	return nw, nil
}

// detachNetwork tears down the network of rec's sandbox, once its runtime
// instance is destroyed.
func (m *Manager) detachNetwork(rec *record) {
	if !rec.Network || m.netsvc == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.netsvc.Detach(ctx, rec.ID); err != nil {
		m.log.Error("tearing down a sandbox's network", "sandbox", rec.ID, "err", err)
	}
}

// reconcileNetworks tears down what an earlier daemon left of its
// sandboxes' networks (none of which runs any more).
func (m *Manager) reconcileNetworks(ctx context.Context) error {
	if m.netsvc == nil {
		return nil
	}
	done, err := m.netsvc.Reconcile(ctx, func(string) bool { return false })
	if err != nil {
		return fmt.Errorf("reconciling sandbox networks: %w", err)
	}
	if len(done) > 0 {
		m.log.Info("removed leftover sandbox networks", "count", len(done), "ids", done)
	}
	return nil
}

// attachment is sb's network attachment; nil without one (no network,
// or hibernated).
func (m *Manager) attachment(sb *sandbox) *runtime.NetworkAttachment {
	if m.netsvc == nil || !sb.rec.Network {
		return nil
	}
	return m.netsvc.Attachment(sb.rec.ID)
}

// sandboxAddr is sb's network address; invalid without one.
func (m *Manager) sandboxAddr(sb *sandbox) netip.Addr {
	if nw := m.attachment(sb); nw != nil {
		return nw.Addr
	}
	return netip.Addr{}
}

// Gateway forwarding (seed 002). A sandbox created with network: true
// reaches the host's loopback services through its gateway address: the
// create-time env values that name one by URL ("http://localhost:8080/",
// "postgres://u:p@127.0.0.1:5432/db") are rewritten to the gateway, and
// exactly those ports, plus config gateway_ports, are forwarded. With
// several owners (api_tokens), or when the operator sets
// forwardable_ports, only the ports config.Forwardable admits are; an env
// URL naming another port is left as it is and the create response lists
// the port in unforwarded_ports. The daemon's own API and engine ports are
// never forwarded, even if named.

// localURL matches the authority of a URL on the host's loopback with an
// explicit port: "://", optional userinfo, the host, ":" and the port.
var localURL = regexp.MustCompile(`(://(?:[^/?#@\s]*@)?)((?i:localhost)|127\.0\.0\.1|\[::1\]):([0-9]{1,5})\b`)

// loopbackPorts returns the ports of the loopback URLs in env's values.
func loopbackPorts(env []string) []uint16 {
	var ports []uint16
	for _, kv := range env {
		_, v, _ := strings.Cut(kv, "=")
		for _, m := range localURL.FindAllStringSubmatch(v, -1) {
			if p, ok := parsePort(m[3]); ok {
				ports = append(ports, p)
			}
		}
	}
	return ports
}

// rewriteLocalhost returns env with the host of every loopback URL in a
// value whose port is in ports replaced by gw; names and other text are
// unchanged.
func rewriteLocalhost(env []string, gw netip.Addr, ports []uint16) []string {
	out := make([]string, len(env))
	for i, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			out[i] = kv
			continue
		}
		out[i] = k + "=" + localURL.ReplaceAllStringFunc(v, func(u string) string {
			m := localURL.FindStringSubmatch(u)
			if p, ok := parsePort(m[3]); !ok || !slices.Contains(ports, p) {
				return u
			}
			return m[1] + gw.String() + ":" + m[3]
		})
	}
	return out
}

// parsePort parses a TCP port, 1 to 65535.
func parsePort(s string) (uint16, bool) {
	n, err := strconv.ParseUint(s, 10, 16)
	return uint16(n), err == nil && n > 0
}

// protectedPorts are host ports no sandbox may reach through its gateway.
type protectedPorts struct {
	mu sync.Mutex
	// ports is guarded by mu.
	ports map[uint16]bool
}

// ProtectPorts names host ports that no sandbox reaches through its
// gateway, whatever its env or gateway_ports say: the daemon calls it with
// its API and engine ports as soon as it knows them.
func (m *Manager) ProtectPorts(ports ...uint16) {
	m.protected.mu.Lock()
	defer m.protected.mu.Unlock()
	if m.protected.ports == nil {
		m.protected.ports = map[uint16]bool{}
	}
	for _, p := range ports {
		m.protected.ports[p] = true
	}
}

// isProtected reports whether port is one of the daemon's own.
func (m *Manager) isProtected(port uint16) bool {
	m.protected.mu.Lock()
	defer m.protected.mu.Unlock()
	return m.protected.ports[port]
}

// gatewayPorts decides which host loopback ports sandbox rec reaches at
// its gateway: gateway_ports and the ports of the loopback URLs in its env
// that config.Forwardable admits, never the daemon's own. Refused are the
// ports its env names that are not forwarded. Both are sorted, without
// duplicates.
func (m *Manager) gatewayPorts(rec *record) (forward, refused []uint16) {
	if !rec.Network {
		return nil, nil
	}
	named := sortedSet(loopbackPorts(rec.Env))
	for _, p := range m.cfg.GatewayPorts {
		forward = append(forward, uint16(p)) // 1..65535 (config.Validate)
	}
	// The operator's package indexes on the host (sandbox::interpreter::install).
	forward = append(forward, loopbackPorts(indexEnv(m.cfg.PackageIndexes.URLs()))...)
	for _, p := range named {
		if m.cfg.Forwardable(int(p)) {
			forward = append(forward, p)
		}
	}
	forward = slices.DeleteFunc(sortedSet(forward), func(p uint16) bool {
		if m.isProtected(p) {
			m.log.Warn("not forwarding the daemon's own port to a sandbox", "sandbox", rec.ID, "port", p)
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
		m.log.Info("not forwarding ports named in a sandbox's env", "sandbox", rec.ID, "owner", rec.Owner, "ports", refused)
	}
	return forward, refused
}

// sortedSet sorts ports and drops duplicates.
func sortedSet(ports []uint16) []uint16 {
	slices.Sort(ports)
	return slices.Compact(ports)
}

// useGateway points the loopback URLs of rec's env whose ports are
// forwarded at its sandbox's gateway, once the sandbox has a network.
func (m *Manager) useGateway(rec *record, ports []uint16) {
	if !rec.Network || m.netsvc == nil {
		return
	}
	nw := m.netsvc.Attachment(rec.ID)
	if nw == nil || !nw.Gateway.IsValid() {
		return
	}
	gw := nw.Gateway
	rec.Env = rewriteLocalhost(rec.Env, gw, ports)
	m.log.Info("sandbox network", "sandbox", rec.ID, "gateway", gw.String(), "gateway_ports", ports)
}

// indexEnv makes env entries of urls, for the loopback URL helpers.
func indexEnv(urls []string) []string {
	out := make([]string, len(urls))
	for i, u := range urls {
		out[i] = "INDEX=" + u
	}
	return out
}
