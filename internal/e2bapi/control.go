package e2bapi

// The control plane: E2B's sandbox routes onto the sandbox::* functions.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/safetext"
)

// answer is a route's result: a status and a body (nil for none).
type answer struct {
	status int
	body   any
}

// controlFunc serves one route for owner's context.
type controlFunc func(ctx context.Context, r *http.Request, body []byte) (answer, error)

func (tr *Transport) routes() {
	for pattern, h := range map[string]controlFunc{
		"POST /v2/sandboxes":              tr.create,
		"POST /sandboxes":                 tr.create,
		"GET /v2/sandboxes":               tr.list,
		"GET /sandboxes":                  tr.list,
		"GET /sandboxes/{id}":             held(tr.get),
		"DELETE /sandboxes/{id}":          held(tr.kill),
		"POST /sandboxes/{id}/timeout":    held(tr.setTimeout),
		"POST /sandboxes/{id}/pause":      held(tr.pause),
		"POST /v2/sandboxes/{id}/connect": held(tr.connect),
		"POST /sandboxes/{id}/connect":    held(tr.connect),
		"POST /sandboxes/{id}/resume":     held(tr.connect),
		"GET /sandboxes/{id}/metrics":     held(tr.metrics),
	} {
		tr.control.Handle(pattern, tr.serve(h))
	}
	tr.networkRoutes() // issue 37
	tr.parityRoutes()  // issue 40: fork, snapshots, volumes, template tags and aliases (parity.go)
	// Any other path under E2B's API is E2B's too: a route hutch lacks is
	// a 404 in E2B's shape, never hutch's own envelope, which the SDK
	// shows as "[object Object]". Routes added elsewhere are more specific
	// and win.
	for _, prefix := range e2bPrefixes {
		tr.control.Handle(prefix, tr.serve(noRoute))
	}
}

// e2bPrefixes are the subtrees of E2B's API (spec/openapi.yml); hutch's
// own API is under /v1.
var e2bPrefixes = []string{"/sandboxes/", "/v2/", "/v3/", "/templates/", "/snapshots/", "/volumes/", "/volumecontent/", "/teams/"}

// noRoute answers a path of E2B's API that hutch does not serve.
func noRoute(_ context.Context, r *http.Request, _ []byte) (answer, error) {
	return answer{}, fail(http.StatusNotFound, fmt.Sprintf("%s %s is not part of hutch's E2B API", r.Method, safetext.Clip(r.URL.Path, 200)))
}

// held checks that the route's {id} can name a sandbox: an id hutch
// would never give (not a UUID) is not found, as E2B answers any id it
// does not hold, rather than malformed.
func held(h controlFunc) controlFunc {
	return func(ctx context.Context, r *http.Request, body []byte) (answer, error) {
		if id := r.PathValue("id"); uuid.Validate(id) != nil || len(id) != 36 {
			return answer{}, fail(http.StatusNotFound, fmt.Sprintf("sandbox %q not found", safetext.Clip(id, maxIDBytes)))
		}
		return h(ctx, r, body)
	}
}

// serve adapts a controlFunc: the owner, the body (bounded), the
// connection's deadlines, and the answer or error.
func (tr *Transport) serve(h controlFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		owner, err := tr.owner(r)
		if err != nil {
			writeError(w, err)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
		if err != nil {
			writeError(w, errdefs.Malformed("reading the request body (at most %d bytes): %v", maxBodyBytes, err))
			return
		}
		// A create may build its image: computing is not bounded by
		// the connection's timeouts, writing the answer is.
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Time{})
		_ = rc.SetWriteDeadline(time.Time{})
		ans, err := h(auth.WithOwner(r.Context(), owner), r, body)
		if tr.opts.WriteTimeout > 0 {
			_ = rc.SetWriteDeadline(time.Now().Add(tr.opts.WriteTimeout))
		}
		if p, ok := ans.body.(pageOf); ok {
			if p.next != "" {
				w.Header().Set("X-Next-Token", p.next)
				w.Header().Set("Access-Control-Expose-Headers", "X-Next-Token")
			}
			ans.body = p.items
		}
		switch {
		case err != nil:
			// issue 40: a 501 is a route hutch documents it does not serve, not a failure.
			if status, msg := errorStatus(err); status >= http.StatusInternalServerError && status != http.StatusNotImplemented {
				tr.opts.Logger.Error("e2b api call failed", "method", r.Method, "path", r.URL.Path, "status", status, "error", msg)
			}
			writeError(w, err)
		case ans.body == nil:
			w.WriteHeader(ans.status)
		default:
			writeJSON(w, ans.status, ans.body)
		}
	})
}

// decode reads an optional JSON body into v; fields E2B's newer SDKs
// send that hutch does not know are ignored.
func decode(body []byte, v any) error {
	if len(body) == 0 {
		return nil
	}
	if err := json.Unmarshal(body, v); err != nil {
		return errdefs.Malformed("request body: %v", err)
	}
	return nil
}

