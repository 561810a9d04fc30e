package integration

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// What a page a sandbox serves can do in the user's browser (issue 33), on
// a daemon without api_tokens (the local user's, where the API trusts
// whoever reaches it) whose preview_domain is localhost, loaded by
// headless Chromium:
//
//   - on its own host, 8000-{id}.localhost, it calls its own origin,
//     which passes the web guard (a loopback name, its own Origin): every
//     call, E2B's routes and in-sandbox headers included, must reach the
//     sandbox's server and nothing of hutch's;
//   - through the path and public routes, which share the daemon's origin
//     127.0.0.1, the browser sends every cookie of 127.0.0.1 (cookies are
//     not isolated by port): none may reach the sandbox's server.

// pageServer is the sandbox's server: http.server's files of /srv, and
// at /cookies a page that shows the Cookie header it got; it reads each
// request's body, which http.server does not.
const pageServer = `import http.server, html
class H(http.server.SimpleHTTPRequestHandler):
    def parse_request(self):
        # Read a request's body before any answer: http.server answers 501
        # to a POST without reading it, and a close with unread bytes is a
        # reset, which may reach the proxy before the answer does.
        ok = super().parse_request()
        if ok and self.headers.get('Content-Length'):
            self.rfile.read(int(self.headers['Content-Length']))
        return ok
    def do_GET(self):
        if self.path.startswith('/cookies'):
            body = ('<!doctype html><p id="cookies">[' + html.escape(self.headers.get('Cookie') or '') + ']</p>').encode()
            self.send_response(200)
            self.send_header('Content-Type', 'text/html')
            self.send_header('Content-Length', str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        super().do_GET()
http.server.ThreadingHTTPServer(('127.0.0.1', 8000), lambda *a: H(*a, directory='/srv')).serve_forever()
`

// e2bPage calls, on its own origin and synchronously (so the DOM holds
// every answer when the page has loaded), what the E2B API would answer,
// and writes a line per call: CALL method path status server.
func e2bPage(id string) string {
	return `<!doctype html><html><body><pre id="calls"></pre><script>
const lines = []
function call(method, path, headers, body) {
  const x = new XMLHttpRequest()
  x.open(method, path, false)
  for (const k in headers || {}) x.setRequestHeader(k, headers[k])
  try {
    x.send(body || null)
    lines.push('CALL ' + method + ' ' + path + ' ' + x.status + ' ' + (x.getResponseHeader('Server') || 'none').replace(/ /g, '_') + ' ' + x.responseText.slice(0, 300).replace(/\s+/g, ' '))
  } catch (e) {
    lines.push('CALL ' + method + ' ' + path + ' error ' + e)
  }
}
const json = {'Content-Type': 'application/json'}
call('GET', '/sandboxes')
call('GET', '/v2/sandboxes')
call('GET', '/sandboxes/` + id + `')
call('GET', '/sandboxes/` + id + `/metrics')
call('POST', '/v2/sandboxes', json, '{"templateID":"no-such-template"}')
call('POST', '/sandboxes/` + id + `/timeout', json, '{"timeout":3600}')
call('GET', '/health', {'E2b-Sandbox-Id': '` + id + `', 'E2b-Sandbox-Port': '49983'})
call('POST', '/filesystem.Filesystem/ListDir', {'E2b-Sandbox-Id': '` + id + `', 'E2b-Sandbox-Port': '49983', 'Content-Type': 'application/json'}, '{"path":"/"}')
call('GET', '/contexts', {'E2b-Sandbox-Id': '` + id + `', 'E2b-Sandbox-Port': '49999'})
call('GET', '/v1/sandboxes')
document.getElementById('calls').textContent = lines.join('\n')
</script></body></html>
`
}

var callLine = regexp.MustCompile(`(?m)(?:^|<pre id="calls">)CALL (\S+) (\S+) (\S+) (\S+)(.*)$`)

