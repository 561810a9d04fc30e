package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
)

// TestOpsBackupRestore (issue 41: 5): `hutch admin backup --volumes`
// taken while a sandbox runs and execs go on, restored by `hutch admin
// restore` into a fresh data dir, gives a daemon that lists the snapshot,
// the template and the volume, starts sandboxes from the snapshot and
// the template that hold what their source wrote, mounts the volume with
// its file, and lists the sandbox that ran as stopped. A non-empty dir
// is refused; a backup without --volumes brings the volume back empty.
func TestOpsBackupRestore(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	if _, err := d.c.CreateVolume(ctx, "bk", 16); err != nil {
		t.Fatal(err)
	}
	w := d.create(api.CreateRequest{Image: "python", Volumes: []api.VolumeMount{{Name: "bk", Path: "/data"}}})
	d.setup(w, "sh", "-c", "echo volume-kept > /data/f")
	if _, err := d.c.Stop(ctx, w, true); err != nil { // the volume unmounted: its disk at rest
		t.Fatal(err)
	}

	a := d.create(api.CreateRequest{Image: "python"})
	d.setup(a, "sh", "-c", "echo snap-kept > /root/mark")
	snap, err := d.c.CreateSnapshot(ctx, a, "bk-snap")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.c.CreateTemplate(ctx, api.TemplateCreateRequest{Name: "bk-tmpl", FromSandbox: a}); err != nil {
		t.Fatal(err)
	}

	// Load: execs in the running sandbox all through the backup.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var execs, failed atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			r, err := d.c.Exec(ctx, api.ExecRequest{SandboxID: a, Argv: []string{"cat", "/root/mark"}})
			if err != nil || r.ExitCode == nil || *r.ExitCode != 0 {
				failed.Add(1)
			}
			execs.Add(1)
		}
	}()
	file := filepath.Join(t.TempDir(), "hutch.backup")
	out, errOut, code := d.cli("", "admin", "backup", "--volumes", file)
	close(stop)
	wg.Wait()
	if code != 0 || !strings.Contains(out, "backup written to "+file) {
		t.Fatalf("hutch admin backup: exit %d\n%s%s", code, out, errOut)
	}
	if failed.Load() > 0 {
		t.Errorf("%d of %d execs during the backup failed", failed.Load(), execs.Load())
	}
	t.Logf("%d execs ran during the backup", execs.Load())

	// A non-empty dir is refused and left as it was.
	busy := t.TempDir()
	if err := os.WriteFile(filepath.Join(busy, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := d.cli("", "admin", "restore", file, "--data-dir", busy); code == 0 || !strings.Contains(errOut, "not empty") {
		t.Errorf("restore onto a non-empty dir: exit %d, %q", code, errOut)
	}

	// Without --volumes, the volume comes back empty.
	bare := filepath.Join(t.TempDir(), "bare.backup")
	if out, errOut, code := d.cli("", "admin", "backup", bare); code != 0 {
		t.Fatalf("hutch admin backup: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := d.cli("", "admin", "restore", bare, "--data-dir", filepath.Join(t.TempDir(), "bare")); code != 0 ||
		!strings.Contains(out, "volumes restored empty (the backup was made without --volumes): bk") {
		t.Errorf("restore of a backup without --volumes: exit %d\n%s%s", code, out, errOut)
	}

	d.terminate() // one daemon at a time on this host's sandboxes
	dir2 := filepath.Join(t.TempDir(), "data")
	out, errOut, code = d.cli("", "admin", "restore", file, "--data-dir", dir2)
	if code != 0 || !strings.Contains(out, "1 snapshots, 1 templates, 1 volumes") || !strings.Contains(out, "sandboxes that were running at backup time come back stopped") {
		t.Fatalf("hutch admin restore: exit %d\n%s%s", code, out, errOut)
	}

	r := &daemon{t: t, dataDir: dir2, cfgPath: d.cfgPath}
	r.start()
	t.Cleanup(func() {
		r.terminate()
		assertNoLeftovers(t, r.dataDir, r.ids...)
		if t.Failed() {
			t.Logf("restored daemon's log:\n%s", r.log)
		}
	})
	if found, stopped := r.listed(a); !found || !stopped {
		t.Errorf("the sandbox that ran at backup time: listed %v, stopped %v; want listed stopped", found, stopped)
	}
	snaps, err := r.c.ListSnapshots(ctx)
	if err != nil || len(snaps.Snapshots) != 1 || snaps.Snapshots[0].SnapshotID != snap.SnapshotID {
		t.Errorf("restored snapshots: %+v, %v; want %s", snaps, err, snap.SnapshotID)
	}
	tmpls, err := r.c.ListTemplates(ctx)
	if err != nil || len(tmpls.Templates) != 1 || tmpls.Templates[0].Name != "bk-tmpl" {
		t.Errorf("restored templates: %+v, %v", tmpls, err)
	}

	fromSnap := r.create(api.CreateRequest{SnapshotID: snap.SnapshotID})
	if got := r.exec(fromSnap, "cat", "/root/mark"); strings.TrimSpace(got.Stdout) != "snap-kept" {
		t.Errorf("a sandbox of the restored snapshot reads %q, want snap-kept", got.Stdout)
	}
	fromTmpl := r.create(api.CreateRequest{Template: "bk-tmpl"})
	if got := r.exec(fromTmpl, "cat", "/root/mark"); strings.TrimSpace(got.Stdout) != "snap-kept" {
		t.Errorf("a sandbox of the restored template reads %q, want snap-kept", got.Stdout)
	}
	v := r.create(api.CreateRequest{Image: "python", Volumes: []api.VolumeMount{{Name: "bk", Path: "/data"}}})
	if got := r.exec(v, "cat", "/data/f"); strings.TrimSpace(got.Stdout) != "volume-kept" {
		t.Errorf("the restored volume's file reads %q, want volume-kept", got.Stdout)
	}
}
