package httpapi

// The OpenAPI 3.1 document of the REST handler: each route of the table
// carries its documentation (route.doc), which names the function behind
// it, whose request and result JSON Schemas (inferred from the Go types,
// functions.SchemaOf) become the operation's body and answer. A test keeps
// docs/openapi.json the same as what /openapi.json serves.

import (
	"encoding/json"
	"net/http"
	"reflect"
	"regexp"
	"strings"

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
	// Events with Accept: text/event-stream, the framed form with its
	// type, else NDJSON.
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

// docPath is a route's path as OpenAPI writes it: {name...} is {name}.
func docPath(p string) string { return strings.ReplaceAll(p, "...}", "}") }

var pathParam = regexp.MustCompile(`\{([a-z_]+)\}`)

// openAPIDoc builds the document of routes.
func (s *server) openAPIDoc(routes []route) map[string]any {
	schemas := map[string]any{"ErrorEnvelope": json.RawMessage(functions.SchemaOf(reflect.TypeFor[errorBody]()))}
	paths := map[string]map[string]any{}
	for _, rt := range routes {
		p := docPath(rt.path)
		d := rt.doc
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
				ok["description"] = "the function's events (Server-Sent Events with Accept: text/event-stream; with Accept: application/x-hutch-frames, NDJSON whose lines with \"bytes\":n are followed by n raw bytes, the event's data or output; else NDJSON), then its final value"
				content = map[string]any{"text/event-stream": map[string]any{}, "application/x-ndjson": map[string]any{}, framesType: map[string]any{}}
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
