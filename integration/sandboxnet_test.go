package integration

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/image/ocitest"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// netprobePath is where uploadNetprobe puts testdata/netprobe in a sandbox.
const netprobePath = "/tmp/netprobe"

// uploadNetprobe copies the netprobe program (built static) into sandbox
// id at netprobePath.
func (d *daemon) uploadNetprobe(id string) {
	d.t.Helper()
	f, err := os.Open(testutil.BuildBinary(d.t, "./integration/testdata/netprobe"))
	if err != nil {
		d.t.Fatal(err)
	}
	defer f.Close()
	if _, err := d.c.Upload(context.Background(), api.FsUploadRequest{SandboxID: id, Path: netprobePath, Mode: "0755"}, f); err != nil {
		d.t.Fatalf("uploading netprobe: %v", err)
	}
}

// netprobe runs netprobe in sandbox id and returns its output, failing
// the test when it fails.
func (d *daemon) netprobe(id string, args ...string) string {
	d.t.Helper()
	r := d.exec(id, append([]string{netprobePath}, args...)...)
	if !r.Success {
		d.t.Fatalf("netprobe %s in %s: %+v", strings.Join(args, " "), id, r)
	}
	return r.Stdout
}

// udpInbox records the datagrams a UDP socket receives, by payload, with
// their source; it keeps at most 64.
type udpInbox struct {
	mu sync.Mutex
	// got is guarded by mu.
	got map[string]string
}

// listenUDP receives datagrams on addr (within inside, a namespace's
// runner) until the test ends, and returns the socket's address.
func listenUDP(t *testing.T, addr string, inside func(func() error) error) (string, *udpInbox) {
	t.Helper()
	var pc net.PacketConn
	if err := inside(func() (err error) { pc, err = net.ListenPacket("udp4", addr); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	in := &udpInbox{got: map[string]string{}}
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			in.mu.Lock()
			if len(in.got) < 64 {
				in.got[string(buf[:n])] = from.String()
			}
			in.mu.Unlock()
		}
	}()
	return pc.LocalAddr().String(), in
}

// received returns what came in so far: payload → source.
func (in *udpInbox) received() map[string]string {
	in.mu.Lock()
	defer in.mu.Unlock()
	m := make(map[string]string, len(in.got))
	for k, v := range in.got {
		m[k] = v
	}
	return m
}

// TestForgedSourceAddressesDropped: root in a network sandbox sends UDP
// datagrams with a forged source address through a raw socket to a
// private address outside (block_private_networks off, so that the
// address is reachable): one from an outside address, which the NAT does
// not rewrite, and one from another sandbox's address, which would make
// hutch's resolver and its egress log blame that sandbox. Then it sends
// one from its own address. The host drops the forged ones at the
// sandbox's interface, so the genuine one arrives and the forged never
// do. In a microVM the guest's kernel sends raw packets as asked; gVisor
// refuses raw sockets (runsc runs without --net-raw), which the test
// checks as what is true there.
func TestForgedSourceAddressesDropped(t *testing.T) {
	d := startTestedRuntimesDaemon(t, "block_private_networks: false\n")
	target, inside := privateNetns(t, 0)
	dst, inbox := listenUDP(t, target+":0", inside)
	eachRuntime(t, d, func(t *testing.T, rt string) {
		a := d.create(api.CreateRequest{Image: "bb", Runtime: rt, Network: true})
		b := d.create(api.CreateRequest{Image: "bb", Runtime: rt, Network: true})
		for _, id := range []string{a, b} {
			d.uploadNetprobe(id)
		}
		bAddr := strings.TrimSpace(d.netprobe(b, "addr"))
		if _, err := netip.ParseAddr(bAddr); err != nil {
			t.Fatalf("b's address: %q", bAddr)
		}
		forged := []string{"198.51.100.7", bAddr}
		var out string
		if !testutil.Poll(time.Minute, func() bool {
			out = d.netprobe(a, append([]string{"forge", dst}, forged...)...)
			_, ok := inbox.received()["genuine"]
			return ok
		}) {
			t.Fatalf("the genuine datagram never arrived at %s; netprobe said %q", dst, out)
		}
		switch {
		case strings.Contains(out, "raw sent 2"):
		case rt == "gvisor" && strings.Contains(out, "raw refused"):
			t.Logf("gVisor refuses raw sockets: %s", strings.TrimSpace(out))
		default:
			t.Fatalf("root in the %s guest could not send raw packets, so the test proves nothing: %q", rt, out)
		}
		got := inbox.received()
		for _, src := range forged {
			if from, ok := got["forged "+src]; ok {
				t.Errorf("a datagram forged from %s left the sandbox (arrived from %s)", src, from)
			}
		}
		for _, id := range []string{a, b} {
			if _, err := d.c.Stop(context.Background(), id, true); err != nil {
				t.Fatal(err)
			}
		}
		assertNoLeftovers(t, "", a, b)
	})
}

