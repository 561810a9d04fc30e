package integration

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// proxyTargets are an HTTP server on port 80, an HTTPS server on port
// 443 and UDP echo servers on ports 443 and 444, all on one address in a
// network namespace the test made; a test resolver names that address
// allowed.test, other.test and denied.test. The web servers answer what
// they were asked: "host=<Host> sni=<SNI> auth=<Authorization>".
type proxyTargets struct {
	addr   string
	config string
}

func newProxyTargets(t *testing.T) proxyTargets {
	t.Helper()
	addr, inside := privateNetns(t, 2)
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sni := ""
		if r.TLS != nil {
			sni = r.TLS.ServerName
		}
		fmt.Fprintf(w, "host=%s sni=%s auth=%s", r.Host, sni, r.Header.Get("Authorization"))
	})
	var web, tlsWeb net.Listener
	var udp []net.PacketConn
	err := inside(func() (err error) {
		if web, err = net.Listen("tcp4", addr+":80"); err != nil {
			return err
		}
		if tlsWeb, err = net.Listen("tcp4", addr+":443"); err != nil {
			return err
		}
		for _, port := range []string{"443", "444"} {
			pc, err := net.ListenPacket("udp4", addr+":"+port)
			if err != nil {
				return err
			}
			udp = append(udp, pc)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	plain := &http.Server{Handler: echo}
	go plain.Serve(web)
	t.Cleanup(func() { plain.Close() })
	secure := httptest.NewUnstartedServer(echo)
	secure.Listener = tlsWeb
	secure.StartTLS()
	t.Cleanup(secure.Close)
	for _, pc := range udp {
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
		t.Cleanup(func() { pc.Close() })
	}
	resolver := testResolver(t, map[string]string{"allowed.test": addr, "other.test": addr, "denied.test": addr})
	return proxyTargets{addr: addr, config: fmt.Sprintf("block_private_networks: false\nsandbox_nameservers: [%q]\n", resolver)}
}

// probeScript asks, per argument, and prints one line each:
//
//	http URL [HOST]         GET URL (with that Host header)
//	tls ADDR PORT [SNI]     GET / over TLS to ADDR:PORT (with that SNI, unverified)
//	udp ADDR PORT           a datagram, and its echo
//	tcp6 ADDR PORT          a TCP connection over IPv6
const probeScript = `
import socket, ssl, sys, urllib.request
def http(url, host=None):
    req = urllib.request.Request(url, headers={"Host": host} if host else {})
    return urllib.request.urlopen(req, timeout=5).read().decode()
def tls(addr, port, sni=None):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with socket.create_connection((addr, int(port)), timeout=5) as raw:
        with ctx.wrap_socket(raw, server_hostname=sni) as s:
            s.sendall(b"GET / HTTP/1.0\r\nHost: " + (sni or addr).encode() + b"\r\n\r\n")
            out = b""
            while True:
                b = s.recv(4096)
                if not b:
                    break
                out += b
            return out.decode().split("\r\n\r\n", 1)[1]
def udp(addr, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(3)
    s.connect((addr, int(port)))
    s.send(b"ping")
    return s.recv(64).decode()
def tcp6(addr, port):
    socket.create_connection((addr, int(port)), timeout=3).close()
    return "connected"
for probe in sys.argv[1:]:
    kind, *args = probe.split(" ")
    try:
        print(globals()[kind](*args))
    except Exception as e:
        print("ERR", type(e).__name__, str(e).replace("\n", " "))
`

// probe runs probeScript in sandbox id, one result per probe.
func (d *daemon) probe(id string, probes ...string) []string {
	d.t.Helper()
	r := d.exec(id, append([]string{"python3", "-c", probeScript}, probes...)...)
	if !r.Success {
		d.t.Fatalf("probe script failed: %+v", r)
	}
	return strings.Split(strings.TrimSuffix(r.Stdout, "\n"), "\n")
}

// TestEgressProxy: with name rules, HTTP and TLS to ports 80 and 443 are
// decided on the Host header and the SNI, not the address: three names
// on one address, one allowed by a wildcard, one denied (deny wins), are
// told apart by python's urllib and ssl and by node's fetch; an IP
// literal and TLS without SNI are refused unless a CIDR admits the
// address; QUIC's UDP 443 is refused while UDP to another port passes;
// IPv6 is off; a new policy holds for the next connection; refusals are
// egress.denied events.
func TestEgressProxy(t *testing.T) {
	tg := newProxyTargets(t)
	d := startDaemon(t, baseConfig(tg.config))
	a := tg.addr
	id := d.create(api.CreateRequest{Image: "python", Egress: &api.EgressPolicy{AllowOut: []string{"*.test"}, DenyOut: []string{"denied.test"}}})

	got := d.probe(id,
		"http http://allowed.test/",
		"http http://"+a+"/ denied.test",
		"http http://"+a+"/ allowed.test",
		"http http://"+a+"/",
		"tls "+a+" 443 allowed.test",
		"tls "+a+" 443 denied.test",
		"tls "+a+" 443",
		"udp "+a+" 444",
		"udp "+a+" 443",
		"tcp6 2001:db8::1 80",
	)
	want := []string{
		"host=allowed.test sni= auth=",
		"ERR HTTPError HTTP Error 403: Forbidden",
		"host=allowed.test sni= auth=",
		"ERR HTTPError HTTP Error 403: Forbidden",
		"host=allowed.test sni=allowed.test auth=",
		"ERR ",
		"ERR ",
		"ping",
		"ERR ",
		"ERR ",
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("probe %d: got %q, want %q…", i, got[i], w)
		}
	}

	// A CIDR admits the address: the literal, TLS without SNI and a name
	// no rule names pass; the denied name on it is still refused.
	if _, err := d.c.UpdateNetwork(context.Background(), id, api.EgressPolicy{AllowOut: []string{"allowed.test", a + "/32"}, DenyOut: []string{"denied.test"}}); err != nil {
		t.Fatal(err)
	}
	got = d.probe(id, "http http://"+a+"/", "tls "+a+" 443", "tls "+a+" 443 denied.test", "http http://"+a+"/ other.test")
	if got[0] != "host="+a+" sni= auth=" || got[1] != "host="+a+" sni= auth=" || !strings.HasPrefix(got[2], "ERR") || !strings.HasPrefix(got[3], "host=other.test") {
		t.Errorf("with a CIDR: %q", got)
	}

	// A new policy holds for the next connection.
	if _, err := d.c.UpdateNetwork(context.Background(), id, api.EgressPolicy{AllowOut: []string{"other.test"}}); err != nil {
		t.Fatal(err)
	}
	got = d.probe(id, "http http://"+a+"/ allowed.test", "tls "+a+" 443 other.test")
	if !strings.HasPrefix(got[0], "ERR HTTPError HTTP Error 403") || got[1] != "host=other.test sni=other.test auth=" {
		t.Errorf("after the update: %q", got)
	}

	// node's fetch, by name.
	node := d.create(api.CreateRequest{Image: "node", Env: api.Env{"NODE_TLS_REJECT_UNAUTHORIZED=0"},
		Egress: &api.EgressPolicy{AllowOut: []string{"allowed.test"}}})
	r := d.exec(node, "node", "-e", `(async () => {
  for (const u of ["https://allowed.test/", "http://allowed.test/", "https://other.test/"]) {
    try { console.log(await (await fetch(u)).text()) } catch (e) { console.log("ERR", e.cause ? e.cause.code : e.message) }
  }
})()`)
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	if len(lines) != 3 || lines[0] != "host=allowed.test sni=allowed.test auth=" || lines[1] != "host=allowed.test sni= auth=" || !strings.HasPrefix(lines[2], "ERR") {
		t.Errorf("node fetch: %+v", r)
	}

	// The refusals are events: by Host, by SNI, by address.
	var kinds map[string]bool
	if !testutil.Poll(30*time.Second, func() bool {
		kinds = map[string]bool{}
		for _, e := range d.eventsOf(id, api.EventEgressDenied) {
			if k, _ := e["kind"].(string); k != "" && e["rule"] != nil {
				kinds[k] = true
			}
		}
		return kinds["host"] && kinds["sni"] && kinds["address"]
	}) {
		t.Errorf("egress.denied events of the proxy: %v", d.eventsOf(id, api.EventEgressDenied))
	}
}
