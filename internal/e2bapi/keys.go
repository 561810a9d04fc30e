package e2bapi

import (
	"net/http"

	"github.com/hutch-dev/hutch/api"
)

// owner is the owner a control-plane request acts for: the owner of its
// X-API-KEY (constant-time lookup); without keys, the local user when
// the daemon is open (no api_tokens), else no one.
func (tr *Transport) owner(r *http.Request) (string, error) {
	key := r.Header.Get(api.HeaderE2BAPIKey)
	if !tr.opts.Keys.Enabled() {
		if tr.opts.Open {
			return "", nil
		}
		return "", fail(http.StatusUnauthorized, "this daemon has api_tokens but no e2b.api_keys: the operator must give you an E2B key")
	}
	if key == "" {
		return "", fail(http.StatusUnauthorized, "missing X-API-KEY: set E2B_API_KEY to your hutch E2B key")
	}
	owner, err := tr.opts.Keys.Lookup(key)
	if err != nil {
		return "", fail(http.StatusUnauthorized, "invalid API key: it is none of this daemon's e2b.api_keys")
	}
	return owner, nil
}
