package networksvc

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/netplumb"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/sandbox"
	"github.com/hutch-dev/hutch/internal/sandbox/sandboxtest"
)

// core is a fake Core: sandboxtest's sandboxes, a fake network service
// (nil: none) and a bucket in memory.
type core struct {
	*sandboxtest.Sandboxes
	net    *fakeNet
	bucket *sandboxtest.Records
}

func (c core) Records(string) (sandbox.Records, error) { return c.bucket, nil }

// newService is the service over c, and a Net over c.net (nil: none).
func newService(c core) (*Service, error) {
	n := NewNet(NetOptions{})
	if c.net != nil {
		n = NewNet(NetOptions{Service: c.net})
	}
	return New(c, n, nil)
}

// fakeNet is a network service: each sandbox's address is given by the
// test; it records the peers it was handed.
type fakeNet struct {
	mu     sync.Mutex
	addrs  map[string]netip.Addr
	peers  [][2]string
	syncs  int
	denied map[string]uint64
	// open are the sandboxes given the private ranges.
	open map[string]bool
}

var _ NetworkService = (*fakeNet)(nil)

// Attach gives sandbox id the address 10.0.1.n, n the attachments so far.
func (f *fakeNet) Attach(_ context.Context, id string, _ []uint16, e netplumb.Egress, openPrivate bool) (*runtime.NetworkAttachment, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.addrs == nil {
		f.addrs, f.open = map[string]netip.Addr{}, map[string]bool{}
	}
	f.open[id] = openPrivate
	f.addrs[id] = netip.AddrFrom4([4]byte{10, 0, 1, byte(len(f.addrs) + 1)})
	return &runtime.NetworkAttachment{Addr: f.addrs[id]}, nil
}

func (f *fakeNet) Attachment(id string) *runtime.NetworkAttachment {
	f.mu.Lock()
	defer f.mu.Unlock()
	if a, ok := f.addrs[id]; ok {
		return &runtime.NetworkAttachment{Addr: a, Gateway: netip.AddrFrom4([4]byte{10, 0, 0, 254})}
	}
	return nil
}

// Adopt finds the network an earlier Attach gave sandbox id, or fails.
func (f *fakeNet) Adopt(_ context.Context, id string, _ netplumb.Egress) (*runtime.NetworkAttachment, bool, error) {
	a := f.Attachment(id)
	if a == nil {
		return nil, false, errors.New("no network to adopt")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return a, f.open[id], nil
}

func (f *fakeNet) Detach(context.Context, string) error { return nil }
func (f *fakeNet) Reconcile(context.Context, func(string) bool) ([]string, error) {
	return nil, nil
}
func (f *fakeNet) SetEgress(context.Context, string, netplumb.Egress) error { return nil }
func (f *fakeNet) Learn(context.Context, string, []netip.Addr, uint16, time.Duration) error {
	return nil
}

func (f *fakeNet) SetPeers(_ context.Context, pairs [][2]string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.peers = slices.Clone(pairs)
	f.syncs++
	return nil
}

func (f *fakeNet) Denied(context.Context) (map[string]uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.denied, nil
}

// state is what the fake network service was last handed.
func (f *fakeNet) state() ([][2]string, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.peers), f.syncs
}

// networked adds a running sandbox of owner with network: true, name and
// address 10.0.0.n.
func networked(sbs *sandboxtest.Sandboxes, net *fakeNet, owner, name string, n int) *sandboxtest.Sandbox {
	sb := sbs.Add(owner)
	sb.Network, sb.Name = true, name
	net.mu.Lock()
	if net.addrs == nil {
		net.addrs = map[string]netip.Addr{}
	}
	net.addrs[sb.ID] = netip.AddrFrom4([4]byte{10, 0, 0, byte(n)})
	net.mu.Unlock()
	return sb
}