func (tr *Transport) create(ctx context.Context, r *http.Request, body []byte) (answer, error) {
	var in newSandbox
	if err := decode(body, &in); err != nil {
		return answer{}, err
	}
	if in.TemplateID == "" {
		in.TemplateID = "base"
	}
	image, template := tr.resolveTemplate(ctx, in.TemplateID)
	req, err := createRequest(in, image, template)
	if err == nil {
		err = tr.parityCreate(ctx, in, &req) // issue 40: snapshots and volumeMounts
	}
	if err != nil {
		return answer{}, err
	}
	res, err := functions.Call[api.CreateResponse](ctx, tr.t, api.FnCreate, req)
	if err != nil {
		return answer{}, err
	}
	return answer{http.StatusCreated, tr.sandboxAnswer(ctx, r, res.SandboxID, in.TemplateID)}, nil
}

// resolveTemplate maps a template id to an image (e2b.templates, else
// the id itself) or to one of the owner's hutch templates of that name.
func (tr *Transport) resolveTemplate(ctx context.Context, id string) (image, template string) {
	if img, ok := tr.opts.Templates[id]; ok {
		return img, ""
	}
	if _, err := functions.Invoke(ctx, tr.t, api.FnTemplateGet, api.TemplateRequest{Name: id}); err == nil {
		return "", id
	}
	return id, ""
}

// sandboxAnswer is the answer of create and connect for sandbox id.
func (tr *Transport) sandboxAnswer(ctx context.Context, r *http.Request, id, templateID string) sandboxAnswer {
	owner := auth.OwnerFrom(ctx)
	return sandboxAnswer{SandboxID: id, TemplateID: templateID, ClientID: clientID, EnvdVersion: EnvdVersion,
		EnvdAccessToken:    tr.opts.Signer.Token(kindEnvd, owner, id),
		TrafficAccessToken: tr.opts.Signer.Token(kindTraffic, owner, id),
		Domain:             tr.domain(r)}
}

// NoPreviewDomain is the domain answered by a daemon without
// preview_domain: a name that never resolves (RFC 6761's .invalid), so
// getHost's host fails at once and says why, and an SDK without
// E2B_SANDBOX_URL sends its in-sandbox calls nowhere, never to E2B's
// default domain, its answer's stand-in for a missing one.
const NoPreviewDomain = "no-preview-domain.invalid"

// domain is the domain of r's answers: the SDK's getHost(port) is
// {port}-{id}.{domain}, which must be hutch's preview host, on the
// listener r came to. So preview_domain with the port of r's Host, when
// it names one other than HTTP's and HTTPS's defaults (a client that
// reaches the daemon itself, not a proxy on 443).
func (tr *Transport) domain(r *http.Request) string {
	if tr.opts.PreviewDomain == "" {
		return NoPreviewDomain
	}
	if _, port, err := net.SplitHostPort(r.Host); err == nil && port != "" && port != "80" && port != "443" {
		return tr.opts.PreviewDomain + ":" + port
	}
	return tr.opts.PreviewDomain
}

func (tr *Transport) list(ctx context.Context, r *http.Request, _ []byte) (answer, error) {
	req, err := listRequest(r.URL.Query())
	if err != nil {
		return answer{}, err
	}
	res, err := functions.Call[api.ListResponse](ctx, tr.t, api.FnList, req)
	if err != nil {
		return answer{}, err
	}
	out := make([]listedSandbox, 0, len(res.Sandboxes))
	for _, s := range res.Sandboxes {
		out = append(out, listed(s))
	}
	return answer{http.StatusOK, pageOf{out, res.NextToken}}, nil
}

// pageOf is a list answer whose next token goes in X-Next-Token.
type pageOf struct {
	items any // issue 40: sandboxes or snapshots
	next  string
}

// info is sandbox::get of {id}; a stopped sandbox is not found.
func (tr *Transport) info(ctx context.Context, r *http.Request) (api.SandboxInfo, error) {
	s, err := functions.Call[api.SandboxInfo](ctx, tr.t, api.FnGet, api.GetRequest{SandboxID: r.PathValue("id")})
	if err == nil && stateOf(s.State) == "" {
		err = errdefs.New(errdefs.CodeStopped, "sandbox %s is %s", s.SandboxID, s.State)
	}
	return s, err
}

func (tr *Transport) get(ctx context.Context, r *http.Request, _ []byte) (answer, error) {
	s, err := tr.info(ctx, r)
	if err != nil {
		return answer{}, err
	}
	token := tr.opts.Signer.Token(kindEnvd, auth.OwnerFrom(ctx), s.SandboxID)
	return answer{http.StatusOK, detail(s, token, tr.domain(r))}, nil
}

