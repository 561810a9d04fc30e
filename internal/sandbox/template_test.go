package sandbox

import (
	"context"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

func TestTemplates(t *testing.T) {
	m, _, _ := inprocess(t, func(c *config.Config) {
		c.PerImageCaps = map[string]config.ImageCaps{"python": {MaxMemoryMB: 1024}}
	})
	ctx := context.Background()
	_, err := m.CreateTemplate(ctx, api.TemplateCreateRequest{Name: "small", TemplateDefaults: api.TemplateDefaults{
		Image: "python", MemoryMB: 256, Env: api.Env{"MODE=dev", "KEEP=1"}, OnIdle: api.OnIdlePause, Metadata: map[string]string{"tier": "t1"}}})
	if err != nil {
		t.Fatal(err)
	}
	id := create(t, m, api.CreateRequest{Template: "small", Env: api.Env{"MODE=prod"}, Metadata: map[string]string{"run": "1"}})
	info := state(t, m, id)
	if info.Image != "python" || info.MemoryMB != 256 || info.OnIdle != api.OnIdlePause || info.Metadata["tier"] != "t1" || info.Metadata["run"] != "1" {
		t.Errorf("a sandbox of the template is %+v", info)
	}
	r, err := m.Exec(ctx, api.ExecRequest{SandboxID: id, Argv: []string{"sh", "-c", "echo $MODE $KEEP"}})
	if err != nil || r.Stdout != "prod 1\n" {
		t.Errorf("env of a sandbox of the template: %q %v; want the request's entries to win", r.Stdout, err)
	}
	if info := state(t, m, create(t, m, api.CreateRequest{Template: "small", MemoryMB: 512})); info.MemoryMB != 512 {
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
		if _, err := m.CreateTemplate(ctx, req); err == nil {
			t.Errorf("%s: a template was made", name)
		}
	}
	_, err = m.CreateTemplate(ctx, api.TemplateCreateRequest{Name: "files", FromSandbox: id})
	wantCode(t, err, errdefs.CodeUnsupported) // the in-process runtime captures no layer
	if list, _ := m.ListTemplates(ctx, api.TemplateListRequest{}); len(list.Templates) != 1 {
		t.Errorf("after the refused templates: %+v", list.Templates)
	}

	// The template is checked again at each use: an image no longer
	// allowed is refused, caps apply.
	_, err = m.Create(ctx, api.CreateRequest{Template: "small", MemoryMB: 2048})
	wantCode(t, err, errdefs.CodeCapacity)
	allowed := m.cfg.ImageAllowlist
	m.cfg.ImageAllowlist = []string{"node"}
	_, err = m.Create(ctx, api.CreateRequest{Template: "small"})
	wantCode(t, err, errdefs.CodeImageNotAllowed)
	m.cfg.ImageAllowlist = allowed

	_, err = m.Create(ctx, api.CreateRequest{Template: "missing"})
	wantCode(t, err, errdefs.CodeNoTemplate)
	_, err = m.Create(as("mallory"), api.CreateRequest{Template: "small"})
	wantCode(t, err, errdefs.CodeNoTemplate)
	if list, _ := m.ListTemplates(as("mallory"), api.TemplateListRequest{}); len(list.Templates) != 0 {
		t.Errorf("another owner lists %+v", list.Templates)
	}
	_, err = m.DeleteTemplate(as("mallory"), api.TemplateRequest{Name: "small"})
	wantCode(t, err, errdefs.CodeNoTemplate)
	if _, err := m.DeleteTemplate(ctx, api.TemplateRequest{Name: "small"}); err != nil {
		t.Fatal(err)
	}
	_, err = m.GetTemplate(ctx, api.TemplateRequest{Name: "small"})
	wantCode(t, err, errdefs.CodeNoTemplate)
}
