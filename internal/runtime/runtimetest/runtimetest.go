// Package runtimetest is a runtime.Runtime that runs in the test process:
// each instance is a real hutch agent (internal/agent's server) joined to
// the daemon's side over kernel pipes, through the same yamux and gRPC
// stack a sandbox uses. With it the manager's create, exec, stop, reaper,
// warm pool and shutdown run as ordinary `go test -race` tests, without
// root or runsc.
//
// It isolates nothing: the processes an agent starts are the test's own
// children, and filesystem calls see the host's filesystem. Tests choose
// how an instance ends (Die, Freeze) where a real runtime would learn it
// from the kernel.
package runtimetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/internal/agent"
	"github.com/hutch-dev/hutch/internal/agent/agenttest"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/runtime"
)

// Name is the runtime's name.
const Name = "inprocess"

// Runtime starts in-process instances. It is safe for concurrent use.
type Runtime struct {
	t testing.TB
	// host is what runtimes over one state share (Reopen).
	host *host

	mu sync.Mutex
	// beforeStart, when set, runs at the start of every Start; guarded by mu.
	beforeStart func(ctx context.Context, spec runtime.Spec) error
}

// host is the state of the runtimes of one test: the instances they
// started, as a real runtime's state directory holds its sandboxes.
type host struct {
	mu sync.Mutex
	// instances holds every instance started, by sandbox id; guarded by mu.
	instances map[string]*Instance
}

var (
	_ runtime.Runtime     = (*Runtime)(nil)
	_ runtime.Instance    = (*Instance)(nil)
	_ runtime.Resizer     = (*Instance)(nil)
	_ runtime.StatsReader = (*Instance)(nil)
	_ runtime.Pauser      = (*Instance)(nil)
)

// New returns a runtime whose instances are destroyed at the end of t.
func New(t testing.TB) *Runtime {
	r := &Runtime{t: t, host: &host{instances: map[string]*Instance{}}}
	t.Cleanup(func() {
		for _, inst := range r.Instances() {
			_ = inst.Destroy(context.Background())
		}
	})
	return r
}

// Reopen is another runtime over r's state, as the next daemon makes
// after a crash: its Reconcile finds the instances r started.
func (r *Runtime) Reopen() *Runtime { return &Runtime{t: r.t, host: r.host} }

// Abilities implements runtime.AbilityReporter; it takes Spec.Mounts
// (recording them in Instance.Spec).
func (r *Runtime) Abilities() runtime.Abilities {
	a := runtime.Discover(r, (*Instance)(nil))
	a.Mounts = true
	return a
}

// Name implements runtime.Runtime.
func (r *Runtime) Name() string { return Name }

// BeforeStart makes every later Start call f first: an error from f fails
// the Start, and f may block (until ctx ends, say) to make a slow boot.
func (r *Runtime) BeforeStart(f func(ctx context.Context, spec runtime.Spec) error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.beforeStart = f
}

