package integration

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// fetchScript fetches each URL argument with urllib and prints one line
// per URL: the body, or "ERR <exception>".
const fetchScript = `
import sys, urllib.request
for u in sys.argv[1:]:
    try:
        print(urllib.request.urlopen(u, timeout=3).read().decode())
    except Exception as e:
        print("ERR", type(e).__name__, e)
`

// hostServer serves body on the host's 127.0.0.1 and returns its port.
func hostServer(t *testing.T, body string) int {
	t.Helper()
	return int(testutil.ServeHTTP(t, "127.0.0.1:0", body))
}

// fetch runs fetchScript in sandbox id and returns one result per URL.
func (d *daemon) fetch(id string, urls ...string) []string {
	d.t.Helper()
	r := d.exec(id, append([]string{"python3", "-c", fetchScript}, urls...)...)
	if !r.Success {
		d.t.Fatalf("fetch script failed: %+v", r)
	}
	return strings.Split(strings.TrimSuffix(r.Stdout, "\n"), "\n")
}

// interfaces lists the interface names in /proc/net/dev of sandbox id.
func (d *daemon) interfaces(id string) []string {
	d.t.Helper()
	r := d.exec(id, "cat", "/proc/net/dev")
	var names []string
	for _, line := range strings.Split(r.Stdout, "\n") {
		if name, _, ok := strings.Cut(line, ":"); ok && !strings.Contains(name, "|") {
			names = append(names, strings.TrimSpace(name))
		}
	}
	return names
}

// sandboxAddr returns the IPv4 address sandbox id goes out with.
func (d *daemon) sandboxAddr(id string) string {
	d.t.Helper()
	r := d.exec(id, "python3", "-c", "import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.connect(('192.0.2.1', 9)); print(s.getsockname()[0])")
	addr := strings.TrimSpace(r.Stdout)
	if _, err := netip.ParseAddr(addr); err != nil {
		d.t.Fatalf("address of sandbox %s: %+v", id, r)
	}
	return addr
}

// TestNetworkOffIsLoopbackOnly: in each runtime a sandbox without
// network has only lo, and no plumbing on the host.
func TestNetworkOffIsLoopbackOnly(t *testing.T) {
	d := startTestedRuntimesDaemon(t, "")
	eachRuntime(t, d, func(t *testing.T, rt string) {
		id := d.create(api.CreateRequest{Image: "bb", Runtime: rt})
		if names := d.interfaces(id); len(names) != 1 || names[0] != "lo" {
			t.Fatalf("interfaces without network = %v, want [lo]", names)
		}
		if left := networkLeftovers("", []string{id}); len(left) > 0 {
			t.Fatalf("a sandbox without network has network plumbing: %v", left)
		}
	})
}

func TestNetworkGatewayAndIsolation(t *testing.T) {
	allowed := hostServer(t, "allowed")
	other := hostServer(t, "other")
	configured := hostServer(t, "configured")
	d := startDaemon(t, baseConfig(fmt.Sprintf("gateway_ports: [%d]\n", configured)))
	apiURL, err := url.Parse(d.url)
	if err != nil {
		t.Fatal(err)
	}
	apiEnv := "http://localhost:" + apiURL.Port() + "/healthz"
	resp, err := d.c.Create(context.Background(), api.CreateRequest{Image: "python", Network: true, Env: api.Env{
		fmt.Sprintf("SVC=http://127.0.0.1:%d/", allowed),
		"API=" + apiEnv,
	}})
	if err != nil {
		t.Fatal(err)
	}
	a := resp.SandboxID
	d.ids = append(d.ids, a)
	if want := fmt.Sprint([]string{apiURL.Port()}); fmt.Sprint(resp.UnforwardedPorts) != want {
		t.Errorf("unforwarded_ports = %v, want the daemon's own port %s", resp.UnforwardedPorts, want)
	}
	b := d.create(api.CreateRequest{Image: "python", Network: true})

	if names := d.interfaces(a); len(names) != 2 || !strings.Contains(strings.Join(names, " "), "eth0") {
		t.Fatalf("interfaces with network = %v, want lo and eth0", names)
	}
	if r := d.exec(a, "cat", "/etc/resolv.conf"); !strings.Contains(r.Stdout, "written by hutch") || !strings.Contains(r.Stdout, "nameserver ") {
		t.Errorf("resolv.conf of a network sandbox:\n%s", r.Stdout)
	}
	// The create-time env points at the gateway, not at the sandbox's own loopback.
	env := strings.Fields(d.exec(a, "sh", "-c", "echo $SVC $API").Stdout)
	if len(env) != 2 {
		t.Fatalf("env: %q", env)
	}
	svc, err := url.Parse(env[0])
	if err != nil {
		t.Fatal(err)
	}
	gw := svc.Hostname()
	if ip, err := netip.ParseAddr(gw); err != nil || ip.IsLoopback() || svc.Port() != fmt.Sprint(allowed) {
		t.Fatalf("SVC was not rewritten to the gateway: %s", env[0])
	}
	if env[1] != apiEnv {
		t.Fatalf("API = %s, want it left as %s: the daemon's own port is never forwarded", env[1], apiEnv)
	}
	gwURL := func(port int) string { return fmt.Sprintf("http://%s:%d/", gw, port) }

	got := d.fetch(a, env[0], gwURL(configured), gwURL(other), env[1])
	for i, c := range []struct{ what, want string }{
		{"the rewritten URL", "allowed"},
		{"a port from gateway_ports", "configured"},
		{"a loopback port it was not given", "ERR"},
		{"the daemon's API port, although named (the sandbox's own loopback)", "ERR"},
	} {
		if i >= len(got) || !strings.HasPrefix(got[i], c.want) {
			t.Errorf("fetching %s from the sandbox: %q, want %q", c.what, got, c.want)
		}
	}

	// b serves on its own address; b reaches it, a does not.
	d.setup(b, "sh", "-c", "nohup python3 -m http.server 8000 >/dev/null 2>&1 &")
	bURL := fmt.Sprintf("http://%s:8000/", d.sandboxAddr(b))
	var res []string
	if !testutil.Poll(time.Minute, func() bool { res = d.fetch(b, bURL); return !strings.HasPrefix(res[0], "ERR") }) {
		t.Fatalf("b's own server never answered: %q", res)
	}
	if res := d.fetch(a, bURL); !strings.HasPrefix(res[0], "ERR") {
		t.Errorf("sandbox a reached sandbox b at %s: %q", bURL, res)
	}

	// While they run, the leak scanner sees their plumbing: it is not blind.
	if left := networkLeftovers("", []string{a, b}); len(left) == 0 {
		t.Fatal("no network device or rule names the running network sandboxes")
	}
	for _, id := range []string{a, b} {
		if _, err := d.c.Stop(context.Background(), id, true); err != nil {
			t.Fatal(err)
		}
	}
	assertNoLeftovers(t, "", a, b)
}

