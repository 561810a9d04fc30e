// Package httpapi is hutch's REST transport: it maps HTTP routes onto the one
// function table and nothing more. A handler reads the body, takes path and
// query parameters as typed fields, dispatches, and writes the result (a
// value, or a stream of events) or the error envelope; no business logic
// lives here.
//
// Routes (request and response bodies are the function payloads):
//
//	POST   /v1/sandboxes                  sandbox::create
//	GET    /v1/sandboxes                  sandbox::list (?state=&metadata=k=v&limit=&next_token=)
//	POST   /v1/sandboxes/{id}/pause       sandbox::pause
//	POST   /v1/sandboxes/{id}/resume      sandbox::resume
//	POST   /v1/sandboxes/{id}/timeout     sandbox::set_timeout
//	POST   /v1/sandboxes/{id}/snapshots   sandbox::snapshot::create
//	POST   /v1/sandboxes/{id}/fork        sandbox::fork
//	GET    /v1/snapshots[/{snapshot_id}]  sandbox::snapshot::list, ::get
//	DELETE /v1/snapshots/{snapshot_id}    sandbox::snapshot::delete
//	GET    /v1/events[/stream]            sandbox::events::list, ::stream (?sandbox_id=&type=&since=&after=&limit=)
//	GET    /v1/sandboxes/{id}/events      sandbox::events::list of one sandbox
//	POST   /v1/events                     sandbox::events::publish
//	GET    /v1/webhooks/deliveries        hutch::webhook::deliveries
//	POST   /v1/webhooks                   hutch::webhook::create
//	GET    /v1/webhooks                   hutch::webhook::list
//	DELETE /v1/webhooks/{webhook_id}      hutch::webhook::delete
//	POST   /v1/sandboxes/{id}/alerts      sandbox::alert::create
//	GET    /v1/alerts[?history=true]      sandbox::alert::list, ::history (?sandbox_id=)
//	DELETE /v1/alerts/{alert_id}          sandbox::alert::delete
//	POST   /v1/templates                  sandbox::template::create
//	GET    /v1/templates[/{name}]         sandbox::template::list, ::get
//	DELETE /v1/templates/{name}           sandbox::template::delete
//	GET    /v1/sandboxes/{id}             sandbox::get
//	DELETE /v1/sandboxes/{id}[?wait=true] sandbox::stop
//	POST   /v1/sandboxes/{id}/exec        hutch::exec: sandbox::exec, REST semantics (see below)
//	POST   /v1/sandboxes/{id}/fs/{op}     sandbox::fs::{op} (ls, stat, mkdir, write, ...)
//	PUT    /v1/sandboxes/{id}/files?path= streamed upload of the body (files.go)
//	GET    /v1/sandboxes/{id}/files?path= sandbox::fs::download, the raw bytes
//	PUT    /v1/sandboxes/{id}/archive?path= sandbox::fs::unpack of the body, streamed (archive.go)
//	GET    /v1/sandboxes/{id}/archive?path= sandbox::fs::pack, the raw tar.gz
//	POST   /v1/functions/{function_id}    any function of the table by id (streams: SSE or NDJSON)
//	GET    /v1/functions[/{function_id}]  engine::functions::list (?include_internal=true), ::info: descriptions and JSON Schemas
//	GET    /v1/images/{name}              hutch::image::status
//	POST   /v1/images/{name}              hutch::image::pull (answers once the image is ready)
//	DELETE /v1/images/{name}              hutch::image::rm
//	GET    /v1/images                     hutch::image::list
//	GET    /v1/catalog                    sandbox::catalog::list
//	GET    /v1/sandboxes/{id}/metrics     sandbox::metrics (cpu, memory, pids)
//	GET    /v1/sandboxes/{id}/metrics/stream?interval_ms=  sandbox::metrics::stream
//	GET    /v1/sandboxes/{id}/logs?follow=&tag=  sandbox::process::logs
//	POST   /v1/sandboxes/{id}/contexts    sandbox::interpreter::context::create (GET: ::list)
//	POST   /v1/sandboxes/{id}/run-code    sandbox::interpreter::run (a stream)
//	POST   /v1/sandboxes/{id}/packages    sandbox::interpreter::install (a stream)
//	POST   /v1/contexts/{context_id}/restart|interrupt  sandbox::interpreter::context::restart, ::interrupt
//	DELETE /v1/contexts/{context_id}      sandbox::interpreter::context::delete
//	POST   /v1/jobs                       sandbox::job::submit
//	GET    /v1/jobs[/{job_id}]            sandbox::job::list (?state=&sandbox_id=&limit=), ::get
//	DELETE /v1/jobs/{job_id}              sandbox::job::cancel
//	GET    /v1/dlq                        sandbox::job::dlq
//	POST   /v1/dlq/{job_id}/retry         sandbox::job::retry
//	POST|GET|DELETE /mcp                  MCP's streamable HTTP transport (Options.MCP)
//	GET    /openapi.json                  the OpenAPI 3.1 document of these routes (openapi.go)
//	GET    /healthz                       {"status":"ok","runtimes":[...]}
//	GET    /metrics                       Prometheus metrics (Options.Metrics)
//	GET    /ui/...                        the web console's files (Options.Console; not in the OpenAPI document)
//
// With Options.PreviewDomain set, a request whose Host is a name under it
// is a preview of a sandbox's port, whatever its path, and reaches none of
// these routes (hostroute.go).
//
// Every route, /healthz included, first passes Options.Guard: a request
// whose Host is not loopback or allowed_hosts is 403 "host_not_allowed",
// one from a web page whose origin is not allowed_origins 403
// "origin_not_allowed" (guard.go). With Options.Auth enabled every route but /healthz needs
// "Authorization: Bearer <token>": 401 "unauthorized" without one, 403
// "forbidden" with a token of no owner; the request then acts for the
// token's owner, who sees only their own sandboxes.
//
// Path parameters become request fields ({id} is sandbox_id, {name} is name,
// ?wait is wait), set on the decoded request (functions.Params); a body
// that already holds a different value is S001.
//
// A streaming function (functions.Stream) answers 200 with its events as
// they come: Server-Sent Events when the request accepts
// text/event-stream, else NDJSON (application/x-ndjson); see events.go.
// An error before the first event is an error envelope, as for any call.
//
// Every success is 200 with the result as the body, creation included: the
// generic function route answers the same way, and clients read the body,
// not the status. Errors carry the status of their class
// (envelope.HTTPStatus) and the body {"error": <envelope>}. An unknown
// function id is 404 with code "function_not_found"; an unknown route is 404
// "route_not_found"; a known route with the wrong method is 405
// "method_not_allowed".
//
// Exec through /v1/sandboxes/{id}/exec follows REST semantics (the table's
// hutch::exec): a timeout is a 200 result with timed_out set and the
// output captured so far. Through /v1/functions/sandbox::exec it follows
// the contract: a timeout is S200.
package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/budget"
	"github.com/hutch-dev/hutch/internal/envelope"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/webguard"
)

