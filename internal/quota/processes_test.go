package quota_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/quota"
)

// The fakes hold one live sandbox of 1 cpu, its processes procs and the
// templates tmpls; every method the quota does not call is absent.
type fakeSandboxes struct{ functions.Sandboxes }

func (fakeSandboxes) List(context.Context, api.ListRequest) (api.ListResponse, error) {
	return api.ListResponse{Sandboxes: []api.SandboxInfo{{SandboxID: "a", CPUs: 1, MemoryMB: 512, State: "running"}}}, nil
}

type fakeProcesses struct {
	functions.Processes
	procs []api.ProcessEntry
}

func (f fakeProcesses) ListProcesses(context.Context, api.ProcessListRequest) (api.ProcessListResponse, error) {
	return api.ProcessListResponse{Processes: f.procs}, nil
}

type fakeSnapshots struct {
	functions.Snapshots
	tmpls map[string]api.TemplateInfo
}

func (f fakeSnapshots) GetTemplate(_ context.Context, req api.TemplateRequest) (api.TemplateInfo, error) {
	tm, ok := f.tmpls[req.Name]
	if !ok {
		return tm, errdefs.New(errdefs.CodeNoTemplate, "no template %q", req.Name)
	}
	return tm, nil
}

func (fakeSnapshots) ListSnapshots(context.Context, api.SnapshotListRequest) (api.SnapshotListResponse, error) {
	return api.SnapshotListResponse{}, nil
}

func (f fakeSnapshots) ListTemplates(context.Context, api.TemplateListRequest) (api.TemplateListResponse, error) {
	return api.TemplateListResponse{}, nil
}

// TestProcessesAndTemplateShape (issue 38: 6): running processes count
// against quota processes, with the execs in flight; a create from a
// template is charged the template's cpus and memory, not the defaults.
func TestProcessesAndTemplateShape(t *testing.T) {
	cfg := config.Default()
	cfg.Quota = config.Quota{Default: config.QuotaLimits{CPUs: 4, Processes: 3}}
	deps := functions.Deps{
		Sandboxes: fakeSandboxes{},
		Processes: fakeProcesses{procs: []api.ProcessEntry{{Pid: 2, State: "S"}, {Pid: 3, State: "R"}, {Pid: 4, State: "Z"}}},
		Snapshots: fakeSnapshots{tmpls: map[string]api.TemplateInfo{
			"big":   {Name: "big", TemplateDefaults: api.TemplateDefaults{CPUs: 4, MemoryMB: 2048}},
			"small": {Name: "small", TemplateDefaults: api.TemplateDefaults{CPUs: 2}},
		}},
	}
	q := quota.New(&cfg, deps)
	ctx := auth.WithOwner(context.Background(), "alice")

	done, err := q.Admit(ctx, api.FnExec, api.ExecRequest{SandboxID: "a", Cmd: "true"})
	if err != nil {
		t.Fatalf("an exec with 2 of 3 processes running: %v", err)
	}
	_, err = q.Admit(ctx, api.FnProcessStart, api.ProcessStartRequest{SandboxID: "a", Cmd: "sleep"})
	if e := errdefs.As(err); e.Code != errdefs.CodeQuota || !strings.Contains(e.Message, "quota.default.processes = 3: 3 used, the call adds 1") {
		t.Errorf("a process start with 2 running and an exec in flight: %v", err)
	}
	done()
	if done, err := q.Admit(ctx, api.FnProcessStart, api.ProcessStartRequest{SandboxID: "a", Cmd: "sleep"}); err != nil {
		t.Errorf("a process start once the exec ended: %v", err)
	} else {
		done()
	}
	res, err := q.Usage(ctx, api.QuotaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range res.Items {
		if it.Name == "processes" && (it.Used != 2 || it.Limit != 3 || it.Key != "quota.default.processes") {
			t.Errorf("processes in sandbox::quota: %+v", it)
		}
	}

	_, err = q.Admit(ctx, api.FnCreate, api.CreateRequest{Template: "big"})
	if e := errdefs.As(err); e.Code != errdefs.CodeQuota || !strings.Contains(e.Message, "quota.default.cpus = 4: 1 used, the call adds 4") {
		t.Errorf("a create from a template of 4 cpus with 1 of 4 used: %v", err)
	}
	if done, err := q.Admit(ctx, api.FnCreate, api.CreateRequest{Template: "small"}); err != nil {
		t.Errorf("a create from a template of 2 cpus: %v", err)
	} else {
		done()
	}
	if _, err := q.Admit(ctx, api.FnCreate, api.CreateRequest{Template: "big", CPUs: 1}); err != nil {
		t.Errorf("a create from a template asking 1 cpu: %v", err)
	}
}
