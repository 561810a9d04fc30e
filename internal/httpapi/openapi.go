package httpapi

// The OpenAPI 3.1 document of the REST handler: each route's entry in
// routeDocs names the function behind it, whose request and result JSON
// Schemas (inferred from the Go types, functions.SchemaOf) become the
// operation's body and answer. A test keeps routeDocs and the route table
// in step, and docs/openapi.json the same as what /openapi.json serves.

import (
	"encoding/json"
	"net/http"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/functions"
)

// routeDoc documents one route.
type routeDoc struct {
	// fn is the function whose description and schemas describe the
	// route; "" for a route of its own (summary says what it does).
	fn      string
	summary string
	query   []queryParam
	// body says the request body is the function's request (the path's
	// parameters filled from the URL).
	body bool
	// stream says the answer is the function's events: Server-Sent
	// Events with Accept: text/event-stream, else NDJSON.
	stream bool
	// raw is the content type of an answer that is not JSON.
	raw string
	// rawBody is the content type of a request body that is not JSON.
	rawBody string
}

type queryParam struct{ name, typ, desc string }

func q(name, typ, desc string) queryParam { return queryParam{name, typ, desc} }

// Query parameters shared by several routes.
var (
	eventQuery = []queryParam{q("sandbox_id", "string", "one sandbox's events"), q("type", "string", "a type or pattern (sandbox.*)"),
		q("since", "string", "RFC 3339 time"), q("after", "string", "an event id, or now"), q("limit", "integer", "at most this many (1000)")}
	jobQuery = []queryParam{q("state", "string", "queued, running, succeeded, failed, dead or cancelled"), q("sandbox_id", "string", "one sandbox's jobs"),
		q("limit", "integer", "at most this many (1000)")}
)

