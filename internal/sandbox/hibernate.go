package sandbox

// Hibernation, the deep pause: a hibernated sandbox's memory, processes
// and writable layer are a checkpoint on disk (Manager.hibernateDir) and
// its runtime instance and network are gone; a resume wakes it from the
// checkpoint under its own id. A files-only pause (api.PauseFiles) keeps
// just its writable layer there, and a resume boots it on that layer.
// sandbox.op serializes it with the other pauses and resumes (pause.go).

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/cleanup"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/failpoint"
	"github.com/hutch-dev/hutch/internal/runtime"
)

// hibernation hibernates and wakes the sandboxes of m; with files, it
// keeps their writable layers only.
type hibernation struct {
	m     *Manager
	files bool
}

// layerFile names a files-only pause's layer in its directory.
const layerFile = "layer.tar"

// hibernate moves a running (or frozen) sb to Paused with its memory,
// processes and writable layer (or its layer alone) written to disk and
// its instance gone; a failed checkpoint leaves it as it was.
func (h hibernation) hibernate(sb *sandbox) (changed bool, err error) {
	m := h.m
	if err := refuseCheckpoint(sb, "hibernated"); err != nil {
		return false, err
	}
	sb.op.Lock()
	defer sb.op.Unlock()
	st, end := sb.current()
	switch {
	case st == Paused && sb.isHibernated():
		return false, nil // at either depth, as a freeze of a frozen one
	case st != Running && st != Paused:
		return false, notRunning(sb.rec.ID, st, end)
	}
	inst, ac := sb.conn()
	c, ok := inst.(runtime.Checkpointer)
	lc, lok := inst.(runtime.LayerCapturer)
	if h.files && (!lok || !m.abilitiesOf(sb).Layer) {
		return false, unsupported(sb.rec.Runtime, "pause sandboxes keeping only their files")
	} else if !h.files && (!ok || !m.abilitiesOf(sb).Checkpoint) {
		return false, unsupported(sb.rec.Runtime, "hibernate sandboxes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), checkpointTimeout)
	defer cancel()
	if st == Paused { // frozen: runsc checkpoints a running sandbox
		if err := m.unfreeze(ctx, sb); err != nil {
			return false, err
		}
	}
	if err := sb.beginCheckpoint(); err != nil {
		return false, stoppedError(sb.rec.ID, sb.endNow())
	}
	dir := m.hibernateDir(sb.rec.ID)
	start := time.Now()
	depth := api.PauseHibernate
	if err = os.MkdirAll(dir, 0o700); err == nil && h.files {
		depth, err = api.PauseFiles, lc.CaptureLayer(ctx, filepath.Join(dir, layerFile))
	} else if err == nil {
		err = c.Checkpoint(ctx, dir, false)
	}
	if err != nil {
		os.RemoveAll(dir)
		m.log.Error("hibernating sandbox", "sandbox", sb.rec.ID, "err", err)
		if sb.transition(Running) != nil || instEnded(inst) {
			<-m.stopAsync(sb, endResumeFailed(err))
			return false, stoppedError(sb.rec.ID, sb.endNow())
		}
		return false, errdefs.New(errdefs.CodeInternal, "hibernating sandbox %s failed; it is still running", sb.rec.ID)
	}
	failpoint.Hit("hibernate.after-checkpoint")
	ac.Close()
	if err := inst.Destroy(ctx); err != nil {
		m.log.Error("destroying a hibernated sandbox's instance", "sandbox", sb.rec.ID, "err", err)
	}
	if sb.rec.Network && m.net != nil {
		m.net.Detach(sb.rec.ID)
	}
	if err := sb.markPaused(depth); err != nil {
		return false, stoppedError(sb.rec.ID, sb.endNow())
	}
	m.log.Info("sandbox paused", "sandbox", sb.rec.ID, "depth", depth, "ms", time.Since(start).Milliseconds())
	m.emitFor(sb, api.EventSandboxPaused, map[string]any{"depth": depth})
	return true, nil
}

// wake restores a hibernated sb from its checkpoint under its own id (or
// boots it on its kept layer) and hands it the new instance and agent
// connection.
func (h hibernation) wake(ctx context.Context, sb *sandbox) error {
	m := h.m
	rt := m.runtimeOf(&sb.rec)
	art, err := runtime.Prepare(ctx, rt, runtime.ImageRef{ID: sb.image.ID, Rootfs: sb.image.Rootfs})
	if err != nil {
		return err
	}
	var undo cleanup.Stack
	rec := sb.snapshotRecord()
	dir := m.hibernateDir(sb.rec.ID)
	from := &Origin{Checkpoint: dir}
	if sb.pauseDepth() == api.PauseFiles {
		from = &Origin{Layer: filepath.Join(dir, layerFile)}
	}
	inst, ac, err := m.start(ctx, &undo, rt, &rec, art, from, sb.user)
	if err == nil {
		_, _, err = sb.replace(inst, ac)
	}
	if err != nil {
		_ = undo.Run(ctx)
		return err
	}
	if m.net != nil {
		// Its network is new: its peers are given again.
		m.net.Renewed(ctx, sb.rec.ID)
	}
	return os.RemoveAll(dir)
}

// hibernateDir is where sandbox id's checkpoint is kept while it hibernates.
func (m *Manager) hibernateDir(id string) string {
	return filepath.Join(m.checkpoints, HibernatedPrefix+id)
}