// DefaultMaxBodyBytes is the request body limit when Options leaves it zero.
const DefaultMaxBodyBytes = 16 << 20

// Options configure the transport.
type Options struct {
	// Logger receives one debug record per request and an error record per
	// recovered panic; nil discards.
	Logger *slog.Logger
	// Version, when set, is reported by /healthz.
	Version string
	// Runtimes are the isolation runtimes this daemon offers, reported by
	// /healthz.
	Runtimes []runtime.Info
	// MaxBodyBytes limits request bodies; 0 means DefaultMaxBodyBytes.
	// A larger body is S001.
	MaxBodyBytes int64
	// issue 38: BodyBudget, when set, bounds the bodies of all requests in
	// flight, in all and per owner (NewBodyBudget); past it a request is
	// S400.
	BodyBudget *budget.Budget
	// Auth, when enabled, maps the bearer token every route but /healthz
	// needs to the owner the request acts for (auth.go).
	Auth *auth.Tokens
	// Metrics, when set, serves GET /metrics (Prometheus text format).
	Metrics http.Handler
	// Console, when set, serves GET /ui and /ui/... (the web console,
	// internal/console): static files behind the guard, without the bearer
	// check (the pages hold no data; their API calls carry the token).
	Console http.Handler
	// MCP, when set, serves MCP's streamable HTTP transport at /mcp,
	// behind the guard and the bearer token check (mcp.go).
	MCP http.Handler
	// Ports, when set, serves preview URLs of sandboxes' exposed ports
	// (preview.go).
	Ports Ports
	// PreviewDomain, when set, sends every request whose Host is a name
	// under it to the host route of preview URLs, never to the API's
	// routes (hostroute.go).
	PreviewDomain string
	// Guard decides which Hosts and Origins may reach any route, /healthz
	// included (guard.go); nil allows loopback Hosts and no foreign Origin.
	Guard *webguard.Policy
	// Front, when set, wraps the whole handler: it sees every request
	// first and passes the ones it does not serve to the handler it is
	// given (the E2B-compatible transport, internal/e2bapi). Under
	// PreviewDomain it may take only hosts of its own ports: any other
	// request there is the preview's, whatever its path or headers.
	Front func(next http.Handler) http.Handler
	// ReadTimeout, WriteTimeout and IdleTimeout are the connection
	// timeouts of NewServer's http.Server; the handler moves the read and
	// write deadlines per route (deadlines.go). 0 is no bound.
	ReadTimeout, WriteTimeout, IdleTimeout time.Duration
}

