package netplumb

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// testPool is a pool no daemon on a test machine uses by default.
var testPool = netip.MustParsePrefix("10.231.0.0/24")

// newTestNetwork returns a Network owned by a fresh directory, removing
// its table when the test ends.
func newTestNetwork(t *testing.T, owner string, pool netip.Prefix) *Network {
	t.Helper()
	testutil.RequiresRoot(t)
	testutil.RequiresBinary(t, "nft")
	n, err := New(Options{Pool: pool, Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Release(context.Background()) })
	return n
}

// inNetns runs f on a thread inside the network namespace pinned at path.
// The thread is discarded afterwards.
func inNetns(path string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		goruntime.LockOSThread() // never unlocked: the thread dies with the goroutine
		ns, err := netns.GetFromPath(path)
		if err != nil {
			errc <- err
			return
		}
		defer ns.Close()
		if err := netns.Set(ns); err != nil {
			errc <- err
			return
		}
		errc <- f()
	}()
	return <-errc
}

// httpGet fetches http://addr/ over a connection dialled in the calling
// thread's namespace (net/http would dial on another thread).
func httpGet(addr string) (string, error) { return httpGetFrom(netip.Addr{}, addr) }

// httpGetFrom is httpGet from source address src (any when zero).
func httpGetFrom(src netip.Addr, addr string) (string, error) {
	d := net.Dialer{Timeout: 2 * time.Second}
	if src.IsValid() {
		d.LocalAddr = &net.TCPAddr{IP: src.AsSlice()}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	fmt.Fprintf(c, "GET / HTTP/1.0\r\nHost: x\r\n\r\n")
	b, err := io.ReadAll(c)
	if err != nil {
		return "", err
	}
	_, body, _ := strings.Cut(string(b), "\r\n\r\n")
	return body, nil
}

// loopbackServer serves body on 127.0.0.1 and returns its port.
func loopbackServer(t *testing.T, body string) uint16 {
	t.Helper()
	return testutil.ServeHTTP(t, "127.0.0.1:0", body)
}

// udpEcho echoes UDP datagrams on addr; nil when addr is taken.
func udpEcho(t *testing.T, addr string) net.PacketConn {
	t.Helper()
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		t.Logf("no fake resolver on %s (%v): DNS forwarding not tested", addr, err)
		return nil
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = pc.WriteTo(buf[:n], from)
		}
	}()
	return pc
}

// udpAsk sends msg to addr over UDP and returns the answer.
func udpAsk(addr, msg string) (string, error) {
	c, err := net.Dial("udp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte(msg)); err != nil {
		return "", err
	}
	buf := make([]byte, 512)
	n, err := c.Read(buf)
	return string(buf[:n]), err
}

// assertGone checks that nothing of sandbox id is left on the host.
func assertGone(t *testing.T, n *Network, id, netnsPath string) {
	t.Helper()
	if _, err := netlink.LinkByName(n.hostIf(id)); err == nil {
		t.Errorf("veth %s of %s still exists", n.hostIf(id), id)
	}
	ids, err := n.IDs(context.Background())
	if err != nil || slices.Contains(ids, id) {
		t.Errorf("IDs after teardown = %v, %v; still has %s", ids, err, id)
	}
	if st, err := n.nft.list(context.Background()); err == nil {
		for _, name := range slices.Concat(st.chains, st.sets, st.counters) {
			if strings.HasSuffix(name, "_"+id) {
				t.Errorf("nft object %s of %s is left", name, id)
			}
		}
		for _, p := range slices.Concat(st.peers, st.sources) {
			if p[0] == n.hostIf(id) || p[1] == n.hostIf(id) {
				t.Errorf("set element %v of %s is left", p, id)
			}
		}
	}
	if netnsPath != "" {
		if _, err := os.Stat(netnsPath); !os.IsNotExist(err) {
			t.Errorf("network namespace %s still pinned (%v)", netnsPath, err)
		}
	}
}

