// Package webguard keeps web pages in a user's browser away from hutch's
// APIs. Without api_tokens the daemon trusts whoever reaches its loopback
// port, and a browser reaches it for any page it shows: a cross-origin
// "simple request" (a form post, a fetch with text/plain) is sent without a
// preflight, and a DNS-rebound page talks to 127.0.0.1 under its own name.
// The REST API and the engine WebSocket both run every request through one
// Policy before any handler sees it:
//
//   - Host must be a loopback name or address (localhost, *.localhost,
//     127.0.0.0/8, ::1) or a name the operator allowed (allowed_hosts): a
//     rebound page's Host is the attacker's name.
//   - Origin, when present, must be the request's own origin (scheme and
//     Host of the request itself, which passed the Host rule) or one the
//     operator allowed (allowed_origins). "null" is refused. Clients that
//     are not browsers (curl, the CLI, the SDKs) send no Origin.
//   - Sec-Fetch-Site cross-site or same-site is refused unless the Origin
//     is one the operator allowed: it marks a browser request made by a
//     page of another origin, a GET without Origin (an <img>) included.
//
// The Content-Type of a body is not checked: a browser's cross-site post
// always carries an Origin and so is refused above, while `curl -d` (no
// Origin, application/x-www-form-urlencoded) keeps working.
package webguard

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
)

// The codes of a Refusal, as they appear in the error envelope.
const (
	CodeHostNotAllowed   = "host_not_allowed"
	CodeOriginNotAllowed = "origin_not_allowed"
)

// Refusal is the reason a request was refused; transports answer it with
// 403 and its code.
type Refusal struct {
	Code    string
	Message string
}

func (r *Refusal) Error() string { return r.Message }

// Policy decides which requests may reach a handler. The zero value and a
// nil *Policy allow loopback Hosts and same-origin Origins only. It is safe
// for concurrent use.
type Policy struct {
	hosts    map[string]bool // lower-case names and canonical addresses
	suffixes []string        // ".example.com" of "*.example.com" entries
	origins  map[string]bool // canonical scheme://host[:port]
}

// New builds the policy of the config keys allowed_hosts (names or
// addresses, "*.name" for every name under it, no port) and
// allowed_origins (scheme://host[:port], http or https). Errors name the
// key and the entry.
func New(hosts, origins []string) (*Policy, error) {
	p := &Policy{hosts: map[string]bool{}, origins: map[string]bool{}}
	var errs []error
	for _, h := range hosts {
		name, err := hostEntry(h)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("allowed_hosts: %q %v", h, err))
		case strings.HasPrefix(name, "*."):
			p.suffixes = append(p.suffixes, name[1:])
		default:
			p.hosts[name] = true
		}
	}
	for _, o := range origins {
		c, err := canonicalOrigin(o)
		if err != nil {
			errs = append(errs, fmt.Errorf("allowed_origins: %q %v (write scheme://host[:port], e.g. http://localhost:5173)", o, err))
			continue
		}
		p.origins[c] = true
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return p, nil
}

// dnsName matches a host name: labels of letters, digits and hyphens.
var dnsName = regexp.MustCompile(`^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// IsHostName reports whether name is a DNS host name in lower case (no
// wildcard, not an IP address, at most 253 characters).
func IsHostName(name string) bool {
	_, err := netip.ParseAddr(name)
	return err != nil && len(name) <= 253 && !strings.HasPrefix(name, "*.") && dnsName.MatchString(name)
}

// hostEntry checks and canonicalises one allowed_hosts entry.
func hostEntry(h string) (string, error) {
	h = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
	if a, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
		return a.Unmap().String(), nil
	}
	if !dnsName.MatchString(h) {
		return "", errors.New("is not a host name or IP address (no scheme, no port; \"*.example.com\" allows every name under example.com)")
	}
	return h, nil
}

// canonicalOrigin lower-cases an origin and drops its scheme's default port.
func canonicalOrigin(o string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(o))
	if err != nil || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", errors.New("is not an origin")
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return "", errors.New("must be http or https")
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port == "" || (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		return scheme + "://" + host, nil
	}
	return scheme + "://" + host + ":" + port, nil
}

// CheckHost is Check's Host rule alone, for requests any web page may
// make (a public preview, whose token is its authority).
func (p *Policy) CheckHost(r *http.Request) error {
	if !p.hostAllowed(r.Host) {
		return &Refusal{Code: CodeHostNotAllowed, Message: fmt.Sprintf(
			"Host %q is not a loopback name or address nor in allowed_hosts: requests under another name (a DNS-rebound web page) are refused; use 127.0.0.1 or localhost, or add the name to allowed_hosts in the daemon's config", r.Host)}
	}
	return nil
}

// Check returns nil when r may reach a handler, else the *Refusal saying
// why not.
func (p *Policy) Check(r *http.Request) error {
	if err := p.CheckHost(r); err != nil {
		return err
	}
	return p.CheckOrigin(r)
}

// CheckOrigin is Check's Origin and Sec-Fetch-Site rules alone, for
// requests whose Host the caller vouched for (a preview host under the
// daemon's preview_domain).
func (p *Policy) CheckOrigin(r *http.Request) error {
	origin, hasOrigin := r.Header["Origin"]
	switch {
	case hasOrigin && p.OriginAllowed(origin[0]):
		return nil
	case hasOrigin && !p.sameOrigin(r, origin[0]):
		return &Refusal{Code: CodeOriginNotAllowed, Message: fmt.Sprintf(
			"Origin %q is not allowed: web pages may not drive hutch; add the page's origin to allowed_origins in the daemon's config to let it", origin[0])}
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
		return &Refusal{Code: CodeOriginNotAllowed, Message: fmt.Sprintf(
			"a %s request from a web page is not allowed: web pages may not drive hutch; add the page's origin to allowed_origins in the daemon's config to let it", site)}
	}
	return nil
}

// OriginAllowed reports whether origin is in allowed_origins.
func (p *Policy) OriginAllowed(origin string) bool {
	if p == nil || len(p.origins) == 0 {
		return false
	}
	c, err := canonicalOrigin(origin)
	return err == nil && p.origins[c]
}

// sameOrigin reports whether origin names the request's own host and port
// (its Host passed hostAllowed): a page the daemon itself served, or a
// WebSocket client that fills Origin from the URL it dials.
func (p *Policy) sameOrigin(r *http.Request, origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https", "ws", "wss":
		return strings.EqualFold(u.Host, r.Host)
	}
	return false
}

// hostAllowed reports whether a Host header value names a loopback
// host, the host of an allowed_hosts entry or a name under a "*." entry.
func (p *Policy) hostAllowed(hostport string) bool {
	host := HostName(hostport)
	if host == "" {
		return false
	}
	if LoopbackHost(host) || strings.HasSuffix(host, ".localhost") {
		return true
	}
	if p == nil {
		return false
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return p.hosts[a.Unmap().String()]
	}
	if p.hosts[host] {
		return true
	}
	for _, s := range p.suffixes {
		if strings.HasSuffix(host, s) {
			return true
		}
	}
	return false
}

// HostName returns the lower-case host of a Host header value, without
// port, brackets or a trailing dot.
func HostName(hostport string) string {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
}

// LoopbackHost reports whether host (no port) is "localhost" or a loopback
// address (127.0.0.0/8, ::1, or either mapped into IPv6).
func LoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(strings.Trim(host, "[]"))
	return err == nil && a.Unmap().IsLoopback()
}

// Wrap returns h behind the policy: a refused request is answered 403 with
// the refusal as plain text, for transports without a JSON envelope.
func (p *Policy) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := p.Check(r); err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}
