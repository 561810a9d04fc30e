//go:build package

package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// testBooted boots root (a Debian root with systemd, where the package was
// installed and purged with no systemd running) as a systemd container
// with systemd-nspawn, and checks the package under a running systemd:
// install starts the unit, whose hardening leaves gVisor working (a
// sandbox runs python); an upgrade to the next package while that sandbox
// runs restarts the daemon on the same data dir, which reports the sandbox
// stopped by the shutdown, with its event (docs/reliability.md,
// "Upgrades"); remove stops the unit and leaves no process, socket,
// binary or unit, only the data dir (and, as Debian does, the conffile).
//
// The container has its own network namespace (the daemon's nftables and
// veths stay off the host's) and the host's image cache bound in, so no
// image is pulled. On a host whose cgroup controllers are v1 (this
// machine's hybrid layout) nspawn mounts them read-only in the container,
// where a host booted with systemd has them writable: the test remounts
// them writable before the unit starts, the one thing it changes in the
// container. SYSTEMD_SECCOMP=0 turns off nspawn's own syscall filter (a
// container runtime's, not the unit's).
func testBooted(t *testing.T, nspawn, root string, debs map[string]string) {
	for v, deb := range debs {
		raw, err := os.ReadFile(deb)
		if err != nil {
			t.Fatal(err)
		}
		// /var/tmp: the booted system mounts a tmpfs over /tmp.
		if err := os.WriteFile(filepath.Join(root, "var/tmp", "hutch_"+v+".deb"), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The daemon reads the image cache shared by the tests' runs.
	cache := testutil.ImageCacheDir()
	boot := exec.Command(nspawn, "--directory", root, "--boot", "--register=no", "--keep-unit",
		"--capability=all", "--private-network", "--machine", "hutch-pkg-test",
		"--bind="+cache+":/var/cache/hutch-images")
	boot.Env = append(os.Environ(), "SYSTEMD_SECCOMP=0")
	var console strings.Builder
	boot.Stdout, boot.Stderr = &console, &console
	if err := boot.Start(); err != nil {
		t.Fatalf("systemd-nspawn: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- boot.Wait() }()
	stopped := false
	t.Cleanup(func() {
		if stopped {
			return
		}
		boot.Process.Kill()
		<-done
	})

	// The container's init is the child of nspawn that runs systemd (for a
	// while nspawn also has its own short-lived child, which a busy
	// machine shows long enough to be taken for the init).
	var leader int
	testutil.Eventually(t, time.Minute, func() bool {
		raw, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", boot.Process.Pid, boot.Process.Pid))
		for _, f := range strings.Fields(string(raw)) {
			pid, _ := strconv.Atoi(f)
			if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); strings.TrimSpace(string(comm)) == "systemd" {
				leader = pid
				return true
			}
		}
		return false
	}, "systemd-nspawn started no init; console:\n%s", &console)
	run := func(args ...string) (string, error) {
		out, err := exec.Command("nsenter", append([]string{"-t", strconv.Itoa(leader), "-a"}, args...)...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	in := func(args ...string) string {
		t.Helper()
		out, err := run(args...)
		if err != nil {
			t.Fatalf("in the container, %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	var state strings.Builder
	testutil.Eventually(t, 3*time.Minute, func() bool {
		out, err := run("systemctl", "is-system-running")
		state.Reset()
		fmt.Fprintf(&state, "%q (%v)", out, err)
		return out == "running" || out == "degraded"
	}, "systemd did not finish booting (is-system-running: %s); console:\n%s", &state, &console)

	// v1 controllers mounted read-only by nspawn (see above).
	mounts := in("cat", "/proc/mounts")
	for _, line := range strings.Split(mounts, "\n") {
		f := strings.Fields(line)
		if len(f) >= 4 && f[2] == "cgroup" && strings.HasPrefix(f[3], "ro,") {
			in("mount", "-o", "remount,bind,rw", f[1])
		}
	}

	in("dpkg", "-i", "/var/tmp/hutch_1.0.0.deb")
	if got := in("systemctl", "is-active", "hutch"); got != "active" {
		t.Fatalf("after install the unit is %q; journal:\n%s", got, journal(run))
	}
	// A restart on a changed config: the operator's way (docs/operations.md).
	in("sh", "-c", "echo 'image_cache_dir: /var/cache/hutch-images' >> /etc/hutch/config.yaml")
	in("systemctl", "restart", "hutch")
	pid1 := in("systemctl", "show", "-P", "MainPID", "hutch")

	// The CLI reaches the daemon over /run/hutch/hutch.sock (no token, no
	// port), waiting for it while the restart is under way, and never
	// starts a daemon of its own beside the unit.
	var id string
	testutil.EventuallyNil(t, 2*time.Minute, func() error {
		cmd := exec.Command("nsenter", "-t", strconv.Itoa(leader), "-a", "hutch", "create", "python")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("hutch create python: %v: %s", err, stderr.String())
		}
		if stderr.Len() > 0 {
			t.Errorf("hutch create python said on stderr: %s", stderr.String())
		}
		id = strings.TrimSpace(string(out))
		return nil
	}, "no sandbox under the unit; journal:\n%s", lazy(func() string { return journal(run) }))
	if _, err := run("test", "-e", "/var/lib/hutch/hutch.log"); err == nil {
		t.Errorf("the CLI started a daemon beside the unit: %s", in("cat", "/var/lib/hutch/hutch.log"))
	}
	if out := in("hutch", "exec", id, "--", "python3", "-c", "print(6*7)"); out != "42" {
		t.Fatalf("exec under the unit: %q", out)
	}

	// The upgrade, the sandbox running.
	in("dpkg", "-i", "/var/tmp/hutch_1.0.1.deb")
	if got := in("dpkg-query", "-W", "-f=${Version}", "hutch"); got != "1.0.1" {
		t.Errorf("after the upgrade: version %q", got)
	}
	if pid2 := in("systemctl", "show", "-P", "MainPID", "hutch"); pid2 == pid1 || pid2 == "0" {
		t.Errorf("the upgrade did not restart the daemon: MainPID %s, then %s", pid1, pid2)
	}
	var sb *api.SandboxInfo
	testutil.EventuallyNil(t, time.Minute, func() error {
		out, err := run("hutch", "list", "--json")
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		var list api.ListResponse
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			return err
		}
		for i := range list.Sandboxes {
			if list.Sandboxes[i].SandboxID == id {
				sb = &list.Sandboxes[i]
				return nil
			}
		}
		return fmt.Errorf("sandbox %s not listed: %s", id, out)
	}, "the sandbox after the upgrade")
	if sb.Stopped {
		// Stopped by the old daemon's shutdown: said so, with its event.
		if sb.StopCause != "shutdown" && sb.StopCause != "daemon_restart" {
			t.Errorf("after the upgrade the sandbox is stopped with cause %q (%s)", sb.StopCause, sb.StopReason)
		}
		events := in("hutch", "events", "--json")
		if !strings.Contains(events, `"type":"sandbox.stopped","sandbox_id":"`+id+`"`) {
			t.Errorf("the upgrade stopped the sandbox without its event:\n%s", events)
		}
	} else if out := in("hutch", "exec", id, "--", "python3", "-c", "print(6*7)"); out != "42" {
		t.Errorf("exec in the sandbox kept running: %q", out)
	}

	in("dpkg", "-r", "hutch")
	if out, _ := run("systemctl", "is-active", "hutch"); out == "active" {
		t.Error("remove left the unit running")
	}
	if out, _ := run("pgrep", "-a", "hutch|runsc"); out != "" {
		t.Errorf("remove left processes:\n%s", out)
	}
	for _, p := range []string{"usr/bin/hutch", "usr/bin/runsc", "lib/systemd/system/hutch.service",
		"etc/systemd/system/multi-user.target.wants/hutch.service"} {
		if _, err := os.Lstat(filepath.Join(root, p)); err == nil {
			t.Errorf("remove left /%s", p)
		}
	}
	if out, err := run("test", "-e", "/run/hutch/hutch.sock"); err == nil {
		t.Errorf("remove left the socket %s", out)
	}
	if _, err := os.Stat(filepath.Join(root, "var/lib/hutch/hutch.db")); err != nil {
		t.Errorf("remove took the data dir: %v", err)
	}

	in("systemctl", "poweroff")
	select {
	case <-done:
		stopped = true
	case <-time.After(2 * time.Minute):
		t.Errorf("the container did not power off")
	}
}

// lazy is a message part made when the message is.
type lazy func() string

func (l lazy) String() string { return l() }

// journal is the unit's journal, for a failure's message.
func journal(run func(...string) (string, error)) string {
	out, _ := run("journalctl", "-u", "hutch", "--no-pager", "-n", "40")
	return out
}
