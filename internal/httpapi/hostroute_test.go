package httpapi_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
	"github.com/hutch-dev/hutch/internal/httpapi"
)

// The host route of preview URLs, over fakePorts: a real sandbox manager
// needs root and runsc (integration/ports_test.go drives the real one).

const (
	previewDomain = "preview.test"
	// pubToken is the token of alice's public port 8000, otherToken that of
	// her public port 9000.
	pubToken   = "0123456789abcdef0123456789abcdef0123456789abcdef"
	otherToken = "fedcba9876543210fedcba9876543210fedcba9876543210"
)

// hostOf is the preview host of port of sandbox id, on the daemon's port.
func hostOf(port, sandbox string) string { return port + "-" + sandbox + "." + previewDomain + ":3111" }

// fakePorts is alice's sandbox id with ports 8000 and 9000 exposed, both
// public (pubToken, otherToken) until expired is set; every connection
// goes to the server at addr.
type fakePorts struct {
	addr    string
	expired atomic.Bool
}

func (f *fakePorts) access(port int) httpapi.PortAccess {
	return httpapi.PortAccess{SandboxID: id, Port: port, CORS: []string{"http://ui.example"},
		Dial: func(ctx context.Context) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", f.addr)
		}}
}

func (f *fakePorts) ReachPort(ctx context.Context, sandbox string, port int) (httpapi.PortAccess, error) {
	if sandbox != id || auth.OwnerFrom(ctx) != "alice" || (port != 8000 && port != 9000) {
		return httpapi.PortAccess{}, errdefs.New(errdefs.CodeNotFound, "sandbox not found: %s", sandbox)
	}
	return f.access(port), nil
}

func (f *fakePorts) ReachPublic(_ context.Context, token string) (httpapi.PortAccess, error) {
	switch {
	case f.expired.Load():
	case token == pubToken:
		return f.access(8000), nil
	case token == otherToken:
		return f.access(9000), nil
	}
	return httpapi.PortAccess{}, errdefs.New(errdefs.CodeNotFound, "no public port with that token")
}

// seen is what the sandbox's server saw of a request.
type seen struct {
	Path, RawQuery, Host, Auth, PreviewHeader string
	Cookies, Protocols                        []string
}

// hostRouteHandler is the REST handler with alice's and bob's tokens and
// the host route under previewDomain, over a server that answers what it
// saw (and, at /set-cookie, tries to set cookies).
func hostRouteHandler(t *testing.T) (http.Handler, *fakePorts, *functionstest.Fake) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/set-cookie" {
			w.Header().Add("Set-Cookie", api.PreviewTokenParam+"=forged; Path=/; Domain="+previewDomain)
			w.Header().Add("Set-Cookie", " HUTCH_PREVIEW_TOKEN =forged")
			w.Header().Add("Set-Cookie", "session=app; Path=/")
		}
		_ = json.NewEncoder(w).Encode(seen{Path: r.URL.EscapedPath(), RawQuery: r.URL.RawQuery, Host: r.Host,
			Auth: r.Header.Get("Authorization"), PreviewHeader: r.Header.Get(api.HeaderPreviewToken), Cookies: r.Header.Values("Cookie"),
			Protocols: r.Header.Values("Sec-WebSocket-Protocol")})
	}))
	t.Cleanup(srv.Close)
	tokens, err := auth.New(map[string]string{"alice": aliceTok, "bob": bobTok})
	if err != nil {
		t.Fatal(err)
	}
	ports := &fakePorts{addr: srv.Listener.Addr().String()}
	fake := &functionstest.Fake{}
	h := httpapi.New(functions.New(functionstest.DepsOf(fake)), httpapi.Options{Auth: tokens, Ports: ports, PreviewDomain: previewDomain})
	return h, ports, fake
}

