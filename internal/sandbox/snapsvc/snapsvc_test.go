package snapsvc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/sandbox"
	"github.com/hutch-dev/hutch/internal/sandbox/sandboxtest"
)

// fakeCore is the core on the sandboxtest fake: its creates are recorded
// (and fail from the failAt-th on, when set), as are its stops.
type fakeCore struct {
	*sandboxtest.Sandboxes
	records map[string]*sandboxtest.Records
	check   error // what CheckRequest answers

	mu      sync.Mutex
	failAt  int
	created []created
	stopped []string
}

// created is one CreateFrom: its request, its origin, and whether the
// origin's checkpoint existed during the call.
type created struct {
	req        api.CreateRequest
	from       sandbox.Origin
	checkpoint []string
	id         string
}

func (c *fakeCore) CreateFrom(_ context.Context, req api.CreateRequest, from *sandbox.Origin) (api.CreateResponse, error) {
	if from == nil { // a boot of the image (a build's first step)
		from = &sandbox.Origin{}
	}
	entries, _ := os.ReadDir(from.Checkpoint)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failAt > 0 && len(c.created)+1 >= c.failAt {
		return api.CreateResponse{}, errdefs.New(errdefs.CodeCapacity, "no room for a copy")
	}
	id := uuid.NewString()
	c.created = append(c.created, created{req: req, from: *from, checkpoint: names, id: id})
	return api.CreateResponse{SandboxID: id}, nil
}

func (c *fakeCore) Stop(_ context.Context, req api.StopRequest) (api.StopResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = append(c.stopped, req.SandboxID)
	return api.StopResponse{}, nil
}

func (c *fakeCore) CheckRequest(api.CreateRequest) error { return c.check }

func (c *fakeCore) Records(name string) (sandbox.Records, error) {
	if c.records[name] == nil {
		c.records[name] = &sandboxtest.Records{}
	}
	return c.records[name], nil
}

// onFake is the service over a fakeCore whose checkpoint directory is
// dir, with storageMB of room.
func onFake(t *testing.T, dir string, storageMB uint64) (*Service, *fakeCore) {
	t.Helper()
	core := &fakeCore{Sandboxes: &sandboxtest.Sandboxes{}, records: map[string]*sandboxtest.Records{}}
	s, err := New(core, Options{Dir: dir, StorageMB: storageMB})
	if err != nil {
		t.Fatal(err)
	}
	return s, core
}

// checkpointable adds a running python sandbox of owner whose checkpoint
// is one file of size bytes.
func checkpointable(core *fakeCore, owner string, size int) *sandboxtest.Sandbox {
	sb := core.Add(owner)
	sb.Request = api.CreateRequest{Image: "python", CPUs: 2, MemoryMB: 512, Env: []string{"A=1"}, OnIdle: api.OnIdlePause, Metadata: map[string]string{"k": "v"}}
	sb.From = sandbox.Origin{Runtime: "gvisor", ImageID: "id-python", CPUs: 2, MemoryMB: 512}
	sb.Checkpoint = func(dir string) error { return os.WriteFile(filepath.Join(dir, "mem"), make([]byte, size), 0o600) }
	return sb
}

