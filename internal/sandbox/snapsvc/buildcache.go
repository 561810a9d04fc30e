package snapsvc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hutch-dev/hutch/api"
	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/events"
	"github.com/hutch-dev/hutch/internal/sandbox"
)

// layerPath is where layer sha (hex) is kept.
func (s *Service) layerPath(sha string) string {
	return s.path(filepath.Join(buildDir, "layers", sha+".tar"))
}

// keyPath is where cache key key's entry is kept.
func (s *Service) keyPath(key string) string {
	return s.path(filepath.Join(buildDir, "keys", key+".json"))
}

// cached is the entry of key, when it and its layer are on disk.
func (s *Service) cached(key string) (cacheEntry, bool) {
	var e cacheEntry
	b, err := os.ReadFile(s.keyPath(key))
	if err != nil || json.Unmarshal(b, &e) != nil || !isSHA(e.Layer) {
		return cacheEntry{}, false
	}
	if _, err := os.Stat(s.layerPath(e.Layer)); err != nil {
		return cacheEntry{}, false
	}
	return e, true
}

// remember records key's entry.
func (s *Service) remember(key string, e cacheEntry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.keyPath(key)), 0o700); err != nil {
		return err
	}
	tmp := s.keyPath(key) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, s.keyPath(key))
}

// captureStep captures box's writable layer into the layer store, named
// by its content's sha256.
func (s *Service) captureStep(ctx context.Context, box string) (string, error) {
	h, release, err := s.core.Acquire(ctx, box, sandbox.UseCall)
	if err != nil {
		return "", err
	}
	defer release()
	tmp, err := s.tempDir()
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	file := filepath.Join(tmp, "layer.tar")
	if err := h.CaptureLayer(file); err != nil {
		return "", err
	}
	sha, err := fileSHA(file)
	if err != nil {
		return "", err
	}
	dst := s.layerPath(sha)
	if _, err := os.Stat(dst); err == nil {
		return sha, nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return "", err
	}
	return sha, os.Rename(file, dst)
}

