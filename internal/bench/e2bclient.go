package bench

// The E2B scenarios' client: E2B's control plane and envd spoken to the
// daemon as E2B's SDKs speak them with E2B_API_URL and E2B_SANDBOX_URL
// both set to the daemon's HTTP base URL (HTTP/1.1, Connect with the JSON
// codec, the E2b-Sandbox-* headers).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/hutch-dev/hutch/api"
	pb "github.com/hutch-dev/hutch/api/e2b/envd/process"
	"github.com/hutch-dev/hutch/api/e2b/envd/process/processconnect"
	"github.com/hutch-dev/hutch/client"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

const (
	// openE2BKey is the X-API-KEY sent without Options.E2BKey: a daemon
	// without api_tokens and e2b.api_keys takes any key of the right form.
	openE2BKey = "e2b_00000000000000000000000000000000"
	// envdPort is the E2b-Sandbox-Port of envd.
	envdPort = "49983"
	// e2bCommandTimeout is commands.run's default timeout, which the SDK
	// sends as Connect-Timeout-Ms.
	e2bCommandTimeout = 60 * time.Second
	// e2bKeepalive is the Keepalive-Ping-Interval (seconds) the SDK asks.
	e2bKeepalive = "50"
)

// e2bClient talks to one daemon's E2B API.
type e2bClient struct {
	base, key string
	hc        *http.Client
	process   processconnect.ProcessClient
}

// e2bSandbox is what a create answers that the scenarios use.
type e2bSandbox struct {
	ID    string `json:"sandboxID"`
	Token string `json:"envdAccessToken"`
}

// newE2BClient is a client of the E2B API of the daemon c talks to, with
// the key of o (or openE2BKey). Its connections stay open between calls,
// as the SDK's do; close them with close.
func newE2BClient(c *client.Client, o Options) *e2bClient {
	return newE2BClientKey(c, o.E2BKey)
}

// newE2BClientKey is newE2BClient with the key given (openE2BKey if "").
func newE2BClientKey(c *client.Client, key string) *e2bClient {
	base := strings.TrimSuffix(c.URL(), "/")
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	if key == "" {
		key = openE2BKey
	}
	return &e2bClient{base: base, key: key, hc: hc,
		process: processconnect.NewProcessClient(hc, base, connect.WithProtoJSON())}
}

func (x *e2bClient) close() { x.hc.CloseIdleConnections() }

// create is Sandbox.create: POST /v2/sandboxes with body. A key the
// daemon refuses (401) or a daemon without the E2B API (404) is a
// skipError.
func (x *e2bClient) create(ctx context.Context, body any) (e2bSandbox, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return e2bSandbox{}, err
	}
	var sb e2bSandbox
	status, err := x.control(ctx, http.MethodPost, "/v2/sandboxes", b, &sb)
	switch {
	case status == http.StatusUnauthorized && x.key == openE2BKey:
		return sb, skipf("no E2B key given, and the daemon takes none without one (%v): pass one of its e2b.api_keys with --e2b-key or E2B_API_KEY", err)
	case status == http.StatusUnauthorized:
		return sb, skipf("the daemon refused the E2B key (%v): pass one of its e2b.api_keys with --e2b-key or E2B_API_KEY", err)
	case status == http.StatusNotFound:
		return sb, skipf("the daemon serves no E2B API (POST /v2/sandboxes: %v)", err)
	case err != nil:
		return sb, fmt.Errorf("e2b create: %w", err)
	case status != http.StatusCreated || sb.ID == "" || sb.Token == "":
		return sb, fmt.Errorf("e2b create answered %d without sandboxID and envdAccessToken", status)
	}
	return sb, nil
}

// kill is Sandbox.kill: DELETE /sandboxes/{id} (204).
func (x *e2bClient) kill(ctx context.Context, id string) error {
	status, err := x.control(ctx, http.MethodDelete, "/sandboxes/"+url.PathEscape(id), nil, nil)
	if err == nil && status != http.StatusNoContent {
		err = fmt.Errorf("answered %d, want 204", status)
	}
	if err != nil {
		return fmt.Errorf("e2b kill of sandbox %s: %w", id, err)
	}
	return nil
}

