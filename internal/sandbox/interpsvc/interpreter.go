// Package interpsvc is the code interpreter (sandbox::interpreter::*): a
// context is a kernel (internal/interp) running as a background process
// of its sandbox, with its stdin open; a cell is written to that stdin and
// its output followed from where the previous cell's result ended, until
// the kernel's result line. One cell runs at a time in a context; others
// wait their turn. A cell past its timeout, or whose caller went away, is
// interrupted (SIGINT to the kernel's group) and its result still read, so
// that the next cell starts clean. The kernels run through the process
// functions (Processes); the service reaches a sandbox only through
// sandbox.Sandboxes, and forgets a sandbox's contexts once the core has
// torn it down (Forget, wired to Manager.OnTeardown by the daemon).
package interpsvc

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/hutch-dev/hutch/api"
	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/interp"
	"github.com/hutch-dev/hutch/internal/safetext"
	"github.com/hutch-dev/hutch/internal/sandbox"
	"github.com/hutch-dev/hutch/internal/sandbox/procsvc"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
)

// Core is what the service needs of the core: a live sandbox (Acquire),
// a sandbox's description (Get: its image and network, in any state)
// and an exec (install's check for its tool).
type Core interface {
	sandbox.Sandboxes
	Get(ctx context.Context, req api.GetRequest) (api.SandboxInfo, error)
	Exec(ctx context.Context, req api.ExecRequest) (api.ExecResponse, error)
}

// Processes are the process functions (functions.Processes) a kernel
// runs by, and the streamed exec an install runs by.
type Processes interface {
	StartProcess(ctx context.Context, req api.ProcessStartRequest) (api.ProcessStartResponse, error)
	WriteStdin(ctx context.Context, req api.ProcessStdinRequest) (api.ProcessStdinResponse, error)
	SignalProcess(ctx context.Context, req api.ProcessSignalRequest) (api.ProcessSignalResponse, error)
	KillProcess(ctx context.Context, req api.ProcessRequest) (api.ProcessSignalResponse, error)
	ExecStream(ctx context.Context, req api.ExecRequest, emit func(event string, data any) error) (api.ExecResponse, error)
}

// emitFunc emits one event of a streamed call.
type emitFunc = func(event string, data any) error

// Service holds the sandboxes' contexts (functions.Interpreter).
type Service struct {
	core  Core
	procs Processes
	// indexes are the operator's package_indexes; maxTimeoutMs is
	// max_exec_timeout_ms, an install's timeout.
	indexes      config.PackageIndexes
	maxTimeoutMs uint64
	// done is closed when the daemon shuts down; it ends an interrupt's
	// repeats.
	done <-chan struct{}

	mu sync.Mutex
	// books are the sandboxes' contexts, by sandbox id.
	books map[string]*interpBook
}

// New is the interpreter over core and procs, with cfg's package indexes
// and exec timeout; done is closed when the daemon shuts down.
func New(core Core, procs Processes, cfg config.Config, done <-chan struct{}) *Service {
	return &Service{core: core, procs: procs, indexes: cfg.PackageIndexes, maxTimeoutMs: cfg.MaxExecTimeoutMs, done: done}
}

// Forget drops the contexts of sandbox id, whose teardown is over: calls
// on them find none, as the core finds no sandbox but its tombstone.
func (s *Service) Forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.books, id)
}

// book is the book of sandbox id's contexts; with add, made on first use
// (else nil before it).
func (s *Service) book(id string, add bool) *interpBook {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.books[id]
	if b == nil && add {
		if s.books == nil {
			s.books = map[string]*interpBook{}
		}
		b = &interpBook{byID: map[string]*interpContext{}}
		s.books[id] = b
	}
	return b
}

// Bounds of the interpreter.
const (
	// maxContextsPerSandbox bounds a sandbox's contexts.
	maxContextsPerSandbox = 16
	// maxCodeBytes bounds a cell's code.
	maxCodeBytes = 1 << 20
	// maxResultBytes bounds a kernel's result line (images included).
	maxResultBytes = 32 << 20
	// interruptGrace is how long an interrupted cell has to answer
	// before its context is killed (and reported dead).
	interruptGrace = 5 * time.Second
	// contextTag begins the tag of a context's process.
	contextTag = "interpreter:"
	// kernelDir is where a kernel's file is written in the sandbox.
	kernelDir = "/tmp"
)

