package portsvc

import (
	"context"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/agent"
	"github.com/hutch-dev/hutch/internal/agent/agenttest"
	"github.com/hutch-dev/hutch/internal/agentclient"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/sandbox"
	"github.com/hutch-dev/hutch/internal/sandbox/sandboxtest"
)

func TestPortInfoURLs(t *testing.T) {
	const id = "5b0e3c1a-7d2f-4c1e-9a7b-2f6d8e4c1a00"
	token := "0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		name      string
		domain    string
		listen    int
		tls       bool
		p         exposedPort
		url, host string
	}{
		{"no domain", "", 3111, false, exposedPort{port: 8000}, "/v1/sandboxes/" + id + "/ports/8000/", ""},
		{"owner's", "preview.example.com", 3111, false, exposedPort{port: 8000},
			"/v1/sandboxes/" + id + "/ports/8000/", "http://8000-" + id + ".preview.example.com:3111/"},
		{"public", "localhost", 3111, false, exposedPort{port: 5173, public: true, token: token},
			"/p/" + token + "/", "http://5173-" + id + ".localhost:3111/?hutch_preview_token=" + token},
		{"listening on 80", "preview.example.com", 80, false, exposedPort{port: 8000},
			"/v1/sandboxes/" + id + "/ports/8000/", "http://8000-" + id + ".preview.example.com/"},
		{"tls", "preview.example.com", 3111, true, exposedPort{port: 8000},
			"/v1/sandboxes/" + id + "/ports/8000/", "https://8000-" + id + ".preview.example.com:3111/"},
		{"tls on 443", "preview.example.com", 443, true, exposedPort{port: 8000},
			"/v1/sandboxes/" + id + "/ports/8000/", "https://8000-" + id + ".preview.example.com/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(nil, Options{PreviewDomain: tc.domain, ListenPort: tc.listen, TLS: tc.tls})
			info := s.portInfo(id, &tc.p)
			if info.URL != tc.url || info.HostURL != tc.host {
				t.Errorf("urls %q %q, want %q %q", info.URL, info.HostURL, tc.url, tc.host)
			}
		})
	}
}

