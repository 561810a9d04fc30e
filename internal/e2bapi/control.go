package e2bapi

// The control plane: E2B's sandbox routes onto the sandbox::* functions.

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
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
		"GET /sandboxes/{id}":             tr.get,
		"DELETE /sandboxes/{id}":          tr.kill,
		"POST /sandboxes/{id}/timeout":    tr.setTimeout,
		"POST /sandboxes/{id}/pause":      tr.pause,
		"POST /v2/sandboxes/{id}/connect": tr.connect,
		"POST /sandboxes/{id}/connect":    tr.connect,
		"POST /sandboxes/{id}/resume":     tr.connect,
		"GET /sandboxes/{id}/metrics":     tr.metrics,
	} {
		tr.control.Handle(pattern, tr.serve(h))
	}
	tr.networkRoutes() // issue 37
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
			if status, msg := errorStatus(err); status >= http.StatusInternalServerError {
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
	items []listedSandbox
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

func (tr *Transport) pause(ctx context.Context, r *http.Request, _ []byte) (answer, error) {
	res, err := functions.Call[api.StateResponse](ctx, tr.t, api.FnPause, api.PauseRequest{SandboxID: r.PathValue("id")})
	if err == nil && !res.Changed {
		err = fail(http.StatusConflict, "sandbox "+res.SandboxID+" is already paused")
	}
	return answer{status: http.StatusNoContent}, err
}

// connect resumes a paused sandbox (201) or finds a running one (200),
// then moves its end when the body gives a timeout.
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
	if in.Timeout != nil && *in.Timeout > 0 {
		if _, err := functions.Call[api.SetTimeoutResponse](ctx, tr.t, api.FnSetTimeout,
			api.SetTimeoutRequest{SandboxID: s.SandboxID, TimeoutSecs: *in.Timeout}); err != nil {
			return answer{}, err
		}
	}
	return answer{status, tr.sandboxAnswer(ctx, r, s.SandboxID, s.Image)}, nil
}

func (tr *Transport) metrics(ctx context.Context, r *http.Request, _ []byte) (answer, error) {
	if _, err := tr.info(ctx, r); err != nil {
		return answer{}, err
	}
	m, err := functions.Call[api.MetricsResponse](ctx, tr.t, api.FnMetrics, api.MetricsRequest{SandboxID: r.PathValue("id")})
	if errdefs.Is(err, errdefs.CodePaused) {
		// A paused sandbox has no live sample: E2B answers none.
		return answer{http.StatusOK, []metric{}}, nil
	}
	if err != nil {
		return answer{}, err
	}
	return answer{http.StatusOK, []metric{metrics(m, time.Now())}}, nil
}