// interpContext is one context.
type interpContext struct {
	id, language, cwd string
	env               api.Env
	kernel            interp.Kernel
	isDefault         bool
	// turn is held by the cell running (one at a time).
	turn chan struct{}

	mu sync.Mutex
	// The fields below are guarded by mu.
	pid    int
	nonce  string
	nextID uint64
	count  int
	// stdout and stderr are where the next cell's output begins.
	stdout, stderr int64
	busy           bool
	dead           string
	// interrupting is set while an interrupt is being repeated.
	interrupting bool
}

// interpBook is a sandbox's contexts; start serializes the start of its
// default contexts.
type interpBook struct {
	start sync.Mutex
	mu    sync.Mutex
	byID  map[string]*interpContext
}

func (b *interpBook) get(id string) *interpContext {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.byID[id]
}

// defaultOf is the default context of language, nil before its first use.
func (b *interpBook) defaultOf(language string) *interpContext {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.byID {
		if c.isDefault && c.language == language {
			return c
		}
	}
	return nil
}

func (c *interpContext) info(sandboxID string) api.ContextInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	state := api.ContextIdle
	switch {
	case c.dead != "":
		state = api.ContextDead
	case c.busy:
		state = api.ContextBusy
	}
	return api.ContextInfo{ContextID: c.id, SandboxID: sandboxID, Language: c.language, Cwd: c.cwd, Pid: c.pid, State: state,
		Reason: c.dead, ExecutionCount: c.count, Default: c.isDefault}
}

// CreateContext starts a context (sandbox::interpreter::context::create).
func (s *Service) CreateContext(ctx context.Context, req api.ContextCreateRequest) (api.ContextInfo, error) {
	sb, release, err := s.core.Acquire(ctx, req.SandboxID, sandbox.UseCall)
	if err != nil {
		return api.ContextInfo{}, err
	}
	defer release()
	c, err := s.newContext(ctx, sb, req, false)
	if err != nil {
		return api.ContextInfo{}, err
	}
	return c.info(sb.ID()), nil
}

// newContext checks req, starts its kernel and books it in sb.
func (s *Service) newContext(ctx context.Context, sb sandbox.Handle, req api.ContextCreateRequest, isDefault bool) (*interpContext, error) {
	if req.Language == "" {
		req.Language = interp.Python
	}
	k, ok := interp.KernelOf(req.Language)
	if !ok {
		return nil, errdefs.Malformed("language must be one of %v, got %q", interp.Languages, spec.Clip(req.Language, 32))
	}
	if err := spec.ValidateEnv("env", req.Env); err != nil {
		return nil, err
	}
	if err := spec.ValidateWorkdir(req.Cwd); err != nil {
		return nil, err
	}
	c := &interpContext{id: uuid.NewString(), language: req.Language, cwd: req.Cwd, env: req.Env, kernel: k, isDefault: isDefault,
		turn: make(chan struct{}, 1)}
	b := s.book(sb.ID(), true)
	b.mu.Lock()
	if len(b.byID) >= maxContextsPerSandbox {
		b.mu.Unlock()
		return nil, errdefs.New(errdefs.CodeProcessLimit, "sandbox %s has %d interpreter contexts; delete one first", sb.ID(), maxContextsPerSandbox)
	}
	b.byID[c.id] = c // reserved; removed if the start fails
	b.mu.Unlock()
	if err := s.startKernel(ctx, sb, c); err != nil {
		b.mu.Lock()
		delete(b.byID, c.id)
		b.mu.Unlock()
		return nil, err
	}
	return c, nil
}

