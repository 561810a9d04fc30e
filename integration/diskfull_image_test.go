package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/image/ocitest"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// TestDiskFullImagePull (issue 38: 2): the image cache is on a small
// tmpfs the test fills. A create that must pull an image fails with S402
// and leaves no half-unpacked image in the cache; once space returns the
// same create pulls it and the sandbox runs.
func TestDiskFullImagePull(t *testing.T) {
	testutil.RequiresIntegration(t)
	mnt := smallFS(t, "64m")
	reg := ocitest.NewRegistry(t, "", "")
	img, _ := appImage(t)
	ref := reg.Push(t, "tools/app:full", img)
	cache := filepath.Join(mnt, "cache")
	d := startDaemon(t, customConfig(t, cache, fmt.Sprintf("custom_images: {app: %q}\nimage_allowlist: [python, app]\n", ref)))
	ctx := context.Background()

	before := treeOf(t, cache)
	filler := fillHostDisk(t, mnt)
	_, err := d.c.Create(ctx, api.CreateRequest{Image: "app"})
	if env := wantCode(t, err, diskFullCode); t.Failed() {
		t.Fatalf("a create pulling an image into a full cache: %+v", env)
	}
	if got := treeOf(t, cache); !slices.Equal(got, before) {
		t.Errorf("the failed pull left files in the image cache:\n%s\nbefore it:\n%s", strings.Join(got, "\n"), strings.Join(before, "\n"))
	}
	if st, err := d.c.ImageStatus(ctx, "app"); err != nil || st.State == "ready" {
		t.Errorf("the image after the failed pull: %+v, %v", st, err)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	id := d.create(api.CreateRequest{Image: "app"})
	if r := d.exec(id, "cat", "/srv/marker"); r.Stdout != "custom image\n" {
		t.Errorf("the sandbox of the image pulled once space returned: %+v", r)
	}
}

// treeOf lists the paths under the image cache dir, sorted, without the
// per-image lock files (locks/<id>.lock, kept after every pull).
func treeOf(t *testing.T, dir string) []string {
	t.Helper()
	var paths []string
	_ = filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if rel := strings.TrimPrefix(p, dir); err == nil && !strings.HasPrefix(rel, "/locks/") {
			paths = append(paths, rel)
		}
		return nil
	})
	slices.Sort(paths)
	return paths
}
