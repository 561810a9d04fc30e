// Package previewhost is the host name of a sandbox's exposed port under
// the daemon's preview_domain, {port}-{sandbox_id}.{preview_domain}: the
// sandbox manager names it in the URLs it returns, and the REST transport
// reads it back from a request's Host.
package previewhost

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hutch-dev/hutch/internal/safetext"
	"github.com/hutch-dev/hutch/internal/webguard"
)

// maxLabel is the longest label a preview host adds to the domain: the
// highest port, a hyphen and a UUID.
const maxLabel = len("65535-") + 36

// CheckDomain explains what is wrong with domain as a preview_domain.
func CheckDomain(domain string) error {
	if !webguard.IsHostName(domain) {
		return fmt.Errorf("%q is not a DNS name in lower case (write e.g. preview.example.com: no scheme, port or wildcard)", domain)
	}
	if len(domain)+1+maxLabel > 253 {
		return fmt.Errorf("%q is too long: its hosts {port}-{sandbox_id}.%s must fit in 253 characters", domain, domain)
	}
	return nil
}

// Name is the host of port of sandbox id under domain.
func Name(domain string, port int, id string) string {
	return strconv.Itoa(port) + "-" + id + "." + domain
}

// Under reports whether a Host header value (any case, with a port or a
// trailing dot) is a name under domain: a request to a preview host,
// well formed or not.
func Under(hostport, domain string) bool {
	return domain != "" && strings.HasSuffix(webguard.HostName(hostport), "."+domain)
}

// Parse reads the port and sandbox id of a Host header value under
// domain; the error says what is wrong with one that names no port.
func Parse(hostport, domain string) (port int, id string, err error) {
	host := webguard.HostName(hostport)
	label, under := strings.CutSuffix(host, "."+domain)
	p, id, ok := strings.Cut(label, "-")
	n, perr := strconv.Atoi(p)
	if !under || !ok || id == "" || strings.Contains(id, ".") || perr != nil || n < 1 || n > 65535 || strconv.Itoa(n) != p {
		return 0, "", fmt.Errorf("host %q names no sandbox's port: a preview host is {port}-{sandbox_id}.%s", safetext.Clip(host, 80), domain)
	}
	return n, id, nil
}