// kill stops {id}; one already stopping or stopped is not found.
func (tr *Transport) kill(ctx context.Context, r *http.Request, _ []byte) (answer, error) {
	if _, err := tr.info(ctx, r); err != nil {
		return answer{}, err
	}
	_, err := functions.Call[api.StopResponse](ctx, tr.t, api.FnStop, api.StopRequest{SandboxID: r.PathValue("id")})
	return answer{status: http.StatusNoContent}, err
}

func (tr *Transport) setTimeout(ctx context.Context, r *http.Request, body []byte) (answer, error) {
	var in timeoutBody
	if err := decode(body, &in); err != nil {
		return answer{}, err
	}
	if in.Timeout == nil || *in.Timeout == 0 {
		return answer{}, errdefs.Malformed("timeout must be at least 1 second")
	}
	_, err := functions.Call[api.SetTimeoutResponse](ctx, tr.t, api.FnSetTimeout,
		api.SetTimeoutRequest{SandboxID: r.PathValue("id"), TimeoutSecs: *in.Timeout})
	return answer{status: http.StatusNoContent}, err
}

func (tr *Transport) pause(ctx context.Context, r *http.Request, body []byte) (answer, error) {
	var in pauseBody
	if err := decode(body, &in); err != nil {
		return answer{}, err
	}
	req := api.PauseRequest{SandboxID: r.PathValue("id")}
	if in.Memory != nil && !*in.Memory {
		req.Depth = api.PauseFiles
	}
	res, err := functions.Call[api.StateResponse](ctx, tr.t, api.FnPause, req)
	if err == nil && !res.Changed {
		err = fail(http.StatusConflict, "sandbox "+res.SandboxID+" is already paused")
	}
	return answer{status: http.StatusNoContent}, err
}

// connect resumes a paused sandbox (201) or finds a running one (200),
// then moves its end when the body gives a timeout that ends it later:
// as E2B's, connect never shortens a sandbox's life.
func (tr *Transport) connect(ctx context.Context, r *http.Request, body []byte) (answer, error) {
	var in timeoutBody
	if err := decode(body, &in); err != nil {
		return answer{}, err
	}
	s, err := tr.info(ctx, r)
	if err != nil {
		return answer{}, err
	}
	status := http.StatusOK
	if stateOf(s.State) == "paused" {
		res, err := functions.Call[api.StateResponse](ctx, tr.t, api.FnResume, api.ResumeRequest{SandboxID: s.SandboxID})
		if err != nil {
			return answer{}, err
		}
		if res.Changed {
			status = http.StatusCreated
		}
	}
	if in.Timeout != nil && *in.Timeout > 0 && extends(s, *in.Timeout, time.Now()) {
		if _, err := functions.Call[api.SetTimeoutResponse](ctx, tr.t, api.FnSetTimeout,
			api.SetTimeoutRequest{SandboxID: s.SandboxID, TimeoutSecs: *in.Timeout}); err != nil {
			return answer{}, err
		}
	}
	return answer{status, tr.sandboxAnswer(ctx, r, s.SandboxID, listed(s).TemplateID)}, nil
}

// extends reports whether a timeout of secs from now ends s later than
// its current end; a sandbox without an end has the longest life already.
func extends(s api.SandboxInfo, secs uint64, now time.Time) bool {
	end, err := time.Parse(time.RFC3339Nano, s.ExpiresAt)
	const maxSecs = 100 * 365 * 24 * 3600 // no Duration overflow
	return err == nil && now.Add(time.Duration(min(secs, maxSecs))*time.Second).After(end)
}

// metrics answers the samples between the query's start and end (Unix
// seconds, the end's whole second included; from the sandbox's creation
// to now by default). Reading them takes a sample of a running sandbox.
func (tr *Transport) metrics(ctx context.Context, r *http.Request, _ []byte) (answer, error) {
	s, err := tr.info(ctx, r)
	if err != nil {
		return answer{}, err
	}
	req := api.MetricsRequest{SandboxID: s.SandboxID, Start: s.CreatedAt}
	for _, f := range []struct {
		name  string
		v     *string
		shift time.Duration
	}{{"start", &req.Start, 0}, {"end", &req.End, time.Second - 1}} {
		if raw := r.URL.Query().Get(f.name); raw != "" {
			sec, err := strconv.ParseInt(raw, 10, 64)
			if err != nil || sec < 0 || sec > 1<<40 {
				return answer{}, errdefs.Malformed("%s must be Unix seconds, got %q", f.name, safetext.Clip(raw, 32))
			}
			*f.v = rfc3339(time.Unix(sec, 0).Add(f.shift))
		}
	}
	m, err := functions.Call[api.MetricsResponse](ctx, tr.t, api.FnMetrics, req)
	if err != nil {
		return answer{}, err
	}
	if m.CPUs == 0 { // paused: only its samples
		m.CPUs, m.MemoryLimitBytes = s.CPUs, uint64(s.MemoryMB)<<20
	}
	out := make([]metric, 0, len(m.Samples))
	for _, sm := range m.Samples {
		out = append(out, metrics(m, sm))
	}
	return answer{http.StatusOK, out}, nil
}
