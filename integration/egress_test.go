package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// testResolver answers A questions for names (without the final dot) with
// their address and NXDOMAIN for any other name, on 127.0.0.1 over UDP
// and TCP alike. It returns its address, for sandbox_nameservers.
func testResolver(t *testing.T, names map[string]string) string {
	t.Helper()
	return testResolverAt(t, "127.0.0.1", names)
}

// testResolverAt is testResolver on address ip.
func testResolverAt(t *testing.T, ip string, names map[string]string) string {
	t.Helper()
	handler := dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(q)
		addr, ok := names[strings.TrimSuffix(strings.ToLower(q.Question[0].Name), ".")]
		switch {
		case !ok:
			m.Rcode = dns.RcodeNameError
		case q.Question[0].Qtype == dns.TypeA:
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 1}, A: net.ParseIP(addr)})
		}
		_ = w.WriteMsg(m)
	})
	for range 10 {
		pc, err := net.ListenPacket("udp4", net.JoinHostPort(ip, "0"))
		if err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("tcp4", pc.LocalAddr().String())
		if err != nil {
			pc.Close()
			continue
		}
		for _, s := range []*dns.Server{{PacketConn: pc, Handler: handler}, {Listener: l, Handler: handler}} {
			go s.ActivateAndServe()
			t.Cleanup(func() { _ = s.Shutdown() })
		}
		return pc.LocalAddr().String()
	}
	t.Fatal("no port free for a test resolver")
	return ""
}

// hostOf returns the host and port of URL u.
func hostOf(t *testing.T, u string) (string, string) {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return p.Hostname(), p.Port()
}

// eventsOf returns the data of the events of type typ of sandbox id.
func (d *daemon) eventsOf(id, typ string) []map[string]any {
	d.t.Helper()
	list, err := d.c.ListEvents(context.Background(), api.EventsRequest{SandboxID: id, Type: typ})
	if err != nil {
		d.t.Fatal(err)
	}
	var out []map[string]any
	for _, e := range list.Events {
		var data map[string]any
		_ = json.Unmarshal(e.Data, &data)
		out = append(out, data)
	}
	return out
}

// egressTargets are two HTTP servers outside the host's namespace that
// answer "allowed" and "other", and a test resolver naming them
// allowed.test and other.test: their URLs by address and by name, and the
// daemon config that lets sandboxes reach them through that resolver.
type egressTargets struct {
	allowed, other             string // by address
	allowedByName, otherByName string
	otherIP, otherPort         string
	config                     string
}

// newEgressTargets starts the targets and resolver; t's cleanup ends them.
func newEgressTargets(t *testing.T) egressTargets {
	t.Helper()
	e := egressTargets{allowed: privateTargetN(t, 0, "allowed"), other: privateTargetN(t, 1, "other")}
	allowedIP, allowedPort := hostOf(t, e.allowed)
	e.otherIP, e.otherPort = hostOf(t, e.other)
	resolver := testResolver(t, map[string]string{"allowed.test": allowedIP, "other.test": e.otherIP})
	e.config = fmt.Sprintf("block_private_networks: false\nsandbox_nameservers: [%q]\n", resolver)
	e.allowedByName, e.otherByName = "http://allowed.test:"+allowedPort+"/", "http://other.test:"+e.otherPort+"/"
	return e
}

// TestEgressPolicy: a sandbox allowed one name, served by a test resolver
// and HTTP server outside the host's namespace, reaches it and neither
// another name nor another address; a new policy turns that around; the
// refusals are counted and recorded; bad policies change nothing.
func TestEgressPolicy(t *testing.T) {
	tg := newEgressTargets(t)
	allowed, other, otherIP, otherPort := tg.allowed, tg.other, tg.otherIP, tg.otherPort
	allowedByName, otherByName := tg.allowedByName, tg.otherByName
	d := startDaemon(t, baseConfig(tg.config))

	id := d.create(api.CreateRequest{Image: "python", Egress: &api.EgressPolicy{AllowOut: []string{"allowed.test"}}})
	got := d.fetch(id, allowedByName, otherByName, other)
	if got[0] != "allowed" || !strings.Contains(got[1], "Name or service not known") || !strings.HasPrefix(got[2], "ERR") {
		t.Fatalf("allow_out [allowed.test]: fetched %q; want allowed, a name error, a refusal", got)
	}
	info, err := d.c.Get(context.Background(), id)
	if err != nil || !info.Network || info.Egress == nil || info.Egress.AllowOut[0] != "allowed.test" {
		t.Fatalf("sandbox info: %+v, %v", info, err)
	}

	// The CLI replaces the policy: the other address by CIDR, and the
	// allowed name denied.
	out, errOut, code := d.cli("", "network", "policy", id, "--allow-out", otherIP+"/32:"+otherPort, "--deny-out", "allowed.test")
	if code != 0 {
		t.Fatalf("hutch network policy: %d %s", code, errOut)
	}
	var sbNet api.SandboxNetwork
	if err := json.Unmarshal([]byte(out), &sbNet); err != nil || sbNet.Address == "" || len(sbNet.AllowOut) != 1 {
		t.Fatalf("hutch network policy printed %q (%v)", out, err)
	}
	got = d.fetch(id, allowedByName, other, allowed)
	if !strings.Contains(got[0], "Name or service not known") || got[1] != "other" || !strings.HasPrefix(got[2], "ERR") {
		t.Fatalf("new policy: fetched %q; want a name error, other, a refusal", got)
	}

	// Refusals: names at once, connections once the counters are read.
	if names := d.eventsOf(id, api.EventEgressDenied); len(names) == 0 || names[0]["name"] != "other.test" {
		t.Errorf("egress.denied events of names: %v", names)
	}
	if !testutil.Poll(60*time.Second, func() bool { return hasCount(d.eventsOf(id, api.EventEgressDenied)) }) {
		t.Fatalf("no counted egress.denied event: %v", d.eventsOf(id, api.EventEgressDenied))
	}

	// Lifted: everything passes again.
	if _, err := d.c.UpdateNetwork(context.Background(), id, api.EgressPolicy{}); err != nil {
		t.Fatal(err)
	}
	if got = d.fetch(id, allowedByName, other); got[0] != "allowed" || got[1] != "other" {
		t.Fatalf("no policy: fetched %q", got)
	}

	// Bad input changes nothing.
	before, _ := d.c.List(context.Background())
	for _, bad := range []string{"256.1.1.1", "fd00::/8", "-bad-.example", "example.com:0", "a b"} {
		_, err := d.c.Create(context.Background(), api.CreateRequest{Image: "python", Egress: &api.EgressPolicy{AllowOut: []string{bad}}})
		wantCode(t, err, "S001")
		_, err = d.c.UpdateNetwork(context.Background(), id, api.EgressPolicy{DenyOut: []string{bad}})
		wantCode(t, err, "S001")
	}
	if after, _ := d.c.List(context.Background()); len(after.Sandboxes) != len(before.Sandboxes) {
		t.Errorf("bad creates left sandboxes: %d → %d", len(before.Sandboxes), len(after.Sandboxes))
	}
	if got = d.fetch(id, other); got[0] != "other" {
		t.Errorf("a refused update changed the policy: %q", got)
	}
	loopback := d.create(api.CreateRequest{Image: "python"})
	_, err = d.c.UpdateNetwork(context.Background(), loopback, api.EgressPolicy{DenyOut: []string{"example.com"}})
	wantCode(t, err, "S252")
}

