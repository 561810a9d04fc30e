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
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/hutch-dev/hutch/api"
	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/agentclient"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/sandbox/agenterr"
	"github.com/hutch-dev/hutch/internal/sandbox/egress"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
	"github.com/hutch-dev/hutch/internal/sandbox/tracing"
)

// Sandboxes is the core as a service sees it.
type Sandboxes interface {
	// Acquire is acquire (handle.go) for a service: the caller's sandbox
	// id (S001, S002), checked and counted for u (S003, S004, S005,
	// S400). The caller calls release exactly once, when the call is
	// over; after it, only a stream the call returned (a download) or the
	// watch of a process it started uses the Handle, to count activity,
	// emit and map its errors.
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
	// failed with err (failure.go): the error to answer, after ending
	// the sandbox when the agent cannot be trusted.
	Fail(ctx context.Context, op string, err error) error
	// Env is its own env layer (the create's env and sandbox::env::*)
	// and the effective env every later exec starts from.
	Env() (own, effective []string)
	// ChangeEnv replaces its own env layer with change's answer and
	// records it, serialized with other changes; an error of change
	// changes nothing and is returned.
	ChangeEnv(change func(own []string) ([]string, error)) error
	// Exec runs one command through its agent as an exec does (the
	// caller holds UseExec): traced and counted, with its exec.started
	// (c.Started) and exec.finished events. A spawn the sandbox has no
	// room for is S400; any other failure of the agent goes through Fail.
	// A timeout is a response with TimedOut set.
	Exec(ctx context.Context, c ExecCall) (*agentv1.ExecResponse, error)
	// ExecTimeout is the timeout an exec asking for ms gets: the
	// daemon's default for 0, at most its max_exec_timeout_ms.
	ExecTimeout(ms uint64) uint64
	// Home is the home directory of user (a name or uid[:gid]) in its
	// image; "" for no user, or one that does not resolve (Exec says why).
	Home(user string) string
	// Workdir is where its commands run when a call names no directory:
	// the image's working directory, else its HOME, else /root.
	Workdir() string
	// Fix is the fix note for command missing in the sandbox: the images
	// this daemon allows that have it.
	Fix(command string) string
	// PathMissing says the agent finds nothing at path (any other
	// failure is false: the next call meets it).
	PathMissing(ctx context.Context, path string) bool
	// AsUser is ctx for a filesystem call as user (a name or
	// uid[:gid]; "" the image's), or S001 for one that does not resolve.
	AsUser(ctx context.Context, user string) (context.Context, error)
	// Touch counts activity for the reaper (a transfer's progress).
	Touch()
	// FsFail maps the failure of an agent filesystem call for op (agenterr.Fs):
	// the agent's FsError is its S-code, a failed upload source or a
	// stalled transfer S218, anything else goes through Fail.
	FsFail(ctx context.Context, op string, err error) error
	// State is the state it is in now.
	State() State
	// Stats reads its resource use from its instance; a failed read is
	// S004 when it is no longer running, S500 otherwise.
	Stats() (runtime.Stats, error)
	// Pause freezes it, as sandbox::pause does (a runtime failure leaves
	// it running).
	Pause() error
	// Stop ends it for end, in the background.
	Stop(end runtime.End)

	// metricsvc

	// Vitals is its size and how busy it is, beside Stats.
	Vitals() Vitals
	// networksvc:

	// Network says it was created with network: true.
	Network() bool
	// Name is the name it was created with ("" for none).
	Name() string
	// Egress is its egress policy in force; nil for none.
	Egress() *api.EgressPolicy
	// SetEgress makes p (empty: none) its egress policy, as
	// sandbox::network::update does: its firewall rules rewritten and its
	// resolver's names replaced (applyEgress). p was checked (egress.Check).
	SetEgress(ctx context.Context, p *api.EgressPolicy) error
	// procsvc: background processes.

	// ExecRequest is the agent's request for c (c.Stdin and c.TimeoutMs
	// as given, no output cap): the sandbox's env and workdir under c's,
	// its user or c.User (S001 for one that does not resolve).
	ExecRequest(c ExecCall) (*agentv1.ExecRequest, error)
	// Ended is closed once its teardown is over.
	Ended() <-chan struct{}
	// NotRunning is what a call on it answers once it is no longer
	// running: S004 with its end, S005 while it is paused.
	NotRunning() error
	// interpsvc

	// HostURL is u, a URL on the host's loopback (a package index), as
	// the sandbox reaches it: through its gateway; unchanged without a
	// network.
	HostURL(u string) string
	// snapsvc: what a copy of it is made of.

	// Copy is what a copy of it is created from: the request of its
	// image, shape, network, egress, env, life terms and metadata, and
	// the Origin a copy starts from with it (runtime, image id, cpus,
	// memory, network), to which the caller adds a checkpoint or a layer.
	Copy() (api.CreateRequest, Origin)
	// Checkpoint writes a checkpoint of it into dir (UseRead), leaving it
	// as it was (checkpoint.go): S265 when it mounts volumes, S302 when
	// its runtime cannot, S004 when it no longer runs; any other failure
	// is logged and S500.
	Checkpoint(dir string) error
	// CaptureLayer writes its writable layer into file: S302 when its
	// runtime cannot; a failure is logged and S500.
	CaptureLayer(file string) error
}

