package microvm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/hutch-dev/hutch/internal/cleanup"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/runtime"
)

// consoleTailSize is how much of a VM's console (kernel and agent logs)
// an instance keeps.
const consoleTailSize = 8 << 10

// Files in a sandbox's directory.
const (
	socketName  = "agent.sock" // QEMU's end of the agent's port
	pidFileName = "qemu.pid"   // QEMU's pid, for Reconcile
	rwDiskName  = "rw.ext4"    // the writable layer's disk (sparse)
)

// connectTimeout bounds the wait for QEMU to listen on the agent's socket.
const connectTimeout = 10 * time.Second

// Start boots a sandbox's VM and connects to its agent's port. The agent
// answers once the guest has booted (seconds under TCG): the caller's
// session waits for it. Any failure undoes everything and returns an S300
// (boot failed) error.
func (r *Runtime) Start(ctx context.Context, spec runtime.Spec) (_ runtime.Instance, retErr error) {
	id := spec.ID
	if err := unsupported(spec); err != nil {
		return nil, err
	}
	if err := checkSpec(spec); err != nil {
		return nil, errdefs.Wrap(errdefs.CodeBootFailed, err, "starting sandbox "+id)
	}
	if err := r.claim(id); err != nil {
		return nil, errdefs.Wrap(errdefs.CodeBootFailed, err, "starting sandbox "+id)
	}
	var undo cleanup.Stack
	defer undo.RunUnless(ctx, &retErr)
	undo.Push("releasing the sandbox id", func(context.Context) error { r.forget(id); return nil })
	inst, err := r.start(ctx, spec, &undo)
	if err != nil {
		return nil, errdefs.Wrap(errdefs.CodeBootFailed, err, "starting sandbox "+id)
	}
	r.mu.Lock()
	r.live[id] = inst
	r.mu.Unlock()
	return inst, nil
}

// unsupported refuses, with S302, a spec that needs an ability this
// runtime does not report (Abilities): mounts, a captured layer.
func unsupported(spec runtime.Spec) error {
	switch {
	case len(spec.Mounts) > 0:
		return errdefs.New(errdefs.CodeUnsupported, "the %s runtime cannot mount volumes", Name)
	case spec.UpperLayer != "":
		return errdefs.New(errdefs.CodeUnsupported, "the %s runtime cannot start sandboxes from a captured layer", Name)
	}
	return nil
}

// checkSpec rejects bad ids and a spec without its image or agent.
func checkSpec(spec runtime.Spec) error {
	switch {
	case !validID.MatchString(spec.ID):
		return fmt.Errorf("invalid sandbox id %q", spec.ID)
	case spec.Image.Kind != runtime.ArtifactBlock || spec.AgentPath == "":
		return errors.New("spec needs a block image (Prepare) and an agent path")
	}
	return nil
}

// start does Start's work, pushing an undo step for each piece.
func (r *Runtime) start(ctx context.Context, spec runtime.Spec, undo *cleanup.Stack) (*instance, error) {
	id := spec.ID
	initrd, err := r.initramfsFor(spec.AgentPath, egressCA(spec.Network))
	if err != nil {
		return nil, err
	}
	dir := r.sandboxDir(id)
	// The directory is the first thing created and the last removed, so
	// its presence marks a sandbox to reconcile.
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating sandbox directory: %w", err)
	}
	undo.Push("removing the sandbox directory", func(context.Context) error { return os.RemoveAll(dir) })

	var gnet guestNet
	var tap *os.File
	if spec.Network != nil {
		var err error
		gnet, tap, err = setupNetwork(spec)
		if err != nil {
			return nil, err
		}
		defer tap.Close()
	}
	var rwDisk string
	if spec.WritableLayerMB > 0 {
		rwDisk = filepath.Join(dir, rwDiskName)
		if err := makeWritableDisk(ctx, rwDisk, spec.WritableLayerMB); err != nil {
			return nil, err
		}
	}
	args := qemuArgs(vmConfig{
		accel: r.accel, kernel: r.kernel.path, initrd: initrd, rootDisk: spec.Image.Path, rwDisk: rwDisk, socket: socketName,
		tapFD: tapFD(tap), mac: gnet.mac,
		cpus: spec.CPUs, memoryMB: spec.MemoryMB,
		cmdline: kernelCmdline(guestParams{
			hostname: spec.Hostname, rwDisk: rwDisk != "", writableMB: spec.WritableLayerMB,
			pidsMax: uint64(max(spec.PidsLimit, 0)), tscKHz: r.tscKHz, net: gnet,
		}),
	})
	rel := cgroupRel(id)
	if err := r.cg.Create(rel); err != nil {
		return nil, err
	}
	undo.Push("removing the cgroup", func(ctx context.Context) error { return r.cg.Remove(ctx, rel) })
	if err := r.cg.SetLimits(rel, qemuLimits(spec)); err != nil {
		return nil, err
	}
	console := runtime.NewTailBuffer(consoleTailSize)
	cmd := exec.Command(r.qemu, args...)
	// QEMU runs in the sandbox's directory and binds its socket there by
	// a relative name: a unix socket path has room for 107 bytes only,
	// and a data directory may be long.
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = console, console
	if tap != nil {
		cmd.ExtraFiles = []*os.File{tap} // descriptor 3: tapFD
	}
	// Keep terminal signals sent to the daemon's process group away.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("running qemu: %w", err)
	}
	inst := newInstance(r, id, dir, cmd, console)
	undo.Push("stopping qemu", func(ctx context.Context) error { return inst.kill(ctx) })
	if err := r.cg.Join(rel, cmd.Process.Pid); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, pidFileName), []byte(strconv.Itoa(cmd.Process.Pid)), 0o600); err != nil {
		return nil, fmt.Errorf("writing the pid file: %w", err)
	}
	conn, err := dialAgent(ctx, dir, inst.done)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, runtime.LastLines(console.String(), 1, 256))
	}
	inst.conn = conn
	return inst, nil
}

