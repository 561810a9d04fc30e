package gvisor

// issue 35: sandboxes that outlive their daemon. A sandbox started with
// Spec.Reattach has its agent's stdio on FIFOs in its bundle, which the
// sandbox holds open for reading and writing: a daemon that dies leaves it
// no EOF and no EPIPE, and its agent (--reattach) waits for a relink.
// A later daemon opens the FIFOs again, relinks the agent (Adopt) and has
// a new session. The sandbox's death still shows as EOF: once it is gone,
// no writer of its stdout is left.

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

	"golang.org/x/sys/unix"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/runtime"
)

var _ runtime.Adopter = (*Runtime)(nil)

// The FIFOs of a reattachable sandbox's stdio and its sidecar record, in
// its bundle directory.
const (
	fifoIn      = "agent.in"
	fifoOut     = "agent.out"
	fifoErr     = "agent.err"
	reattachRec = "reattach.json"
)

// reattachRecord is what Adopt needs of a sandbox beyond its bundle.
type reattachRecord struct {
	ID         string   `json:"id"`
	MemoryMB   uint32   `json:"memory_mb"`
	UpperLayer string   `json:"upper_layer,omitempty"`
	Flags      []string `json:"flags"`
}

// stdioFor is the agent's stdio of spec's sandbox, whose bundle is dir:
// pipes, or for a reattachable sandbox FIFOs in dir.
func stdioFor(spec runtime.Spec, dir string) (*stdio, error) {
	if !spec.Reattach {
		return newStdio()
	}
	for _, name := range []string{fifoIn, fifoOut, fifoErr} {
		if err := unix.Mkfifo(filepath.Join(dir, name), 0o600); err != nil {
			return nil, fmt.Errorf("creating the agent's FIFO %s: %w", name, err)
		}
	}
	var p stdio
	var err error
	// The child ends first, for reading and writing: opening them never
	// blocks, and ours then find their other side.
	for _, f := range []struct {
		to   **os.File
		name string
	}{{&p.stdinChild, fifoIn}, {&p.stdoutChild, fifoOut}, {&p.stderrChild, fifoErr}} {
		if *f.to, err = os.OpenFile(filepath.Join(dir, f.name), os.O_RDWR, 0); err != nil {
			p.closeChilds()
			return nil, fmt.Errorf("opening the agent's FIFO %s: %w", f.name, err)
		}
	}
	if err := p.openOurs(dir); err != nil {
		p.closeChilds()
		return nil, err
	}
	return &p, nil
}

// openOurs opens the daemon's ends of the FIFOs in dir, non-blocking: a
// sandbox that is gone has no reader of its stdin, which is an error
// (ENXIO) rather than a wait.
func (p *stdio) openOurs(dir string) error {
	var err error
	for _, f := range []struct {
		to   **os.File
		name string
		flag int
	}{{&p.stdin, fifoIn, os.O_WRONLY}, {&p.stdout, fifoOut, os.O_RDONLY}, {&p.stderr, fifoErr, os.O_RDONLY}} {
		if *f.to, err = os.OpenFile(filepath.Join(dir, f.name), f.flag|syscall.O_NONBLOCK, 0); err != nil {
			p.closeOurs()
			return fmt.Errorf("opening the agent's FIFO %s: %w", f.name, err)
		}
	}
	for _, f := range []*os.File{p.stdin, p.stdout} {
		if rc, err := f.SyscallConn(); err == nil {
			_ = rc.Control(func(fd uintptr) { _, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, streamPipeBytes) })
		}
	}
	return nil
}

// agentArgs is the agent's command line in spec's sandbox.
func agentArgs(spec runtime.Spec) []string {
	if spec.Reattach {
		return []string{runtime.AgentPath, agentv1.ReattachFlag}
	}
	return []string{runtime.AgentPath}
}

// writeReattach writes the sidecar record of a reattachable sandbox.
func writeReattach(dir string, inst *instance, spec runtime.Spec) error {
	b, err := json.Marshal(reattachRecord{ID: spec.ID, MemoryMB: spec.MemoryMB, UpperLayer: spec.UpperLayer, Flags: inst.flags})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, reattachRec), b, 0o600); err != nil {
		return fmt.Errorf("writing the sandbox's reattach record: %w", err)
	}
	return nil
}

