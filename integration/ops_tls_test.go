package integration

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// opsDocBlock is the sh block of docs/operations.md after the comment
// that names marker: the commands a reader copies, run as they are.
func opsDocBlock(t *testing.T, marker string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(raw), "<!-- "+marker)
	if !ok {
		t.Fatalf("docs/operations.md has no block marked %q", marker)
	}
	_, rest, ok = strings.Cut(rest, "```sh\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatalf("docs/operations.md: no sh block after %q", marker)
	}
	return block
}

// runDocBlock runs a block of docs/operations.md with bash and env.
func runDocBlock(t *testing.T, marker string, env ...string) {
	t.Helper()
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", opsDocBlock(t, marker))
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("docs/operations.md block %q: %v\n%s", marker, err, out)
	}
}

// TestOpsTLSAndSocket: a daemon with the tls block of docs/operations.md
// (its certificates made by the doc's own commands) serves the API and the
// engine over TLS only; a client that trusts the CA gets in, one that does
// not is refused; a client certificate acts for its owner without a token;
// the local socket, mode 0660, serves the local owner without a token; a
// certificate replaced on disk reaches new connections while one opened
// before keeps working. The TypeScript SDK's terminals work over TLS and
// over the socket (sdkTerminals).
func TestOpsTLSAndSocket(t *testing.T) {
	testutil.RequiresBinary(t, "openssl")
	dir := t.TempDir()
	runDocBlock(t, "tls-certs", "DIR="+dir, "NAME=hutch.test")
	pem := func(name string) string { return filepath.Join(dir, name) }
	const aliceTok = "alice-ops-0123456789abcdef"
	sock := filepath.Join(dir, "hutch.sock")
	cfg := baseConfig("api_tokens: {alice: " + aliceTok + ", bob: bob-ops-0123456789abcdef0}\nlocal_socket_owner: alice\n" +
		"tls: {cert: " + pem("server.crt") + ", key: " + pem("server.key") + ", client_ca: " + pem("ca.crt") + "}\n")
	d := &daemon{t: t, serveArgs: []string{"--socket", sock, "--socket-group", ""}}
	testutil.RequiresIntegration(t)
	d.cfgPath, d.dataDir = filepath.Join(dir, "config.yaml"), filepath.Join(dir, "data")
	if err := os.WriteFile(d.cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	d.start()
	t.Cleanup(func() {
		d.terminate()
		if t.Failed() {
			t.Logf("daemon log:\n%s", d.log)
		}
	})
	addr := strings.TrimPrefix(d.url, "http://")
	engAddr := strings.TrimPrefix(d.engineURL, "ws://")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	trustCA, err := client.TLSConfig(pem("ca.crt"), "", "")
	if err != nil {
		t.Fatal(err)
	}
	https := client.New("https://"+addr, "").WithTLS(trustCA)
	if err := https.Health(ctx); err != nil {
		t.Fatalf("health over TLS with the CA: %v", err)
	}
	if err := client.New("https://"+addr, "").Health(ctx); err == nil {
		t.Error("a client that does not trust the CA got in")
	}
	if err := client.New("http://"+addr, "").Health(ctx); err == nil {
		t.Error("plain HTTP on the TLS listener answered")
	}
	// Owners: no credentials is 401; the client certificate is alice.
	var env *api.ErrorEnvelope
	if _, err := https.List(ctx); !errors.As(err, &env) {
		t.Errorf("list without a token or certificate: %v, want an error envelope", err)
	}
	aliceCert, err := client.TLSConfig(pem("ca.crt"), pem("alice.crt"), pem("alice.key"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.New("https://"+addr, "").WithTLS(aliceCert).List(ctx); err != nil {
		t.Errorf("list with alice's client certificate: %v", err)
	}
	// The engine listener serves TLS too.
	if conn, err := tls.Dial("tcp", engAddr, trustCA.Clone()); err != nil {
		t.Errorf("TLS handshake with the engine listener: %v", err)
	} else {
		conn.Close()
	}

	// The local socket: 0660, no token needed (local_socket_owner).
	fi, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o660 || fi.Mode().Type() != os.ModeSocket {
		t.Errorf("socket mode %v, want a socket of mode 0660", fi.Mode())
	}
	if _, err := client.NewUnix(sock, "").List(ctx); err != nil {
		t.Errorf("list over the socket without a token: %v", err)
	}
	// The CLI uses the socket when HUTCH_URL is unset.
	hutch, _ := binaries(t)
	cmd := exec.Command(hutch, "version")
	cmd.Env = append(os.Environ(), "HUTCH_URL=", "HUTCH_SOCKET="+sock)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "daemon:  hutch ") || !strings.Contains(string(out), " at unix://"+sock) {
		t.Errorf("hutch version over the socket: %v\n%s", err, out)
	}

	// issue 41: the TypeScript SDK's terminals over TLS and the socket.
	sdkTerminals(t, sock, "https://"+addr, pem("ca.crt"), aliceTok)

	// Rotation: a connection opened before keeps working, new ones get
	// the new certificate.
	old, err := tls.Dial("tcp", addr, trustCA.Clone())
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	oldSerial := old.ConnectionState().PeerCertificates[0].SerialNumber.String()
	br := bufio.NewReader(old)
	healthOn := func() {
		t.Helper()
		if _, err := old.Write([]byte("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")); err != nil {
			t.Fatalf("request on the open connection: %v", err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("answer on the open connection: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("health on the open connection: %s", resp.Status)
		}
	}
	healthOn()
	next := filepath.Join(dir, "next")
	runDocBlock(t, "tls-certs", "DIR="+next, "NAME=hutch.test")
	// A new CA too: the client trusts both while the certificate changes.
	both, err := client.TLSConfig(pem("ca.crt"), "", "")
	if err != nil {
		t.Fatal(err)
	}
	nextCA, err := os.ReadFile(filepath.Join(next, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	both.RootCAs.AppendCertsFromPEM(nextCA)
	for _, f := range []string{"server.key", "server.crt"} {
		if err := os.Rename(filepath.Join(next, f), pem(f)); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	testutil.EventuallyNil(t, 30*time.Second, func() error {
		c, err := tls.Dial("tcp", addr, both.Clone())
		if err != nil {
			return err
		}
		defer c.Close()
		if s := c.ConnectionState().PeerCertificates[0].SerialNumber.String(); s == oldSerial {
			return errors.New("still the old certificate")
		}
		return nil
	}, "a new connection gets the new certificate")
	healthOn()
	if d.cmd.ProcessState != nil {
		t.Fatal("the daemon exited on SIGHUP")
	}
}