func TestNetworkWithKernelNamespaces(t *testing.T) {
	dir := t.TempDir()
	n := newTestNetwork(t, dir, testPool)
	ctx := context.Background()
	allowed := loopbackServer(t, "allowed")
	other := loopbackServer(t, "other")
	// A host service on every address would answer on the gateway's
	// address but for the firewall.
	wildcard := testutil.ServeHTTP(t, "0.0.0.0:0", "wildcard")
	// A stand-in for hutch's resolver: the gateway's port 53 leads to it.
	dns := udpEcho(t, "127.0.0.1:0")
	n.opts.DNS = netip.MustParseAddrPort(dns.LocalAddr().String())

	a, err := n.Setup(ctx, Sandbox{ID: "net-test-a", NetnsPath: filepath.Join(dir, "a"), Ports: []uint16{allowed}})
	if err != nil {
		t.Fatalf("Setup a: %v", err)
	}
	b, err := n.Setup(ctx, Sandbox{ID: "net-test-b", NetnsPath: filepath.Join(dir, "b")})
	if err != nil {
		t.Fatalf("Setup b: %v", err)
	}
	if !testPool.Contains(a.Gateway) || !a.Subnet.Contains(a.Addr) || a.Subnet.Overlaps(b.Subnet) {
		t.Fatalf("leases overlap or leave the pool: a %+v, b %+v", a, b)
	}
	if _, err := n.Setup(ctx, Sandbox{ID: "net-test-a", NetnsPath: filepath.Join(dir, "a2")}); err == nil {
		t.Fatal("a second Setup of the same id succeeded")
	}

	// b listens on its own address, inside its namespace.
	var bListener net.Listener
	if err := inNetns(b.NetnsPath, func() (err error) {
		bListener, err = net.Listen("tcp", netip.AddrPortFrom(b.Addr, 8000).String())
		return err
	}); err != nil {
		t.Fatalf("listening in b: %v", err)
	}
	defer bListener.Close()
	go http.Serve(bListener, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "b") }))

	for _, tc := range []struct {
		name, addr, want string // want "" means unreachable
	}{
		{"forwarded port reaches the host's loopback", netip.AddrPortFrom(a.Gateway, allowed).String(), "allowed"},
		{"port not given is closed", netip.AddrPortFrom(a.Gateway, other).String(), ""},
		{"host service on every address is closed", netip.AddrPortFrom(a.Gateway, wildcard).String(), ""},
		{"another sandbox is unreachable", netip.AddrPortFrom(b.Addr, 8000).String(), ""},
		{"another sandbox's gateway is not a way in", netip.AddrPortFrom(b.Gateway, allowed).String(), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got string
			err := inNetns(a.NetnsPath, func() (err error) { got, err = httpGet(tc.addr); return err })
			if tc.want == "" && err == nil {
				t.Fatalf("GET %s from a = %q, want a failure", tc.addr, got)
			}
			if tc.want != "" && (err != nil || got != tc.want) {
				t.Fatalf("GET %s from a = %q, %v; want %q", tc.addr, got, err, tc.want)
			}
		})
	}
	if want := "nameserver " + a.Gateway.String() + "\n"; !strings.Contains(string(a.ResolvConf), want) {
		t.Errorf("resolv.conf of a lacks %q:\n%s", want, a.ResolvConf)
	}
	var answer string
	err = inNetns(a.NetnsPath, func() (err error) {
		answer, err = udpAsk(netip.AddrPortFrom(a.Gateway, 53).String(), "query")
		return err
	})
	if err != nil || answer != "query" {
		t.Errorf("DNS through the gateway: %q, %v", answer, err)
	}

	// Peers: a and b reach each other once they share a network, and not
	// after.
	toB := netip.AddrPortFrom(b.Addr, 8000).String()
	if err := n.SetPeers(ctx, [][2]string{{a.ID, b.ID}, {a.ID, "not-a-sandbox"}}); err != nil {
		t.Fatal(err)
	}
	if err := inNetns(a.NetnsPath, func() (err error) { answer, err = httpGet(toB); return err }); err != nil || answer != "b" {
		t.Errorf("a → b as peers: %q, %v", answer, err)
	}
	if err := n.SetPeers(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := inNetns(a.NetnsPath, func() (err error) { answer, err = httpGet(toB); return err }); err == nil {
		t.Errorf("a → b after the network was dissolved: %q", answer)
	}
	testEgress(t, n, a)
	if err := n.SetPeers(ctx, [][2]string{{a.ID, b.ID}}); err != nil { // left for Teardown
		t.Fatal(err)
	}
	// b's server works from inside b, so a's failure above is the firewall.
	var got string
	if err := inNetns(b.NetnsPath, func() (err error) { got, err = httpGet(netip.AddrPortFrom(b.Addr, 8000).String()); return err }); err != nil || got != "b" {
		t.Fatalf("b's own server: %q, %v", got, err)
	}

	for _, l := range []*Lease{a, b} {
		if err := n.Teardown(ctx, l.ID); err != nil {
			t.Fatalf("Teardown %s: %v", l.ID, err)
		}
		if err := n.Teardown(ctx, l.ID); err != nil {
			t.Fatalf("second Teardown %s: %v", l.ID, err)
		}
		assertGone(t, n, l.ID, l.NetnsPath)
	}
	if err := n.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("nft", "list", "table", "inet", n.Table()).CombinedOutput(); err == nil {
		t.Fatalf("table %s left after Release:\n%s", n.Table(), out)
	}
}

