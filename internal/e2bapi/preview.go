package e2bapi

// E2B's private sandbox URLs and masked host (issue 37). A create's
// network.allowPublicTraffic false and network.maskRequestHost are hutch's
// preview terms (api.PreviewOptions: private, host_header). A request to
// any port of a sandbox but envd's and the interpreter's that carries
// E2B-Traffic-Access-Token (the sandbox's trafficAccessToken) goes to
// hutch's preview proxy acting for the sandbox's owner, on any port of
// it, exposed or not (previewhost.WithGrant); without the header, a
// private sandbox's port answers 403, as E2B's, and any other is under
// hutch's rules (an exposed port, the owner's bearer token or the port's
// public token).

import (
	"net/http"
	"regexp"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/previewhost"
)

// Previews tells which sandboxes' ports are private: the port service.
type Previews interface {
	Private(id string) bool
}

// preview sends r, to a port of sandbox id other than envd's and the
// interpreter's, on to the preview proxy (next), or answers 403.
func (tr *Transport) preview(w http.ResponseWriter, r *http.Request, id string, next http.Handler) {
	if r.Header.Get(api.HeaderE2BTrafficToken) != "" {
		owner, err := tr.sandboxOwner(r, id, []string{kindTraffic})
		if err != nil {
			writeError(w, fail(http.StatusForbidden, "invalid or revoked E2B-Traffic-Access-Token: send the trafficAccessToken of this sandbox's create or connect"))
			return
		}
		r.Header.Del(api.HeaderE2BTrafficToken) // the sandbox's server never sees it
		next.ServeHTTP(w, r.WithContext(previewhost.WithGrant(r.Context(), id, owner)))
		return
	}
	if tr.opts.Previews != nil && tr.opts.Previews.Private(id) {
		writeError(w, fail(http.StatusForbidden, "this sandbox was created with network.allowPublicTraffic false: send its trafficAccessToken in the E2B-Traffic-Access-Token header"))
		return
	}
	next.ServeHTTP(w, r)
}

// preview is the preview terms of n's allowPublicTraffic and
// maskRequestHost; nil for the defaults.
func (n *networkConfig) preview() *api.PreviewOptions {
	if n == nil || (n.MaskRequestHost == "" && (n.AllowPublicTraffic == nil || *n.AllowPublicTraffic)) {
		return nil
	}
	return &api.PreviewOptions{HostHeader: n.MaskRequestHost, Private: n.AllowPublicTraffic != nil && !*n.AllowPublicTraffic}
}

// hutchSecretRef is hutch's placeholder of a secret in a transform's
// header, answered as E2B's (e2bSecretRef).
var hutchSecretRef = regexp.MustCompile(`\{\{secret\.([^{}\s]+)\}\}`)

// networkOf is getInfo's network block of s: its egress policy (allowOut,
// denyOut, rules, secrets by name only) and preview terms
// (allowPublicTraffic, true by default as E2B's, and maskRequestHost).
func networkOf(s api.SandboxInfo) *networkConfig {
	public := s.Preview == nil || !s.Preview.Private
	n := &networkConfig{AllowPublicTraffic: &public}
	if s.Preview != nil {
		n.MaskRequestHost = s.Preview.HostHeader
	}
	if s.Egress == nil {
		return n
	}
	n.AllowOut, n.DenyOut = s.Egress.AllowOut, s.Egress.DenyOut
	for _, tf := range s.Egress.Transforms {
		var rule networkRule
		rule.Transform = &struct {
			Headers map[string]string `json:"headers"`
		}{Headers: map[string]string{}}
		for k, v := range tf.Headers {
			rule.Transform.Headers[k] = hutchSecretRef.ReplaceAllString(v, "$${e2b.secrets.$1}")
		}
		if n.Rules == nil {
			n.Rules = map[string][]networkRule{}
		}
		n.Rules[tf.Host] = append(n.Rules[tf.Host], rule)
	}
	return n
}
