package sandbox

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/image"
)

// fakeImages is an image store whose one image, python, is cached as
// fakeImageID; Remove runs the manager's guard and counts removals.
type fakeImages struct {
	removed, pulled int
}

const fakeImageID = "img-python"

func (f *fakeImages) Ensure(context.Context, string, bool) (*image.Image, error) {
	return nil, errors.New("fakeImages boots nothing")
}
func (f *fakeImages) Status(name string) api.ImageStatus {
	return api.ImageStatus{Name: name, State: "ready", ID: fakeImageID}
}
func (f *fakeImages) Catalog() []image.Entry { return []image.Entry{{Name: "python", Kind: "preset"}} }
func (f *fakeImages) With(string) []string   { return nil }
func (f *fakeImages) Pull(context.Context, string) (*image.Image, error) {
	f.pulled++
	return &image.Image{ID: fakeImageID}, nil
}
func (f *fakeImages) Remove(_ context.Context, _ string, guard func(id string) error) (bool, error) {
	if err := guard(fakeImageID); err != nil {
		return false, err
	}
	f.removed++
	return true, nil
}

// Sandbox ids of the owner tests.
const (
	aliceBox = "00000000-0000-4000-8000-00000000a11c"
	bobBox   = "00000000-0000-4000-8000-000000000b0b"
)

// ownersManager is a manager for owners alice (an admin) and bob, each
// with one live python sandbox, over fakeImages.
func ownersManager(t *testing.T, cfg config.Config) (*Manager, *fakeImages) {
	t.Helper()
	cfg.APITokens = map[string]string{"alice": "alice-0123456789abcdef", "bob": "bob-0123456789abcdef00"}
	cfg.AdminOwners = []string{"alice"}
	m, _ := testManager(t, cfg)
	imgs := &fakeImages{}
	m.images = imgs
	for id, owner := range map[string]string{aliceBox: "alice", bobBox: "bob"} {
		sb := addSandbox(t, m, id, 300, time.Now(), 0)
		sb.rec.Owner, sb.rec.ImageID = owner, fakeImageID
	}
	return m, imgs
}

// as is a context acting for owner.
func as(owner string) context.Context { return auth.WithOwner(context.Background(), owner) }

func TestImageActionsAreOperatorOnly(t *testing.T) {
	m, imgs := ownersManager(t, config.Default())
	_, err := m.ImageRemove(as("bob"), api.ImageRemoveRequest{Name: "python"})
	if !errdefs.Is(err, errdefs.CodeOperatorOnly) || imgs.removed != 0 {
		t.Fatalf("bob's remove: %v (removed %d), want S110 and nothing removed", err, imgs.removed)
	}
	_, err = m.ImagePull(as("bob"), api.ImagePullRequest{Name: "python"})
	if !errdefs.Is(err, errdefs.CodeOperatorOnly) || imgs.pulled != 0 {
		t.Fatalf("bob's pull: %v (pulled %d), want S110 and nothing pulled", err, imgs.pulled)
	}
	if _, err := m.ImagePull(as("alice"), api.ImagePullRequest{Name: "python"}); err != nil || imgs.pulled != 1 {
		t.Fatalf("alice's pull: %v (pulled %d)", err, imgs.pulled)
	}

	// In use by both: alice learns the count and her own id, not bob's.
	_, err = m.ImageRemove(as("alice"), api.ImageRemoveRequest{Name: "python"})
	e := errdefs.As(err)
	if e.Code != errdefs.CodeImageInUse || !strings.Contains(e.Message, "in use by 2 sandboxes (yours: "+aliceBox+")") || strings.Contains(e.Message, bobBox) {
		t.Fatalf("alice's remove of a used image: %v", err)
	}
	if ids, _ := e.Fix["sandbox_ids"].([]string); !slices.Equal(ids, []string{aliceBox}) {
		t.Fatalf("fix sandbox_ids = %v, want only alice's", e.Fix["sandbox_ids"])
	}

	for _, id := range []string{aliceBox, bobBox} {
		m.destroy(m.sandboxes[id], endRequest)
	}
	if r, err := m.ImageRemove(as("alice"), api.ImageRemoveRequest{Name: "python"}); err != nil || !r.Removed || imgs.removed != 1 {
		t.Fatalf("alice's remove of an unused image: %+v, %v", r, err)
	}
}

