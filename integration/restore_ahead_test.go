package integration

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/hostscan"
	"github.com/hutch-dev/hutch/internal/telemetry/otlptest"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// issue 46: a restore goes into a container created ahead for its
// snapshot. The first create from a template with a start command is a
// fresh restore, after which the runtime creates containers ahead (a
// gvisor.ahead span each); the next create restores into one (its
// runsc.restore span says hutch.ahead), and the sandbox works: exec, and
// its server answers through the preview. Deleting the template destroys
// the containers left; a user snapshot's, left by a daemon killed with
// SIGKILL, are destroyed by its crash watchdog.
func TestRestoreAhead(t *testing.T) {
	rcv := otlptest.New(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	d := startDaemon(t, baseConfig(""))
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM python\nCMD python3 -m http.server 8080 --bind 127.0.0.1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := d.cli("", "template", "build", "--name", "ahead", "--ready-port", "8080", dir); code != 0 {
		t.Fatalf("hutch template build: code %d %s %s", code, out, errOut)
	}
	first := d.create(api.CreateRequest{Template: "ahead"})
	made, ok := rcv.WaitFor("gvisor.ahead", nil, 60*time.Second)
	if !ok || made.Error {
		t.Fatalf("no container created ahead after the first restore: %+v", made)
	}
	ahead := []string{}
	defer func() {
		d.terminate()
		assertNoLeftovers(t, d.dataDir, ahead...)
	}()

	second := d.create(api.CreateRequest{Template: "ahead"})
	create, ok := rcv.WaitFor("sandbox.create", map[string]string{"hutch.sandbox_id": second}, 10*time.Second)
	if !ok {
		t.Fatalf("no sandbox.create span of %s", second)
	}
	restore := false
	testutil.Poll(10*time.Second, func() bool {
		for _, s := range rcv.Spans() {
			restore = restore || (s.Name == "runsc.restore" && s.TraceID == create.TraceID && s.Attrs["hutch.ahead"] == "true")
		}
		return restore
	})
	if !restore {
		t.Fatalf("the second create did not restore into a container created ahead; spans: %+v", rcv.Spans())
	}
	if r := d.exec(second, "sh", "-c", "echo ok; cat /proc/sys/kernel/hostname"); r.Stdout != "ok\nhutch-"+second[:8]+"\n" {
		t.Errorf("exec in the restored sandbox: %q %q", r.Stdout, r.Stderr)
	}
	if _, err := d.c.ExposePort(ctx, api.PortExposeRequest{SandboxID: second, Port: 8080}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 20*time.Second, func() bool {
		status, _ := httpGet(t, d.url+"/v1/sandboxes/"+second+"/ports/8080/")
		return status == 200
	}, "the template's server through the preview")

	for _, s := range rcv.Spans() {
		if s.Name == "gvisor.ahead" {
			ahead = append(ahead, s.Attrs["hutch.sandbox_id"])
		}
	}
	if _, err := d.c.DeleteTemplate(ctx, "ahead"); err != nil {
		t.Fatal(err)
	}
	live := []string{first, second}
	testutil.Eventually(t, 30*time.Second, func() bool {
		for _, dir := range hostscan.SandboxDirs(d.dataDir) {
			if !slices.Contains(live, filepath.Base(dir)) {
				return false
			}
		}
		return true
	}, "the containers created ahead destroyed with the template: %v", hostscan.SandboxDirs(d.dataDir))

	// A user snapshot just restored gets containers ahead too; a daemon
	// killed with SIGKILL leaves them to its crash watchdog, which
	// destroys them with the sandboxes.
	snap, err := d.c.CreateSnapshot(ctx, second, "")
	if err != nil {
		t.Fatal(err)
	}
	d.create(api.CreateRequest{SnapshotID: snap.SnapshotID})
	known := len(ahead)
	// Its gvisor.ahead spans come after the template's last ones, which
	// may still be arriving: one of the new ids has its bundle.
	testutil.Eventually(t, 60*time.Second, func() bool {
		for _, s := range rcv.Spans() {
			if id := s.Attrs["hutch.sandbox_id"]; s.Name == "gvisor.ahead" && !s.Error && !slices.Contains(ahead, id) {
				ahead = append(ahead, id)
			}
		}
		return slices.ContainsFunc(hostscan.SandboxDirs(d.dataDir), func(p string) bool { return slices.Contains(ahead[known:], filepath.Base(p)) })
	}, "no container created ahead for a restored snapshot")
	d.kill9()
}
