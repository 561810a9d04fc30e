package integration

import (
	"context"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// Preview URLs by host name (issue 16): with preview_domain, a page served
// from a sandbox without a network is loaded by a real browser through its
// port's own host, the public host URL's token traded for a cookie, and
// through the public path route; the owner's route and expiry hold there
// too. preview_domain localhost needs no DNS: Chromium resolves *.localhost
// to loopback itself (glibc and Go do not, so the Go requests below name
// the daemon's address and send the Host).

// previewPage is the site the sandbox serves: text, and text that only
// its scripts (inline and a file of the site's own) write.
var previewPage = map[string]string{
	"/srv/index.html": `<!doctype html><html><head><title>preview</title></head><body>
<p id="static">static text from the sandbox</p><p id="inline"></p><p id="external"></p>
<script>document.getElementById('inline').textContent = 'written by ' + 'an inline script'</script>
<script src="app.js"></script>
</body></html>
`,
	"/srv/app.js": "document.getElementById('external').textContent = ['written', 'by', 'app.js'].join(' ')\n",
}

// previewTexts are what the page shows once its scripts ran.
var previewTexts = []string{"static text from the sandbox", "written by an inline script", "written by app.js"}

func TestPreviewHost(t *testing.T) {
	chromium := testutil.RequiresBinary(t, "chromium")
	d := startDaemon(t, baseConfig("preview_domain: localhost\n"+ownersConfig))
	ctx := context.Background()
	alice := client.New(d.url, aliceToken)
	d.c = alice
	id := d.create(api.CreateRequest{Image: "python"})
	for path, content := range previewPage {
		if _, err := alice.FsWrite(ctx, api.FsWriteRequest{SandboxID: id, Path: path, Content: &content, Parents: true}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := alice.StartProcess(ctx, api.ProcessStartRequest{SandboxID: id, Tag: "web",
		Argv: []string{"python3", "-m", "http.server", "8000", "--bind", "127.0.0.1", "--directory", "/srv"}}); err != nil {
		t.Fatal(err)
	}
	pub, err := alice.ExposePort(ctx, api.PortExposeRequest{SandboxID: id, Port: 8000, Public: true})
	if err != nil {
		t.Fatal(err)
	}
	host := "8000-" + id + ".localhost:" + strings.TrimPrefix(d.url, "http://127.0.0.1:")
	if pub.HostURL != "http://"+host+"/?"+api.PreviewTokenParam+"="+strings.TrimSuffix(strings.TrimPrefix(pub.URL, "/p/"), "/") {
		t.Fatalf("host_url %q, path url %q", pub.HostURL, pub.URL)
	}
	// The server may still be starting.
	if !testutil.Poll(60*time.Second, func() bool {
		status, _, _ := hostGet(t, d, host, "/index.html", map[string]string{"Authorization": "Bearer " + aliceToken})
		return status == 200
	}) {
		t.Fatal("the sandbox's server did not answer on its preview host")
	}

	t.Run("chromium through the host URL", func(t *testing.T) {
		// No token but the URL's: the page, its script file included,
		// loads only if the cookie works.
		dom := dumpDOM(t, chromium, pub.HostURL)
		for _, want := range previewTexts {
			if !strings.Contains(dom, want) {
				t.Errorf("the page through its host lacks %q:\n%s", want, dom)
			}
		}
	})

	t.Run("chromium through the public path", func(t *testing.T) {
		dom := dumpDOM(t, chromium, d.url+pub.URL)
		for _, want := range previewTexts {
			if !strings.Contains(dom, want) {
				t.Errorf("the page through /p/ lacks %q:\n%s", want, dom)
			}
		}
	})

	t.Run("the owner's token, never the API", func(t *testing.T) {
		for _, tc := range []struct {
			name, token string
			status      int
		}{{"alice", aliceToken, 200}, {"bob", bobToken, 404}, {"no token", "", 401}} {
			hdr := map[string]string{}
			if tc.token != "" {
				hdr["Authorization"] = "Bearer " + tc.token
			}
			if status, body, _ := hostGet(t, d, host, "/index.html", hdr); status != tc.status {
				t.Errorf("%s: %d %.200s, want %d", tc.name, status, body, tc.status)
			}
		}
		// The API's paths are the sandbox's server's on its host.
		status, body, header := hostGet(t, d, host, "/v1/sandboxes", map[string]string{"Authorization": "Bearer " + aliceToken})
		if status != 404 || strings.Contains(body, id) || !strings.HasPrefix(header.Get("Content-Type"), "text/html") {
			t.Errorf("/v1/sandboxes on the preview host: %d %s %.200s; want the sandbox's server's 404", status, header.Get("Content-Type"), body)
		}
		if status, body, _ := hostGet(t, d, "www.localhost:"+strings.TrimPrefix(d.url, "http://127.0.0.1:"), "/healthz", nil); status != 404 || !strings.Contains(body, "route_not_found") {
			t.Errorf("a host under the domain that names no port: %d %s", status, body)
		}
	})

	t.Run("the host URL expires", func(t *testing.T) {
		short, err := alice.ExposePort(ctx, api.PortExposeRequest{SandboxID: id, Port: 8000, Public: true, ExpiresInSecs: 2})
		if err != nil {
			t.Fatal(err)
		}
		status, _, header := hostGet(t, d, host, "/?"+strings.SplitN(short.HostURL, "?", 2)[1], nil)
		cookie := header.Get("Set-Cookie")
		if status != http.StatusTemporaryRedirect || header.Get("Location") != "/" || !strings.HasPrefix(cookie, api.PreviewTokenParam+"=") {
			t.Fatalf("the host URL: %d %v", status, header)
		}
		pair, _, _ := strings.Cut(cookie, ";")
		if status, body, _ := hostGet(t, d, host, "/index.html", map[string]string{"Cookie": pair}); status != 200 || !strings.Contains(body, previewTexts[0]) {
			t.Fatalf("with the cookie: %d %.200s", status, body)
		}
		if !testutil.Poll(30*time.Second, func() bool {
			status, _, _ := hostGet(t, d, host, "/index.html", map[string]string{"Cookie": pair})
			return status == 404
		}) {
			t.Error("the cookie outlived the port's expiry")
		}
	})
}

// hostGet sends GET path to d's listener with Host host and headers hdr,
// following no redirect.
func hostGet(t *testing.T, d *daemon, host, path string, hdr map[string]string) (int, string, http.Header) {
	t.Helper()
	req := mustRequest(t, "GET", d.url+path, nil)
	req.Host = host
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = io.Copy(&b, resp.Body)
	return resp.StatusCode, b.String(), resp.Header
}

// dumpDOM loads url in headless Chromium, with a profile of its own, and
// returns the DOM once the page has loaded.
func dumpDOM(t *testing.T, chromium, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu",
		"--user-data-dir="+t.TempDir(), "--dump-dom", url)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %s: %v\n%s", url, err, stderr.String())
	}
	return string(out)
}
