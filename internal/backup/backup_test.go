package backup

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/internal/datadir"
	"github.com/hutch-dev/hutch/internal/sandbox/records"
)

// source is a data dir with a store (a snapshot, a running and a stopped
// sandbox), a checkpoint, a work-in-progress dir and a volume.
func source(t *testing.T) Source {
	t.Helper()
	dir := t.TempDir()
	db, err := records.Open(filepath.Join(dir, storeName), "sandboxes", "snapshots", "templates")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	must(t, db.In("snapshots").Put("s1", map[string]string{"id": "s1"}))
	must(t, db.In("sandboxes").Put("a", map[string]bool{"stopped": false}))
	must(t, db.In("sandboxes").Put("b", map[string]bool{"stopped": true}))
	for name, body := range map[string]string{
		"format":                   "1\n",
		"snapshots/s1/checkpoint":  "state",
		"snapshots/tmp-1/partial":  "half",
		"volumes/volumes.json":     `{"volumes":[{"id":"v1","name":"data"}]}`,
		"volumes/disks/v1.ext4":    "disk",
		"images/not-in-the-backup": "x",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		must(t, os.MkdirAll(filepath.Dir(p), 0o700))
		must(t, os.WriteFile(p, []byte(body), 0o600))
	}
	return Source{DataDir: dir, DB: db.In("snapshots").WriteDB}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestRoundTrip(t *testing.T) {
	for _, vols := range []bool{true, false} {
		src := source(t)
		src.Volumes = vols
		var buf bytes.Buffer
		must(t, Write(&buf, src))
		dst := filepath.Join(t.TempDir(), "new")
		sum, err := Restore(&buf, dst)
		must(t, err)
		if sum.Snapshots != 1 || sum.Templates != 0 || sum.Stopped != 1 {
			t.Errorf("volumes %v: summary %+v", vols, sum)
		}
		if b, err := os.ReadFile(filepath.Join(dst, "snapshots/s1/checkpoint")); err != nil || string(b) != "state" {
			t.Errorf("checkpoint: %q, %v", b, err)
		}
		for _, gone := range []string{"snapshots/tmp-1", "images"} {
			if _, err := os.Stat(filepath.Join(dst, gone)); err == nil {
				t.Errorf("%s restored, want left out", gone)
			}
		}
		_, err = os.Stat(filepath.Join(dst, "volumes/disks/v1.ext4"))
		if vols != (err == nil) || (vols && sum.Volumes != 1) || (!vols && (len(sum.VolumesWithoutData) != 1 || sum.VolumesWithoutData[0].Name != "data")) {
			t.Errorf("volumes %v: disk %v, summary %+v", vols, err, sum)
		}
	}
}

// archive is a backup of the given entries, manifest first.
func archive(t *testing.T, man Manifest, entries ...*tar.Header) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	raw, _ := json.Marshal(man)
	must(t, addBytes(tw, manifestName, raw))
	for _, h := range entries {
		must(t, tw.WriteHeader(h))
		_, _ = io.WriteString(tw, strings.Repeat("x", int(h.Size)))
	}
	must(t, tw.Close())
	must(t, gz.Close())
	return buf.Bytes()
}

func TestRestoreRefuses(t *testing.T) {
	end := &tar.Header{Name: endName, Mode: 0o600}
	for name, tc := range map[string]struct {
		data []byte
		want string
	}{
		"newer format": {archive(t, Manifest{Format: datadir.Current + 1}, end), "newer"},
		"truncated":    {archive(t, Manifest{Format: datadir.Current}), "truncated"},
		"escape":       {archive(t, Manifest{Format: datadir.Current}, &tar.Header{Name: "../evil", Mode: 0o600, Size: 1}, end), "evil"},
		"symlink":      {archive(t, Manifest{Format: datadir.Current}, &tar.Header{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "/"}, end), "not part"},
		"not gzip":     {[]byte("hello"), "not a hutch backup"},
	} {
		dst := filepath.Join(t.TempDir(), "new")
		_, err := Restore(bytes.NewReader(tc.data), dst)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
		if entries, _ := os.ReadDir(dst); len(entries) > 0 {
			t.Errorf("%s: left %d entries in the dir", name, len(entries))
		}
	}
	busy := t.TempDir()
	must(t, os.WriteFile(filepath.Join(busy, "x"), nil, 0o600))
	if _, err := Restore(bytes.NewReader(archive(t, Manifest{Format: datadir.Current}, end)), busy); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("non-empty dir: %v", err)
	}
}
