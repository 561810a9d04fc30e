package gvisor

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/layertree"
	"github.com/hutch-dev/hutch/internal/runtime"
)

var (
	_ runtime.Checkpointer  = (*instance)(nil)
	_ runtime.Restorer      = (*Runtime)(nil)
	_ runtime.LayerCapturer = (*instance)(nil)
)

// upperTarAnnotation names the tar file gVisor fills a sandbox's overlay
// upper layer from at boot (Spec.UpperLayer).
const upperTarAnnotation = "dev.gvisor.tar.rootfs.upper"

// CaptureLayer writes the sandbox's writable layer to path as a tar file
// (runsc tar rootfs-upper): gVisor serializes its own overlay, so nothing
// of the sandbox's files is unpacked on the host.
// A sandbox on a shared layer tree (layer.go) has only its own changes
// there: the layer written is the tree's files, then its own.
func (i *instance) CaptureLayer(ctx context.Context, path string) error {
	upper := path
	if i.tree != "" {
		upper = path + ".upper"
		defer os.Remove(upper)
	}
	if _, err := i.rt.runscOutput(ctx, i.id, "tar", "rootfs-upper", "--file", upper, i.id); err != nil {
		return fmt.Errorf("capturing the writable layer of sandbox %s: %w", i.id, err)
	}
	if i.tree == "" {
		return nil
	}
	return withTree(path, i.tree, upper)
}

// withTree writes to path the layer tree's files, then the layer tar file
// upper's entries (the tar's end after both).
func withTree(path, tree, upper string) error {
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer out.Close()
	in, err := os.Open(upper)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := layertree.Write(tar.NewWriter(out), tree); err != nil {
		return fmt.Errorf("writing the template's files of a layer: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		return err
	}
	return out.Close()
}

// Checkpoint saves the sandbox's memory, processes and writable layer into
// dir (runsc checkpoint). With leaveRunning the sandbox goes on running;
// otherwise it ends once the checkpoint is written.
func (i *instance) Checkpoint(ctx context.Context, dir string, leaveRunning bool) error {
	args := append(append([]string(nil), i.flags...), "checkpoint", "--image-path", dir)
	if leaveRunning {
		args = append(args, "--leave-running")
	}
	if _, err := i.rt.runscOutput(ctx, i.id, append(args, i.id)...); err != nil {
		return fmt.Errorf("checkpointing sandbox %s: %w", i.id, err)
	}
	return saveLayerNote(dir, i.tree)
}

// sentryPidFile is where "runsc restore" writes the host pid of the
// restored sandbox's Sentry (--pid-file), in its bundle directory.
const sentryPidFile = "sentry.pid"

// sentryPid reads the pid "runsc restore" wrote in the bundle directory
// dir; 0 when it cannot.
func sentryPid(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, sentryPidFile))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid < 0 {
		return 0
	}
	return pid
}

// Restore starts sandbox spec.ID from the checkpoint in dir, as Start
// boots one, and relinks its agent to the new pipes. With a network, the
// sandbox gets one of its own, as a boot does: runsc restore configures
// the restored network stack from the new namespace (its own address and
// gateway).
func (r *Runtime) Restore(ctx context.Context, spec runtime.Spec, dir string) (runtime.Instance, error) {
	return r.launch(ctx, spec, dir)
}

// relink tells the agent of a restored sandbox to serve a new session,
// and reads past what its old session wrote, up to the marker. sentry is
// the host pid of the sandbox's Sentry when just restored (0: unknown):
// the Sentry forwards a signal it receives to the container's first
// process, the agent, so the signal goes there directly instead of
// through "runsc kill", a runsc process of its own (issue 46: 10 to 40
// ms of a restore).
func (i *instance) relink(ctx context.Context, sentry int) error {
	var err error
	if sentry > 1 {
		err = unix.Kill(sentry, agentv1.RelinkSignal)
	} else {
		_, err = i.rt.runscOutput(ctx, i.id, "kill", i.id, fmt.Sprint(int(agentv1.RelinkSignal)))
	}
	if err != nil {
		return fmt.Errorf("relinking the agent: %w", err)
	}
	type result struct {
		src io.Reader
		err error
	}
	done := make(chan result, 1)
	go func() {
		src, err := agentv1.SkipToRelink(i.conn.r)
		done <- result{src, err}
	}()
	select {
	case res := <-done:
		if res.err != nil {
			return fmt.Errorf("relinking the agent: %w", res.err)
		}
		i.conn.src = res.src
		return nil
	case <-ctx.Done():
		i.conn.Close() // ends the read
		return fmt.Errorf("relinking the agent: %w", ctx.Err())
	}
}
