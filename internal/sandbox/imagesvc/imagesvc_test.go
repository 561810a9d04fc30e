package imagesvc

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/config"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/image"
	"github.com/hutch-dev/hutch/internal/runtime"
)

const pythonID = "img-python"

// store is an image store of python (cached) and node (missing); Remove
// runs the core's guard and counts removals.
type store struct{ pulled, removed []string }

func (s *store) Catalog() []image.Entry {
	return []image.Entry{{Name: "python", Kind: "preset", Ref: "debian+python3"}, {Name: "node", Kind: "custom", Ref: "node:22"}}
}
func (s *store) Status(name string) api.ImageStatus {
	if name == "python" || slices.Contains(s.pulled, name) {
		return api.ImageStatus{Name: name, State: "ready", ID: "img-" + name, SizeBytes: 42}
	}
	return api.ImageStatus{Name: name, State: "missing"}
}
func (s *store) Pull(_ context.Context, name string) (*image.Image, error) {
	s.pulled = append(s.pulled, name)
	return &image.Image{Name: name, ID: "img-" + name}, nil
}
func (s *store) Remove(_ context.Context, name string, guard func(id string) error) (bool, error) {
	if err := guard("img-" + name); err != nil {
		return false, err
	}
	s.removed = append(s.removed, name)
	return true, nil
}

// core is a fake of the core's image side: alice's and bob's python
// sandboxes; while busy, its guard refuses.
type core struct {
	busy   bool
	pulled []string
	// removals counts ImageRemoval calls, done the finished ones.
	removals, done int
	guarded        []string
}

func (c *core) ImageAllowlist() []string { return []string{"python"} }

func (c *core) ImagesInUse(owner string, all bool) map[string]int {
	if all {
		return map[string]int{"python": 2}
	}
	if owner == "alice" || owner == "bob" {
		return map[string]int{"python": 1}
	}
	return map[string]int{}
}
func (c *core) ImagePulled(_ context.Context, name string, img *image.Image, _ time.Time) {
	c.pulled = append(c.pulled, name+"@"+img.ID)
}
func (c *core) ImageRemoval(name, owner string) (func(id string) (int, []string, int), func()) {
	c.removals++
	return func(id string) (int, []string, int) {
			c.guarded = append(c.guarded, owner+":"+name+"@"+id)
			if c.busy {
				return 2, []string{"sb-" + owner}, 0
			}
			return 0, []string{}, 0
		}, func() {
			c.done++
		}
}

type runtimes []runtime.Info

func (r runtimes) Infos() []runtime.Info { return r }

// service is the image service for alice (an admin) and bob.
func service(cfg config.Config) (*Service, *store, *core) {
	st, c := &store{}, &core{busy: true}
	return New(st, c, runtimes{{Name: "gvisor", Available: true, Default: true}}, Policy{IsAdmin: cfg.IsAdmin}), st, c
}

func owners() config.Config {
	cfg := config.Default()
	cfg.APITokens = map[string]string{"alice": "alice-0123456789abcdef", "bob": "bob-0123456789abcdef00"}
	cfg.AdminOwners = []string{"alice"}
	return cfg
}

func as(owner string) context.Context { return auth.WithOwner(context.Background(), owner) }

func TestImageActionsAreOperatorOnly(t *testing.T) {
	s, st, c := service(owners())
	_, err := s.ImageRemove(as("bob"), api.ImageRemoveRequest{Name: "python"})
	if !errdefs.Is(err, errdefs.CodeOperatorOnly) || len(st.removed) != 0 || c.removals != 0 {
		t.Fatalf("bob's remove: %v (removed %v), want S110 and nothing removed", err, st.removed)
	}
	_, err = s.ImagePull(as("bob"), api.ImagePullRequest{Name: "python"})
	if !errdefs.Is(err, errdefs.CodeOperatorOnly) || len(st.pulled) != 0 {
		t.Fatalf("bob's pull: %v (pulled %v), want S110 and nothing pulled", err, st.pulled)
	}
	status, err := s.ImagePull(as("alice"), api.ImagePullRequest{Name: "node"})
	if err != nil || status.State != "ready" || !slices.Equal(st.pulled, []string{"node"}) || !slices.Equal(c.pulled, []string{"node@img-node"}) {
		t.Fatalf("alice's pull: %+v, %v (store pulled %v, core told %v)", status, err, st.pulled, c.pulled)
	}

	// In use: the core's guard refuses, the store removes nothing, the
	// removal is over.
	_, err = s.ImageRemove(as("alice"), api.ImageRemoveRequest{Name: "python"})
	if !errdefs.Is(err, errdefs.CodeImageInUse) || len(st.removed) != 0 || c.done != 1 || !slices.Equal(c.guarded, []string{"alice:python@img-python"}) {
		t.Fatalf("alice's remove of a used image: %v (removed %v, done %d, guarded %v)", err, st.removed, c.done, c.guarded)
	}
	c.busy = false
	if r, err := s.ImageRemove(as("alice"), api.ImageRemoveRequest{Name: "python"}); err != nil || !r.Removed || r.Name != "python" || !slices.Equal(st.removed, []string{"python"}) || c.done != 2 {
		t.Fatalf("alice's remove of an unused image: %+v, %v (done %d)", r, err, c.done)
	}
	for _, err := range []error{
		func() error { _, err := s.ImagePull(as("alice"), api.ImagePullRequest{}); return err }(),
		func() error { _, err := s.ImageRemove(as("alice"), api.ImageRemoveRequest{}); return err }(),
	} {
		if !errdefs.Is(err, errdefs.CodeMalformed) {
			t.Errorf("no name: %v, want S001", err)
		}
	}
}

