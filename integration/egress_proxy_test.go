package integration

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
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

// requestsScript GETs, with python's requests and without verifying
// certificates, each "URL [HOST]" argument after the first (the address
// denied.test is pinned to), printing the body or "ERR [status]".
const requestsScript = `
import sys, requests
from urllib3.util import connection
addr = sys.argv[1]
resolve = connection.create_connection
def pinned(address, *args, **kw):
    host, port = address
    return resolve((addr if host == "denied.test" else host, port), *args, **kw)
connection.create_connection = pinned
for arg in sys.argv[2:]:
    url, _, host = arg.partition(" ")
    try:
        r = requests.get(url, headers={"Host": host} if host else {}, verify=False, timeout=5)
        print(r.text if r.ok else "ERR %d" % r.status_code)
    except Exception as e:
        print("ERR", type(e).__name__)
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

	// curl and python's requests (the e2b-base image), by name, by a
	// denied name pinned to the address, by Host and by IP literal.
	tools := d.create(api.CreateRequest{Image: "e2b-base", Egress: &api.EgressPolicy{AllowOut: []string{"*.test"}, DenyOut: []string{"denied.test"}}})
	cases := []struct{ url, host, want string }{
		{"https://allowed.test/", "", "host=allowed.test sni=allowed.test auth="},
		{"http://allowed.test/", "", "host=allowed.test sni= auth="},
		{"https://denied.test/", "", "ERR"}, // denied by SNI
		{"http://allowed.test/", "denied.test", "ERR 403"},
		{"http://" + a + "/", "", "ERR 403"},
		{"https://" + a + "/", "", "ERR"}, // no SNI
	}
	script := "c() { code=$(curl -sk -m 5 -o /tmp/body -w '%{http_code}' --resolve denied.test:443:" + a +
		" ${2:+-H \"Host: $2\"} \"$1\"); [ \"$code\" = 200 ] && cat /tmp/body && echo || echo \"ERR $code\"; }\n"
	pyArgs := []string{"python3", "-W", "ignore", "-c", requestsScript, a}
	for _, c := range cases {
		script += fmt.Sprintf("c %q %q\n", c.url, c.host)
		pyArgs = append(pyArgs, c.url+" "+c.host)
	}
	curlOut := strings.Split(strings.TrimSpace(d.exec(tools, "sh", "-c", script).Stdout), "\n")
	pyOut := strings.Split(strings.TrimSpace(d.exec(tools, pyArgs...).Stdout), "\n")
	for i, c := range cases {
		for client, out := range map[string][]string{"curl": curlOut, "requests": pyOut} {
			if i >= len(out) || !strings.HasPrefix(out[i], c.want) || (c.want == "ERR" && strings.Contains(out[i], "403")) {
				t.Errorf("%s %s (Host %q): got %q, want %q…", client, c.url, c.host, out, c.want)
			}
		}
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

// secretTarget is an HTTPS server on port 443 of an address in a network
// namespace the test made, its certificate (for api.test and other.test)
// from a CA of the test's, which the daemon trusts through SSL_CERT_FILE;
// it answers the SHA-256 of the Authorization and X-Key headers it got
// (a sandbox must not see the secret) and keeps the last ones.
type secretTarget struct {
	addr   string
	config string
	mu     sync.Mutex
	got    map[string]string // host → "Authorization|X-Key"
}

func newSecretTarget(t *testing.T) *secretTarget {
	t.Helper()
	st := &secretTarget{got: map[string]string{}}
	var inside func(func() error) error
	st.addr, inside = privateNetns(t, 3)
	caPEM, cert := testCertificate(t, "api.test", "other.test")
	trustTestCA(t, caPEM) // the daemon verifies upstreams against it
	var ln net.Listener
	if err := inside(func() (err error) { ln, err = net.Listen("tcp4", st.addr+":443"); return err }); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth, key := r.Header.Get("Authorization"), r.Header.Get("X-Key")
		st.mu.Lock()
		st.got[r.Host] = auth + "|" + key
		st.mu.Unlock()
		fmt.Fprintf(w, "auth=%x key=%x", sha256.Sum256([]byte(auth)), sha256.Sum256([]byte(key)))
	}))
	srv.Listener = ln
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	resolver := testResolver(t, map[string]string{"api.test": st.addr, "other.test": st.addr})
	st.config = fmt.Sprintf("block_private_networks: false\nsandbox_nameservers: [%q]\n", resolver)
	return st
}

// received is what the server last got for host.
func (st *secretTarget) received(host string) string {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.got[host]
}

// trustTestCA makes the host's roots and caPEM the roots of the daemons
// the test starts (SSL_CERT_FILE).
func trustTestCA(t *testing.T, caPEM []byte) {
	t.Helper()
	bundle := filepath.Join(t.TempDir(), "roots.pem")
	roots, _ := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	if err := os.WriteFile(bundle, append(roots, caPEM...), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSL_CERT_FILE", bundle)
}

// testCertificate makes a CA and a server certificate of it for names.
func testCertificate(t *testing.T, names ...string) ([]byte, tls.Certificate) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "hutch test CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// secretScript fetches https://HOST/ with the headers given as NAME=VALUE
// arguments (a value "$VAR" is taken from the environment), verifying
// the certificate unless the host is "-k HOST".
const secretScript = `
import os, ssl, sys, urllib.request
host, *hdrs = sys.argv[1:]
ctx = ssl.create_default_context()
if host.startswith("-k "):
    host = host[3:]
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
headers = {}
for h in hdrs:
    k, v = h.split("=", 1)
    headers[k] = os.environ[v[1:]] if v.startswith("$") else v
