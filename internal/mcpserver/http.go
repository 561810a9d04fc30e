package mcpserver

import (
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/envelope"
	"github.com/hutch-dev/hutch/internal/functions"
)

// SessionTimeout closes an MCP session idle this long (and stops its
// default sandbox).
const SessionTimeout = 30 * time.Minute

// sessionHeader carries the MCP session id.
const sessionHeader = "Mcp-Session-Id"

// toolsQuery is the query parameter of /mcp that chooses a session's
// tool set (Options.Tools is the default).
const toolsQuery = "tools"

// HTTPHandler serves MCP's streamable HTTP transport over the function
// table. The request's owner (auth.OwnerFrom, set by the API's bearer
// token check) is the session's, for its whole life: a request of another
// owner with the session's id is refused. The SDK's DNS rebinding
// protection stays on; the API's web guard runs first. A session offers
// the tools of opts.Tools, or of its first request's ?tools=; an unknown
// set is S001.
func HTTPHandler(t *functions.Table, opts Options) (http.Handler, error) {
	def, err := toolSet(opts.Tools)
	if err != nil {
		return nil, err
	}
	generated, err := functionTools(describe(t))
	if err != nil {
		return nil, err
	}
	h := &httpHandler{owners: map[string]ownedSession{}}
	// The SDK asks for a server on every request (its protocol versions);
	// a request of an existing session gets this one, which serves none.
	probe, _ := newServer(Table{T: t}, opts, def, nil, false)
	h.mcp = mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		if r.Header.Get(sessionHeader) != "" {
			return probe
		}
		set := def
		if q := r.URL.Query(); q.Has(toolsQuery) {
			set, _ = toolSet(q.Get(toolsQuery)) // checked by ServeHTTP
		}
		o := opts
		o.BaseURL = "http://" + r.Host
		srv, _ := newServer(Table{T: t, Owner: auth.OwnerFrom(r.Context())}, o, set, generated, true)
		return srv
	}, &mcp.StreamableHTTPOptions{SessionTimeout: SessionTimeout, Logger: opts.Logger})
	return h, nil
}

type httpHandler struct {
	mcp http.Handler

	mu     sync.Mutex
	owners map[string]ownedSession // by session id
}

type ownedSession struct {
	owner string
	seen  time.Time
}

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	owner := auth.OwnerFrom(r.Context())
	if q := r.URL.Query(); q.Has(toolsQuery) {
		if _, err := toolSet(q.Get(toolsQuery)); err != nil {
			writeError(w, err)
			return
		}
	}
	if id := r.Header.Get(sessionHeader); id != "" {
		h.mu.Lock()
		s, ok := h.owners[id]
		if ok && s.owner == owner {
			s.seen = time.Now()
			h.owners[id] = s
		}
		h.mu.Unlock()
		if ok && s.owner != owner {
			http.Error(w, "session not found", http.StatusNotFound) // as the SDK answers an unknown one
			return
		}
	}
	h.mcp.ServeHTTP(&sessionRecorder{ResponseWriter: w, h: h, owner: owner}, r)
}

// bind records that session id is owner's, forgetting sessions idle past
// twice the timeout.
func (h *httpHandler) bind(id, owner string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	for k, s := range h.owners {
		if now.Sub(s.seen) > 2*SessionTimeout {
			delete(h.owners, k)
		}
	}
	if _, ok := h.owners[id]; !ok {
		h.owners[id] = ownedSession{owner: owner, seen: now}
	}
}

// sessionRecorder binds the session id an answer hands out to the
// request's owner.
type sessionRecorder struct {
	http.ResponseWriter
	h     *httpHandler
	owner string
	done  bool
}

func (s *sessionRecorder) WriteHeader(code int) {
	if !s.done {
		s.done = true
		if id := s.Header().Get(sessionHeader); id != "" {
			s.h.bind(id, s.owner)
		}
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *sessionRecorder) Write(b []byte) (int, error) {
	if !s.done {
		s.WriteHeader(http.StatusOK)
	}
	return s.ResponseWriter.Write(b)
}

func (s *sessionRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (s *sessionRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// writeError answers err as the API does: its envelope, with the status
// of its kind.
func writeError(w http.ResponseWriter, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(envelope.HTTPStatus(err))
	_ = json.NewEncoder(w).Encode(map[string]api.ErrorEnvelope{"error": envelope.From(err)})
}
