// Package envd is the in-sandbox half of hutch's E2B-compatible transport:
// E2B's envd wire contract (the Connect services process.Process and
// filesystem.Filesystem, and the HTTP routes /files and /health) for one
// sandbox per request, mapped onto hutch's function table. It holds no
// process or file logic of its own: a process is a sandbox::process::*
// background process, a file operation a sandbox::fs::* call.
//
// The E2B router in front of it authenticates the request, puts the owner
// in its context (auth.WithOwner) and names the sandbox in the
// E2b-Sandbox-Id header; this package does not authenticate.
package envd

import (
	"encoding/base64"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/api/e2b/envd/filesystem/filesystemconnect"
	"github.com/hutch-dev/hutch/api/e2b/envd/process/processconnect"
	"github.com/hutch-dev/hutch/internal/functions"
)

// Bounds of the transport.
const (
	// maxMessage bounds one Connect message from the client (an input
	// chunk, a request).
	maxMessage = 4 << 20
	// ioTimeout bounds each write of an answer and each chunk read of an
	// upload: a client that stops reading or sending is cut off.
	ioTimeout = 30 * time.Second
)

// New returns the envd handler over t. log receives what goes wrong on a
// connection after its answer started.
func New(t *functions.Table, log *slog.Logger) http.Handler {
	s := &server{t: t, log: log, watchers: newWatchers()}
	opts := []connect.HandlerOption{connect.WithReadMaxBytes(maxMessage)}
	mux := http.NewServeMux()
	mux.Handle(processconnect.NewProcessHandler(&processService{s}, opts...))
	mux.Handle(filesystemconnect.NewFilesystemHandler(&filesystemService{s}, opts...))
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("GET /files", s.download)
	mux.HandleFunc("POST /files", s.upload)
	// issue 40: envd 0.6's state routes (state.go)
	mux.HandleFunc("GET /envs", s.envs)
	mux.HandleFunc("GET /metrics", s.metrics)
	mux.HandleFunc("POST /init", s.initEnvd)
	return withDeadlines(mux)
}

// server is what the services share.
type server struct {
	t        *functions.Table
	log      *slog.Logger
	watchers *watchers
	homes    homes
}

// scope is the sandbox and user a request acts on.
type scope struct {
	sandbox string
	// user is the sandbox user to run as; "" is the image's.
	user string
}

// scopeOf reads the sandbox from h and the user from its Basic
// authorization ("user:"), or from username when it is not empty.
func scopeOf(h http.Header, username string) (scope, error) {
	sc := scope{sandbox: h.Get(api.HeaderE2BSandboxID), user: username}
	if sc.sandbox == "" {
		return sc, invalid("the %s header is required", api.HeaderE2BSandboxID)
	}
	if sc.user == "" {
		sc.user = basicUser(h.Get("Authorization"))
	}
	return sc, nil
}

// basicUser is the user name of a Basic authorization header, "" when
// there is none.
func basicUser(h string) string {
	const prefix = "Basic "
	if len(h) < len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return ""
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(h[len(prefix):]))
	if err != nil {
		return ""
	}
	user, _, _ := strings.Cut(string(raw), ":")
	return user
}
