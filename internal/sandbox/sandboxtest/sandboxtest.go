// Package sandboxtest is a fake of the core as a service sees it
// (sandbox.Sandboxes and sandbox.Handle), for a service's unit tests:
// sandboxes of owners in a state, with an env, whose events, failures and
// releases a test reads back. It has no agent unless the test gives one.
package sandboxtest

import (
	"context"
	"sync"

	"github.com/google/uuid"
	"github.com/hutch-dev/hutch/internal/agentclient"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/sandbox"
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
	// Agent is what Handle.Agent answers.
	Agent *agentclient.Client
	// Events are what the service emitted; Failures the ops it reported
	// through Fail.
	Events   []Event
	Failures []string
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
	return h.sb.Own, sandbox.MergeEnv(h.sb.Image, h.sb.Own)
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
