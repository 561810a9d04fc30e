package e2bapi

// The in-sandbox router. E2B's SDKs send every in-sandbox request to
// E2B_SANDBOX_URL with the headers E2b-Sandbox-Id and E2b-Sandbox-Port,
// or (with wildcard DNS) to the host {port}-{id}.{domain}. The router
// checks the sandbox's token, puts its owner in the context and the
// sandbox id in E2b-Sandbox-Id, and sends the request on by port:
//
//	49983  envd (Options.Envd); GET /health answered here
//	49999  the code interpreter (codeinterp)
//	other  hutch's preview proxy of that port (Hutch-Sandbox-Id and
//	       Hutch-Sandbox-Port), under hutch's own rules: the owner's bearer
//	       token or the port's public token. Hosts of those ports under
//	       preview_domain are left to httpapi's host route.
//
// Under preview_domain the host alone decides: the headers are not read
// there (a page a sandbox serves on its host may send them), and a host
// of any port but 49983 and 49999 is the preview's, every path of it.
//
// Tokens: X-Access-Token (envdAccessToken) on envd; on the code
// interpreter, X-Access-Token or E2B-Traffic-Access-Token
// (trafficAccessToken), because the SDK sends the first only on /execute
// and the second on every call. Both are per sandbox and unforgeable
// (tokens.go); without one, a request is 401 and reaches nothing.

import (
	"net/http"
	"slices"
	"strconv"

	"github.com/hutch-dev/hutch/internal/functions"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/previewhost"
)

// The ports of E2B's in-sandbox services.
const (
	EnvdPort   = 49983
	InterpPort = 49999
)

// maxIDBytes bounds a sandbox id read from a request.
const maxIDBytes = 64

// inSandbox serves r when it is an in-sandbox request by its headers
// (the Host is not a preview host) and reports whether it was.
func (tr *Transport) inSandbox(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
	id, portText := r.Header.Get(api.HeaderE2BSandboxID), r.Header.Get(api.HeaderE2BSandboxPort)
	if id == "" {
		return false
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 1 || port > 65535 || len(id) > maxIDBytes {
		writeError(w, fail(http.StatusBadRequest, "an in-sandbox request needs E2b-Sandbox-Id (a sandbox id) and E2b-Sandbox-Port (a TCP port)"))
		return true
	}
	if !tr.guarded(w, r, tr.opts.Guard.Check) {
		return true
	}
	switch port {
	case EnvdPort, InterpPort:
		tr.servePort(w, r, id, port)
	default:
		r = r.Clone(r.Context())
		r.Header.Del(api.HeaderE2BSandboxID)
		r.Header.Del(api.HeaderE2BSandboxPort)
		r.Header.Set(api.HeaderSandboxID, id)
		r.Header.Set(api.HeaderSandboxPort, strconv.Itoa(port))
		tr.preview(w, r, id, next) // issue 37: the traffic token, allowPublicTraffic (preview.go)
	}
	return true
}

// byHost serves r, whose Host is under the preview domain, when the host
// names a port of a sandbox, and reports whether it did: port 49983 or
// 49999 here, any other through preview (its traffic token) to the
// preview host route (next). The E2B headers are not read: the host
// alone names the sandbox.
func (tr *Transport) byHost(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
	port, id, err := previewhost.Parse(r.Host, tr.opts.PreviewDomain)
	if err != nil {
		return false
	}
	if port != EnvdPort && port != InterpPort {
		tr.preview(w, r.Clone(r.Context()), id, next) // issue 37 (preview.go)
		return true
	}
	if tr.guarded(w, r, tr.opts.Guard.CheckOrigin) { // the host is the preview domain's
		tr.servePort(w, r, id, port)
	}
	return true
}

// guarded runs check (the web guard's) and answers a CORS preflight;
// false when r is answered.
func (tr *Transport) guarded(w http.ResponseWriter, r *http.Request, check func(*http.Request) error) bool {
	if err := check(r); err != nil {
		writeError(w, fail(http.StatusForbidden, err.Error()))
		return false
	}
	return !tr.opts.Guard.CORS(w, r)
}

// servePort serves r on E2B's port of sandbox id: envd or the code
// interpreter.
func (tr *Transport) servePort(w http.ResponseWriter, r *http.Request, id string, port int) {
	if port == EnvdPort {
		tr.serveSandbox(w, r, id, tr.envd(), kindEnvd)
		return
	}
	tr.serveSandbox(w, r, id, tr.interp, kindEnvd, kindTraffic)
}

// serveSandbox checks r's token, of one of kinds, for sandbox id and
// serves it with h acting for the token's owner.
func (tr *Transport) serveSandbox(w http.ResponseWriter, r *http.Request, id string, h http.Handler, kinds ...string) {
	owner, err := tr.sandboxOwner(r, id, kinds)
	if err != nil {
		writeError(w, err)
		return
	}
	ctx := auth.WithOwner(r.Context(), owner)
	// A token lives as long as its sandbox: once it is stopped (or
	// gone) the token opens nothing, and the answer is E2B's proxy's for
	// a sandbox that is gone.
	if s, err := functions.Call[api.SandboxInfo](ctx, tr.t, api.FnGet, api.GetRequest{SandboxID: id}); err != nil || stateOf(s.State) == "" {
		http.Error(w, "sandbox "+id+" is not running: stopped or gone, its access tokens open nothing", http.StatusBadGateway)
		return
	}
	r = r.Clone(ctx)
	r.Header.Set(api.HeaderE2BSandboxID, id)
	h.ServeHTTP(w, r)
}

// sandboxOwner is the owner of the first of r's token headers that the
// kinds allow and that is valid for sandbox id, or, for a /files request
// of envd without one, of its URL's signature.
func (tr *Transport) sandboxOwner(r *http.Request, id string, kinds []string) (string, error) {
	for _, k := range kinds {
		token := r.Header.Get(tokenHeader[k])
		if token == "" {
			continue
		}
		if owner, err := tr.opts.Signer.Owner(token, id, k); err == nil && tr.admitted(owner) {
			return owner, nil
		}
	}
	if slices.Contains(kinds, kindEnvd) && isSignedFiles(r) && r.Header.Get(tokenHeader[kindEnvd]) == "" {
		return tr.signedOwner(r, id) // signed.go
	}
	return "", fail(http.StatusUnauthorized, "missing, invalid or revoked sandbox access token (X-Access-Token: the envdAccessToken of this sandbox's create or connect)")
}

// admitted reports whether owner may still use the E2B API, as the
// control plane decides (keys.go): with e2b.api_keys, an owner of one; on
// an open daemon without keys, the local user. A token whose owner lost
// their key is revoked.
func (tr *Transport) admitted(owner string) bool {
	if !tr.opts.Keys.Enabled() {
		return tr.opts.Open && owner == ""
	}
	return owner != "" && slices.Contains(tr.opts.Keys.Owners(), owner)
}

// tokenHeader is the header of each kind of token.
var tokenHeader = map[string]string{kindEnvd: api.HeaderE2BAccessToken, kindTraffic: api.HeaderE2BTrafficToken}
