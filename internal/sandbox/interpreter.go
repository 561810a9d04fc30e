package sandbox

// The code interpreter: a context is a kernel (internal/interp) running as
// a background process of its sandbox, with its stdin open; a cell is
// written to that stdin and its output followed from where the previous
// cell's result ended, until the kernel's result line. One cell runs at a
// time in a context; others wait their turn. A cell past its timeout, or
// whose caller went away, is interrupted (SIGINT to the kernel's group)
// and its result still read, so that the next cell starts clean.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/hutch-dev/hutch/api"
	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/interp"
	"github.com/hutch-dev/hutch/internal/safetext"
)

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

// interpBook is a sandbox's contexts.
type interpBook struct {
	mu   sync.Mutex
	byID map[string]*interpContext
}

func (b *interpBook) get(id string) *interpContext {
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
func (m *Manager) CreateContext(ctx context.Context, req api.ContextCreateRequest) (api.ContextInfo, error) {
	sb, release, err := m.acquire(ctx, req.SandboxID, UseCall)
	if err != nil {
		return api.ContextInfo{}, err
	}
	defer release()
	c, err := m.newContext(ctx, sb, req, false)
	if err != nil {
		return api.ContextInfo{}, err
	}
	return c.info(sb.rec.ID), nil
}

// newContext checks req, starts its kernel and books it in sb.
func (m *Manager) newContext(ctx context.Context, sb *sandbox, req api.ContextCreateRequest, isDefault bool) (*interpContext, error) {
	if req.Language == "" {
		req.Language = interp.Python
	}
	k, ok := interp.KernelOf(req.Language)
	if !ok {
		return nil, errdefs.Malformed("language must be one of %v, got %q", interp.Languages, clip(req.Language, 32))
	}
	if err := ValidateEnv("env", req.Env); err != nil {
		return nil, err
	}
	if err := ValidateWorkdir(req.Cwd); err != nil {
		return nil, err
	}
	c := &interpContext{id: uuid.NewString(), language: req.Language, cwd: req.Cwd, env: req.Env, kernel: k, isDefault: isDefault,
		turn: make(chan struct{}, 1)}
	sb.interp.mu.Lock()
	if sb.interp.byID == nil {
		sb.interp.byID = map[string]*interpContext{}
	}
	if len(sb.interp.byID) >= maxContextsPerSandbox {
		sb.interp.mu.Unlock()
		return nil, errdefs.New(errdefs.CodeProcessLimit, "sandbox %s has %d interpreter contexts; delete one first", sb.rec.ID, maxContextsPerSandbox)
	}
	sb.interp.byID[c.id] = c // reserved; removed if the start fails
	sb.interp.mu.Unlock()
	if err := m.startKernel(ctx, sb, c); err != nil {
		sb.interp.mu.Lock()
		delete(sb.interp.byID, c.id)
		sb.interp.mu.Unlock()
		return nil, err
	}
	return c, nil
}

// startKernel starts c's kernel with a fresh nonce and state.
func (m *Manager) startKernel(ctx context.Context, sb *sandbox, c *interpContext) error {
	nonce := make([]byte, 16)
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails
	env := append(append(api.Env{}, c.env...), c.kernel.Env...)
	if c.language == interp.JavaScript {
		// What sandbox::interpreter::install put there.
		env = append(env, "NODE_PATH="+packageDir(sb)+"/node_modules")
	}
	env = append(env, interp.NonceEnv+"="+hex.EncodeToString(nonce))
	// The kernel runs from its file, a short command in process lists;
	// written at every start, as the sandbox may have changed it since.
	src := c.kernel.Source
	if err := m.writeFile(ctx, sb, c.kernel.Path(kernelDir), []byte(src)); err != nil {
		return err
	}
	program := c.kernel.Interpreter[0]
	st, err := m.procs.StartProcess(ctx, api.ProcessStartRequest{SandboxID: sb.rec.ID, Argv: c.kernel.Argv(kernelDir), Env: env, Workdir: c.cwd,
		Stdin: true, Tag: contextTag + c.id})
	if errors.Is(err, ErrCannotStart) {
		return errdefs.New(errdefs.CodeNoInterpreter, "sandbox %s (image %s) has no %s for %s contexts", sb.rec.ID, sb.rec.Image, program, c.language).
			WithFix(nil, m.withFix(program))
	}
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.pid, c.nonce, c.count, c.stdout, c.stderr, c.dead, c.busy = st.Pid, hex.EncodeToString(nonce), 0, 0, 0, "", false
	c.mu.Unlock()
	return nil
}

// writeFile writes data to the file at p of sb as the image's user, as
// sandbox::fs::write does (filesvc; the kernel's file is a path of ours).
func (m *Manager) writeFile(ctx context.Context, sb *sandbox, p string, data []byte) error {
	sb, release, err := m.acquire(ctx, sb.rec.ID, UseCall)
	if err != nil {
		return err
	}
	defer release()
	if _, err := sb.client().Upload(ctx, &agentv1.FsUploadHeader{Path: p}, bytes.NewReader(data), sb.touch); err != nil {
		return m.fsError(ctx, sb, "write of "+p, err)
	}
	return nil
}

// findContext finds the caller's context id: its sandbox (acquired for a
// call; release it) and the context.
func (m *Manager) findContext(ctx context.Context, id string) (*sandbox, *interpContext, func(), error) {
	if id == "" {
		return nil, nil, nil, errdefs.Malformed("context_id is required")
	}
	m.mu.Lock()
	var owner *sandbox
	for _, sb := range m.sandboxes {
		if sb.interp.get(id) != nil {
			owner = sb
			break
		}
	}
	m.mu.Unlock()
	notFound := errdefs.New(errdefs.CodeNoContext, "no interpreter context %q", clip(id, 64)).
		WithFix(nil, "sandbox::interpreter::context::list shows a sandbox's contexts")
	if owner == nil {
		return nil, nil, nil, notFound
	}
	sb, release, err := m.acquire(ctx, owner.rec.ID, UseCall)
	if errdefs.Is(err, errdefs.CodeNotFound) {
		return nil, nil, nil, notFound // another owner's
	}
	if err != nil {
		return nil, nil, nil, err
	}
	c := sb.interp.get(id)
	if c == nil {
		release()
		return nil, nil, nil, notFound
	}
	return sb, c, release, nil
}

// ListContexts lists a sandbox's contexts (sandbox::interpreter::context::list).
func (m *Manager) ListContexts(ctx context.Context, req api.ContextListRequest) (api.ContextListResponse, error) {
	sb, release, err := m.acquire(ctx, req.SandboxID, UseRead)
	if err != nil {
		return api.ContextListResponse{}, err
	}
	defer release()
	out := api.ContextListResponse{Contexts: []api.ContextInfo{}}
	sb.interp.mu.Lock()
	for _, c := range sb.interp.byID {
		if c.pid > 0 || c.dead != "" {
			out.Contexts = append(out.Contexts, c.info(sb.rec.ID))
		}
	}
	sb.interp.mu.Unlock()
	sort.Slice(out.Contexts, func(i, j int) bool { return out.Contexts[i].Pid < out.Contexts[j].Pid })
	return out, nil
}

// RestartContext starts a fresh kernel under the same id, killing the old
// one (sandbox::interpreter::context::restart).
func (m *Manager) RestartContext(ctx context.Context, req api.ContextRequest) (api.ContextInfo, error) {
	sb, c, release, err := m.findContext(ctx, req.ContextID)
	if err != nil {
		return api.ContextInfo{}, err
	}
	defer release()
	if err := m.killKernel(ctx, sb, c); err != nil {
		return api.ContextInfo{}, err
	}
	// A cell still running ends with the kernel; take the turn after it.
	select {
	case c.turn <- struct{}{}:
	case <-ctx.Done():
		return api.ContextInfo{}, ctx.Err()
	}
	defer func() { <-c.turn }()
	if err := m.startKernel(ctx, sb, c); err != nil {
		return api.ContextInfo{}, err
	}
	return c.info(sb.rec.ID), nil
}

// DeleteContext kills a context's kernel and forgets it
// (sandbox::interpreter::context::delete).
func (m *Manager) DeleteContext(ctx context.Context, req api.ContextRequest) (api.ContextInfo, error) {
	sb, c, release, err := m.findContext(ctx, req.ContextID)
	if err != nil {
		return api.ContextInfo{}, err
	}
	defer release()
	if err := m.killKernel(ctx, sb, c); err != nil {
		return api.ContextInfo{}, err
	}
	sb.interp.mu.Lock()
	delete(sb.interp.byID, c.id)
	sb.interp.mu.Unlock()
	return c.info(sb.rec.ID), nil
}

// killKernel kills c's kernel unless it has exited already.
func (m *Manager) killKernel(ctx context.Context, sb *sandbox, c *interpContext) error {
	c.mu.Lock()
	pid, dead := c.pid, c.dead
	c.mu.Unlock()
	if dead != "" {
		return nil
	}
	_, err := m.procs.KillProcess(ctx, api.ProcessRequest{SandboxID: sb.rec.ID, Pid: pid})
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
func (m *Manager) Interrupt(ctx context.Context, req api.ContextRequest) (api.InterruptResponse, error) {
	sb, c, release, err := m.findContext(ctx, req.ContextID)
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
		if err := m.interruptKernel(ctx, sb, pid); err != nil {
			return api.InterruptResponse{}, err
		}
		m.repeatInterrupt(sb, c, pid, cell)
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
// still the one running, a few seconds at most.
func (m *Manager) repeatInterrupt(sb *sandbox, c *interpContext, pid int, cell uint64) {
	c.mu.Lock()
	if c.interrupting {
		c.mu.Unlock()
		return
	}
	c.interrupting = true
	c.mu.Unlock()
	m.destroying.Go(func() {
		defer func() {
			c.mu.Lock()
			c.interrupting = false
			c.mu.Unlock()
		}()
		for range interruptRepeats {
			select {
			case <-time.After(interruptEvery):
			case <-m.shutdown.Done():
				return
			}
			c.mu.Lock()
			still := c.busy && c.nextID == cell && c.pid == pid
			c.mu.Unlock()
			if !still || m.interruptKernel(m.shutdown, sb, pid) != nil {
				return
			}
		}
	})
}

func (m *Manager) interruptKernel(ctx context.Context, sb *sandbox, pid int) error {
	_, err := m.procs.SignalProcess(ctx, api.ProcessSignalRequest{SandboxID: sb.rec.ID, Pid: pid, Signal: "INT"})
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
func (m *Manager) RunCode(ctx context.Context, req api.RunCodeRequest, emit emitFunc) (api.CellResult, error) {
	if len(req.Code) > maxCodeBytes {
		return api.CellResult{}, errdefs.Malformed("code is %d bytes; at most %d", len(req.Code), maxCodeBytes)
	}
	sb, c, release, err := m.cellContext(ctx, req)
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
	events, err := sb.client().Attach(context.WithoutCancel(ctx), &agentv1.AttachRequest{Pid: int32(pid), StdoutOffset: offsets[0], StderrOffset: offsets[1]})
	if err != nil {
		return api.CellResult{}, m.processError(ctx, sb, "following a context", pid, err)
	}
	line := c.kernel.Request(id, req.Code)
	if _, err := m.procs.WriteStdin(ctx, api.ProcessStdinRequest{SandboxID: sb.rec.ID, Pid: pid, Data: string(line)}); err != nil {
		events.Close()
		if errdefs.Is(err, errdefs.CodeProcessExited) || errdefs.Is(err, errdefs.CodeNoStdin) {
			return api.CellResult{}, m.markDead(c, "its interpreter had exited")
		}
		return api.CellResult{}, err
	}

	cell := &cellRun{m: m, sb: sb, c: c, id: id, pid: pid, emit: emit, events: events, got: make(chan recvd, 1),
		split: interp.NewSplitter(c.nonce, maxResultBytes), errSplit: interp.NewSplitter(c.nonce, 64),
		timer: time.NewTimer(time.Duration(m.execTimeout(req.TimeoutMs)) * time.Millisecond)}
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
func (m *Manager) cellContext(ctx context.Context, req api.RunCodeRequest) (*sandbox, *interpContext, func(), error) {
	if req.ContextID != "" {
		if req.Language != "" || req.SandboxID != "" {
			sb, c, release, err := m.findContext(ctx, req.ContextID)
			if err == nil && ((req.Language != "" && req.Language != c.language) || (req.SandboxID != "" && req.SandboxID != sb.rec.ID)) {
				release()
				return nil, nil, nil, errdefs.Malformed("context %s is a %s context of sandbox %s", c.id, c.language, sb.rec.ID)
			}
			return sb, c, release, err
		}
		return m.findContext(ctx, req.ContextID)
	}
	if req.SandboxID == "" {
		return nil, nil, nil, errdefs.Malformed("give context_id, or sandbox_id (and language) for the sandbox's default context")
	}
	language := req.Language
	if language == "" {
		language = interp.Python
	}
	sb, release, err := m.acquire(ctx, req.SandboxID, UseCall)
	if err != nil {
		return nil, nil, nil, err
	}
	c := sb.interp.defaultOf(language)
	if c == nil {
		// One default per language, even for racing first cells.
		sb.interpStart.Lock()
		if c = sb.interp.defaultOf(language); c == nil {
			c, err = m.newContext(ctx, sb, api.ContextCreateRequest{Language: language}, true)
		}
		sb.interpStart.Unlock()
		if err != nil {
			release()
			return nil, nil, nil, err
		}
	}
	return sb, c, release, nil
}

// markDead records that c's kernel has ended and returns the error that
// says so.
func (m *Manager) markDead(c *interpContext, why string) error {
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
	m     *Manager
	sb    *sandbox
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
				_ = r.m.killKernel(context.Background(), r.sb, r.c)
				return api.CellResult{}, r.m.markDead(r.c, "killed: it did not stop within "+interruptGrace.String()+" of an interrupt")
			}
			r.timedOut = true
			r.interrupt()
		case g := <-r.got:
			r.receiving = false
			if g.err != nil {
				r.ended = true
				if g.err == io.EOF {
					return api.CellResult{}, r.m.markDead(r.c, "its interpreter exited")
				}
				return api.CellResult{}, r.m.processError(context.Background(), r.sb, "following a context", r.pid, g.err)
			}
			res, end, err := r.take(g.ev)
			if end {
				r.ended = true
				return res, err
			}
		}
	}
}

// interrupt sends SIGINT once and gives the cell interruptGrace to
// answer.
func (r *cellRun) interrupt() {
	if r.interrupted {
		return
	}
	r.interrupted = true
	_ = r.m.interruptKernel(context.Background(), r.sb, r.pid)
	r.timer.Stop()
	r.timer = time.NewTimer(interruptGrace)
}

// take handles one event: output is emitted (unless the caller went
// away); the result line ends the cell.
func (r *cellRun) take(ev *agentv1.ProcessEvent) (api.CellResult, bool, error) {
	if x := ev.GetExited(); x != nil {
		why := "its interpreter exited with status " + strconv.Itoa(int(x.GetExitCode()))
		if x.GetSignal() > 0 {
			why = "its interpreter was killed by " + SignalName(x.GetSignal())
		}
		return api.CellResult{}, true, r.m.markDead(r.c, why)
	}
	o := ev.GetOutput()
	if o == nil {
		return api.CellResult{}, false, nil
	}
	r.sb.touch()
	data := o.GetData()
	if StreamIndex(o.GetStream()) == 1 {
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
	_ = r.m.killKernel(context.Background(), r.sb, r.c)
	return r.m.markDead(r.c, why)
}

// out emits a piece of the cell's output, unless the caller went away.
func (r *cellRun) out(event string, offset, dropped int64, data []byte) error {
	if r.detached || (len(data) == 0 && dropped == 0) {
		return nil
	}
	chunk := api.OutputChunk{Offset: offset, Dropped: dropped}
	chunk.Data, chunk.Base64 = TextOrBase64(data)
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
