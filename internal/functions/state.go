package functions

import (
	"context"

	"github.com/hutch-dev/hutch/api"
)

// Lifecycle is the state functions' dependency: the sandbox manager.
type Lifecycle interface {
	Pause(ctx context.Context, req api.PauseRequest) (api.StateResponse, error)
	Resume(ctx context.Context, req api.ResumeRequest) (api.StateResponse, error)
	SetTimeout(ctx context.Context, req api.SetTimeoutRequest) (api.SetTimeoutResponse, error)
}

// registerLifecycle adds sandbox::pause, sandbox::resume and
// sandbox::set_timeout, when the table has Lifecycle.
func registerLifecycle(t *Table) {
	l := t.deps.Lifecycle
	if l == nil {
		return
	}
	add(t, api.FnPause, "Pause a sandbox: depth freeze stops its CPU use and keeps its memory; calls answer S005 until it is resumed (or resume it, with auto_resume)", l.Pause)
	add(t, api.FnResume, "Resume a paused sandbox", l.Resume)
	add(t, api.FnSetTimeout, "Give a sandbox an absolute lifetime of timeout_secs from now, whatever its activity", l.SetTimeout)
}
