package sandbox

// Egress policies: what a sandbox created with network: true may reach
// outside. A policy's addresses and CIDRs go to the runtime's firewall as
// they are; its names go to hutch's resolver (internal/dnsgate), which
// answers only the names the policy admits and has the firewall allow
// their answers for their TTL. With allow_out, everything else is refused;
// deny_out wins. sandbox::network::update (networksvc) replaces a running
// sandbox's policy through Handle.SetEgress.

import (
	"context"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/dnsgate"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/netplumb"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
)

// maxEgressRules bounds the entries of one policy.
const maxEgressRules = 256

// hostName matches a DNS name: labels of letters, digits and '-', the
// last one not all digits (that would be a mistyped address).
var hostName = regexp.MustCompile(`^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9-]*[a-z-][a-z0-9-]*$`)

// nameRule is a policy entry that names hosts.
type nameRule struct {
	name     string // lowercase, without the "*."
	wildcard bool   // any name under name (not name itself)
	port     uint16 // 0: every port
}

func (r nameRule) matches(name string) bool {
	if r.wildcard {
		return strings.HasSuffix(name, "."+r.name)
	}
	return name == r.name
}

// egressPolicy is a policy compiled: address rules for the firewall, name
// rules for the resolver.
type egressPolicy struct {
	source     api.EgressPolicy
	addrs      netplumb.Egress
	allowNames []nameRule
	denyNames  []nameRule
}

// compileEgress checks p and compiles it; nil for no policy.
func compileEgress(p *api.EgressPolicy) (*egressPolicy, error) {
	if p.Empty() {
		return nil, nil
	}
	if n := len(p.AllowOut) + len(p.DenyOut); n > maxEgressRules {
		return nil, errdefs.Malformed("an egress policy has at most %d entries, not %d", maxEgressRules, n)
	}
	out := &egressPolicy{source: *p, addrs: netplumb.Egress{Restricted: len(p.AllowOut) > 0}}
	for _, list := range []struct {
		field   string
		entries []string
		addrs   *[]netplumb.Rule
		names   *[]nameRule
	}{
		{"allow_out", p.AllowOut, &out.addrs.Allow, &out.allowNames},
		{"deny_out", p.DenyOut, &out.addrs.Deny, &out.denyNames},
	} {
		for _, e := range list.entries {
			addr, name, err := parseEgressEntry(e)
			if err != nil {
				return nil, errdefs.Malformed("%s entry %q: %v", list.field, spec.Clip(e, 80), err)
			}
			if name != nil {
				*list.names = append(*list.names, *name)
			} else {
				*list.addrs = append(*list.addrs, addr)
			}
		}
	}
	return out, nil
}

// parseEgressEntry reads "10.0.0.0/8", "1.2.3.4:443", "pypi.org",
// "*.github.com:443": an address rule, or a name rule.
func parseEgressEntry(e string) (netplumb.Rule, *nameRule, error) {
	host, port := strings.ToLower(strings.TrimSpace(e)), uint16(0)
	if h, p, ok := strings.Cut(host, ":"); ok {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 {
			return netplumb.Rule{}, nil, errdefs.Malformed("the port must be 1 to 65535 (IPv6 is not supported)")
		}
		host, port = h, uint16(n)
	}
	if pfx, err := netip.ParsePrefix(host); err == nil {
		if !pfx.Addr().Is4() {
			return netplumb.Rule{}, nil, errdefs.Malformed("only IPv4 is supported")
		}
		return netplumb.Rule{Prefix: pfx.Masked(), Port: port}, nil, nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if !a.Is4() {
			return netplumb.Rule{}, nil, errdefs.Malformed("only IPv4 is supported")
		}
		return netplumb.Rule{Prefix: netip.PrefixFrom(a, 32), Port: port}, nil, nil
	}
	rule := nameRule{name: strings.TrimSuffix(host, "."), port: port}
	rule.name, rule.wildcard = strings.CutPrefix(rule.name, "*.")
	if len(rule.name) > 253 || !hostName.MatchString(rule.name) {
		return netplumb.Rule{}, nil, errdefs.Malformed("not an IPv4 address, CIDR, host name or *.domain")
	}
	return netplumb.Rule{}, &rule, nil
}

// check decides on a name the sandbox asks its resolver.
func (p *egressPolicy) check(name string) dnsgate.Verdict {
	if p == nil {
		return dnsgate.Verdict{}
	}
	for _, r := range p.denyNames {
		if r.matches(name) {
			return dnsgate.Verdict{Refuse: true}
		}
	}
	if !p.addrs.Restricted {
		return dnsgate.Verdict{}
	}
	var ports []uint16
	for _, r := range p.allowNames {
		if r.matches(name) {
			ports = append(ports, r.port)
		}
	}
	if len(ports) == 0 {
		return dnsgate.Verdict{Refuse: true}
	}
	if slices.Contains(ports, 0) {
		return dnsgate.Verdict{Ports: []uint16{0}}
	}
	slices.Sort(ports)
	return dnsgate.Verdict{Ports: slices.Compact(ports)}
}

