package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// Preview URLs (issue 16, first part): a server in a sandbox without a
// network, reached through the agent by the path, header and public
// routes; its pages cannot act as the API's origin.

func TestPreviewRoutes(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	ctx := context.Background()
	id := d.create(api.CreateRequest{Image: "python"})
	d.exec(id, "sh", "-c", "mkdir -p /srv && echo hello from the sandbox > /srv/index.txt")
	// An echo server: a POST's body comes back whole.
	server := `import http.server, sys
class H(http.server.SimpleHTTPRequestHandler):
    def do_POST(self):
        n = int(self.headers['Content-Length'])
        body = self.rfile.read(n)
        self.send_response(200)
        self.send_header('Content-Length', str(len(body)))
        self.send_header('X-Auth-Seen', self.headers.get('Authorization', 'none'))
        self.end_headers()
        self.wfile.write(body)
http.server.ThreadingHTTPServer(('127.0.0.1', 8000), lambda *a: H(*a, directory='/srv')).serve_forever()`
	if _, err := d.c.StartProcess(ctx, api.ProcessStartRequest{SandboxID: id, Tag: "web", Argv: []string{"python3", "-c", server}}); err != nil {
		t.Fatal(err)
	}
	get := func(req *http.Request) (int, string, http.Header) {
		t.Helper()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
	path := d.url + "/v1/sandboxes/" + id + "/ports/8000/index.txt"
	// Not exposed: unreachable.
	if status, body, _ := get(mustRequest(t, "GET", path, nil)); status != 404 || !strings.Contains(body, "S002") {
		t.Fatalf("a port not exposed: %d %s", status, body)
	}
	info, err := d.c.ExposePort(ctx, api.PortExposeRequest{SandboxID: id, Port: 8000})
	if err != nil || info.URL != "/v1/sandboxes/"+id+"/ports/8000/" {
		t.Fatalf("expose: %+v %v", info, err)
	}
	// The server may still be starting.
	var status int
	var body string
	var header http.Header
	testutil.Poll(30*time.Second, func() bool {
		status, body, header = get(mustRequest(t, "GET", path, nil))
		return status == 200
	})
	if body != "hello from the sandbox\n" || header.Get("Content-Security-Policy") == "" {
		t.Fatalf("path route: %d %q %v", status, body, header)
	}
	// By the headers, on any path.
	req := mustRequest(t, "GET", d.url+"/index.txt", nil)
	req.Header.Set(api.HeaderSandboxID, id)
	req.Header.Set(api.HeaderSandboxPort, "8000")
	if status, body, _ := get(req); status != 200 || body != "hello from the sandbox\n" {
		t.Fatalf("header route: %d %q", status, body)
	}
	// A large body both ways; hutch's bearer token never reaches the server.
	big := make([]byte, 8<<20)
	rand.Read(big)
	req = mustRequest(t, "POST", d.url+"/v1/sandboxes/"+id+"/ports/8000/echo", bytes.NewReader(big))
	req.Header.Set("Authorization", "Bearer not-for-the-sandbox")
	status, body, header = get(req)
	if status != 200 || body != string(big) || header.Get("X-Auth-Seen") != "none" {
		t.Fatalf("8 MiB echoed: %d, %d bytes, auth seen %q", status, len(body), header.Get("X-Auth-Seen"))
	}
	// A page from the sandbox cannot drive the API: its requests carry
	// the opaque origin the CSP gives it.
	req = mustRequest(t, "POST", d.url+"/v1/sandboxes", strings.NewReader(`{"image":"python"}`))
	req.Header.Set("Origin", "null")
	if status, body, _ := get(req); status != 403 {
		t.Errorf("the API from an opaque origin: %d %s", status, body)
	}
	// Public: its URL works without a token, until it expires.
	pub, err := d.c.ExposePort(ctx, api.PortExposeRequest{SandboxID: id, Port: 8000, Public: true, ExpiresInSecs: 2})
	if err != nil || !strings.HasPrefix(pub.URL, "/p/") {
		t.Fatalf("expose public: %+v %v", pub, err)
	}
	if status, body, _ := get(mustRequest(t, "GET", d.url+pub.URL+"index.txt", nil)); status != 200 || body != "hello from the sandbox\n" {
		t.Fatalf("public route: %d %q", status, body)
	}
	if !testutil.Poll(30*time.Second, func() bool {
		status, _, _ := get(mustRequest(t, "GET", d.url+pub.URL+"index.txt", nil))
		return status == 404
	}) {
		t.Error("the public URL outlived its expiry")
	}
	if _, err := d.c.UnexposePort(ctx, id, 8000); err != nil {
		t.Fatal(err)
	}
	if status, _, _ := get(mustRequest(t, "GET", path, nil)); status != 404 {
		t.Errorf("an unexposed port answered %d", status)
	}
}

func mustRequest(t *testing.T, method, url string, body io.Reader) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// TestPortForward: hutch port-forward carries a 100 MiB TCP stream from a
// server in a sandbox without a network, intact.
func TestPortForward(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	ctx := context.Background()
	id := d.create(api.CreateRequest{Image: "python"})
	// Sends 100 MiB of a seeded stream, then its SHA-256 as the last 64
	// hex characters, to each client.
	server := `import hashlib, random, socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', 9000)); s.listen()
while True:
    c, _ = s.accept()
    r, h = random.Random(7), hashlib.sha256()
    for _ in range(100):
        b = r.randbytes(1 << 20)
        h.update(b)
        c.sendall(b)
    c.sendall(h.hexdigest().encode())
    c.close()`
	if _, err := d.c.StartProcess(ctx, api.ProcessStartRequest{SandboxID: id, Argv: []string{"python3", "-c", server}}); err != nil {
		t.Fatal(err)
	}
	hutch, _ := binaries(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	local := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(hutch, "port-forward", id, fmt.Sprintf("%d:9000", local))
	cmd.Env = append(os.Environ(), "HUTCH_URL="+d.url)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var got []byte
	if !testutil.Poll(60*time.Second, func() bool {
		conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", local))
		if err != nil {
			return false
		}
		defer conn.Close()
		got, err = io.ReadAll(conn)
		return err == nil && len(got) == 100<<20+64
	}) {
		t.Fatalf("read %d bytes through port-forward", len(got))
	}
	sum := sha256.Sum256(got[:100<<20])
	if hex.EncodeToString(sum[:]) != string(got[100<<20:]) {
		t.Fatal("the stream arrived altered")
	}
	list, err := d.c.ListPorts(ctx, id)
	if err != nil || len(list.Ports) != 1 || list.Ports[0].Port != 9000 {
		t.Errorf("ports after port-forward: %+v %v", list, err)
	}
}