// hostRequest sends method target to h with Host host and headers hdr
// ("Cookie" may repeat, separated by "\n").
func hostRequest(h http.Handler, method, host, target string, hdr map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, "http://"+host+target, nil)
	for k, v := range hdr {
		for _, line := range strings.Split(v, "\n") {
			req.Header.Add(k, line)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// sawOf decodes what the server saw, failing t unless it answered.
func sawOf(t *testing.T, rec *httptest.ResponseRecorder) seen {
	t.Helper()
	var s seen
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &s) != nil {
		t.Fatalf("the sandbox's server did not answer: %d %s", rec.Code, rec.Body)
	}
	return s
}

func TestHostRouteReachesThePort(t *testing.T) {
	h, _, fake := hostRouteHandler(t)
	alice := map[string]string{"Authorization": "Bearer " + aliceTok}
	host := hostOf("8000", id)
	// The whole path and query as they came, the API's paths included.
	for _, target := range []string{"/", "/a/b%2Fc/../d?x=1&y=%20&x=2", "/healthz", "/v1/sandboxes", "/p/" + pubToken + "/", "/openapi.json"} {
		rec := hostRequest(h, "GET", host, target, alice)
		s := sawOf(t, rec)
		path, query, _ := strings.Cut(target, "?")
		if s.Path != path || s.RawQuery != query || s.Host != host || s.Auth != "" {
			t.Errorf("GET %s: the server saw %+v", target, s)
		}
		if csp := rec.Header().Get("Content-Security-Policy"); !strings.HasPrefix(csp, "sandbox ") || !strings.Contains(csp, "allow-same-origin") {
			t.Errorf("GET %s: CSP %q, want a sandbox that keeps the host's origin", target, csp)
		}
	}
	// Any case, a trailing dot.
	if s := sawOf(t, hostRequest(h, "GET", strings.ToUpper("8000-"+id+"."+previewDomain)+".", "/x", alice)); s.Path != "/x" {
		t.Errorf("upper-case host: the server saw %+v", s)
	}
	if calls := fake.Calls(); len(calls) != 0 {
		t.Errorf("a preview host reached the API: %+v", calls)
	}
	// Outside the domain the API answers as before.
	if rec := hostRequest(h, "GET", "localhost:3111", "/healthz", nil); rec.Code != 200 || !strings.Contains(rec.Body.String(), `"status":"ok"`) {
		t.Errorf("/healthz of the API: %d %s", rec.Code, rec.Body)
	}
}

func TestHostRouteMalformedHosts(t *testing.T) {
	h, _, fake := hostRouteHandler(t)
	alice := map[string]string{"Authorization": "Bearer " + aliceTok}
	for _, host := range []string{
		"www." + previewDomain, "8000." + previewDomain, "8000-." + previewDomain, "0-" + id + "." + previewDomain,
		"65536-" + id + "." + previewDomain, "08000-" + id + "." + previewDomain, "8000-" + id + ".x." + previewDomain,
		strings.Repeat("9", 300) + "-" + id + "." + previewDomain,
	} {
		for _, target := range []string{"/", "/v1/sandboxes", "/healthz"} {
			rec := hostRequest(h, "GET", host, target, alice)
			if rec.Code != 404 || !strings.Contains(rec.Body.String(), `"code":"route_not_found"`) || !strings.Contains(rec.Body.String(), "{port}-{sandbox_id}."+previewDomain) {
				t.Errorf("GET %s on %.40s: %d %s, want 404 route_not_found", target, host, rec.Code, rec.Body)
			}
		}
	}
	// A well-formed host of a sandbox id that is not one.
	if rec := hostRequest(h, "GET", hostOf("8000", "nope"), "/", alice); rec.Code != 404 {
		t.Errorf("an unknown sandbox: %d %s", rec.Code, rec.Body)
	}
	if calls := fake.Calls(); len(calls) != 0 {
		t.Errorf("a preview host reached the API: %+v", calls)
	}
}

func TestHostRouteOwners(t *testing.T) {
	h, _, _ := hostRouteHandler(t)
	for _, tc := range []struct {
		name, host string
		hdr        map[string]string
		status     int
		code       string
	}{
		{"no token", hostOf("8000", id), nil, 401, "unauthorized"},
		{"another owner", hostOf("8000", id), map[string]string{"Authorization": "Bearer " + bobTok}, 404, "S002"},
		{"another owner guessing a port", hostOf("9000", id), map[string]string{"Authorization": "Bearer " + bobTok}, 404, "S002"},
		{"a token of no owner", hostOf("8000", id), map[string]string{"Authorization": "Bearer x"}, 403, "forbidden"},
		{"the owner, a port not exposed", hostOf("8001", id), map[string]string{"Authorization": "Bearer " + aliceTok}, 404, "S002"},
		{"the owner from another page", hostOf("8000", id), map[string]string{"Authorization": "Bearer " + aliceTok, "Origin": "http://evil.example"}, 403, "origin_not_allowed"},
		{"the owner from a sibling host's page", hostOf("8000", id), map[string]string{"Authorization": "Bearer " + aliceTok, "Origin": "http://" + hostOf("9000", id)}, 403, "origin_not_allowed"},
		{"the owner", hostOf("8000", id), map[string]string{"Authorization": "Bearer " + aliceTok, "Origin": "http://" + hostOf("8000", id)}, 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := hostRequest(h, "GET", tc.host, "/", tc.hdr)
			if rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.code) {
				t.Fatalf("%d %s, want %d %s", rec.Code, rec.Body, tc.status, tc.code)
			}
		})
	}
}