// ExecCall is one command a service runs through Handle.Exec.
type ExecCall struct {
	Argv []string
	// Env is over the sandbox's env; Workdir "" is the image's.
	Env       []string
	Workdir   string
	Stdin     []byte
	TimeoutMs uint64
	// User runs it (a name or uid[:gid]); "" the image's.
	User string
	// MaxOutputBytes caps each stream below max_output_bytes (0: that cap).
	MaxOutputBytes int64
	// Op names the call in a failure ("git clone"); Started is its
	// exec.started event's data.
	Op      string
	Started map[string]any
}

// Done is closed once the manager shuts down: a service's background
// work (alertsvc's checker) ends with it.
func (m *Manager) Done() <-chan struct{} { return m.shutdown.Done() }

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

func (h handle) Exec(ctx context.Context, c ExecCall) (*agentv1.ExecResponse, error) {
	m, sb := h.m, h.sb
	areq, err := h.ExecRequest(c)
	if err != nil {
		return nil, err
	}
	areq.MaxOutputBytes = m.cfg.MaxOutputBytes
	if c.MaxOutputBytes > 0 && c.MaxOutputBytes < areq.MaxOutputBytes {
		areq.MaxOutputBytes = c.MaxOutputBytes
	}
	ctx, done := tracing.Exec(ctx, m.trace.obs, m.trace.emit, api.ExecRequest{SandboxID: sb.rec.ID})
	m.emitFor(sb, api.EventExecStarted, c.Started)
	start := time.Now()
	resp, err := sb.client().Exec(ctx, areq)
	out := api.ExecResponse{DurationMs: uint64(time.Since(start).Milliseconds()), TimeoutMs: c.TimeoutMs}
	if err != nil {
		if refused := agenterr.SpawnRefused(sb.rec.ID, err); refused != nil {
			err = refused
		} else {
			err = h.Fail(ctx, c.Op, err)
		}
		done(out, err)
		return nil, err
	}
	out.TimedOut = resp.TimedOut
	if resp.Exited && !resp.TimedOut {
		code := int(resp.ExitCode)
		out.ExitCode, out.Success = &code, code == 0
	}
	done(out, nil)
	return resp, nil
}

func (h handle) ExecTimeout(ms uint64) uint64 {
	return spec.ExecTimeout(ms, h.m.cfg.DefaultExecTimeoutMs, h.m.cfg.MaxExecTimeoutMs)
}
func (h handle) Fix(command string) string {
	return spec.WithFix(h.m.images.With(command), h.m.ImageBook().ImageAllowlist(), command)
}

// Workdir is the image's working directory, or the home directory when
// that is / (npm, which installs there, does not install into /).
func (h handle) Workdir() string {
	if wd := h.sb.image.Config.WorkingDir; wd != "" && wd != "/" {
		return wd
	}
	for _, kv := range h.sb.env() {
		if home, ok := strings.CutPrefix(kv, "HOME="); ok && strings.HasPrefix(home, "/") && home != "/" {
			return home
		}
	}
	return "/root"
}

func (h handle) Home(user string) string {
	if user == "" {
		return ""
	}
	img := *h.sb.image
	img.Config.User = user
	u, err := img.ResolveUser()
	if err != nil || u == nil {
		return ""
	}
	return u.Home
}

