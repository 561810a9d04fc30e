package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
)

// startMicroVMDaemon starts a daemon whose default (and only) runtime is
// microvm, with the busybox image bb and extra config keys; it skips t
// unless the host can run it (startRuntimesDaemon).
func startMicroVMDaemon(t *testing.T, extra string) *daemon {
	t.Helper()
	return startRuntimesDaemon(t, []string{"microvm"}, extra)
}

// TestMicroVMCreateExecStop boots a sandbox in a QEMU microVM (TCG here)
// through the daemon, runs a command through its agent, and stops it; the
// harness then checks that no process, socket or directory of it is left.
// What the runtime itself must do (a private writable layer, out of
// memory, limits, pause) is the runtime contract suite's
// (internal/runtime/microvm TestContract); this test checks the daemon's
// side: /healthz, the create path, the API's pause and its refusals.
func TestMicroVMCreateExecStop(t *testing.T) {
	d := startMicroVMDaemon(t, "")
	ctx := context.Background()
	// /healthz says how this host runs microVMs.
	hresp, err := http.Get(d.url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(hresp.Body)
	hresp.Body.Close()
	if !strings.Contains(string(body), `"name":"microvm","mode":"tcg"`) && !strings.Contains(string(body), `"name":"microvm","mode":"kvm"`) {
		t.Errorf("/healthz = %s; want the microvm runtime and its accelerator", body)
	}
	// The first create also makes the image's disk and the initramfs.
	t0 := time.Now()
	id := d.create(api.CreateRequest{Image: "bb"})
	t.Logf("create (boot to agent ready) %v", time.Since(t0).Round(time.Millisecond))
	for i := 0; i < 3; i++ {
		t0 = time.Now()
		if r := d.exec(id, "echo", "hi"); !r.Success || r.Stdout != "hi\n" {
			t.Errorf("echo hi: %+v", r)
		}
		t.Logf("exec echo hi through the API %v", time.Since(t0).Round(time.Millisecond))
	}
	// The guest is a VM of its own: its kernel is not the host's.
	host, err := exec.Command("uname", "-r").Output()
	if err != nil {
		t.Fatal(err)
	}
	if r := d.exec(id, "busybox", "uname", "-r"); !r.Success || r.Stdout == string(host) {
		t.Errorf("uname -r in the VM = %+v; the host's is %q", r, host)
	}
	// Pause and resume through QEMU's monitor.
	if st, err := d.c.Pause(ctx, id, ""); err != nil || st.State != "paused" {
		t.Fatalf("pause: %+v, %v", st, err)
	}
	if st, err := d.c.Resume(ctx, id); err != nil || st.State != "running" {
		t.Fatalf("resume: %+v, %v", st, err)
	}
	if r := d.exec(id, "echo", "again"); !r.Success || r.Stdout != "again\n" {
		t.Errorf("echo after resume: %+v", r)
	}
	// What the runtime cannot do is S302, and leaves the sandbox running.
	_, err = d.c.Create(ctx, api.CreateRequest{Image: "bb", Volumes: []api.VolumeMount{{Name: "v", Path: "/data"}}})
	if env := wantCode(t, err, "S302"); !strings.Contains(env.Message, "cannot mount volumes") {
		t.Errorf("create with a volume: %s", env.Message)
	}
	_, err = d.c.CreateSnapshot(ctx, id, "")
	wantCode(t, err, "S302")
	_, err = d.c.Pause(ctx, id, api.PauseHibernate)
	wantCode(t, err, "S302")
	if r := d.exec(id, "echo", "still"); !r.Success || r.Stdout != "still\n" {
		t.Errorf("echo after the refusals: %+v", r)
	}
	if _, err := d.c.Stop(ctx, id, true); err != nil {
		t.Fatalf("stop: %v", err)
	}
}

// TestMicroVMKill9ThenRestart: the VM of a daemon killed with SIGKILL
// outlives it; the restarted daemon's Reconcile kills it, tears its
// network down and removes its directory (disks, sockets), and the
// sandbox is listed as stopped.
func TestMicroVMKill9ThenRestart(t *testing.T) {
	d := startMicroVMDaemon(t, "crash_watchdog: false\n")
	ctx := context.Background()
	id := d.create(api.CreateRequest{Image: "bb", Network: true})
	d.kill9()
	if len(leftovers(d.dataDir, []string{id})) == 0 {
		t.Fatal("the leak scanner sees nothing of the crashed daemon's VM; it cannot prove a restart clean")
	}
	d.start()
	assertNoLeftovers(t, d.dataDir, id)
	if info, err := d.c.Get(ctx, id); err != nil || !info.Stopped {
		t.Errorf("the crashed daemon's sandbox after the restart: %+v, %v", info, err)
	}
}

// TestMicroVMKill9Watchdog: with the crash watchdog (the default), the VMs
// of a daemon killed with SIGKILL, and their networks, are gone without a
// restart.
func TestMicroVMKill9Watchdog(t *testing.T) {
	d := startMicroVMDaemon(t, "")
	id := d.create(api.CreateRequest{Image: "bb", Network: true})
	d.kill9()
	assertNoLeftovers(t, d.dataDir, id)
}

// TestNetworkOnReachesTheHost: in each runtime a sandbox with network:
// true reaches a host loopback service through its gateway, at the
// address its create-time env was rewritten to, and names hutch's
// resolver; nothing of its network is left after its stop.
func TestNetworkOnReachesTheHost(t *testing.T) {
	port := hostServer(t, "from the host")
	d := startTestedRuntimesDaemon(t, "")
	eachRuntime(t, d, func(t *testing.T, rt string) {
		id := d.create(api.CreateRequest{Image: "bb", Runtime: rt, Network: true, Env: api.Env{fmt.Sprintf("SVC=http://127.0.0.1:%d/", port)}})
		svc, err := url.Parse(strings.TrimSpace(d.exec(id, "sh", "-c", "echo $SVC").Stdout))
		if err != nil || svc.Hostname() == "127.0.0.1" {
			t.Fatalf("SVC was not rewritten to the gateway: %v, %v", svc, err)
		}
		// busybox's static wget crashes (NSS); nc speaks HTTP/1.0.
		script := fmt.Sprintf(`printf 'GET / HTTP/1.0\r\n\r\n' | busybox nc -w 10 %s %s`, svc.Hostname(), svc.Port())
		if r := d.exec(id, "sh", "-c", script); !strings.Contains(r.Stdout, "from the host") {
			t.Errorf("fetching the host's service at the gateway: %+v", r)
		}
		if r := d.exec(id, "cat", "/etc/resolv.conf"); !strings.Contains(r.Stdout, "nameserver ") {
			t.Errorf("resolv.conf: %+v", r)
		}
		if _, err := d.c.Stop(context.Background(), id, true); err != nil {
			t.Fatalf("stop: %v", err)
		}
		assertNoLeftovers(t, "", id)
	})
}
