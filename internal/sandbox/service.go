package sandbox

// The core's one door for services. A service (a package beside the core,
// internal/sandbox/<name>svc, e.g. envsvc) needs only a live sandbox: it
// reaches one through Sandboxes.Acquire and acts on it through Handle,
// never through the Manager's fields or its lock. The core never imports
// a service; the daemon builds each service over the Manager and puts it
// in its slot of functions.Deps. sandboxtest.Sandboxes is a fake of
// Sandboxes for a service's unit tests.

import (
	"context"

	"github.com/hutch-dev/hutch/internal/agentclient"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// Sandboxes is the core as a service sees it.
type Sandboxes interface {
	// Acquire is acquire (handle.go) for a service: the caller's sandbox
	// id (S001, S002), checked and counted for u (S003, S004, S005,
	// S400). The caller calls release exactly once, when the call is
	// over; the Handle is not used after it.
	Acquire(ctx context.Context, id string, u Use) (h Handle, release func(), err error)
}

// Handle is one live sandbox between Acquire and its release. It hands
// out no state changes but the ones named here, which the core makes
// under its own locks.
type Handle interface {
	// ID is the sandbox's id.
	ID() string
	// Agent is the connection to its agent (UseCall, UseExec).
	Agent() *agentclient.Client
	// Emit records an event of type typ about the sandbox.
	Emit(typ string, data any)
	// Fail is the one failure policy of a call to its agent for op that
	// failed with err (agentFailure): the error to answer, after ending
	// the sandbox when the agent cannot be trusted.
	Fail(ctx context.Context, op string, err error) error
	// Env is its own env layer (the create's env and sandbox::env::*)
	// and the effective env every later exec starts from.
	Env() (own, effective []string)
	// ChangeEnv replaces its own env layer with change's answer and
	// records it, serialized with other changes; an error of change
	// changes nothing and is returned.
	ChangeEnv(change func(own []string) ([]string, error)) error
}

// Acquire implements Sandboxes.
func (m *Manager) Acquire(ctx context.Context, id string, u Use) (Handle, func(), error) {
	sb, release, err := m.acquire(ctx, id, u)
	if err != nil {
		return nil, nil, err
	}
	return handle{m: m, sb: sb}, release, nil
}

// handle is the Manager's Handle on sb.
type handle struct {
	m  *Manager
	sb *sandbox
}

func (h handle) ID() string                 { return h.sb.rec.ID }
func (h handle) Agent() *agentclient.Client { return h.sb.client() }
func (h handle) Emit(typ string, data any)  { h.m.emitFor(h.sb, typ, data) }
func (h handle) Fail(ctx context.Context, op string, err error) error {
	return h.m.agentFailure(ctx, h.sb, op, err)
}

func (h handle) Env() (own, effective []string) {
	return h.sb.snapshotRecord().Env, h.sb.env()
}

func (h handle) ChangeEnv(change func(own []string) ([]string, error)) error {
	sb := h.sb
	sb.envMu.Lock()
	defer sb.envMu.Unlock()
	layer, err := change(sb.snapshotRecord().Env)
	if err != nil {
		return err
	}
	sb.setEnvLayer(layer)
	rec := sb.snapshotRecord()
	if err := h.m.store.put(&rec); err != nil {
		return errdefs.Wrap(errdefs.CodeInternal, err, "recording the sandbox's env")
	}
	return nil
}