// TestEtcHosts: in each runtime, with and without a network, a sandbox
// has an /etc/hosts in which localhost (IPv4 and IPv6) and its own host
// name resolve (at its address with a network, 127.0.1.1 without), a
// client reaches a local server at localhost, the image's own lines are
// kept after hutch's, and root in the sandbox may add its own.
func TestEtcHosts(t *testing.T) {
	d := startRuntimesDaemonWith(t, testutil.Runtimes(), "", map[string][]ocitest.File{
		"bbhosts": {ocitest.Reg("etc/hosts", "10.9.8.7\timage-host\n", 0o644)},
	})
	eachRuntime(t, d, func(t *testing.T, rt string) {
		for _, tc := range []struct {
			image   string
			network bool
		}{{"bb", false}, {"bbhosts", true}} {
			t.Run(fmt.Sprintf("%s network=%v", tc.image, tc.network), func(t *testing.T) {
				parent := d.t
				d.t = t
				defer func() { d.t = parent }()
				id := d.create(api.CreateRequest{Image: tc.image, Runtime: rt, Network: tc.network})
				hosts := d.exec(id, "cat", "/etc/hosts").Stdout
				for _, want := range []string{"127.0.0.1\tlocalhost\n", "::1\tlocalhost "} {
					if !strings.Contains(hosts, want) {
						t.Errorf("/etc/hosts lacks %q:\n%s", want, hosts)
					}
				}
				d.uploadNetprobe(id)
				if got := d.netprobe(id, "resolve", "localhost"); !strings.Contains(got, "127.0.0.1") {
					t.Errorf("localhost resolves to %q", got)
				}
				if got := d.netprobe(id, "localhost"); got != "ok\n" {
					t.Errorf("a local server at localhost: %q", got)
				}
				hostname := strings.TrimSpace(d.exec(id, "busybox", "hostname").Stdout)
				want := "127.0.1.1"
				if tc.network {
					want = strings.TrimSpace(d.netprobe(id, "addr"))
				}
				if got := strings.TrimSpace(d.netprobe(id, "resolve", hostname)); got != want {
					t.Errorf("the host name %q resolves to %q, want %s:\n%s", hostname, got, want, hosts)
				}
				if tc.image == "bbhosts" {
					if got := strings.TrimSpace(d.netprobe(id, "resolve", "image-host")); got != "10.9.8.7" {
						t.Errorf("the image's own line: image-host resolves to %q:\n%s", got, hosts)
					}
				}
				d.setup(id, "sh", "-c", "echo '10.1.2.3 mine' >> /etc/hosts")
				if got := strings.TrimSpace(d.netprobe(id, "resolve", "mine")); got != "10.1.2.3" {
					t.Errorf("a line added in the sandbox: mine resolves to %q", got)
				}
			})
		}
	})
}

// TestLocalhostFromPython is the first hour's case: in the python image,
// without a network, urllib reaches a local server at localhost (glibc's
// resolver reads /etc/hosts) and `hostname -f` names the sandbox.
func TestLocalhostFromPython(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	id := d.create(api.CreateRequest{Image: "python"})
	r := d.exec(id, "python3", "-c", `import http.server, threading, urllib.request
srv = http.server.HTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
threading.Thread(target=srv.serve_forever, daemon=True).start()
print(urllib.request.urlopen("http://localhost:%d/" % srv.server_port, timeout=5).status)`)
	if !r.Success || r.Stdout != "200\n" {
		t.Errorf("urlopen of http://localhost:PORT/: %+v", r)
	}
	hostname := strings.TrimSpace(d.exec(id, "hostname").Stdout)
	if r := d.exec(id, "hostname", "-f"); !r.Success || strings.TrimSpace(r.Stdout) != hostname {
		t.Errorf("hostname -f: %+v, want %q", r, hostname)
	}
}
