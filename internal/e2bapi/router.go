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
// Tokens: X-Access-Token (envdAccessToken) on envd; on the code
// interpreter, X-Access-Token or E2B-Traffic-Access-Token
// (trafficAccessToken), because the SDK sends the first only on /execute
// and the second on every call. Both are per sandbox and unforgeable
// (tokens.go); without one, a request is 401 and reaches nothing.

import (
	"net/http"
	"strconv"

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

// inSandbox serves r when it is an in-sandbox request and reports
// whether it was.
func (tr *Transport) inSandbox(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
	id, portText := r.Header.Get(api.HeaderE2BSandboxID), r.Header.Get(api.HeaderE2BSandboxPort)
	byHost := false
	port := 0
	switch {
	case id != "":
		n, err := strconv.Atoi(portText)
		if err != nil || n < 1 || n > 65535 || len(id) > maxIDBytes {
			writeError(w, fail(http.StatusBadRequest, "an in-sandbox request needs E2b-Sandbox-Id (a sandbox id) and E2b-Sandbox-Port (a TCP port)"))
			return true
		}
		port = n
	case previewhost.Under(r.Host, tr.opts.PreviewDomain):
		n, hostID, err := previewhost.Parse(r.Host, tr.opts.PreviewDomain)
		if err != nil || (n != EnvdPort && n != InterpPort) {
			return false // the preview host route's
		}
		id, port, byHost = hostID, n, true
	default:
		return false
	}
	check := tr.opts.Guard.Check
	if byHost {
		check = tr.opts.Guard.CheckOrigin // the host is the preview domain's
	}
	if err := check(r); err != nil {
		writeError(w, fail(http.StatusForbidden, err.Error()))
		return true
	}
	if tr.opts.Guard.CORS(w, r) {
		return true
	}
	switch port {
	case EnvdPort:
		tr.serveSandbox(w, r, id, tr.envd(), kindEnvd)
	case InterpPort:
		tr.serveSandbox(w, r, id, tr.interp, kindEnvd, kindTraffic)
	default:
		r = r.Clone(r.Context())
		r.Header.Del(api.HeaderE2BSandboxID)
		r.Header.Del(api.HeaderE2BSandboxPort)
		r.Header.Set(api.HeaderSandboxID, id)
		r.Header.Set(api.HeaderSandboxPort, strconv.Itoa(port))
		next.ServeHTTP(w, r)
	}
	return true
}

// serveSandbox checks r's token, of one of kinds, for sandbox id and
// serves it with h acting for the token's owner.
func (tr *Transport) serveSandbox(w http.ResponseWriter, r *http.Request, id string, h http.Handler, kinds ...string) {
	owner, err := tr.sandboxOwner(r, id, kinds)
	if err != nil {
		writeError(w, err)
		return
	}
	r = r.Clone(auth.WithOwner(r.Context(), owner))
	r.Header.Set(api.HeaderE2BSandboxID, id)
	h.ServeHTTP(w, r)
}

// sandboxOwner is the owner of the first of r's token headers that the
// kinds allow and that is valid for sandbox id.
func (tr *Transport) sandboxOwner(r *http.Request, id string, kinds []string) (string, error) {
	for _, k := range kinds {
		token := r.Header.Get(tokenHeader[k])
		if token == "" {
			continue
		}
		if owner, err := tr.opts.Signer.Owner(token, id, k); err == nil {
			return owner, nil
		}
	}
	return "", fail(http.StatusUnauthorized, "missing or invalid sandbox access token (X-Access-Token: the envdAccessToken of this sandbox's create or connect)")
}

// tokenHeader is the header of each kind of token.
var tokenHeader = map[string]string{kindEnvd: api.HeaderE2BAccessToken, kindTraffic: api.HeaderE2BTrafficToken}
