package gvisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutch-dev/hutch/internal/cleanup"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/safetext"
)

// stderrTailSize is how much of a sandbox's stderr is kept.
const stderrTailSize = 8 << 10

// Start boots a sandbox: bundle directory, read-only rootfs bind mount,
// config.json, then "runsc run --detach" with the agent's stdio on pipes.
// Any failure undoes everything and returns an S300 (boot failed) error
// whose message carries runsc's first logged error and the last lines of
// its stderr.
func (r *Runtime) Start(ctx context.Context, spec runtime.Spec) (runtime.Instance, error) {
	return r.launch(ctx, spec, "")
}

// launch is Start, or with a checkpoint directory Restore: "runsc restore"
// in place of "runsc run", then a relink of the agent. A restore into a
// container created ahead for it (ahead.go) skips the bundle and runsc's
// create.
func (r *Runtime) launch(ctx context.Context, spec runtime.Spec, checkpoint string) (_ *instance, retErr error) {
	id := spec.ID
	if err := checkID(id); err != nil {
		return nil, errdefs.Wrap(errdefs.CodeBootFailed, err, "starting sandbox")
	}
	if checkpoint != "" && spec.UpperLayer == "" { // issue 39: the tree it booted on
		tree, err := layerNote(checkpoint)
		if err != nil {
			return nil, errdefs.Wrap(errdefs.CodeBootFailed, err, "restoring sandbox "+id)
		}
		spec.UpperLayer = tree
	}
	c := r.takeAhead(ctx, checkpoint, spec) // issue 46: its id stays claimed
	if c == nil {
		if err := r.claim(id); err != nil {
			return nil, errdefs.Wrap(errdefs.CodeBootFailed, err, "starting sandbox "+id)
		}
	}
	var undo cleanup.Stack
	defer undo.RunUnless(ctx, &retErr)
	undo.Push("releasing the sandbox id", func(context.Context) error { r.forget(id); return nil })
	var inst *instance
	var err error
	if c != nil {
		inst, err = r.restoreInto(ctx, c, checkpoint, &undo)
	} else {
		inst, err = r.start(ctx, spec, checkpoint, &undo)
	}
	if err != nil {
		var e *errdefs.Error
		if errors.As(err, &e) {
			return nil, err
		}
		return nil, errdefs.Wrap(errdefs.CodeBootFailed, err, "starting sandbox "+id)
	}
	r.mu.Lock()
	r.live[id] = inst
	r.mu.Unlock()
	if checkpoint != "" {
		r.restored(checkpoint, spec) // issue 46: its shape, to create more ahead
	}
	return inst, nil
}

// start does Start's work, pushing an undo step for each piece.
func (r *Runtime) start(ctx context.Context, spec runtime.Spec, checkpoint string, undo *cleanup.Stack) (*instance, error) {
	dir, p, err := r.bundle(ctx, spec, undo)
	if err != nil {
		return nil, err
	}
	defer p.closeChilds()
	stderr, stderrDone, err := r.runBoot(ctx, spec.ID, dir, p, runscPhase(checkpoint), r.bootArgs(spec, dir, checkpoint))
	if err != nil {
		return nil, err
	}
	inst := newInstance(r, spec, r.globalFlags(spec, dir), p, stderr, stderrDone)
	if spec.Reattach {
		if err := writeReattach(dir, inst, spec); err != nil {
			return nil, err
		}
	}
	if checkpoint != "" {
		if err := inst.relinkPhase(ctx, dir); err != nil {
			return nil, err
		}
	}
	return inst, nil
}

