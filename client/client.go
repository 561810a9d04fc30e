// Package client is the Go client of hutch's HTTP API. Requests and results
// are the payload types of package api; an error the daemon answers is an
// *api.ErrorEnvelope, so callers can branch on its S-code:
//
//	c := client.FromEnv() // $HUTCH_URL, $HUTCH_TOKEN
//	sb, err := c.Create(ctx, api.CreateRequest{Image: "python"})
//	if err != nil {
//		var env *api.ErrorEnvelope
//		if errors.As(err, &env) && env.Code == "S100" { ... }
//		if client.IsUnreachable(err) { ... } // no daemon listening
//		return err
//	}
//	defer c.Stop(context.WithoutCancel(ctx), sb.SandboxID, false)
//	res, err := c.Exec(ctx, api.ExecRequest{SandboxID: sb.SandboxID, Cmd: "python3", Args: []string{"-c", "print(2+2)"}})
//
// A Client is safe for concurrent use and keeps connections alive, so many
// small calls (one exec after another) reuse one connection.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/hutch-dev/hutch/api"
)

// DefaultURL is where the daemon listens unless $HUTCH_URL says otherwise.
const DefaultURL = "http://127.0.0.1:3111"

// Client talks to one hutch daemon.
type Client struct {
	base string // without a trailing slash
	// shown is the daemon's address as messages name it, when not base
	// (a Unix socket's).
	shown string
	auth  string // "Bearer <token>", or ""
	httpc *http.Client
	// maxDownload bounds downloads (WithMaxDownload); <= 0: no bound.
	maxDownload int64
}

// New returns a client of the daemon at baseURL (DefaultURL when empty;
// "host:port" means http://host:port) that sends token, when not empty, as
// a bearer token. Its downloads are bounded by DefaultMaxDownload.
func New(baseURL, token string) *Client {
	if baseURL == "" {
		baseURL = DefaultURL
	}
	if !strings.Contains(baseURL, "://") {
		baseURL = "http://" + baseURL
	}
	c := &Client{base: strings.TrimRight(baseURL, "/"), httpc: &http.Client{Transport: newTransport()}, maxDownload: DefaultMaxDownload}
	if token != "" {
		c.auth = "Bearer " + token
	}
	return c
}

// FromEnv returns the client the environment names (see Env): the daemon
// at $HUTCH_URL, else the local socket when it exists, else DefaultURL,
// with the token $HUTCH_TOKEN.
func FromEnv() *Client { return Env(os.Getenv) }

// newTransport is tuned for many small calls to one host: a deep idle pool
// and no overall timeout (an exec may run for minutes; callers bound calls
// with their context).
func newTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 256
	t.MaxIdleConnsPerHost = 256
	t.IdleConnTimeout = 90 * time.Second
	t.DialContext = (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	return t
}

// URL returns the daemon's base URL.
func (c *Client) URL() string {
	if c.shown != "" {
		return c.shown
	}
	return c.base
}

// Create runs sandbox::create.
func (c *Client) Create(ctx context.Context, req api.CreateRequest) (api.CreateResponse, error) {
	var out api.CreateResponse
	return out, c.do(ctx, http.MethodPost, "/v1/sandboxes", req, &out)
}

// Exec runs a command in sandbox req.SandboxID with REST semantics: a
// timeout is not an error but a result with TimedOut set and the output
// captured so far.
func (c *Client) Exec(ctx context.Context, req api.ExecRequest) (api.ExecResponse, error) {
	var out api.ExecResponse
	p, err := sandboxPath(req.SandboxID)
	if err != nil {
		return out, err
	}
	return out, c.do(ctx, http.MethodPost, p+"/exec", req, &out)
}

// Stop runs sandbox::stop; with wait it returns once the sandbox is gone.
func (c *Client) Stop(ctx context.Context, id string, wait bool) (api.StopResponse, error) {
	var out api.StopResponse
	p, err := sandboxPath(id)
	if err != nil {
		return out, err
	}
	if wait {
		p += "?wait=true"
	}
	return out, c.do(ctx, http.MethodDelete, p, nil, &out)
}

// List runs sandbox::list: every sandbox of the caller.
func (c *Client) List(ctx context.Context) (api.ListResponse, error) {
	return c.ListFiltered(ctx, api.ListRequest{})
}

// Get describes one sandbox (sandbox::get).
func (c *Client) Get(ctx context.Context, id string) (api.SandboxInfo, error) {
	var out api.SandboxInfo
	p, err := sandboxPath(id)
	if err != nil {
		return out, err
	}
	return out, c.do(ctx, http.MethodGet, p, nil, &out)
}

// ImageStatus reports the cache state of catalog image name.
func (c *Client) ImageStatus(ctx context.Context, name string) (api.ImageStatus, error) {
	var out api.ImageStatus
	p, err := imagePath(name)
	if err != nil {
		return out, err
	}
	return out, c.do(ctx, http.MethodGet, p, nil, &out)
}

// Call runs any function of the daemon's table by id ("sandbox::exec",
// ...). payload is encoded with encoding/json (pass a json.RawMessage to
// send bytes as they are); the result is decoded into out unless out is
// nil. Calls follow the function contract: an exec timeout is an S200
// error here, not a result.
func (c *Client) Call(ctx context.Context, functionID string, payload, out any) error {
	if functionID == "" {
		return errors.New("function id is empty")
	}
	return c.do(ctx, http.MethodPost, "/v1/functions/"+url.PathEscape(functionID), payload, out)
}

