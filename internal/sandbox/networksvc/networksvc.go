// Package networksvc is the sandbox network service: sandbox::network::*.
// A sandbox network is a named, owner-scoped group of sandboxes created
// with network: true whose members reach each other (by address, and by
// name or id through hutch's resolver); nobody else reaches them. A
// sandbox may be on several networks. A network outlives its members (it
// is kept in the core's store); its memberships end with the sandbox
// (Leave, which the daemon hooks to the core's stops), the network or the
// daemon. The daemon's network service (internal/netsvc) holds the pairs
// of sandboxes that share a network, replaced whole on every change;
// members may run in different runtimes. sandbox::network::update
// replaces a running sandbox's egress policy through Handle.SetEgress.
// It reaches a sandbox only through sandbox.Sandboxes. Net (net.go) is
// the networking of each sandbox created with network: true, which the
// core asks at its boots, wakes and teardowns (sandbox.SandboxNetwork),
// and the directory of hutch's resolver.
package networksvc

import (
	"context"
	"log/slog"
	"net/netip"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/sandbox"
	"github.com/hutch-dev/hutch/internal/sandbox/egress"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
)

// Limits of sandbox networks.
const (
	maxNetworksPerOwner = 64
	maxNetworkMembers   = 64
)

// networkName matches a network's name: a DNS label (peers resolve
// "<sandbox>.<network>").
var networkName = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$`)

// Core is what the service needs of the core (a *sandbox.Manager).
type Core interface {
	sandbox.Sandboxes
	// Records is the store's bucket name, where the networks are kept.
	Records(name string) (sandbox.Records, error)
}

// record is a network as the store keeps it.
type record struct {
	Key       string    `json:"key"` // owner + "\x00" + name
	Name      string    `json:"name"`
	Owner     string    `json:"owner,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// network is a network and its live members: their names, by id.
type network struct {
	rec     record
	members map[string]string
}

// Service answers sandbox::network::* (functions.Networks); its Net asks
// it for a sandbox's peers.
type Service struct {
	core Core
	net  *Net
	// recs keeps the networks' records (the store's bucket "networks").
	recs sandbox.Records
	log  *slog.Logger
	mu   sync.Mutex
	// byKey is guarded by mu.
	byKey map[string]*network
	// sync serializes the firewall's peer updates, in order.
	sync sync.Mutex
}

// New is the network service over core and net, with the networks of
// its store; net asks it for peers from then on.
func New(core Core, net *Net, log *slog.Logger) (*Service, error) {
	if log == nil {
		log = slog.Default()
	}
	recs, err := core.Records("networks")
	if err != nil {
		return nil, err
	}
	s := &Service{core: core, net: net, recs: recs, log: log, byKey: map[string]*network{}}
	all, _, err := sandbox.AllRecords(recs, func(r *record) string { return r.Key })
	if err != nil {
		return nil, err
	}
	for _, r := range all {
		s.byKey[r.Key] = &network{rec: *r, members: map[string]string{}}
	}
	net.nets.Store(s)
	return s, nil
}

func netKey(owner, name string) string { return owner + "\x00" + name }

// of lists the names of the networks sandbox id is on, sorted.
func (s *Service) of(id string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, n := range s.byKey {
		if _, ok := n.members[id]; ok {
			out = append(out, n.rec.Name)
		}
	}
	sort.Strings(out)
	return out
}