// startKernel starts c's kernel with a fresh nonce and state.
func (s *Service) startKernel(ctx context.Context, sb sandbox.Handle, c *interpContext) error {
	nonce := make([]byte, 16)
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails
	env := append(append(api.Env{}, c.env...), c.kernel.Env...)
	if c.language == interp.JavaScript || c.language == interp.TypeScript { // issue 40: typescript too
		// What sandbox::interpreter::install put there.
		env = append(env, "NODE_PATH="+sb.Workdir()+"/node_modules")
	}
	env = append(env, interp.NonceEnv+"="+hex.EncodeToString(nonce))
	// The kernel runs from its file, a short command in process lists;
	// written at every start, as the sandbox may have changed it since.
	if err := writeFile(ctx, sb, c.kernel.Path(kernelDir), []byte(c.kernel.Source)); err != nil {
		return err
	}
	program := c.kernel.Interpreter[0]
	st, err := s.procs.StartProcess(ctx, api.ProcessStartRequest{SandboxID: sb.ID(), Argv: c.kernel.Argv(kernelDir), Env: env, Workdir: c.cwd,
		Stdin: true, Tag: contextTag + c.id})
	if errors.Is(err, procsvc.ErrCannotStart) {
		return errdefs.New(errdefs.CodeNoInterpreter, "sandbox %s (image %s) has no %s for %s contexts", sb.ID(), s.image(ctx, sb.ID()), program, c.language).
			WithFix(nil, sb.Fix(program))
	}
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.pid, c.nonce, c.count, c.stdout, c.stderr, c.dead, c.busy = st.Pid, hex.EncodeToString(nonce), 0, 0, 0, "", false
	c.mu.Unlock()
	ready, err := awaitReady(ctx, sb, st.Pid, hex.EncodeToString(nonce))
	if err != nil {
		_ = s.killKernel(context.WithoutCancel(ctx), sb.ID(), c)
		return err
	}
	c.mu.Lock()
	c.stderr = ready
	c.mu.Unlock()
	return nil
}

// kernelReadyTimeout bounds a kernel's start, to its ready line.
const kernelReadyTimeout = time.Minute

// awaitReady waits for the ready line of the kernel of pid on stderr
// (SIGINT is the kernel's own from then on: an interrupt before it would
// end the kernel) and returns the stderr offset after it, where the first
// cell's stderr begins. What the kernel writes on stderr before it (its
// start's warnings) is dropped.
func awaitReady(ctx context.Context, sb sandbox.Handle, pid int, nonce string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, kernelReadyTimeout)
	defer cancel()
	events, err := sb.Agent().Attach(ctx, &agentv1.AttachRequest{Pid: int32(pid)})
	if err != nil {
		return 0, procsvc.Fail(ctx, sb, "starting a context", pid, err)
	}
	defer events.Close()
	split := interp.NewSplitter(nonce, 64)
	for {
		ev, err := events.Recv()
		if err != nil {
			if ctx.Err() != nil {
				return 0, errdefs.New(errdefs.CodeExecTimeout, "the interpreter did not start within %s", kernelReadyTimeout)
			}
			return 0, procsvc.Fail(ctx, sb, "starting a context", pid, err)
		}
		if x := ev.GetExited(); x != nil {
			return 0, errdefs.New(errdefs.CodeContextDead, "the interpreter exited as it started (status %d)", x.GetExitCode())
		}
		o := ev.GetOutput()
		if o == nil || o.GetStream() != agentv1.Stream_STREAM_STDERR {
			continue
		}
		_, line, err := split.Write(o.GetData())
		if err == nil && line != nil && string(line) != "ready" {
			err = errors.New("its first line was not its ready line")
		}
		if err != nil {
			return 0, errdefs.New(errdefs.CodeContextDead, "the interpreter broke its protocol as it started: %v", err)
		}
		if line != nil {
			return o.GetOffset() + int64(len(o.GetData())-split.Rest()), nil
		}
	}
}

// writeFile writes data to the file at p of sb through its agent, as
// sandbox::fs::write does (filesvc), with the core's fs error mapping.
func writeFile(ctx context.Context, sb sandbox.Handle, p string, data []byte) error {
	if _, err := sb.Agent().Upload(ctx, &agentv1.FsUploadHeader{Path: p}, bytes.NewReader(data), sb.Touch); err != nil {
		return sb.FsFail(ctx, "write of "+p, err)
	}
	return nil
}