func TestImageActionsWithoutTokens(t *testing.T) {
	m, _ := testManager(t, config.Default())
	imgs := &fakeImages{}
	m.images = imgs
	if _, err := m.ImagePull(context.Background(), api.ImagePullRequest{Name: "python"}); err != nil {
		t.Fatalf("the local user's pull: %v", err)
	}
	if _, err := m.ImageRemove(context.Background(), api.ImageRemoveRequest{Name: "python"}); err != nil || imgs.removed != 1 {
		t.Fatalf("the local user's remove: %v", err)
	}
}

func TestImageListCountsOwnSandboxes(t *testing.T) {
	m, _ := ownersManager(t, config.Default())
	for _, tc := range []struct {
		owner string
		want  int
	}{{"bob", 1}, {"alice", 2}} {
		list, err := m.ImageList(as(tc.owner), api.ImageListRequest{})
		if err != nil || len(list.Images) != 1 || list.Images[0].InUse != tc.want {
			t.Errorf("%s's image list: %+v, %v; want in_use %d", tc.owner, list.Images, err, tc.want)
		}
	}
}

func TestMaxSandboxesPerOwner(t *testing.T) {
	cfg := config.Default()
	cfg.MaxSandboxesPerOwner = 1
	m, _ := ownersManager(t, cfg)
	_, err := m.Create(as("bob"), api.CreateRequest{Image: "python"})
	if !errdefs.Is(err, errdefs.CodeCapacity) || !strings.Contains(err.Error(), "max_sandboxes_per_owner=1") {
		t.Fatalf("bob's second create: %v, want S400 naming max_sandboxes_per_owner", err)
	}
	// carol has none: she passes the cap and fails later (fakeImages
	// boots nothing), giving her reservation back.
	_, err = m.Create(as("carol"), api.CreateRequest{Image: "python"})
	if err == nil || errdefs.Is(err, errdefs.CodeCapacity) {
		t.Fatalf("carol's create: %v, want a failure past the capacity checks", err)
	}
	if m.reserved != 0 || len(m.owners.creating) != 0 {
		t.Fatalf("reservations left: %d, %v", m.reserved, m.owners.creating)
	}
	// A stopped sandbox frees its owner's slot.
	m.destroy(m.sandboxes[bobBox], endRequest)
	if err := m.reserve("bob"); err != nil {
		t.Fatalf("bob after his stop: %v", err)
	}
	if err := m.reserve("bob"); !errdefs.Is(err, errdefs.CodeCapacity) {
		t.Fatalf("bob's second create in progress: %v, want S400", err)
	}
}

func TestMaxConcurrentExecPerOwner(t *testing.T) {
	cfg := config.Default()
	cfg.MaxConcurrentExecPerOwner = 1
	m, _ := testManager(t, cfg)
	release, err := m.acquireExec("alice")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.acquireExec("alice"); !errdefs.Is(err, errdefs.CodeCapacity) || !strings.Contains(err.Error(), "max_concurrent_exec_per_owner=1") {
		t.Fatalf("alice's second exec: %v, want S400", err)
	}
	if r, err := m.acquireExec("bob"); err != nil {
		t.Fatalf("bob's exec beside alice's: %v", err)
	} else {
		r()
	}
	release()
	if len(m.owners.execs) != 0 {
		t.Fatalf("exec counts left: %v", m.owners.execs)
	}
	if r, err := m.acquireExec("alice"); err != nil {
		t.Fatalf("alice's exec after hers ended: %v", err)
	} else {
		r()
	}
}