func (h handle) PathMissing(ctx context.Context, path string) bool {
	_, err := h.sb.client().Stat(ctx, &agentv1.FsStatRequest{Path: path})
	fe := agenterr.FsDetail(err)
	return fe != nil && fe.GetKind() == agentv1.FsErrorKind_FS_ERROR_KIND_NOT_FOUND
}

func (h handle) Touch() { h.sb.touch() }

func (h handle) AsUser(ctx context.Context, user string) (context.Context, error) {
	if user == "" {
		return ctx, nil
	}
	u, err := spec.NamedUser(h.sb.image, user)
	if err != nil {
		return nil, err
	}
	return agentclient.WithFsUser(ctx, spec.FsUser(u)), nil
}

func (h handle) FsFail(ctx context.Context, op string, err error) error {
	return agenterr.Fs(ctx, op, err, func() error { return h.Fail(ctx, op, err) })
}

func (h handle) State() State {
	st, _ := h.sb.current()
	return st
}

func (h handle) Stop(end runtime.End) { h.m.stopAsync(h.sb, end) }

// Stats reads the sandbox's resource use from its instance.
func (h handle) Stats() (runtime.Stats, error) {
	sb := h.sb
	inst, _ := sb.conn()
	sr, ok := inst.(runtime.StatsReader)
	if !ok {
		return runtime.Stats{}, errdefs.New(errdefs.CodeInternal, "the %s runtime does not report resource use", sb.rec.Runtime)
	}
	st, err := sr.Stats()
	if err != nil {
		if st, end := sb.current(); st != Running {
			return runtime.Stats{}, notRunning(sb.rec.ID, st, end)
		}
		return runtime.Stats{}, errdefs.Wrap(errdefs.CodeInternal, err, "reading resource use of sandbox "+sb.rec.ID)
	}
	return st, nil
}

func (h handle) Pause() error {
	_, err := h.m.freeze(h.sb)
	return err
}

// metricsvc

// Vitals are a sandbox's size and activity (sandbox::metrics).
type Vitals struct {
	CPUs     uint32
	MemoryMB uint32
	// CreatedAt is its creation; IdleSince its last activity.
	CreatedAt, IdleSince time.Time
	// ExecInFlight counts its execs running now.
	ExecInFlight int
	// Hibernated says its pause wrote it to disk: it uses nothing.
	Hibernated bool
}

func (h handle) Vitals() Vitals {
	sb := h.sb
	return Vitals{CPUs: sb.rec.CPUs, MemoryMB: sb.rec.MemoryMB, CreatedAt: sb.rec.CreatedAt, IdleSince: sb.idleSince(),
		ExecInFlight: len(sb.slots), Hibernated: sb.isHibernated()}
}

// portsvc, networksvc: what a service keeps about a sandbox ends with it.

// hooks are the services' hooks on the two moments of a sandbox's end;
// the Manager embeds them, and the daemon registers its services' before
// the first create.
type hooks struct {
	mu sync.Mutex
	// stop and teardown are guarded by mu.
	stop, teardown []func(id string)
}

// OnStop has the core call f with the id of every sandbox that stops, as
// it stops (before its teardown): a service (portsvc, networksvc) drops
// what it keeps about the sandbox.
func (h *hooks) OnStop(f func(id string)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stop = append(h.stop, f)
}

// OnTeardown has f called with the id of each sandbox whose teardown is
// over: its live state is gone, only a tombstone of its record is left,
// so a service drops what it kept of it (interpsvc's contexts).
func (h *hooks) OnTeardown(f func(id string)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.teardown = append(h.teardown, f)
}

// stopped tells the OnStop functions that sandbox id stopped.
func (h *hooks) stopped(id string) { h.tell(&h.stop, id) }

// tornDown tells the OnTeardown functions that sandbox id's teardown is
// over.
func (h *hooks) tornDown(id string) { h.tell(&h.teardown, id) }

// tell calls each of fns with id, without the lock.
func (h *hooks) tell(fns *[]func(id string), id string) {
	h.mu.Lock()
	list := *fns
	h.mu.Unlock()
	for _, f := range list {
		f(id)
	}
}

// networksvc: the sandbox networks and egress policies.

func (h handle) Network() bool { return h.sb.rec.Network }
func (h handle) Name() string  { return h.sb.rec.Name }

