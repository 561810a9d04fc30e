package functionstest

import (
	"context"
	"reflect"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/functions"
)

// Stubs of every dependency of the table: each embeds its interface,
// unset, so a call panics. They make a table with every function, for
// tests that describe it (its functions, its MCP tools) and call none.
type (
	stubSandboxes   struct{ functions.Sandboxes }
	stubFS          struct{ functions.FS }
	stubImages      struct{ functions.Images }
	stubMetrics     struct{ functions.SandboxMetrics }
	stubProcesses   struct{ functions.Processes }
	stubSnapshots   struct{ functions.Snapshots }
	stubEvents      struct{ functions.Events }
	stubWebhooks    struct{ functions.Webhooks }
	stubAlerts      struct{ functions.Alerts }
	stubJobs        struct{ functions.Jobs }
	stubInterpreter struct{ functions.Interpreter }
	stubPorts       struct{ functions.Ports }
	stubNetworks    struct{ functions.Networks }
	stubEnv         struct{ functions.Environment }
	stubVolumes     struct{ functions.Volumes }
	stubGit         struct{ functions.Git }
	// stubStates has the state moves, wherever the table wants them.
	stubStates struct{}
)

func (stubStates) Pause(context.Context, api.PauseRequest) (api.StateResponse, error) {
	panic("functionstest: a stub was called")
}

func (stubStates) Resume(context.Context, api.ResumeRequest) (api.StateResponse, error) {
	panic("functionstest: a stub was called")
}

func (stubStates) SetTimeout(context.Context, api.SetTimeoutRequest) (api.SetTimeoutResponse, error) {
	panic("functionstest: a stub was called")
}

// stubQuota admits every call (issue 38).
type stubQuota struct{ functions.Quota }

func (stubQuota) Admit(context.Context, string, any) (func(), error) { return func() {}, nil }

// StubDeps are dependencies of every slot of functions.Deps that a stub
// implements (the Observer none).
func StubDeps() functions.Deps {
	stubs := []any{stubSandboxes{}, stubFS{}, stubImages{}, stubMetrics{}, stubProcesses{}, stubSnapshots{}, stubEvents{},
		stubWebhooks{}, stubAlerts{}, stubJobs{}, stubInterpreter{}, stubPorts{}, stubNetworks{}, stubEnv{}, stubVolumes{}, stubGit{}, stubStates{},
		stubQuota{}} // issue 38
	var d functions.Deps
	v := reflect.ValueOf(&d).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		if f.Kind() != reflect.Interface || f.Type() == reflect.TypeFor[functions.Observer]() {
			continue
		}
		for _, s := range stubs {
			if reflect.TypeOf(s).Implements(f.Type()) {
				f.Set(reflect.ValueOf(s))
				break
			}
		}
	}
	return d
}