// bundle makes spec's bundle directory (rootfs mount, config.json) and
// the agent's stdio, pushing the undo of each on undo.
func (r *Runtime) bundle(ctx context.Context, spec runtime.Spec, undo *cleanup.Stack) (string, *stdio, error) {
	id := spec.ID
	if spec.Image.Kind != runtime.ArtifactDir || spec.AgentPath == "" {
		return "", nil, errors.New("spec needs a root filesystem directory and an agent path")
	}
	img, err := runtime.DirArtifact(spec.Image.Path)
	if err != nil {
		return "", nil, err
	}
	rootfs := img.Path
	if spec.AgentPath, err = filepath.Abs(spec.AgentPath); err != nil {
		return "", nil, err
	}
	// runsc's gofer cannot create the agent's mount point in a read-only
	// rootfs, and its own error says little; the image must have it.
	if fi, err := os.Lstat(filepath.Join(rootfs, runtime.AgentPath)); err != nil || !fi.Mode().IsRegular() {
		return "", nil, fmt.Errorf("image %s has no agent mount point %s (an empty regular file)", rootfs, runtime.AgentPath)
	}

	// The bundle directory is the first thing created and the last removed
	// (teardown), so its presence marks a sandbox to reconcile.
	dir := r.sandboxDir(id)
	bundled := phase(ctx, "gvisor.bundle")
	defer bundled(nil) // ended already unless a step below failed
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", nil, fmt.Errorf("creating bundle directory: %w", err)
	}
	undo.Push("tearing down sandbox "+id, func(ctx context.Context) error { return r.teardown(ctx, id) })
	if r.settings.Debug {
		if err := os.MkdirAll(r.logDir(id), 0o700); err != nil {
			return "", nil, fmt.Errorf("creating log directory: %w", err)
		}
	}

	mnt := filepath.Join(dir, "rootfs")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		return "", nil, fmt.Errorf("creating rootfs mount point: %w", err)
	}
	if tree := layerTree(spec); tree != "" { // issue 39: a shared layer (layer.go)
		if rootfs, err = mountBase(tree, rootfs, dir); err != nil {
			return "", nil, err
		}
	}
	if err := mountRootfs(rootfs, dir, mnt, spec.Mounts); err != nil {
		return "", nil, err
	}

	oci := ociSpec(spec)
	withNetwork(oci, spec.Network, dir)
	withEgressCA(oci, spec.Network, dir) // issue 37
	withMounts(oci, spec.Mounts)
	b, err := json.MarshalIndent(oci, "", "  ")
	if err != nil {
		return "", nil, fmt.Errorf("encoding config.json: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o600); err != nil {
		return "", nil, fmt.Errorf("writing config.json: %w", err)
	}

	p, err := stdioFor(spec, dir) // issue 35: FIFOs for a reattachable sandbox
	bundled(err)
	if err != nil {
		return "", nil, err
	}
	undo.Push("closing the agent's pipes", func(context.Context) error { p.closeOurs(); return nil })
	return dir, p, nil
}

// runBoot runs the runsc command (args, a span named name) that makes
// sandbox id's sandbox from its bundle dir with p's child ends as the
// agent's stdio, and until it exits. It returns the sandbox's stderr
// tail, whose copy ends when the sandbox does.
func (r *Runtime) runBoot(ctx context.Context, id, dir string, p *stdio, name string, args []string) (*runtime.TailBuffer, chan struct{}, error) {
	stderr := runtime.NewTailBuffer(stderrTailSize)
	ran := phase(ctx, name)
	cmd := r.runscCmd(ctx, id, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p.stdinChild, p.stdoutChild, p.stderrChild
	// Keep terminal signals sent to the daemon's process group away.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		ran(err)
		return nil, nil, fmt.Errorf("running runsc: %w", err)
	}
	p.closeChilds()
	// The sandbox and gofer outlive runsc run and hold the child ends, so
	// this copy ends when the sandbox does.
	stderrDone := make(chan struct{})
	go func() {
		defer close(stderrDone)
		_, _ = io.Copy(stderr, p.stderr)
	}()
	err := cmd.Wait()
	ran(err)
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return nil, nil, bootError(id, dir, err, stderr, stderrDone)
	}
	return stderr, stderrDone, nil
}

// relinkPhase relinks the agent of a sandbox just restored from its
// bundle dir (the gvisor.relink span).
func (i *instance) relinkPhase(ctx context.Context, dir string) error {
	relinked := phase(ctx, "gvisor.relink")
	err := i.relink(ctx, sentryPid(dir))
	relinked(err)
	return err
}

// bootArgs are the arguments of the "runsc run" that boots spec's sandbox
// from the bundle in dir, or with a checkpoint directory of the "runsc
// restore" that restores it from there.
func (r *Runtime) bootArgs(spec runtime.Spec, dir, checkpoint string) []string {
	args := r.globalFlags(spec, dir)
	if checkpoint != "" {
		return append(args, "restore", "--image-path", checkpoint, "--detach", "--pid-file", filepath.Join(dir, sentryPidFile), "--bundle", dir, spec.ID)
	}
	return append(args, "run", "--detach", "--bundle", dir, spec.ID)
}

