package integration

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/client"
)

// Snapshots, restore, fork and hibernation (issue 15) on real sandboxes:
// a counter held only in a process's memory and a file in the writable
// layer carry over; copies diverge; nothing is left of deleted snapshots.

func TestSnapshotsForksAndHibernation(t *testing.T) {
	// One python snapshot is about 6 MB: 10 MiB holds one, not two.
	d := startDaemon(t, baseConfig("snapshot_storage_mb: 10\napi_tokens:\n  alice: "+aliceToken+"\n  bob: "+bobToken+"\n"))
	t.Setenv("HUTCH_TOKEN", aliceToken)
	ctx := context.Background()
	d.c = client.New(d.url, aliceToken)
	bob := client.New(d.url, bobToken)
	a := d.create(api.CreateRequest{Image: "python", Metadata: map[string]string{"role": "parent"}})
	d.setup(a, "sh", "-c", "echo kept > /root/note")
	d.startCounter(a, false)
	if n := d.nextCount(a); n != 1 {
		t.Fatalf("first count %d", n)
	}

	// A snapshot through the CLI; the sandbox goes on running.
	out, errOut, code := d.cli("", "snapshot", "create", a, "--name", "one")
	snap := strings.TrimSpace(out)
	if code != 0 || len(snap) != 36 {
		t.Fatalf("hutch snapshot create: code %d stdout %q stderr %q", code, out, errOut)
	}
	if out, _, _ := d.cli("", "snapshot", "ls"); !strings.Contains(out, snap) || !strings.Contains(out, "one") {
		t.Errorf("hutch snapshot ls:\n%s", out)
	}
	snapDir := filepath.Join(d.dataDir, "snapshots", snap)
	if _, err := os.Stat(snapDir); err != nil {
		t.Fatalf("the snapshot's files: %v", err)
	}

	t.Run("quota and bad input change nothing", func(t *testing.T) {
		if status, body := d.raw("POST", "/v1/sandboxes/"+a+"/snapshots", aliceToken, `{}`); status != 429 || !strings.Contains(body, "S400") {
			t.Errorf("a snapshot past snapshot_storage_mb: %d %s", status, body)
		}
		list, err := d.c.ListSnapshots(ctx)
		if err != nil || len(list.Snapshots) != 1 {
			t.Errorf("after the refused snapshot: %+v %v", list, err)
		}
		if tmp, _ := filepath.Glob(filepath.Join(d.dataDir, "snapshots", "tmp-*")); len(tmp) > 0 {
			t.Errorf("a refused snapshot left %v", tmp)
		}
		_, err = d.c.Create(ctx, api.CreateRequest{Image: "node", SnapshotID: snap})
		wantCode(t, err, "S001")
		_, err = d.c.Create(ctx, api.CreateRequest{SnapshotID: "00000000-0000-4000-8000-000000000000"})
		wantCode(t, err, "S006")
		_, err = d.c.Fork(ctx, a, 1000)
		wantCode(t, err, "S001")
		_, err = d.c.CreateSnapshot(ctx, "00000000-0000-4000-8000-000000000000", "")
		wantCode(t, err, "S002")
	})

	t.Run("another owner sees none of it", func(t *testing.T) {
		_, err := bob.GetSnapshot(ctx, snap)
		wantCode(t, err, "S006")
		_, err = bob.Create(ctx, api.CreateRequest{SnapshotID: snap})
		wantCode(t, err, "S006")
		_, err = bob.DeleteSnapshot(ctx, snap)
		wantCode(t, err, "S006")
		_, err = bob.Fork(ctx, a, 1)
		wantCode(t, err, "S002")
		_, err = bob.Pause(ctx, a, api.PauseHibernate)
		wantCode(t, err, "S002")
		if list, err := bob.ListSnapshots(ctx); err != nil || len(list.Snapshots) != 0 {
			t.Errorf("bob lists %+v %v", list, err)
		}
	})

	t.Run("restore continues from the snapshot, privately", func(t *testing.T) {
		e := dialEngineWithToken(t, d, aliceToken)
		var created api.CreateResponse
		if env := e.call(api.FnCreate, map[string]any{"snapshot_id": snap}, &created); env != nil {
			t.Fatalf("engine create from a snapshot: %+v", env)
		}
		b := created.SandboxID
		d.ids = append(d.ids, b)
		if n := d.nextCount(b); n != 2 {
			t.Errorf("the restored counter gave %d, want 2 (it was 1 at the snapshot)", n)
		}
		if r := d.exec(b, "cat", "/root/note"); r.Stdout != "kept\n" {
			t.Errorf("the restored note reads %q", r.Stdout)
		}
		d.setup(b, "sh", "-c", "echo changed > /root/note")
		if r := d.exec(a, "cat", "/root/note"); r.Stdout != "kept\n" {
			t.Errorf("a write in the copy reached the parent: %q", r.Stdout)
		}
		if n := d.nextCount(a); n != 2 {
			t.Errorf("the parent's counter gave %d, want 2", n)
		}
	})

	t.Run("snapshots outlive the daemon", func(t *testing.T) {
		d.terminate()
		d.start()
		d.c, bob = client.New(d.url, aliceToken), client.New(d.url, bobToken)
		info, err := d.c.GetSnapshot(ctx, snap)
		if err != nil || info.SandboxID != a {
			t.Fatalf("after a restart: %+v %v", info, err)
		}
		c := d.create(api.CreateRequest{Image: "python", SnapshotID: snap, Metadata: map[string]string{"role": "parent"}})
		if n := d.nextCount(c); n != 2 {
			t.Errorf("restored after a restart, the counter gave %d, want 2", n)
		}
		// The parent died with the daemon; a new one carries on from here.
		a = c
	})

	t.Run("fork makes copies that continue together, then diverge", func(t *testing.T) {
		out, errOut, code := d.cli("", "fork", a, "-n", "5")
		forks := strings.Fields(out)
		if code != 0 || len(forks) != 5 {
			t.Fatalf("hutch fork -n 5: code %d stdout %q stderr %q", code, out, errOut)
		}
		d.ids = append(d.ids, forks...)
		for _, f := range forks {
			if n := d.nextCount(f); n != 3 {
				t.Errorf("fork %s counted %d, want 3", f, n)
			}
			if info := sandboxState(t, d, f); info.Metadata["role"] != "parent" || info.State != "running" {
				t.Errorf("fork %s is %+v", f, info)
			}
		}
		if n := d.nextCount(forks[0]); n != 4 {
			t.Errorf("fork 0's second count %d, want 4", n)
		}
		if n := d.nextCount(forks[1]); n != 4 {
			t.Errorf("fork 1 did not diverge on its own: %d", n)
		}
		d.setup(forks[0], "sh", "-c", "echo mine > /root/note")
		if r := d.exec(forks[1], "cat", "/root/note"); r.Stdout != "kept\n" {
			t.Errorf("a fork saw its sibling's write: %q", r.Stdout)
		}
	})

	t.Run("hibernate leaves nothing running and resumes where it was", func(t *testing.T) {
		e := dialEngineWithToken(t, d, aliceToken)
		var st api.StateResponse
		if env := e.call(api.FnPause, map[string]any{"sandbox_id": a, "depth": "hibernate"}, &st); env != nil || st.State != "paused" {
			t.Fatalf("hibernate: %+v %+v", env, st)
		}
		if info := sandboxState(t, d, a); info.PauseDepth != "hibernate" {
			t.Errorf("a hibernated sandbox is listed as %+v", info)
		}
		if left := leftovers("", []string{a}); len(left) > 0 {
			t.Errorf("a hibernated sandbox still holds %v", left)
		}
		_, err := d.c.Exec(ctx, api.ExecRequest{SandboxID: a, Argv: []string{"true"}})
		wantCode(t, err, "S005")
		// A hibernated sandbox is a checkpoint already: it can be forked.
		copies, err := d.c.Fork(ctx, a, 1)
		if err != nil {
			t.Fatalf("fork of a hibernated sandbox: %v", err)
		}
		d.ids = append(d.ids, copies.SandboxIDs...)
		if n := d.nextCount(copies.SandboxIDs[0]); n != 3 {
			t.Errorf("a copy of the hibernated sandbox counted %d, want 3", n)
		}
		if info := sandboxState(t, d, a); info.PauseDepth != "hibernate" {
			t.Errorf("after the fork the source is %+v", info)
		}
		if out, errOut, code := d.cli("", "resume", a); code != 0 {
			t.Fatalf("hutch resume: code %d stdout %q stderr %q", code, out, errOut)
		}
		if n := d.nextCount(a); n != 3 {
			t.Errorf("after hibernation the counter gave %d, want 3", n)
		}
		if r := d.exec(a, "cat", "/root/note"); r.Stdout != "kept\n" {
			t.Errorf("after hibernation the note reads %q", r.Stdout)
		}
		if h, _ := filepath.Glob(filepath.Join(d.dataDir, "snapshots", "hibernated-*")); len(h) > 0 {
			t.Errorf("a resumed sandbox's checkpoint is still there: %v", h)
		}
	})

	t.Run("a frozen sandbox forks and stays frozen", func(t *testing.T) {
		if _, err := d.c.Pause(ctx, a, ""); err != nil {
			t.Fatal(err)
		}
		copies, err := d.c.Fork(ctx, a, 1)
		if err != nil {
			t.Fatalf("fork of a frozen sandbox: %v", err)
		}
		d.ids = append(d.ids, copies.SandboxIDs...)
		if info := sandboxState(t, d, a); info.PauseDepth != "freeze" {
			t.Errorf("after the fork the source is %+v", info)
		}
		_, err = d.c.Exec(ctx, api.ExecRequest{SandboxID: a, Argv: []string{"true"}})
		wantCode(t, err, "S005")
		if n := d.nextCount(copies.SandboxIDs[0]); n != 4 {
			t.Errorf("a copy of the frozen sandbox counted %d, want 4", n)
		}
		if _, err := d.c.Resume(ctx, a); err != nil {
			t.Fatal(err)
		}
		if n := d.nextCount(a); n != 4 {
			t.Errorf("the source, resumed, counted %d, want 4", n)
		}
	})

	t.Run("templates", func(t *testing.T) {
		d.setup(a, "sh", "-c", "mkdir -p /opt/app && echo 'print(6*7)' > /opt/app/main.py && rm /etc/hostname")
		out, errOut, code := d.cli("", "template", "create", "app", "--from-sandbox", a, "--memory", "256", "-e", "MODE=prod", "--metadata", "tier=t1")
		if code != 0 || strings.TrimSpace(out) != "app" {
			t.Fatalf("hutch template create: code %d stdout %q stderr %q", code, out, errOut)
		}
		out, errOut, code = d.cli("", "create", "--template", "app", "--metadata", "run=1")
		if code != 0 {
			t.Fatalf("hutch create --template: code %d stdout %q stderr %q", code, out, errOut)
		}
		fromTemplate := strings.TrimSpace(out)
		d.ids = append(d.ids, fromTemplate)
		r := d.exec(fromTemplate, "sh", "-c", "python3 /opt/app/main.py; cat /root/note; echo $MODE; test -e /etc/hostname || echo gone")
		if r.Stdout != "42\nkept\nprod\ngone\n" {
			t.Errorf("a sandbox of the template sees %q", r.Stdout)
		}
		info := sandboxState(t, d, fromTemplate)
		if info.MemoryMB != 256 || info.Metadata["tier"] != "t1" || info.Metadata["run"] != "1" {
			t.Errorf("a sandbox of the template is %+v", info)
		}
		// Request fields override the template's.
		over := d.create(api.CreateRequest{Template: "app", MemoryMB: 384})
		if info := sandboxState(t, d, over); info.MemoryMB != 384 {
			t.Errorf("memory_mb did not override the template's: %d", info.MemoryMB)
		}
		if _, err := d.c.CreateTemplate(ctx, api.TemplateCreateRequest{Name: "restore", TemplateDefaults: api.TemplateDefaults{SnapshotID: snap}}); err != nil {
			t.Fatal(err)
		}
		restored := d.create(api.CreateRequest{Template: "restore"})
		if n := d.nextCount(restored); n != 2 {
			t.Errorf("a sandbox of a snapshot template counted %d, want 2", n)
		}

		_, err := d.c.CreateTemplate(ctx, api.TemplateCreateRequest{Name: "nope", TemplateDefaults: api.TemplateDefaults{Image: "ubuntu"}})
		wantCode(t, err, "S100")
		_, err = d.c.CreateTemplate(ctx, api.TemplateCreateRequest{Name: "huge", TemplateDefaults: api.TemplateDefaults{Image: "python", MemoryMB: 1 << 30}})
		wantCode(t, err, "S001")
		_, err = d.c.CreateTemplate(ctx, api.TemplateCreateRequest{Name: "app", TemplateDefaults: api.TemplateDefaults{Image: "python"}})
		wantCode(t, err, "S001")
		_, err = d.c.Create(ctx, api.CreateRequest{Template: "missing"})
		wantCode(t, err, "S007")
		_, err = bob.Create(ctx, api.CreateRequest{Template: "app"})
		wantCode(t, err, "S007")
		if list, err := d.c.ListTemplates(ctx); err != nil || len(list.Templates) != 2 {
			t.Errorf("templates after the refused ones: %+v %v", list, err)
		}
		layers, _ := filepath.Glob(filepath.Join(d.dataDir, "snapshots", "layer-*.tar"))
		if len(layers) != 1 {
			t.Fatalf("layer files %v, want one", layers)
		}
		if out, errOut, code := d.cli("", "template", "rm", "app", "restore"); code != 0 {
			t.Fatalf("hutch template rm: code %d stdout %q stderr %q", code, out, errOut)
		}
		if _, err := os.Stat(layers[0]); !os.IsNotExist(err) {
			t.Errorf("a deleted template's layer: %v", err)
		}

		// Issue 39: a sandbox of a template runs on the template's shared
		// tree. Hibernated, it wakes on it again (its template deleted
		// meanwhile, the tree stays while used); made a template itself,
		// that template has both's files and removals.
		d.setup(fromTemplate, "sh", "-c", "echo more > /opt/app/more && rm /opt/app/main.py")
		if _, err := d.c.Pause(ctx, fromTemplate, api.PauseHibernate); err != nil {
			t.Fatal(err)
		}
		if _, err := d.c.Resume(ctx, fromTemplate); err != nil {
			t.Fatal(err)
		}
		if _, err := d.c.CreateTemplate(ctx, api.TemplateCreateRequest{Name: "app2", FromSandbox: fromTemplate}); err != nil {
			t.Fatal(err)
		}
		second := d.create(api.CreateRequest{Template: "app2"})
		r = d.exec(second, "sh", "-c", "cat /opt/app/more /root/note; test -e /opt/app/main.py || echo gone; test -e /etc/hostname || echo gone")
		if r.Stdout != "more\nkept\ngone\ngone\n" {
			t.Errorf("a sandbox of a template of a template's sandbox sees %q %q", r.Stdout, r.Stderr)
		}
		if _, err := d.c.DeleteTemplate(ctx, "app2"); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a deleted snapshot leaves nothing", func(t *testing.T) {
		if out, errOut, code := d.cli("", "snapshot", "rm", snap); code != 0 {
			t.Fatalf("hutch snapshot rm: code %d stdout %q stderr %q", code, out, errOut)
		}
		if _, err := os.Stat(snapDir); !os.IsNotExist(err) {
			t.Errorf("the deleted snapshot's files: %v", err)
		}
		_, err := d.c.Create(ctx, api.CreateRequest{SnapshotID: snap})
		wantCode(t, err, "S006")
	})
}

