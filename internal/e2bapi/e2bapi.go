// Package e2bapi is hutch's E2B-compatible transport: the stock `e2b` and
// `@e2b/code-interpreter` SDKs, pointed at hutch with E2B_API_URL and
// E2B_SANDBOX_URL, run unchanged. Like every transport it decodes, calls
// the one function table and encodes; no business logic lives here.
//
// It sits in front of the REST handler on hutch's listener (httpapi's
// Options.Front) and takes:
//
//	POST   /v2/sandboxes, /sandboxes           sandbox::create (control.go)
//	GET    /v2/sandboxes, /sandboxes           sandbox::list (X-Next-Token pages)
//	GET    /sandboxes/{id}                     sandbox::get
//	DELETE /sandboxes/{id}                     sandbox::stop
//	POST   /sandboxes/{id}/timeout             sandbox::set_timeout
//	POST   /sandboxes/{id}/pause               sandbox::pause
//	POST   /v2/sandboxes/{id}/connect, /sandboxes/{id}/connect|resume  sandbox::resume
//	GET    /sandboxes/{id}/metrics             sandbox::metrics
//
// authenticated by X-API-KEY (keys.go), and every in-sandbox request:
// one with the header E2b-Sandbox-Id, or whose Host is
// {49983|49999}-{id}.{preview_domain} (router.go). Port 49983 is envd
// (Options.Envd), 49999 the code interpreter (codeinterp), any other port
// hutch's own preview proxy. In-sandbox requests are authenticated by the
// sandbox's tokens (tokens.go).
//
// Every request passes the web guard first (Host, Origin): a page in the
// user's browser reaches these routes only from allowed_origins. Under
// preview_domain only the hosts of ports 49983 and 49999 are E2B's: the
// control plane and the in-sandbox headers never answer on a preview
// host, whose pages are a sandbox's.
//
// These routes are E2B's contract (E2B's spec/openapi.yml and the SDKs'
// code), not hutch's: they are left out of hutch's /openapi.json.
package e2bapi

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/e2bapi/codeinterp"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/previewhost"
	"github.com/hutch-dev/hutch/internal/webguard"
)

// Options configure the transport.
type Options struct {
	Logger *slog.Logger
	// Keys map X-API-KEY to owners (config e2b.api_keys); nil with Open
	// set lets every caller act for the one local user, nil without it
	// refuses every control-plane call.
	Keys *auth.Tokens
	Open bool
	// Signer mints and checks the sandboxes' tokens.
	Signer *Signer
	// Templates map E2B template ids to catalog images (e2b.templates).
	Templates map[string]string
	// PreviewDomain is the daemon's preview_domain: hosts
	// {port}-{id}.{domain} of ports 49983 and 49999 are taken here, and it
	// is the domain create, connect and getInfo answer with (control.go's
	// domain).
	PreviewDomain string
	// Guard is the daemon's web guard.
	Guard *webguard.Policy
	// Envd serves port 49983, given the sandbox in the E2b-Sandbox-Id
	// header and its owner in the context (GET /health is answered
	// before it); nil answers Connect's "unimplemented". It runs under
	// the server's read and write timeouts from the request's start, and
	// moves them itself (http.ResponseController) for long streams, as
	// codeinterp does.
	Envd http.Handler
	// WriteTimeout bounds writing an answer (and each line of a stream).
	WriteTimeout time.Duration
	// Previews says which sandboxes' ports are private (issue 37:
	// allowPublicTraffic false; preview.go); nil: none.
	Previews Previews
}

// maxBodyBytes bounds a control-plane request body.
const maxBodyBytes = 1 << 20

// Transport is the E2B-compatible transport.
type Transport struct {
	t       *functions.Table
	opts    Options
	control *http.ServeMux
	interp  http.Handler
}

// New returns the transport over table.
func New(table *functions.Table, opts Options) *Transport {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	tr := &Transport{t: table, opts: opts, control: http.NewServeMux(),
		interp: codeinterp.New(table, codeinterp.Options{Logger: opts.Logger, WriteTimeout: opts.WriteTimeout})}
	tr.routes()
	tr.templateBuildRoutes() // issue 39: E2B's Template SDK build routes (templatebuild.go)
	return tr
}

// Wrap returns a handler that serves E2B's requests and passes any other
// to next.
//
// A request whose Host is under the preview domain is E2B's only when the
// host names port 49983 or 49999; any other is the preview's (next), its
// path, headers and all: a page a sandbox serves on its own host calls
// that origin, which passes the web guard (a loopback name, its own
// Origin), so neither the control plane nor the in-sandbox headers may
// answer there.
func (tr *Transport) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if previewhost.Under(r.Host, tr.opts.PreviewDomain) {
			if !tr.byHost(w, r, next) {
				next.ServeHTTP(w, r)
			}
			return
		}
		if tr.inSandbox(w, r, next) {
			return
		}
		if isSignedFiles(r) {
			if tr.guarded(w, r, tr.opts.Guard.Check) {
				tr.signedByURL(w, r)
			}
			return
		}
		if _, pattern := tr.control.Handler(r); pattern == "" {
			next.ServeHTTP(w, r)
			return
		}
		if err := tr.opts.Guard.Check(r); err != nil {
			writeError(w, fail(http.StatusForbidden, err.Error()))
			return
		}
		if tr.opts.Guard.CORS(w, r) {
			return
		}
		tr.control.ServeHTTP(w, r)
	})
}