// Health checks that the daemon answers.
func (c *Client) Health(ctx context.Context) error {
	return c.do(ctx, http.MethodGet, "/healthz", nil, nil)
}

// Runtimes reads the isolation runtimes the daemon offers from /healthz:
// whether its host runs each, how (mode) and which is the default. A
// daemon older than runtime-per-create lists none.
func (c *Client) Runtimes(ctx context.Context) ([]api.RuntimeInfo, error) {
	var out struct {
		Runtimes []api.RuntimeInfo `json:"runtimes"`
	}
	err := c.do(ctx, http.MethodGet, "/healthz", nil, &out)
	return out.Runtimes, err
}

func sandboxPath(id string) (string, error) {
	if id == "" {
		return "", errors.New("sandbox id is empty")
	}
	return "/v1/sandboxes/" + url.PathEscape(id), nil
}

// do sends one request; in (when not nil) is the JSON body, and the 2xx
// answer is decoded into out (when not nil).
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	body, contentType, err := jsonBody(path, in)
	if err != nil {
		return err
	}
	resp, err := c.send(ctx, method, path, body, contentType)
	if err != nil {
		return err
	}
	defer closeBody(resp)
	if out == nil {
		return nil
	}
	return decodeJSON(resp, out)
}

// jsonBody is in as a request body for path and its media type; nil and
// "" when in is nil.
func jsonBody(path string, in any) (io.Reader, string, error) {
	if in == nil {
		return nil, "", nil
	}
	b, err := json.Marshal(in)
	if err != nil {
		return nil, "", fmt.Errorf("encoding %s request: %w", path, err)
	}
	return bytes.NewReader(b), "application/json", nil
}

// send sends one request with body (nil for none) of contentType and
// returns the 2xx answer, whose body the caller closes (closeBody). Any
// other answer is its error.
func (c *Client) send(ctx context.Context, method, path string, body io.Reader, contentType string) (*http.Response, error) {
	return c.sendAccepting(ctx, method, path, body, contentType, "application/json")
}

// sendAccepting is send with an answer of media type accept.
func (c *Client) sendAccepting(ctx context.Context, method, path string, body io.Reader, contentType, accept string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", accept)
	if c.auth != "" {
		req.Header.Set("Authorization", c.auth)
	}
	resp, err := c.httpc.Do(req)
	if err != nil {
		if ctx.Err() == nil && isDialError(err) {
			return nil, &unreachableError{url: c.URL(), err: err}
		}
		return nil, fmt.Errorf("%s %s: %w", method, c.URL()+path, err)
	}
	if resp.StatusCode/100 != 2 {
		defer closeBody(resp)
		return nil, decodeError(resp)
	}
	return resp, nil
}

// closeBody drains a little of an answer's body, so the connection goes
// back to the pool, and closes it.
func closeBody(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
}

// decodeError turns a non-2xx answer into its *api.ErrorEnvelope, or a
// plain error when the body is not one (a proxy in between, say).
func decodeError(resp *http.Response) error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var body struct {
		Error *api.ErrorEnvelope `json:"error"`
	}
	if err := json.Unmarshal(raw, &body); err == nil && body.Error != nil && body.Error.Code != "" {
		return body.Error
	}
	snippet := strings.TrimSpace(string(raw))
	if len(snippet) > 200 {
		snippet = snippet[:200] + "…"
	}
	return fmt.Errorf("unexpected answer %s from %s %s: %s", resp.Status, resp.Request.Method, resp.Request.URL.Path, snippet)
}

// unreachableError is a request that found no daemon to talk to.
type unreachableError struct {
	url string
	err error
}

func (e *unreachableError) Error() string { return "no daemon at " + e.url + ": " + e.err.Error() }
func (e *unreachableError) Unwrap() error { return e.err }

// IsUnreachable reports whether err means no daemon answered at all: the
// connection could not be made (refused, no route, unknown host, dial
// timeout). A connection that broke after the request was sent is not
// "unreachable": the daemon may have acted on it.
func IsUnreachable(err error) bool {
	var u *unreachableError
	return errors.As(err, &u)
}

func isDialError(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}

// CallStream runs streaming function functionID with payload through
// /v1/functions, handing each event to on and decoding the final value
// into out.
func (c *Client) CallStream(ctx context.Context, functionID string, payload any, on func(event string, data json.RawMessage) error, out any) error {
	if functionID == "" {
		return errors.New("function id is empty")
	}
	return c.streamEvents(ctx, http.MethodPost, "/v1/functions/"+url.PathEscape(functionID), payload, on, out)
}

// Functions lists the function table with each function's description
// and schemas (engine::functions::list).
func (c *Client) Functions(ctx context.Context) (api.FunctionsResponse, error) {
	var out api.FunctionsResponse
	return out, c.do(ctx, http.MethodGet, "/v1/functions", nil, &out)
}

// Function describes one function (engine::functions::info).
func (c *Client) Function(ctx context.Context, id string) (api.FunctionInfo, error) {
	var out api.FunctionInfo
	return out, c.do(ctx, http.MethodGet, "/v1/functions/"+url.PathEscape(id), nil, &out)
}

// OpenAPI returns the daemon's OpenAPI 3.1 document.
func (c *Client) OpenAPI(ctx context.Context) (map[string]any, error) {
	var out map[string]any
	return out, c.do(ctx, http.MethodGet, "/openapi.json", nil, &out)
}

// HealthInfo decodes the daemon's /healthz answer (status, version, auth,
// runtimes) into out.
func (c *Client) HealthInfo(ctx context.Context, out any) error {
	return c.do(ctx, http.MethodGet, "/healthz", nil, out)
}