// testEgress checks sandbox a's egress policy against two servers on an
// outside network (a namespace of its own behind a veth to the host).
func testEgress(t *testing.T, n *Network, a *Lease) {
	ctx := context.Background()
	allowed, other := outsideServers(t)
	get := func(addr netip.Addr) (string, error) {
		var got string
		err := inNetns(a.NetnsPath, func() (err error) { got, err = httpGet(netip.AddrPortFrom(addr, 80).String()); return err })
		return got, err
	}
	expect := func(step string, addr netip.Addr, reachable bool) {
		t.Helper()
		got, err := get(addr)
		if reachable && (err != nil || got != "outside") {
			t.Errorf("%s: GET %s = %q, %v; want it reachable", step, addr, got, err)
		}
		if !reachable && err == nil {
			t.Errorf("%s: GET %s = %q; want it refused", step, addr, got)
		}
	}
	expect("no policy", other, true)
	host := func(a netip.Addr) netip.Prefix { return netip.PrefixFrom(a, 32) }
	if err := n.SetEgress(ctx, a.ID, Egress{Restricted: true, Allow: []Rule{{host(allowed), 80}}}); err != nil {
		t.Fatal(err)
	}
	expect("allow one address and port", allowed, true)
	expect("allow one address and port", other, false)
	if err := n.Learn(ctx, a.ID, []netip.Addr{other}, 0, time.Minute); err != nil {
		t.Fatal(err)
	}
	expect("learned from an allowed name", other, true)
	if err := n.SetEgress(ctx, a.ID, Egress{Deny: []Rule{{host(allowed), 0}}}); err != nil {
		t.Fatal(err)
	}
	expect("deny one address", allowed, false)
	expect("deny one address", other, true)
	denied, err := n.Denied(ctx)
	if err != nil || denied[a.ID] == 0 {
		t.Errorf("Denied = %v, %v; want a count for %s", denied, err, a.ID)
	}
	if err := n.SetEgress(ctx, "not-a-sandbox", Egress{}); err == nil {
		t.Error("SetEgress of an unknown sandbox succeeded")
	}
}

// outsideServers starts an HTTP server answering "outside" on port 80 of
// two addresses in a namespace of their own, routed from the host over a
// veth, and returns the addresses.
func outsideServers(t *testing.T) (netip.Addr, netip.Addr) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "outside")
	if err := newNetns(path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = RemoveNetns(path) })
	ns, err := netns.GetFromPath(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	attrs := netlink.NewLinkAttrs()
	attrs.Name = "hutchtestout"
	_ = netlink.LinkDel(&netlink.Veth{LinkAttrs: attrs})
	if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: attrs, PeerName: "eth0", PeerNamespace: netlink.NsFd(int(ns))}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = netlink.LinkDel(&netlink.Veth{LinkAttrs: attrs}) })
	hostEnd, err := netlink.LinkByName(attrs.Name)
	if err == nil {
		err = netlink.AddrAdd(hostEnd, &netlink.Addr{IPNet: ipNet(netip.MustParseAddr("198.51.100.1"), 24)})
	}
	if err == nil {
		err = netlink.LinkSetUp(hostEnd)
	}
	if err != nil {
		t.Fatal(err)
	}
	allowed, other := netip.MustParseAddr("198.51.100.2"), netip.MustParseAddr("198.51.100.3")
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	eth, err := h.LinkByName("eth0")
	for _, a := range []netip.Addr{allowed, other} {
		if err == nil {
			err = h.AddrAdd(eth, &netlink.Addr{IPNet: ipNet(a, 24)})
		}
	}
	if err == nil {
		err = h.LinkSetUp(eth)
	}
	if err == nil {
		// Back through the host, for the addresses a test routes there.
		err = h.RouteAdd(&netlink.Route{LinkIndex: eth.Attrs().Index, Gw: net.ParseIP("198.51.100.1")})
	}
	if err != nil {
		t.Fatal(err)
	}
	var l net.Listener
	if err := inNetns(path, func() (err error) { l, err = net.Listen("tcp", "0.0.0.0:80"); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "outside") }))
	return allowed, other
}