func TestHostRouteCookie(t *testing.T) {
	h, ports, _ := hostRouteHandler(t)
	host := hostOf("8000", id)
	// The host URL's token: a cookie of this host and a redirect to the
	// same URL without it, the other parameters as they came.
	rec := hostRequest(h, "GET", host, "/app/?b=2&"+api.PreviewTokenParam+"="+pubToken+"&a=%20", nil)
	if rec.Code != http.StatusTemporaryRedirect || rec.Header().Get("Location") != "/app/?b=2&a=%20" {
		t.Fatalf("the host URL: %d, Location %q", rec.Code, rec.Header().Get("Location"))
	}
	cookies := rec.Result().Cookies()
	if len(cookies) != 1 {
		t.Fatalf("cookies %v, want hutch's", rec.Header().Values("Set-Cookie"))
	}
	c := cookies[0]
	pair := c.Name + "=" + c.Value
	if c.Name != api.PreviewTokenParam || c.Value != pubToken || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.Domain != "" || c.Secure {
		t.Errorf("cookie %+v: want HttpOnly, SameSite=Lax, Path=/, this host only", c)
	}
	// The browser's next requests carry it; the server never sees it,
	// and the other cookies reach it as they came.
	s := sawOf(t, hostRequest(h, "GET", host, "/app/?b=2", map[string]string{"Cookie": "theme=dark; " + pair + "\nlang=en"}))
	if s.Path != "/app/" || s.RawQuery != "b=2" || strings.Join(s.Cookies, "|") != "theme=dark; lang=en" {
		t.Errorf("with the cookie, the server saw %+v", s)
	}
	// Without hutch's cookie, the other cookies are left alone.
	s = sawOf(t, hostRequest(h, "GET", host, "/", map[string]string{"Cookie": "theme=dark;lang=en", "Authorization": "Bearer " + aliceTok}))
	if strings.Join(s.Cookies, "|") != "theme=dark;lang=en" {
		t.Errorf("without hutch's cookie, the server saw cookies %q", s.Cookies)
	}
	// A page that begins with // stays on this host.
	rec = hostRequest(h, "GET", host, "//evil.example/x?"+api.PreviewTokenParam+"="+pubToken, nil)
	if loc := rec.Header().Get("Location"); rec.Code != http.StatusTemporaryRedirect || loc != "/.//evil.example/x" {
		t.Errorf("a // path: %d, Location %q", rec.Code, loc)
	}
	// Over TLS the cookie is Secure.
	req := httptest.NewRequest("GET", "https://"+host+"/?"+api.PreviewTokenParam+"="+pubToken, nil)
	req.TLS = &tls.ConnectionState{}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if cs := rec.Result().Cookies(); len(cs) != 1 || !cs[0].Secure {
		t.Errorf("over TLS: %v", rec.Header().Values("Set-Cookie"))
	}
	// The header works too, for clients that are not browsers.
	if s := sawOf(t, hostRequest(h, "GET", host, "/", map[string]string{api.HeaderPreviewToken: pubToken})); s.PreviewHeader != "" {
		t.Errorf("the server saw hutch's header: %+v", s)
	}
	// Expired: the cookie, the header and the URL stop working.
	ports.expired.Store(true)
	for name, hdr := range map[string]map[string]string{"cookie": {"Cookie": pair}, "header": {api.HeaderPreviewToken: pubToken}} {
		if rec := hostRequest(h, "GET", host, "/", hdr); rec.Code != 404 || !strings.Contains(rec.Body.String(), "no public port") {
			t.Errorf("expired, by %s: %d %s", name, rec.Code, rec.Body)
		}
	}
	if rec := hostRequest(h, "GET", host, "/?"+api.PreviewTokenParam+"="+pubToken, nil); rec.Code != 404 || len(rec.Result().Cookies()) != 0 {
		t.Errorf("expired, the host URL: %d %v", rec.Code, rec.Header())
	}
}

