// Package codeinterp is E2B's code interpreter (the server on port 49999
// of an E2B sandbox) over hutch's interpreter contexts
// (sandbox::interpreter::*):
//
//	POST   /execute                {code, context_id?, language?, env_vars?} → NDJSON lines (execute.go)
//	POST   /contexts               {language, cwd} → {id, language, cwd}
//	                               (python, javascript, typescript, bash; another is 404)
//	GET    /contexts               [{id, language, cwd}]
//	DELETE /contexts/{id}          204
//	POST   /contexts/{id}/restart  204
//
// The sandbox is the request's E2b-Sandbox-Id header and the owner the
// context's (auth.WithOwner), both set by e2bapi's router once it has
// checked the sandbox's token. A context of another sandbox is not found
// here, even the same owner's.
package codeinterp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/envelope"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/interp"
	"github.com/hutch-dev/hutch/internal/safetext"
)

// Options configure the handler.
type Options struct {
	Logger *slog.Logger
	// WriteTimeout bounds each write of an answer (each NDJSON line): a
	// client that reads slower than that is cut off.
	WriteTimeout time.Duration
}

// maxBodyBytes bounds a request body (a cell's code is bounded further
// by the interpreter).
const maxBodyBytes = 4 << 20

type server struct {
	t    *functions.Table
	opts Options
}

// New returns the code interpreter's handler over table.
func New(table *functions.Table, opts Options) http.Handler {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &server{t: table, opts: opts}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /execute", s.execute)
	mux.HandleFunc("POST /contexts", s.createContext)
	mux.HandleFunc("GET /contexts", s.listContexts)
	mux.HandleFunc("DELETE /contexts/{id}", s.deleteContext)
	mux.HandleFunc("POST /contexts/{id}/restart", s.restartContext)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, errdefs.New(errdefs.CodeNotFound, "the code interpreter has no route %s %s", r.Method, safetext.Clip(r.URL.Path, 64)))
	})
	return mux
}

// e2bContext is a context as E2B's SDK reads it.
type e2bContext struct {
	ID       string `json:"id"`
	Language string `json:"language"`
	Cwd      string `json:"cwd"`
}

func contextOf(c api.ContextInfo) e2bContext {
	return e2bContext{ID: c.ContextID, Language: c.Language, Cwd: c.Cwd}
}

// language maps E2B's language names onto hutch's.
func language(l string) (string, error) {
	switch l {
	case "", "python", "python3":
		return interp.Python, nil
	case "js", "javascript":
		return interp.JavaScript, nil
	case "bash", "sh":
		return interp.Bash, nil
	case "ts", "typescript": // issue 40
		return interp.TypeScript, nil
	}
	return "", unsupportedLanguage(l)
}

// unsupportedLanguage is the answer for a language hutch has no kernel
// of (r, java, ...): 404, the one status whose body E2B's SDK shows
// (a NotFoundError with it), as a kernel that is not there.
func unsupportedLanguage(l string) error {
	return &languageError{errdefs.Malformed("language %q: hutch's code interpreter has no kernel for it (it runs python, javascript, typescript and bash, each where the image carries the runtime)", safetext.Clip(l, 64))}
}

// languageError is a language with no kernel; its status is 404.
type languageError struct{ error }

func (e *languageError) Unwrap() error { return e.error }

// decode reads r's JSON body (bounded) into v.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		return errdefs.Malformed("reading the request body (at most %d bytes): %v", maxBodyBytes, err)
	}
	if len(body) == 0 {
		return nil
	}
	if err := json.Unmarshal(body, v); err != nil {
		return errdefs.Malformed("request body: %v", err)
	}
	return nil
}

func (s *server) createContext(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Language string `json:"language"`
		Cwd      string `json:"cwd"`
	}
	if err := decode(w, r, &in); err != nil {
		writeError(w, err)
		return
	}
	lang, err := language(in.Language)
	if err != nil {
		writeError(w, err)
		return
	}
	s.computing(w)
	res, err := functions.Call[api.ContextInfo](r.Context(), s.t, api.FnContextCreate,
		api.ContextCreateRequest{SandboxID: sandboxOf(r), Language: lang, Cwd: in.Cwd})
	if err != nil {
		s.answer(w, 0, nil, err)
		return
	}
	s.answer(w, http.StatusOK, contextOf(res), nil)
}

func (s *server) listContexts(w http.ResponseWriter, r *http.Request) {
	cs, err := s.contexts(r.Context(), sandboxOf(r))
	out := make([]e2bContext, 0, len(cs))
	for _, c := range cs {
		out = append(out, contextOf(c))
	}
	s.answer(w, http.StatusOK, out, err)
}

// contexts lists the sandbox's contexts.
func (s *server) contexts(ctx context.Context, id string) ([]api.ContextInfo, error) {
	res, err := functions.Call[api.ContextListResponse](ctx, s.t, api.FnContextList, api.ContextListRequest{SandboxID: id})
	return res.Contexts, err
}

func (s *server) deleteContext(w http.ResponseWriter, r *http.Request) {
	s.onContext(w, r, api.FnContextDelete)
}

func (s *server) restartContext(w http.ResponseWriter, r *http.Request) {
	s.onContext(w, r, api.FnContextRestart)
}

// onContext runs function id on the context {id} of the request's
// sandbox: 404 when the sandbox has no such context.
func (s *server) onContext(w http.ResponseWriter, r *http.Request, id string) {
	s.computing(w)
	cs, err := s.contexts(r.Context(), sandboxOf(r))
	if err == nil && !slices.ContainsFunc(cs, func(c api.ContextInfo) bool { return c.ContextID == r.PathValue("id") }) {
		err = errdefs.New(errdefs.CodeNoContext, "sandbox %s has no context %s", sandboxOf(r), safetext.Clip(r.PathValue("id"), 64))
	}
	if err == nil {
		_, err = functions.Invoke(r.Context(), s.t, id, api.ContextRequest{ContextID: r.PathValue("id")})
	}
	s.answer(w, http.StatusNoContent, nil, err)
}

func sandboxOf(r *http.Request) string { return r.Header.Get(api.HeaderE2BSandboxID) }

// computing lifts the connection's deadlines while the answer is
// computed (a context's interpreter may take a while to start).
func (s *server) computing(w http.ResponseWriter) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
}

// answer writes v with status, or err; the write has WriteTimeout.
func (s *server) answer(w http.ResponseWriter, status int, v any, err error) {
	if s.opts.WriteTimeout > 0 {
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout))
	}
	switch {
	case err != nil:
		writeError(w, err)
	case v == nil:
		w.WriteHeader(status)
	default:
		writeJSON(w, status, v)
	}
}

// writeError answers err as the code interpreter does: its status, and a
// JSON body {name, value, traceback} that the SDK shows as the message.
func writeError(w http.ResponseWriter, err error) {
	env := envelope.From(err)
	status := envelope.HTTPStatus(err)
	var le *languageError
	if errors.As(err, &le) || errdefs.Is(err, errdefs.CodeNoInterpreter) { // no kernel, or no runtime for it in the image
		status = http.StatusNotFound
	}
	writeJSON(w, status, map[string]string{"name": env.Code, "value": env.Message, "traceback": ""})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