// image is the image of the caller's sandbox id, for an error message.
func (s *Service) image(ctx context.Context, id string) string {
	info, _ := s.core.Get(ctx, api.GetRequest{SandboxID: id})
	return info.Image
}

// findContext finds the caller's context id: its sandbox (acquired for a
// call; release it) and the context.
func (s *Service) findContext(ctx context.Context, id string) (sandbox.Handle, *interpContext, func(), error) {
	if id == "" {
		return nil, nil, nil, errdefs.Malformed("context_id is required")
	}
	s.mu.Lock()
	owner := ""
	for sbID, b := range s.books {
		if b.get(id) != nil {
			owner = sbID
			break
		}
	}
	s.mu.Unlock()
	notFound := errdefs.New(errdefs.CodeNoContext, "no interpreter context %q", spec.Clip(id, 64)).
		WithFix(nil, "sandbox::interpreter::context::list shows a sandbox's contexts")
	if owner == "" {
		return nil, nil, nil, notFound
	}
	sb, release, err := s.core.Acquire(ctx, owner, sandbox.UseCall)
	if errdefs.Is(err, errdefs.CodeNotFound) {
		return nil, nil, nil, notFound // another owner's
	}
	if err != nil {
		return nil, nil, nil, err
	}
	c := s.book(owner, false).get(id)
	if c == nil {
		release()
		return nil, nil, nil, notFound
	}
	return sb, c, release, nil
}

// ListContexts lists a sandbox's contexts (sandbox::interpreter::context::list).
func (s *Service) ListContexts(ctx context.Context, req api.ContextListRequest) (api.ContextListResponse, error) {
	sb, release, err := s.core.Acquire(ctx, req.SandboxID, sandbox.UseRead)
	if err != nil {
		return api.ContextListResponse{}, err
	}
	defer release()
	out := api.ContextListResponse{Contexts: []api.ContextInfo{}}
	if b := s.book(sb.ID(), false); b != nil {
		b.mu.Lock()
		for _, c := range b.byID {
			if c.pid > 0 || c.dead != "" {
				out.Contexts = append(out.Contexts, c.info(sb.ID()))
			}
		}
		b.mu.Unlock()
	}
	sort.Slice(out.Contexts, func(i, j int) bool { return out.Contexts[i].Pid < out.Contexts[j].Pid })
	return out, nil
}

// RestartContext starts a fresh kernel under the same id, killing the old
// one (sandbox::interpreter::context::restart).
func (s *Service) RestartContext(ctx context.Context, req api.ContextRequest) (api.ContextInfo, error) {
	sb, c, release, err := s.findContext(ctx, req.ContextID)
	if err != nil {
		return api.ContextInfo{}, err
	}
	defer release()
	if err := s.killKernel(ctx, sb.ID(), c); err != nil {
		return api.ContextInfo{}, err
	}
	// A cell still running ends with the kernel; take the turn after it.
	select {
	case c.turn <- struct{}{}:
	case <-ctx.Done():
		return api.ContextInfo{}, ctx.Err()
	}
	defer func() { <-c.turn }()
	if err := s.startKernel(ctx, sb, c); err != nil {
		return api.ContextInfo{}, err
	}
	return c.info(sb.ID()), nil
}

// DeleteContext kills a context's kernel and forgets it
// (sandbox::interpreter::context::delete).
func (s *Service) DeleteContext(ctx context.Context, req api.ContextRequest) (api.ContextInfo, error) {
	sb, c, release, err := s.findContext(ctx, req.ContextID)
	if err != nil {
		return api.ContextInfo{}, err
	}
	defer release()
	if err := s.killKernel(ctx, sb.ID(), c); err != nil {
		return api.ContextInfo{}, err
	}
	if b := s.book(sb.ID(), false); b != nil {
		b.mu.Lock()
		delete(b.byID, c.id)
		b.mu.Unlock()
	}
	return c.info(sb.ID()), nil
}

