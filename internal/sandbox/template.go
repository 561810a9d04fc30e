package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"time"

	"github.com/google/uuid"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/runtime"
)

// Templates: named starting points, per owner, kept in the store. A
// template from a sandbox also keeps that sandbox's writable layer, as the
// runtime captured it (runtime.LayerCapturer), in a file under the
// snapshot directory; its sandboxes boot with it (Spec.UpperLayer). Layers
// count against snapshot_storage_mb with the snapshots.

// templateName is what a template's name may be.
var templateName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// templateRecord is the persisted record of one template.
type templateRecord struct {
	Name     string               `json:"name"`
	Owner    string               `json:"owner,omitempty"`
	Defaults api.TemplateDefaults `json:"defaults"`
	// ImageID is the image the layer or snapshot was taken on.
	ImageID     string `json:"image_id,omitempty"`
	FromSandbox string `json:"from_sandbox,omitempty"`
	// Layer names the layer's file under the snapshot directory.
	Layer      string    `json:"layer,omitempty"`
	LayerBytes int64     `json:"layer_bytes,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
}

// templateKey is a template's key in the store: names are per owner.
func templateKey(owner, name string) string { return owner + "\x00" + name }

func (r *templateRecord) key() string { return templateKey(r.Owner, r.Name) }

func (r *templateRecord) info() api.TemplateInfo {
	return api.TemplateInfo{Name: r.Name, TemplateDefaults: r.Defaults, FromSandbox: r.FromSandbox,
		LayerBytes: r.LayerBytes, CreatedAt: rfc3339(r.CreatedAt)}
}

// CreateTemplate records a template (sandbox::template::create): its
// defaults are checked as a create's would be, against the caller's
// allowlist and caps; from_sandbox captures that sandbox's writable layer.
func (m *Manager) CreateTemplate(ctx context.Context, req api.TemplateCreateRequest) (api.TemplateInfo, error) {
	if !templateName.MatchString(req.Name) {
		return api.TemplateInfo{}, errdefs.Malformed("template name %q must be 1 to 64 lowercase letters, digits and . _ - (starting with a letter or digit)", clip(req.Name, 64))
	}
	owner := auth.OwnerFrom(ctx)
	if _, err := m.template(ctx, req.Name); err == nil {
		return api.TemplateInfo{}, errdefs.Malformed("you already have a template named %s; delete it first", req.Name)
	}
	if req.FromSandbox != "" && req.SnapshotID != "" {
		return api.TemplateInfo{}, errdefs.Malformed("a template starts from_sandbox or from a snapshot_id, not both")
	}
	rec := &templateRecord{Name: req.Name, Owner: owner, Defaults: req.TemplateDefaults, FromSandbox: req.FromSandbox, CreatedAt: time.Now().UTC()}
	var src *sandbox
	switch {
	case req.SnapshotID != "":
		snap, err := m.snapshot(ctx, req.SnapshotID)
		if err != nil {
			return api.TemplateInfo{}, err
		}
		if err := sameImage(&rec.Defaults, snap.Image); err != nil {
			return api.TemplateInfo{}, err
		}
		rec.ImageID = snap.ImageID
	case req.FromSandbox != "":
		sb, release, err := m.acquire(ctx, req.FromSandbox, UseCall)
		if err != nil {
			return api.TemplateInfo{}, err
		}
		defer release()
		if err := sameImage(&rec.Defaults, sb.rec.Image); err != nil {
			return api.TemplateInfo{}, err
		}
		src, rec.ImageID = sb, sb.rec.ImageID
	}
	if err := m.checkDefaults(rec.Defaults); err != nil {
		return api.TemplateInfo{}, err
	}
	if src != nil {
		if err := m.captureLayer(src, rec); err != nil {
			return api.TemplateInfo{}, err
		}
		return rec.info(), nil
	}
	if err := m.store.putIn(bucketTemplates, rec.key(), rec); err != nil {
		return api.TemplateInfo{}, err
	}
	return rec.info(), nil
}

// sameImage sets d's image to image, or fails when d names another.
func sameImage(d *api.TemplateDefaults, image string) error {
	if d.Image != "" && d.Image != image {
		return errdefs.Malformed("the template's sandboxes run image %s, from where it was taken; image %q is another", image, clip(d.Image, 64))
	}
	d.Image = image
	return nil
}

// checkDefaults checks a template's defaults as a create of them would be
// checked: catalog and allowlist, caps, env, life terms.
func (m *Manager) checkDefaults(d api.TemplateDefaults) error {
	if d.Image == "" {
		return errdefs.Malformed("a template needs an image, a snapshot_id or a from_sandbox")
	}
	var req api.CreateRequest
	d.Apply(&req)
	if err := m.allowed(req.Image); err != nil {
		return err
	}
	if _, _, err := m.limits(req); err != nil {
		return err
	}
	if err := ValidateEnv("env", req.Env); err != nil {
		return err
	}
	_, err := m.createTerms(req)
	return err
}

// captureLayer writes src's writable layer into a file for rec and records
// rec, within snapshot_storage_mb; on failure nothing of it is kept.
func (m *Manager) captureLayer(src *sandbox, rec *templateRecord) error {
	inst, _ := src.conn()
	lc, ok := inst.(runtime.LayerCapturer)
	if !ok {
		return unsupported(src.rec.Runtime, "capture a sandbox's files")
	}
	tmp, err := m.snaps.tempDir()
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	ctx, cancel := context.WithTimeout(context.Background(), checkpointTimeout)
	defer cancel()
	file := filepath.Join(tmp, "layer.tar")
	if err := lc.CaptureLayer(ctx, file); err != nil {
		m.log.Error("capturing a layer", "sandbox", src.rec.ID, "err", err)
		return errdefs.New(errdefs.CodeInternal, "capturing the files of sandbox %s failed", src.rec.ID)
	}
	fi, err := os.Stat(file)
	if err != nil {
		return err
	}
	rec.Layer, rec.LayerBytes = "layer-"+uuid.NewString()+".tar", fi.Size()
	m.snaps.mu.Lock()
	defer m.snaps.mu.Unlock()
	if err := m.roomFor(rec.LayerBytes); err != nil {
		return err
	}
	if err := os.Rename(file, m.snaps.dir(rec.Layer)); err != nil {
		return err
	}
	if err := m.store.putIn(bucketTemplates, rec.key(), rec); err != nil {
		os.Remove(m.snaps.dir(rec.Layer))
		return err
	}
	return nil
}

// template returns the caller's template of name: S007 when there is none.
func (m *Manager) template(ctx context.Context, name string) (*templateRecord, error) {
	rec, err := getIn[templateRecord](m.store, bucketTemplates, templateKey(auth.OwnerFrom(ctx), name))
	if err != nil {
		return nil, err
	}
	if rec == nil {
		return nil, errdefs.New(errdefs.CodeNoTemplate, "template not found: %s", clip(name, 64))
	}
	return rec, nil
}

// templateSource applies a create's template to req and returns the
// layer its sandbox boots with, if the template has one.
func (m *Manager) templateSource(ctx context.Context, req *api.CreateRequest) (*origin, error) {
	rec, err := m.template(ctx, req.Template)
	if err != nil {
		return nil, err
	}
	if req.Image != "" && req.Image != rec.Defaults.Image && (rec.Layer != "" || rec.Defaults.SnapshotID != "") {
		return nil, errdefs.Malformed("template %s starts from files of image %s; image %q is another", rec.Name, rec.Defaults.Image, clip(req.Image, 64))
	}
	rec.Defaults.Apply(req)
	if rec.Layer == "" {
		return nil, nil
	}
	return &origin{layer: m.snaps.dir(rec.Layer), imageID: rec.ImageID}, nil
}

// ListTemplates lists the caller's templates by name.
func (m *Manager) ListTemplates(ctx context.Context, _ api.TemplateListRequest) (api.TemplateListResponse, error) {
	recs, _, err := allIn(m.store, bucketTemplates, func(r *templateRecord) string { return r.key() })
	if err != nil {
		return api.TemplateListResponse{}, err
	}
	owner := auth.OwnerFrom(ctx)
	sort.Slice(recs, func(i, j int) bool { return recs[i].Name < recs[j].Name })
	out := api.TemplateListResponse{Templates: []api.TemplateInfo{}}
	for _, r := range recs {
		if r.Owner == owner {
			out.Templates = append(out.Templates, r.info())
		}
	}
	return out, nil
}

// GetTemplate describes one template.
func (m *Manager) GetTemplate(ctx context.Context, req api.TemplateRequest) (api.TemplateInfo, error) {
	rec, err := m.template(ctx, req.Name)
	if err != nil {
		return api.TemplateInfo{}, err
	}
	return rec.info(), nil
}

// DeleteTemplate removes a template and its layer; sandboxes made from it
// are not affected, nor is a snapshot it names.
func (m *Manager) DeleteTemplate(ctx context.Context, req api.TemplateRequest) (api.TemplateDeleteResponse, error) {
	rec, err := m.template(ctx, req.Name)
	if err != nil {
		return api.TemplateDeleteResponse{}, err
	}
	m.snaps.mu.Lock()
	defer m.snaps.mu.Unlock()
	if err := m.store.removeIn(bucketTemplates, rec.key()); err != nil {
		return api.TemplateDeleteResponse{}, err
	}
	if rec.Layer != "" {
		if err := os.Remove(m.snaps.dir(rec.Layer)); err != nil {
			m.log.Error("removing a template's layer", "template", rec.Name, "err", err)
		}
	}
	return api.TemplateDeleteResponse{Name: rec.Name, Deleted: true}, nil
}

// roomFor fails with S400 unless snapshots and template layers, with n
// bytes more, fit in snapshot_storage_mb; m.snaps.mu must be held.
func (m *Manager) roomFor(n int64) error {
	snaps, _, err := allIn(m.store, bucketSnapshots, func(r *snapshotRecord) string { return r.ID })
	if err != nil {
		return err
	}
	tmpls, _, err := allIn(m.store, bucketTemplates, func(r *templateRecord) string { return r.key() })
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
	if used+n > int64(m.cfg.SnapshotStorageMB)<<20 {
		return errdefs.New(errdefs.CodeCapacity, "snapshot storage is full: %d MiB used, %d MiB more needed, snapshot_storage_mb is %d",
			used>>20, (n+1<<20-1)>>20, m.cfg.SnapshotStorageMB).
			WithFix(nil, "delete snapshots or templates, or raise snapshot_storage_mb")
	}
	return nil
}
