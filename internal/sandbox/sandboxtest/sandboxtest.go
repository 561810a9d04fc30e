// Package sandboxtest is a fake of the core as a service sees it
// (sandbox.Sandboxes and sandbox.Handle), for a service's unit tests:
// sandboxes of owners in a state, with an env, whose events, failures and
// releases a test reads back. It has no agent unless the test gives one.
// NewManager is the real core over the in-process runtime, for a service
// whose tests need one.
package sandboxtest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"maps"
	"os"
	osexec "os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hutch-dev/hutch/api"
	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/agentclient"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/image"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/runtime/runtimetest"
	"github.com/hutch-dev/hutch/internal/sandbox"
	"github.com/hutch-dev/hutch/internal/sandbox/agenterr"
	"github.com/hutch-dev/hutch/internal/sandbox/egress"
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
	// Vitals is what Handle.Vitals answers (metricsvc).
	Vitals sandbox.Vitals

	// networksvc: Network and Name are what Handle's methods of those
	// names answer; Egress is the policy Handle.SetEgress set.
	Network bool
	Name    string
	Egress  *api.EgressPolicy

	// ended is Handle.Ended's channel, closed once it is stopped.
	ended chan struct{}

	// snapsvc: Request and From are what Handle.Copy answers;
	// Checkpoint and CaptureLayer do what Handle's methods of those names
	// do (nil: the runtime cannot, S302).
	Request      api.CreateRequest
	From         sandbox.Origin
	Checkpoint   func(dir string) error
	CaptureLayer func(file string) error
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
// frozen one (but UseRead may see a paused one, UseRecord any state but
// ended and UseLookup any state).
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
	case u == sandbox.UseLookup:
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
	h.sb.stopped()
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
	areq, _ := h.ExecRequest(c)
	areq.MaxOutputBytes = c.MaxOutputBytes
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

// FsFail is the core's mapping (agenterr.Fs) over the fake's Fail.
func (h handle) FsFail(ctx context.Context, op string, err error) error {
	return agenterr.Fs(ctx, op, err, func() error { return h.Fail(ctx, op, err) })
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
	h.sb.stopped()
}

// procsvc: background processes.

// ExecRequest is c over the sandbox's env, without a user (the fake has
// no image to resolve one in).
func (h handle) ExecRequest(c sandbox.ExecCall) (*agentv1.ExecRequest, error) {
	_, env := h.Env()
	return &agentv1.ExecRequest{Argv: c.Argv, Env: spec.MergeEnv(env, c.Env), Workdir: c.Workdir, Stdin: c.Stdin,
		TimeoutMs: int64(c.TimeoutMs)}, nil
}

// Ended is closed once the sandbox is stopped (Stop, Fail).
func (h handle) Ended() <-chan struct{} {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	return h.sb.endedChan()
}

// NotRunning is S004 for a stopped sandbox, S005 for a paused one.
func (h handle) NotRunning() error {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	if st := h.sb.State; st == sandbox.Pausing || st == sandbox.Paused || st == sandbox.Resuming {
		return errdefs.New(errdefs.CodePaused, "sandbox %s is %s", h.sb.ID, st)
	}
	return errdefs.New(errdefs.CodeStopped, "sandbox %s is stopped", h.sb.ID)
}

// endedChan is sb.ended, made at its first use (under the fake's lock).
func (sb *Sandbox) endedChan() chan struct{} {
	if sb.ended == nil {
		sb.ended = make(chan struct{})
	}
	return sb.ended
}

