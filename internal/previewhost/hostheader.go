package previewhost

// A sandbox's masked Host header (api.PreviewOptions.HostHeader; E2B's
// maskRequestHost): the Host its servers see on preview requests.

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/safetext"
	"github.com/hutch-dev/hutch/internal/webguard"
)

// CheckHostHeader explains what is wrong with mask as a Host header: a
// DNS name or IP address, with a port or not, "${PORT}" standing for
// the port reached anywhere in it.
func CheckHostHeader(mask string) error {
	host := ExpandHostHeader(mask, 65535)
	name, port := host, ""
	if h, p, err := net.SplitHostPort(host); err == nil {
		name, port = h, p
	}
	_, ipErr := netip.ParseAddr(name)
	okName := webguard.IsHostName(strings.ToLower(name)) || ipErr == nil
	if n, err := strconv.Atoi(port); port != "" && (err != nil || n < 1 || n > 65535) {
		okName = false
	}
	if !okName || len(host) > 255 {
		return fmt.Errorf("%q is not a host name or IP address with an optional port (%s stands for the port reached)", safetext.Clip(mask, 80), api.PortVar)
	}
	return nil
}

// ExpandHostHeader is mask with "${PORT}" replaced by port.
func ExpandHostHeader(mask string, port int) string {
	return strings.ReplaceAll(mask, api.PortVar, strconv.Itoa(port))
}

// grantKey is the context key of a preview request's grant.
type grantKey struct{}

type grant struct{ id, owner string }

// WithGrant marks ctx's preview request as admitted to the ports of
// sandbox id, acting for owner, by a transport in front of the REST
// handler that checked a credential of the sandbox's own (E2B's
// trafficAccessToken). Only code sets it: no header can.
func WithGrant(ctx context.Context, id, owner string) context.Context {
	return context.WithValue(ctx, grantKey{}, grant{id, owner})
}

// GrantOf is the sandbox and owner of ctx's grant; ok is false for none.
func GrantOf(ctx context.Context) (id, owner string, ok bool) {
	g, ok := ctx.Value(grantKey{}).(grant)
	return g.id, g.owner, ok
}