// entries are the names in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// TestSnapshots: a snapshot keeps the sandbox's checkpoint in its own
// directory with its shape, is its owner's only, restores through Origin,
// and is gone, files and all, once deleted.
func TestSnapshots(t *testing.T) {
	dir := t.TempDir()
	s, core := onFake(t, dir, 10)
	sb := checkpointable(core, "alice", 1000)
	alice := as("alice")

	_, err := s.CreateSnapshot(alice, api.SnapshotCreateRequest{SandboxID: sb.ID, Name: "bad\x00name"})
	wantCode(t, err, errdefs.CodeMalformed)
	_, err = s.CreateSnapshot(as("bob"), api.SnapshotCreateRequest{SandboxID: sb.ID})
	wantCode(t, err, errdefs.CodeNotFound)

	info, err := s.CreateSnapshot(alice, api.SnapshotCreateRequest{SandboxID: sb.ID, Name: "first"})
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "first" || info.SandboxID != sb.ID || info.Image != "python" || info.CPUs != 2 || info.MemoryMB != 512 || info.SizeBytes != 1000 || info.CreatedAt == "" {
		t.Errorf("snapshot info %+v", info)
	}
	if got := entries(t, dir); !slices.Equal(got, []string{info.SnapshotID}) {
		t.Errorf("checkpoint directory holds %v, want only the snapshot's", got)
	}
	if got := entries(t, filepath.Join(dir, info.SnapshotID)); !slices.Equal(got, []string{"mem"}) {
		t.Errorf("snapshot directory holds %v", got)
	}
	if ev := core.Snapshot(sb).Events; len(ev) != 1 || ev[0].Type != api.EventSnapshotMade ||
		fmt.Sprint(ev[0].Data) != fmt.Sprint(map[string]any{"snapshot_id": info.SnapshotID, "size_bytes": int64(1000)}) {
		t.Errorf("events %+v", ev)
	}
	if core.Held() != 0 {
		t.Errorf("%d handles held after the snapshot", core.Held())
	}

	list, err := s.ListSnapshots(alice, api.SnapshotListRequest{})
	if err != nil || len(list.Snapshots) != 1 || list.Snapshots[0] != info || list.UsedBytes != 1000 {
		t.Errorf("alice lists %+v, %v", list, err)
	}
	if list, _ := s.ListSnapshots(as("bob"), api.SnapshotListRequest{}); len(list.Snapshots) != 0 || list.UsedBytes != 0 {
		t.Errorf("bob lists %+v", list)
	}
	if got, err := s.GetSnapshot(alice, api.SnapshotRequest{SnapshotID: info.SnapshotID}); err != nil || got != info {
		t.Errorf("get %+v, %v", got, err)
	}
	_, err = s.GetSnapshot(as("bob"), api.SnapshotRequest{SnapshotID: info.SnapshotID})
	wantCode(t, err, errdefs.CodeNoSnapshot)
	_, err = s.GetSnapshot(alice, api.SnapshotRequest{SnapshotID: "not-a-uuid"})
	wantCode(t, err, errdefs.CodeMalformed)

	// A create from it restores its checkpoint with its shape.
	req := api.CreateRequest{SnapshotID: info.SnapshotID}
	from, err := s.Origin(alice, &req)
	if err != nil {
		t.Fatal(err)
	}
	want := sandbox.Origin{Runtime: "gvisor", Checkpoint: filepath.Join(dir, info.SnapshotID), ImageID: "id-python", CPUs: 2, MemoryMB: 512}
	if *from != want || req.Image != "python" || req.CPUs != 2 || req.MemoryMB != 512 || !slices.Equal(req.Env, []string{"A=1"}) {
		t.Errorf("origin %+v, request %+v", *from, req)
	}
	req = api.CreateRequest{SnapshotID: info.SnapshotID, MemoryMB: 256}
	_, err = s.Origin(alice, &req)
	wantCode(t, err, errdefs.CodeMalformed)
	req = api.CreateRequest{SnapshotID: info.SnapshotID}
	_, err = s.Origin(as("bob"), &req)
	wantCode(t, err, errdefs.CodeNoSnapshot)

	_, err = s.DeleteSnapshot(as("bob"), api.SnapshotRequest{SnapshotID: info.SnapshotID})
	wantCode(t, err, errdefs.CodeNoSnapshot)
	if resp, err := s.DeleteSnapshot(alice, api.SnapshotRequest{SnapshotID: info.SnapshotID}); err != nil || !resp.Deleted {
		t.Fatalf("delete %+v, %v", resp, err)
	}
	if got := entries(t, dir); len(got) != 0 {
		t.Errorf("after the delete the checkpoint directory holds %v", got)
	}
	_, err = s.GetSnapshot(alice, api.SnapshotRequest{SnapshotID: info.SnapshotID})
	wantCode(t, err, errdefs.CodeNoSnapshot)
}

