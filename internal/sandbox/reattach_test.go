package sandbox

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/sandbox/volumesvc"
)

// TestCloseLeavesReattachable (issue 35): with Options.Reattach, Close
// leaves a running sandbox that reattaches, and a frozen one (their
// instances not destroyed, their records live, for the next daemon to
// adopt) and stops the others as before: one Reattach refuses, and one
// that mounts a volume.
func TestCloseLeavesReattachable(t *testing.T) {
	state := t.TempDir()
	m, rt, _ := inprocessWith(t, nil, func(o *Options) {
		o.StateDir = state
		o.Reattach = func(meta map[string]string, network bool) bool { return !network && meta["pod"] != "" }
	})
	withVolumes(t, m)
	ctx := as("alice")
	if _, err := volumesvc.New(m.vols.store).CreateVolume(ctx, api.VolumeCreateRequest{Name: "data"}); err != nil {
		t.Fatal(err)
	}
	mk := func(req api.CreateRequest) string {
		resp, err := m.Create(ctx, req)
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		return resp.SandboxID
	}
	pod := mk(api.CreateRequest{Image: "python", Metadata: map[string]string{"pod": "uid-1"}})
	frozen := mk(api.CreateRequest{Image: "python", Metadata: map[string]string{"pod": "uid-3"}})
	if _, err := m.Pause(ctx, api.PauseRequest{SandboxID: frozen}); err != nil {
		t.Fatal(err)
	}
	plain := mk(api.CreateRequest{Image: "python"})
	mounted := mk(api.CreateRequest{Image: "python", Metadata: map[string]string{"pod": "uid-2"},
		Volumes: []api.VolumeMount{{Name: "data", Path: "/data"}}})
	reattach := map[string]bool{}
	for _, inst := range rt.Instances() {
		reattach[inst.Spec.ID] = inst.Spec.Reattach
	}
	if !reattach[pod] || !reattach[frozen] || reattach[plain] || reattach[mounted] {
		t.Fatalf("runtime specs' Reattach: %v (want only %s, %s)", reattach, pod, frozen)
	}

	cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Close(cctx); err != nil {
		t.Fatal(err)
	}
	for _, inst := range rt.Instances() {
		if got, want := inst.Destroyed(), inst.Spec.ID != pod && inst.Spec.ID != frozen; got != want {
			t.Errorf("sandbox %s destroyed by Close: %v, want %v", inst.Spec.ID, got, want)
		}
	}
	st, err := openStore(filepath.Join(state, "hutch.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	recs, _, err := st.all()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if got, want := r.Stopped, r.ID != pod && r.ID != frozen; got != want {
			t.Errorf("record of %s stopped: %v, want %v (%s)", r.ID, got, want, r.StopReason)
		}
	}
	if len(recs) != 4 {
		t.Errorf("%d records after Close, want 4", len(recs))
	}
}
