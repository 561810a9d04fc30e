package sandbox

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/runtime/runtimetest"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// plainRuntime is an in-process runtime named "plain" that reports no
// optional ability: the manager must judge its sandboxes by that, even
// though its instances could pause.
type plainRuntime struct{ rt *runtimetest.Runtime }

func (p plainRuntime) Name() string { return "plain" }
func (p plainRuntime) Start(ctx context.Context, spec runtime.Spec) (runtime.Instance, error) {
	return p.rt.Start(ctx, spec)
}
func (p plainRuntime) Reconcile(ctx context.Context, keep func(string) bool) ([]string, error) {
	return p.rt.Reconcile(ctx, keep)
}

// twoRuntimes is a manager offering the in-process runtime (the default)
// and "plain", with "absent" down; it returns plain's instances' source.
func twoRuntimes(t *testing.T, edit func(*config.Config)) (*Manager, *runtimetest.Runtime) {
	t.Helper()
	plain := runtimetest.New(t)
	m, _, _ := inprocessWith(t, edit, func(o *Options) {
		set, err := runtime.NewSet(runtimetest.Name, []runtime.Runtime{o.Runtimes.Default(), plainRuntime{plain}},
			map[string]string{"absent": "its hypervisor is not installed"})
		if err != nil {
			t.Fatal(err)
		}
		o.Runtimes = set
	})
	return m, plain
}

// TestCreateChoosesTheRuntime: a create names its runtime or gets the
// default, the sandbox says which, and its instance runs there.
func TestCreateChoosesTheRuntime(t *testing.T) {
	m, plain := twoRuntimes(t, nil)
	ctx := context.Background()
	def, err := m.Create(ctx, api.CreateRequest{Image: "python"})
	if err != nil || def.Runtime != runtimetest.Name {
		t.Fatalf("create without a runtime: %+v, %v", def, err)
	}
	other, err := m.Create(ctx, api.CreateRequest{Image: "python", Runtime: "plain"})
	if err != nil || other.Runtime != "plain" {
		t.Fatalf("create in plain: %+v, %v", other, err)
	}
	if n := len(plain.Instances()); n != 1 {
		t.Fatalf("plain started %d instances, want 1", n)
	}
	for id, want := range map[string]string{def.SandboxID: runtimetest.Name, other.SandboxID: "plain"} {
		info, err := m.Get(ctx, api.GetRequest{SandboxID: id})
		if err != nil || info.Runtime != want {
			t.Errorf("sandbox %s: runtime %q (%v), want %q", id, info.Runtime, err, want)
		}
	}
	res, err := m.Exec(ctx, api.ExecRequest{SandboxID: other.SandboxID, Argv: []string{"echo", "hi"}})
	if err != nil || strings.TrimSpace(res.Stdout) != "hi" {
		t.Fatalf("exec in plain: %+v, %v", res, err)
	}
	// Judged by its runtime's abilities: plain has none.
	_, err = m.Pause(ctx, api.PauseRequest{SandboxID: other.SandboxID})
	if wantCode(t, err, errdefs.CodeUnsupported); !strings.Contains(err.Error(), "plain runtime cannot pause") {
		t.Errorf("pause in plain: %v", err)
	}
	h, release, err := m.Acquire(ctx, other.SandboxID, UseRead)
	if err != nil {
		t.Fatal(err)
	}
	err = h.Checkpoint(t.TempDir())
	release()
	wantCode(t, err, errdefs.CodeUnsupported)
	if _, err := m.Stop(ctx, api.StopRequest{SandboxID: other.SandboxID, Wait: true}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, func() bool { return plain.Instances()[0].Destroyed() }, "plain's instance is destroyed")
}

// TestCreateRefusesARuntime: a name no runtime has is S001, a runtime the
// host cannot run is S302 with why, a runtime that cannot mount volumes
// is S302; none of them leaves a sandbox or a reservation behind.
func TestCreateRefusesARuntime(t *testing.T) {
	m, plain := twoRuntimes(t, nil)
	ctx := context.Background()
	for _, tc := range []struct {
		req  api.CreateRequest
		code errdefs.Code
		says string
	}{
		{api.CreateRequest{Image: "python", Runtime: "nope"}, errdefs.CodeMalformed, `unknown runtime "nope" (this daemon offers inprocess, plain)`},
		{api.CreateRequest{Image: "python", Runtime: "absent"}, errdefs.CodeUnsupported, "absent: its hypervisor is not installed"},
		{api.CreateRequest{Image: "python", Runtime: "plain", Volumes: []api.VolumeMount{{Name: "v", Path: "/data"}}}, errdefs.CodeUnsupported, "plain runtime cannot mount volumes"},
	} {
		_, err := m.Create(ctx, tc.req)
		if wantCode(t, err, tc.code); !strings.Contains(err.Error(), tc.says) {
			t.Errorf("create %+v: %v, want it to say %q", tc.req, err, tc.says)
		}
	}
	list, err := m.List(ctx, api.ListRequest{})
	if err != nil || len(list.Sandboxes) != 0 || len(plain.Instances()) != 0 || m.reserved != 0 {
		t.Errorf("after refusals: %d sandboxes, %d plain instances, %d reserved (%v)", len(list.Sandboxes), len(plain.Instances()), m.reserved, err)
	}
}

// TestWarmPoolServesTheDefaultRuntime: a create in another runtime boots
// its own sandbox and leaves the pool's alone.
func TestWarmPoolServesTheDefaultRuntime(t *testing.T) {
	m, plain := twoRuntimes(t, func(c *config.Config) { c.WarmPool = map[string]int{"python": 1} })
	ready := func() int {
		for _, st := range m.WarmPool() {
			if st.Image == "python" {
				return st.Ready
			}
		}
		return 0
	}
	testutil.Eventually(t, 30*time.Second, func() bool { return ready() == 1 }, "the pool fills")
	resp, err := m.Create(context.Background(), api.CreateRequest{Image: "python", Runtime: "plain"})
	if err != nil || resp.Runtime != "plain" || len(plain.Instances()) != 1 {
		t.Fatalf("create in plain: %+v, %v (%d plain instances)", resp, err, len(plain.Instances()))
	}
	if n := ready(); n != 1 {
		t.Errorf("pool has %d ready, want its 1 untouched", n)
	}
}