// Reattachable says that sandbox id was started with Spec.Reattach: its
// bundle has the sidecar record.
func (r *Runtime) Reattachable(id string) bool {
	if checkID(id) != nil {
		return false
	}
	_, err := os.Lstat(filepath.Join(r.sandboxDir(id), reattachRec))
	return err == nil
}

// maxReattachRecord bounds the sidecar record read back.
const maxReattachRecord = 64 << 10

// Adopt takes over sandbox id, started with Spec.Reattach by an earlier
// Runtime over the same state directory: it opens the agent's FIFOs
// again and relinks the agent, whose new session is the instance's Conn.
// A paused (frozen) sandbox is resumed first, and adopted running. On
// failure the sandbox is left as it was (or resumed), for Reconcile.
func (r *Runtime) Adopt(ctx context.Context, id string) (_ runtime.Instance, retErr error) {
	if err := checkID(id); err != nil {
		return nil, errdefs.Wrap(errdefs.CodeNotFound, err, "adopting sandbox")
	}
	if err := r.claim(id); err != nil {
		return nil, fmt.Errorf("adopting sandbox %s: %w", id, err)
	}
	defer func() {
		if retErr != nil {
			r.mu.Lock()
			delete(r.live, id) // not forget: the sandbox is still there
			r.mu.Unlock()
		}
	}()
	dir := r.sandboxDir(id)
	rec, err := readReattach(dir)
	if err != nil {
		return nil, fmt.Errorf("adopting sandbox %s: %w", id, err)
	}
	out, err := r.runscOutput(ctx, id, "state", id)
	if err != nil {
		return nil, fmt.Errorf("adopting sandbox %s: %w", id, err)
	}
	switch st := runscStatus(out); st {
	case "running":
	case "paused": // frozen when its daemon stopped: thawed to be relinked
		if _, err := r.runscOutput(ctx, id, "resume", id); err != nil {
			return nil, fmt.Errorf("adopting paused sandbox %s: %w", id, err)
		}
	default:
		return nil, fmt.Errorf("adopting sandbox %s: runsc says it is %q, not running", id, st)
	}
	var p stdio
	if err := p.openOurs(dir); err != nil {
		return nil, fmt.Errorf("adopting sandbox %s: %w", id, err)
	}
	stderr := runtime.NewTailBuffer(stderrTailSize)
	stderrDone := make(chan struct{})
	go func() {
		defer close(stderrDone)
		_, _ = io.Copy(stderr, p.stderr)
	}()
	spec := runtime.Spec{ID: id, MemoryMB: rec.MemoryMB, UpperLayer: rec.UpperLayer}
	inst := newInstance(r, spec, rec.Flags, &p, stderr, stderrDone)
	if err := inst.relink(ctx, 0); err != nil { // runsc kill: the pid may be stale
		// Our ends only: the sandbox runs on, as it did before.
		p.closeOurs()
		<-stderrDone
		return nil, fmt.Errorf("adopting sandbox %s: %w", id, err)
	}
	r.mu.Lock()
	r.live[id] = inst
	r.mu.Unlock()
	return inst, nil
}

// readReattach reads the sidecar record in dir.
func readReattach(dir string) (*reattachRecord, error) {
	f, err := os.Open(filepath.Join(dir, reattachRec))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, errors.New("it was not started to be reattached, or is gone")
		}
		return nil, err
	}
	defer f.Close()
	var rec reattachRecord
	if err := json.NewDecoder(io.LimitReader(f, maxReattachRecord)).Decode(&rec); err != nil {
		return nil, fmt.Errorf("reading its reattach record: %w", err)
	}
	if err := checkID(rec.ID); err != nil || rec.ID != filepath.Base(dir) {
		return nil, fmt.Errorf("its reattach record names sandbox %q", rec.ID)
	}
	return &rec, nil
}

// runscStatus is the status in the JSON of "runsc state".
func runscStatus(out []byte) string {
	var st struct {
		Status string `json:"status"`
	}
	if json.Unmarshal(out, &st) != nil {
		return ""
	}
	return strings.ToLower(st.Status)
}