// globalFlags are the runsc flags spec's sandbox, with its bundle in dir,
// runs with: every later runsc command that restarts it (a checkpoint that
// leaves it running) must repeat them.
func (r *Runtime) globalFlags(spec runtime.Spec, dir string) []string {
	args := []string{"--log", filepath.Join(dir, runscLogName), "--platform=" + r.settings.Platform}
	if r.settings.Platform == PlatformSystrap && r.settings.SystrapFastPath == FastPathOff {
		args = append(args, "--systrap-disable-fast-path")
	}
	if layerTar(spec) != "" {
		args = append(args, "--allow-rootfs-tar-annotation")
	}
	// --allow-suid: a setuid binary (sudo, su, ping) raises its ids as on
	// Linux; runsc ignores the bits by default. A sandbox's processes may
	// run as root anyway, and root there holds no more than the bounding
	// set (issue 43: 8).
	return append(args, "--allow-suid", networkFlag(spec), overlayFlag(spec, dir))
}

// bootError is the S300 error of a failed "runsc run". Its message has
// the first error runsc logged (usually the root cause, from the gofer or
// the sandbox) and the last lines runsc wrote to stderr. The sandbox is
// already gone when runsc run fails, so the stderr copy ends soon;
// bootError waits a moment for it.
func bootError(id, dir string, err error, stderr *runtime.TailBuffer, stderrDone <-chan struct{}) error {
	select {
	case <-stderrDone:
	case <-time.After(500 * time.Millisecond):
	}
	msg := fmt.Sprintf("starting sandbox %s: runsc: %v", id, err)
	var details []string
	if msgs := runscLogErrors(filepath.Join(dir, runscLogName)); len(msgs) > 0 {
		details = append(details, safetext.Line(firstLine(msgs[0]), safetext.MaxLine))
	}
	if tail := runtime.LastLines(stderr.String(), 5, 1024); tail != "" && (len(details) == 0 || details[0] != tail) {
		details = append(details, tail)
	}
	if len(details) > 0 {
		msg += ": " + strings.Join(details, " | ")
	}
	return &errdefs.Error{Code: errdefs.CodeBootFailed, Message: msg, Err: err}
}

// claim reserves id for a Start so that a concurrent Start or Reconcile
// leaves it alone.
func (r *Runtime) claim(id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, busy := r.live[id]; busy {
		return errors.New("a sandbox with this id already exists")
	}
	r.live[id] = nil
	return nil
}

// forget drops id from the live set; after the last one it releases what
// runsc shares between sandboxes.
func (r *Runtime) forget(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.live, id)
	if len(r.live) == 0 {
		_ = r.releaseSharedLocked()
	}
}

// stdio holds the three pipes between hutch and the agent. The child ends
// are given to runsc and closed in hutch once it has started.
type stdio struct {
	stdin, stdout, stderr                *os.File // our ends
	stdinChild, stdoutChild, stderrChild *os.File
}

func newStdio() (*stdio, error) {
	var p stdio
	var err error
	if p.stdinChild, p.stdin, err = os.Pipe(); err != nil {
		return nil, fmt.Errorf("creating stdin pipe: %w", err)
	}
	if p.stdout, p.stdoutChild, err = os.Pipe(); err != nil {
		p.closeOurs()
		p.closeChilds()
		return nil, fmt.Errorf("creating stdout pipe: %w", err)
	}
	if p.stderr, p.stderrChild, err = os.Pipe(); err != nil {
		p.closeOurs()
		p.closeChilds()
		return nil, fmt.Errorf("creating stderr pipe: %w", err)
	}
	// The agent stream's pipes hold a whole file chunk (1 MiB) rather than
	// Linux's default 64 KiB, so that a chunk crosses in one go. Best
	// effort: a host that caps pipes lower (fs.pipe-max-size) keeps them.
	for _, f := range []*os.File{p.stdin, p.stdout} {
		if rc, err := f.SyscallConn(); err == nil {
			_ = rc.Control(func(fd uintptr) { _, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, streamPipeBytes) })
		}
	}
	return &p, nil
}

// streamPipeBytes is the capacity of the agent stream's pipes.
const streamPipeBytes = 1 << 20

// closeChilds closes hutch's copies of the child ends; it is idempotent.
func (p *stdio) closeChilds() {
	for _, f := range []**os.File{&p.stdinChild, &p.stdoutChild, &p.stderrChild} {
		if *f != nil {
			(*f).Close()
			*f = nil
		}
	}
}

// closeOurs closes hutch's ends; it is idempotent.
func (p *stdio) closeOurs() {
	for _, f := range []*os.File{p.stdin, p.stdout, p.stderr} {
		if f != nil {
			f.Close()
		}
	}
}