// killKernel kills c's kernel, in sandbox sbID, unless it has exited
// already.
func (s *Service) killKernel(ctx context.Context, sbID string, c *interpContext) error {
	c.mu.Lock()
	pid, dead := c.pid, c.dead
	c.mu.Unlock()
	if dead != "" {
		return nil
	}
	_, err := s.procs.KillProcess(ctx, api.ProcessRequest{SandboxID: sbID, Pid: pid})
	if errdefs.Is(err, errdefs.CodeProcessExited) || errdefs.Is(err, errdefs.CodeProcessNotFound) {
		err = nil
	}
	c.mu.Lock()
	c.dead = "killed"
	c.mu.Unlock()
	return err
}

// Interrupt interrupts the cell running in a context
// (sandbox::interpreter::interrupt): SIGINT to its kernel's group.
func (s *Service) Interrupt(ctx context.Context, req api.ContextRequest) (api.InterruptResponse, error) {
	sb, c, release, err := s.findContext(ctx, req.ContextID)
	if err != nil {
		return api.InterruptResponse{}, err
	}
	defer release()
	c.mu.Lock()
	pid, busy, dead, cell := c.pid, c.busy, c.dead, c.nextID
	c.mu.Unlock()
	if dead != "" {
		return api.InterruptResponse{}, contextDead(c.id, dead)
	}
	if busy {
		if err := s.interruptKernel(ctx, sb.ID(), pid); err != nil {
			return api.InterruptResponse{}, err
		}
		s.repeatInterrupt(context.WithoutCancel(ctx), sb.ID(), c, pid, cell)
	}
	return api.InterruptResponse{ContextID: c.id, Running: busy}, nil
}

// Interrupt repeats: a kernel ignores SIGINT between cells, and a cell
// that is sent but not yet read by the kernel would miss the first one.
const (
	interruptEvery   = 250 * time.Millisecond
	interruptRepeats = 20
)

// repeatInterrupt sends SIGINT again, in the background, while cell is
// still the one running, a few seconds at most, for ctx's owner.
func (s *Service) repeatInterrupt(ctx context.Context, sbID string, c *interpContext, pid int, cell uint64) {
	c.mu.Lock()
	if c.interrupting {
		c.mu.Unlock()
		return
	}
	c.interrupting = true
	c.mu.Unlock()
	go func() {
		defer func() {
			c.mu.Lock()
			c.interrupting = false
			c.mu.Unlock()
		}()
		for range interruptRepeats {
			select {
			case <-time.After(interruptEvery):
			case <-s.done:
				return
			}
			c.mu.Lock()
			still := c.busy && c.nextID == cell && c.pid == pid
			c.mu.Unlock()
			if !still || s.interruptKernel(ctx, sbID, pid) != nil {
				return
			}
		}
	}()
}

func (s *Service) interruptKernel(ctx context.Context, sbID string, pid int) error {
	_, err := s.procs.SignalProcess(ctx, api.ProcessSignalRequest{SandboxID: sbID, Pid: pid, Signal: "INT"})
	if errdefs.Is(err, errdefs.CodeProcessExited) {
		return nil // it died meanwhile; the cell reports it
	}
	return err
}

func contextDead(id, why string) error {
	return errdefs.New(errdefs.CodeContextDead, "interpreter context %s has ended (%s); its state is gone", id, safetext.Line(why, 256)).
		WithFix(map[string]any{"context_id": id}, "sandbox::interpreter::context::restart starts it again")
}