func TestImageActionsWithoutTokens(t *testing.T) {
	s, st, c := service(config.Default())
	c.busy = false
	if _, err := s.ImagePull(context.Background(), api.ImagePullRequest{Name: "python"}); err != nil {
		t.Fatalf("the local user's pull: %v", err)
	}
	if _, err := s.ImageRemove(context.Background(), api.ImageRemoveRequest{Name: "python"}); err != nil || len(st.removed) != 1 {
		t.Fatalf("the local user's remove: %v", err)
	}
}

func TestImageListCountsOwnSandboxes(t *testing.T) {
	s, _, _ := service(owners())
	for _, tc := range []struct {
		owner string
		want  int
	}{{"bob", 1}, {"alice", 2}, {"carol", 0}} {
		list, err := s.ImageList(as(tc.owner), api.ImageListRequest{})
		if err != nil || len(list.Images) != 2 || list.Images[0].InUse != tc.want {
			t.Errorf("%s's image list: %+v, %v; want in_use %d", tc.owner, list.Images, err, tc.want)
		}
	}
	list, _ := s.ImageList(as("bob"), api.ImageListRequest{})
	py, node := list.Images[0], list.Images[1]
	if py.Name != "python" || py.Kind != "preset" || py.OCIRef != "debian+python3" || !py.Allowed || py.State != "ready" || py.ID != pythonID || py.SizeBytes != 42 {
		t.Errorf("python: %+v", py)
	}
	if node.Name != "node" || node.Allowed || node.State != "missing" || node.InUse != 0 {
		t.Errorf("node: %+v", node)
	}
}

func TestCatalog(t *testing.T) {
	s, _, _ := service(owners())
	cat, err := s.Catalog(as("bob"), api.CatalogRequest{})
	if err != nil || len(cat.Images) != 2 || cat.Images[0] != (api.CatalogImage{Name: "python", OCIRef: "debian+python3", Kind: "preset"}) ||
		cat.Images[1].Name != "node" || len(cat.Runtimes) != 1 || cat.Runtimes[0].Name != "gvisor" {
		t.Errorf("catalog: %+v, %v", cat, err)
	}
}

// TestImageStatus: a catalog image's cache state, for any owner; a name
// outside the catalog is S100 naming the catalog.
func TestImageStatus(t *testing.T) {
	s, _, _ := service(owners())
	for name, want := range map[string]string{"python": "ready", "node": "missing"} {
		st, err := s.ImageStatus(as("bob"), api.ImageStatusRequest{Name: name})
		if err != nil || st.Name != name || st.State != want {
			t.Errorf("status of %s: %+v, %v, want %s", name, st, err, want)
		}
	}
	_, err := s.ImageStatus(as("bob"), api.ImageStatusRequest{Name: "ruby"})
	if !errdefs.Is(err, errdefs.CodeImageNotAllowed) || err.Error() == "" || !strings.Contains(err.Error(), `image "ruby" is not in the catalog; known images: python, node`) {
		t.Fatalf("status of ruby: %v, want S100 listing the catalog", err)
	}
}

// TestInUse: a removal is refused (S111) while sandboxes run the image or
// are being created from it, counting them and naming only the remover's
// own.
func TestInUse(t *testing.T) {
	if err := inUse("python", 0, []string{}, 0); err != nil {
		t.Fatalf("unused: %v", err)
	}
	e := errdefs.As(inUse("python", 2, []string{"sb-a"}, 0))
	if e == nil || e.Code != errdefs.CodeImageInUse || e.Message != "image python is in use by 2 sandboxes (yours: sb-a)" {
		t.Fatalf("running: %v", e)
	}
	if ids, _ := e.Fix["sandbox_ids"].([]string); !slices.Equal(ids, []string{"sb-a"}) {
		t.Fatalf("fix sandbox_ids = %v, want the remover's", e.Fix["sandbox_ids"])
	}
	if err := inUse("python", 1, []string{}, 3); err == nil || !strings.Contains(err.Error(), "image python is in use by 1 sandboxes and 3 sandboxes being created") {
		t.Fatalf("running and creating: %v", err)
	}
	if err := inUse("python", 0, []string{}, 1); !errdefs.Is(err, errdefs.CodeImageInUse) || !strings.Contains(err.Error(), "in use by 1 sandboxes being created") {
		t.Fatalf("creating: %v", err)
	}
}
