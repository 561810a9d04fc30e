package httpapi

// The host route of preview URLs (Options.PreviewDomain): a request whose
// Host is {port}-{sandbox_id}.{preview_domain} goes to that port, its path
// and query as they came. Every request under the domain is a preview; none
// reaches the API's routes, and one whose Host names no port is 404.
//
// A preview host is an origin of its own, never the API's, so its answers
// keep that origin (allow-same-origin in their CSP sandbox): the page's
// own requests are same-origin and carry the host's cookie.
//
// Access is a public port's token, of this very port (another port's is as
// unknown), in the Hutch-Preview-Token header or hutch's cookie; else the
// owner's bearer token with the API's Origin rules. A browser gets the
// cookie from a public port's host URL: ?hutch_preview_token= is answered
// with the cookie (this host only, HttpOnly, SameSite=Lax) and a redirect
// to the same URL without it. The cookie never reaches the sandbox, and the
// sandbox's server cannot set it.

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/previewhost"
)

// hostCSP is previewCSP for a preview host: the page keeps its origin.
const hostCSP = previewCSP + " allow-same-origin"

// hostPattern stands for the host route in a request's Pattern.
const hostPattern = "{port}-{sandbox_id}.{preview_domain}"

// maxPreviewCookies bounds the cookies of hutch's name looked up per
// request (a sibling host's page may add some for the whole domain).
const maxPreviewCookies = 4

// hostRoute serves a request whose Host is under Options.PreviewDomain by
// the host route; any other goes to next (the guard and the API).
func (s *server) hostRoute(next http.Handler) http.Handler {
	if s.previewDomain == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !previewhost.Under(r.Host, s.previewDomain) {
			next.ServeHTTP(w, r)
			return
		}
		r = r.WithContext(r.Context())
		r.Pattern = hostPattern
		s.wrap(func(r *http.Request, _ []byte) (any, error) { return s.hostPreview(w, r) }, true).ServeHTTP(w, r)
	})
}

// hostPreview serves the host route.
func (s *server) hostPreview(w http.ResponseWriter, r *http.Request) (any, error) {
	if s.ports == nil {
		return nil, errNoPreviews
	}
	port, id, err := previewhost.Parse(r.Host, s.previewDomain)
	if err != nil {
		return nil, transportError(http.StatusNotFound, "route_not_found", err.Error())
	}
	if token, rest, ok := takeToken(r.URL.RawQuery); ok {
		if _, err := s.reachPublicAt(r.Context(), token, id, port); err != nil {
			return nil, err
		}
		return &grantAnswer{cookie: previewCookie(r, token), location: location(r.URL, rest)}, nil
	}
	r, acc, err := s.hostAccess(w, r, id, port)
	if err != nil {
		return nil, err
	}
	return &previewAnswer{r: r, transport: s.previews.transport(acc), cors: acc.CORS, host: acc.Host, path: r.URL.Path, rawPath: r.URL.RawPath, csp: hostCSP, ownCookies: true, timeout: s.writeTimeout}, nil
}

// hostAccess finds the port a host route request reaches, and the request
// acting for its owner when the owner's token is what let it: the
// Hutch-Preview-Token header, else a cookie of hutch's name that is this
// port's token and usable by the page that sent it, else the owner's.
func (s *server) hostAccess(w http.ResponseWriter, r *http.Request, id string, port int) (*http.Request, PortAccess, error) {
	if token := r.Header.Get(api.HeaderPreviewToken); token != "" {
		acc, err := s.reachPublicAt(r.Context(), token, id, port)
		return r, acc, err
	}
	cookies := r.CookiesNamed(api.PreviewTokenParam)
	for i, c := range cookies {
		if i == maxPreviewCookies {
			break
		}
		if acc, err := s.reachPublicAt(r.Context(), c.Value, id, port); err == nil && cookieUsable(r, acc.CORS) {
			return r, acc, nil
		}
	}
	r, err := s.authenticate(w, r)
	if err != nil && len(cookies) > 0 {
		// A browser's cookie of a port no longer public says more.
		return nil, PortAccess{}, errNotPublicHere
	}
	if err != nil {
		return nil, PortAccess{}, err
	}
	if err := s.guard.CheckOrigin(r); err != nil {
		return nil, PortAccess{}, refused(err)
	}
	acc, err := s.reachPort(r.Context(), id, port)
	return r, acc, err
}

