package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
)

// TestCreateAsksOriginOf: a create with a template or snapshot_id takes
// its request and origin from Options.OriginOf (S302 without one), and
// fails with its error; a create without either does not ask.
func TestCreateAsksOriginOf(t *testing.T) {
	var asked []api.CreateRequest
	m, _, _ := inprocessWith(t, nil, func(o *Options) {
		o.OriginOf = func(_ context.Context, req *api.CreateRequest) (*Origin, error) {
			asked = append(asked, *req)
			if req.Template == "missing" {
				return nil, errdefs.New(errdefs.CodeNoTemplate, "template not found: missing")
			}
			req.Image, req.Metadata = "node", map[string]string{"from": req.Template}
			return nil, nil
		}
	})
	id := create(t, m, api.CreateRequest{Template: "t1"})
	if info := state(t, m, id); info.Image != "node" || info.Metadata["from"] != "t1" {
		t.Errorf("a sandbox of template t1 is %+v", info)
	}
	_, err := m.Create(context.Background(), api.CreateRequest{Template: "missing"})
	wantCode(t, err, errdefs.CodeNoTemplate)
	create(t, m, api.CreateRequest{Image: "python"})
	if len(asked) != 2 || asked[0].Template != "t1" || asked[1].Template != "missing" {
		t.Errorf("OriginOf was asked %+v", asked)
	}

	bare, _, _ := inprocess(t, nil)
	for _, req := range []api.CreateRequest{{Template: "t1"}, {SnapshotID: "4f5d3a9e-8a51-4b8e-9a57-0c1e0b7d1e2f"}} {
		_, err := bare.Create(context.Background(), req)
		wantCode(t, err, errdefs.CodeUnsupported)
	}
}

// TestCreateFrom: a create from an origin its runtime cannot start from
// is S302 and leaves no reservation.
func TestCreateFrom(t *testing.T) {
	m, rt, _ := inprocess(t, nil)
	ctx := context.Background()
	for _, from := range []*Origin{{Layer: "/nonexistent/layer.tar", ImageID: "id-python"}, {Checkpoint: t.TempDir(), ImageID: "id-python"}} {
		_, err := m.CreateFrom(ctx, api.CreateRequest{Image: "python"}, from)
		wantCode(t, err, errdefs.CodeUnsupported)
	}
	if n := len(rt.Instances()); n != 0 {
		t.Errorf("%d instances started", n)
	}
	m.mu.Lock()
	reserved := m.reserved
	m.mu.Unlock()
	if reserved != 0 {
		t.Errorf("%d creates still reserved", reserved)
	}
	if _, err := m.CreateFrom(ctx, api.CreateRequest{Image: "python"}, nil); err != nil {
		t.Errorf("a create from nothing boots: %v", err)
	}
}

// TestRecords: a service's bucket keeps its values across a restart,
// and AllRecords reports what does not decode as its own.
func TestRecords(t *testing.T) {
	type thing struct {
		ID string `json:"id"`
		N  int    `json:"n"`
	}
	stateDir := t.TempDir()
	m, _, _ := inprocessWith(t, nil, func(o *Options) { o.StateDir = stateDir })
	r, err := m.Records("things")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []thing{{"a", 1}, {"b", 2}, {"c", 3}} {
		if err := r.Put(v.ID, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Put("wrong-key", thing{ID: "d"}); err != nil {
		t.Fatal(err)
	}
	if err := r.Remove("b"); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	m, _, _ = inprocessWith(t, nil, func(o *Options) { o.StateDir = stateDir })
	if r, err = m.Records("things"); err != nil {
		t.Fatal(err)
	}
	var got thing
	if found, err := r.Get("c", &got); !found || err != nil || got != (thing{"c", 3}) {
		t.Errorf("get c: %+v %v %v", got, found, err)
	}
	if found, err := r.Get("b", &got); found || err != nil {
		t.Errorf("get of a removed key: %v %v", found, err)
	}
	all, bad, err := AllRecords(r, func(v *thing) string { return v.ID })
	if err != nil || len(all) != 2 || *all[0] != (thing{"a", 1}) || *all[1] != (thing{"c", 3}) || !slices.Equal(bad, []string{"wrong-key"}) {
		t.Errorf("all: %+v, bad %v, %v", all, bad, err)
	}
	if other, _ := m.Records("others"); other == nil {
		t.Fatal("no bucket")
	} else if all, _, _ := AllRecords(other, func(v *thing) string { return v.ID }); len(all) != 0 {
		t.Errorf("another bucket holds %+v", all)
	}
}

// TestClearHibernated: a start removes the hibernations an earlier daemon
// left in the checkpoint directory, and nothing else there.
func TestClearHibernated(t *testing.T) {
	stateDir := t.TempDir()
	dir := CheckpointDir(stateDir)
	for _, d := range []string{HibernatedPrefix + "x", "a-snapshot"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	inprocessWith(t, nil, func(o *Options) { o.StateDir = stateDir })
	if _, err := os.Stat(filepath.Join(dir, HibernatedPrefix+"x")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a hibernation of an earlier daemon is left: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a-snapshot")); err != nil {
		t.Errorf("the start removed what is not the core's: %v", err)
	}
}
