// Package sandboxtest is a fake of the core as a service sees it
// (sandbox.Sandboxes and sandbox.Handle), for a service's unit tests:
// sandboxes of owners in a state, with an env, whose events, failures and
// releases a test reads back. It has no agent unless the test gives one.
package sandboxtest

import (
	"context"
	"errors"
	"github.com/hutch-dev/hutch/api"
	"os"
	"sync"

	"github.com/google/uuid"
	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/agentclient"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/sandbox"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
)

// Sandboxes is a fake sandbox.Sandboxes. The zero value has no sandboxes.
type Sandboxes struct {
	mu   sync.Mutex
	sbs  map[string]*Sandbox
	held int
}

var _ sandbox.Sandboxes = (*Sandboxes)(nil)

// Event is one event a service emitted.
type Event struct {
	Type string
	Data any
}

// Sandbox is one fake sandbox. Its fields are the test's to set before
// the service runs and to read after.
type Sandbox struct {
	ID, Owner string
	// State is where it is; Acquire answers as the core does for it.
	State sandbox.State
	// Image is the image's env under Own; Own its own layer.
	Image, Own []string
	// Agent is what Handle.Agent answers, and what Exec runs on (an
	// in-process agent of agenttest, say); nil: Exec fails.
	Agent *agentclient.Client
	// Workdir, Homes (by user) and FixNote are what Handle's methods of
	// those names answer.
	Workdir string
	Homes   map[string]string
	FixNote string
	// Events are what the service emitted; Failures the ops it reported
	// through Fail.
	Events   []Event
	Failures []string
	// Stats is what Handle.Stats answers; Ends what Handle.Stop was given.
	Stats runtime.Stats
	Ends  []runtime.End
}

// Add adds a running sandbox of owner whose image env is image.
func (s *Sandboxes) Add(owner string, image ...string) *Sandbox {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sbs == nil {
		s.sbs = map[string]*Sandbox{}
	}
	sb := &Sandbox{ID: uuid.NewString(), Owner: owner, State: sandbox.Running, Image: image}
	s.sbs[sb.ID] = sb
	return sb
}

// DefaultExecTimeoutMs is what Handle.ExecTimeout answers for 0.
const DefaultExecTimeoutMs = 30_000

// Held is how many acquired handles are not released yet.
func (s *Sandboxes) Held() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held
}

