package egress

// Header transforms (issue 37): the HTTPS requests of a sandbox toward a
// transform's host get headers written by hutch's egress proxy, with the
// owner's secrets in place of "{{secret.NAME}}"; the placeholder of a
// secret the transform names is replaced in every header of such a
// request, and nowhere else.

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
)

// Limits of transforms.
const (
	maxTransforms = 16
	maxHeaders    = 16
	maxHeaderLen  = 4096
)

// SecretName matches a secret's name.
var SecretName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]{0,127}$`)

// secretRef matches a secret in a header template.
var secretRef = regexp.MustCompile(`\{\{\s*secret\.([A-Za-z_][A-Za-z0-9_.-]{0,127})\s*\}\}`)

// Transform is what the proxy writes into a request toward one host.
type Transform struct {
	host    nameRule
	headers [][2]string // canonical name, template
	secrets []string    // the secrets it names, sorted
}

// Secrets are the names of the secrets t writes.
func (t *Transform) Secrets() []string { return slices.Clone(t.secrets) }

// compileTransforms checks and compiles a policy's transforms.
func compileTransforms(list []api.EgressTransform) ([]Transform, error) {
	if len(list) > maxTransforms {
		return nil, errdefs.Malformed("an egress policy has at most %d transforms, not %d", maxTransforms, len(list))
	}
	var out []Transform
	for i, tr := range list {
		_, host, err := parseEntry(tr.Host)
		if err != nil || host == nil || host.port != 0 {
			return nil, errdefs.Malformed("transforms[%d]: host %q must be a host name or *.domain, without a port", i, spec.Clip(tr.Host, 80))
		}
		if len(tr.Headers) == 0 || len(tr.Headers) > maxHeaders {
			return nil, errdefs.Malformed("transforms[%d]: 1 to %d headers", i, maxHeaders)
		}
		t := Transform{host: *host}
		for name, tmpl := range tr.Headers {
			if !httpguts.ValidHeaderFieldName(name) || len(tmpl) > maxHeaderLen || !httpguts.ValidHeaderFieldValue(tmpl) {
				return nil, errdefs.Malformed("transforms[%d]: header %q: a valid header name and a value of at most %d bytes", i, spec.Clip(name, 80), maxHeaderLen)
			}
			if strings.Contains(tmpl, "{{") && len(secretRef.FindAllString(tmpl, -1)) != strings.Count(tmpl, "{{") {
				return nil, errdefs.Malformed("transforms[%d]: header %q: write a secret as {{secret.NAME}}", i, spec.Clip(name, 80))
			}
			for _, m := range secretRef.FindAllStringSubmatch(tmpl, -1) {
				t.secrets = append(t.secrets, m[1])
			}
			t.headers = append(t.headers, [2]string{http.CanonicalHeaderKey(name), tmpl})
		}
		slices.SortFunc(t.headers, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
		t.secrets = SortedStrings(t.secrets)
		out = append(out, t)
	}
	return out, nil
}

// SortedStrings sorts s and drops duplicates.
func SortedStrings(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}

// TransformFor is the transform of p for host (lowercase); nil for none.
// An exact host wins over a wildcard.
func (p *Policy) TransformFor(host string) *Transform {
	if p == nil {
		return nil
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	var found *Transform
	for i := range p.transforms {
		t := &p.transforms[i]
		if t.host.matches(host) && (found == nil || !t.host.wildcard) {
			found = t
		}
	}
	return found
}

// Apply writes t into h with the values value gives for its secrets, and
// returns the names of the secrets written. A secret that value does not
// know fails the request: no placeholder is sent in its place.
func (t *Transform) Apply(h http.Header, value func(name string) (string, bool)) ([]string, error) {
	values := map[string]string{}
	for _, name := range t.secrets {
		v, ok := value(name)
		if !ok {
			return nil, fmt.Errorf("secret %s is not set", name)
		}
		values[name] = v
	}
	var used []string
	for k, vs := range h {
		for i, v := range vs {
			for _, name := range t.secrets {
				if ph := api.SecretPlaceholder(name); strings.Contains(v, ph) {
					v = strings.ReplaceAll(v, ph, values[name])
					used = append(used, name)
				}
			}
			h[k][i] = v
		}
	}
	for _, kv := range t.headers {
		v := secretRef.ReplaceAllStringFunc(kv[1], func(ref string) string {
			name := secretRef.FindStringSubmatch(ref)[1]
			used = append(used, name)
			return values[name]
		})
		h.Set(kv[0], v)
	}
	return SortedStrings(used), nil
}
