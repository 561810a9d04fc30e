package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/failpoint"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// Crash at any point, lose nothing (issue 38: 1): a hutch built with the
// failpoints tag SIGKILLs itself at the step $HUTCH_FAILPOINT names. For
// each point the daemon is started armed on one data dir, the operation is
// driven until the daemon dies, and the next daemon (armed for the next
// point, or unarmed after the last) checks what the crash left.

// crashPoint is a failpoint and the operation that reaches it; sb is a
// running sandbox of the armed daemon, made only when needsSandbox.
// Optional: async when the operation is accepted before the point (a
// job), and after, a check the next daemon makes of what was cut.
type crashPoint struct {
	name         string
	needsSandbox bool
	drive        func(ctx context.Context, d *daemon, sb string) error
	async        bool
	after        func(t *testing.T, d *daemon)
}

var crashPoints = []crashPoint{
	{"create.after-boot", false, func(ctx context.Context, d *daemon, _ string) error {
		_, err := d.c.Create(ctx, api.CreateRequest{Image: "python"})
		return err
	}, false, nil},
	{"stop.after-event", true, func(ctx context.Context, d *daemon, sb string) error {
		_, err := d.c.Stop(ctx, sb, false)
		return err
	}, false, nil},
	{"hibernate.after-checkpoint", true, func(ctx context.Context, d *daemon, sb string) error {
		_, err := d.c.Pause(ctx, sb, api.PauseHibernate)
		return err
	}, false, nil},
	{"snapshot.write.after-checkpoint", true, func(ctx context.Context, d *daemon, sb string) error {
		_, err := d.c.CreateSnapshot(ctx, sb, "crash")
		return err
	}, false, nil},
	{"snapshot.write.after-rename", true, func(ctx context.Context, d *daemon, sb string) error {
		_, err := d.c.CreateSnapshot(ctx, sb, "crash")
		return err
	}, false, nil},
	{"fork.after-checkpoint", true, func(ctx context.Context, d *daemon, sb string) error {
		_, err := d.c.Fork(ctx, sb, 1)
		return err
	}, false, nil},
	{"template.capture.after-rename", true, func(ctx context.Context, d *daemon, sb string) error {
		_, err := d.c.CreateTemplate(ctx, api.TemplateCreateRequest{Name: "crash", FromSandbox: sb})
		return err
	}, false, nil},
	{"volume.create.after-disk", false, func(ctx context.Context, d *daemon, _ string) error {
		_, err := d.c.CreateVolume(ctx, "crash", 0)
		return err
	}, false, nil},
	// issue 38: 1, round 3.
	{"restore.after-restore", false, func(ctx context.Context, d *daemon, _ string) error {
		snaps, err := d.c.ListSnapshots(ctx)
		if err != nil || len(snaps.Snapshots) == 0 {
			return fmt.Errorf("no snapshot to restore: %v", err)
		}
		_, err = d.c.Create(ctx, api.CreateRequest{SnapshotID: snaps.Snapshots[0].SnapshotID})
		return err
	}, false, nil},
	{"template.build.before-record", false, func(ctx context.Context, d *daemon, _ string) error {
		_, err := d.c.BuildTemplate(ctx, api.TemplateBuildRequest{Name: "crash", Dockerfile: "FROM python\nRUN echo built > /built\n"}, func(api.TemplateBuildEvent) error { return nil })
		return err
	}, false, nil},
	{"upload.mid-stream", true, func(ctx context.Context, d *daemon, sb string) error {
		_, err := d.c.Upload(ctx, api.FsUploadRequest{SandboxID: sb, Path: "/var/up"}, bytes.NewReader(make([]byte, 8<<20)))
		return err
	}, false, nil},
	{"network.after-setup", false, func(ctx context.Context, d *daemon, _ string) error {
		_, err := d.c.Create(ctx, api.CreateRequest{Image: "python", Network: true})
		return err
	}, false, nil},
	{"volume.attach.after-mount", false, func(ctx context.Context, d *daemon, _ string) error {
		_, err := d.c.Create(ctx, api.CreateRequest{Image: "python", Volumes: []api.VolumeMount{{Name: "whole", Path: "/mnt/v"}}})
		return err
	}, false, nil},
	// Last: the job runs again in the unarmed daemon after it.
	{"job.after-create", false, func(ctx context.Context, d *daemon, _ string) error {
		_, err := d.c.SubmitJob(ctx, api.JobSubmitRequest{Image: "python", Cmd: "true"})
		return err
	}, true, func(t *testing.T, d *daemon) {
		// The job cut by the crash runs again and succeeds (its sandbox is
		// stopped before the job ends).
		ctx := context.Background()
		testutil.Eventually(t, 2*time.Minute, func() bool {
			jobs, err := d.c.ListJobs(ctx, api.JobListRequest{})
			return err == nil && len(jobs.Jobs) == 1 && jobs.Jobs[0].State == api.JobSucceeded
		}, "the job cut by the crash succeeds after the restart")
	}},
}

