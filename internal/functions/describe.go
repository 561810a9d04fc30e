package functions

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// Functions describe themselves: each function's request and result
// schemas are inferred from its Go types (the same inference the MCP
// tools use), once, and served by engine::functions::list and ::info.

// schemas caches the schemas of the types asked for.
var schemas sync.Map // reflect.Type → json.RawMessage

// SchemaOf is the JSON Schema of Go type t (nil for none).
func SchemaOf(t reflect.Type) json.RawMessage {
	if t == nil {
		return nil
	}
	if s, ok := schemas.Load(t); ok {
		return s.(json.RawMessage)
	}
	var raw json.RawMessage
	if s, err := jsonschema.ForType(t, &jsonschema.ForOptions{IgnoreInvalidTypes: true}); err == nil {
		if p, ok := reflect.New(t).Interface().(schemaPatcher); ok {
			p.PatchSchema(s)
		}
		raw, _ = json.Marshal(s)
	}
	schemas.Store(t, raw)
	return raw
}

// schemaPatcher is a type whose JSON form its Go type does not say all
// of (api.CreateRequest's network).
type schemaPatcher interface{ PatchSchema(*jsonschema.Schema) }

// Info describes f.
func (f Function) Info() api.FunctionInfo {
	info := api.FunctionInfo{FunctionID: f.ID, Description: f.Description,
		RequestFormat: SchemaOf(f.Request), ResponseFormat: SchemaOf(f.Response)}
	if f.Streams {
		info.Metadata = map[string]any{"streams": true}
	}
	if f.Tool != nil {
		if info.Metadata == nil {
			info.Metadata = map[string]any{}
		}
		info.Metadata[api.MetadataTool] = *f.Tool
	}
	return info
}

// registerDescribe adds engine::functions::list and ::info.
func registerDescribe(t *Table) {
	add(t, api.FnFunctionsList, "List the functions with their descriptions and request and response JSON Schemas", func(_ context.Context, req api.FunctionsListRequest) (api.FunctionsResponse, error) {
		out := api.FunctionsResponse{Functions: []api.FunctionInfo{}}
		for _, f := range t.Functions() {
			if req.IncludeInternal || !strings.HasPrefix(f.ID, api.EngineFnPrefix) {
				out.Functions = append(out.Functions, f.Info())
			}
		}
		return out, nil
	})
	add(t, api.FnFunctionsInfo, "Describe functions: their descriptions and request and response JSON Schemas", func(_ context.Context, req api.FunctionsInfoRequest) (api.FunctionsResponse, error) {
		ids := req.FunctionIDs
		if req.FunctionID != "" {
			ids = append([]string{req.FunctionID}, ids...)
		}
		if len(ids) == 0 {
			return api.FunctionsResponse{}, errdefs.Malformed("give function_id or function_ids")
		}
		out := api.FunctionsResponse{Functions: []api.FunctionInfo{}}
		for _, id := range ids {
			f, ok := t.Lookup(id)
			if !ok {
				return api.FunctionsResponse{}, fmt.Errorf("%w: %s", ErrNotFound, id)
			}
			out.Functions = append(out.Functions, f.Info())
		}
		return out, nil
	})
}