// routeDocs documents every route, by "METHOD PATH".
var routeDocs = map[string]routeDoc{
	"POST /v1/sandboxes":                             {fn: api.FnCreate, body: true},
	"GET /v1/sandboxes":                              {fn: api.FnList, query: []queryParam{q("state", "string", "running or paused"), q("metadata", "string", "key=value (repeatable)"), q("limit", "integer", "page size"), q("next_token", "string", "the next page")}},
	"GET /v1/sandboxes/{id}":                         {fn: api.FnGet},
	"DELETE /v1/sandboxes/{id}":                      {fn: api.FnStop, query: []queryParam{q("wait", "boolean", "answer once it has stopped")}},
	"POST /v1/sandboxes/{id}/exec":                   {fn: api.FnExecResult, body: true, summary: "Execute a command (sandbox::exec with REST semantics: a timeout is a result); with Accept: text/event-stream or ?stream=true, sandbox::exec::stream's events", query: []queryParam{q("stream", "boolean", "stream the output as events")}},
	"GET /v1/sandboxes/{id}/metrics":                 {fn: api.FnMetrics},
	"GET /v1/sandboxes/{id}/metrics/stream":          {fn: api.FnMetricsStream, stream: true, query: []queryParam{q("interval_ms", "integer", "100 to 60000 (1000)")}},
	"POST /v1/sandboxes/{id}/fs/{op}":                {summary: "A filesystem operation: the body is sandbox::fs::{op}'s request (op: ls, stat, mkdir, write, read, rm, mv, chmod, grep, sed)", raw: "application/json", rawBody: "application/json"},
	"PUT /v1/sandboxes/{id}/files":                   {fn: api.FnFsWrite, summary: "Upload a file: the body is its bytes, streamed", rawBody: "application/octet-stream", query: []queryParam{q("path", "string", "absolute path"), q("mode", "string", "octal mode"), q("parents", "boolean", "make missing directories"), q("user", "string", "as this user of the image (name or uid[:gid])")}},
	"GET /v1/sandboxes/{id}/files":                   {summary: "Download a file: its bytes, streamed (sandbox::fs::download)", raw: "application/octet-stream", query: []queryParam{q("path", "string", "absolute path"), q("user", "string", "as this user of the image (name or uid[:gid])")}},
	"POST /v1/functions/{function_id}":               {summary: "Call any function of the table by id: the body is its request; a streaming function answers its events (SSE or NDJSON)", raw: "application/json", rawBody: "application/json"},
	"GET /v1/functions":                              {fn: api.FnFunctionsList, query: []queryParam{q("include_internal", "boolean", "list engine::* too")}},
	"GET /v1/functions/{function_id}":                {summary: "Describe one function: its description and request and response JSON Schemas (engine::functions::info)", raw: "application/json"},
	"GET /v1/images/{name}":                          {fn: api.FnImageStatus},
	"POST /v1/images/{name}":                         {fn: api.FnImagePull},
	"DELETE /v1/images/{name}":                       {fn: api.FnImageRemove},
	"GET /v1/images":                                 {fn: api.FnImageList},
	"GET /v1/catalog":                                {fn: api.FnCatalogList},
	"GET /healthz":                                   {summary: "Liveness, version and runtimes (no token needed)", raw: "application/json"},
	"GET /metrics":                                   {summary: "Prometheus metrics", raw: "text/plain"},
	"GET /openapi.json":                              {summary: "This document", raw: "application/json"},
	"POST /mcp":                                      {summary: "MCP's streamable HTTP transport: a JSON-RPC message", raw: "text/event-stream", rawBody: "application/json"},
	"GET /mcp":                                       {summary: "MCP's streamable HTTP transport: the session's event stream", raw: "text/event-stream"},
	"DELETE /mcp":                                    {summary: "MCP's streamable HTTP transport: end the session", raw: "application/json"},
	"POST /v1/sandboxes/{id}/processes":              {fn: api.FnProcessStart, body: true},
	"GET /v1/sandboxes/{id}/processes":               {fn: api.FnProcessList},
	"GET /v1/sandboxes/{id}/processes/{pid}":         {fn: api.FnProcessGet},
	"DELETE /v1/sandboxes/{id}/processes/{pid}":      {fn: api.FnProcessKill},
	"GET /v1/sandboxes/{id}/processes/{pid}/output":  {fn: api.FnProcessOutput, stream: true, summary: "A process's output from offsets; with follow=true a stream of its events until it exits", query: []queryParam{q("stdout_offset", "integer", ""), q("stderr_offset", "integer", ""), q("follow", "boolean", "stream until it exits")}},
	"POST /v1/sandboxes/{id}/processes/{pid}/stdin":  {fn: api.FnProcessStdin, body: true},
	"POST /v1/sandboxes/{id}/processes/{pid}/signal": {fn: api.FnProcessSignal, body: true},
	"GET /v1/sandboxes/{id}/processes/{pid}/wait":    {fn: api.FnProcessWait, query: []queryParam{q("timeout_ms", "integer", "")}},
	"POST /v1/sandboxes/{id}/processes/{pid}/wait":   {fn: api.FnProcessWait, body: true},
	"POST /v1/sandboxes/{id}/processes/{pid}/resize": {fn: api.FnProcessResize, body: true},
	"GET /v1/sandboxes/{id}/pty":                     {summary: "A terminal over a WebSocket: binary frames are terminal bytes, text frames JSON control (resize, exit)", raw: "application/octet-stream", query: []queryParam{q("cols", "integer", ""), q("rows", "integer", ""), q("cmd", "string", "the command (a login shell by default)"), q("cwd", "string", ""), q("env", "string", "KEY=VALUE (repeatable)")}},
	"GET /v1/sandboxes/{id}/logs":                    {fn: api.FnProcessLogs, stream: true, query: []queryParam{q("follow", "boolean", "follow until the sandbox stops"), q("tag", "string", "one tag's processes")}},
	"POST /v1/sandboxes/{id}/pause":                  {fn: api.FnPause, body: true},
	"POST /v1/sandboxes/{id}/resume":                 {fn: api.FnResume, body: true},
	"POST /v1/sandboxes/{id}/timeout":                {fn: api.FnSetTimeout, body: true},
	"POST /v1/sandboxes/{id}/snapshots":              {fn: api.FnSnapshotCreate, body: true},
	"POST /v1/sandboxes/{id}/fork":                   {fn: api.FnFork, body: true},
	"GET /v1/snapshots":                              {fn: api.FnSnapshotList},
	"GET /v1/snapshots/{snapshot_id}":                {fn: api.FnSnapshotGet},
	"DELETE /v1/snapshots/{snapshot_id}":             {fn: api.FnSnapshotDelete},
	"POST /v1/templates":                             {fn: api.FnTemplateCreate, body: true},
	"GET /v1/templates":                              {fn: api.FnTemplateList},
	"GET /v1/templates/{name}":                       {fn: api.FnTemplateGet},
	"DELETE /v1/templates/{name}":                    {fn: api.FnTemplateDelete},
	"GET /v1/events":                                 {fn: api.FnEventsList, query: eventQuery},
	"GET /v1/events/stream":                          {fn: api.FnEventsStream, stream: true, query: eventQuery},
	"POST /v1/events":                                {fn: api.FnEventsPublish, body: true},
	"GET /v1/sandboxes/{id}/events":                  {fn: api.FnEventsList, query: eventQuery},
	"GET /v1/webhooks/deliveries":                    {fn: api.FnWebhookDeliveries},
	"POST /v1/webhooks":                              {fn: api.FnWebhookCreate, body: true},
	"GET /v1/webhooks":                               {fn: api.FnWebhookList},
	"DELETE /v1/webhooks/{webhook_id}":               {fn: api.FnWebhookDelete},
	"POST /v1/sandboxes/{id}/alerts":                 {fn: api.FnAlertCreate, body: true},
	"GET /v1/alerts":                                 {fn: api.FnAlertList, query: []queryParam{q("sandbox_id", "string", ""), q("history", "boolean", "the alerts that fired (sandbox::alert::history)")}},
	"DELETE /v1/alerts/{alert_id}":                   {fn: api.FnAlertDelete},
	"POST /v1/jobs":                                  {fn: api.FnJobSubmit, body: true},
	"GET /v1/jobs":                                   {fn: api.FnJobList, query: jobQuery},
	"GET /v1/jobs/{job_id}":                          {fn: api.FnJobGet},
	"DELETE /v1/jobs/{job_id}":                       {fn: api.FnJobCancel},
	"GET /v1/dlq":                                    {fn: api.FnJobDLQ, query: jobQuery},
	"POST /v1/dlq/{job_id}/retry":                    {fn: api.FnJobRetry},
	"POST /v1/sandboxes/{id}/contexts":               {fn: api.FnContextCreate, body: true},
	"GET /v1/sandboxes/{id}/contexts":                {fn: api.FnContextList},
	"POST /v1/sandboxes/{id}/run-code":               {fn: api.FnRunCode, body: true, stream: true},
	"POST /v1/sandboxes/{id}/packages":               {fn: api.FnInstall, body: true, stream: true},
	"POST /v1/contexts/{context_id}/restart":         {fn: api.FnContextRestart},
	"POST /v1/contexts/{context_id}/interrupt":       {fn: api.FnInterrupt},
	"DELETE /v1/contexts/{context_id}":               {fn: api.FnContextDelete},
	"POST /v1/sandboxes/{id}/ports":                  {fn: api.FnPortExpose, body: true},
	"GET /v1/sandboxes/{id}/ports":                   {fn: api.FnPortList},
	"DELETE /v1/sandboxes/{id}/ports/{port}":         {fn: api.FnPortUnexpose},
	"GET /v1/sandboxes/{id}/forward/{port}":          {summary: "A raw TCP connection to the exposed port, over a WebSocket (binary frames): hutch port-forward", raw: "application/octet-stream"},
}