// TestNetworkSandboxForksAndHibernates: a copy of a sandbox with a network
// gets a network of its own (its own address and gateway), and a
// hibernated one gets its network back; both reach the host's forwarded
// port through their gateway.
func TestNetworkSandboxForksAndHibernates(t *testing.T) {
	port := hostServer(t, "forwarded")
	d := startDaemon(t, baseConfig(fmt.Sprintf("gateway_ports: [%d]\n", port)))
	ctx := context.Background()
	a := d.create(api.CreateRequest{Image: "python", Network: true})
	through := func(id string) string {
		addr := netip.MustParseAddr(d.sandboxAddr(id))
		return d.fetch(id, fmt.Sprintf("http://%s:%d/", addr.Prev(), port))[0]
	}
	if got := through(a); got != "forwarded" {
		t.Fatalf("the source reaches %q", got)
	}
	copies, err := d.c.Fork(ctx, a, 1)
	if err != nil {
		t.Fatal(err)
	}
	b := copies.SandboxIDs[0]
	d.ids = append(d.ids, b)
	if d.sandboxAddr(a) == d.sandboxAddr(b) {
		t.Errorf("the copy has its source's address %s", d.sandboxAddr(a))
	}
	if got := through(b); got != "forwarded" {
		t.Errorf("the copy reaches %q through its own gateway", got)
	}
	// Its /etc/hosts, rewritten when its agent relinked, names its own address.
	if hosts := d.exec(b, "cat", "/etc/hosts").Stdout; !strings.Contains(hosts, d.sandboxAddr(b)+"\t") || strings.Contains(hosts, d.sandboxAddr(a)+"\t") {
		t.Errorf("the copy's /etc/hosts names %s, its source's %s:\n%s", d.sandboxAddr(b), d.sandboxAddr(a), hosts)
	}
	if _, err := d.c.Pause(ctx, a, api.PauseHibernate); err != nil {
		t.Fatal(err)
	}
	if _, err := d.c.Resume(ctx, a); err != nil {
		t.Fatal(err)
	}
	if got := through(a); got != "forwarded" {
		t.Errorf("after hibernation the sandbox reaches %q", got)
	}
}