// headerTimeout bounds reading a request's headers (less when
// Options.ReadTimeout is shorter).
const headerTimeout = 10 * time.Second

// NewServer returns an http.Server of the REST handler over table, with
// opts' connection timeouts.
func NewServer(table *functions.Table, opts Options) *http.Server {
	header := headerTimeout
	if opts.ReadTimeout > 0 {
		header = min(header, opts.ReadTimeout)
	}
	return &http.Server{
		Handler:           New(table, opts),
		ReadHeaderTimeout: header,
		ReadTimeout:       opts.ReadTimeout,
		WriteTimeout:      opts.WriteTimeout,
		IdleTimeout:       opts.IdleTimeout,
	}
}

// New returns the REST handler over table.
func New(table *functions.Table, opts Options) http.Handler {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	s := &server{table: table, log: opts.Logger, maxBody: opts.MaxBodyBytes, bodies: opts.BodyBudget, version: opts.Version, runtimes: opts.Runtimes,
		auth: opts.Auth, metrics: opts.Metrics, mcp: opts.MCP, ports: opts.Ports, previewDomain: opts.PreviewDomain, guard: opts.Guard,
		readTimeout: opts.ReadTimeout, writeTimeout: opts.WriteTimeout}
	mux := http.NewServeMux()
	s.serveRoutes(mux, s.routes())
	mux.Handle("/", s.wrap(routeNotFound, true))
	if opts.Console != nil {
		mux.Handle("GET /ui", opts.Console)
		mux.Handle("GET /ui/", opts.Console)
	}
	h := s.hostRoute(headerRoute(s.guarded(opts.Guard, mux)))
	if opts.Front != nil {
		h = opts.Front(h)
	}
	return h
}

