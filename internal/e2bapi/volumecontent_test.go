package e2bapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/auth"
	"github.com/hutch-dev/hutch/internal/functions"
	"github.com/hutch-dev/hutch/internal/functions/functionstest"
	"github.com/hutch-dev/hutch/internal/sandbox/volumesvc"
	"github.com/hutch-dev/hutch/internal/volumes"
	"github.com/hutch-dev/hutch/internal/volumes/volumestest"
)

// TestVolumeContentRoutes (issue 40): E2B's /volumecontent routes on
// sandbox::volume::fs::*, as the SDK sends them: the volume's token, the
// query's path, uid, gid, mode and force, E2B's VolumeEntryStat.
func TestVolumeContentRoutes(t *testing.T) {
	vols, err := volumes.Open(volumes.Options{Dir: filepath.Join(t.TempDir(), "volumes"), DefaultSizeMB: 64, MaxSizeMB: 1024, Disks: volumestest.New()})
	if err != nil {
		t.Fatal(err)
	}
	svc := volumesvc.New(vols)
	if _, err := svc.CreateVolume(auth.WithOwner(context.Background(), "alice"), api.VolumeCreateRequest{Name: "data"}); err != nil {
		t.Fatal(err)
	}
	opts := keyed(Options{Signer: testSigner(t)})
	deps := functionstest.DepsOf(&functionstest.Fake{})
	deps.Volumes = svc
	srv := httptest.NewServer(New(functions.New(deps), opts).Wrap(http.NotFoundHandler()))
	t.Cleanup(srv.Close)
	bearer := map[string]string{"Authorization": "Bearer " + opts.Signer.Token(kindVolume, "alice", "data")}
	for _, tc := range []struct {
		method, path, body string
		status             int
		want               string
	}{
		{"PUT", "/volumecontent/data/file?path=/a.txt&mode=384", "hello", 200, `"path":"/a.txt","type":"file","size":5,"mode":384`},
		{"PUT", "/volumecontent/data/file?path=/a.txt", "again", 409, `"code":409`},
		{"PUT", "/volumecontent/data/file?path=/a.txt&force=true", "hello again", 200, `"size":11`},
		{"GET", "/volumecontent/data/file?path=/a.txt", "", 200, `hello again`},
		{"POST", "/volumecontent/data/dir?path=/d/e&force=true", "", 201, `"path":"/d/e","type":"directory"`},
		{"GET", "/volumecontent/data/dir?path=/&depth=2", "", 200, `"path":"/d/e"`},
		{"PATCH", "/volumecontent/data/path?path=/d", `{"mode":448}`, 200, `"mode":448`},
		{"GET", "/volumecontent/data/path?path=/d", "", 200, `"name":"d"`},
		{"DELETE", "/volumecontent/data/path?path=/d", "", 204, ``},
		{"GET", "/volumecontent/data/path?path=/d", "", 404, `"code":404`},
		{"GET", "/volumecontent/data/dir?path=/&depth=x", "", 400, `"code":400`},
	} {
		res, body := do(t, srv, tc.method, tc.path, bearer, tc.body)
		if res.StatusCode != tc.status || !strings.Contains(body, tc.want) {
			t.Errorf("%s %s: %d %s, want %d with %s", tc.method, tc.path, res.StatusCode, body, tc.status, tc.want)
		}
	}
	res, body := do(t, srv, "GET", "/volumecontent/data/dir?path=/", bearer, "")
	var entries []map[string]any
	if res.StatusCode != 200 || json.Unmarshal([]byte(body), &entries) != nil || len(entries) != 1 || entries[0]["name"] != "a.txt" {
		t.Errorf("list: %d %s", res.StatusCode, body)
	}
	for _, k := range []string{"atime", "mtime", "ctime", "uid", "gid"} {
		if _, ok := entries[0][k]; !ok {
			t.Errorf("an entry without %s: %s", k, body)
		}
	}
}
