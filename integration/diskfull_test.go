package integration

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// Disk full (issue 38: 2): the daemon's data dir is on a size-bounded
// tmpfs the test mounts and then fills. Every operation that needs the
// data dir's space fails with S402 and leaves nothing half made; reads,
// execs and stops keep working; once space returns everything works, the
// events of the full period were kept, and a restart repairs nothing.

// diskFullCode is the S-code of a full data dir.
const diskFullCode = "S402"

// diskFullEvents is how many events the test publishes on the full disk.
const diskFullEvents = 200

func TestDiskFull(t *testing.T) {
	testutil.RequiresIntegration(t)
	mnt := smallFS(t, "384m")
	d := launchDaemonAt(t, baseConfig("volume_default_size_mb: 16\n"), "", filepath.Join(mnt, "data"))
	ctx := context.Background()
	if _, err := d.c.CreateVolume(ctx, "v", 0); err != nil {
		t.Fatal(err)
	}
	sb := d.create(api.CreateRequest{Image: "python"})
	d.setup(sb, "sh", "-c", "echo kept > /var/kept")
	// A sandbox with a volume cannot be snapshotted: the volume has its own.
	vsb := d.create(api.CreateRequest{Image: "python", Volumes: []api.VolumeMount{{Name: "v", Path: "/mnt/v"}}})
	snap, err := d.c.CreateSnapshot(ctx, sb, "before")
	if err != nil {
		t.Fatal(err)
	}
	stores := func() string {
		var b strings.Builder
		s, _ := d.c.ListSnapshots(ctx)
		for _, x := range s.Snapshots {
			b.WriteString("snapshot " + x.SnapshotID + "\n")
		}
		tm, _ := d.c.ListTemplates(ctx)
		for _, x := range tm.Templates {
			b.WriteString("template " + x.Name + "\n")
		}
		v, _ := d.c.ListVolumes(ctx)
		for _, x := range v.Volumes {
			b.WriteString("volume " + x.Name + "\n")
		}
		return b.String()
	}
	before, files := stores(), dataFiles(t, d.dataDir)

	filler := fillHostDisk(t, mnt)
	full := func(what string, err error) {
		t.Helper()
		if err == nil {
			t.Errorf("%s on a full disk succeeded", what)
			return
		}
		if env := envelopeOf(t, err); env.Code != diskFullCode {
			t.Errorf("%s on a full disk: %s (%s), want %s", what, env.Code, env.Message, diskFullCode)
		}
	}
	_, err = d.c.CreateSnapshot(ctx, sb, "full")
	full("a snapshot", err)
	_, err = d.c.CreateTemplate(ctx, api.TemplateCreateRequest{Name: "full", FromSandbox: sb})
	full("a template", err)
	_, err = d.c.CreateVolume(ctx, "full", 0)
	full("a volume", err)
	_, err = d.c.Fork(ctx, sb, 1)
	full("a fork", err)
	_, err = d.c.BuildTemplate(ctx, api.TemplateBuildRequest{Name: "full", Dockerfile: "FROM python\nRUN true\n"}, nil)
	full("a template build", err)
	// An upload fills the sandbox's writable layer, a file in the data dir:
	// the sandbox sees ENOSPC, as at its own writable_layer_mb, and the
	// upload is S216 saying so.
	_, err = d.c.Upload(ctx, api.FsUploadRequest{SandboxID: sb, Path: "/var/big"}, bytes.NewReader(make([]byte, 32<<20)))
	if env := wantCode(t, err, "S216"); !strings.Contains(env.Message, "no space left on device") {
		t.Errorf("an upload on a full disk: %s", env.Message)
	}
	if id, err := d.c.Create(ctx, api.CreateRequest{Image: "python"}); err == nil {
		// A create that needs no new space may succeed: then it works.
		d.ids = append(d.ids, id.SandboxID)
		if r := d.exec(id.SandboxID, "true"); r.ExitCode == nil || *r.ExitCode != 0 {
			t.Errorf("a sandbox created on a full disk does not answer: %+v", r)
		}
		if _, err := d.c.Stop(ctx, id.SandboxID, true); err != nil {
			t.Errorf("stopping it: %v", err)
		}
	} else {
		full("a create", err)
	}
	if got := stores(); got != before {
		t.Errorf("the full disk changed the stores:\n%s\nwant\n%s", got, before)
	}
	if got := dataFiles(t, d.dataDir); got != files {
		t.Errorf("the failed operations left files:\n%s\nbefore them:\n%s", got, files)
	}
	// A volume's space is its own: a write into it needs no more of the host's.
	if r := d.exec(vsb, "sh", "-c", "head -c 4194304 /dev/zero > /mnt/v/f && sync && wc -c < /mnt/v/f"); r.Stdout != "4194304\n" {
		t.Errorf("a write into the volume on a full host disk: %+v", r)
	}
	// Reads, execs and stops keep working; an event is kept for later.
	if r := d.exec(sb, "cat", "/var/kept"); r.Stdout != "kept\n" {
		t.Errorf("an exec on a full disk: %+v", r)
	}
	if _, rc, err := d.c.Download(ctx, api.FsDownloadRequest{SandboxID: sb, Path: "/var/kept"}); err != nil {
		t.Errorf("a download on a full disk: %v", err)
	} else {
		b, _ := io.ReadAll(rc)
		rc.Close()
		if string(b) != "kept\n" {
			t.Errorf("a download on a full disk read %q", b)
		}
	}
	// Events of the full period stay in memory until the log can write
	// them; enough of them that the log's file must grow.
	data := []byte(`"` + strings.Repeat("x", 2000) + `"`)
	for range diskFullEvents {
		if _, err := d.c.PublishEvent(ctx, api.PublishRequest{Topic: "diskfull", Data: data}); err != nil {
			t.Fatalf("publishing an event on a full disk: %v", err)
		}
	}
	if _, err := d.c.Stop(ctx, vsb, true); err != nil {
		t.Errorf("a stop on a full disk: %v", err)
	}
	if _, err := d.c.List(ctx); err != nil {
		t.Errorf("a list on a full disk: %v", err)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	// Space is back: what failed now works, and the daemon restarts on
	// its data dir without a repair, keeping the event of the full period.
	if _, err := d.c.CreateSnapshot(ctx, sb, "after"); err != nil {
		t.Errorf("a snapshot once space returned: %v", err)
	}
	if _, err := d.c.CreateTemplate(ctx, api.TemplateCreateRequest{Name: "after", FromSandbox: sb}); err != nil {
		t.Errorf("a template once space returned: %v", err)
	}
	if _, err := d.c.CreateVolume(ctx, "after", 0); err != nil {
		t.Errorf("a volume once space returned: %v", err)
	}
	if _, err := d.c.Upload(ctx, api.FsUploadRequest{SandboxID: sb, Path: "/var/big"}, bytes.NewReader(make([]byte, 4<<20))); err != nil {
		t.Errorf("an upload once space returned: %v", err)
	}
	d.terminate()
	if t.Failed() {
		t.Logf("the log of the daemon on the full disk:\n%s", d.log)
	}
	d.start()
	for _, bad := range []string{"unreadable", "dropping", "forgetting"} {
		if strings.Contains(d.log.String(), bad) {
			t.Errorf("a store was repaired at the restart (%q in the log)", bad)
		}
	}
	evs, err := d.c.ListEvents(ctx, api.EventsRequest{Type: "custom.diskfull", Limit: 2 * diskFullEvents})
	if err != nil || len(evs.Events) != diskFullEvents {
		t.Errorf("the events published on a full disk after the restart: %d, %v", len(evs.Events), err)
	}
	for _, id := range []string{d.create(api.CreateRequest{SnapshotID: snap.SnapshotID}), d.create(api.CreateRequest{Template: "after"})} {
		if r := d.exec(id, "cat", "/var/kept"); r.Stdout != "kept\n" {
			t.Errorf("a sandbox from the snapshot or template after the full period: %+v", r)
		}
	}
	id := d.create(api.CreateRequest{Image: "python", Volumes: []api.VolumeMount{{Name: "v", Path: "/mnt/v"}}})
	if r := d.exec(id, "wc", "-c", "/mnt/v/f"); r.Stdout != "4194304 /mnt/v/f\n" {
		t.Errorf("the volume written on a full disk: %+v", r)
	}
}

// smallFS mounts a tmpfs of size (tmpfs's size= form) on a new temporary
// directory and returns it; it is unmounted after the cleanups registered
// after it (a daemon's among them).
func smallFS(t *testing.T, size string) string {
	t.Helper()
	mnt := t.TempDir()
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size="+size+",mode=0700"); err != nil {
		t.Fatalf("mounting the small file system: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(mnt, syscall.MNT_DETACH) })
	return mnt
}

// fillHostDisk writes a file on the file system at dir until it is full, and
// returns its path.
func fillHostDisk(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	// The last bytes, smaller than a chunk.
	for _, err := f.Write(chunk[:4096]); err == nil; _, err = f.Write(chunk[:4096]) {
	}
	return path
}

// dataFiles lists the data dir's files below its stores, one a line.
func dataFiles(t *testing.T, dataDir string) string {
	t.Helper()
	var b strings.Builder
	for _, sub := range []string{"snapshots", "volumes"} {
		_ = filepath.WalkDir(filepath.Join(dataDir, sub), func(p string, _ os.DirEntry, err error) error {
			if err == nil {
				b.WriteString(p + "\n")
			}
			return nil
		})
	}
	return b.String()
}
