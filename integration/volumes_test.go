package integration

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
)

// Volumes (issue 17, item 1) on real sandboxes: two running sandboxes see
// each other's writes, a third reads them after both stopped and the
// daemon restarted; the size is a limit the sandbox survives; a mounted
// volume cannot be deleted; nothing is left mounted or attached.

// sh runs a shell script in sandbox id and returns its result.
func (d *daemon) sh(id, script string) api.ExecResponse {
	d.t.Helper()
	return d.execReq(api.ExecRequest{SandboxID: id, Argv: []string{"sh", "-c", script}, TimeoutMs: setupTimeoutMs})
}

// wantOutput fails unless script exits 0 in id with stdout want.
func (d *daemon) wantOutput(id, script, want string) {
	d.t.Helper()
	r := d.sh(id, script)
	if r.ExitCode == nil || *r.ExitCode != 0 || r.Stdout != want {
		d.t.Fatalf("%q in %s: exit %v, stdout %q, stderr %q; want %q", script, id, r.ExitCode, r.Stdout, r.Stderr, want)
	}
}

func TestVolumes(t *testing.T) {
	d := startDaemon(t, baseConfig("volume_default_size_mb: 64\nvolume_max_size_mb: 256\n"))
	ctx := context.Background()
	info, err := d.c.CreateVolume(ctx, "shared", 0)
	if err != nil || info.SizeMB != 64 {
		t.Fatalf("create volume: %+v, %v", info, err)
	}
	if out, errOut, code := d.cli("", "volume", "create", "small", "--size", "16"); code != 0 || out != "small\n" {
		t.Fatalf("hutch volume create: code %d stdout %q stderr %q", code, out, errOut)
	}
	_, err = d.c.CreateVolume(ctx, "shared", 0)
	wantCode(t, err, "S261")
	_, err = d.c.CreateVolume(ctx, "Not_A_Label", 0)
	wantCode(t, err, "S263")
	_, err = d.c.CreateVolume(ctx, "huge", 257)
	wantCode(t, err, "S263")

	// /data is missing from the image (a mount point made in an overlay),
	// /mnt is there.
	a := d.create(api.CreateRequest{Image: "python", Volumes: []api.VolumeMount{{Name: "shared", Path: "/data"}}})
	b := d.create(api.CreateRequest{Image: "python", Volumes: []api.VolumeMount{
		{Name: "shared", Path: "/mnt"}, {Name: "small", Path: "/opt/small/ro", ReadOnly: true}}})

	t.Run("two running sandboxes see each other's writes", func(t *testing.T) {
		d.wantOutput(a, "echo one > /data/note && cat /data/note", "one\n")
		d.wantOutput(b, "cat /mnt/note", "one\n")
		// b rewrites what a has read (and may cache); a sees the new bytes.
		d.wantOutput(b, "echo two > /mnt/note && echo from-b > /mnt/reply && sync && cat /mnt/note", "two\n")
		d.wantOutput(a, "cat /data/note /data/reply", "two\nfrom-b\n")
		d.wantOutput(a, "echo three >> /data/note && ls /data", "note\nreply\n")
		d.wantOutput(b, "cat /mnt/note", "two\nthree\n")
	})

	t.Run("read-only mount", func(t *testing.T) {
		r := d.sh(b, "echo x > /opt/small/ro/file")
		if r.ExitCode == nil || *r.ExitCode == 0 || !strings.Contains(r.Stderr, "Read-only") {
			t.Fatalf("writing to a read-only volume: exit %v, stderr %q", r.ExitCode, r.Stderr)
		}
		d.wantOutput(b, "ls -A /opt/small/ro; echo end", "end\n")
	})

	t.Run("get and delete while mounted", func(t *testing.T) {
		v, err := d.c.GetVolume(ctx, "shared")
		want := []string{a, b}
		slices.Sort(want)
		if err != nil || !slices.Equal(v.SandboxIDs, want) || v.UsedBytes == 0 || v.AvailableBytes == 0 || v.AvailableBytes > 64<<20 {
			t.Fatalf("get shared: %+v, %v; want mounted by %v", v, err, want)
		}
		_, err = d.c.DeleteVolume(ctx, "shared")
		wantCode(t, err, "S262")
		if _, errOut, code := d.cli("", "volume", "rm", "shared"); code != 1 || !strings.Contains(errOut, "S262") {
			t.Fatalf("hutch volume rm of a mounted volume: code %d stderr %q", code, errOut)
		}
		if out, _, code := d.cli("", "volume", "ls"); code != 0 || !strings.Contains(out, "shared") || !strings.Contains(out, "small") {
			t.Fatalf("hutch volume ls: code %d\n%s", code, out)
		}
		_, err = d.c.CreateSnapshot(ctx, a, "")
		wantCode(t, err, "S265")
	})

	t.Run("refused mounts", func(t *testing.T) {
		for _, tc := range []struct {
			mounts []api.VolumeMount
			code   string
		}{
			{[]api.VolumeMount{{Name: "nope", Path: "/x"}}, "S260"},
			{[]api.VolumeMount{{Name: "shared", Path: "/proc/x"}}, "S264"},
			{[]api.VolumeMount{{Name: "shared", Path: "/.hutch"}}, "S264"},
			{[]api.VolumeMount{{Name: "shared", Path: "data"}}, "S264"},
			{[]api.VolumeMount{{Name: "shared", Path: "/x"}, {Name: "small", Path: "/x"}}, "S264"},
			// A file of the image is no mount point.
			{[]api.VolumeMount{{Name: "shared", Path: "/etc/hostname"}}, "S264"},
		} {
			_, err := d.c.Create(ctx, api.CreateRequest{Image: "python", Volumes: tc.mounts})
			wantCode(t, err, tc.code)
		}
	})

	t.Run("a write past the size fails and the sandbox runs on", func(t *testing.T) {
		c := d.create(api.CreateRequest{Image: "python", Volumes: []api.VolumeMount{{Name: "small", Path: "/small"}}})
		r := d.sh(c, "dd if=/dev/zero of=/small/fill bs=1M count=32 conv=fsync")
		if r.ExitCode == nil || *r.ExitCode == 0 || !strings.Contains(r.Stderr, "No space left on device") {
			t.Fatalf("filling a 16 MiB volume with 32 MiB: exit %v, stderr %q", r.ExitCode, r.Stderr)
		}
		d.wantOutput(c, "echo still here > /tmp/x && cat /tmp/x", "still here\n")
		d.wantOutput(c, "rm /small/fill && echo ok > /small/after && cat /small/after", "ok\n")
		if _, err := d.c.Stop(ctx, c, true); err != nil {
			t.Fatal(err)
		}
	})

	// Both stop; the daemon restarts on the same data dir.
	for _, id := range []string{a, b} {
		if _, err := d.c.Stop(ctx, id, true); err != nil {
			t.Fatal(err)
		}
	}
	if v, err := d.c.GetVolume(ctx, "shared"); err != nil || len(v.SandboxIDs) != 0 {
		t.Fatalf("after the stops: %+v, %v", v, err)
	}
	d.terminate()
	assertNoLeftovers(t, d.dataDir, d.ids...)
	d.start()

	t.Run("a sandbox after the restart reads the data", func(t *testing.T) {
		out, errOut, code := d.cli("", "create", "python", "--volume", "shared:/work/data:ro")
		id := strings.TrimSpace(out)
		if code != 0 || id == "" {
			t.Fatalf("hutch create --volume: code %d stdout %q stderr %q", code, out, errOut)
		}
		d.ids = append(d.ids, id)
		d.wantOutput(id, "cat /work/data/note /work/data/reply", "two\nthree\nfrom-b\n")
		if _, err := d.c.Stop(ctx, id, true); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a daemon killed while a volume is mounted", func(t *testing.T) {
		id := d.create(api.CreateRequest{Image: "python", Volumes: []api.VolumeMount{{Name: "shared", Path: "/data"}}})
		d.wantOutput(id, "echo four >> /data/note && sync", "")
		d.kill9()
		// The next start unmounts what the dead daemon left mounted.
		d.start()
		again := d.create(api.CreateRequest{Image: "python", Volumes: []api.VolumeMount{{Name: "shared", Path: "/data"}}})
		d.wantOutput(again, "tail -n 1 /data/note", "four\n")
		if _, err := d.c.Stop(ctx, again, true); err != nil {
			t.Fatal(err)
		}
		if mounted, _ := os.ReadDir(filepath.Join(d.dataDir, "volumes", "mnt")); len(mounted) != 0 {
			t.Fatalf("mount points after the last stop: %v", mounted)
		}
	})

	t.Run("delete after the last sandbox stopped", func(t *testing.T) {
		for _, name := range []string{"shared", "small"} {
			if _, err := d.c.DeleteVolume(ctx, name); err != nil {
				t.Fatalf("delete %s: %v", name, err)
			}
		}
		_, err := d.c.GetVolume(ctx, "shared")
		wantCode(t, err, "S260")
		if disks, _ := os.ReadDir(filepath.Join(d.dataDir, "volumes", "disks")); len(disks) != 0 {
			t.Fatalf("disks left: %v", disks)
		}
	})
}
