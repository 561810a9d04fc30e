// Package netplumb gives a sandbox a network of its own on a Linux host: a
// network namespace pinned at a path its caller chooses, a veth pair whose
// sandbox end (eth0) lives in it, a /30 from a configurable pool (host end
// = gateway, sandbox end = the next address), NAT to the outside, a
// resolv.conf that works from inside, and TCP port forwards from the
// gateway to the host's loopback for the ports the sandbox was given — and
// nothing else of the host. Sandboxes cannot reach each other.
//
// Links and routes are made over netlink (vishvananda/netlink); the
// firewall is one nftables table per Network (see nft.go). Everything a
// sandbox gets is named by its id, so that Teardown can remove it after a
// crash as well as after a normal stop: the host veth is hutch<hash> with
// the link alias "hutch:<table>:<id>", the nftables chain is sandbox_<id>
// and its set and map elements carry the id in a comment. An address
// lease is the host veth's address, so deleting the veth releases it; a
// host-wide lock file keeps two daemons from taking the same subnet.
package netplumb

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/hutch-dev/hutch/internal/cleanup"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// DefaultLockPath is the host-wide file that serializes address allocation
// between every hutch daemon on the host.
const DefaultLockPath = "/run/hutch/netpool.lock"

// sandboxIf is the name of the sandbox's end of its veth, in its namespace.
const sandboxIf = "eth0"

// Options configure a Network.
type Options struct {
	// Pool is the IPv4 prefix sandbox subnets (one /30 each) come from.
	Pool netip.Prefix
	// Owner tells this Network's resources from those of other daemons on
	// the host (it is hashed into the names): the daemon's network
	// service uses its directory (internal/netsvc). It also appears in the nftables table's comment.
	Owner string
	// NftPath is the nft binary; "" looks for nft on PATH when needed.
	NftPath string
	// HostResolvConf is the host's resolver configuration; "" means
	// /etc/resolv.conf.
	HostResolvConf string
	// LockPath is the allocation lock file; "" means DefaultLockPath.
	LockPath string
	// DNS is hutch's resolver on the host (127.0.0.1:port), which the
	// gateway's port 53 leads to: the sandbox's only nameserver.
	DNS netip.AddrPort
}

// Sandbox is what Setup needs to know of a sandbox.
type Sandbox struct {
	// ID is the sandbox's id: letters, digits, '_', '.', '-'.
	ID string
	// NetnsPath is where the network namespace is pinned: a file that
	// Setup creates and a runtime joins (internal/netsvc hands it over in
	// runtime.NetworkAttachment).
	NetnsPath string
	// Ports are the host loopback TCP ports that the gateway forwards.
	Ports []uint16
	// Egress is its outbound policy (SetEgress changes it).
	Egress Egress
	// OpenPrivate opens the private and cloud-internal ranges to it
	// (block_private_networks off when it was made); false closes them.
	OpenPrivate bool
}

// Lease is a sandbox's network.
type Lease struct {
	// ID is the sandbox's id.
	ID string
	// HostIf is the host's end of the veth.
	HostIf string
	// Subnet is the sandbox's /30; Gateway (the host end) and Addr (the
	// sandbox's eth0) are its two usable addresses.
	Subnet  netip.Prefix
	Gateway netip.Addr
	Addr    netip.Addr
	// Ports are the forwarded TCP ports, sorted.
	Ports []uint16
	// NetnsPath is the pinned network namespace.
	NetnsPath string
	// ResolvConf is the /etc/resolv.conf the sandbox should see.
	ResolvConf []byte
	// OpenPrivate is Sandbox.OpenPrivate, for as long as the lease lives.
	OpenPrivate bool
}

// Network plumbs sandboxes' networks. It is safe for concurrent use.
type Network struct {
	opts  Options
	nft   nft
	owner string // hash of Options.Owner, in link names

	// allocMu serializes this process's allocations; the lock file
	// serializes them with other processes.
	allocMu sync.Mutex

	mu sync.Mutex
	// The fields below are guarded by mu.
	// leases maps sandbox ids to their lease; nil while Setup runs.
	leases map[string]*Lease
	// busy counts Setups in progress.
	busy int
	// baseReady is set once the table's fixed part is in place.
	baseReady bool
	// stale is set while the table may hold rules of an earlier process.
	stale bool
	// peers are the elements of the peers set (SetPeers).
	peers [][2]string
}