// routes is the REST handler's table; docs/openapi.json describes each
// (openapi.go).
func (s *server) routes() []route {
	routes := []route{
		s.fnRoute("POST", "/v1/sandboxes", routeDoc{fn: api.FnCreate, body: true}),
		s.fnRoute("GET", "/v1/sandboxes/{id}", routeDoc{fn: api.FnGet}, sandboxParam),
		s.fnRoute("DELETE", "/v1/sandboxes/{id}", routeDoc{fn: api.FnStop, query: []queryParam{q("wait", "boolean", "answer once it has stopped")}}, sandboxParam, waitParam),
		{"POST", "/v1/sandboxes/{id}/exec", s.exec, false, routeDoc{fn: api.FnExecResult, body: true, summary: "Execute a command (sandbox::exec with REST semantics: a timeout is a result); with Accept: text/event-stream or ?stream=true, sandbox::exec::stream's events", query: []queryParam{q("stream", "boolean", "stream the output as events")}}},
		s.fnRoute("GET", "/v1/sandboxes/{id}/metrics", routeDoc{fn: api.FnMetrics}, sandboxParam),
		{"POST", "/v1/sandboxes/{id}/fs/{op}", s.fsOp, false, routeDoc{summary: "A filesystem operation: the body is sandbox::fs::{op}'s request (op: ls, stat, mkdir, write, read, rm, mv, chmod, grep, sed)", raw: "application/json", rawBody: "application/json"}},
		{"PUT", filesPath, s.upload, false, routeDoc{fn: api.FnFsWrite, summary: "Upload a file: the body is its bytes, streamed", rawBody: "application/octet-stream", query: []queryParam{q("path", "string", "absolute path"), q("mode", "string", "octal mode"), q("parents", "boolean", "make missing directories"), q("user", "string", "as this user of the image (name or uid[:gid])")}}},
		{"GET", filesPath, s.download, false, routeDoc{summary: "Download a file: its bytes, streamed (sandbox::fs::download)", raw: "application/octet-stream", query: []queryParam{q("path", "string", "absolute path"), q("user", "string", "as this user of the image (name or uid[:gid])")}}},
		{"POST", "/v1/functions/{function_id}", s.function, false, routeDoc{summary: "Call any function of the table by id: the body is its request; a streaming function answers its events (SSE or NDJSON)", raw: "application/json", rawBody: "application/json"}},
		{"GET", "/v1/functions", s.describe, false, routeDoc{fn: api.FnFunctionsList, query: []queryParam{q("include_internal", "boolean", "list engine::* too")}}},
		{"GET", "/v1/functions/{function_id}", s.describe, false, routeDoc{summary: "Describe one function: its description and request and response JSON Schemas (engine::functions::info)", raw: "application/json"}},
		// {name...} keeps OCI refs with slashes in one parameter.
		s.fnRoute("GET", "/v1/images/{name...}", routeDoc{fn: api.FnImageStatus}, nameParam),
		s.fnRoute("POST", "/v1/images/{name...}", routeDoc{fn: api.FnImagePull}, nameParam),
		s.fnRoute("DELETE", "/v1/images/{name...}", routeDoc{fn: api.FnImageRemove}, nameParam),
		s.fnRoute("GET", "/v1/images", routeDoc{fn: api.FnImageList}),
		s.fnRoute("GET", "/v1/catalog", routeDoc{fn: api.FnCatalogList}),
		{"GET", "/healthz", s.health, true, routeDoc{summary: "Liveness, version and runtimes (no token needed)", raw: "application/json"}},
		{"GET", "/metrics", s.prometheus, false, routeDoc{summary: "Prometheus metrics", raw: "text/plain"}},
	}
	routes = append(routes, s.processRoutes()...)
	routes = append(routes, s.stateRoutes()...)
	routes = append(routes, s.eventRoutes()...)
	routes = append(routes, s.jobRoutes()...)
	routes = append(routes, s.interpreterRoutes()...)
	routes = append(routes, s.portRoutes()...)
	routes = append(routes, s.networkRoutes()...)
	routes = append(routes, s.envRoutes()...)
	routes = append(routes, s.watchRoute())
	routes = append(routes, s.volumeRoutes()...)
	routes = append(routes, s.gitRoutes()...)
	routes = append(routes, s.archiveRoutes()...)
	routes = append(routes, s.previewRoutes()...)
	routes = append(routes, s.quotaRoutes()...)  // issue 38
	routes = append(routes, s.secretRoutes()...) // issue 37
	// issue 39: template builds, their log as SSE
	routes = append(routes, s.fnRoute("POST", "/v1/templates/build", routeDoc{fn: api.FnTemplateBuild, body: true, stream: true}))
	// issue 39: a build's cancel
	routes = append(routes, s.fnRoute("DELETE", "/v1/templates/build/{name}", routeDoc{fn: api.FnTemplateBuildCancel}, nameParam))
	routes = append(routes,
		route{"POST", "/mcp", s.serveMCP, false, routeDoc{summary: "MCP's streamable HTTP transport: a JSON-RPC message", raw: "text/event-stream", rawBody: "application/json"}},
		route{"GET", "/mcp", s.serveMCP, false, routeDoc{summary: "MCP's streamable HTTP transport: the session's event stream", raw: "text/event-stream"}},
		route{"DELETE", "/mcp", s.serveMCP, false, routeDoc{summary: "MCP's streamable HTTP transport: end the session", raw: "application/json"}})
	return append(routes, route{"GET", "/openapi.json", s.openAPI, false, routeDoc{summary: "This document", raw: "application/json"}})
}