// control sends a control-plane request and decodes a 2xx answer into
// out; any other answer is an error with E2B's message.
func (x *e2bClient) control(ctx context.Context, method, path string, body []byte, out any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, method, x.base+path, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set(api.HeaderE2BAPIKey, x.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := x.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(b, &e) != nil || e.Message == "" {
			e.Message = clip(string(b), 200)
		}
		return resp.StatusCode, fmt.Errorf("%d %s", resp.StatusCode, e.Message)
	}
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, fmt.Errorf("decoding the answer: %w", err)
		}
	}
	return resp.StatusCode, nil
}

// run is commands.run's call: process.Process/Start of argv without
// stdin (commands.run('true') sends /bin/bash -l -c true), read until its
// end event, which must say exit 0. It returns when the start event came
// and when the end came, from the call.
func (x *e2bClient) run(ctx context.Context, sb e2bSandbox, argv []string) (started, ended time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, e2bCommandTimeout)
	defer cancel()
	req := connect.NewRequest(&pb.StartRequest{
		Process: &pb.ProcessConfig{Cmd: argv[0], Args: argv[1:]},
		Stdin:   new(bool),
	})
	h := req.Header()
	h.Set(api.HeaderE2BSandboxID, sb.ID)
	h.Set(api.HeaderE2BSandboxPort, envdPort)
	h.Set(api.HeaderE2BAccessToken, sb.Token)
	h.Set("Keepalive-Ping-Interval", e2bKeepalive)
	t0 := time.Now()
	st, err := x.process.Start(ctx, req)
	if err != nil {
		return 0, 0, fmt.Errorf("e2b commands.run: %w", err)
	}
	defer st.Close()
	var end *pb.ProcessEvent_EndEvent
	sawStart := false
	for st.Receive() {
		switch ev := st.Msg().GetEvent(); {
		case ev.GetStart() != nil:
			started, sawStart = time.Since(t0), true
		case ev.GetEnd() != nil:
			end, ended = ev.GetEnd(), time.Since(t0)
		}
	}
	switch {
	case st.Err() != nil:
		return 0, 0, fmt.Errorf("e2b commands.run: %w", st.Err())
	case end == nil || !sawStart:
		return 0, 0, errors.New("e2b commands.run: the stream ended without a start and an end event")
	case !end.GetExited() || end.GetExitCode() != 0:
		return 0, 0, fmt.Errorf("e2b commands.run %q ended with %q", strings.Join(argv, " "), end.GetStatus())
	}
	return started, ended, nil
}

// killAndWait kills sandbox id through the E2B API, off the clock, and
// waits until its teardown is over through c's REST API (a sandbox c's
// owner does not see counts as gone). It runs even after ctx ended.
func (x *e2bClient) killAndWait(ctx context.Context, c *client.Client, id string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
	defer cancel()
	if err := x.kill(ctx, id); err != nil {
		return err
	}
	if _, err := c.Stop(ctx, id, true); err != nil && !notFound(err) {
		return fmt.Errorf("waiting for sandbox %s to stop: %w", id, err)
	}
	return nil
}

// notFound reports whether err is the REST API's not-found error.
func notFound(err error) bool {
	var env *api.ErrorEnvelope
	return errors.As(err, &env) && env.Code == string(errdefs.CodeNotFound)
}

// e2bCreateBody is the body of the scenarios' creates: what Sandbox.create
// sends for template image with allowInternetAccess: false (its default,
// true, asks for a network sandbox, which no warm pool holds).
func e2bCreateBody(image string) map[string]any {
	return map[string]any{"templateID": image, "timeout": 300, "secure": true, "allow_internet_access": false, "autoPause": false}
}

// killOffClock kills a scenario's sandbox and waits for its end, after the
// scenario's rounds; a failure counts among the run's failed stops.
func (x *e2bClient) killOffClock(ctx context.Context, e *env, id string) {
	if err := x.killAndWait(ctx, e.c, id); err != nil {
		e.stops.fail(err)
	}
}
