package snapsvc

import (
	"context"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/sandbox"
	"github.com/hutch-dev/hutch/internal/sandbox/sandboxtest"
)

// overManager is the service over a real manager (sandboxtest.NewManager)
// of cfg in stateDir, wired as the daemon wires it.
func overManager(t *testing.T, cfg config.Config, stateDir string) (*Service, *sandbox.Manager) {
	t.Helper()
	var s *Service
	m := sandboxtest.NewManager(t, sandbox.Options{Config: cfg, StateDir: stateDir,
		OriginOf: func(ctx context.Context, req *api.CreateRequest) (*sandbox.Origin, error) { return s.Origin(ctx, req) }})
	s, err := New(m, Options{Dir: sandbox.CheckpointDir(stateDir), StorageMB: cfg.SnapshotStorageMB})
	if err != nil {
		t.Fatal(err)
	}
	return s, m
}

func as(owner string) context.Context { return auth.WithOwner(context.Background(), owner) }

// wantCode fails t unless err carries code.
func wantCode(t *testing.T, err error, code errdefs.Code) {
	t.Helper()
	if !errdefs.Is(err, code) {
		t.Fatalf("got %v, want %s", err, code)
	}
}

// TestTemplates: a template's defaults are checked as a create's, apply
// under a create's own fields, are checked again at each use, and are the
// owner's only.
func TestTemplates(t *testing.T) {
	cfg := config.Default()
	cfg.WarmPoolAuto = false
	cfg.PerImageCaps = map[string]config.ImageCaps{"python": {MaxMemoryMB: 1024}}
	stateDir := t.TempDir()
	s, m := overManager(t, cfg, stateDir)
	ctx := context.Background()
	_, err := s.CreateTemplate(ctx, api.TemplateCreateRequest{Name: "small", TemplateDefaults: api.TemplateDefaults{
		Image: "python", MemoryMB: 256, Env: api.Env{"MODE=dev", "KEEP=1"}, OnIdle: api.OnIdlePause, Metadata: map[string]string{"tier": "t1"}}})
	if err != nil {
		t.Fatal(err)
	}
	create := func(req api.CreateRequest) api.SandboxInfo {
		t.Helper()
		resp, err := m.Create(ctx, req)
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		info, err := m.Get(ctx, api.GetRequest{SandboxID: resp.SandboxID})
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	info := create(api.CreateRequest{Template: "small", Env: api.Env{"MODE=prod"}, Metadata: map[string]string{"run": "1"}})
	id := info.SandboxID
	if info.Image != "python" || info.MemoryMB != 256 || info.OnIdle != api.OnIdlePause || info.Metadata["tier"] != "t1" || info.Metadata["run"] != "1" {
		t.Errorf("a sandbox of the template is %+v", info)
	}
	r, err := m.Exec(ctx, api.ExecRequest{SandboxID: id, Argv: []string{"sh", "-c", "echo $MODE $KEEP"}})
	if err != nil || r.Stdout != "prod 1\n" {
		t.Errorf("env of a sandbox of the template: %q %v; want the request's entries to win", r.Stdout, err)
	}
	if info := create(api.CreateRequest{Template: "small", MemoryMB: 512}); info.MemoryMB != 512 {
		t.Errorf("memory_mb did not override the template's: %d", info.MemoryMB)
	}

	for name, req := range map[string]api.TemplateCreateRequest{
		"disallowed image": {Name: "a", TemplateDefaults: api.TemplateDefaults{Image: "ubuntu"}},
		"over a cap":       {Name: "b", TemplateDefaults: api.TemplateDefaults{Image: "python", MemoryMB: 2048}},
		"bad env":          {Name: "c", TemplateDefaults: api.TemplateDefaults{Image: "python", Env: api.Env{"1X=y"}}},
		"bad name":         {Name: "Big Name", TemplateDefaults: api.TemplateDefaults{Image: "python"}},
		"no image":         {Name: "d"},
		"taken name":       {Name: "small", TemplateDefaults: api.TemplateDefaults{Image: "python"}},
		"both origins":     {Name: "e", FromSandbox: id, TemplateDefaults: api.TemplateDefaults{SnapshotID: id}},
	} {
		if _, err := s.CreateTemplate(ctx, req); err == nil {
			t.Errorf("%s: a template was made", name)
		}
	}
	_, err = s.CreateTemplate(ctx, api.TemplateCreateRequest{Name: "files", FromSandbox: id})
	wantCode(t, err, errdefs.CodeUnsupported) // the in-process runtime captures no layer
	if list, _ := s.ListTemplates(ctx, api.TemplateListRequest{}); len(list.Templates) != 1 {
		t.Errorf("after the refused templates: %+v", list.Templates)
	}

	// The template is checked again at each use: caps apply.
	_, err = m.Create(ctx, api.CreateRequest{Template: "small", MemoryMB: 2048})
	wantCode(t, err, errdefs.CodeCapacity)
	_, err = m.Create(ctx, api.CreateRequest{Template: "missing"})
	wantCode(t, err, errdefs.CodeNoTemplate)
	_, err = m.Create(as("mallory"), api.CreateRequest{Template: "small"})
	wantCode(t, err, errdefs.CodeNoTemplate)
	if list, _ := s.ListTemplates(as("mallory"), api.TemplateListRequest{}); len(list.Templates) != 0 {
		t.Errorf("another owner lists %+v", list.Templates)
	}
	_, err = s.DeleteTemplate(as("mallory"), api.TemplateRequest{Name: "small"})
	wantCode(t, err, errdefs.CodeNoTemplate)

	// A daemon that no longer allows the template's image keeps the
	// template and refuses its use.
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	cfg.ImageAllowlist = []string{"node"}
	s, m = overManager(t, cfg, stateDir)
	_, err = m.Create(ctx, api.CreateRequest{Template: "small"})
	wantCode(t, err, errdefs.CodeImageNotAllowed)

	if _, err := s.DeleteTemplate(ctx, api.TemplateRequest{Name: "small"}); err != nil {
		t.Fatal(err)
	}
	_, err = s.GetTemplate(ctx, api.TemplateRequest{Name: "small"})
	wantCode(t, err, errdefs.CodeNoTemplate)
}