// serveRoutes registers routes on mux, with the 405 answers of their
// paths' other methods.
func (s *server) serveRoutes(mux *http.ServeMux, routes []route) {
	allowed := map[string][]string{}
	var paths []string
	for _, rt := range routes {
		mux.Handle(rt.method+" "+rt.path, s.wrap(rt.h, rt.public))
		if _, ok := allowed[rt.path]; !ok {
			paths = append(paths, rt.path)
		}
		allowed[rt.path] = append(allowed[rt.path], rt.method)
	}
	// The other methods of a route's path are 405. Each is registered
	// with its method: a pattern without one would conflict with a
	// route of another method whose path has a wildcard there
	// (DELETE /v1/webhooks/{webhook_id} and /v1/webhooks/deliveries).
	for _, p := range paths {
		for _, m := range otherMethods(allowed[p]) {
			mux.Handle(m+" "+p, s.wrap(methodNotAllowed(strings.Join(allowed[p], ", ")), true))
		}
	}
}

// route is one entry of the REST handler's table, with its documentation
// (docs/openapi.json, openapi.go).
type route struct {
	method, path string
	h            handlerFunc
	public       bool
	doc          routeDoc
}

// handlerFunc serves one route: it gets the request and its body (nil when
// empty) and returns the result to encode, or an error.
type handlerFunc func(r *http.Request, body []byte) (any, error)

type server struct {
	table   *functions.Table
	log     *slog.Logger
	maxBody int64
	bodies  *budget.Budget // issue 38
	version string
	// runtimes are Options.Runtimes, for /healthz.
	runtimes []runtime.Info
	auth     *auth.Tokens // nil when no token is required
	metrics  http.Handler // nil when /metrics is off
	mcp      http.Handler // nil when /mcp is off
	ports    Ports        // nil when previews are off
	// previewDomain is Options.PreviewDomain ("" when the host route is
	// off); guard is Options.Guard, whose Origin rules the host route
	// applies itself.
	previewDomain string
	guard         *webguard.Policy
	// previews keeps the transports of the ports reached (preview.go).
	previews portTransports
	// readTimeout and writeTimeout move the connection's deadlines.
	readTimeout, writeTimeout time.Duration
}

// fnRoute is a route that calls the function its documentation names
// (d.fn) with the URL's params.
func (s *server) fnRoute(method, path string, d routeDoc, params ...paramFunc) route {
	return route{method: method, path: path, h: s.call(d.fn, params...), doc: d}
}

// call dispatches to function id with the URL's params.
func (s *server) call(id string, params ...paramFunc) handlerFunc {
	return func(r *http.Request, body []byte) (any, error) {
		var p functions.Params
		for _, set := range params {
			if err := set(r, &p); err != nil {
				return nil, err
			}
		}
		return s.dispatch(r, id, body, p)
	}
}

// function dispatches to any function of the table by id.
func (s *server) function(r *http.Request, body []byte) (any, error) {
	return s.dispatch(r, r.PathValue("function_id"), body, functions.Params{})
}

