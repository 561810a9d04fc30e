package sandbox

// Sandbox networks: named, owner-scoped groups of sandboxes created with
// network: true whose members reach each other (by address, and by name
// or id through hutch's resolver); nobody else reaches them. A sandbox
// may be on several networks. A network outlives its members (it is kept
// in the store); its memberships end with the sandbox, the network or the
// daemon. The network service's firewall holds the pairs of sandboxes
// that share a network, replaced whole on every change; members may run
// in different runtimes (the service's one table holds them all).

import (
	"context"
	"net/netip"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/dnsgate"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// Limits of sandbox networks.
const (
	maxNetworksPerOwner = 64
	maxNetworkMembers   = 64
)

// networkName matches a network's name: a DNS label (peers resolve
// "<sandbox>.<network>").
var networkName = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$`)

// netRecord is a network as the store keeps it.
type netRecord struct {
	Key       string    `json:"key"` // owner + "\x00" + name
	Name      string    `json:"name"`
	Owner     string    `json:"owner,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// sandboxNet is a network and its live members.
type sandboxNet struct {
	rec     netRecord
	members map[string]*sandbox
}

// netBook is the daemon's networks.
type netBook struct {
	mu sync.Mutex
	// byKey is guarded by mu.
	byKey map[string]*sandboxNet
	// sync serializes the firewall's peer updates, in order.
	sync sync.Mutex
}

func netKey(owner, name string) string { return owner + "\x00" + name }

// load reads the networks of the store.
func (b *netBook) load(s *store) error {
	recs, _, err := allIn(s, bucketNetworks, func(r *netRecord) string { return r.Key })
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.byKey = map[string]*sandboxNet{}
	for _, r := range recs {
		b.byKey[r.Key] = &sandboxNet{rec: *r, members: map[string]*sandbox{}}
	}
	return nil
}

// of lists the names of the networks sandbox id is on, sorted.
func (b *netBook) of(id string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, n := range b.byKey {
		if n.members[id] != nil {
			out = append(out, n.rec.Name)
		}
	}
	sort.Strings(out)
	return out
}

// pairs returns every pair of sandboxes that share a network.
func (b *netBook) pairs() [][2]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out [][2]string
	for _, n := range b.byKey {
		ids := make([]string, 0, len(n.members))
		for id := range n.members {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for i, a := range ids {
			for _, j := range ids[i+1:] {
				out = append(out, [2]string{a, j})
			}
		}
	}
	return out
}

// peers returns the addresses of the members of sb's networks that name
// (lowercase) names: a member's name or id, alone or followed by
// ".<network>".
func (b *netBook) peers(sb *sandbox, name string, addrOf func(*sandbox) netip.Addr) []netip.Addr {
	b.mu.Lock()
	var found []*sandbox
	for _, n := range b.byKey {
		if n.members[sb.rec.ID] == nil {
			continue
		}
		short := strings.TrimSuffix(name, "."+n.rec.Name)
		for id, m := range n.members {
			if id != sb.rec.ID && (short == id || (m.rec.Name != "" && short == strings.ToLower(m.rec.Name))) {
				found = append(found, m)
			}
		}
	}
	b.mu.Unlock()
	var out []netip.Addr
	for _, m := range found {
		if a := addrOf(m); a.IsValid() && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// leave takes sandbox id off every network; it reports whether it was on one.
func (b *netBook) leave(id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	was := false
	for _, n := range b.byKey {
		if n.members[id] != nil {
			delete(n.members, id)
			was = true
		}
	}
	return was
}

// info describes n, with its members' addresses by addrOf.
func (n *sandboxNet) info(addrOf func(*sandbox) netip.Addr) api.NetworkInfo {
	out := api.NetworkInfo{Name: n.rec.Name, CreatedAt: n.rec.CreatedAt.Format(time.RFC3339), Members: []api.NetworkMember{}}
	for id, m := range n.members {
		mem := api.NetworkMember{SandboxID: id, Name: m.rec.Name}
		if a := addrOf(m); a.IsValid() {
			mem.Address = a.String()
		}
		out.Members = append(out.Members, mem)
	}
	sort.Slice(out.Members, func(i, j int) bool { return out.Members[i].SandboxID < out.Members[j].SandboxID })
	return out
}

// checkNetworkName checks a network's name.
func checkNetworkName(name string) error {
	if !networkName.MatchString(name) {
		return errdefs.Malformed("network name %q must be 1 to 63 lowercase letters, digits and '-' (a DNS label)", clip(name, 80))
	}
	return nil
}

// CreateNetwork makes a network (sandbox::network::create).
func (m *Manager) CreateNetwork(ctx context.Context, req api.NetworkCreateRequest) (api.NetworkInfo, error) {
	if err := checkNetworkName(req.Name); err != nil {
		return api.NetworkInfo{}, err
	}
	if _, err := m.networkService(); err != nil {
		return api.NetworkInfo{}, err
	}
	owner := auth.OwnerFrom(ctx)
	key := netKey(owner, req.Name)
	b := &m.nets
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, dup := b.byKey[key]; dup {
		return api.NetworkInfo{}, errdefs.New(errdefs.CodeNetworkInUse, "a network named %s already exists", req.Name)
	}
	mine := 0
	for _, n := range b.byKey {
		if n.rec.Owner == owner {
			mine++
		}
	}
	if mine >= maxNetworksPerOwner {
		return api.NetworkInfo{}, errdefs.New(errdefs.CodeCapacity, "at most %d networks per owner", maxNetworksPerOwner)
	}
	n := &sandboxNet{rec: netRecord{Key: key, Name: req.Name, Owner: owner, CreatedAt: time.Now().UTC()}, members: map[string]*sandbox{}}
	if err := m.store.putIn(bucketNetworks, key, &n.rec); err != nil {
		return api.NetworkInfo{}, errdefs.Wrap(errdefs.CodeInternal, err, "recording the network")
	}
	b.byKey[key] = n
	return n.info(m.sandboxAddr), nil
}

// ListNetworks lists the caller's networks (sandbox::network::list).
func (m *Manager) ListNetworks(ctx context.Context, _ api.NetworkListRequest) (api.NetworkListResponse, error) {
	owner := auth.OwnerFrom(ctx)
	b := &m.nets
	b.mu.Lock()
	defer b.mu.Unlock()
	out := api.NetworkListResponse{Networks: []api.NetworkInfo{}}
	for _, n := range b.byKey {
		if n.rec.Owner == owner {
			out.Networks = append(out.Networks, n.info(m.sandboxAddr))
		}
	}
	sort.Slice(out.Networks, func(i, j int) bool { return out.Networks[i].Name < out.Networks[j].Name })
	return out, nil
}

// DeleteNetwork removes a network with no members (sandbox::network::delete).
func (m *Manager) DeleteNetwork(ctx context.Context, req api.NetworkRequest) (api.NetworkInfo, error) {
	b := &m.nets
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.findLocked(ctx, req.Name)
	if err != nil {
		return api.NetworkInfo{}, err
	}
	if len(n.members) > 0 {
		return api.NetworkInfo{}, errdefs.New(errdefs.CodeNetworkInUse, "network %s has %d sandboxes on it; disconnect them (or stop them) first", n.rec.Name, len(n.members))
	}
	if err := m.store.removeIn(bucketNetworks, n.rec.Key); err != nil {
		return api.NetworkInfo{}, errdefs.Wrap(errdefs.CodeInternal, err, "removing the network")
	}
	delete(b.byKey, n.rec.Key)
	return n.info(m.sandboxAddr), nil
}

// findLocked returns the caller's network name; b.mu must be held.
func (b *netBook) findLocked(ctx context.Context, name string) (*sandboxNet, error) {
	if err := checkNetworkName(name); err != nil {
		return nil, err
	}
	n := b.byKey[netKey(auth.OwnerFrom(ctx), name)]
	if n == nil {
		return nil, errdefs.New(errdefs.CodeNoNetwork, "no network named %s", name)
	}
	return n, nil
}

// ConnectNetwork puts a running sandbox with network: true on a network
// (sandbox::network::connect); connecting it again changes nothing.
func (m *Manager) ConnectNetwork(ctx context.Context, req api.NetworkConnectRequest) (api.NetworkInfo, error) {
	return m.membership(ctx, req, func(n *sandboxNet, sb *sandbox) error {
		if len(n.members) >= maxNetworkMembers && n.members[sb.rec.ID] == nil {
			return errdefs.New(errdefs.CodeCapacity, "network %s has %d members, the most it takes", n.rec.Name, maxNetworkMembers)
		}
		n.members[sb.rec.ID] = sb
		return nil
	})
}

// DisconnectNetwork takes a sandbox off a network
// (sandbox::network::disconnect).
func (m *Manager) DisconnectNetwork(ctx context.Context, req api.NetworkConnectRequest) (api.NetworkInfo, error) {
	return m.membership(ctx, req, func(n *sandboxNet, sb *sandbox) error {
		if n.members[sb.rec.ID] == nil {
			return errdefs.New(errdefs.CodeNoNetwork, "sandbox %s is not on network %s", sb.rec.ID, n.rec.Name)
		}
		delete(n.members, sb.rec.ID)
		return nil
	})
}

// membership changes the members of req's network with change, then the
// firewall's peers.
func (m *Manager) membership(ctx context.Context, req api.NetworkConnectRequest, change func(*sandboxNet, *sandbox) error) (api.NetworkInfo, error) {
	sb, err := m.lookup(ctx, req.SandboxID)
	if err != nil {
		return api.NetworkInfo{}, err
	}
	if err := networked(sb); err != nil {
		return api.NetworkInfo{}, err
	}
	b := &m.nets
	b.mu.Lock()
	n, err := b.findLocked(ctx, req.Network)
	if err == nil {
		err = change(n, sb)
	}
	b.mu.Unlock()
	if err != nil {
		return api.NetworkInfo{}, err
	}
	if err := m.syncPeers(ctx); err != nil {
		return api.NetworkInfo{}, errdefs.Wrap(errdefs.CodeInternal, err, "changing the sandbox network")
	}
	// A sandbox that stopped meanwhile is taken off by its teardown.
	b.mu.Lock()
	defer b.mu.Unlock()
	return n.info(m.sandboxAddr), nil
}

// syncPeers hands the network service the pairs of sandboxes that share
// a network, whatever runtime each runs in.
func (m *Manager) syncPeers(ctx context.Context) error {
	svc, err := m.networkService()
	if err != nil {
		return err
	}
	m.nets.sync.Lock()
	defer m.nets.sync.Unlock()
	return svc.SetPeers(ctx, m.nets.pairs())
}

// leaveNetworks takes a stopping sandbox off its networks.
func (m *Manager) leaveNetworks(sb *sandbox) {
	if !m.nets.leave(sb.rec.ID) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.syncPeers(ctx); err != nil {
		m.log.Warn("updating sandbox networks", "sandbox", sb.rec.ID, "err", err)
	}
}

// Resolver is the directory of hutch's resolver: the running sandboxes
// with a network, by address.
func (m *Manager) Resolver() dnsgate.Directory { return resolverDirectory{m} }

type resolverDirectory struct{ m *Manager }

// Client finds the running sandbox whose address is src.
func (d resolverDirectory) Client(src netip.Addr) (dnsgate.Client, bool) {
	d.m.mu.Lock()
	sbs := make([]*sandbox, 0, len(d.m.sandboxes))
	for _, sb := range d.m.sandboxes {
		if sb.rec.Network {
			sbs = append(sbs, sb)
		}
	}
	d.m.mu.Unlock()
	for _, sb := range sbs {
		if !sb.isStopped() && d.m.sandboxAddr(sb) == src {
			return resolverClient{d.m, sb}, true
		}
	}
	return nil, false
}

// resolverClient is one sandbox, for the resolver.
type resolverClient struct {
	m  *Manager
	sb *sandbox
}

func (c resolverClient) Peer(name string) []netip.Addr {
	return c.m.nets.peers(c.sb, name, c.m.sandboxAddr)
}

func (c resolverClient) Check(name string) dnsgate.Verdict { return c.sb.egress.Load().check(name) }

func (c resolverClient) Learn(ctx context.Context, addrs []netip.Addr, ports []uint16, ttl time.Duration) error {
	fw, err := c.m.networkService()
	if err != nil {
		return err
	}
	for _, p := range ports {
		if err := fw.Learn(ctx, c.sb.rec.ID, addrs, p, ttl); err != nil {
			return err
		}
	}
	return nil
}

func (c resolverClient) Denied(name string) { c.m.deniedName(c.sb, name) }