// dialAgent connects to QEMU's agent socket in dir, waiting for QEMU to
// listen until ctx ends, connectTimeout passes or QEMU exits (done). It
// reaches the socket through a descriptor of dir (/proc/self/fd/N/...),
// whatever the length of dir's path.
func dialAgent(ctx context.Context, dir string, done <-chan struct{}) (net.Conn, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("opening the sandbox directory: %w", err)
	}
	defer d.Close()
	sock := fmt.Sprintf("/proc/self/fd/%d/%s", d.Fd(), socketName)
	deadline := time.Now().Add(connectTimeout)
	for {
		var dialer net.Dialer
		c, err := dialer.DialContext(ctx, "unix", sock)
		if err == nil {
			return c, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("connecting to the agent's port: %w", ctx.Err())
		case <-done:
			return nil, errors.New("qemu exited before it opened the agent's port")
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("connecting to the agent's port: %w", err)
		}
	}
}

// tapFD is the descriptor QEMU has tap at (its first extra file), or 0.
func tapFD(tap *os.File) int {
	if tap == nil {
		return 0
	}
	return 3
}

// agentKey names the version of an agent binary (path, size and mtime)
// and of the egress CA the initramfs carries (issue 37), if any.
type agentKey struct {
	path  string
	size  int64
	mtime time.Time
	ca    fileVersion
}

// fileVersion is a file's path, size and mtime.
type fileVersion struct {
	path  string
	size  int64
	mtime time.Time
}

// initramfsFor returns the initramfs for agent and ca (hutch's egress CA,
// a PEM file, or ""), building it on first use.
func (r *Runtime) initramfsFor(agent, ca string) (string, error) {
	abs, err := filepath.Abs(agent)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("agent: %w", err)
	}
	key := agentKey{path: abs, size: fi.Size(), mtime: fi.ModTime()}
	if ca != "" {
		ci, err := os.Stat(ca)
		if err != nil {
			return "", fmt.Errorf("egress CA: %w", err)
		}
		key.ca = fileVersion{path: ca, size: ci.Size(), mtime: ci.ModTime()}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.initramfs[key]; ok {
		return p, nil
	}
	p, err := buildInitramfs(r.initramfsDir(), initramfsInputs{agent: abs, modules: r.kernel.modules, ca: ca})
	if err != nil {
		return "", err
	}
	r.initramfs[key] = p
	r.pruneInitramfsLocked()
	return p, nil
}

// pruneInitramfsLocked removes the cached initramfs files no agent of
// this Runtime uses (an earlier agent's): QEMU reads its initrd whole when
// it starts, so running VMs do not need theirs. r.mu must be held.
func (r *Runtime) pruneInitramfsLocked() {
	inUse := map[string]bool{}
	for _, p := range r.initramfs {
		inUse[p] = true
	}
	old, _ := filepath.Glob(filepath.Join(r.initramfsDir(), "*.cpio"))
	for _, p := range old {
		if !inUse[p] {
			_ = os.Remove(p)
		}
	}
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

// forget drops id from the live set.
func (r *Runtime) forget(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.live, id)
}

// mkdirs creates each directory with its parents.
func mkdirs(dirs ...string) error {
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	return nil
}

// egressCA is the file of hutch's egress CA that a sandbox attached by nw
// trusts (issue 37), or "" when there is none or it holds no certificate:
// such a sandbox's TLS to the hosts of transforms fails rather than
// trusting anything else, as under gVisor.
func egressCA(nw *runtime.NetworkAttachment) string {
	if nw == nil || nw.CACert == "" {
		return ""
	}
	b, err := os.ReadFile(nw.CACert)
	if err != nil || !bytes.Contains(b, []byte("-----BEGIN CERTIFICATE-----")) {
		return ""
	}
	return nw.CACert
}