// dispatch runs function id; a stream becomes an event stream (events.go).
func (s *server) dispatch(r *http.Request, id string, body []byte, p functions.Params) (any, error) {
	res, err := s.table.Call(r.Context(), id, body, p)
	if st, ok := res.(*functions.Stream); ok {
		return s.events(r, st), err
	}
	return res, err
}

// health is /healthz's answer. Auth says requests need a bearer token
// (api_tokens), so a client such as the console knows whether to ask for
// one before it calls anything else.
type health struct {
	Status  string `json:"status"`
	Version string `json:"version,omitempty"`
	Auth    bool   `json:"auth"`
	// Runtimes are the runtimes this daemon offers, and how.
	Runtimes []runtime.Info `json:"runtimes,omitempty"`
}

func (s *server) health(*http.Request, []byte) (any, error) {
	return health{Status: "ok", Version: s.version, Auth: s.auth.Enabled(), Runtimes: s.runtimes}, nil
}

// routeError is an error answered with a fixed status and envelope, for
// conditions of the transport itself that have no S-code.
type routeError struct {
	status int
	env    api.ErrorEnvelope
	allow  string // Allow header of a 405
}

func (e *routeError) Error() string { return e.env.Message }

func transportError(status int, code, msg string) *routeError {
	return &routeError{status: status, env: api.ErrorEnvelope{Type: string(errdefs.ClassValidation), Code: code, Message: msg}}
}

func routeNotFound(r *http.Request, _ []byte) (any, error) {
	return nil, transportError(http.StatusNotFound, "route_not_found", "no route for "+r.Method+" "+r.URL.Path)
}

func methodNotAllowed(allow string) handlerFunc {
	return func(r *http.Request, _ []byte) (any, error) {
		e := transportError(http.StatusMethodNotAllowed, "method_not_allowed",
			r.Method+" is not allowed on "+r.URL.Path+" (allowed: "+allow+")")
		e.allow = allow
		return nil, e
	}
}

// errorResponse is the one mapping from an error to status and envelope.
func errorResponse(err error) (int, *routeError) {
	var re *routeError
	if errors.As(err, &re) {
		return re.status, re
	}
	return envelope.HTTPStatus(err), &routeError{env: envelope.From(err)}
}

// wrap adapts a handlerFunc: auth, body limit, panic recovery, encoding,
// and a debug log record per request.
func (s *server) wrap(h handlerFunc, public bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		r = withTrace(r)
		status := s.serve(w, r, h, public)
		if s.log.Enabled(r.Context(), slog.LevelDebug) {
			s.log.LogAttrs(r.Context(), slog.LevelDebug, "http request",
				slog.String("method", r.Method), slog.String("path", r.URL.Path),
				slog.Int("status", status), slog.Duration("duration", time.Since(start)))
		}
	})
}

func (s *server) serve(w http.ResponseWriter, r *http.Request, h handlerFunc, public bool) (status int) {
	wrote := false
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		if v == http.ErrAbortHandler {
			panic(v)
		}
		s.log.Error("panic serving request", "method", r.Method, "path", r.URL.Path,
			"panic", v, "stack", string(debug.Stack()))
		status = http.StatusInternalServerError
		if !wrote {
			status = s.writeError(w, errdefs.New(errdefs.CodeInternal, "internal error: %v", v))
		}
	}()

	if !public {
		var err error
		if r, err = s.authenticate(w, r); err != nil {
			return s.writeError(w, err)
		}
	}
	in := getBuffer()
	defer putBuffer(in)
	body, release, err := s.readBody(w, r, in)
	defer release()
	if err != nil {
		return s.writeError(w, err)
	}
	s.computing(w)
	res, err := h(r, body)
	wrote = true
	s.answering(w)
	if err != nil {
		return s.writeError(w, err)
	}
	if st, ok := res.(streamer); ok {
		return st.stream(w, s.progressAnswer(w))
	}
	out := getBuffer()
	defer putBuffer(out)
	return writeJSON(w, http.StatusOK, res, out)
}