// CheckEgress checks an egress policy as a create and
// sandbox::network::update do (S001).
func CheckEgress(p *api.EgressPolicy) error {
	_, err := compileEgress(p)
	return err
}

// applyEgress makes pol (nil: none) sb's egress policy: its firewall chain
// rewritten and its sets emptied of what they held or had learned, then
// its resolver's names. sandbox::network::update (Handle.SetEgress) and a
// claim from the warm pool (pool_network.go) both take this path.
func (m *Manager) applyEgress(ctx context.Context, sb *sandbox, pol *egressPolicy) error {
	fw, err := m.networkService()
	if err != nil {
		return err
	}
	sb.egressMu.Lock()
	defer sb.egressMu.Unlock()
	if err := fw.SetEgress(ctx, sb.rec.ID, pol.firewallRules()); err != nil {
		return errdefs.Wrap(errdefs.CodeInternal, err, "changing the egress policy")
	}
	sb.setEgress(pol)
	m.watchDenials(pol)
	return nil
}

// firewallRules are p's address rules; none for no policy.
func (p *egressPolicy) firewallRules() netplumb.Egress {
	if p == nil {
		return netplumb.Egress{}
	}
	return p.addrs
}

// policy returns p's source; nil for none.
func (p *egressPolicy) policy() *api.EgressPolicy {
	if p == nil {
		return nil
	}
	src := p.source
	return &src
}

// setEgress makes pol sb's policy, for its resolver and its record.
func (sb *sandbox) setEgress(pol *egressPolicy) {
	sb.egress.Store(pol)
	sb.mu.Lock()
	sb.rec.Egress = pol.policy()
	sb.mu.Unlock()
}

// denialPoll is how often the firewall's refusal counters are read while
// any sandbox has a policy.
const denialPoll = 5 * time.Second

// watchDenials starts the watcher of refused connections once a policy
// exists.
func (m *Manager) watchDenials(pol *egressPolicy) {
	if pol != nil {
		m.denialsOnce.Do(func() { m.destroying.Go(m.reportDenials) })
	}
}

// reportDenials records an egress.denied event for each sandbox whose
// policy refused packets since the last look.
func (m *Manager) reportDenials() {
	seen := map[string]uint64{}
	t := time.NewTicker(denialPoll)
	defer t.Stop()
	for {
		select {
		case <-m.shutdown.Done():
			return
		case <-t.C:
		}
		counts, err := m.denied()
		if err != nil {
			m.log.Debug("reading egress refusals", "err", err)
			continue
		}
		for id, total := range counts {
			if total > seen[id] {
				if sb, ok := m.running(id); ok {
					m.emitFor(sb, api.EventEgressDenied, map[string]any{"packets": total - seen[id], "total": total})
				}
			}
		}
		seen = counts
	}
}

// denied is the network service's refusal counts, by sandbox; it fails
// when they cannot be read, so that no count is taken for zero.
func (m *Manager) denied() (map[string]uint64, error) {
	svc, err := m.networkService()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(m.shutdown, 10*time.Second)
	defer cancel()
	return svc.Denied(ctx)
}

// running returns the live sandbox id, whoever owns it.
func (m *Manager) running(id string) (*sandbox, bool) {
	m.mu.Lock()
	sb, ok := m.sandboxes[id]
	m.mu.Unlock()
	if !ok || sb.isStopped() {
		return nil, false
	}
	return sb, true
}

// checkEgress checks a create's network and egress policy: both need the
// network service (every runtime joins its networks), and a policy
// implies a network.
func (m *Manager) checkEgress(req *api.CreateRequest) error {
	if req.Egress.Empty() {
		req.Egress = nil
		if req.Network {
			_, err := m.networkService()
			return err
		}
		return nil
	}
	if _, err := compileEgress(req.Egress); err != nil {
		return err
	}
	if _, err := m.networkService(); err != nil {
		return err
	}
	req.Network = true
	return nil
}

// mustCompileEgress compiles a policy that was checked when it was set;
// should it fail now, the policy refuses everything.
func mustCompileEgress(p *api.EgressPolicy) *egressPolicy {
	pol, err := compileEgress(p)
	if err != nil {
		return &egressPolicy{source: *p, addrs: netplumb.Egress{Restricted: true}}
	}
	return pol
}
