// Package netsvc is the daemon's one network service (the CNI pattern):
// before a runtime starts a sandbox with a network, the service makes its
// network namespace, veth, addresses, firewall rules and DNS gate
// (netplumb), and hands the runtime a runtime.NetworkAttachment, plain
// values: gVisor joins the namespace, a microVM bridges a TAP device in
// it. After the runtime has destroyed the sandbox, the service tears the
// network down. One service, hence one nftables table, serves every
// runtime of a daemon, so sandboxes of different runtimes share sandbox
// networks (SetPeers).
package netsvc

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/hutch-dev/hutch/internal/failpoint"
	"github.com/hutch-dev/hutch/internal/netplumb"
	"github.com/hutch-dev/hutch/internal/runtime"
)

// Egress is a sandbox's egress policy, as the firewall takes it.
type Egress = netplumb.Egress

// Options configure a Service; JSON, so that the crash watchdog can be
// handed them over its pipe.
type Options struct {
	// Dir is a directory the service owns: each sandbox's namespace and
	// resolv.conf are pinned in Dir/<id>. It names the service's
	// firewall table and veths, so a daemon's service finds what an
	// earlier one of the same data dir left.
	Dir string
	// Pool is the IPv4 prefix sandbox subnets come from
	// ("10.200.0.0/16"); "" leaves networks unavailable.
	Pool string `json:",omitempty"`
	// DNS is hutch's resolver for sandboxes (host:port on the host's
	// loopback): their only nameserver, behind the DNS gate.
	DNS string `json:",omitempty"`
	// CACert is hutch's egress CA (a PEM file), which sandboxes trust
	// (issue 37); "" for none.
	CACert string `json:",omitempty"`
}

// Service plumbs the networks of a daemon's sandboxes. It is safe for
// concurrent use.
type Service struct {
	dir    string
	caCert string
	net    *netplumb.Network

	mu sync.Mutex
	// attached maps sandbox ids to their attachment; guarded by mu.
	attached map[string]*runtime.NetworkAttachment
}

// Names in a sandbox's directory.
const (
	netnsName      = "netns"
	resolvConfName = "resolv.conf"
)

// New returns a Service. It changes nothing on the host until a sandbox
// is attached (or Reconcile finds leftovers).
func New(opts Options) (*Service, error) {
	if opts.Dir == "" {
		return nil, errors.New("network service: no directory")
	}
	var pool netip.Prefix
	if opts.Pool != "" {
		p, err := netip.ParsePrefix(opts.Pool)
		if err != nil {
			return nil, fmt.Errorf("network pool: %w", err)
		}
		pool = p
	}
	var dns netip.AddrPort
	if opts.DNS != "" {
		var err error
		if dns, err = netip.ParseAddrPort(opts.DNS); err != nil {
			return nil, fmt.Errorf("sandbox resolver: %w", err)
		}
	}
	n, err := netplumb.New(netplumb.Options{Pool: pool, Owner: opts.Dir, DNS: dns})
	if err != nil {
		return nil, err
	}
	return &Service{dir: opts.Dir, caCert: opts.CACert, net: n, attached: map[string]*runtime.NetworkAttachment{}}, nil
}

// Table is the name of the service's nftables table (family inet).
func (s *Service) Table() string { return s.net.Table() }

// sandboxDir is where sandbox id's namespace and resolv.conf are pinned.
func (s *Service) sandboxDir(id string) string { return filepath.Join(s.dir, id) }

// Attach makes sandbox id's network: its gateway forwards ports (host
// loopback TCP ports; every other gateway port is closed), its egress
// policy is e, and openPrivate opens the private ranges to it for as long
// as it has the network (block_private_networks off when it was made).
// On error it leaves nothing behind.
func (s *Service) Attach(ctx context.Context, id string, ports []uint16, e netplumb.Egress, openPrivate bool) (_ *runtime.NetworkAttachment, retErr error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	dir := s.sandboxDir(id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the network directory: %w", err)
	}
	defer func() {
		if retErr != nil {
			_ = os.RemoveAll(dir)
		}
	}()
	lease, err := s.net.Setup(ctx, netplumb.Sandbox{ID: id, NetnsPath: filepath.Join(dir, netnsName), Ports: ports, Egress: e, OpenPrivate: openPrivate})
	if err != nil {
		return nil, fmt.Errorf("setting up the network: %w", err)
	}
	failpoint.Hit("network.after-setup")
	resolv := filepath.Join(dir, resolvConfName)
	err = os.WriteFile(resolv, lease.ResolvConf, 0o644)
	if err != nil {
		err = fmt.Errorf("writing resolv.conf: %w", err)
	} else {
		err = writeTerms(dir, lease) // issue 35
	}
	if err != nil {
		_ = s.net.Teardown(ctx, id)
		return nil, err
	}
	return s.register(id, lease), nil
}