// readBody reads the request body into buf, enforcing the size limit; an
// absent body is nil. buf grows with the bytes that arrive, never with the
// length a client declares. A route that streams its body reads it itself,
// through a progressReader, and gets nil.
// Its bytes count against the body budget (Options.BodyBudget) until
// release, which is always set.
func (s *server) readBody(w http.ResponseWriter, r *http.Request, buf *bytes.Buffer) (body []byte, release func(), err error) {
	release = func() {}
	if r.Body == nil || r.Body == http.NoBody {
		return nil, release, nil
	}
	if streamed(r) {
		r.Body = s.progressBody(w, r.Body)
		return nil, release, nil
	}
	if r.ContentLength > s.maxBody {
		return nil, release, tooLarge(s.maxBody)
	}
	var src io.Reader = http.MaxBytesReader(w, r.Body, s.maxBody)
	if s.bodies != nil { // issue 38: the daemon-wide body budget
		br := &budgetReader{r: src, b: s.bodies, owner: auth.OwnerFrom(r.Context())}
		src, release = br, br.release
	}
	if _, err := buf.ReadFrom(src); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, release, tooLarge(s.maxBody)
		}
		if errdefs.As(err).Code == errdefs.CodeCapacity {
			return nil, release, err
		}
		return nil, release, errdefs.Malformed("reading request body: %v", err)
	}
	return buf.Bytes(), release, nil
}

func tooLarge(limit int64) error {
	return errdefs.Malformed("request body larger than %d bytes", limit)
}

type errorBody struct {
	Error *api.ErrorEnvelope `json:"error"`
}

func (s *server) writeError(w http.ResponseWriter, err error) int {
	status, re := errorResponse(err)
	if re.allow != "" {
		w.Header().Set("Allow", re.allow)
	}
	buf := getBuffer()
	defer putBuffer(buf)
	return writeJSON(w, status, errorBody{Error: &re.env}, buf)
}

var jsonContentType = []string{"application/json"}

// writeJSON encodes v into buf and writes it with a Content-Length, so
// small answers go out in one write on a kept-alive connection.
func writeJSON(w http.ResponseWriter, status int, v any, buf *bytes.Buffer) int {
	buf.Reset()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		buf.Reset()
		status = http.StatusInternalServerError
		env := envelope.From(errdefs.New(errdefs.CodeInternal, "encoding response: %v", err))
		_ = json.NewEncoder(buf).Encode(errorBody{Error: &env})
	}
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h["Content-Length"] = []string{strconv.Itoa(buf.Len())}
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
	return status
}

// maxPooled bounds the buffers kept for reuse, so one large exec output
// does not pin memory.
const maxPooled = 1 << 20

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func getBuffer() *bytes.Buffer {
	b := bufPool.Get().(*bytes.Buffer)
	b.Reset()
	return b
}

func putBuffer(b *bytes.Buffer) {
	if b.Cap() <= maxPooled {
		bufPool.Put(b)
	}
}

// otherMethods are the methods of HTTP that a path served with methods
// does not take. HEAD is left out: a GET pattern takes it, so one of its
// own would conflict with the GET of a more specific path.
func otherMethods(methods []string) []string {
	var out []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete,
		http.MethodOptions, http.MethodConnect, http.MethodTrace} {
		if !slices.Contains(methods, m) {
			out = append(out, m)
		}
	}
	return out
}

// describe is engine::functions::list, or with {function_id}
// engine::functions::info of it.
func (s *server) describe(r *http.Request, _ []byte) (any, error) {
	if id := r.PathValue("function_id"); id != "" {
		res, err := functions.Call[api.FunctionsResponse](r.Context(), s.table, api.FnFunctionsInfo, api.FunctionsInfoRequest{FunctionID: id})
		if err != nil {
			return nil, err
		}
		return res.Functions[0], nil
	}
	internal, _, err := queryBool(r, "include_internal")
	if err != nil {
		return nil, err
	}
	return functions.Invoke(r.Context(), s.table, api.FnFunctionsList, api.FunctionsListRequest{IncludeInternal: internal})
}
