package functions

import (
	"context"

	"github.com/hutch-dev/hutch/api"
)

// Environment changes a running sandbox's base environment.
type Environment interface {
	ListEnv(ctx context.Context, req api.EnvListRequest) (api.EnvResponse, error)
	GetEnv(ctx context.Context, req api.EnvGetRequest) (api.EnvValue, error)
	SetEnv(ctx context.Context, req api.EnvSetRequest) (api.EnvResponse, error)
	DeleteEnv(ctx context.Context, req api.EnvDeleteRequest) (api.EnvResponse, error)
}

// registerEnv adds sandbox::env::*, when the table has an Environment.
func registerEnv(t *Table) {
	e := t.deps.Environment
	if e == nil {
		return
	}
	add(t, api.FnEnvList, "A sandbox's environment: its own variables (the create's env and what env::set added) and the effective one later execs start from", e.ListEnv)
	add(t, api.FnEnvGet, "One variable of a sandbox's effective environment", e.GetEnv)
	add(t, api.FnEnvSet, "Add or replace variables of a sandbox's environment, for later execs, processes and contexts (running ones keep theirs)", e.SetEnv)
	add(t, api.FnEnvDelete, "Remove variables from a sandbox's environment (one of the image's env goes back to the image's value)", e.DeleteEnv)
}