// register makes lease sandbox id's attachment.
func (s *Service) register(id string, lease *netplumb.Lease) *runtime.NetworkAttachment {
	a := &runtime.NetworkAttachment{
		NetnsPath:  lease.NetnsPath,
		Addr:       lease.Addr,
		Gateway:    lease.Gateway,
		Bits:       lease.Subnet.Bits(),
		ResolvConf: filepath.Join(s.sandboxDir(id), resolvConfName),
		Nameserver: lease.Gateway, // resolvConf: the gateway is hutch's resolver
		CACert:     s.caCert,
	}
	s.mu.Lock()
	s.attached[id] = a
	s.mu.Unlock()
	return a
}

// checkID refuses an id that is no single path element.
func checkID(id string) error {
	if id == "" || filepath.Base(id) != id || id == "." || id == ".." {
		return fmt.Errorf("invalid sandbox id %q for a network", id)
	}
	return nil
}

// Attachment is sandbox id's attachment, nil if it has none.
func (s *Service) Attachment(id string) *runtime.NetworkAttachment {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attached[id]
}

// Detach tears down sandbox id's network, or what an earlier process left
// of it: firewall rules, veth, namespace and directory; after the last
// sandbox's, the firewall table too, so that an idle daemon leaves no rule
// on the host. Call it once the runtime has destroyed the sandbox. It is
// idempotent.
func (s *Service) Detach(ctx context.Context, id string) error {
	errs := []error{s.detach(ctx, id), s.Release(ctx)}
	return errors.Join(errs...)
}

// detach is Detach without the release of the table.
func (s *Service) detach(ctx context.Context, id string) error {
	s.mu.Lock()
	delete(s.attached, id)
	s.mu.Unlock()
	errs := []error{s.net.Teardown(ctx, id)}
	dir := s.sandboxDir(id)
	// A namespace pinned by an earlier process has no lease here.
	if err := netplumb.RemoveNetns(filepath.Join(dir, netnsName)); err != nil {
		errs = append(errs, err)
	} else if err := os.RemoveAll(dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Reconcile tears down the network of every sandbox keep rejects that has
// anything of this service on the host (a veth, firewall rules, a pinned
// namespace), and removes the firewall table when it kept none and no
// sandbox of this process has a network. It returns the ids it tore down, sorted.
func (s *Service) Reconcile(ctx context.Context, keep func(id string) bool) ([]string, error) {
	ids, err := s.net.IDs(ctx)
	if err != nil {
		return nil, fmt.Errorf("reconciling sandbox networks: %w", err)
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("reconciling sandbox networks: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() {
			ids = append(ids, e.Name())
		}
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	var done []string
	var errs []error
	kept := false
	for _, id := range ids {
		if keep(id) {
			kept = true
			continue
		}
		if err := s.detach(ctx, id); err != nil {
			errs = append(errs, fmt.Errorf("network of sandbox %s: %w", id, err))
			continue
		}
		done = append(done, id)
	}
	// The table holds the rules of the kept sandboxes, which an earlier
	// process may have attached: only with none left may it go.
	if !kept {
		if err := s.Release(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return done, errors.Join(errs...)
}

// Release removes the firewall table when no sandbox has a network, so an
// idle daemon leaves no rule on the host; the next Attach writes it again.
func (s *Service) Release(ctx context.Context) error {
	return s.net.Release(ctx)
}

// Close releases the firewall table of a daemon whose sandboxes are gone.
func (s *Service) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.Release(ctx)
}

// SetEgress replaces sandbox id's egress policy.
func (s *Service) SetEgress(ctx context.Context, id string, e netplumb.Egress) error {
	return s.net.SetEgress(ctx, id, e)
}

// Learn lets sandbox id reach addrs on port for ttl (names its policy
// allows, as the DNS gate answered them).
func (s *Service) Learn(ctx context.Context, id string, addrs []netip.Addr, port uint16, ttl time.Duration) error {
	return s.net.Learn(ctx, id, addrs, port, ttl)
}

// SetPeers replaces the pairs of sandboxes that reach each other, whatever
// runtime each runs in.
func (s *Service) SetPeers(ctx context.Context, pairs [][2]string) error {
	return s.net.SetPeers(ctx, pairs)
}

// Denied counts, per sandbox, the packets its egress policy refused.
func (s *Service) Denied(ctx context.Context) (map[string]uint64, error) {
	return s.net.Denied(ctx)
}
