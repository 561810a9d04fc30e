package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/image"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
)

// Checkpoints. The core writes what a live sandbox can be started from
// again: a checkpoint of it (Handle.Checkpoint, runtime.Checkpointer,
// leaving it as it was) or its writable layer (Handle.CaptureLayer,
// runtime.LayerCapturer); and it starts a sandbox from either (Origin,
// through CreateFrom or Options.OriginOf). What keeps them, snapshots,
// templates and forks, is snapsvc's. They all live in one directory
// (CheckpointDir), so a checkpoint is linked or renamed within one
// filesystem; the core's own entries there are its hibernations.

// checkpointTimeout bounds writing one checkpoint or layer.
const checkpointTimeout = 2 * time.Minute

// HibernatedPrefix begins the names of the core's entries in the
// checkpoint directory: the checkpoints of hibernated sandboxes.
const HibernatedPrefix = "hibernated-"

// CheckpointDir is the checkpoint directory of a daemon whose state is in
// stateDir.
func CheckpointDir(stateDir string) string { return filepath.Join(stateDir, "snapshots") }

// Origin is what a sandbox starts from other than its bare image: a
// checkpoint directory to restore (a snapshot's, a fork's or a
// hibernation's; then the sandbox keeps the shape and network it was taken
// of, with a network of its own), or a captured writable layer to boot
// with (a template's). ImageID is the image either was taken on. Runtime
// is the runtime a checkpoint was written by ("" any); ID, when set, is
// the sandbox's id: a container created ahead for its restore (issue 46).
type Origin struct {
	Runtime, Checkpoint, Layer, ImageID, ID string
	CPUs, MemoryMB                          uint32
	Network                                 bool
}

// CreateFrom is a create of req that starts from from (a fork's copies),
// whose image (and for a checkpoint cpus, memory and network) req
// already names; nil is Create's boot.
func (m *Manager) CreateFrom(ctx context.Context, req api.CreateRequest, from *Origin) (api.CreateResponse, error) {
	return m.create(ctx, req, from)
}

// CheckRequest checks req as a create of it would be checked before it
// boots: catalog and allowlist, caps, env, life terms (a template's
// defaults).
func (m *Manager) CheckRequest(req api.CreateRequest) error {
	if err := spec.Allowed(req.Image, image.Names(m.images.Catalog()), m.ImageBook().ImageAllowlist()); err != nil {
		return err
	}
	if _, _, err := spec.Limits(m.cfg, req); err != nil {
		return err
	}
	if err := spec.ValidateEnv("env", req.Env); err != nil {
		return err
	}
	_, err := spec.CreateTerms(req, m.cfg.DefaultIdleTimeoutSecs)
	return err
}

// Checkpoint implements Handle: a running sandbox is checkpointed and
// goes on running; a frozen one is thawed for the checkpoint and frozen
// again; a hibernated one already is a checkpoint, which is linked.
func (h handle) Checkpoint(dir string) error {
	m, sb := h.m, h.sb
	if err := refuseCheckpoint(sb, "snapshotted or forked"); err != nil {
		return err
	}
	sb.op.Lock() // not under a pause or resume
	defer sb.op.Unlock()
	st, end := sb.current()
	if st != Running && st != Paused {
		return notRunning(sb.rec.ID, st, end)
	}
	ctx, cancel := context.WithTimeout(context.Background(), checkpointTimeout)
	defer cancel()
	start := time.Now()
	var err error
	switch {
	case sb.pauseDepth() == api.PauseFiles:
		err = errdefs.New(errdefs.CodePaused, "sandbox %s kept only its files when it paused; resume it first", sb.rec.ID)
	case st == Paused && sb.isHibernated():
		err = linkFiles(m.hibernateDir(sb.rec.ID), dir)
	case st == Paused:
		err = h.checkpointFrozen(ctx, dir)
	default:
		err = checkpointRunning(ctx, sb, m.abilitiesOf(sb), dir)
	}
	if err != nil {
		if errdefs.CodeOf(err) != errdefs.CodeInternal {
			return err
		}
		m.log.Error("checkpointing", "sandbox", sb.rec.ID, "err", err)
		return errdefs.New(errdefs.CodeInternal, "checkpointing sandbox %s failed", sb.rec.ID).Because(err)
	}
	m.log.Debug("checkpoint written", "sandbox", sb.rec.ID, "ms", time.Since(start).Milliseconds())
	return nil
}

// checkpointRunning checkpoints a running sb, whose runtime has the
// abilities ab, into dir, leaving it running.
func checkpointRunning(ctx context.Context, sb *sandbox, ab runtime.Abilities, dir string) error {
	inst, _ := sb.conn()
	c, ok := inst.(runtime.Checkpointer)
	if !ok || !ab.Checkpoint {
		return unsupported(sb.rec.Runtime, "checkpoint sandboxes")
	}
	return c.Checkpoint(ctx, dir, true)
}

// checkpointFrozen checkpoints a frozen sb: runsc checkpoints a running
// sandbox, so it is thawed for that moment and frozen again after.
func (h handle) checkpointFrozen(ctx context.Context, dir string) error {
	m, sb := h.m, h.sb
	p, err := m.pauser(sb)
	if err != nil {
		return err
	}
	if err := p.Resume(ctx); err != nil {
		return err
	}
	err = checkpointRunning(ctx, sb, m.abilitiesOf(sb), dir)
	if perr := p.Pause(ctx); perr != nil {
		<-m.stopAsync(sb, endResumeFailed(fmt.Errorf("freezing it again after a checkpoint: %w", perr)))
		return errors.Join(err, perr)
	}
	return err
}

// linkFiles hard-links the files of directory from into directory to:
// the same bytes, no copy.
func linkFiles(from, to string) error {
	entries, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if err := os.Link(filepath.Join(from, e.Name()), filepath.Join(to, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// CaptureLayer implements Handle.
func (h handle) CaptureLayer(file string) error {
	sb := h.sb
	inst, _ := sb.conn()
	lc, ok := inst.(runtime.LayerCapturer)
	if !ok {
		return unsupported(sb.rec.Runtime, "capture a sandbox's files")
	}
	ctx, cancel := context.WithTimeout(context.Background(), checkpointTimeout)
	defer cancel()
	if err := lc.CaptureLayer(ctx, file); err != nil {
		h.m.log.Error("capturing a layer", "sandbox", sb.rec.ID, "err", err)
		return errdefs.New(errdefs.CodeInternal, "capturing the files of sandbox %s failed", sb.rec.ID).Because(err)
	}
	return nil
}

// clearHibernated removes, at start, the checkpoints in dir of sandboxes
// that hibernated under an earlier daemon: none of them lives on.
func clearHibernated(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), HibernatedPrefix) {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}