// TestSnapshotRefusals: a checkpoint the core refuses, and one over
// snapshot_storage_mb, leave nothing behind.
func TestSnapshotRefusals(t *testing.T) {
	dir := t.TempDir()
	s, core := onFake(t, dir, 1)
	alice := as("alice")
	big := checkpointable(core, "alice", 600<<10)
	if _, err := s.CreateSnapshot(alice, api.SnapshotCreateRequest{SandboxID: big.ID}); err != nil {
		t.Fatal(err)
	}
	_, err := s.CreateSnapshot(alice, api.SnapshotCreateRequest{SandboxID: big.ID})
	wantCode(t, err, errdefs.CodeCapacity) // 1.2 MiB > 1 MiB

	plain := core.Add("alice")
	_, err = s.CreateSnapshot(alice, api.SnapshotCreateRequest{SandboxID: plain.ID})
	wantCode(t, err, errdefs.CodeUnsupported)
	_, err = s.Fork(alice, api.ForkRequest{SandboxID: plain.ID})
	wantCode(t, err, errdefs.CodeUnsupported)

	if list, _ := s.ListSnapshots(alice, api.SnapshotListRequest{}); len(list.Snapshots) != 1 {
		t.Errorf("%d snapshots, want the first only", len(list.Snapshots))
	}
	if got := entries(t, dir); len(got) != 1 {
		t.Errorf("the checkpoint directory holds %v, want the first snapshot only", got)
	}
	if core.Held() != 0 {
		t.Errorf("%d handles held", core.Held())
	}
}

