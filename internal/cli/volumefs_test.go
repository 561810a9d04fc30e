package cli

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
	"github.com/hutch-dev/hutch/internal/httpapi"
	"github.com/hutch-dev/hutch/internal/sandbox/volumesvc"
	"github.com/hutch-dev/hutch/internal/volumes"
	"github.com/hutch-dev/hutch/internal/volumes/volumestest"
)

// TestVolumeFiles (issue 40): hutch volume put, files and cat against a
// daemon's real volume service.
func TestVolumeFiles(t *testing.T) {
	vols, err := volumes.Open(volumes.Options{Dir: filepath.Join(t.TempDir(), "volumes"), DefaultSizeMB: 64, MaxSizeMB: 1024, Disks: volumestest.New()})
	if err != nil {
		t.Fatal(err)
	}
	svc := volumesvc.New(vols)
	if _, err := svc.CreateVolume(context.Background(), api.VolumeCreateRequest{Name: "data"}); err != nil {
		t.Fatal(err)
	}
	fake := &functionstest.Fake{}
	deps := functionstest.DepsOf(fake)
	deps.Volumes = svc
	srv := httptest.NewServer(httpapi.New(functions.New(deps), httpapi.Options{}))
	t.Cleanup(srv.Close)
	h := newHarness(t, fake)
	h.env["HUTCH_URL"] = srv.URL

	if out, errOut, code := h.run("from stdin", "volume", "put", "data", "/a.txt"); code != 0 || out != "/a.txt\n" {
		t.Fatalf("put: %d %q %q", code, out, errOut)
	}
	if _, errOut, code := h.run("again", "volume", "put", "data", "/a.txt"); code == 0 || !strings.Contains(errOut, "S213") {
		t.Errorf("put over a file without --force: %d %q", code, errOut)
	}
	if out, errOut, code := h.run("", "volume", "files", "data"); code != 0 || !strings.Contains(out, "/a.txt") || !strings.Contains(out, "file") {
		t.Errorf("files: %d %q %q", code, out, errOut)
	}
	if out, errOut, code := h.run("", "volume", "cat", "data", "/a.txt"); code != 0 || out != "from stdin" {
		t.Errorf("cat: %d %q %q", code, out, errOut)
	}
}