// Start implements runtime.Runtime: it serves a new agent on one end of a
// pipe pair and returns the instance holding the other.
func (r *Runtime) Start(ctx context.Context, spec runtime.Spec) (runtime.Instance, error) {
	r.mu.Lock()
	before := r.beforeStart
	r.mu.Unlock()
	if before != nil {
		if err := before(ctx, spec); err != nil {
			return nil, fmt.Errorf("starting sandbox %s: %w", spec.ID, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("starting sandbox %s: %w", spec.ID, err)
	}
	if spec.UpperLayer != "" {
		return nil, errdefs.New(errdefs.CodeUnsupported, "the %s runtime cannot start a sandbox from a captured layer", Name)
	}
	srv, err := agent.New(agent.Options{Version: "runtimetest"})
	if err != nil {
		return nil, err
	}
	host, guest := agenttest.Pipe(r.t)
	serveCtx, stop := context.WithCancel(context.Background())
	inst := &Instance{
		Spec:   spec,
		host:   host,
		guest:  &gate{c: guest, thaw: make(chan struct{}), closed: make(chan struct{})},
		stop:   stop,
		served: make(chan struct{}),
		done:   make(chan struct{}),
		cpus:   spec.CPUs,
		mem:    spec.MemoryMB,
	}
	close(inst.guest.thaw)
	go func() {
		_ = srv.Serve(serveCtx, inst.guest)
		srv.KillAll()
		close(inst.served)
		// PID 1 exiting ends a sandbox.
		inst.end(runtime.End{Cause: runtime.CauseExited, Detail: "the agent exited"})
	}()
	r.host.mu.Lock()
	r.host.instances[spec.ID] = inst
	r.host.mu.Unlock()
	return inst, nil
}

// Reconcile implements runtime.Runtime: it destroys every instance of
// r's state (its own and those of the runtimes it was reopened from)
// that has not ended and whose id keep rejects, and returns their ids,
// sorted.
func (r *Runtime) Reconcile(ctx context.Context, keep func(string) bool) ([]string, error) {
	var ids []string
	var errs []error
	for _, inst := range r.Instances() {
		if inst.Ended() || keep(inst.Spec.ID) {
			continue
		}
		if err := inst.Destroy(ctx); err != nil {
			errs = append(errs, err)
			continue
		}
		ids = append(ids, inst.Spec.ID)
	}
	return ids, errors.Join(errs...)
}

// Instance returns the instance started for sandbox id, or nil.
func (r *Runtime) Instance(id string) *Instance {
	r.host.mu.Lock()
	defer r.host.mu.Unlock()
	return r.host.instances[id]
}

// Instances returns every instance started, ordered by sandbox id.
func (r *Runtime) Instances() []*Instance {
	r.host.mu.Lock()
	defer r.host.mu.Unlock()
	out := make([]*Instance, 0, len(r.host.instances))
	for _, inst := range r.host.instances {
		out = append(out, inst)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Spec.ID < out[j].Spec.ID })
	return out
}

// Running counts the instances that have not ended.
func (r *Runtime) Running() int {
	n := 0
	for _, inst := range r.Instances() {
		if !inst.Ended() {
			n++
		}
	}
	return n
}

// Instance is one in-process sandbox.
type Instance struct {
	// Spec is what the instance was started with.
	Spec runtime.Spec

	host  *agenttest.Conn
	guest *gate
	// stop cancels the agent's Serve; served is closed once it returned.
	stop   context.CancelFunc
	served chan struct{}
	// done is closed once the instance has ended.
	done chan struct{}

	// mu guards the fields below.
	mu        sync.Mutex
	ended     bool
	exit      runtime.End
	destroyed bool
	cpus, mem uint32
}

// Conn implements runtime.Instance: the daemon's end of the agent stream.
func (i *Instance) Conn() io.ReadWriteCloser { return i.host }

// Done implements runtime.Instance.
func (i *Instance) Done() <-chan struct{} { return i.done }

// Exit implements runtime.Instance: the End given to Die, or the agent's
// own exit; zero before Done and after an ordinary Destroy.
func (i *Instance) Exit() runtime.End {
	i.mu.Lock()
	defer i.mu.Unlock()
	if !i.ended {
		return runtime.End{}
	}
	return i.exit
}

// StderrTail implements runtime.Instance; an in-process agent writes no
// stderr of its own.
func (i *Instance) StderrTail() string { return "" }

// Destroy implements runtime.Instance: it ends the agent, which kills the
// processes of the calls it is serving. It is idempotent.
func (i *Instance) Destroy(ctx context.Context) error {
	i.mu.Lock()
	i.destroyed = true
	i.mu.Unlock()
	i.end(runtime.End{})
	select {
	case <-i.served:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("destroying sandbox %s: %w", i.Spec.ID, ctx.Err())
	}
}

// Die ends the instance on its own with end, as an out-of-memory kill or
// a crash would: its agent stops and its stream closes.
func (i *Instance) Die(end runtime.End) { i.end(end) }

// Freeze makes the agent stop answering without its stream closing: the
// agent's side neither reads nor writes until the instance ends, as a
// stopped (SIGSTOP) agent would.
func (i *Instance) Freeze() { i.guest.freeze() }

// Pause implements runtime.Pauser: the agent stops answering, its
// stream open, until Resume.
func (i *Instance) Pause(context.Context) error {
	if i.Ended() {
		return errors.New("the sandbox has ended")
	}
	i.guest.freeze()
	return nil
}

// Resume implements runtime.Pauser.
func (i *Instance) Resume(context.Context) error {
	if i.Ended() {
		return errors.New("the sandbox has ended")
	}
	i.guest.unfreeze()
	return nil
}

// Ended reports whether the instance has ended.
func (i *Instance) Ended() bool {
	select {
	case <-i.done:
		return true
	default:
		return false
	}
}

// Destroyed reports whether Destroy was called.
func (i *Instance) Destroyed() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.destroyed
}

// Resize implements runtime.Resizer; it only records the limits (Limits).
func (i *Instance) Resize(cpus, memoryMB uint32) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if cpus > 0 {
		i.cpus = cpus
	}
	if memoryMB > 0 {
		i.mem = memoryMB
	}
	return nil
}

// Limits returns the instance's current cpu and memory limits.
func (i *Instance) Limits() (cpus, memoryMB uint32) {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.cpus, i.mem
}

// Stats implements runtime.StatsReader with zero use: the test process's
// own use would say nothing of the sandbox.
func (i *Instance) Stats() (runtime.Stats, error) {
	if i.Ended() {
		return runtime.Stats{}, errors.New("the sandbox has ended")
	}
	return runtime.Stats{Pids: 1}, nil
}

// end ends the instance once, with exit as its Exit: the agent's Serve is
// cancelled and its end of the stream closed, which the daemon's side sees
// as the session ending. It returns once the agent has stopped serving.
func (i *Instance) end(exit runtime.End) {
	i.mu.Lock()
	if i.ended {
		i.mu.Unlock()
		return
	}
	i.ended, i.exit = true, exit
	i.mu.Unlock()
	i.stop()
	i.guest.Close()
	select {
	case <-i.served:
	case <-time.After(30 * time.Second):
		// A wedged agent must not wedge the test: Done still closes.
	}
	close(i.done)
}

// gate is the agent's end of the stream, which Freeze can stop.
type gate struct {
	c *agenttest.Conn

	mu       sync.Mutex
	thaw     chan struct{} // closed while not frozen
	closed   chan struct{}
	isClosed bool
}

func (g *gate) freeze() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.thaw = make(chan struct{})
}

func (g *gate) unfreeze() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.thaw:
	default:
		close(g.thaw)
	}
}

// wait blocks while g is frozen; it fails once g is closed.
func (g *gate) wait() error {
	g.mu.Lock()
	thaw := g.thaw
	g.mu.Unlock()
	select {
	case <-thaw:
		return nil
	case <-g.closed:
		return io.ErrClosedPipe
	}
}

func (g *gate) Read(p []byte) (int, error) {
	if err := g.wait(); err != nil {
		return 0, err
	}
	return g.c.Read(p)
}

func (g *gate) Write(p []byte) (int, error) {
	if err := g.wait(); err != nil {
		return 0, err
	}
	return g.c.Write(p)
}

// Close closes the agent's end of the stream and unblocks a frozen one.
func (g *gate) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.isClosed {
		return nil
	}
	g.isClosed = true
	close(g.closed)
	return g.c.Close()
}