func wantCode(t *testing.T, err error, code errdefs.Code) {
	t.Helper()
	if !errdefs.Is(err, code) {
		t.Fatalf("err = %v, want %s", err, code)
	}
}

// TestWithoutNetworkService: without the daemon's network service no
// network is made (S302).
func TestWithoutNetworkService(t *testing.T) {
	s, err := newService(core{Sandboxes: &sandboxtest.Sandboxes{}, bucket: &sandboxtest.Records{}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.CreateNetwork(auth.WithOwner(context.Background(), "alice"), api.NetworkCreateRequest{Name: "app"})
	wantCode(t, err, errdefs.CodeUnsupported)
}

// TestNetworks: networks are the owner's, kept in the store; members are
// running sandboxes with network: true, whose pairs the firewall gets on
// every change and whose peers the resolver finds by name or id; a stop
// takes a sandbox off its networks; a network with members is not deleted.
func TestNetworks(t *testing.T) {
	sbs, net, bucket := &sandboxtest.Sandboxes{}, &fakeNet{}, &sandboxtest.Records{}
	s, err := newService(core{sbs, net, bucket})
	if err != nil {
		t.Fatal(err)
	}
	alice, bob := auth.WithOwner(context.Background(), "alice"), auth.WithOwner(context.Background(), "bob")

	for _, bad := range []string{"", "App", "-app", "a_b", "a.b"} {
		_, err := s.CreateNetwork(alice, api.NetworkCreateRequest{Name: bad})
		wantCode(t, err, errdefs.CodeMalformed)
	}
	info, err := s.CreateNetwork(alice, api.NetworkCreateRequest{Name: "app"})
	if err != nil || info.Name != "app" || info.CreatedAt == "" || info.Members == nil || len(info.Members) != 0 {
		t.Fatalf("create: %+v, %v", info, err)
	}
	_, err = s.CreateNetwork(alice, api.NetworkCreateRequest{Name: "app"})
	wantCode(t, err, errdefs.CodeNetworkInUse)
	if _, err := s.CreateNetwork(bob, api.NetworkCreateRequest{Name: "app"}); err != nil {
		t.Fatalf("another owner's network of the same name: %v", err)
	}
	if list, err := s.ListNetworks(alice, api.NetworkListRequest{}); err != nil || len(list.Networks) != 1 || list.Networks[0].Name != "app" {
		t.Fatalf("list: %+v, %v", list, err)
	}

	web := networked(sbs, net, "alice", "Web", 2)
	db := networked(sbs, net, "alice", "", 3)
	plain := sbs.Add("alice")
	bobs := networked(sbs, net, "bob", "bobs", 4)

	_, err = s.ConnectNetwork(alice, api.NetworkConnectRequest{Network: "app", SandboxID: plain.ID})
	wantCode(t, err, errdefs.CodeNotNetworked)
	_, err = s.ConnectNetwork(alice, api.NetworkConnectRequest{Network: "app", SandboxID: bobs.ID})
	wantCode(t, err, errdefs.CodeNotFound)
	_, err = s.ConnectNetwork(alice, api.NetworkConnectRequest{Network: "nope", SandboxID: web.ID})
	wantCode(t, err, errdefs.CodeNoNetwork)
	if _, err := s.ConnectNetwork(alice, api.NetworkConnectRequest{Network: "app", SandboxID: web.ID}); err != nil {
		t.Fatal(err)
	}
	info, err = s.ConnectNetwork(alice, api.NetworkConnectRequest{Network: "app", SandboxID: db.ID})
	if err != nil || len(info.Members) != 2 {
		t.Fatalf("connect: %+v, %v", info, err)
	}
	for _, m := range info.Members {
		if want := net.Attachment(m.SandboxID).Addr.String(); m.Address != want || (m.SandboxID == web.ID) != (m.Name == "Web") {
			t.Errorf("member %+v, want address %s", m, want)
		}
	}
	pair := [2]string{min(web.ID, db.ID), max(web.ID, db.ID)}
	if peers, _ := net.state(); len(peers) != 1 || peers[0] != pair {
		t.Errorf("the firewall's peers %v, want %v", peers, pair)
	}
	webAddr, dbAddr := net.Attachment(web.ID).Addr, net.Attachment(db.ID).Addr
	for _, tc := range []struct {
		from, name string
		want       []netip.Addr
	}{
		{db.ID, "web", []netip.Addr{webAddr}},
		{db.ID, "web.app", []netip.Addr{webAddr}},
		{web.ID, db.ID, []netip.Addr{dbAddr}},
		{web.ID, db.ID + ".app", []netip.Addr{dbAddr}},
		{web.ID, "web", nil}, // itself
		{web.ID, "web.other", nil},
		{bobs.ID, "web", nil}, // not a member
	} {
		if got := s.Peers(tc.from, tc.name); !slices.Equal(got, tc.want) {
			t.Errorf("Peers(%s, %q) = %v, want %v", tc.from, tc.name, got, tc.want)
		}
	}

	_, err = s.DeleteNetwork(alice, api.NetworkRequest{Name: "app"})
	wantCode(t, err, errdefs.CodeNetworkInUse)
	if _, err := s.DisconnectNetwork(alice, api.NetworkConnectRequest{Network: "app", SandboxID: db.ID}); err != nil {
		t.Fatal(err)
	}
	_, err = s.DisconnectNetwork(alice, api.NetworkConnectRequest{Network: "app", SandboxID: db.ID})
	wantCode(t, err, errdefs.CodeNoNetwork)
	if peers, _ := net.state(); len(peers) != 0 {
		t.Errorf("peers after the disconnect: %v", peers)
	}

	// A hibernated sandbox's new network gets its peers again; one on no
	// network changes nothing.
	_, before := net.state()
	s.Renewed(context.Background(), db.ID)
	if _, n := net.state(); n != before {
		t.Errorf("a sandbox on no network renewed the peers")
	}
	s.Renewed(context.Background(), web.ID)
	if _, n := net.state(); n != before+1 {
		t.Errorf("a member's renewed network did not renew the peers")
	}

	// A stopped sandbox leaves its networks, and connects to none.
	sbs.SetState(web, sandbox.Stopped)
	s.Leave(web.ID)
	if list, _ := s.ListNetworks(alice, api.NetworkListRequest{}); len(list.Networks[0].Members) != 0 {
		t.Errorf("a stopped sandbox is still a member: %+v", list.Networks[0])
	}
	_, err = s.ConnectNetwork(alice, api.NetworkConnectRequest{Network: "app", SandboxID: web.ID})
	wantCode(t, err, errdefs.CodeStopped)

	// The networks are the store's: a new service has them, without members.
	again, err := newService(core{sbs, net, bucket})
	if err != nil {
		t.Fatal(err)
	}
	if list, err := again.ListNetworks(bob, api.NetworkListRequest{}); err != nil || len(list.Networks) != 1 || list.Networks[0].Name != "app" {
		t.Errorf("bob's networks after a restart: %+v, %v", list, err)
	}
	if _, err := s.DeleteNetwork(alice, api.NetworkRequest{Name: "app"}); err != nil {
		t.Fatal(err)
	}
	_, err = s.DeleteNetwork(alice, api.NetworkRequest{Name: "app"})
	wantCode(t, err, errdefs.CodeNoNetwork)
	if again, _ = newService(core{sbs, net, bucket}); again != nil {
		if list, _ := again.ListNetworks(alice, api.NetworkListRequest{}); len(list.Networks) != 0 {
			t.Errorf("a deleted network is back after a restart: %+v", list)
		}
	}
}

// TestNetworkLimits: an owner has at most maxNetworksPerOwner networks, a
// network at most maxNetworkMembers members (one connected again does
// not count twice).
func TestNetworkLimits(t *testing.T) {
	sbs, net := &sandboxtest.Sandboxes{}, &fakeNet{}
	s, err := newService(core{sbs, net, &sandboxtest.Records{}})
	if err != nil {
		t.Fatal(err)
	}
	alice := auth.WithOwner(context.Background(), "alice")
	for i := range maxNetworksPerOwner {
		if _, err := s.CreateNetwork(alice, api.NetworkCreateRequest{Name: fmt.Sprintf("n%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = s.CreateNetwork(alice, api.NetworkCreateRequest{Name: "one-more"})
	wantCode(t, err, errdefs.CodeCapacity)
	var first string
	for i := range maxNetworkMembers {
		sb := networked(sbs, net, "alice", "", i+1)
		if first == "" {
			first = sb.ID
		}
		if _, err := s.ConnectNetwork(alice, api.NetworkConnectRequest{Network: "n0", SandboxID: sb.ID}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.ConnectNetwork(alice, api.NetworkConnectRequest{Network: "n0", SandboxID: first}); err != nil {
		t.Errorf("connecting a member again at the limit: %v", err)
	}
	extra := networked(sbs, net, "alice", "", 200)
	_, err = s.ConnectNetwork(alice, api.NetworkConnectRequest{Network: "n0", SandboxID: extra.ID})
	wantCode(t, err, errdefs.CodeCapacity)
}

// TestUpdateNetwork: a policy is checked before the sandbox is looked
// up; a sandbox with network: true gets it, and the answer says its
// networks, address, policy and refused packets; an empty policy lifts it.
func TestUpdateNetwork(t *testing.T) {
	sbs, net := &sandboxtest.Sandboxes{}, &fakeNet{}
	s, err := newService(core{sbs, net, &sandboxtest.Records{}})
	if err != nil {
		t.Fatal(err)
	}
	alice := auth.WithOwner(context.Background(), "alice")
	sb := networked(sbs, net, "alice", "", 7)
	plain := sbs.Add("alice")
	net.denied = map[string]uint64{sb.ID: 5}

	_, err = s.UpdateNetwork(alice, api.NetworkUpdateRequest{SandboxID: "not-a-sandbox", EgressPolicy: api.EgressPolicy{AllowOut: []string{"::1"}}})
	wantCode(t, err, errdefs.CodeMalformed)
	_, err = s.UpdateNetwork(alice, api.NetworkUpdateRequest{SandboxID: plain.ID, EgressPolicy: api.EgressPolicy{AllowOut: []string{"pypi.org"}}})
	wantCode(t, err, errdefs.CodeNotNetworked)

	if _, err := s.CreateNetwork(alice, api.NetworkCreateRequest{Name: "app"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ConnectNetwork(alice, api.NetworkConnectRequest{Network: "app", SandboxID: sb.ID}); err != nil {
		t.Fatal(err)
	}
	pol := api.EgressPolicy{AllowOut: []string{"pypi.org", "10.0.0.0/8"}}
	got, err := s.UpdateNetwork(alice, api.NetworkUpdateRequest{SandboxID: sb.ID, EgressPolicy: pol})
	if err != nil {
		t.Fatal(err)
	}
	if got.SandboxID != sb.ID || !slices.Equal(got.Networks, []string{"app"}) || got.Address != "10.0.0.7" || got.EgressDenied != 5 || !slices.Equal(got.AllowOut, pol.AllowOut) {
		t.Errorf("update: %+v", got)
	}
	if e := sbs.Snapshot(sb).Egress; e == nil || !slices.Equal(e.AllowOut, pol.AllowOut) {
		t.Errorf("the sandbox's policy: %+v", e)
	}
	got, err = s.UpdateNetwork(alice, api.NetworkUpdateRequest{SandboxID: sb.ID})
	if err != nil || !got.EgressPolicy.Empty() || sbs.Snapshot(sb).Egress != nil {
		t.Errorf("lifting the policy: %+v, %v", got, err)
	}
}
