package volumesvc

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/volumes"
	"github.com/hutch-dev/hutch/internal/volumes/volumestest"
)

// TestVolumeContent (issue 40): a volume's files from the host, rooted in
// the volume: written whole, read, listed, owned, removed; no path and
// no symlink of the volume leads out; another owner's volume is S260.
func TestVolumeContent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "volumes")
	disks := volumestest.New()
	vols, err := volumes.Open(volumes.Options{Dir: dir, DefaultSizeMB: 64, MaxSizeMB: 1024, Disks: disks})
	if err != nil {
		t.Fatal(err)
	}
	s := New(vols)
	alice, bob := auth.WithOwner(context.Background(), "alice"), auth.WithOwner(context.Background(), "bob")
	if _, err := s.CreateVolume(alice, api.VolumeCreateRequest{Name: "data"}); err != nil {
		t.Fatal(err)
	}
	b64 := func(s string) *string { e := base64.StdEncoding.EncodeToString([]byte(s)); return &e }
	mode := uint32(0o600)
	e, err := s.WriteVolumeFile(alice, api.VolumeFsWriteRequest{Name: "data", Path: "/a.txt", ContentB64: b64("hello"), VolumeOwnership: api.VolumeOwnership{Mode: &mode}})
	if err != nil || e.Path != "/a.txt" || e.Type != "file" || e.Size != 5 || e.Mode != 0o600 || e.Mtime == "" {
		t.Fatalf("write: %+v, %v", e, err)
	}
	if _, err := s.WriteVolumeFile(alice, api.VolumeFsWriteRequest{Name: "data", Path: "/a.txt", ContentB64: b64("x")}); !errdefs.Is(err, errdefs.CodeFSExists) {
		t.Errorf("write over a file without force: %v, want S213", err)
	}
	if _, err := s.WriteVolumeFile(alice, api.VolumeFsWriteRequest{Name: "data", Path: "/a.txt", Body: strings.NewReader("hello again"), Force: true}); err != nil {
		t.Errorf("write with force: %v", err)
	}
	if r, err := s.ReadVolumeFile(alice, api.VolumeFsRequest{Name: "data", Path: "a.txt"}); err != nil || r.ContentB64 != *b64("hello again") || r.Entry.Mode != 0o644 {
		t.Errorf("read: %+v, %v", r, err)
	}
	if _, err := s.MakeVolumeDir(alice, api.VolumeFsMkdirRequest{Name: "data", Path: "/d/e"}); !errdefs.Is(err, errdefs.CodeFSNotFound) {
		t.Errorf("mkdir without its parent: %v, want S211", err)
	}
	if e, err := s.MakeVolumeDir(alice, api.VolumeFsMkdirRequest{Name: "data", Path: "/d/e", Force: true}); err != nil || e.Type != "directory" {
		t.Errorf("mkdir with force: %+v, %v", e, err)
	}
	if _, err := s.WriteVolumeFile(alice, api.VolumeFsWriteRequest{Name: "data", Path: "/d/e/f", ContentB64: b64("deep")}); err != nil {
		t.Fatal(err)
	}
	list := func(depth int) []string {
		t.Helper()
		res, err := s.ListVolumeDir(alice, api.VolumeFsListRequest{Name: "data", Path: "/", Depth: depth})
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		var paths []string
		for _, e := range res.Entries {
			paths = append(paths, e.Path)
		}
		return paths
	}
	if got := strings.Join(list(1), " "); got != "/a.txt /d" {
		t.Errorf("list depth 1: %s", got)
	}
	if got := strings.Join(list(3), " "); got != "/a.txt /d /d/e /d/e/f" {
		t.Errorf("list depth 3: %s", got)
	}
	if e, err := s.SetVolumePath(alice, api.VolumeFsSetRequest{Name: "data", Path: "/d", VolumeOwnership: api.VolumeOwnership{Mode: &mode}}); err != nil || e.Mode != 0o600 {
		t.Errorf("set: %+v, %v", e, err)
	}

	// Out of the volume: .. stays at its root; a symlink out is refused.
	if e, err := s.StatVolumePath(alice, api.VolumeFsRequest{Name: "data", Path: "/../../a.txt"}); err != nil || e.Path != "/a.txt" {
		t.Errorf("stat of /../../a.txt: %+v, %v", e, err)
	}
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("host"), 0o600); err != nil {
		t.Fatal(err)
	}
	mnt := filepath.Join(dir, "mnt")
	ents, err := os.ReadDir(mnt)
	if err != nil || len(ents) != 1 {
		t.Fatalf("the volume's directory: %v, %v", ents, err)
	}
	vdir := filepath.Join(mnt, ents[0].Name())
	for name, target := range map[string]string{"out": secret, "up": "../../..", "outdir": filepath.Dir(secret)} {
		if err := os.Symlink(target, filepath.Join(vdir, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"/out", "/outdir/secret", "/up/x"} {
		if r, err := s.ReadVolumeFile(alice, api.VolumeFsRequest{Name: "data", Path: p}); err == nil {
			t.Errorf("read of %s through a symlink out: %+v", p, r)
		}
		if _, err := s.WriteVolumeFile(alice, api.VolumeFsWriteRequest{Name: "data", Path: p, ContentB64: b64("x"), Force: true}); err == nil {
			t.Errorf("write of %s through a symlink out succeeded", p)
		}
	}
	if _, err := s.SetVolumePath(alice, api.VolumeFsSetRequest{Name: "data", Path: "/out", VolumeOwnership: api.VolumeOwnership{Mode: &mode}}); !errdefs.Is(err, errdefs.CodeFSUnsupported) {
		t.Errorf("set of a symlink: %v, want S219", err)
	}
	if _, err := s.RemoveVolumePath(alice, api.VolumeFsRequest{Name: "data", Path: "/outdir"}); err != nil {
		t.Errorf("remove of a symlink: %v", err)
	}
	if b, err := os.ReadFile(secret); err != nil || string(b) != "host" {
		t.Errorf("the host file: %q, %v", b, err)
	}

	if _, err := s.RemoveVolumePath(alice, api.VolumeFsRequest{Name: "data", Path: "/d"}); err != nil {
		t.Errorf("remove: %v", err)
	}
	if _, err := s.StatVolumePath(alice, api.VolumeFsRequest{Name: "data", Path: "/d/e/f"}); !errdefs.Is(err, errdefs.CodeFSNotFound) {
		t.Errorf("stat after the remove: %v, want S211", err)
	}
	if _, err := s.RemoveVolumePath(alice, api.VolumeFsRequest{Name: "data", Path: "/"}); !errdefs.Is(err, errdefs.CodeFSInvalid) {
		t.Errorf("remove of the root: %v, want S210", err)
	}
	if _, err := s.ReadVolumeFile(bob, api.VolumeFsRequest{Name: "data", Path: "/a.txt"}); !errdefs.Is(err, errdefs.CodeNoVolume) {
		t.Errorf("another owner's volume: %v, want S260", err)
	}
	if disks.Mounts() != 0 {
		t.Errorf("%d volumes left mounted", disks.Mounts())
	}
}