// stopped moves sb to Stopped and closes its Ended channel (under the
// fake's lock).
func (sb *Sandbox) stopped() {
	sb.State = sandbox.Stopped
	if c := sb.endedChan(); !isClosed(c) {
		close(c)
	}
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// BeginExec begins a streamed exec as the core does (an exec slot, the
// exec.started event), without the core's checks and tracing.
func (s *Sandboxes) BeginExec(ctx context.Context, req api.ExecRequest) (sandbox.BegunExec, error) {
	argv, err := spec.CommandArgv(req.Cmd, req.Args, req.Argv)
	if err != nil {
		return sandbox.BegunExec{}, err
	}
	h, release, err := s.Acquire(ctx, req.SandboxID, sandbox.UseExec)
	if err != nil {
		return sandbox.BegunExec{}, err
	}
	areq, _ := h.ExecRequest(sandbox.ExecCall{Argv: argv, Env: req.Env, Workdir: req.Workdir, TimeoutMs: h.ExecTimeout(req.TimeoutMs)})
	h.Emit(api.EventExecStarted, map[string]any{"command": argv[0]})
	return sandbox.BegunExec{Ctx: ctx, Sandbox: h, Request: areq, Finish: func(api.ExecResponse, error) { release() }}, nil
}

// metricsvc

func (h handle) Vitals() sandbox.Vitals {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	return h.sb.Vitals
}

// networksvc:

func (h handle) Network() bool { return h.sb.Network }
func (h handle) Name() string  { return h.sb.Name }

func (h handle) Egress() *api.EgressPolicy {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	return h.sb.Egress
}

// SetEgress checks p as the core does and keeps it (nil for an empty one).
func (h handle) SetEgress(_ context.Context, p *api.EgressPolicy) error {
	if err := egress.Check(p); err != nil {
		return err
	}
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	h.sb.Egress = nil
	if !p.Empty() {
		c := *p
		h.sb.Egress = &c
	}
	return nil
}

// snapsvc: copies of a sandbox, and a service's records.

func (h handle) Copy() (api.CreateRequest, sandbox.Origin) { return h.sb.Request, h.sb.From }

func (h handle) Checkpoint(dir string) error {
	if h.sb.Checkpoint == nil {
		return errdefs.New(errdefs.CodeUnsupported, "sandboxtest: the runtime cannot checkpoint sandboxes")
	}
	return h.sb.Checkpoint(dir)
}

func (h handle) CaptureLayer(file string) error {
	if h.sb.CaptureLayer == nil {
		return errdefs.New(errdefs.CodeUnsupported, "sandboxtest: the runtime cannot capture a sandbox's files")
	}
	return h.sb.CaptureLayer(file)
}

// Records is an in-memory sandbox.Records. The zero value is empty.
type Records struct {
	mu sync.Mutex
	m  map[string][]byte
}

var _ sandbox.Records = (*Records)(nil)

func (r *Records) Put(key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string][]byte{}
	}
	r.m[key] = b
	return nil
}

func (r *Records) Get(key string, v any) (bool, error) {
	r.mu.Lock()
	b, ok := r.m[key]
	r.mu.Unlock()
	if !ok {
		return false, nil
	}
	return true, json.Unmarshal(b, v)
}

func (r *Records) Remove(key string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, key)
	return nil
}

// Each calls fn in key order, outside the lock.
func (r *Records) Each(fn func(key string, value []byte) error) error {
	r.mu.Lock()
	keys := slices.Sorted(maps.Keys(r.m))
	vals := make([][]byte, len(keys))
	for i, k := range keys {
		vals[i] = r.m[k]
	}
	r.mu.Unlock()
	for i, k := range keys {
		if err := fn(k, vals[i]); err != nil {
			return err
		}
	}
	return nil
}

// interpsvc

// HostURL is u: the fake's sandboxes have no network.
func (h handle) HostURL(u string) string { return u }

// Images is an image store whose catalog images, python and node, are
// ready, all on the one directory Rootfs (an in-process agent runs on the
// host's files anyway).
type Images struct{ Rootfs string }

var _ sandbox.Images = Images{}

func (s Images) Ensure(_ context.Context, name string, _ bool) (*image.Image, error) {
	return &image.Image{Name: name, ID: "id-" + name, Rootfs: s.Rootfs}, nil
}
func (s Images) Status(name string) api.ImageStatus {
	return api.ImageStatus{Name: name, State: "ready"}
}
func (s Images) Catalog() []image.Entry { return []image.Entry{{Name: "python"}, {Name: "node"}} }
func (s Images) Pull(ctx context.Context, name string) (*image.Image, error) {
	return s.Ensure(ctx, name, true)
}
func (s Images) Remove(_ context.Context, name string, guard func(string) error) (bool, error) {
	return true, guard("id-" + name)
}

// With is every catalog image when command is on the host's PATH.
func (s Images) With(command string) []string {
	if _, err := osexec.LookPath(command); err != nil {
		return nil
	}
	return []string{"python", "node"}
}

// NewManager is a real Manager for a service's tests over o, closed at the
// end of t. What o leaves empty it fills: the in-process runtime
// (runtimetest), Images, a new state directory, a silent logger.
func NewManager(t testing.TB, o sandbox.Options) *sandbox.Manager {
	t.Helper()
	if o.Runtimes == nil {
		o.Runtimes = runtime.Single(runtimetest.New(t))
	}
	if o.Images == nil {
		o.Images = Images{Rootfs: t.TempDir()}
	}
	if o.StateDir == "" {
		o.StateDir = t.TempDir()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.AgentCallTimeout == 0 {
		o.AgentCallTimeout = 10 * time.Second
	}
	m, err := sandbox.New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			t.Errorf("closing the manager: %v", err)
		}
	})
	return m
}