// TestHostRouteTokenOfAnotherPort: a public port's token opens its own
// host only.
func TestHostRouteTokenOfAnotherPort(t *testing.T) {
	h, _, _ := hostRouteHandler(t)
	for _, host := range []string{hostOf("9000", id), hostOf("8000", "5b0e3c1a-7d2f-4c1e-9a7b-2f6d8e4c1a01")} {
		for name, tc := range map[string]struct {
			target string
			hdr    map[string]string
		}{
			"url":    {"/?" + api.PreviewTokenParam + "=" + pubToken, nil},
			"cookie": {"/", map[string]string{"Cookie": api.PreviewTokenParam + "=" + pubToken}},
			"header": {"/", map[string]string{api.HeaderPreviewToken: pubToken}},
		} {
			rec := hostRequest(h, "GET", host, tc.target, tc.hdr)
			if rec.Code != 404 || len(rec.Result().Cookies()) != 0 {
				t.Errorf("%s on %s: %d %s", name, host, rec.Code, rec.Body)
			}
		}
	}
	// Of several cookies of hutch's name (one a sibling's page set for
	// the whole domain), this port's opens it.
	s := sawOf(t, hostRequest(h, "GET", hostOf("9000", id), "/", map[string]string{"Cookie": api.PreviewTokenParam + "=" + pubToken + "; " + api.PreviewTokenParam + "=" + otherToken}))
	if len(s.Cookies) != 0 {
		t.Errorf("the server saw %q", s.Cookies)
	}
}

