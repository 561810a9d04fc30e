package gvisor

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hutch-dev/hutch/internal/errdefs"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/testutil"
)

func TestWithMounts(t *testing.T) {
	s := ociSpec(runtime.Spec{ID: "0123456789abcdef", AgentPath: "/opt/hutch-agent"})
	own := len(s.Mounts)
	withMounts(s, []runtime.Mount{{Source: "/v/a", Destination: "/data"}, {Source: "/v/b", Destination: "/ref", ReadOnly: true}})
	if len(s.Mounts) != own+2 {
		t.Fatalf("%d mounts, want %d", len(s.Mounts), own+2)
	}
	a, b := s.Mounts[own], s.Mounts[own+1]
	if a.Type != "bind" || a.Source != "/v/a" || a.Destination != "/data" || !slices.Contains(a.Options, "rw") || !slices.Contains(a.Options, "nosuid") {
		t.Errorf("rw mount %+v", a)
	}
	if b.Destination != "/ref" || !slices.Contains(b.Options, "ro") || slices.Contains(b.Options, "rw") {
		t.Errorf("ro mount %+v", b)
	}
}

// imageTree is a small root filesystem: /tmp, /etc/hostname, and symlinks
// as an untrusted image may have them.
func imageTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{"tmp", "etc", "proc", ".hutch", "srv/app"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "etc/hostname"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"work":   "/srv/app",        // inside the tree
		"escape": "../../../../tmp", // climbs: resolved inside the tree, to /tmp
		"procs":  "/proc",           // a reserved directory
		"agent":  "/.hutch",
		"gone":   "/nowhere/at/all",
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestHasDir(t *testing.T) {
	root := imageTree(t)
	for p, want := range map[string]bool{"/tmp": true, "/work": true, "/work/sub": false, "/escape": true, "/data": false, "/gone": false} {
		got, err := hasDir(root, p)
		if err != nil || got != want {
			t.Errorf("hasDir(%s) = %v, %v; want %v", p, got, err, want)
		}
	}
	for _, p := range []string{"/etc/hostname", "/etc/hostname/x", "/procs", "/agent", "/agent/x"} {
		if _, err := hasDir(root, p); !errdefs.Is(err, errdefs.CodeVolumeMount) {
			if p == "/agent/x" && err == nil {
				continue // missing: mkdirInRoot makes it, and the check after finds it reserved
			}
			t.Errorf("hasDir(%s) = %v, want S264", p, err)
		}
	}
}

func TestMkdirInRoot(t *testing.T) {
	root := imageTree(t)
	for _, p := range []string{"/data/a/b", "/work/new", "/escape/inside"} {
		if err := mkdirInRoot(root, p); err != nil {
			t.Fatalf("mkdirInRoot(%s): %v", p, err)
		}
		if ok, err := hasDir(root, p); !ok || err != nil {
			t.Errorf("after mkdirInRoot(%s): %v, %v", p, ok, err)
		}
	}
	// Symlinks were followed inside the tree.
	for _, p := range []string{"srv/app/new", "tmp/inside"} {
		if fi, err := os.Stat(filepath.Join(root, p)); err != nil || !fi.IsDir() {
			t.Errorf("%s: %v", p, err)
		}
	}
	if err := mkdirInRoot(root, "/agent/x"); err != nil {
		t.Fatal(err)
	}
	if _, err := hasDir(root, "/agent/x"); !errdefs.Is(err, errdefs.CodeVolumeMount) {
		t.Errorf("a mount point made through a symlink into /.hutch: %v, want S264", err)
	}
}

// TestMountRootfs: without missing mount points the image is bound as
// always; with them, an overlay holds them and the image is untouched.
func TestMountRootfs(t *testing.T) {
	testutil.RequiresRoot(t)
	image, dir := imageTree(t), t.TempDir()
	mnt := filepath.Join(dir, "rootfs")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unmountAll(dir) })
	if err := mountRootfs(image, dir, mnt, []runtime.Mount{{Source: "/x", Destination: "/tmp"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, bindsDir)); !os.IsNotExist(err) {
		t.Errorf("an overlay for mount points the image has: %v", err)
	}
	if err := unmountAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := mountRootfs(image, dir, mnt, []runtime.Mount{{Source: "/x", Destination: "/tmp"}, {Source: "/y", Destination: "/data/deep"}}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(mnt, "data/deep")); err != nil || !fi.IsDir() {
		t.Fatalf("mount point in rootfs: %v", err)
	}
	if _, err := os.Stat(filepath.Join(image, "data")); !os.IsNotExist(err) {
		t.Fatalf("the image was written to: %v", err)
	}
	if err := os.Mkdir(filepath.Join(mnt, "more"), 0o755); err == nil {
		t.Fatal("rootfs is writable")
	}
	if err := unmountAll(dir); err != nil {
		t.Fatal(err)
	}
	if mps, _ := mountsUnder(dir); len(mps) != 0 {
		t.Fatalf("left mounted: %v", mps)
	}
	if err := mountRootfs(image, t.TempDir(), mnt, []runtime.Mount{{Source: "/x", Destination: "/etc/hostname"}}); !errdefs.Is(err, errdefs.CodeVolumeMount) {
		t.Fatalf("a file of the image as mount point: %v, want S264", err)
	}
}