func init() {
	// The preview routes: any method, the request and answer the
	// sandbox's server's own.
	for _, m := range previewMethods {
		routeDocs[m+" /v1/sandboxes/{id}/ports/{port}/{rest}"] = routeDoc{summary: "The sandbox's exposed port: the request goes to its server as it came (the owner's token needed); the answer is the server's. With preview_domain set, every path of the host {port}-{id}.{preview_domain} reaches the port too (its host_url)", raw: "*/*", rawBody: "*/*"}
		routeDocs[m+" /p/{token}/{rest}"] = routeDoc{summary: "A public port: the request goes to its server as it came (the token in the path is its authority); the answer is the server's", raw: "*/*", rawBody: "*/*"}
	}
}

// docPath is a route's path as OpenAPI writes it: {name...} is {name}.
func docPath(p string) string { return strings.ReplaceAll(p, "...}", "}") }

var pathParam = regexp.MustCompile(`\{([a-z_]+)\}`)

// openAPIDoc builds the document of routes.
func (s *server) openAPIDoc(routes []route) map[string]any {
	schemas := map[string]any{"ErrorEnvelope": json.RawMessage(functions.SchemaOf(reflect.TypeFor[errorBody]()))}
	paths := map[string]map[string]any{}
	for _, rt := range routes {
		p := docPath(rt.path)
		d := routeDocs[rt.method+" "+p]
		op := map[string]any{"operationId": operationID(rt.method, p)}
		var f functions.Function
		if d.fn != "" {
			f, _ = s.table.Lookup(d.fn)
			op["summary"] = f.Description
			op["x-function-id"] = d.fn
		}
		if d.summary != "" {
			op["summary"] = d.summary
		}
		var params []any
		for _, m := range pathParam.FindAllStringSubmatch(p, -1) {
			typ := "string"
			if m[1] == "pid" {
				typ = "integer"
			}
			params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "schema": map[string]any{"type": typ}})
		}
		for _, qp := range d.query {
			param := map[string]any{"name": qp.name, "in": "query", "schema": map[string]any{"type": qp.typ}}
			if qp.desc != "" {
				param["description"] = qp.desc
			}
			params = append(params, param)
		}
		if len(params) > 0 {
			op["parameters"] = params
		}
		name := componentName(d.fn)
		switch {
		case d.body && f.Request != nil:
			schemas[name+"Request"] = json.RawMessage(functions.SchemaOf(f.Request))
			op["requestBody"] = map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": ref(name + "Request")}}}
		case d.rawBody != "":
			op["requestBody"] = map[string]any{"content": map[string]any{d.rawBody: map[string]any{}}}
		}
		ok := map[string]any{"description": "success"}
		switch {
		case d.raw != "":
			ok["content"] = map[string]any{d.raw: map[string]any{}}
		case f.Response != nil:
			schemas[name+"Response"] = json.RawMessage(functions.SchemaOf(f.Response))
			content := map[string]any{"application/json": map[string]any{"schema": ref(name + "Response")}}
			if d.stream {
				ok["description"] = "the function's events (Server-Sent Events with Accept: text/event-stream, else NDJSON), then its final value"
				content = map[string]any{"text/event-stream": map[string]any{}, "application/x-ndjson": map[string]any{}}
				if !strings.HasSuffix(p, "/output") {
					op["x-final-value"] = ref(name + "Response")
				} else {
					content["application/json"] = map[string]any{"schema": ref(name + "Response")}
				}
			}
			ok["content"] = content
		}
		op["responses"] = map[string]any{"200": ok, "default": map[string]any{"description": "an error: its S-code envelope",
			"content": map[string]any{"application/json": map[string]any{"schema": ref("ErrorEnvelope")}}}}
		if !rt.public {
			op["security"] = []any{map[string]any{"bearer": []string{}}}
		}
		if paths[p] == nil {
			paths[p] = map[string]any{}
		}
		paths[p][strings.ToLower(rt.method)] = op
	}
	return map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{"title": "hutch", "version": "1",
			"description": "hutch runs untrusted code in isolated sandboxes. Every route calls a function of one table, also reachable at /v1/functions/{id} and over the engine WebSocket."},
		"paths":      paths,
		"components": map[string]any{"schemas": schemas, "securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer"}}},
	}
}

// operationID names an operation after its method and path.
func operationID(method, p string) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(method))
	for _, part := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '{' || r == '}' || r == '-' || r == '.' || r == '_' }) {
		if part == "v1" {
			continue
		}
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

// componentName is a function id as a schema name: sandbox::fs::read is
// SandboxFsRead.
func componentName(fn string) string {
	var b strings.Builder
	for _, part := range strings.FieldsFunc(fn, func(r rune) bool { return r == ':' || r == '_' }) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

func ref(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }

// openAPI serves the document.
func (s *server) openAPI(*http.Request, []byte) (any, error) {
	return s.openAPIDoc(s.routes()), nil
}

// documentedRoutes lists routeDocs' keys, sorted (for the test).
func documentedRoutes() []string {
	keys := make([]string, 0, len(routeDocs))
	for k := range routeDocs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