// pairs returns every pair of sandboxes that share a network.
func (s *Service) pairs() [][2]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out [][2]string
	for _, n := range s.byKey {
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

// Peers returns the addresses of the members of sandbox id's networks
// that name (lowercase) names: a member's name or id, alone or followed
// by ".<network>" (hutch's resolver).
func (s *Service) Peers(id, name string) []netip.Addr {
	s.mu.Lock()
	var found []string
	for _, n := range s.byKey {
		if _, ok := n.members[id]; !ok {
			continue
		}
		short := strings.TrimSuffix(name, "."+n.rec.Name)
		for mid, mname := range n.members {
			if mid != id && (short == mid || (mname != "" && short == strings.ToLower(mname))) {
				found = append(found, mid)
			}
		}
	}
	s.mu.Unlock()
	var out []netip.Addr
	for _, mid := range found {
		if a := s.addr(mid); a.IsValid() && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// addr is sandbox id's network address; invalid without one.
func (s *Service) addr(id string) netip.Addr { return s.net.Addr(id) }

// Leave takes a stopping sandbox off its networks.
func (s *Service) Leave(id string) {
	if !s.leave(id) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.syncPeers(ctx); err != nil {
		s.log.Warn("updating sandbox networks", "sandbox", id, "err", err)
	}
}

// leave takes sandbox id off every network; it reports whether it was on one.
func (s *Service) leave(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	was := false
	for _, n := range s.byKey {
		if _, ok := n.members[id]; ok {
			delete(n.members, id)
			was = true
		}
	}
	return was
}

// Renewed gives the firewall the peers of sandbox id again, whose
// network was made anew (a hibernated sandbox resumed).
func (s *Service) Renewed(ctx context.Context, id string) {
	if len(s.of(id)) == 0 {
		return
	}
	if err := s.syncPeers(ctx); err != nil {
		s.log.Warn("restoring a sandbox's networks", "sandbox", id, "err", err)
	}
}

// syncPeers hands the network service the pairs of sandboxes that share
// a network, whatever runtime each runs in.
func (s *Service) syncPeers(ctx context.Context) error {
	svc, err := s.net.service()
	if err != nil {
		return err
	}
	s.sync.Lock()
	defer s.sync.Unlock()
	return svc.SetPeers(ctx, s.pairs())
}

// info describes n, with its members' addresses; s.mu is held.
func (s *Service) info(n *network) api.NetworkInfo {
	out := api.NetworkInfo{Name: n.rec.Name, CreatedAt: n.rec.CreatedAt.Format(time.RFC3339), Members: []api.NetworkMember{}}
	for id, name := range n.members {
		mem := api.NetworkMember{SandboxID: id, Name: name}
		if a := s.addr(id); a.IsValid() {
			mem.Address = a.String()
		}
		out.Members = append(out.Members, mem)
	}
	sort.Slice(out.Members, func(i, j int) bool { return out.Members[i].SandboxID < out.Members[j].SandboxID })
	return out
}

// checkName checks a network's name.
func checkName(name string) error {
	if !networkName.MatchString(name) {
		return errdefs.Malformed("network name %q must be 1 to 63 lowercase letters, digits and '-' (a DNS label)", spec.Clip(name, 80))
	}
	return nil
}

// CreateNetwork makes a network (sandbox::network::create).
func (s *Service) CreateNetwork(ctx context.Context, req api.NetworkCreateRequest) (api.NetworkInfo, error) {
	if err := checkName(req.Name); err != nil {
		return api.NetworkInfo{}, err
	}
	if _, err := s.net.service(); err != nil {
		return api.NetworkInfo{}, err
	}
	owner := auth.OwnerFrom(ctx)
	key := netKey(owner, req.Name)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.byKey[key]; dup {
		return api.NetworkInfo{}, errdefs.New(errdefs.CodeNetworkInUse, "a network named %s already exists", req.Name)
	}
	mine := 0
	for _, n := range s.byKey {
		if n.rec.Owner == owner {
			mine++
		}
	}
	if mine >= maxNetworksPerOwner {
		return api.NetworkInfo{}, errdefs.New(errdefs.CodeCapacity, "at most %d networks per owner", maxNetworksPerOwner)
	}
	n := &network{rec: record{Key: key, Name: req.Name, Owner: owner, CreatedAt: time.Now().UTC()}, members: map[string]string{}}
	if err := s.recs.Put(key, &n.rec); err != nil {
		return api.NetworkInfo{}, errdefs.Wrap(errdefs.CodeInternal, err, "recording the network")
	}
	s.byKey[key] = n
	return s.info(n), nil
}

// ListNetworks lists the caller's networks (sandbox::network::list).
func (s *Service) ListNetworks(ctx context.Context, _ api.NetworkListRequest) (api.NetworkListResponse, error) {
	owner := auth.OwnerFrom(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	out := api.NetworkListResponse{Networks: []api.NetworkInfo{}}
	for _, n := range s.byKey {
		if n.rec.Owner == owner {
			out.Networks = append(out.Networks, s.info(n))
		}
	}
	sort.Slice(out.Networks, func(i, j int) bool { return out.Networks[i].Name < out.Networks[j].Name })
	return out, nil
}

// DeleteNetwork removes a network with no members (sandbox::network::delete).
func (s *Service) DeleteNetwork(ctx context.Context, req api.NetworkRequest) (api.NetworkInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.findLocked(ctx, req.Name)
	if err != nil {
		return api.NetworkInfo{}, err
	}
	if len(n.members) > 0 {
		return api.NetworkInfo{}, errdefs.New(errdefs.CodeNetworkInUse, "network %s has %d sandboxes on it; disconnect them (or stop them) first", n.rec.Name, len(n.members))
	}
	if err := s.recs.Remove(n.rec.Key); err != nil {
		return api.NetworkInfo{}, errdefs.Wrap(errdefs.CodeInternal, err, "removing the network")
	}
	delete(s.byKey, n.rec.Key)
	return s.info(n), nil
}

// findLocked returns the caller's network name; s.mu must be held.
func (s *Service) findLocked(ctx context.Context, name string) (*network, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	n := s.byKey[netKey(auth.OwnerFrom(ctx), name)]
	if n == nil {
		return nil, errdefs.New(errdefs.CodeNoNetwork, "no network named %s", name)
	}
	return n, nil
}

// ConnectNetwork puts a running sandbox with network: true on a network
// (sandbox::network::connect); connecting it again changes nothing.
func (s *Service) ConnectNetwork(ctx context.Context, req api.NetworkConnectRequest) (api.NetworkInfo, error) {
	return s.membership(ctx, req, func(n *network, h sandbox.Handle) error {
		if _, on := n.members[h.ID()]; len(n.members) >= maxNetworkMembers && !on {
			return errdefs.New(errdefs.CodeCapacity, "network %s has %d members, the most it takes", n.rec.Name, maxNetworkMembers)
		}
		n.members[h.ID()] = h.Name()
		return nil
	})
}

// DisconnectNetwork takes a sandbox off a network
// (sandbox::network::disconnect).
func (s *Service) DisconnectNetwork(ctx context.Context, req api.NetworkConnectRequest) (api.NetworkInfo, error) {
	return s.membership(ctx, req, func(n *network, h sandbox.Handle) error {
		if _, on := n.members[h.ID()]; !on {
			return errdefs.New(errdefs.CodeNoNetwork, "sandbox %s is not on network %s", h.ID(), n.rec.Name)
		}
		delete(n.members, h.ID())
		return nil
	})
}

// membership changes the members of req's network with change, then the
// firewall's peers.
func (s *Service) membership(ctx context.Context, req api.NetworkConnectRequest, change func(*network, sandbox.Handle) error) (api.NetworkInfo, error) {
	h, release, err := s.networked(ctx, req.SandboxID)
	if err != nil {
		return api.NetworkInfo{}, err
	}
	defer release()
	s.mu.Lock()
	n, err := s.findLocked(ctx, req.Network)
	if err == nil {
		err = change(n, h)
	}
	s.mu.Unlock()
	if err != nil {
		return api.NetworkInfo{}, err
	}
	if st := h.State(); st == sandbox.Stopping || st == sandbox.Stopped {
		// It stopped meanwhile, perhaps before Leave took it off.
		s.leave(h.ID())
	}
	if err := s.syncPeers(ctx); err != nil {
		return api.NetworkInfo{}, errdefs.Wrap(errdefs.CodeInternal, err, "changing the sandbox network")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.info(n), nil
}

// networked acquires the caller's sandbox id when it has not ended and
// was created with network: true.
func (s *Service) networked(ctx context.Context, id string) (sandbox.Handle, func(), error) {
	h, release, err := s.core.Acquire(ctx, id, sandbox.UseRecord)
	if err != nil {
		return nil, nil, err
	}
	if !h.Network() {
		release()
		return nil, nil, errdefs.New(errdefs.CodeNotNetworked, "sandbox %s was created without network: true; it has loopback only (its ports are still reachable with sandbox::port::expose)", h.ID())
	}
	return h, release, nil
}

// UpdateNetwork replaces a running sandbox's egress policy
// (sandbox::network::update); empty lists lift it.
func (s *Service) UpdateNetwork(ctx context.Context, req api.NetworkUpdateRequest) (api.SandboxNetwork, error) {
	if err := egress.Check(&req.EgressPolicy); err != nil {
		return api.SandboxNetwork{}, err
	}
	h, release, err := s.networked(ctx, req.SandboxID)
	if err != nil {
		return api.SandboxNetwork{}, err
	}
	defer release()
	if err := h.SetEgress(ctx, &req.EgressPolicy); err != nil {
		return api.SandboxNetwork{}, err
	}
	return s.sandboxNetwork(ctx, h), nil
}

// sandboxNetwork describes h's network.
func (s *Service) sandboxNetwork(ctx context.Context, h sandbox.Handle) api.SandboxNetwork {
	id := h.ID()
	out := api.SandboxNetwork{SandboxID: id, Networks: append([]string{}, s.of(id)...)}
	if p := h.Egress(); p != nil {
		out.EgressPolicy = *p
	}
	if a := s.addr(id); a.IsValid() {
		out.Address = a.String()
	}
	if fw, err := s.net.service(); err == nil {
		if denied, err := fw.Denied(ctx); err == nil {
			out.EgressDenied = denied[id]
		}
	}
	return out
}

// EgressLog lists the egress proxy's recent decisions about the caller's
// sandbox (sandbox::network::egress; issue 37).
func (s *Service) EgressLog(ctx context.Context, req api.EgressLogRequest) (api.EgressLogResponse, error) {
	h, release, err := s.networked(ctx, req.SandboxID)
	if err != nil {
		return api.EgressLogResponse{}, err
	}
	defer release()
	out := api.EgressLogResponse{SandboxID: h.ID(), Decisions: []api.EgressDecision{}}
	if s.net.recent != nil {
		out.Decisions = append(out.Decisions, s.net.recent(h.ID())...)
	}
	return out, nil
}