func TestPreviewPagesOfTheLocalUser(t *testing.T) {
	chromium := testutil.RequiresBinary(t, "chromium")
	d := startDaemon(t, baseConfig("preview_domain: localhost\n"))
	ctx := context.Background()
	id := d.create(api.CreateRequest{Image: "python"})
	for path, content := range map[string]string{"/srv/index.html": e2bPage(id), "/srv/server.py": pageServer} {
		if _, err := d.c.FsWrite(ctx, api.FsWriteRequest{SandboxID: id, Path: path, Content: &content, Parents: true}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.c.StartProcess(ctx, api.ProcessStartRequest{SandboxID: id, Tag: "web", Argv: []string{"python3", "/srv/server.py"}}); err != nil {
		t.Fatal(err)
	}
	pub, err := d.c.ExposePort(ctx, api.PortExposeRequest{SandboxID: id, Port: 8000, Public: true})
	if err != nil {
		t.Fatal(err)
	}
	daemonPort := strings.TrimPrefix(d.url, "http://127.0.0.1:")
	host := "8000-" + id + ".localhost:" + daemonPort
	if !testutil.Poll(60*time.Second, func() bool {
		status, _, _ := hostGet(t, d, host, "/index.html", nil)
		return status == 200
	}) {
		t.Fatal("the sandbox's server did not answer on its preview host")
	}

	t.Run("its host reaches the sandbox only", func(t *testing.T) {
		dom := dumpDOM(t, chromium, "http://"+host+"/index.html")
		calls := callLine.FindAllStringSubmatch(dom, -1)
		if len(calls) != 10 {
			t.Fatalf("%d calls made, want 10:\n%s", len(calls), dom)
		}
		for _, c := range calls {
			// http.server answers 404 to a GET of a missing file and
			// 501 to any other method.
			want := "404"
			if c[1] != "GET" {
				want = "501"
			}
			if c[3] != want || !strings.HasPrefix(c[4], "SimpleHTTP") {
				t.Errorf("%s %s from the page: %s, Server %s, %.300s; want the sandbox's server's %s", c[1], c[2], c[3], c[4], c[5], want)
			}
		}
		for _, leak := range []string{"envdAccessToken", "sandboxID", "sandbox_id"} {
			if strings.Contains(dom, leak) {
				t.Errorf("the page read %q:\n%s", leak, dom)
			}
		}
	})

	// Another application of the user's on 127.0.0.1 sets its session
	// cookie (HttpOnly, SameSite=Strict) and sends the browser on to the
	// preview: the same site, so the browser sends the cookie along.
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "session", Value: "app-secret", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	}))
	defer app.Close()
	cookies := regexp.MustCompile(`<p id="cookies">\[(.*?)\]</p>`)
	// The cookie is sent to every port of 127.0.0.1: a server on another
	// port than the application's gets it.
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!doctype html><p id="cookies">[%s]</p>`, html.EscapeString(r.Header.Get("Cookie")))
	}))
	defer other.Close()
	if got := cookies.FindStringSubmatch(dumpDOM(t, chromium, app.URL+"/login?to="+url.QueryEscape(other.URL+"/"))); got == nil || got[1] != "session=app-secret" {
		t.Fatalf("another port of 127.0.0.1 got the cookies %q, want the application's", got)
	}
	for name, preview := range map[string]string{
		"the path route":   d.url + "/v1/sandboxes/" + id + "/ports/8000/cookies",
		"the public route": d.url + pub.URL + "cookies",
	} {
		t.Run(name+" sends no cookie of the daemon's host", func(t *testing.T) {
			dom := dumpDOM(t, chromium, app.URL+"/login?to="+url.QueryEscape(preview))
			got := cookies.FindStringSubmatch(dom)
			if got == nil {
				t.Fatalf("the sandbox's page did not load through %s:\n%s", preview, dom)
			}
			if got[1] != "" {
				t.Errorf("the sandbox's server got the cookies %q through %s", got[1], preview)
			}
		})
	}
}