// TestForgedSourcesDropped: root in a sandbox's namespace gives its eth0
// a second address and opens a connection from it to an outside server.
// The host routes that address back to the sandbox, so without the
// firewall's source check the connection would be made, from an address
// that is not the sandbox's and so never NATed. From its lease address
// the same server answers.
func TestForgedSourcesDropped(t *testing.T) {
	dir := t.TempDir()
	n := newTestNetwork(t, dir, testPool)
	ctx := context.Background()
	outside, _ := outsideServers(t)
	a, err := n.Setup(ctx, Sandbox{ID: "net-test-forger", NetnsPath: filepath.Join(dir, "a")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Teardown(ctx, a.ID) })
	forged := netip.MustParseAddr("203.0.113.77")
	hostEnd, err := netlink.LinkByName(a.HostIf)
	if err != nil {
		t.Fatal(err)
	}
	back := &netlink.Route{LinkIndex: hostEnd.Attrs().Index, Dst: ipNet(forged, 32)}
	if err := netlink.RouteAdd(back); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = netlink.RouteDel(back) })
	if err := inNetns(a.NetnsPath, func() error {
		eth, err := netlink.LinkByName(sandboxIf)
		if err != nil {
			return err
		}
		return netlink.AddrAdd(eth, &netlink.Addr{IPNet: ipNet(forged, 32)})
	}); err != nil {
		t.Fatal(err)
	}
	to := netip.AddrPortFrom(outside, 80).String()
	for _, tc := range []struct {
		src  netip.Addr
		want bool
	}{{a.Addr, true}, {forged, false}} {
		var got string
		err := inNetns(a.NetnsPath, func() (err error) { got, err = httpGetFrom(tc.src, to); return err })
		if tc.want && (err != nil || got != "outside") {
			t.Errorf("GET %s from the lease address %s = %q, %v; want it answered", to, tc.src, got, err)
		}
		if !tc.want && err == nil {
			t.Errorf("GET %s from the forged address %s = %q; want it dropped", to, tc.src, got)
		}
	}
	if err := n.Teardown(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	assertGone(t, n, a.ID, a.NetnsPath)
}

// TestTeardownAfterCrash: a new Network of the same owner (a restarted
// daemon) finds and removes what the first one left.
func TestTeardownAfterCrash(t *testing.T) {
	dir := t.TempDir()
	first := newTestNetwork(t, dir, testPool)
	ctx := context.Background()
	l, err := first.Setup(ctx, Sandbox{ID: "net-test-crash", NetnsPath: filepath.Join(dir, "ns"), Ports: []uint16{8080}})
	if err != nil {
		t.Fatal(err)
	}
	second := newTestNetwork(t, dir, testPool)
	ids, err := second.IDs(ctx)
	if err != nil || !slices.Equal(ids, []string{l.ID}) {
		t.Fatalf("IDs after crash = %v, %v; want [%s]", ids, err, l.ID)
	}
	// Another owner sees none of it.
	stranger := newTestNetwork(t, t.TempDir(), testPool)
	if ids, err := stranger.IDs(ctx); err != nil || len(ids) != 0 {
		t.Fatalf("another owner's IDs = %v, %v", ids, err)
	}
	if err := second.Teardown(ctx, l.ID); err != nil {
		t.Fatal(err)
	}
	// The runtime unpins the namespace it placed (here: the test).
	if err := RemoveNetns(l.NetnsPath); err != nil {
		t.Fatal(err)
	}
	assertGone(t, second, l.ID, l.NetnsPath)
	if err := second.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("nft", "list", "table", "inet", second.Table()).CombinedOutput(); err == nil {
		t.Fatalf("table left after Release:\n%s", out)
	}
}

