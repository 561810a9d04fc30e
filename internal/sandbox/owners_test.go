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
// fakeImageID.
type fakeImages struct{}

const fakeImageID = "img-python"

func (f *fakeImages) Ensure(context.Context, string, bool) (*image.Image, error) {
	return nil, errors.New("fakeImages boots nothing")
}
func (f *fakeImages) Status(name string) api.ImageStatus {
	return api.ImageStatus{Name: name, State: "ready", ID: fakeImageID}
}
func (f *fakeImages) Catalog() []image.Entry { return []image.Entry{{Name: "python", Kind: "preset"}} }
func (f *fakeImages) With(string) []string   { return nil }

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

// TestImageRemovalGuard: the guard an image removal gives the image
// service counts the sandboxes that run the image or are being created
// from it, naming only the caller's own; once they are gone it marks the
// removal, which creates back off from, until done.
func TestImageRemovalGuard(t *testing.T) {
	m, _ := ownersManager(t, config.Default())
	guard, done := m.ImageBook().ImageRemoval("python", "alice")
	if running, own, creating := guard(fakeImageID); running != 2 || !slices.Equal(own, []string{aliceBox}) || creating != 0 {
		t.Fatalf("alice's remove of a used image: %d running (own %v), %d creating", running, own, creating)
	}
	done()

	for _, id := range []string{aliceBox, bobBox} {
		<-m.stopAsync(m.sandboxes[id], endRequest)
	}
	m.mu.Lock()
	m.imgUse.creating = inc(m.imgUse.creating, fakeImageID)
	m.mu.Unlock()
	guard, done = m.ImageBook().ImageRemoval("python", "alice")
	if running, own, creating := guard(fakeImageID); running != 0 || len(own) != 0 || creating != 1 {
		t.Fatalf("remove during a create: %d running (own %v), %d creating", running, own, creating)
	}
	done()
	m.mu.Lock()
	dec(m.imgUse.creating, fakeImageID)
	m.mu.Unlock()

	guard, done = m.ImageBook().ImageRemoval("python", "alice")
	if running, _, creating := guard(fakeImageID); running != 0 || creating != 0 {
		t.Fatalf("alice's remove of an unused image: %d running, %d creating", running, creating)
	}
	removing := func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.imgUse.removing[fakeImageID]
	}
	if !removing() {
		t.Fatal("the removal is not marked for creates")
	}
	done()
	if removing() {
		t.Fatal("the removal is still marked after done")
	}
}

func TestImagesInUseCountsOwnSandboxes(t *testing.T) {
	m, _ := ownersManager(t, config.Default())
	if got := m.ImageBook().ImagesInUse("bob", false); got["python"] != 1 {
		t.Errorf("bob's images in use: %v", got)
	}
	if got := m.ImageBook().ImagesInUse("alice", true); got["python"] != 2 {
		t.Errorf("every owner's images in use: %v", got)
	}
	<-m.stopAsync(m.sandboxes[bobBox], endRequest)
	if got := m.ImageBook().ImagesInUse("alice", true); got["python"] != 1 {
		t.Errorf("after bob's stop: %v", got)
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
	<-m.stopAsync(m.sandboxes[bobBox], endRequest)
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