// hasCount reports whether one of events counts refused packets.
func hasCount(events []map[string]any) bool {
	for _, e := range events {
		if n, ok := e["packets"].(float64); ok && n > 0 {
			return true
		}
	}
	return false
}

// TestSandboxNetworks: two sandboxes on one network reach each other by
// name and id, a third reaches neither; a network in use is not deleted;
// a sandbox that stops leaves it.
func TestSandboxNetworks(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	ctx := context.Background()
	if _, code := d.c.CreateNetwork(ctx, "Bad_Name"); code == nil {
		t.Fatal("a bad network name was taken")
	}
	if _, err := d.c.CreateNetwork(ctx, "app"); err != nil {
		t.Fatal(err)
	}
	_, err := d.c.CreateNetwork(ctx, "app")
	wantCode(t, err, "S251")
	web := d.create(api.CreateRequest{Image: "python", Network: true, Name: "web"})
	client := d.create(api.CreateRequest{Image: "python", Network: true, Name: "client"})
	outsider := d.create(api.CreateRequest{Image: "python", Network: true, Name: "outsider"})
	for _, id := range []string{web, client} {
		if _, err := d.c.ConnectNetwork(ctx, "app", id); err != nil {
			t.Fatal(err)
		}
	}
	_, _, code := d.cli("", "network", "connect", "nope", outsider)
	if code == 0 {
		t.Error("connecting to a network that does not exist succeeded")
	}
	loopback := d.create(api.CreateRequest{Image: "python"})
	_, err = d.c.ConnectNetwork(ctx, "app", loopback)
	wantCode(t, err, "S252")

	d.setup(web, "sh", "-c", "mkdir -p /srv && printf web > /srv/index.html")
	if _, err := d.c.StartProcess(ctx, api.ProcessStartRequest{SandboxID: web, Argv: []string{"python3", "-m", "http.server", "8000", "-d", "/srv"}}); err != nil {
		t.Fatal(err)
	}
	webAddr := d.sandboxAddr(web)
	urls := []string{"http://web:8000/", "http://web.app:8000/", "http://" + web + ":8000/", "http://" + webAddr + ":8000/"}
	var got []string
	if !testutil.Poll(60*time.Second, func() bool { got = d.fetch(client, urls...); return strings.Join(got, ",") == "web,web,web,web" }) {
		t.Fatalf("a peer by name, name.network, id and address: %q", got)
	}
	for i, g := range d.fetch(outsider, urls...) {
		if !strings.HasPrefix(g, "ERR") {
			t.Errorf("an outsider reached %s: %q", urls[i], g)
		}
	}
	out, _, code := d.cli("", "network", "ls")
	if code != 0 || !strings.Contains(out, web+"="+webAddr) {
		t.Errorf("hutch network ls: %q", out)
	}
	_, err = d.c.DeleteNetwork(ctx, "app")
	wantCode(t, err, "S251")

	// Off the network: unreachable again.
	if _, err := d.c.DisconnectNetwork(ctx, "app", client); err != nil {
		t.Fatal(err)
	}
	if g := d.fetch(client, "http://"+webAddr+":8000/"); !strings.HasPrefix(g[0], "ERR") {
		t.Errorf("reached a former peer: %q", g)
	}
	// A sandbox that stops leaves its networks; then the network goes.
	if _, err := d.c.Stop(ctx, web, true); err != nil {
		t.Fatal(err)
	}
	if _, err := d.c.DeleteNetwork(ctx, "app"); err != nil {
		t.Fatalf("deleting the emptied network: %v", err)
	}
	assertNoLeftovers(t, "", web)
}