// TestHostRouteCookieOfSiblingPages: the browser sends the SameSite=Lax
// cookie with requests from other hosts under the domain; only
// navigations and the port's cors origins may use it.
func TestHostRouteCookieOfSiblingPages(t *testing.T) {
	h, _, _ := hostRouteHandler(t)
	cookie := api.PreviewTokenParam + "=" + pubToken
	for _, tc := range []struct {
		name, method string
		hdr          map[string]string
		status       int
	}{
		{"own page", "POST", map[string]string{"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors", "Origin": "http://" + hostOf("8000", id)}, 200},
		{"typed URL", "GET", map[string]string{"Sec-Fetch-Site": "none", "Sec-Fetch-Mode": "navigate"}, 200},
		{"link from a sibling", "GET", map[string]string{"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "navigate"}, 200},
		{"form post from a sibling", "POST", map[string]string{"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "navigate", "Origin": "http://" + hostOf("1234", "x")}, 404},
		{"fetch from a sibling", "POST", map[string]string{"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "cors", "Origin": "http://" + hostOf("1234", "x")}, 404},
		{"fetch from a cors origin", "POST", map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "cors", "Origin": "http://ui.example"}, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.hdr["Cookie"] = cookie
			if rec := hostRequest(h, tc.method, hostOf("8000", id), "/", tc.hdr); rec.Code != tc.status {
				t.Fatalf("%d %s, want %d", rec.Code, rec.Body, tc.status)
			}
		})
	}
}

// TestHostRouteSandboxCannotSetTheCookie: the sandbox's server's
// Set-Cookie of hutch's cookie (any case) is dropped; its own pass.
func TestHostRouteSandboxCannotSetTheCookie(t *testing.T) {
	h, _, _ := hostRouteHandler(t)
	for name, r := range map[string]struct{ host, target string }{
		"host route": {hostOf("8000", id), "/set-cookie"},
		"path route": {"localhost:3111", "/v1/sandboxes/" + id + "/ports/8000/set-cookie"},
	} {
		rec := hostRequest(h, "GET", r.host, r.target, map[string]string{"Authorization": "Bearer " + aliceTok})
		if got := rec.Header().Values("Set-Cookie"); rec.Code != 200 || len(got) != 1 || got[0] != "session=app; Path=/" {
			t.Errorf("%s: %d, Set-Cookie %q, want the server's own only", name, rec.Code, got)
		}
	}
}

// TestPreviewDropsTheBearerProtocol: a WebSocket to a port that
// authenticates with the token as a subprotocol (auth.BearerProtocol)
// reaches the sandbox's server without it.
func TestPreviewDropsTheBearerProtocol(t *testing.T) {
	h, _, _ := hostRouteHandler(t)
	rec := hostRequest(h, "GET", "localhost:3111", "/v1/sandboxes/"+id+"/ports/8000/ws", map[string]string{
		"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
		"Sec-WebSocket-Protocol": "chat, " + auth.BearerProtocol(aliceTok)})
	if s := sawOf(t, rec); len(s.Protocols) != 1 || s.Protocols[0] != "chat" || s.Auth != "" {
		t.Errorf("the server saw %+v, want the chat protocol alone", s)
	}
}

// TestNoPreviewDomain: without preview_domain a Host that would be a
// preview host is the API's (and its guard's).
func TestNoPreviewDomain(t *testing.T) {
	fake := &functionstest.Fake{}
	h := httpapi.New(functions.New(functionstest.DepsOf(fake)), httpapi.Options{Ports: &fakePorts{}})
	if rec := hostRequest(h, "GET", "8000-"+id+".localhost:3111", "/healthz", nil); rec.Code != 200 || !strings.Contains(rec.Body.String(), `"status":"ok"`) {
		t.Errorf("%d %s", rec.Code, rec.Body)
	}
}

// TestPathRoutesSendNoCookie: the path, public and header routes share
// the daemon's origin, whose cookies are every application's on that
// host (browsers do not isolate cookies by port): none reaches the
// sandbox's server (issue 33). The host route keeps the page's own.
func TestPathRoutesSendNoCookie(t *testing.T) {
	h, _, _ := hostRouteHandler(t)
	cookie := map[string]string{"Cookie": "session=other-app; theme=dark\n" + api.PreviewTokenParam + "=" + pubToken}
	with := func(hdr map[string]string) map[string]string {
		for k, v := range cookie {
			hdr[k] = v
		}
		return hdr
	}
	for name, tc := range map[string]struct {
		target string
		hdr    map[string]string
	}{
		"path":          {"/v1/sandboxes/" + id + "/ports/8000/x", with(map[string]string{"Authorization": "Bearer " + aliceTok})},
		"public":        {"/p/" + pubToken + "/x", with(map[string]string{})},
		"header":        {"/x", with(map[string]string{"Authorization": "Bearer " + aliceTok, api.HeaderSandboxID: id, api.HeaderSandboxPort: "8000"})},
		"public header": {"/x", with(map[string]string{api.HeaderSandboxID: id, api.HeaderSandboxPort: "8000", api.HeaderPreviewToken: pubToken})},
	} {
		if s := sawOf(t, hostRequest(h, "GET", "localhost:3111", tc.target, tc.hdr)); s.Path != "/x" || len(s.Cookies) != 0 {
			t.Errorf("%s route: the server saw %q at %s, want no cookie", name, s.Cookies, s.Path)
		}
	}
	if s := sawOf(t, hostRequest(h, "GET", hostOf("8000", id), "/x", cookie)); strings.Join(s.Cookies, "|") != "session=other-app; theme=dark" {
		t.Errorf("host route: the server saw %q, want the page's own cookies", s.Cookies)
	}
}

// ReachGranted is any port of alice's sandbox, its server seeing the
// masked host.
func (f *fakePorts) ReachGranted(ctx context.Context, sandbox string, port int) (httpapi.PortAccess, error) {
	if sandbox != id || auth.OwnerFrom(ctx) != "alice" {
		return httpapi.PortAccess{}, errdefs.New(errdefs.CodeNotFound, "sandbox not found: %s", sandbox)
	}
	acc := f.access(port)
	acc.Host = "masked.test:" + strconv.Itoa(port)
	return acc, nil
}