// RunCode runs a cell (sandbox::interpreter::run): its stdout and stderr
// are emitted as they are written, and its result returned.
func (s *Service) RunCode(ctx context.Context, req api.RunCodeRequest, emit emitFunc) (api.CellResult, error) {
	if len(req.Code) > maxCodeBytes {
		return api.CellResult{}, errdefs.Malformed("code is %d bytes; at most %d", len(req.Code), maxCodeBytes)
	}
	// issue 40: a cell's own variables, bounded with its code.
	if err := spec.ValidateEnv("env", req.Env); err != nil {
		return api.CellResult{}, err
	}
	if n := len(strings.Join(req.Env, "")); n > maxCodeBytes {
		return api.CellResult{}, errdefs.Malformed("env is %d bytes; at most %d", n, maxCodeBytes)
	}
	sb, c, release, err := s.cellContext(ctx, req)
	if err != nil {
		return api.CellResult{}, err
	}
	defer release()
	select {
	case c.turn <- struct{}{}:
	case <-ctx.Done():
		return api.CellResult{}, ctx.Err()
	}
	held := true
	defer func() {
		if held {
			<-c.turn
		}
	}()
	c.mu.Lock()
	if c.dead != "" {
		dead := c.dead
		c.mu.Unlock()
		return api.CellResult{}, contextDead(c.id, dead)
	}
	c.nextID++
	id, pid := c.nextID, c.pid
	offsets := [2]int64{c.stdout, c.stderr}
	c.busy = true
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.busy = false
		c.mu.Unlock()
	}()

	start := time.Now()
	// The output is followed before the cell is sent: nothing is missed.
	events, err := sb.Agent().Attach(context.WithoutCancel(ctx), &agentv1.AttachRequest{Pid: int32(pid), StdoutOffset: offsets[0], StderrOffset: offsets[1]})
	if err != nil {
		return api.CellResult{}, procsvc.Fail(ctx, sb, "following a context", pid, err)
	}
	line := c.kernel.Request(id, req.Code, req.Env) // issue 40: per-cell env
	if _, err := s.procs.WriteStdin(ctx, api.ProcessStdinRequest{SandboxID: sb.ID(), Pid: pid, Data: string(line)}); err != nil {
		events.Close()
		if errdefs.Is(err, errdefs.CodeProcessExited) || errdefs.Is(err, errdefs.CodeNoStdin) {
			return api.CellResult{}, markDead(c, "its interpreter had exited")
		}
		return api.CellResult{}, err
	}

	cell := &cellRun{s: s, bg: context.WithoutCancel(ctx), sb: sb, c: c, id: id, pid: pid, emit: emit, events: events, got: make(chan recvd, 1),
		split: interp.NewSplitter(c.nonce, maxResultBytes), errSplit: interp.NewSplitter(c.nonce, 64),
		timer: time.NewTimer(time.Duration(sb.ExecTimeout(req.TimeoutMs)) * time.Millisecond)}
	res, err := cell.read(ctx)
	if cell.detached && err != nil && !cell.ended {
		// The caller went away mid-cell: the cell was interrupted; its
		// result is read in the background, holding the context's turn,
		// so that the next cell starts after it.
		held = false
		go func() {
			defer func() { <-c.turn }()
			defer events.Close()
			_, _ = cell.read(context.Background())
		}()
		return api.CellResult{}, err
	}
	events.Close()
	if err != nil {
		return api.CellResult{}, err
	}
	res.ContextID = c.id
	res.DurationMs = uint64(time.Since(start).Milliseconds())
	return res, nil
}

// cellContext is the context a cell runs in: the one named, or the
// sandbox's default of the language, started on first use.
func (s *Service) cellContext(ctx context.Context, req api.RunCodeRequest) (sandbox.Handle, *interpContext, func(), error) {
	if req.ContextID != "" {
		if req.Language != "" || req.SandboxID != "" {
			sb, c, release, err := s.findContext(ctx, req.ContextID)
			if err == nil && ((req.Language != "" && req.Language != c.language) || (req.SandboxID != "" && req.SandboxID != sb.ID())) {
				release()
				return nil, nil, nil, errdefs.Malformed("context %s is a %s context of sandbox %s", c.id, c.language, sb.ID())
			}
			return sb, c, release, err
		}
		return s.findContext(ctx, req.ContextID)
	}
	if req.SandboxID == "" {
		return nil, nil, nil, errdefs.Malformed("give context_id, or sandbox_id (and language) for the sandbox's default context")
	}
	language := req.Language
	if language == "" {
		language = interp.Python
	}
	sb, release, err := s.core.Acquire(ctx, req.SandboxID, sandbox.UseCall)
	if err != nil {
		return nil, nil, nil, err
	}
	b := s.book(sb.ID(), true)
	c := b.defaultOf(language)
	if c == nil {
		// One default per language, even for racing first cells.
		b.start.Lock()
		if c = b.defaultOf(language); c == nil {
			c, err = s.newContext(ctx, sb, api.ContextCreateRequest{Language: language}, true)
		}
		b.start.Unlock()
		if err != nil {
			release()
			return nil, nil, nil, err
		}
	}
	return sb, c, release, nil
}