// TestPorts: an owner exposes, lists and unexposes its sandbox's ports;
// another owner reaches none of them; a public port is found by its
// token alone, until it expires or is unexposed; a stopped sandbox
// exposes nothing and its ports go with it.
func TestPorts(t *testing.T) {
	var sbs sandboxtest.Sandboxes
	s := New(&sbs, Options{})
	alice, bob := auth.WithOwner(context.Background(), "alice"), auth.WithOwner(context.Background(), "bob")
	sb := sbs.Add("alice")

	for _, bad := range []api.PortExposeRequest{
		{SandboxID: sb.ID, Port: 0},
		{SandboxID: sb.ID, Port: 65536},
		{SandboxID: sb.ID, Port: 80, ExpiresInSecs: 60},
		{SandboxID: sb.ID, Port: 80, CORS: []string{"example.com"}},
		{SandboxID: sb.ID, Port: 80, CORS: []string{"https://example.com/path"}},
	} {
		if _, err := s.ExposePort(alice, bad); !errdefs.Is(err, errdefs.CodeMalformed) {
			t.Errorf("expose %+v: %v, want S001", bad, err)
		}
	}
	if _, err := s.ExposePort(bob, api.PortExposeRequest{SandboxID: sb.ID, Port: 80}); !errdefs.Is(err, errdefs.CodeNotFound) {
		t.Errorf("another owner's sandbox: %v, want S002", err)
	}
	owned, err := s.ExposePort(alice, api.PortExposeRequest{SandboxID: sb.ID, Port: 8000, CORS: []string{"https://app.example.com"}})
	if err != nil || owned.Public || owned.URL != "/v1/sandboxes/"+sb.ID+"/ports/8000/" {
		t.Fatalf("expose: %+v, %v", owned, err)
	}
	if got := sbs.Snapshot(sb).Events; len(got) != 1 || got[0].Type != api.EventPortExposed {
		t.Errorf("events %+v, want one %s", got, api.EventPortExposed)
	}
	public, err := s.ExposePort(alice, api.PortExposeRequest{SandboxID: sb.ID, Port: 5173, Public: true, ExpiresInSecs: 3600})
	if err != nil || !public.Public || len(public.URL) != len("/p/")+48+1 || public.ExpiresAt == "" {
		t.Fatalf("public expose: %+v, %v", public, err)
	}
	token := public.URL[len("/p/") : len(public.URL)-1]

	list, err := s.ListPorts(alice, api.PortListRequest{SandboxID: sb.ID})
	if err != nil || len(list.Ports) != 2 || list.Ports[0].Port != 5173 || list.Ports[1].Port != 8000 {
		t.Fatalf("list: %+v, %v", list, err)
	}
	if _, err := s.ListPorts(bob, api.PortListRequest{SandboxID: sb.ID}); !errdefs.Is(err, errdefs.CodeNotFound) {
		t.Errorf("another owner's list: %v, want S002", err)
	}
	if tg, err := s.PortFor(alice, sb.ID, 8000); err != nil || tg.SandboxID != sb.ID || tg.owner != "alice" || len(tg.CORS) != 1 {
		t.Errorf("PortFor: %+v, %v", tg, err)
	}
	if _, err := s.PortFor(bob, sb.ID, 8000); !errdefs.Is(err, errdefs.CodeNotFound) {
		t.Errorf("PortFor of another owner: %v, want S002", err)
	}
	if _, err := s.PortFor(alice, sb.ID, 9000); !errdefs.Is(err, errdefs.CodeNotFound) {
		t.Errorf("PortFor of a port not exposed: %v, want S002", err)
	}
	if tg, ok := s.PublicPort(token); !ok || tg.Port != 5173 || tg.owner != "alice" {
		t.Errorf("PublicPort: %+v, %v", tg, ok)
	}
	if _, ok := s.PublicPort(token[:47] + "x"); ok {
		t.Error("PublicPort found another token's port")
	}

	// Exposing a port again gives a public one a new token.
	again, err := s.ExposePort(alice, api.PortExposeRequest{SandboxID: sb.ID, Port: 5173, Public: true})
	if err != nil || again.URL == public.URL || again.ExpiresAt != "" {
		t.Fatalf("expose again: %+v, %v", again, err)
	}
	if _, ok := s.PublicPort(token); ok {
		t.Error("the replaced token still finds the port")
	}

	if _, err := s.UnexposePort(alice, api.PortRequest{SandboxID: sb.ID, Port: 8000}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UnexposePort(alice, api.PortRequest{SandboxID: sb.ID, Port: 8000}); !errdefs.Is(err, errdefs.CodeNotFound) {
		t.Errorf("unexpose twice: %v, want S002", err)
	}
	if _, err := s.PortFor(alice, sb.ID, 8000); !errdefs.Is(err, errdefs.CodeNotFound) {
		t.Errorf("PortFor of an unexposed port: %v, want S002", err)
	}

	// A paused sandbox's ports may be exposed; a stopped one's not, and
	// its ports go with it.
	sbs.SetState(sb, sandbox.Paused)
	if _, err := s.ExposePort(alice, api.PortExposeRequest{SandboxID: sb.ID, Port: 3000}); err != nil {
		t.Errorf("expose on a paused sandbox: %v", err)
	}
	sbs.SetState(sb, sandbox.Stopped)
	s.Forget(sb.ID)
	if _, err := s.ExposePort(alice, api.PortExposeRequest{SandboxID: sb.ID, Port: 3000}); !errdefs.Is(err, errdefs.CodeStopped) {
		t.Errorf("expose on a stopped sandbox: %v, want S004", err)
	}
	if list, err := s.ListPorts(alice, api.PortListRequest{SandboxID: sb.ID}); err != nil || len(list.Ports) != 0 {
		t.Errorf("list of a stopped sandbox: %+v, %v", list, err)
	}
	if _, ok := s.PublicPort(again.URL[len("/p/") : len(again.URL)-1]); ok {
		t.Error("a stopped sandbox's public port is still found")
	}
}

// TestPortLimit: a sandbox exposes at most maxExposedPorts ports; one
// exposed again does not count twice.
func TestPortLimit(t *testing.T) {
	var sbs sandboxtest.Sandboxes
	s := New(&sbs, Options{})
	alice := auth.WithOwner(context.Background(), "alice")
	sb := sbs.Add("alice")
	for p := 1; p <= maxExposedPorts; p++ {
		if _, err := s.ExposePort(alice, api.PortExposeRequest{SandboxID: sb.ID, Port: p}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.ExposePort(alice, api.PortExposeRequest{SandboxID: sb.ID, Port: 1}); err != nil {
		t.Errorf("exposing a port again at the limit: %v", err)
	}
	if _, err := s.ExposePort(alice, api.PortExposeRequest{SandboxID: sb.ID, Port: maxExposedPorts + 1}); !errdefs.Is(err, errdefs.CodeCapacity) {
		t.Errorf("one port past the limit: %v, want S400", err)
	}
}

// TestDial: a preview reaches the port through the sandbox's agent, as
// the port's owner; a port nobody listens on is S002.
func TestDial(t *testing.T) {
	var sbs sandboxtest.Sandboxes
	s := New(&sbs, Options{})
	alice := auth.WithOwner(context.Background(), "alice")
	sb := sbs.Add("alice")
	sb.Agent = agenttest.Start(t, agent.Options{Version: "test"}, agentclient.Options{CallTimeout: 10 * time.Second}).Client

	// The in-process agent's loopback is the test's.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = c.Write([]byte("hello from the sandbox"))
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	info, err := s.ExposePort(alice, api.PortExposeRequest{SandboxID: sb.ID, Port: port, Public: true})
	if err != nil {
		t.Fatal(err)
	}
	tg, ok := s.PublicPort(info.URL[len("/p/") : len(info.URL)-1])
	if !ok {
		t.Fatal("the public port is not found by its token")
	}
	// A public visitor has no owner: the dial is the port owner's.
	conn, err := s.Dial(context.Background(), tg)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(conn)
	conn.Close()
	if err != nil || string(got) != "hello from the sandbox" {
		t.Fatalf("read %q, %v", got, err)
	}
	if n := sbs.Held(); n != 0 {
		t.Errorf("%d handles held after the dial", n)
	}

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	free := closed.Addr().(*net.TCPAddr).Port
	closed.Close()
	if _, err := s.ExposePort(alice, api.PortExposeRequest{SandboxID: sb.ID, Port: free}); err != nil {
		t.Fatal(err)
	}
	tg, err = s.PortFor(alice, sb.ID, free)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := s.Dial(alice, tg); !errdefs.Is(err, errdefs.CodeNotFound) {
		if c != nil {
			c.Close()
		}
		t.Errorf("dial of a port nobody listens on: %v, want S002 (port %s)", err, strconv.Itoa(free))
	}
}