// TestFork: every copy is created from the one checkpoint with the
// source's request; a copy that fails fails the fork and stops the copies
// made; the checkpoint is gone after either.
func TestFork(t *testing.T) {
	dir := t.TempDir()
	s, core := onFake(t, dir, 10)
	sb := checkpointable(core, "alice", 10)
	alice := as("alice")
	for _, n := range []int{-1, maxForkCount + 1} {
		_, err := s.Fork(alice, api.ForkRequest{SandboxID: sb.ID, Count: n})
		wantCode(t, err, errdefs.CodeMalformed)
	}

	resp, err := s.Fork(alice, api.ForkRequest{SandboxID: sb.ID, Count: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.SandboxIDs) != 3 || len(core.created) != 3 {
		t.Fatalf("fork answered %v after %d creates", resp.SandboxIDs, len(core.created))
	}
	for _, c := range core.created {
		if c.from.Checkpoint == "" || filepath.Dir(c.from.Checkpoint) != dir || c.from.Runtime != "gvisor" || c.from.ImageID != "id-python" || c.from.CPUs != 2 || c.from.MemoryMB != 512 {
			t.Errorf("a copy's origin %+v", c.from)
		}
		if c.from.Checkpoint != core.created[0].from.Checkpoint || !slices.Equal(c.checkpoint, []string{"mem"}) {
			t.Errorf("a copy restored from %s holding %v", c.from.Checkpoint, c.checkpoint)
		}
		if c.req.Image != "python" || c.req.OnIdle != api.OnIdlePause || c.req.Metadata["k"] != "v" || !slices.Contains(resp.SandboxIDs, c.id) {
			t.Errorf("a copy's request %+v", c.req)
		}
	}
	if ev := core.Snapshot(sb).Events; len(ev) != 1 || ev[0].Type != api.EventSandboxForked {
		t.Errorf("events %+v", ev)
	}
	if got := entries(t, dir); len(got) != 0 {
		t.Errorf("after the fork the checkpoint directory holds %v", got)
	}

	core.created, core.failAt = nil, 3
	_, err = s.Fork(alice, api.ForkRequest{SandboxID: sb.ID, Count: 4})
	wantCode(t, err, errdefs.CodeCapacity)
	var made []string
	for _, c := range core.created {
		made = append(made, c.id)
	}
	slices.Sort(made)
	slices.Sort(core.stopped)
	if len(made) == 0 || !slices.Equal(made, core.stopped) {
		t.Errorf("copies made %v, stopped %v: every copy made is stopped", made, core.stopped)
	}
	if got := entries(t, dir); len(got) != 0 {
		t.Errorf("after the failed fork the checkpoint directory holds %v", got)
	}
	if core.Held() != 0 {
		t.Errorf("%d handles held", core.Held())
	}
}

// TestTemplateLayers: a template from a sandbox keeps its layer in the
// checkpoint directory within the quota, its creates boot with it, and
// its delete removes it.
func TestTemplateLayers(t *testing.T) {
	dir := t.TempDir()
	s, core := onFake(t, dir, 1)
	alice := as("alice")
	sb := checkpointable(core, "alice", 0)
	sb.CaptureLayer = func(file string) error { return os.WriteFile(file, make([]byte, 700<<10), 0o600) }

	_, err := s.CreateTemplate(alice, api.TemplateCreateRequest{Name: "other", FromSandbox: sb.ID, TemplateDefaults: api.TemplateDefaults{Image: "node"}})
	wantCode(t, err, errdefs.CodeMalformed) // not the sandbox's image
	core.check = errdefs.New(errdefs.CodeImageNotAllowed, "no")
	_, err = s.CreateTemplate(alice, api.TemplateCreateRequest{Name: "app", FromSandbox: sb.ID})
	wantCode(t, err, errdefs.CodeImageNotAllowed)
	core.check = nil

	info, err := s.CreateTemplate(alice, api.TemplateCreateRequest{Name: "app", FromSandbox: sb.ID})
	if err != nil {
		t.Fatal(err)
	}
	if info.Image != "python" || info.FromSandbox != sb.ID || info.LayerBytes != 700<<10 {
		t.Errorf("template %+v", info)
	}
	// The layer (an empty tar) and its tree (trees.go).
	layers := entries(t, dir)
	if len(layers) != 2 || !strings.HasSuffix(layers[0], ".tar") || layers[1] != strings.TrimSuffix(layers[0], ".tar")+".tree" {
		t.Fatalf("the checkpoint directory holds %v, want one layer and its tree", layers)
	}
	_, err = s.CreateTemplate(alice, api.TemplateCreateRequest{Name: "again", FromSandbox: sb.ID})
	wantCode(t, err, errdefs.CodeCapacity) // 1.4 MiB > 1 MiB
	if got := entries(t, dir); !slices.Equal(got, layers) {
		t.Errorf("after the refused layer the checkpoint directory holds %v", got)
	}

	req := api.CreateRequest{Template: "app", Metadata: map[string]string{"run": "1"}}
	from, err := s.Origin(alice, &req)
	if err != nil {
		t.Fatal(err)
	}
	if *from != (sandbox.Origin{Layer: filepath.Join(dir, layers[1]), ImageID: "id-python"}) || req.Image != "python" {
		t.Errorf("origin %+v, request %+v", *from, req)
	}
	req = api.CreateRequest{Template: "app", Image: "node"}
	_, err = s.Origin(alice, &req)
	wantCode(t, err, errdefs.CodeMalformed)

	if _, err := s.DeleteTemplate(alice, api.TemplateRequest{Name: "app"}); err != nil {
		t.Fatal(err)
	}
	if got := entries(t, dir); len(got) != 0 {
		t.Errorf("after the delete the checkpoint directory holds %v", got)
	}
}

// TestRecover: at start, the checkpoint directory keeps what records
// name and the core's hibernations; records whose files are gone are
// forgotten.
func TestRecover(t *testing.T) {
	dir := t.TempDir()
	s, core := onFake(t, dir, 10)
	alice := as("alice")
	sb := checkpointable(core, "alice", 10)
	sb.CaptureLayer = func(file string) error { return os.WriteFile(file, []byte("tar"), 0o600) }
	kept, err := s.CreateSnapshot(alice, api.SnapshotCreateRequest{SandboxID: sb.ID})
	if err != nil {
		t.Fatal(err)
	}
	gone, err := s.CreateSnapshot(alice, api.SnapshotCreateRequest{SandboxID: sb.ID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTemplate(alice, api.TemplateCreateRequest{Name: "app", FromSandbox: sb.ID}); err != nil {
		t.Fatal(err)
	}
	layers := slices.DeleteFunc(entries(t, dir), func(n string) bool { return n == kept.SnapshotID || n == gone.SnapshotID })
	if err := os.RemoveAll(filepath.Join(dir, gone.SnapshotID)); err != nil {
		t.Fatal(err)
	}
	hibernated := sandbox.HibernatedPrefix + uuid.NewString()
	for _, d := range []string{"tmp-123", "stray", hibernated} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}

	s, err = New(core, Options{Dir: dir, StorageMB: 10})
	if err != nil {
		t.Fatal(err)
	}
	want := append([]string{kept.SnapshotID, hibernated}, layers...)
	slices.Sort(want)
	if got := entries(t, dir); !slices.Equal(got, want) {
		t.Errorf("after recovery the checkpoint directory holds %v, want %v", got, want)
	}
	list, err := s.ListSnapshots(alice, api.SnapshotListRequest{})
	if err != nil || len(list.Snapshots) != 1 || list.Snapshots[0].SnapshotID != kept.SnapshotID {
		t.Errorf("after recovery alice lists %+v, %v", list.Snapshots, err)
	}
	if _, err := s.GetTemplate(alice, api.TemplateRequest{Name: "app"}); err != nil {
		t.Errorf("the template is gone: %v", err)
	}
}
