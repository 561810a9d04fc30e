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
func httpGet(addr string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
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
	// A loopback resolver: the sandbox's DNS goes to the gateway's port 53.
	n.opts.HostResolvConf = filepath.Join(dir, "resolv.conf")
	if err := os.WriteFile(n.opts.HostResolvConf, []byte("nameserver 127.0.0.2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dns := udpEcho(t, "127.0.0.2:53")

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
	if dns != nil {
		if want := "nameserver " + a.Gateway.String() + "\n"; !strings.Contains(string(a.ResolvConf), want) {
			t.Errorf("resolv.conf of a lacks %q:\n%s", want, a.ResolvConf)
		}
		var got string
		err := inNetns(a.NetnsPath, func() (err error) { got, err = udpAsk(netip.AddrPortFrom(a.Gateway, 53).String(), "query"); return err })
		if err != nil || got != "query" {
			t.Errorf("DNS through the gateway: %q, %v", got, err)
		}
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
	if err := removeNetns(l.NetnsPath); err != nil {
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
