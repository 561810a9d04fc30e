package httpapi

// The process routes: conveniences over sandbox::process::* and the
// streamed exec, each the function of the same name with the sandbox and
// pid taken from the URL. GET routes take their few fields from the query.

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
)

// processRoutes are the routes of processes, for New's table.
func (s *server) processRoutes() []route {
	const one = "/v1/sandboxes/{id}/processes/{pid}"
	return []route{
		s.fnRoute("POST", "/v1/sandboxes/{id}/processes", routeDoc{fn: api.FnProcessStart, body: true}, sandboxParam),
		s.fnRoute("GET", "/v1/sandboxes/{id}/processes", routeDoc{fn: api.FnProcessList}, sandboxParam),
		s.fnRoute("GET", one, routeDoc{fn: api.FnProcessGet}, sandboxParam, pidParam),
		s.fnRoute("DELETE", one, routeDoc{fn: api.FnProcessKill}, sandboxParam, pidParam),
		{"GET", one + "/output", s.fromQuery(api.FnProcessOutput, "stdout_offset", "stderr_offset", "follow"), false, routeDoc{fn: api.FnProcessOutput, stream: true, summary: "A process's output from offsets; with follow=true a stream of its events until it exits", query: []queryParam{q("stdout_offset", "integer", ""), q("stderr_offset", "integer", ""), q("follow", "boolean", "stream until it exits")}}},
		s.fnRoute("POST", one+"/stdin", routeDoc{fn: api.FnProcessStdin, body: true}, sandboxParam, pidParam),
		s.fnRoute("POST", one+"/signal", routeDoc{fn: api.FnProcessSignal, body: true}, sandboxParam, pidParam),
		{"GET", one + "/wait", s.fromQuery(api.FnProcessWait, "timeout_ms"), false, routeDoc{fn: api.FnProcessWait, query: []queryParam{q("timeout_ms", "integer", "")}}},
		s.fnRoute("POST", one+"/wait", routeDoc{fn: api.FnProcessWait, body: true}, sandboxParam, pidParam),
		s.fnRoute("POST", one+"/resize", routeDoc{fn: api.FnProcessResize, body: true}, sandboxParam, pidParam),
		{"GET", "/v1/sandboxes/{id}/pty", s.terminal, false, routeDoc{summary: "A terminal over a WebSocket: binary frames are terminal bytes, text frames JSON control (resize, exit)", raw: "application/octet-stream", query: []queryParam{q("cols", "integer", ""), q("rows", "integer", ""), q("cmd", "string", "the command (a login shell by default)"), q("cwd", "string", ""), q("env", "string", "KEY=VALUE (repeatable)")}}},
		{"GET", "/v1/sandboxes/{id}/logs", s.logs, false, routeDoc{fn: api.FnProcessLogs, stream: true, query: []queryParam{q("follow", "boolean", "follow until the sandbox stops"), q("tag", "string", "one tag's processes")}}},
	}
}

// logs is sandbox::process::logs with ?follow= and ?tag= from the query.
func (s *server) logs(r *http.Request, _ []byte) (any, error) {
	follow, _, err := queryBool(r, "follow")
	if err != nil {
		return nil, err
	}
	body, _ := json.Marshal(api.LogsRequest{SandboxID: r.PathValue("id"), Tag: r.URL.Query().Get("tag"), Follow: follow})
	return s.dispatch(r, api.FnProcessLogs, body, functions.Params{})
}

// pidParam is {pid} as pid.
func pidParam(r *http.Request, p *functions.Params) error {
	pid, err := strconv.Atoi(r.PathValue("pid"))
	if err != nil || pid <= 0 {
		return errdefs.Malformed("pid %q is not a process id", r.PathValue("pid"))
	}
	p.Pid = pid
	return nil
}

// fromQuery dispatches a GET route to function id with a payload of the
// named query parameters: numbers, or booleans ("follow").
func (s *server) fromQuery(id string, keys ...string) handlerFunc {
	return func(r *http.Request, _ []byte) (any, error) {
		payload := map[string]any{}
		q := r.URL.Query()
		for _, k := range keys {
			if !q.Has(k) {
				continue
			}
			v := q.Get(k)
			if k == "follow" {
				b, _, err := queryBool(r, k)
				if err != nil {
					return nil, err
				}
				payload[k] = b
				continue
			}
			n, err := strconv.ParseUint(v, 10, 63)
			if err != nil {
				return nil, errdefs.Malformed("query parameter %s must be a number, not %q", k, v)
			}
			payload[k] = n
		}
		body, _ := json.Marshal(payload)
		var p functions.Params
		for _, set := range []paramFunc{sandboxParam, pidParam} {
			if err := set(r, &p); err != nil {
				return nil, err
			}
		}
		return s.dispatch(r, id, body, p)
	}
}

// exec is the exec route: sandbox::exec::stream when the client asks for
// a stream (Accept: text/event-stream or the framed form, or
// ?stream=true), else hutch::exec.
func (s *server) exec(r *http.Request, body []byte) (any, error) {
	stream, _, err := queryBool(r, "stream")
	if err != nil {
		return nil, err
	}
	id := api.FnExecResult
	if accept := r.Header.Get("Accept"); stream || strings.Contains(accept, sseType) || strings.Contains(accept, framesType) {
		id = api.FnExecStream
	}
	return s.call(id, sandboxParam)(r, body)
}
