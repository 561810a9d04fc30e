package integration

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
)

// TestTemplateBuildAddURL: ADD of a URL (issue 39) fetches over HTTP and
// over HTTPS with a private CA (the daemon's SSL_CERT_FILE) from a
// server in a network namespace, under the build's egress policy: the
// file has mode 0600, the server's Last-Modified and --chown's owner; an
// unchanged rebuild is cached at every step, a changed remote file is a
// miss and fails its --checksum with the line; a deny_out name, a closed
// address and a build without network are refused.
func TestTemplateBuildAddURL(t *testing.T) {
	addr, inside := privateNetns(t, 9)
	caPEM, cert := testCertificate(t, "files.test")
	trustTestCA(t, caPEM) // the daemon verifies the server against it
	lastMod := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	var mu sync.Mutex
	content := "v1\n"
	serve := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Last-Modified", lastMod.Format(http.TimeFormat))
		fmt.Fprint(w, content)
	})
	var plainLn, tlsLn net.Listener
	if err := inside(func() (err error) {
		if plainLn, err = net.Listen("tcp4", addr+":80"); err != nil {
			return err
		}
		tlsLn, err = net.Listen("tcp4", addr+":443")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	plain := &http.Server{Handler: serve}
	go plain.Serve(plainLn)
	t.Cleanup(func() { plain.Close() })
	secure := httptest.NewUnstartedServer(serve)
	secure.Listener = tlsLn
	secure.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	secure.StartTLS()
	t.Cleanup(secure.Close)
	resolver := testResolver(t, map[string]string{"files.test": addr, "denied.test": addr})
	d := startDaemon(t, baseConfig(fmt.Sprintf("block_private_networks: false\nsandbox_nameservers: [%q]\n", resolver)))
	ctx := context.Background()

	sum := sha256.Sum256([]byte("v1\n"))
	dockerfile := "FROM python\nADD --chown=1234:1234 http://files.test/data.txt /opt/\nADD --checksum=sha256:" + hex.EncodeToString(sum[:]) + " https://files.test/data.txt /opt/secure.txt\n"
	build := func(name, dockerfile string, network bool, policy *api.EgressPolicy) (api.TemplateBuildResponse, map[int]bool, error) {
		cached := map[int]bool{}
		resp, err := d.c.BuildTemplate(ctx, api.TemplateBuildRequest{Name: name, Dockerfile: dockerfile, Network: network, Egress: policy}, func(ev api.TemplateBuildEvent) error {
			if ev.Phase == "step" {
				cached[ev.Line] = ev.Cached
			}
			return nil
		})
		return resp, cached, err
	}
	files := &api.EgressPolicy{AllowOut: []string{"files.test"}}
	resp, _, err := build("addurl", dockerfile, false, files)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	id := d.create(api.CreateRequest{Template: "addurl"})
	want := fmt.Sprintf("600 1234:1234 %d\n600 0:0 %d\nv1\nv1\n", lastMod.Unix(), lastMod.Unix())
	if r := d.exec(id, "sh", "-c", "stat -c '%a %u:%g %Y' /opt/data.txt /opt/secure.txt && cat /opt/data.txt /opt/secure.txt"); r.Stdout != want {
		t.Errorf("the fetched files: %q %q, want %q", r.Stdout, r.Stderr, want)
	}

	if again, _, err := build("addurl", dockerfile, false, files); err != nil || again.CachedSteps != again.Steps || again.Steps != resp.Steps {
		t.Errorf("an unchanged rebuild: %+v %v", again, err)
	}
	mu.Lock()
	content = "v2\n"
	mu.Unlock()
	_, cached, err := build("addurl", dockerfile, false, files)
	if !isS001(err) || !strings.Contains(err.Error(), "line 3") || !strings.Contains(err.Error(), "not the sha256:"+hex.EncodeToString(sum[:])) || cached[2] {
		t.Errorf("a changed remote file: %v (line 2 cached: %v)", err, cached[2])
	}

	for _, tc := range []struct {
		dockerfile string
		network    bool
		policy     *api.EgressPolicy
		want       string
	}{
		{"FROM python\nADD http://denied.test/data.txt /x\n", false, &api.EgressPolicy{AllowOut: []string{"*.test"}, DenyOut: []string{"denied.test"}}, "hutch egress policy refused denied.test port 80 (deny_out denied.test)"},
		{"FROM python\nADD http://127.0.0.1:9/x /x\n", true, nil, "hutch egress policy refused 127.0.0.1 port 9 (closed address)"},
		{"FROM python\nADD http://files.test/data.txt /x\n", false, nil, "needs the build's network"},
	} {
		if _, _, err := build("refused", tc.dockerfile, tc.network, tc.policy); !isS001(err) || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want S001 with %q", tc.dockerfile, err, tc.want)
		}
	}
	if _, err := d.c.Stop(ctx, id, true); err != nil {
		t.Fatal(err)
	}
	if _, err := d.c.DeleteTemplate(ctx, "addurl"); err != nil {
		t.Fatal(err)
	}
}