// markDead records that c's kernel has ended and returns the error that
// says so.
func markDead(c *interpContext, why string) error {
	c.mu.Lock()
	if c.dead == "" {
		c.dead = why
	}
	why = c.dead
	c.mu.Unlock()
	return contextDead(c.id, why)
}

// cellRun reads one cell's output and result.
type cellRun struct {
	s *Service
	// bg is the caller's context without its cancellation: the calls a
	// cell makes after its caller went away (interrupt, kill) act for the
	// same owner.
	bg    context.Context
	sb    sandbox.Handle
	c     *interpContext
	id    uint64
	pid   int
	emit  emitFunc
	split *interp.Splitter
	// errSplit finds the end of the cell's stderr; outDone and errDone
	// say each stream reached its end, res is the result once read.
	errSplit         *interp.Splitter
	outDone, errDone bool
	res              api.CellResult
	events           interface {
		Recv() (*agentv1.ProcessEvent, error)
	}
	// got takes the event of the Recv in flight (receiving says one is).
	got       chan recvd
	receiving bool
	// timer fires at the cell's timeout, then at the end of an
	// interrupt's grace.
	timer *time.Timer
	// interrupted says SIGINT was sent (timeout or caller gone),
	// detached that the caller went away, ended that the cell is over
	// (its result read, or its context dead).
	interrupted, timedOut, detached, ended bool
}

type recvd struct {
	ev  *agentv1.ProcessEvent
	err error
}

// read reads events until the cell's result; past its timeout, or once
// ctx ends, the cell is interrupted, and past interruptGrace after that
// the kernel is killed. It may be called again after returning because
// ctx ended: it goes on where it was.
func (r *cellRun) read(ctx context.Context) (api.CellResult, error) {
	done := ctx.Done()
	for {
		if !r.receiving {
			r.receiving = true
			go func() {
				ev, err := r.events.Recv()
				r.got <- recvd{ev, err}
			}()
		}
		select {
		case <-done:
			r.detached = true
			r.interrupt()
			return api.CellResult{}, ctx.Err()
		case <-r.timer.C:
			if r.interrupted {
				r.ended = true
				_ = r.s.killKernel(r.bg, r.sb.ID(), r.c)
				return api.CellResult{}, markDead(r.c, "killed: it did not stop within "+interruptGrace.String()+" of an interrupt")
			}
			r.timedOut = true
			r.interrupt()
		case g := <-r.got:
			r.receiving = false
			if g.err != nil {
				r.ended = true
				if g.err == io.EOF {
					return api.CellResult{}, markDead(r.c, "its interpreter exited")
				}
				return api.CellResult{}, procsvc.Fail(r.bg, r.sb, "following a context", r.pid, g.err)
			}
			res, end, err := r.take(g.ev)
			if end {
				r.ended = true
				return res, err
			}
		}
	}
}

// interrupt sends SIGINT, again while the cell runs (a cell sent but not
// yet read would miss the first one), and gives the cell interruptGrace
// to answer.
func (r *cellRun) interrupt() {
	if r.interrupted {
		return
	}
	r.interrupted = true
	if r.s.interruptKernel(r.bg, r.sb.ID(), r.pid) == nil {
		r.s.repeatInterrupt(r.bg, r.sb.ID(), r.c, r.pid, r.id)
	}
	r.timer.Stop()
	r.timer = time.NewTimer(interruptGrace)
}