// Acquire answers as the core does: S001 for a malformed id, S002 for an
// unknown one or another owner's, S004 for an ended sandbox, S005 for a
// frozen one (but UseRead may see a paused one and UseRecord any state
// but ended).
func (s *Sandboxes) Acquire(ctx context.Context, id string, u sandbox.Use) (sandbox.Handle, func(), error) {
	if _, err := uuid.Parse(id); err != nil || len(id) != 36 {
		return nil, nil, errdefs.Malformed("sandbox_id %q is not a UUID", id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, ok := s.sbs[id]
	if !ok || sb.Owner != auth.OwnerFrom(ctx) {
		return nil, nil, errdefs.New(errdefs.CodeNotFound, "sandbox not found: %s", id)
	}
	switch st := sb.State; {
	case st == sandbox.Stopping || st == sandbox.Stopped:
		return nil, nil, errdefs.New(errdefs.CodeStopped, "sandbox %s is stopped", id)
	case u == sandbox.UseRecord, u == sandbox.UseRead && st == sandbox.Paused, st == sandbox.Running:
	case st == sandbox.Pausing || st == sandbox.Paused || st == sandbox.Resuming:
		return nil, nil, errdefs.New(errdefs.CodePaused, "sandbox %s is %s", id, st)
	default:
		return nil, nil, errdefs.New(errdefs.CodeStopped, "sandbox %s is %s, not running", id, st)
	}
	s.held++
	var once sync.Once
	return handle{s: s, sb: sb}, func() {
		once.Do(func() {
			s.mu.Lock()
			s.held--
			s.mu.Unlock()
		})
	}, nil
}

// handle is the fake's Handle on sb.
type handle struct {
	s  *Sandboxes
	sb *Sandbox
}

func (h handle) ID() string                 { return h.sb.ID }
func (h handle) Agent() *agentclient.Client { return h.sb.Agent }

func (h handle) Emit(typ string, data any) {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	h.sb.Events = append(h.sb.Events, Event{Type: typ, Data: data})
}

// Fail ends the sandbox, as the core does for an agent that broke the
// protocol, and answers S004.
func (h handle) Fail(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	h.sb.Failures = append(h.sb.Failures, op)
	h.sb.State = sandbox.Stopped
	return errdefs.New(errdefs.CodeStopped, "sandbox %s was stopped: %s: %v", h.sb.ID, op, err)
}

func (h handle) Env() (own, effective []string) {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	return h.sb.Own, spec.MergeEnv(h.sb.Image, h.sb.Own)
}

func (h handle) ChangeEnv(change func(own []string) ([]string, error)) error {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	layer, err := change(h.sb.Own)
	if err != nil {
		return err
	}
	h.sb.Own = layer
	return nil
}

// Exec runs c on the sandbox's Agent as the core does (its env over the
// sandbox's, its exec.started event), without the core's tracing; a
// failure of the agent goes through Fail.
func (h handle) Exec(ctx context.Context, c sandbox.ExecCall) (*agentv1.ExecResponse, error) {
	if h.sb.Agent == nil {
		return nil, errors.New("sandboxtest: the sandbox has no agent")
	}
	_, env := h.Env()
	areq := &agentv1.ExecRequest{Argv: c.Argv, Env: spec.MergeEnv(env, c.Env), Workdir: c.Workdir, Stdin: c.Stdin,
		TimeoutMs: int64(c.TimeoutMs), MaxOutputBytes: c.MaxOutputBytes}
	h.Emit(api.EventExecStarted, c.Started)
	resp, err := h.sb.Agent.Exec(ctx, areq)
	if err != nil {
		return nil, h.Fail(ctx, c.Op, err)
	}
	return resp, nil
}

func (h handle) ExecTimeout(ms uint64) uint64 {
	if ms == 0 {
		return DefaultExecTimeoutMs
	}
	return ms
}

func (h handle) Workdir() string           { return h.sb.Workdir }
func (h handle) Home(user string) string   { return h.sb.Homes[user] }
func (h handle) Fix(command string) string { return h.sb.FixNote }

// PathMissing looks on the host, which is the filesystem an in-process
// agent sees.
func (h handle) PathMissing(_ context.Context, path string) bool {
	_, err := os.Stat(path)
	return errors.Is(err, os.ErrNotExist)
}

// AsUser takes the image's user only: the fake has no image to resolve
// another in.
func (h handle) AsUser(ctx context.Context, user string) (context.Context, error) {
	if user != "" {
		return nil, errdefs.Malformed("sandboxtest: no user %q in the fake's image", user)
	}
	return ctx, nil
}

func (h handle) Touch() {}

// FsFail is the core's mapping (sandbox.FsError) over the fake's Fail.
func (h handle) FsFail(ctx context.Context, op string, err error) error {
	return sandbox.FsError(ctx, op, err, func() error { return h.Fail(ctx, op, err) })
}

// Sandbox returns the fake sandbox of id, or nil.
func (s *Sandboxes) Sandbox(id string) *Sandbox {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sbs[id]
}

// SetState moves sb to st, as the core would, under the fake's lock.
func (s *Sandboxes) SetState(sb *Sandbox, st sandbox.State) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb.State = st
}

// Snapshot is a copy of sb's state, events and ends, under the fake's lock.
func (s *Sandboxes) Snapshot(sb *Sandbox) Sandbox {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := *sb
	c.Events = append([]Event(nil), sb.Events...)
	c.Ends = append([]runtime.End(nil), sb.Ends...)
	return c
}

func (h handle) State() sandbox.State {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	return h.sb.State
}

func (h handle) Stats() (runtime.Stats, error) {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	return h.sb.Stats, nil
}

// Pause freezes a running sandbox.
func (h handle) Pause() error {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	if h.sb.State != sandbox.Running {
		return errdefs.New(errdefs.CodeStopped, "sandbox %s is %s, not running", h.sb.ID, h.sb.State)
	}
	h.sb.State = sandbox.Paused
	return nil
}

// Stop ends the sandbox for end.
func (h handle) Stop(end runtime.End) {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	h.sb.Ends = append(h.sb.Ends, end)
	h.sb.State = sandbox.Stopped
}