// isS001 says err is an S001 answer.
func isS001(err error) bool { return err != nil && strings.Contains(err.Error(), "S001") }

// TestTemplateBuildCopyFromGlob: COPY --from=stage with globs (issue
// 39), as docker copies them: files matched into the destination
// directory, matched directories' contents into it, one match to a file
// name; a glob that matches nothing fails with its line.
func TestTemplateBuildCopyFromGlob(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	ctx := context.Background()
	dockerfile := `FROM python AS gen
RUN mkdir -p /out/lib /out/lib2 && echo a > /out/a.js && echo b > /out/b.js && echo c > /out/c.css && echo x > /out/lib/x.js && echo y > /out/lib2/y.js
FROM python
COPY --from=gen /out/*.js /app/
COPY --from=gen /out/lib* /libs/
COPY --from=gen /out/c.* /single.css
COPY --from=gen /out/a.js /etc
COPY hello.txt /usr
`
	// A file copied to an existing directory named without a trailing
	// "/" goes into it, as docker copies it (from a stage and from the
	// context).
	var buildCtx bytes.Buffer
	tw := tar.NewWriter(&buildCtx)
	if err := tw.WriteHeader(&tar.Header{Name: "hello.txt", Mode: 0o644, Size: 6}); err != nil {
		t.Fatal(err)
	}
	tw.Write([]byte("hello\n"))
	tw.Close()
	if _, err := d.c.BuildTemplate(ctx, api.TemplateBuildRequest{Name: "globs", Dockerfile: dockerfile, Context: buildCtx.Bytes()}, func(api.TemplateBuildEvent) error { return nil }); err != nil {
		t.Fatalf("build: %v", err)
	}
	id := d.create(api.CreateRequest{Template: "globs"})
	want := "/app/a.js\n/app/b.js\n/libs/x.js\n/libs/y.js\n/single.css\nc\na\nhello\n"
	if r := d.exec(id, "sh", "-c", "find /app /libs /single.css -type f | sort && cat /single.css /etc/a.js /usr/hello.txt"); r.Stdout != want {
		t.Errorf("copied: %q %q, want %q", r.Stdout, r.Stderr, want)
	}
	_, err := d.c.BuildTemplate(ctx, api.TemplateBuildRequest{Name: "globs-bad", Dockerfile: "FROM python AS gen\nRUN true\nFROM python\nCOPY --from=gen /out/*.js /app/\n"}, func(api.TemplateBuildEvent) error { return nil })
	if !isS001(err) || !strings.Contains(err.Error(), "line 4") || !strings.Contains(err.Error(), "matches nothing") {
		t.Errorf("a glob matching nothing: %v", err)
	}
	if _, err := d.c.Stop(ctx, id, true); err != nil {
		t.Fatal(err)
	}
	if _, err := d.c.DeleteTemplate(ctx, "globs"); err != nil {
		t.Fatal(err)
	}
}