func (h handle) Egress() *api.EgressPolicy {
	h.sb.mu.Lock()
	defer h.sb.mu.Unlock()
	return h.sb.rec.Egress
}

func (h handle) SetEgress(ctx context.Context, p *api.EgressPolicy) error {
	pol, err := egress.Compile(p)
	if err != nil {
		return err
	}
	return h.m.applyEgress(ctx, h.sb, pol)
}

// procsvc: background processes.

func (h handle) ExecRequest(c ExecCall) (*agentv1.ExecRequest, error) {
	return h.sb.execRequest(c.Argv, c.Env, c.Workdir, c.Stdin, c.TimeoutMs, c.User)
}

func (h handle) Ended() <-chan struct{} { return h.sb.destroyed }

func (h handle) NotRunning() error {
	st, end := h.sb.current()
	return notRunning(h.sb.rec.ID, st, end)
}

// BegunExec is an exec a service runs and streams itself (BeginExec).
type BegunExec struct {
	// Ctx is the call's context, traced.
	Ctx context.Context
	// Sandbox is the sandbox, held with an exec slot.
	Sandbox Handle
	// Request is the agent's request (without an output cap).
	Request *agentv1.ExecRequest
	// Finish releases the slot and ends the trace with the exec's result
	// (its exec.finished event); the caller calls it once.
	Finish func(api.ExecResponse, error)
}

// BeginExec begins an exec whose output a service streams (procsvc's
// sandbox::exec::stream): traced, checked and given an exec slot as Exec
// is, its exec.started event emitted. A failed begin has ended its trace.
func (m *Manager) BeginExec(ctx context.Context, req api.ExecRequest) (BegunExec, error) {
	ctx, done := tracing.Exec(ctx, m.trace.obs, m.trace.emit, req)
	sb, release, areq, err := m.prepareExec(ctx, req)
	if err != nil {
		done(api.ExecResponse{}, err)
		return BegunExec{}, err
	}
	return BegunExec{Ctx: ctx, Sandbox: handle{m: m, sb: sb}, Request: areq, Finish: func(res api.ExecResponse, err error) {
		release()
		done(res, err)
	}}, nil
}

// interpsvc

func (h handle) HostURL(u string) string {
	if h.m.net == nil || !h.sb.rec.Network {
		return u
	}
	return h.m.net.HostURL(h.sb.rec.ID, u)
}

// snapsvc: copies of a sandbox, and the records of a service.

func (h handle) Copy() (api.CreateRequest, Origin) {
	rec := h.sb.snapshotRecord()
	req := api.CreateRequest{Network: rec.Network, Egress: rec.Egress, Image: rec.Image, CPUs: rec.CPUs, MemoryMB: rec.MemoryMB, Env: rec.Env,
		IdleTimeoutSecs: rec.IdleTimeoutSecs, OnIdle: rec.OnIdle, AutoResume: rec.AutoResume,
		TimeoutSecs: rec.TimeoutSecs, Metadata: rec.Metadata}
	return req, Origin{Runtime: rec.Runtime, ImageID: rec.ImageID, CPUs: rec.CPUs, MemoryMB: rec.MemoryMB, Network: rec.Network}
}

// Records is one bucket of the core's store in which a service keeps
// records of its own (snapsvc: snapshots, templates), as JSON by key.
type Records interface {
	// Put writes v under key, replacing what was there.
	Put(key string, v any) error
	// Get decodes the value of key into v; false when there is none.
	Get(key string, v any) (bool, error)
	// Remove deletes key, if it is there.
	Remove(key string) error
	// Each calls fn with every key and its value, in key order; value
	// is valid only during the call.
	Each(fn func(key string, value []byte) error) error
}

// Records is the bucket of the store named name, made if it is new.
func (m *Manager) Records(name string) (Records, error) { return m.store.bucket(name) }

// AllRecords decodes every value of r; those that do not decode, or whose
// idOf is not their key, are reported by key.
func AllRecords[T any](r Records, idOf func(*T) string) ([]*T, []string, error) {
	var out []*T
	var bad []string
	err := r.Each(func(k string, v []byte) error {
		var rec T
		if err := json.Unmarshal(v, &rec); err != nil || idOf(&rec) != k {
			bad = append(bad, k)
			return nil
		}
		out = append(out, &rec)
		return nil
	})
	return out, bad, err
}
