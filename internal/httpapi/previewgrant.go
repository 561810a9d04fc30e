package httpapi

// Preview grants (issue 37): a transport in front of this handler (E2B's,
// on a sandbox's trafficAccessToken) may admit a preview request to a
// sandbox's ports with previewhost.WithGrant. Such a request acts for the
// grant's owner without a bearer token, on the preview routes only and
// for that sandbox only, and reaches its ports exposed or not.

import (
	"context"
	"net/http"

	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/previewhost"
)

// granted is r acting for its grant's owner when it has one and goes to
// a preview route; ok is false otherwise.
func granted(r *http.Request) (*http.Request, bool) {
	_, owner, ok := previewhost.GrantOf(r.Context())
	if !ok || !isPreview(r) {
		return r, false
	}
	return r.WithContext(auth.WithOwner(r.Context(), owner)), true
}

// reachPort is the port a preview request reaches: any port of the
// granted sandbox (none of another), else an exposed one of the
// caller's.
func (s *server) reachPort(ctx context.Context, id string, port int) (PortAccess, error) {
	if gid, _, ok := previewhost.GrantOf(ctx); ok {
		if gid != id {
			return PortAccess{}, errdefs.New(errdefs.CodeNotFound, "no sandbox %s for this grant", clipText(id))
		}
		return s.ports.ReachGranted(ctx, id, port)
	}
	return s.ports.ReachPort(ctx, id, port)
}