// fileSHA is the hex sha256 of a file's content.
func fileSHA(file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// isSHA says s is a hex sha256.
func isSHA(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// gcLayers removes the layers no template and no build in progress
// keeps, and the cache keys that lead to them.
func (s *Service) gcLayers() {
	tmpls, _, err := s.allTemplates()
	if err != nil {
		s.log.Error("collecting build layers", "err", err)
		return
	}
	s.buildMu.Lock()
	defer s.buildMu.Unlock()
	kept := map[string]bool{}
	for b := range s.builds {
		for _, l := range b.layers {
			kept[l] = true
		}
	}
	for _, r := range tmpls {
		if r.Built != nil {
			for _, l := range r.Built.Layers {
				kept[l] = true
			}
		}
	}
	layers, _ := os.ReadDir(s.path(filepath.Join(buildDir, "layers")))
	for _, e := range layers {
		if sha := strings.TrimSuffix(e.Name(), ".tar"); !kept[sha] {
			if err := os.Remove(s.layerPath(sha)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				s.log.Error("removing a build layer", "layer", sha, "err", err)
			}
		}
	}
	s.gcTrees(kept)
	keys, _ := os.ReadDir(s.path(filepath.Join(buildDir, "keys")))
	for _, e := range keys {
		key := strings.TrimSuffix(e.Name(), ".json")
		if _, ok := s.cached(key); !ok {
			os.Remove(s.keyPath(key))
		}
	}
}

// snapshotRunning boots the template's files, starts its start command,
// waits for its ready check and snapshots it running: the template's
// sandboxes restore that snapshot.
// It boots on the layer's tree, as the template's sandboxes do (trees.go).
func (b *build) snapshotRunning(ss *stageState, rec *templateRecord, tree string) error {
	_ = b.emit(api.TemplateBuildEvent{Step: b.steps, Steps: b.steps, Phase: "start", Output: strings.Join(rec.Built.StartCmd, " ")})
	run := &stageState{image: ss.image, imageID: ss.imageID, layer: ss.layer, tree: tree, start: true}
	if err := b.ensureBox(run); err != nil {
		return err
	}
	defer b.stopBox(run)
	h, release, err := b.s.core.Acquire(b.ctx, run.box, sandbox.UseCall)
	if err != nil {
		return err
	}
	user, err := b.resolveUser(h, ss.user)
	if err != nil {
		release()
		return err
	}
	rec.Built.User = user
	areq, err := h.ExecRequest(sandbox.ExecCall{Argv: rec.Built.StartCmd, Env: ss.env, Workdir: ss.workdir, User: user})
	if err != nil {
		release()
		return err
	}
	areq.TimeoutMs = 0
	events, err := h.Agent().Start(b.ctx, &agentv1.StartRequest{Exec: areq, RingBytes: 64 << 10})
	if err != nil {
		release()
		return h.Fail(b.ctx, "the start command", err)
	}
	pid, err := startedPid(events)
	events.Close()
	release()
	if err != nil {
		return fmt.Errorf("the start command: %w", err)
	}
	if err := b.waitReady(run.box, ss, pid); err != nil {
		return err
	}
	_ = b.emit(api.TemplateBuildEvent{Step: b.steps, Steps: b.steps, Phase: "snapshot"})
	snap, err := b.s.CreateSnapshot(b.ctx, api.SnapshotCreateRequest{SandboxID: run.box, Name: "template " + rec.Name})
	if err != nil {
		return err
	}
	rec.Built.Snapshot, rec.Defaults.SnapshotID = snap.SnapshotID, snap.SnapshotID
	return nil
}

// startedPid waits for a started process's pid.
func startedPid(events interface {
	Recv() (*agentv1.ProcessEvent, error)
}) (int32, error) {
	for {
		ev, err := events.Recv()
		if err != nil {
			return 0, err
		}
		if st := ev.GetStarted(); st != nil {
			return st.GetPid(), nil
		}
		if x := ev.GetExited(); x != nil {
			return 0, fmt.Errorf("exited at once with code %d", x.GetExitCode())
		}
	}
}

// waitReady polls the ready check (a command or a port; neither: the
// process is started) until it passes, the start command exits, or the
// ready timeout.
func (b *build) waitReady(box string, ss *stageState, pid int32) error {
	secs := b.req.ReadyTimeoutSecs
	if secs == 0 {
		secs = defaultReadySecs
	}
	ctx, cancel := context.WithTimeout(b.ctx, time.Duration(secs)*time.Second)
	defer cancel()
	for {
		ok, err := b.readyOnce(ctx, box, ss, pid)
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			if b.ctx.Err() != nil {
				return b.ctx.Err()
			}
			return errdefs.Malformed("the start command was not ready within %d s (ready_timeout_secs)", secs)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// readyOnce runs the ready check once.
func (b *build) readyOnce(ctx context.Context, box string, ss *stageState, pid int32) (bool, error) {
	h, release, err := b.s.core.Acquire(ctx, box, sandbox.UseCall)
	if err != nil {
		return false, err
	}
	defer release()
	procs, err := h.Agent().List(ctx)
	if err == nil {
		alive := false
		for _, p := range procs {
			alive = alive || (p.GetPid() == pid && p.GetExited() == nil)
		}
		if !alive {
			return false, errdefs.Malformed("the start command exited before it was ready")
		}
	}
	switch {
	case b.req.ReadyPort != 0:
		c, err := h.Agent().Dial(ctx, b.req.ReadyPort)
		if err != nil {
			return false, nil
		}
		c.Close()
		return true, nil
	case b.req.ReadyCmd != "":
		areq, err := h.ExecRequest(sandbox.ExecCall{Argv: []string{"/bin/sh", "-c", b.req.ReadyCmd}, Env: ss.env, Workdir: ss.workdir, TimeoutMs: 10_000})
		if err != nil {
			return false, err
		}
		resp, err := h.Agent().Exec(ctx, areq)
		if err != nil {
			return false, nil
		}
		return resp.GetExitCode() == 0 && !resp.GetTimedOut(), nil
	}
	return true, nil
}

// dropSnapshot deletes a snapshot a built template owned.
func (s *Service) dropSnapshot(ctx context.Context, id string) {
	if _, err := s.DeleteSnapshot(ctx, api.SnapshotRequest{SnapshotID: id}); err != nil && !errdefs.Is(err, errdefs.CodeNoSnapshot) {
		s.log.Error("removing a template's snapshot", "snapshot", id, "err", err)
	}
}

// event records a template build's event for owner (about no sandbox).
func (s *Service) event(owner, typ string, data map[string]any) {
	if s.events == nil {
		return
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return
	}
	s.events.Append(events.Event{Type: typ, Owner: owner, Data: raw})
}

// hasSnapshot says the caller's snapshot id is there.
func (s *Service) hasSnapshot(ctx context.Context, id string) bool {
	_, err := s.snapshot(ctx, id)
	return err == nil
}