try:
    print(urllib.request.urlopen(urllib.request.Request("https://" + host + "/", headers=headers), context=ctx, timeout=10).read().decode())
except Exception as e:
    print("ERR", type(e).__name__, e)
`

// TestEgressSecrets: a secret set with `hutch secret set` reaches the
// server of its transform's host, over TLS the proxy terminated with the
// daemon's CA (which python and node in the sandbox trust) and verified
// upstream against the host's roots; its placeholder in the sandbox's env
// is swapped toward that host only; the value is in no list, event or
// file of the daemon's data dir (a snapshot of the sandbox included), and
// nowhere in the sandbox's filesystem or processes.
func TestEgressSecrets(t *testing.T) {
	st := newSecretTarget(t)
	d := startDaemon(t, baseConfig(st.config))
	secret := "sk-test-" + randomHex(t, 24)
	if _, errOut, code := d.cli(secret+"\n", "secret", "set", "OPENAI_KEY"); code != 0 {
		t.Fatalf("hutch secret set: %s", errOut)
	}
	out, _, code := d.cli("", "secret", "ls")
	if code != 0 || !strings.Contains(out, "OPENAI_KEY") || strings.Contains(out, secret) {
		t.Fatalf("hutch secret ls: %q", out)
	}
	placeholder := api.SecretPlaceholder("OPENAI_KEY")
	policy := &api.EgressPolicy{AllowOut: []string{"api.test", "other.test"},
		Transforms: []api.EgressTransform{{Host: "api.test", Headers: map[string]string{"Authorization": "Bearer {{secret.OPENAI_KEY}}"}}}}
	id := d.create(api.CreateRequest{Image: "python", Egress: policy, Env: api.Env{"OPENAI_API_KEY=" + placeholder}})

	sum := func(s string) string { return fmt.Sprintf("%x", sha256.Sum256([]byte(s))) }
	r := d.exec(id, "python3", "-c", secretScript, "api.test", "X-Key=$OPENAI_API_KEY")
	if got := strings.TrimSpace(r.Stdout); got != "auth="+sum("Bearer "+secret)+" key="+sum(secret) {
		t.Fatalf("through the transform: %+v", r)
	}
	if got := st.received("api.test"); got != "Bearer "+secret+"|"+secret {
		t.Errorf("api.test received %q", got)
	}
	// Toward a host without the transform, only the placeholder goes (the
	// proxy does not look inside: the sandbox checks no certificate).
	d.exec(id, "python3", "-c", secretScript, "-k other.test", "X-Key=$OPENAI_API_KEY")
	if got := st.received("other.test"); got != "|"+placeholder {
		t.Errorf("other.test received %q", got)
	}

	node := d.create(api.CreateRequest{Image: "node", Egress: policy})
	r = d.exec(node, "node", "-e", `fetch("https://api.test/").then(r => r.text()).then(console.log, e => console.log("ERR", e.cause ? e.cause.code : e.message))`)
	if got := strings.TrimSpace(r.Stdout); got != "auth="+sum("Bearer "+secret)+" key="+sum("") {
		t.Errorf("node fetch through the transform: %+v", r)
	}

	// curl and python's requests trust the CA too (the bundle, and
	// REQUESTS_CA_BUNDLE), and the placeholder is swapped for both.
	tools := d.create(api.CreateRequest{Image: "e2b-base", Egress: policy, Env: api.Env{"OPENAI_API_KEY=" + placeholder}})
	r = d.exec(tools, "sh", "-c", `curl -sS -m 10 -H "X-Key: $OPENAI_API_KEY" https://api.test/; echo; `+
		`python3 -c 'import os, requests; print(requests.get("https://api.test/", headers={"X-Key": os.environ["OPENAI_API_KEY"]}, timeout=10).text)'`)
	if got, want := strings.TrimSpace(r.Stdout), "auth="+sum("Bearer "+secret)+" key="+sum(secret); got != want+"\n"+want {
		t.Errorf("curl and requests through the transform: %+v", r)
	}

	// An unknown secret fails the request; the log says why, not the value.
	if _, err := d.c.DeleteSecret(context.Background(), "OPENAI_KEY"); err != nil {
		t.Fatal(err)
	}
	if r = d.exec(id, "python3", "-c", secretScript, "api.test"); !strings.Contains(r.Stdout, "502") {
		t.Errorf("with the secret deleted: %+v", r)
	}
	_, err := d.c.DeleteSecret(context.Background(), "OPENAI_KEY")
	wantCode(t, err, "S280")
	log, err := d.c.EgressLog(context.Background(), id)
	if err != nil || len(log.Decisions) == 0 {
		t.Fatalf("egress log: %+v %v", log, err)
	}
	used := d.eventsOf(id, api.EventEgressSecretUsed)
	if len(used) == 0 || used[0]["secret"] != "OPENAI_KEY" || used[0]["host"] != "api.test" {
		t.Errorf("egress.secret_used events: %v", used)
	}

	// Nowhere in the sandbox: its files and the environments and command
	// lines of its other processes hold not even the secret's second half
	// (which the search reads from its stdin).
	half := secret[len(secret)/2:]
	search := func(needle string, files bool) string {
		script := `needle=$(cat /dev/stdin); self=$$; ` +
			`[ "$0" = files ] && grep -rlF --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev "$needle" / 2>/dev/null; ` +
			`for p in /proc/[0-9]*; do [ "${p#/proc/}" = "$self" ] && continue; cat $p/environ $p/cmdline 2>/dev/null | grep -aqF "$needle" && echo "$p"; done; echo done`
		mode := map[bool]string{true: "files", false: "procs"}[files]
		r, err := d.c.Exec(context.Background(), api.ExecRequest{SandboxID: id, Argv: []string{"sh", "-c", script, mode}, Stdin: base64.StdEncoding.EncodeToString([]byte(needle))})
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(r.Stdout)
	}
	// The search finds what is there: the placeholder in a process's env.
	if _, err := d.c.StartProcess(context.Background(), api.ProcessStartRequest{SandboxID: id, Argv: []string{"sleep", "600"}}); err != nil {
		t.Fatal(err)
	}
	if got := search(placeholder[len(placeholder)/2:], false); got == "done" {
		t.Error("the search of processes did not find the placeholder")
	}
	if got := search(half, true); got != "done" {
		t.Errorf("the secret's trace in the sandbox: %q", got)
	}
	// Nowhere in the daemon's data dir, a snapshot of the sandbox included.
	if _, err := d.c.CreateSnapshot(context.Background(), id, "after-secret"); err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(d.dataDir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return nil
		}
		if b, err := os.ReadFile(path); err == nil && bytes.Contains(b, []byte(secret)) {
			t.Errorf("the secret is in %s", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(d.log.String(), secret) {
		t.Error("the secret is in the daemon's log")
	}
}

// randomHex is n random bytes in hex.
func randomHex(t *testing.T, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", b)
}
