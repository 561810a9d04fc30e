package snapsvc

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
	"github.com/hutch-dev/hutch/internal/failpoint"
	"github.com/hutch-dev/hutch/internal/sandbox"
	"github.com/hutch-dev/hutch/internal/sandbox/spec"
)

// Templates: named starting points, per owner, kept in the store. A
// template from a sandbox also keeps that sandbox's writable layer, as the
// runtime captured it (Handle.CaptureLayer), in a file under the
// checkpoint directory; its sandboxes boot with it (Origin.Layer). Layers
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
	// Layer names the layer's file under the checkpoint directory.
	Layer      string    `json:"layer,omitempty"`
	LayerBytes int64     `json:"layer_bytes,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
	// Built is set on a template built from a Dockerfile (build.go): its
	// layers are shared with the build cache, not its own.
	Built *builtInfo `json:"built,omitempty"`
	// LastBuild is its last build's summary (buildlog.go).
	LastBuild *api.TemplateBuildSummary `json:"last_build,omitempty"`
}

// templateKey is a template's key in the store: names are per owner.
func templateKey(owner, name string) string { return owner + "\x00" + name }

func (r *templateRecord) key() string { return templateKey(r.Owner, r.Name) }

func (r *templateRecord) info() api.TemplateInfo {
	return api.TemplateInfo{Name: r.Name, TemplateDefaults: r.Defaults, FromSandbox: r.FromSandbox,
		LayerBytes: r.LayerBytes, CreatedAt: stamp(r.CreatedAt), LastBuild: r.LastBuild}
}

// allTemplates are every template's record; bad are the keys of those
// that do not decode.
func (s *Service) allTemplates() ([]*templateRecord, []string, error) {
	return sandbox.AllRecords(s.templates, func(r *templateRecord) string { return r.key() })
}

// CreateTemplate records a template (sandbox::template::create): its
// defaults are checked as a create's would be, against the caller's
// allowlist and caps; from_sandbox captures that sandbox's writable layer.
func (s *Service) CreateTemplate(ctx context.Context, req api.TemplateCreateRequest) (api.TemplateInfo, error) {
	if !templateName.MatchString(req.Name) {
		return api.TemplateInfo{}, errdefs.Malformed("template name %q must be 1 to 64 lowercase letters, digits and . _ - (starting with a letter or digit)", spec.Clip(req.Name, 64))
	}
	owner := auth.OwnerFrom(ctx)
	if _, err := s.template(ctx, req.Name); err == nil {
		return api.TemplateInfo{}, errdefs.Malformed("you already have a template named %s; delete it first", req.Name)
	}
	if req.FromSandbox != "" && req.SnapshotID != "" {
		return api.TemplateInfo{}, errdefs.Malformed("a template starts from_sandbox or from a snapshot_id, not both")
	}
	rec := &templateRecord{Name: req.Name, Owner: owner, Defaults: req.TemplateDefaults, FromSandbox: req.FromSandbox, CreatedAt: time.Now().UTC()}
	var src sandbox.Handle
	switch {
	case req.SnapshotID != "":
		snap, err := s.snapshot(ctx, req.SnapshotID)
		if err != nil {
			return api.TemplateInfo{}, err
		}
		if err := sameImage(&rec.Defaults, snap.Image); err != nil {
			return api.TemplateInfo{}, err
		}
		rec.ImageID = snap.ImageID
	case req.FromSandbox != "":
		h, release, err := s.core.Acquire(ctx, req.FromSandbox, sandbox.UseCall)
		if err != nil {
			return api.TemplateInfo{}, err
		}
		defer release()
		of, from := h.Copy()
		if err := sameImage(&rec.Defaults, of.Image); err != nil {
			return api.TemplateInfo{}, err
		}
		src, rec.ImageID = h, from.ImageID
	}
	if err := s.checkDefaults(rec.Defaults); err != nil {
		return api.TemplateInfo{}, err
	}
	if src != nil {
		if err := s.captureLayer(src, rec); err != nil {
			return api.TemplateInfo{}, err
		}
		return rec.info(), nil
	}
	if err := s.templates.Put(rec.key(), rec); err != nil {
		return api.TemplateInfo{}, err
	}
	return rec.info(), nil
}

// sameImage sets d's image to image, or fails when d names another.
func sameImage(d *api.TemplateDefaults, image string) error {
	if d.Image != "" && d.Image != image {
		return errdefs.Malformed("the template's sandboxes run image %s, from where it was taken; image %q is another", image, spec.Clip(d.Image, 64))
	}
	d.Image = image
	return nil
}

// checkDefaults checks a template's defaults as a create of them would be
// checked: catalog and allowlist, caps, env, life terms.
func (s *Service) checkDefaults(d api.TemplateDefaults) error {
	if d.Image == "" {
		return errdefs.Malformed("a template needs an image, a snapshot_id or a from_sandbox")
	}
	var req api.CreateRequest
	d.Apply(&req)
	return s.core.CheckRequest(req)
}

// captureLayer writes src's writable layer into a file for rec and records
// rec, within snapshot_storage_mb; on failure nothing of it is kept.
func (s *Service) captureLayer(src sandbox.Handle, rec *templateRecord) error {
	tmp, err := s.tempDir()
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	file := filepath.Join(tmp, "layer.tar")
	if err := src.CaptureLayer(file); err != nil {
		return err
	}
	fi, err := os.Stat(file)
	if err != nil {
		return err
	}
	rec.Layer, rec.LayerBytes = "layer-"+uuid.NewString()+".tar", fi.Size()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.roomFor(rec.LayerBytes); err != nil {
		return err
	}
	if err := os.Rename(file, s.path(rec.Layer)); err != nil {
		return err
	}
	failpoint.Hit("template.capture.after-rename")
	if err := s.templates.Put(rec.key(), rec); err != nil {
		os.Remove(s.path(rec.Layer))
		return err
	}
	// Its first sandbox need not wait for the tree (templateSource
	// unpacks it when missing).
	if _, err := s.ensureTree(rec.Layer); err != nil {
		s.log.Warn("unpacking a template's layer", "template", rec.Name, "err", err)
	}
	return nil
}

// template returns the caller's template of name: S007 when there is none.
func (s *Service) template(ctx context.Context, name string) (*templateRecord, error) {
	var rec templateRecord
	found, err := s.templates.Get(templateKey(auth.OwnerFrom(ctx), name), &rec)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, errdefs.New(errdefs.CodeNoTemplate, "template not found: %s", spec.Clip(name, 64))
	}
	return &rec, nil
}

// templateSource applies a create's template to req and returns the
// layer its sandbox boots with, if the template has one, and the snapshot
// of a built template's start command, taken of a sandbox of that layer.
func (s *Service) templateSource(ctx context.Context, req *api.CreateRequest) (*sandbox.Origin, string, error) {
	rec, err := s.template(ctx, req.Template)
	if err != nil {
		return nil, "", err
	}
	if req.Image != "" && req.Image != rec.Defaults.Image && (rec.Layer != "" || rec.Defaults.SnapshotID != "") {
		return nil, "", errdefs.Malformed("template %s starts from files of image %s; image %q is another", rec.Name, rec.Defaults.Image, spec.Clip(req.Image, 64))
	}
	rec.Defaults.Apply(req)
	var built string
	if rec.Built != nil {
		built = rec.Built.Snapshot
	}
	if rec.Layer == "" {
		return nil, built, nil
	}
	tree, err := s.ensureTree(rec.Layer) // issue 39: shared, not copied (trees.go)
	if err != nil {
		s.log.Error("unpacking a template's layer", "template", rec.Name, "err", err)
		return nil, "", errdefs.New(errdefs.CodeInternal, "preparing the files of template %s failed", rec.Name)
	}
	return &sandbox.Origin{Layer: tree, ImageID: rec.ImageID}, built, nil
}

// ListTemplates lists the caller's templates by name.
func (s *Service) ListTemplates(ctx context.Context, _ api.TemplateListRequest) (api.TemplateListResponse, error) {
	recs, _, err := s.allTemplates()
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
func (s *Service) GetTemplate(ctx context.Context, req api.TemplateRequest) (api.TemplateInfo, error) {
	rec, err := s.template(ctx, req.Name)
	if err != nil {
		return api.TemplateInfo{}, err
	}
	return rec.info(), nil
}

// DeleteTemplate removes a template and its layer; sandboxes made from it
// are not affected, nor is a snapshot it names.
func (s *Service) DeleteTemplate(ctx context.Context, req api.TemplateRequest) (api.TemplateDeleteResponse, error) {
	rec, err := s.template(ctx, req.Name)
	if err != nil {
		return api.TemplateDeleteResponse{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.templates.Remove(rec.key()); err != nil {
		return api.TemplateDeleteResponse{}, err
	}
	if rec.Built != nil {
		if rec.Built.Snapshot != "" {
			s.mu.Unlock()
			s.dropSnapshot(ctx, rec.Built.Snapshot)
			s.mu.Lock()
		}
		s.gcLayers()
	} else if rec.Layer != "" {
		if err := os.Remove(s.path(rec.Layer)); err != nil {
			s.log.Error("removing a template's layer", "template", rec.Name, "err", err)
		}
		s.dropTree(rec.Layer, s.treesInUse())
	}
	return api.TemplateDeleteResponse{Name: rec.Name, Deleted: true}, nil
}