// take handles one event: output is emitted (unless the caller went
// away); the result line ends the cell.
func (r *cellRun) take(ev *agentv1.ProcessEvent) (api.CellResult, bool, error) {
	if x := ev.GetExited(); x != nil {
		why := "its interpreter exited with status " + strconv.Itoa(int(x.GetExitCode()))
		if x.GetSignal() > 0 {
			why = "its interpreter was killed by " + procsvc.SignalName(x.GetSignal())
		}
		return api.CellResult{}, true, markDead(r.c, why)
	}
	o := ev.GetOutput()
	if o == nil {
		return api.CellResult{}, false, nil
	}
	r.sb.Touch()
	data := o.GetData()
	if o.GetStream() == agentv1.Stream_STREAM_STDERR {
		return r.takeStderr(o.GetOffset(), o.GetDropped(), data)
	}
	if r.outDone {
		return r.res, r.errDone, nil // the next cell's, or a stray thread's: left unread
	}
	output, line, err := r.split.Write(data)
	if err != nil {
		return api.CellResult{}, true, r.broken(err.Error())
	}
	if err := r.out(api.EventStdout, o.GetOffset(), o.GetDropped(), output); err != nil {
		return api.CellResult{}, true, err
	}
	if line == nil {
		return api.CellResult{}, false, nil
	}
	r.setOffset(0, o.GetOffset()+int64(len(data)-r.split.Rest()))
	kr, err := interp.ParseResult(line)
	if err != nil || kr.ID != r.id {
		why := "its result was not the cell's"
		if err != nil {
			why = err.Error()
		}
		return api.CellResult{}, true, r.broken(why)
	}
	r.c.mu.Lock()
	r.c.count = kr.ExecutionCount
	r.c.mu.Unlock()
	r.res = api.CellResult{ExecutionCount: kr.ExecutionCount, Status: kr.Status, Data: kr.Data, Display: kr.Display,
		ExitCode: kr.ExitCode, TimedOut: r.timedOut}
	if kr.Error != nil {
		r.res.Error = &api.CellError{Name: kr.Error.Name, Value: kr.Error.Value, Traceback: kr.Error.Traceback}
	}
	r.outDone = true
	return r.res, r.errDone, nil
}

// takeStderr handles a piece of stderr: the cell's, until the kernel's
// end mark (written before the result, but the streams arrive apart).
func (r *cellRun) takeStderr(offset, dropped int64, data []byte) (api.CellResult, bool, error) {
	if r.errDone {
		return r.res, r.outDone, nil
	}
	output, line, err := r.errSplit.Write(data)
	if err != nil {
		return api.CellResult{}, true, r.broken(err.Error())
	}
	if err := r.out(api.EventStderr, offset, dropped, output); err != nil {
		return api.CellResult{}, true, err
	}
	if line == nil {
		return api.CellResult{}, false, nil
	}
	if string(line) != strconv.FormatUint(r.id, 10) {
		return api.CellResult{}, true, r.broken("its stderr's end was not the cell's")
	}
	r.setOffset(1, offset+int64(len(data)-r.errSplit.Rest()))
	r.errDone = true
	return r.res, r.outDone, nil
}

// broken kills a kernel that broke the protocol and reports its context
// dead.
func (r *cellRun) broken(why string) error {
	_ = r.s.killKernel(r.bg, r.sb.ID(), r.c)
	return markDead(r.c, why)
}

// out emits a piece of the cell's output, unless the caller went away.
func (r *cellRun) out(event string, offset, dropped int64, data []byte) error {
	if r.detached || (len(data) == 0 && dropped == 0) {
		return nil
	}
	chunk := api.OutputChunk{Offset: offset, Dropped: dropped}
	chunk.Data, chunk.Base64 = procsvc.TextOrBase64(data)
	if err := r.emit(event, chunk); err != nil {
		r.detached = true // the caller went away: the read goes on
		r.interrupt()
	}
	return nil
}

func (r *cellRun) setOffset(stream int, end int64) {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	if stream == 0 {
		r.c.stdout = end
	} else {
		r.c.stderr = end
	}
}
