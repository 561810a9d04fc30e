package envd

// The tests' harness: the envd handler over a real function table and
// sandbox manager whose sandboxes are in-process agents
// (runtimetest): real processes, terminals, files and watches, run as
// the test's own children on the host's filesystem, without root or
// runsc. Only the image store is a stand-in (every image is ready).

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/api/e2b/envd/filesystem/filesystemconnect"
	"github.com/hutch-dev/hutch/api/e2b/envd/process/processconnect"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/sandbox"
	"github.com/hutch-dev/hutch/internal/sandbox/envsvc"
	"github.com/hutch-dev/hutch/internal/sandbox/filesvc"
	"github.com/hutch-dev/hutch/internal/sandbox/procsvc"
	"github.com/hutch-dev/hutch/internal/sandbox/sandboxtest"
)

// env is one test's envd: its server, a sandbox of owner "alice", and
// clients for it in a codec.
type env struct {
	t       *testing.T
	srv     *httptest.Server
	procs   *procsvc.Service
	sandbox string
}

// owner is the owner the test router acts for.
const owner = "alice"

// newEnv starts a manager, a sandbox and the envd handler behind a router
// that sets the owner from the X-Owner header ("alice" when absent).
func newEnv(t *testing.T) *env {
	t.Helper()
	cfg := config.Default()
	cfg.WarmPoolAuto = false
	mgr := sandboxtest.NewManager(t, sandbox.Options{Config: cfg})
	procs := procsvc.New(mgr, procsvc.LimitsOf(cfg))
	table := functions.New(functions.Deps{Sandboxes: mgr, Files: filesvc.New(mgr), Processes: procs, Environment: envsvc.New(mgr)})
	h := New(table, slog.New(slog.NewTextHandler(io.Discard, nil)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o := r.Header.Get("X-Owner")
		if o == "" {
			o = owner
		}
		h.ServeHTTP(w, r.WithContext(auth.WithOwner(r.Context(), o)))
	}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(auth.WithOwner(context.Background(), owner), 30*time.Second)
	defer cancel()
	created, err := mgr.Create(ctx, api.CreateRequest{Image: "python"})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	return &env{t: t, srv: srv, procs: procs, sandbox: created.SandboxID}
}

// headers is a RoundTripper that adds its headers to every request.
type headers struct {
	set  http.Header
	next http.RoundTripper
}

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.set {
		r.Header[k] = v
	}
	return h.next.RoundTrip(r)
}

// client is an HTTP client that names e's sandbox, plus extra headers.
func (e *env) client(extra ...string) *http.Client {
	set := http.Header{api.HeaderE2BSandboxID: {e.sandbox}}
	for i := 0; i+1 < len(extra); i += 2 {
		set.Set(extra[i], extra[i+1])
	}
	return &http.Client{Transport: headers{set: set, next: http.DefaultTransport}}
}

// codecs are the client options of the codecs envd serves.
var codecs = map[string][]connect.ClientOption{
	"json":   {connect.WithProtoJSON()},
	"binary": nil,
}

func (e *env) process(opts []connect.ClientOption, extra ...string) processconnect.ProcessClient {
	return processconnect.NewProcessClient(e.client(extra...), e.srv.URL, opts...)
}

func (e *env) fs(opts []connect.ClientOption, extra ...string) filesystemconnect.FilesystemClient {
	return filesystemconnect.NewFilesystemClient(e.client(extra...), e.srv.URL, opts...)
}

// testCtx is a context that ends with the test, bounded generously.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// wantCode fails t unless err is a Connect error of code.
func wantCode(t *testing.T, err error, code connect.Code) {
	t.Helper()
	if connect.CodeOf(err) != code {
		t.Fatalf("got %v, want %v", err, code)
	}
}
