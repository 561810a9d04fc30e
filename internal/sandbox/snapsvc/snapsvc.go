// Package snapsvc is the snapshot service: sandbox::snapshot::*,
// sandbox::template::* and sandbox::fork, and what a create starts from
// when it names a template or a snapshot_id (Origin, which the daemon
// hands the core as sandbox.Options.OriginOf). It keeps the records
// (in the core's store, sandbox.Records), the checkpoint directory's
// snapshots and layers, their owners and the storage quota; the core
// writes checkpoints and layers (Handle.Checkpoint, Handle.CaptureLayer)
// and starts sandboxes from them (CreateFrom).
package snapsvc

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/egressproxy"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/events"
	"github.com/hutch-dev/hutch/internal/sandbox"
)

// Core is what the service needs of the sandbox core (*sandbox.Manager).
type Core interface {
	sandbox.Sandboxes
	// CreateFrom creates a sandbox of req that starts from an origin.
	CreateFrom(ctx context.Context, req api.CreateRequest, from *sandbox.Origin) (api.CreateResponse, error)
	// Stop stops a sandbox (a fork's copies when the fork fails).
	Stop(ctx context.Context, req api.StopRequest) (api.StopResponse, error)
	// CheckRequest checks a create request as a create would (a
	// template's defaults).
	CheckRequest(req api.CreateRequest) error
	// Records is a bucket of the core's store for the service's records.
	Records(name string) (sandbox.Records, error)
}

// Options configure a Service.
type Options struct {
	// Dir is the checkpoint directory (sandbox.CheckpointDir).
	Dir string
	// StorageMB bounds what snapshots and template layers take on disk,
	// all owners' together (snapshot_storage_mb).
	StorageMB uint64
	Logger    *slog.Logger
	// Events, when set, records a template build's template.build.*
	// events (issue 39).
	Events interface {
		Append(events.Event) events.Event
	}
	// Dial, when set, makes the connections of a build's ADD of a URL
	// under the build's egress policy (egressproxy.Proxy.Dial); without
	// it, ADD of a URL is refused (issue 39).
	Dial func(ctx context.Context, sb egressproxy.Sandbox, host string, port uint16) (net.Conn, error)
	// Ahead, when set, is the containers created ahead of the runtime
	// named name ("" the default), nil for one without (issue 46).
	Ahead func(name string) Ahead
}

// Service answers the snapshot, template and fork functions
// (functions.Snapshots).
type Service struct {
	core      Core
	snapshots sandbox.Records
	templates sandbox.Records
	dir       string
	storageMB uint64
	log       *slog.Logger
	events    interface {
		Append(events.Event) events.Event
	}
	// mu serializes the quota's check with the record that uses the room.
	mu sync.Mutex
	// buildMu guards builds, the template builds in progress, whose
	// layers no template keeps yet (issue 39: gcLayers spares them).
	buildMu sync.Mutex
	builds  map[*build]struct{}
	dial    func(ctx context.Context, sb egressproxy.Sandbox, host string, port uint16) (net.Conn, error)
	ahead   func(name string) Ahead // issue 46 (ahead.go)
}

// New is the snapshot service over core. It settles the checkpoint
// directory first (recover), so it is built before the daemon serves.
func New(core Core, o Options) (*Service, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	s := &Service{core: core, dir: o.Dir, storageMB: o.StorageMB, log: o.Logger, events: o.Events, dial: o.Dial, ahead: o.Ahead}
	var err error
	if s.snapshots, err = core.Records("snapshots"); err != nil {
		return nil, err
	}
	if s.templates, err = core.Records("templates"); err != nil {
		return nil, err
	}
	if err := s.recover(); err != nil {
		return nil, fmt.Errorf("settling the snapshot directory: %w", err)
	}
	return s, nil
}

// Origin applies a create's template (its defaults) and snapshot_id to
// req and says what the sandbox starts from: a template's layer, a
// snapshot's checkpoint, or nil for its image (sandbox.Options.OriginOf).
func (s *Service) Origin(ctx context.Context, req *api.CreateRequest) (from *sandbox.Origin, err error) {
	var builtSnap string
	if req.Template != "" {
		if from, builtSnap, err = s.templateSource(ctx, req); err != nil {
			return nil, err
		}
	}
	if req.SnapshotID != "" {
		layer := ""
		if from != nil && req.SnapshotID == builtSnap {
			layer = from.Layer // issue 39: the built template's snapshot booted on its layer
		}
		if from, err = s.snapshotSource(ctx, req); err != nil {
			return nil, err
		}
		from.Layer = layer
	}
	return from, nil
}

// path is where the snapshot or layer named name is kept.
func (s *Service) path(name string) string { return filepath.Join(s.dir, name) }

// tempDir is a new directory for a checkpoint or layer no record keeps
// yet; names beginning with "tmp-" are removed at start (recover).
func (s *Service) tempDir() (string, error) {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return "", err
	}
	return os.MkdirTemp(s.dir, "tmp-")
}

// roomFor fails with S400 unless snapshots and template layers, with n
// bytes more, fit in snapshot_storage_mb; s.mu must be held.
func (s *Service) roomFor(n int64) error {
	snaps, _, err := s.allSnapshots()
	if err != nil {
		return err
	}
	tmpls, _, err := s.allTemplates()
	if err != nil {
		return err
	}
	var used int64
	for _, r := range snaps {
		used += r.SizeBytes
	}
	for _, r := range tmpls {
		used += r.LayerBytes
	}
	if used+n > int64(s.storageMB)<<20 {
		return errdefs.New(errdefs.CodeCapacity, "snapshot storage is full: %d MiB used, %d MiB more needed, snapshot_storage_mb is %d",
			used>>20, (n+1<<20-1)>>20, s.storageMB).
			WithFix(nil, "delete snapshots or templates, or raise snapshot_storage_mb")
	}
	return nil
}

// recover settles the checkpoint directory at start: checkpoints and
// layers no record keeps (a crash mid-snapshot or mid-fork) are removed,
// and so are records whose files are gone. The core's hibernations are
// its own (sandbox.HibernatedPrefix).
func (s *Service) recover() error {
	recs, bad, err := s.allSnapshots()
	if err != nil {
		return err
	}
	kept := map[string]bool{buildDir: true} // issue 39: the build cache (build.go)
	for _, r := range recs {
		if _, err := os.Stat(s.path(r.ID)); errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("forgetting a snapshot whose files are gone", "snapshot", r.ID)
			bad = append(bad, r.ID)
			continue
		}
		kept[r.ID] = true
	}
	for _, id := range bad {
		if err := s.snapshots.Remove(id); err != nil {
			return err
		}
	}
	tmpls, _, err := s.allTemplates()
	if err != nil {
		return err
	}
	for _, r := range tmpls {
		if r.Layer != "" {
			kept[r.Layer] = true
			kept[treeOf(r.Layer)] = true // issue 39: its tree (trees.go)
		}
	}
	used := s.treesInUse()
	entries, err := os.ReadDir(s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if kept[e.Name()] || strings.HasPrefix(e.Name(), sandbox.HibernatedPrefix) || used[s.path(e.Name())] {
			continue
		}
		if err := os.RemoveAll(s.path(e.Name())); err != nil {
			return err
		}
		if !strings.HasPrefix(e.Name(), "tmp-") {
			s.log.Warn("removed snapshot files no record kept", "dir", e.Name())
		}
	}
	return nil
}

// dirSize is the bytes the regular files under dir take.
func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		n += fi.Size()
		return nil
	})
	return n, err
}

// stamp is t in RFC 3339 (UTC), or "" for the zero time.
func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}
