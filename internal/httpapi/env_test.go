package httpapi_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
	"github.com/hutch-dev/hutch/internal/httpapi"
)

// envFake records the environment calls it gets.
type envFake struct{ calls []any }

func (e *envFake) ListEnv(_ context.Context, req api.EnvListRequest) (api.EnvResponse, error) {
	e.calls = append(e.calls, req)
	return api.EnvResponse{SandboxID: req.SandboxID}, nil
}

func (e *envFake) GetEnv(_ context.Context, req api.EnvGetRequest) (api.EnvValue, error) {
	e.calls = append(e.calls, req)
	return api.EnvValue{Key: req.Key, Value: "v", Set: true}, nil
}

func (e *envFake) SetEnv(_ context.Context, req api.EnvSetRequest) (api.EnvResponse, error) {
	e.calls = append(e.calls, req)
	return api.EnvResponse{SandboxID: req.SandboxID}, nil
}

func (e *envFake) DeleteEnv(_ context.Context, req api.EnvDeleteRequest) (api.EnvResponse, error) {
	e.calls = append(e.calls, req)
	return api.EnvResponse{SandboxID: req.SandboxID}, nil
}

// The environment routes take the sandbox from the path, the variable of
// GET and DELETE too.
func TestEnvRoutes(t *testing.T) {
	for _, tc := range []struct {
		method, path, body string
		want               any
	}{
		{"GET", "/v1/sandboxes/" + id + "/env", "", api.EnvListRequest{SandboxID: id}},
		{"POST", "/v1/sandboxes/" + id + "/env", `{"env":{"A":"1"}}`, api.EnvSetRequest{SandboxID: id, Env: api.Env{"A=1"}}},
		{"GET", "/v1/sandboxes/" + id + "/env/A_B", "", api.EnvGetRequest{SandboxID: id, Key: "A_B"}},
		{"DELETE", "/v1/sandboxes/" + id + "/env/A_B", "", api.EnvDeleteRequest{SandboxID: id, Keys: []string{"A_B"}}},
	} {
		env := &envFake{}
		deps := functionstest.DepsOf(&functionstest.Fake{})
		deps.Environment = env
		h := httpapi.New(functions.New(deps), httpapi.Options{})
		status, _, raw := do(t, h, tc.method, tc.path, tc.body, nil)
		if status != 200 {
			t.Errorf("%s %s: %d %s", tc.method, tc.path, status, raw)
			continue
		}
		if len(env.calls) != 1 || !reflect.DeepEqual(env.calls[0], tc.want) {
			t.Errorf("%s %s: calls %#v, want %#v", tc.method, tc.path, env.calls, tc.want)
		}
	}
}