func TestPoolExhausted(t *testing.T) {
	dir := t.TempDir()
	n := newTestNetwork(t, dir, netip.MustParsePrefix("10.231.1.0/30"))
	ctx := context.Background()
	l, err := n.Setup(ctx, Sandbox{ID: "net-test-only", NetnsPath: filepath.Join(dir, "one")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = n.Setup(ctx, Sandbox{ID: "net-test-more", NetnsPath: filepath.Join(dir, "two")})
	if !errdefs.Is(err, errdefs.CodeCapacity) {
		t.Fatalf("Setup with a full pool = %v, want S400", err)
	}
	// The failed Setup left nothing.
	assertGone(t, n, "net-test-more", filepath.Join(dir, "two"))
	if err := n.Teardown(ctx, l.ID); err != nil {
		t.Fatal(err)
	}
	// The address is free again.
	l, err = n.Setup(ctx, Sandbox{ID: "net-test-again", NetnsPath: filepath.Join(dir, "three")})
	if err != nil {
		t.Fatalf("Setup after release: %v", err)
	}
	if err := n.Teardown(ctx, l.ID); err != nil {
		t.Fatal(err)
	}
}

func TestSetupRejectsBadInput(t *testing.T) {
	n, err := New(Options{Owner: "x"})
	if err != nil {
		t.Fatal(err)
	}
	for _, sb := range []Sandbox{{ID: "bad id; drop"}, {ID: ""}, {ID: strings.Repeat("a", 101)}} {
		if _, err := n.Setup(context.Background(), sb); err == nil || !strings.Contains(err.Error(), "invalid sandbox id") {
			t.Errorf("Setup(%q) = %v", sb.ID, err)
		}
	}
	if _, err := n.Setup(context.Background(), Sandbox{ID: "ok"}); err == nil || !strings.Contains(err.Error(), "network_pool") {
		t.Errorf("Setup without a pool = %v", err)
	}
	if _, err := New(Options{Pool: netip.MustParsePrefix("127.0.0.0/16")}); err == nil {
		t.Error("New with a loopback pool succeeded")
	}
}

// BenchmarkSetupTeardown measures one sandbox's network plumbing, with
// the firewall table already in place (another sandbox holds it).
func BenchmarkSetupTeardown(b *testing.B) {
	dir := b.TempDir()
	testutil.RequiresRoot(b)
	n, err := New(Options{Pool: testPool, Owner: dir})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	hold, err := n.Setup(ctx, Sandbox{ID: "bench-hold", NetnsPath: filepath.Join(dir, "hold")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = n.Teardown(ctx, hold.ID)
		_ = n.Release(ctx)
	})
	for i := 0; b.Loop(); i++ {
		id := fmt.Sprintf("bench-%d", i)
		if _, err := n.Setup(ctx, Sandbox{ID: id, NetnsPath: filepath.Join(dir, id), Ports: []uint16{8080}}); err != nil {
			b.Fatal(err)
		}
		if err := n.Teardown(ctx, id); err != nil {
			b.Fatal(err)
		}
	}
}

// TestAdoptAfterRestart (issue 35): a new Network of the same owner (a
// restarted daemon) takes over a network whose sandbox outlived the
// first, even once its firewall table is gone: the same address, its
// port forward working again; its Teardown then removes all of it.
func TestAdoptAfterRestart(t *testing.T) {
	dir := t.TempDir()
	first := newTestNetwork(t, dir, testPool)
	ctx := context.Background()
	port := loopbackServer(t, "adopted")
	sb := Sandbox{ID: "net-test-adopt", NetnsPath: filepath.Join(dir, "ns"), Ports: []uint16{port}}
	l, err := first.Setup(ctx, sb)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.nft.deleteTable(ctx); err != nil {
		t.Fatal(err)
	}
	second := newTestNetwork(t, dir, testPool)
	if _, err := second.Adopt(ctx, Sandbox{ID: "net-test-other", NetnsPath: filepath.Join(dir, "other")}); err == nil {
		t.Error("adopted a network that does not exist")
	}
	got, err := second.Adopt(ctx, sb)
	if err != nil {
		t.Fatal(err)
	}
	if got.Addr != l.Addr || got.Gateway != l.Gateway || got.HostIf != l.HostIf {
		t.Errorf("adopted lease %+v, was %+v", got, l)
	}
	if _, err := second.Adopt(ctx, sb); err == nil {
		t.Error("adopted the same network twice")
	}
	err = inNetns(sb.NetnsPath, func() error {
		body, err := httpGet(netip.AddrPortFrom(got.Gateway, port).String())
		if err == nil && body != "adopted" {
			err = fmt.Errorf("body %q", body)
		}
		return err
	})
	if err != nil {
		t.Errorf("the adopted network's port forward: %v", err)
	}
	if err := second.Teardown(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	assertGone(t, second, sb.ID, sb.NetnsPath)
}