var errNotPublicHere = errdefs.New(errdefs.CodeNotFound, "no public port of this host with that token (it may have expired or been unexposed)")

// reachPublicAt finds the public port of token if it is port of sandbox
// id: a token of another port is as unknown here.
func (s *server) reachPublicAt(ctx context.Context, token, id string, port int) (PortAccess, error) {
	acc, err := s.ports.ReachPublic(ctx, token)
	if err != nil || acc.SandboxID != id || acc.Port != port {
		return PortAccess{}, errNotPublicHere
	}
	return acc, nil
}

// cookieUsable reports whether r may use hutch's cookie: a browser also
// sends a SameSite=Lax cookie with the requests of other pages of its site
// (sibling hosts under preview_domain), which only a navigation or a page
// of the port's cors origins may make use of.
func cookieUsable(r *http.Request, cors []string) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "none", "same-origin":
		return true
	}
	navigation := r.Header.Get("Sec-Fetch-Mode") == "navigate" && (r.Method == http.MethodGet || r.Method == http.MethodHead)
	return navigation || corsAllows(cors, r.Header.Get("Origin"))
}

// previewCookie is hutch's cookie of r's preview host, carrying token:
// this host only, out of scripts' reach, Secure over TLS.
func previewCookie(r *http.Request, token string) *http.Cookie {
	return &http.Cookie{Name: api.PreviewTokenParam, Value: token, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: r.TLS != nil}
}

// takeToken finds hutch's parameter in a raw query (its first value) and
// returns the query without it, the other parameters as they came.
func takeToken(raw string) (token, rest string, found bool) {
	if raw == "" {
		return "", "", false
	}
	var kept []string
	for _, part := range strings.Split(raw, "&") {
		k, v, _ := strings.Cut(part, "=")
		if key, err := url.QueryUnescape(k); err != nil || key != api.PreviewTokenParam {
			kept = append(kept, part)
			continue
		}
		if !found {
			token, _ = url.QueryUnescape(v)
			found = true
		}
	}
	return token, strings.Join(kept, "&"), found
}

// location is u's path with the query rest, as a reference to the same
// host: a path that begins with "//" is not taken for another host's.
func location(u *url.URL, rest string) string {
	loc := (&url.URL{Path: u.Path, RawPath: u.RawPath, RawQuery: rest}).String()
	if strings.HasPrefix(loc, "//") {
		loc = "/." + loc
	}
	return loc
}

// grantAnswer sets hutch's cookie and sends the browser on.
type grantAnswer struct {
	cookie   *http.Cookie
	location string
}

func (g *grantAnswer) stream(w http.ResponseWriter, _ io.Writer) int {
	http.SetCookie(w, g.cookie)
	w.Header().Set("Location", g.location)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusTemporaryRedirect)
	return http.StatusTemporaryRedirect
}

// dropPreviewCookie removes hutch's cookie from a request's Cookie
// headers; a request without it keeps them as they came.
func dropPreviewCookie(h http.Header) {
	lines := h.Values("Cookie")
	var kept []string
	dropped := false
	for _, line := range lines {
		for _, c := range strings.Split(line, ";") {
			c = strings.TrimSpace(c)
			if name, _, _ := strings.Cut(c, "="); strings.TrimSpace(name) == api.PreviewTokenParam {
				dropped = true
			} else if c != "" {
				kept = append(kept, c)
			}
		}
	}
	if !dropped {
		return
	}
	h.Del("Cookie")
	if len(kept) > 0 {
		h.Set("Cookie", strings.Join(kept, "; "))
	}
}

// dropSetPreviewCookie removes from an answer every Set-Cookie of hutch's
// cookie's name (any case): a sandbox's server may not set it.
func dropSetPreviewCookie(h http.Header) {
	lines := h.Values("Set-Cookie")
	var kept []string
	for _, line := range lines {
		pair, _, _ := strings.Cut(line, ";")
		if name, _, _ := strings.Cut(pair, "="); !strings.EqualFold(strings.TrimSpace(name), api.PreviewTokenParam) {
			kept = append(kept, line)
		}
	}
	switch {
	case len(kept) == len(lines):
	case len(kept) == 0:
		h.Del("Set-Cookie")
	default:
		h["Set-Cookie"] = kept
	}
}