// New returns a Network. It changes nothing on the host: the firewall
// table is created by the first Setup.
func New(opts Options) (*Network, error) {
	if opts.Pool.IsValid() {
		if err := CheckPool(opts.Pool); err != nil {
			return nil, fmt.Errorf("network pool: %w", err)
		}
	}
	if opts.HostResolvConf == "" {
		opts.HostResolvConf = "/etc/resolv.conf"
	}
	if opts.LockPath == "" {
		opts.LockPath = DefaultLockPath
	}
	sum := sha256.Sum256([]byte(opts.Owner))
	h := hex.EncodeToString(sum[:])
	return &Network{
		opts:  opts,
		owner: h,
		nft: nft{
			bin:     opts.NftPath,
			table:   "hutch_" + h[:10],
			comment: "hutch sandboxes of " + sanitize(opts.Owner),
			pool:    opts.Pool,
		},
		leases: map[string]*Lease{},
		stale:  true,
	}, nil
}

// Table is the name of the Network's nftables table (family inet).
func (n *Network) Table() string { return n.nft.table }

// validID matches the ids Setup accepts: they are written into interface
// aliases, chain names and rule comments.
var validID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$`)

// hostIf names the host end of sandbox id's veth (15 bytes at most).
func (n *Network) hostIf(id string) string {
	sum := sha256.Sum256([]byte(n.owner + "\x00" + id))
	return "hutch" + hex.EncodeToString(sum[:5])
}

// alias is the link alias of sandbox id's host veth.
func (n *Network) alias(id string) string { return "hutch:" + n.nft.table + ":" + id }

// Setup gives a sandbox its network. On error it leaves nothing behind.
func (n *Network) Setup(ctx context.Context, sb Sandbox) (_ *Lease, retErr error) {
	if !validID.MatchString(sb.ID) {
		return nil, fmt.Errorf("invalid sandbox id %q for a network", sb.ID)
	}
	if !n.opts.Pool.IsValid() {
		return nil, errors.New("no network pool is configured (network_pool)")
	}
	n.mu.Lock()
	if _, dup := n.leases[sb.ID]; dup {
		n.mu.Unlock()
		return nil, fmt.Errorf("sandbox %s already has a network", sb.ID)
	}
	n.leases[sb.ID] = nil // reserved until Setup ends
	n.busy++
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		n.busy--
		n.mu.Unlock()
	}()
	var undo cleanup.Stack
	defer undo.RunUnless(ctx, &retErr)
	undo.Push("releasing the reservation", func(context.Context) error {
		n.mu.Lock()
		defer n.mu.Unlock()
		delete(n.leases, sb.ID)
		return nil
	})
	if err := n.ensureBase(ctx); err != nil {
		return nil, err
	}
	l := &Lease{ID: sb.ID, HostIf: n.hostIf(sb.ID), NetnsPath: sb.NetnsPath, Ports: sortedPorts(sb.Ports), OpenPrivate: sb.OpenPrivate}
	undo.Push("tearing down the network of "+sb.ID, func(ctx context.Context) error { return n.teardown(ctx, sb.ID, l) })
	if err := newNetns(sb.NetnsPath); err != nil {
		return nil, err
	}
	ns, err := netns.GetFromPath(sb.NetnsPath)
	if err != nil {
		return nil, fmt.Errorf("opening network namespace: %w", err)
	}
	defer ns.Close()
	if err := n.createVeth(l, ns); err != nil {
		return nil, err
	}
	if err := configureSandboxSide(ns, l); err != nil {
		return nil, err
	}
	host, err := n.readResolvConf()
	if err != nil {
		return nil, err
	}
	l.ResolvConf = resolvConf(host, l.Gateway)
	if err := n.nft.apply(ctx, n.nft.addScript(l, n.opts.DNS, sb.Egress)); err != nil {
		return nil, err
	}
	n.mu.Lock()
	n.leases[sb.ID] = l
	n.mu.Unlock()
	return l, nil
}

// readResolvConf reads the host's resolver configuration; none is empty.
func (n *Network) readResolvConf() ([]byte, error) {
	host, err := os.ReadFile(n.opts.HostResolvConf)
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("reading the host's resolver configuration: %w", err)
	}
	return host, nil
}

// ensureBase turns on IPv4 forwarding and writes the table's fixed part,
// once per table lifetime.
func (n *Network) ensureBase(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.baseReady {
		return nil
	}
	if err := n.findNftLocked(); err != nil {
		return err
	}
	// Forwarding is host-wide; it stays on (as with Docker).
	if err := writeSysctl("net/ipv4/ip_forward", "1"); err != nil {
		return err
	}
	if err := n.nft.apply(ctx, n.nft.baseScript()); err != nil {
		return fmt.Errorf("installing the sandbox firewall: %w", err)
	}
	n.baseReady = true
	return nil
}

// findNftLocked resolves the nft binary once; n.mu must be held.
func (n *Network) findNftLocked() error {
	if strings.Contains(n.nft.bin, "/") {
		return nil
	}
	name := n.nft.bin
	if name == "" {
		name = "nft"
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return fmt.Errorf("sandbox networking needs the nft command of nftables (apt install nftables): %w", err)
	}
	n.nft.bin = p
	return nil
}

// createVeth takes a free subnet and creates the veth pair with the
// sandbox end in ns, the host end up with the gateway address. The
// address is the lease, so the host-wide lock is held until it is set.
func (n *Network) createVeth(l *Lease, ns netns.NsHandle) error {
	unlock, err := n.lockPool()
	if err != nil {
		return err
	}
	defer unlock()
	used, err := hostPrefixes()
	if err != nil {
		return err
	}
	subnet, ok := pool{n.opts.Pool}.free(used)
	if !ok {
		return errdefs.New(errdefs.CodeCapacity, "network_pool %s has no free /%d subnet left for a sandbox with network: true", n.opts.Pool, blockBits).
			WithFix(nil, "stop a sandbox that has network: true, or widen network_pool")
	}
	l.Subnet = subnet
	l.Gateway, l.Addr = subnetAddrs(subnet)

	attrs := netlink.NewLinkAttrs()
	attrs.Name = l.HostIf
	veth := &netlink.Veth{LinkAttrs: attrs, PeerName: sandboxIf, PeerNamespace: netlink.NsFd(int(ns))}
	if err := netlink.LinkAdd(veth); err != nil {
		return fmt.Errorf("creating veth %s: %w", l.HostIf, err)
	}
	link, err := netlink.LinkByName(l.HostIf)
	if err != nil {
		return fmt.Errorf("finding veth %s: %w", l.HostIf, err)
	}
	if err := netlink.LinkSetAlias(link, n.alias(l.ID)); err != nil {
		return fmt.Errorf("naming veth %s: %w", l.HostIf, err)
	}
	// No IPv6 on the host end: the host is reachable over IPv4 only,
	// through the firewall. route_localnet lets DNAT to 127.0.0.1 route.
	if err := writeSysctl("net/ipv6/conf/"+l.HostIf+"/disable_ipv6", "1"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := writeSysctl("net/ipv4/conf/"+l.HostIf+"/route_localnet", "1"); err != nil {
		return err
	}
	if err := netlink.AddrAdd(link, &netlink.Addr{IPNet: ipNet(l.Gateway, blockBits)}); err != nil {
		return fmt.Errorf("adding gateway address %s: %w", l.Gateway, err)
	}
	if err := netlink.LinkSetUp(link); err != nil {
		return fmt.Errorf("bringing up veth %s: %w", l.HostIf, err)
	}
	return nil
}

// configureSandboxSide gives the sandbox end its address, brings it and
// loopback up, and routes everything through the gateway.
func configureSandboxSide(ns netns.NsHandle, l *Lease) error {
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return fmt.Errorf("opening netlink in the sandbox's namespace: %w", err)
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err == nil {
		err = h.LinkSetUp(lo)
	}
	if err != nil {
		return fmt.Errorf("bringing up the sandbox's loopback: %w", err)
	}
	eth, err := h.LinkByName(sandboxIf)
	if err != nil {
		return fmt.Errorf("finding the sandbox's %s: %w", sandboxIf, err)
	}
	if err := h.AddrAdd(eth, &netlink.Addr{IPNet: ipNet(l.Addr, blockBits)}); err != nil {
		return fmt.Errorf("adding the sandbox's address %s: %w", l.Addr, err)
	}
	if err := h.LinkSetUp(eth); err != nil {
		return fmt.Errorf("bringing up the sandbox's %s: %w", sandboxIf, err)
	}
	route := &netlink.Route{LinkIndex: eth.Attrs().Index, Gw: l.Gateway.AsSlice()}
	if err := h.RouteAdd(route); err != nil {
		return fmt.Errorf("adding the sandbox's default route: %w", err)
	}
	return nil
}

// Teardown removes everything sandbox id got from Setup, or that an
// earlier process's Setup left for it: firewall rules, the veth (and the
// address lease with it), connection tracking entries and the pinned
// namespace. It is idempotent.
func (n *Network) Teardown(ctx context.Context, id string) error {
	n.mu.Lock()
	l := n.leases[id]
	n.mu.Unlock()
	return n.teardown(ctx, id, l)
}

// teardown is Teardown with the lease when known (nil after a crash: then
// the netns is left to the caller, which pinned it in its own directory).
func (n *Network) teardown(ctx context.Context, id string, l *Lease) error {
	hostIf := n.hostIf(id)
	n.mu.Lock()
	registered := l != nil && n.leases[id] == l
	delete(n.leases, id)
	var peers [][2]string
	n.peers = slices.DeleteFunc(n.peers, func(p [2]string) bool {
		if p[0] == hostIf || p[1] == hostIf {
			peers = append(peers, p)
			return true
		}
		return false
	})
	stale := n.stale
	rules := (stale || (l != nil && n.baseReady)) && n.findNftLocked() == nil
	n.mu.Unlock()
	var errs []error
	if rules {
		// A registered lease's rules went in as one transaction: they are
		// known. Otherwise (a failed Setup, an earlier process) look.
		var st *tableState
		var err error
		if registered && !stale {
			st = stateOf(l, peers)
		} else {
			st, err = n.nft.list(ctx)
		}
		if err == nil {
			err = n.nft.apply(ctx, n.nft.deleteScript(st, id, hostIf))
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("removing firewall rules of sandbox %s: %w", id, err))
		}
	}
	if err := n.deleteVeth(id); err != nil {
		errs = append(errs, err)
	}
	if l != nil && l.NetnsPath != "" {
		if err := RemoveNetns(l.NetnsPath); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// deleteVeth deletes sandbox id's veth pair, after dropping the connection
// tracking entries of the sandbox's address. A missing veth is not an
// error; a link of that name that is not hutch's is left alone.
func (n *Network) deleteVeth(id string) error {
	name := n.hostIf(id)
	link, err := netlink.LinkByName(name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil
		}
		return fmt.Errorf("finding veth %s: %w", name, err)
	}
	// A crash between creating the link and naming it leaves no alias.
	if a := link.Attrs().Alias; a != "" && a != n.alias(id) {
		return fmt.Errorf("link %s is not hutch's (alias %q); leaving it", name, a)
	}
	if addrs, err := netlink.AddrList(link, netlink.FAMILY_V4); err == nil {
		for _, a := range addrs {
			gw, ok := netip.AddrFromSlice(a.IP.To4())
			if ok && n.opts.Pool.Contains(gw) {
				forgetConnections(gw.Next())
			}
		}
	}
	if err := netlink.LinkDel(link); err != nil {
		var nf netlink.LinkNotFoundError
		if !errors.As(err, &nf) {
			return fmt.Errorf("deleting veth %s: %w", name, err)
		}
	}
	return nil
}

// forgetConnections drops the connection tracking entries that addr
// started, so that a later sandbox given the same address inherits none.
// It is best effort: entries also expire on their own.
func forgetConnections(addr netip.Addr) {
	f := &netlink.ConntrackFilter{}
	if f.AddIP(netlink.ConntrackOrigSrcIP, addr.AsSlice()) == nil {
		_, _ = netlink.ConntrackDeleteFilters(netlink.ConntrackTable, unix.AF_INET, f)
	}
}

// IDs lists the sandboxes that have anything of this Network on the host:
// a veth or firewall rules. The network service reconciles them after a
// crash.
func (n *Network) IDs(ctx context.Context) ([]string, error) {
	set := map[string]bool{}
	links, err := netlink.LinkList()
	if err != nil {
		return nil, fmt.Errorf("listing links: %w", err)
	}
	prefix := "hutch:" + n.nft.table + ":"
	for _, l := range links {
		if id, ok := strings.CutPrefix(l.Attrs().Alias, prefix); ok {
			set[id] = true
		}
	}
	n.mu.Lock()
	rules := (n.stale || n.baseReady) && n.findNftLocked() == nil
	n.mu.Unlock()
	if rules {
		st, err := n.nft.list(ctx)
		if err != nil {
			return nil, err
		}
		for _, id := range st.ids() {
			set[id] = true
		}
	}
	ids := make([]string, 0, len(set))
	for id := range set {
		if validID.MatchString(id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// Release deletes the firewall table when no sandbox has a network (nor is
// getting one), so that an idle daemon leaves no rule on the host. The
// next Setup writes it again.
func (n *Network) Release(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.leases) > 0 || n.busy > 0 || !(n.baseReady || n.stale) {
		return nil
	}
	if n.findNftLocked() != nil {
		// Without nft no table can have been written.
		n.baseReady, n.stale = false, false
		return nil
	}
	if err := n.nft.deleteTable(ctx); err != nil {
		return fmt.Errorf("removing the sandbox firewall: %w", err)
	}
	n.baseReady, n.stale = false, false
	return nil
}

// lockPool takes the host-wide allocation lock.
func (n *Network) lockPool() (unlock func(), err error) {
	n.allocMu.Lock()
	if err := os.MkdirAll(filepath.Dir(n.opts.LockPath), 0o755); err != nil {
		n.allocMu.Unlock()
		return nil, fmt.Errorf("creating lock directory: %w", err)
	}
	f, err := os.OpenFile(n.opts.LockPath, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		n.allocMu.Unlock()
		return nil, fmt.Errorf("opening network lock: %w", err)
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		n.allocMu.Unlock()
		return nil, fmt.Errorf("locking %s: %w", n.opts.LockPath, err)
	}
	return func() {
		f.Close() // releases the flock
		n.allocMu.Unlock()
	}, nil
}

// hostPrefixes lists the IPv4 prefixes the host uses: every route's
// destination in every table, and every address with its subnet.
func hostPrefixes() ([]netip.Prefix, error) {
	var used []netip.Prefix
	routes, err := netlink.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE)
	if err != nil {
		return nil, fmt.Errorf("listing routes: %w", err)
	}
	for _, r := range routes {
		if p, ok := prefixOf(r.Dst); ok && p.Bits() > 0 {
			used = append(used, p)
		}
	}
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_V4)
	if err != nil {
		return nil, fmt.Errorf("listing addresses: %w", err)
	}
	for _, a := range addrs {
		if p, ok := prefixOf(a.IPNet); ok {
			used = append(used, p.Masked(), netip.PrefixFrom(p.Addr(), 32))
		}
	}
	return used, nil
}

// prefixOf converts an IPv4 net.IPNet.
func prefixOf(n *net.IPNet) (netip.Prefix, bool) {
	if n == nil {
		return netip.Prefix{}, false
	}
	a, ok := netip.AddrFromSlice(n.IP.To4())
	ones, bits := n.Mask.Size()
	if !ok || bits != 32 {
		return netip.Prefix{}, false
	}
	return netip.PrefixFrom(a, ones), true
}

// ipNet is addr/bits as a net.IPNet.
func ipNet(addr netip.Addr, bits int) *net.IPNet {
	return &net.IPNet{IP: addr.AsSlice(), Mask: net.CIDRMask(bits, 32)}
}

// writeSysctl sets /proc/sys/<key> unless it already has value.
func writeSysctl(key, value string) error {
	path := filepath.Join("/proc/sys", key)
	if cur, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(cur)) == value {
		return nil
	}
	if err := os.WriteFile(path, []byte(value), 0o644); err != nil {
		return fmt.Errorf("setting %s: %w", strings.ReplaceAll(key, "/", "."), err)
	}
	return nil
}

// sortedPorts returns ports sorted without duplicates or zeros.
func sortedPorts(ports []uint16) []uint16 {
	out := slices.Clone(ports)
	out = slices.DeleteFunc(out, func(p uint16) bool { return p == 0 })
	slices.Sort(out)
	return slices.Compact(out)
}

// sanitize keeps a string safe inside an nft comment.
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x80 && (r == '/' || r == '_' || r == '.' || r == '-' || r == ':' ||
			('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9')) {
			return r
		}
		return '_'
	}, s)
}