func TestCrashAtEveryFailpoint(t *testing.T) {
	if failpoint.Enabled {
		t.Fatal("the test binary must be built without failpoints; only the daemon under test has them")
	}
	fp := testutil.BuildBinaryTags(t, "./cmd/hutch", "failpoints")
	// Without the crash watchdog, the restart is what cleans up.
	d := startDaemon(t, baseConfig("crash_watchdog: false\nvolume_default_size_mb: 64\n"))
	d.bin = fp
	ctx := context.Background()
	// A snapshot, a template and a volume made whole before the crashes:
	// every restart must list exactly these, and they work at the end.
	src := d.create(api.CreateRequest{Image: "python"})
	d.setup(src, "sh", "-c", "echo kept > /var/kept")
	snap, err := d.c.CreateSnapshot(ctx, src, "whole")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.c.CreateTemplate(ctx, api.TemplateCreateRequest{Name: "whole", FromSandbox: src}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.c.CreateVolume(ctx, "whole", 0); err != nil {
		t.Fatal(err)
	}
	whole := []string{"snapshot " + snap.SnapshotID, "template whole", "volume whole"}
	for i, p := range crashPoints {
		d.terminate()
		d.env = []string{failpoint.Env + "=" + p.name}
		d.start()
		if i > 0 {
			afterCrash(t, d, crashPoints[i-1], whole, false)
		}
		sb := ""
		if p.needsSandbox {
			sb = d.create(api.CreateRequest{Image: "python"})
		}
		err := p.drive(ctx, d, sb)
		select {
		case werr := <-d.waitErr:
			var ee *exec.ExitError
			if !errors.As(werr, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("%s: the daemon ended by %v, not by its failpoint\n%s", p.name, werr, d.log)
			}
		case <-time.After(2 * time.Minute):
			t.Fatalf("%s: the operation returned %v and the daemon did not die: the point is not on its path", p.name, err)
		}
		if err == nil && !p.async {
			t.Errorf("%s: the operation succeeded although the daemon died in it", p.name)
		}
		d.ids = append(d.ids, d.bundleIDs()...)
	}
	d.env = nil
	d.start()
	afterCrash(t, d, crashPoints[len(crashPoints)-1], whole, true)
	t.Logf("%d crash points, 1 run each; %v listed and whole after them", len(crashPoints), whole)
}

// afterCrash makes p's own check, then checkAfterCrash's.
func afterCrash(t *testing.T, d *daemon, p crashPoint, want []string, use bool) {
	t.Helper()
	if p.after != nil {
		p.after(t, d)
	}
	checkAfterCrash(t, d, p.name, want, use)
}

// restartChecked holds the sandboxes whose restart event a check has
// seen. Each is checked once, by the daemon that stopped it: the event log
// writes every 200 ms (internal/events), so the next crash may take the
// newest events with it, by design.
var restartChecked = map[string]bool{}

// checkAfterCrash checks a daemon started after a crash at point: every
// sandbox answers or is stopped by the restart with an event; the
// snapshots, templates and volumes listed are exactly want (the half-made
// one of the crash is not) and, with use, each makes a sandbox that works;
// no files of an unlisted one are left; nothing of the crashed daemon
// leaks; no store was repaired.
func checkAfterCrash(t *testing.T, d *daemon, point string, want []string, use bool) {
	t.Helper()
	ctx := context.Background()
	assertNoLeftovers(t, d.dataDir, d.ids...)
	// No sandbox of this daemon uses a volume yet: none is mounted.
	if mi, err := os.ReadFile("/proc/self/mountinfo"); err != nil || bytes.Contains(mi, []byte(filepath.Join(d.dataDir, "volumes", "mnt"))) {
		t.Errorf("after %s: a volume is left mounted (%v)", point, err)
	}
	for _, bad := range []string{"unreadable", "dropping", "forgetting"} {
		if strings.Contains(d.log.String(), bad) {
			t.Errorf("after %s: a store was repaired at start (%q in the log)", point, bad)
		}
	}
	list, err := d.c.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The restart's events are written as it stops the sandboxes, not
	// before it answers: each is waited for.
	stoppedByRestart := func(id string) bool {
		evs, err := d.c.ListEvents(ctx, api.EventsRequest{Type: api.EventSandboxStopped})
		return err == nil && slices.ContainsFunc(evs.Events, func(e api.EventRecord) bool {
			return e.SandboxID == id && strings.Contains(string(e.Data), string(runtime.CauseRestart))
		})
	}
	for _, sb := range list.Sandboxes {
		if !sb.Stopped {
			if r, err := d.c.Exec(ctx, api.ExecRequest{SandboxID: sb.SandboxID, Cmd: "true"}); err != nil || r.ExitCode == nil || *r.ExitCode != 0 {
				t.Errorf("after %s: sandbox %s listed live does not answer: %+v, %v", point, sb.SandboxID, r, err)
			}
			continue
		}
		if sb.StopCause != string(runtime.CauseRestart) || restartChecked[sb.SandboxID] {
			continue
		}
		restartChecked[sb.SandboxID] = true
		if !testutil.Poll(30*time.Second, func() bool { return stoppedByRestart(sb.SandboxID) }) {
			t.Errorf("after %s: sandbox %s was stopped by the restart without an event", point, sb.SandboxID)
		}
	}
	// Every snapshot listed restores; its directory is the only one kept.
	snaps, err := d.c.ListSnapshots(ctx)
	if err != nil {
		t.Fatal(err)
	}
	keep := map[string]bool{"build": true}
	var listed []string
	for _, s := range snaps.Snapshots {
		keep[s.SnapshotID] = true
		listed = append(listed, "snapshot "+s.SnapshotID)
		if use {
			id := d.create(api.CreateRequest{SnapshotID: s.SnapshotID})
			if r := d.exec(id, "cat", "/var/kept"); r.Stdout != "kept\n" {
				t.Errorf("after %s: a sandbox from snapshot %s: %+v", point, s.SnapshotID, r)
			}
		}
	}
	tmpls, err := d.c.ListTemplates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tm := range tmpls.Templates {
		listed = append(listed, "template "+tm.Name)
		if use {
			id := d.create(api.CreateRequest{Template: tm.Name})
			if r := d.exec(id, "cat", "/var/kept"); r.Stdout != "kept\n" {
				t.Errorf("after %s: a sandbox from template %s: %+v", point, tm.Name, r)
			}
		}
	}
	entries, _ := os.ReadDir(filepath.Join(d.dataDir, "snapshots"))
	layers := 0
	for _, e := range entries {
		switch name := e.Name(); {
		case strings.HasPrefix(name, "layer-") && strings.HasSuffix(name, ".tar"):
			layers++
		case strings.HasPrefix(name, "layer-") && strings.HasSuffix(name, ".tree"):
			// A layer's shared tree (internal/sandbox/snapsvc/trees.go)
			// goes with its layer.
			if _, err := os.Stat(filepath.Join(d.dataDir, "snapshots", strings.TrimSuffix(name, ".tree")+".tar")); err != nil {
				t.Errorf("after %s: layer tree %s left without its layer", point, name)
			}
		case !keep[e.Name()]:
			t.Errorf("after %s: snapshot files %s left that no snapshot lists", point, e.Name())
		}
	}
	if layers > len(tmpls.Templates) {
		t.Errorf("after %s: %d template layers for %d templates", point, layers, len(tmpls.Templates))
	}
	vols, err := d.c.ListVolumes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vols.Volumes {
		listed = append(listed, "volume "+v.Name)
		if use {
			id := d.create(api.CreateRequest{Image: "python", Volumes: []api.VolumeMount{{Name: v.Name, Path: "/mnt/v"}}})
			if r := d.exec(id, "sh", "-c", "echo ok > /mnt/v/f && cat /mnt/v/f"); r.Stdout != "ok\n" {
				t.Errorf("after %s: volume %s in a sandbox: %+v", point, v.Name, r)
			}
			if _, err := d.c.Stop(ctx, id, true); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !slices.Equal(listed, want) {
		t.Errorf("after %s: listed %v, want %v", point, listed, want)
	}
	disks, _ := os.ReadDir(filepath.Join(d.dataDir, "volumes", "disks"))
	if len(disks) != len(vols.Volumes) {
		t.Errorf("after %s: %d volume disks for %d volumes listed", point, len(disks), len(vols.Volumes))
	}
}