// TestNetworkOutbound goes beyond the host as far as this machine allows:
// DNS through the resolver written into the sandbox, then HTTP through the
// NAT. It skips when the host itself cannot do it.
func TestNetworkOutbound(t *testing.T) {
	const host = "deb.debian.org"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := net.DefaultResolver.LookupHost(ctx, host); err != nil {
		t.Skipf("the host cannot resolve %s: %v", host, err)
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Head("http://" + host + "/debian/")
	if err != nil {
		t.Skipf("the host cannot reach %s: %v", host, err)
	}
	resp.Body.Close()

	d := startDaemon(t, baseConfig(""))
	id := d.create(api.CreateRequest{Image: "python", Network: true})
	r := d.exec(id, "python3", "-c", `import socket, urllib.request
print(socket.gethostbyname("`+host+`"))
print(urllib.request.urlopen(urllib.request.Request("http://`+host+`/debian/", method="HEAD"), timeout=10).status)`)
	lines := strings.Fields(r.Stdout)
	if !r.Success || len(lines) != 2 || lines[1] != "200" {
		t.Fatalf("DNS and HTTP from the sandbox: %+v", r)
	}
	if _, err := netip.ParseAddr(lines[0]); err != nil {
		t.Fatalf("resolved %s to %q", host, lines[0])
	}
}

func TestNetworkThroughCLI(t *testing.T) {
	port := hostServer(t, "hello from the host")
	d := startDaemon(t, baseConfig(""))
	out, errOut, code := d.cli("", "run", "python", "--network", "-e", fmt.Sprintf("SVC=http://localhost:%d/", port),
		"--", "python3", "-c", "import os, urllib.request; print(urllib.request.urlopen(os.environ['SVC'], timeout=5).read().decode())")
	if code != 0 || out != "hello from the host\n" {
		t.Fatalf("hutch run --network: code %d, stdout %q, stderr %q", code, out, errOut)
	}
	// The sandbox of run is gone, network and all.
	assertNoLeftovers(t, d.dataDir)
}

func TestNetworkKill9ThenRestartReclaims(t *testing.T) {
	port := hostServer(t, "after restart")
	// Without the crash watchdog, the restart is what cleans up.
	d := startDaemon(t, baseConfig("crash_watchdog: false\n"))
	a := d.create(api.CreateRequest{Image: "python", Network: true})
	d.kill9()
	if left := networkLeftovers(d.dataDir, []string{a}); len(left) == 0 {
		t.Fatal("kill -9 left no network plumbing behind: the test proves nothing")
	}
	d.start()
	assertNoLeftovers(t, "", a)
	// The restarted daemon plumbs new sandboxes, reusing the freed addresses.
	b := d.create(api.CreateRequest{Image: "python", Network: true, Env: api.Env{fmt.Sprintf("SVC=http://127.0.0.1:%d/", port)}})
	if got := d.fetch(b, strings.TrimSpace(d.exec(b, "sh", "-c", "echo $SVC").Stdout)); got[0] != "after restart" {
		t.Fatalf("fetch after restart: %q", got)
	}
}
