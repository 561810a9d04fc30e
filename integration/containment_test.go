package integration

import (
	"context"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
)

// Containment (issue 6, item 7): a fork bomb, a memory hog or a disk
// filler in one sandbox is stopped by that sandbox's limits while the
// daemon and other sandboxes keep answering.

// bystanderReport sums up a bystander's execs.
type bystanderReport struct {
	runs, failures int
	slowest        time.Duration
	firstErr       string
}

// bystander runs `echo ok` in sandbox id, and checks the daemon's health,
// every 100 ms until stop is closed; the report arrives on the channel.
func (d *daemon) bystander(id string, stop <-chan struct{}) <-chan bystanderReport {
	out := make(chan bystanderReport, 1)
	go func() {
		var rep bystanderReport
		defer func() { out <- rep }()
		stopped := false
		for {
			// Keep going after stop until enough runs prove the bystander
			// healthy: the disturbance may end sooner than that.
			select {
			case <-stop:
				stopped = true
				stop = nil
			case <-time.After(100 * time.Millisecond):
			}
			if stopped && rep.runs >= minBystanderRuns {
				return
			}
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			r, err := d.c.Exec(ctx, api.ExecRequest{SandboxID: id, Cmd: "echo", Args: []string{"ok"}})
			if err == nil {
				err = d.c.Health(ctx)
			}
			cancel()
			rep.runs++
			rep.slowest = max(rep.slowest, time.Since(start))
			if err != nil || r.Stdout != "ok\n" {
				rep.failures++
				if rep.firstErr == "" {
					rep.firstErr = strings.TrimSpace(r.Stderr + " " + errString(err))
				}
			}
		}
	}()
	return out
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// checkBystander fails t unless every exec of rep succeeded, quickly.
// minBystanderRuns is how many execs a bystander runs at the least.
const minBystanderRuns = 5

func checkBystander(t *testing.T, rep bystanderReport) {
	t.Helper()
	t.Logf("bystander: %d execs, %d failed, slowest %v", rep.runs, rep.failures, rep.slowest)
	if rep.runs < minBystanderRuns || rep.failures > 0 || rep.slowest > 5*time.Second {
		t.Errorf("the bystander suffered: %+v", rep)
	}
}

// forkUntilRefused forks sleeping children until fork fails, prints
// "<errno name> <children>", then kills and reaps them.
const forkUntilRefused = `
import errno, os, signal, time
kids, err = [], None
while len(kids) < 5000:
    try:
        pid = os.fork()
    except OSError as e:
        err = e
        break
    if pid == 0:
        time.sleep(120)
        os._exit(0)
    kids.append(pid)
print(errno.errorcode.get(err.errno) if err else "none", len(kids), flush=True)
for k in kids:
    os.kill(k, signal.SIGKILL)
for k in kids:
    os.waitpid(k, 0)
`

// agentCapsScript prints, for this process and then for the agent
// (PID 1), whether CAP_SYS_RESOURCE is in its effective, permitted,
// bounding and inheritable sets; then what becomes of reaching the agent's
// stream through /proc/1/fd, and of attaching to it with ptrace.
const agentCapsScript = `
import ctypes, errno, os
for pid in ("self", "1"):
    caps = dict(l.split(":\t") for l in open(f"/proc/{pid}/status").read().splitlines() if l.startswith("Cap"))
    print(pid, *(str(int(caps[k], 16) >> 24 & 1) for k in ("CapEff", "CapPrm", "CapBnd", "CapInh")))
try:
    os.close(os.open("/proc/1/fd/2", os.O_WRONLY))
    print("fd opened")
except OSError as e:
    print("fd", errno.errorcode[e.errno])
libc = ctypes.CDLL(None, use_errno=True)
PTRACE_ATTACH = 16
if libc.ptrace(PTRACE_ATTACH, 1, None, None) == 0:
    print("ptrace attached")
else:
    print("ptrace", errno.errorcode[ctypes.get_errno()])
`

func TestForkBombIsContained(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	ctx := context.Background()
	bomb := d.create(api.CreateRequest{Image: "python", MemoryMB: 2048})
	other := d.create(api.CreateRequest{Image: "python"})

	// The agent alone holds CAP_SYS_RESOURCE, which exempts its threads
	// from RLIMIT_NPROC: no process it starts gets it. Holding more than
	// they can also refuses them ptrace access to the agent.
	caps := d.exec(bomb, "python3", "-c", agentCapsScript)
	if want := "self 0 0 0 0\n1 1 1 0 1\nfd EACCES\nptrace EPERM\n"; caps.Stdout != want {
		t.Fatalf("CAP_SYS_RESOURCE (effective, permitted, bounding, inheritable) of a process and of the agent, and its access to the agent:\n%s\nwant:\n%s\nstderr: %s", caps.Stdout, want, caps.Stderr)
	}

	stop := make(chan struct{})
	report := d.bystander(other, stop)

	// Forks are refused inside (RLIMIT_NPROC), well before the host's
	// pids limit would end the whole sandbox.
	start := time.Now()
	r, err := d.c.Exec(ctx, api.ExecRequest{SandboxID: bomb, Cmd: "python3", Args: []string{"-c", forkUntilRefused}, TimeoutMs: 120_000})
	if err != nil || !r.Success {
		t.Fatalf("counted fork: %+v, %v", r, err)
	}
	fields := strings.Fields(r.Stdout)
	n, _ := strconv.Atoi(fields[len(fields)-1])
	t.Logf("fork refused with %s after %d children (%v)", fields[0], n, time.Since(start))
	if fields[0] != "EAGAIN" || n < 100 || n > 1024 {
		t.Errorf("fork until refused: %q, want EAGAIN after 100 to 1024 children", r.Stdout)
	}

	// A classic shell fork bomb, left running in the background.
	start = time.Now()
	r, err = d.c.Exec(ctx, api.ExecRequest{SandboxID: bomb, Cmd: "sh", Args: []string{"-c", "f() { f | f & }; f; sleep 3"}, TimeoutMs: 30_000})
	if err != nil {
		t.Fatalf("fork bomb: %v", err)
	}
	t.Logf("the fork bomb's exec returned after %v (timed out: %v)", time.Since(start), r.TimedOut)
	// For 5 s the bomb's sandbox answers every exec, with the command's
	// result or S400 when no process can be started, and its agent keeps
	// serving file operations. The agent shares its sandbox's CPU with the
	// bomb: on a busy host an answer may take long, so each exec may take
	// up to the daemon's maximum (the agent must answer, not answer fast).
	var ran, refused int
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		r, err := d.c.Exec(ctx, api.ExecRequest{SandboxID: bomb, Cmd: "echo", Args: []string{"alive"}, TimeoutMs: setupTimeoutMs})
		switch {
		case err == nil && r.Stdout == "alive\n":
			ran++
		case err != nil && envelopeOf(t, err).Code == "S400":
			refused++
		default:
			t.Fatalf("exec during the fork bomb: %+v, %v", r, err)
		}
		if err := d.c.Call(ctx, api.FnFsStat, api.FsStatRequest{SandboxID: bomb, Path: "/tmp"}, nil); err != nil {
			t.Fatalf("file operation during the fork bomb: %v", err)
		}
	}
	m, err := d.c.Metrics(ctx, bomb)
	if err != nil {
		t.Fatalf("metrics during the fork bomb: %v", err)
	}
	t.Logf("during the bomb: %d execs ran, %d refused (S400); %d host tasks (limit %d), %d MiB", ran, refused, m.Pids, m.PidsLimit, m.MemoryBytes>>20)
	if m.Pids > uint64(m.PidsLimit) {
		t.Errorf("host tasks %d over pids_limit %d", m.Pids, m.PidsLimit)
	}
	close(stop)
	checkBystander(t, <-report)
	if info, err := d.c.Get(ctx, bomb); err != nil || info.Stopped {
		t.Fatalf("the fork bomb ended its sandbox: %+v, %v", info, err)
	}
	start = time.Now()
	if _, err := d.c.Stop(ctx, bomb, true); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopping the bomb's sandbox took %v", time.Since(start))
	assertNoLeftovers(t, "", bomb)
}

func TestMemoryHogIsContained(t *testing.T) {
	d := startDaemon(t, baseConfig(""))
	ctx := context.Background()
	hog := d.create(api.CreateRequest{Image: "python"}) // 512 MiB
	other := d.create(api.CreateRequest{Image: "python"})
	stop := make(chan struct{})
	report := d.bystander(other, stop)

	start := time.Now()
	r, err := d.c.Exec(ctx, api.ExecRequest{SandboxID: hog, Cmd: "python3",
		Args: []string{"-c", "b = bytearray(4 << 30); print(len(b))"}, TimeoutMs: 120_000})
	took := time.Since(start)
	close(stop)
	checkBystander(t, <-report)
	switch {
	case err != nil:
		// The host OOM killer ended the sandbox: a clear S004.
		env := wantCode(t, err, "S004")
		if !strings.Contains(env.Message, "out of memory (limit 512 MiB)") {
			t.Errorf("S004 message %q does not say out of memory", env.Message)
		}
		t.Logf("4 GiB allocation: sandbox ended after %v: %s", took, env.Message)
		info, err := d.c.Get(ctx, hog)
		if err != nil || !info.Stopped || !strings.Contains(info.StopReason, "out of memory") {
			t.Errorf("hog after the kill: %+v, %v", info, err)
		}
		assertNoLeftovers(t, "", hog)
	case r.Success:
		t.Fatalf("a 4 GiB allocation succeeded in a 512 MiB sandbox: %+v", r)
	default:
		// The allocation was refused inside: MemoryError, sandbox alive.
		if !strings.Contains(r.Stderr, "MemoryError") {
			t.Errorf("allocation failed without MemoryError: %+v", r)
		}
		t.Logf("4 GiB allocation refused inside after %v", took)
	}
	if err := d.c.Health(ctx); err != nil {
		t.Fatalf("daemon after the hog: %v", err)
	}
}

// fillDisk writes 1 MiB blocks to its argument until a write fails, and
// prints "<errno name> <MiB written> <filesystem size in MiB>".
const fillDisk = `
import errno, os, sys
n, err = 0, None
block = b"\x5a" * (1 << 20)
try:
    with open(sys.argv[1], "wb") as f:
        while n < 100000:
            f.write(block)
            f.flush()
            n += 1
except OSError as e:
    err = e
st = os.statvfs("/")
print(errno.errorcode.get(err.errno) if err else "none", n, st.f_blocks * st.f_frsize >> 20, flush=True)
`

func TestDiskFillerGetsENOSPC(t *testing.T) {
	// The writable layer (256 MiB) is larger than the sandbox's memory
	// (128 MiB): it lives on disk, not in memory.
	d := startDaemon(t, baseConfig("writable_layer_mb: 256\n"))
	ctx := context.Background()
	filler := d.create(api.CreateRequest{Image: "python", MemoryMB: 128})
	other := d.create(api.CreateRequest{Image: "python", MemoryMB: 128})
	stop := make(chan struct{})
	report := d.bystander(other, stop)

	start := time.Now()
	r, err := d.c.Exec(ctx, api.ExecRequest{SandboxID: filler, Cmd: "python3", Args: []string{"-c", fillDisk, "/var/fill"}, TimeoutMs: 120_000})
	if err != nil {
		t.Fatalf("disk filler: %v", err)
	}
	t.Logf("disk filler after %v: %q", time.Since(start), r.Stdout)
	f := strings.Fields(r.Stdout)
	if len(f) != 3 {
		t.Fatalf("disk filler output %+v", r)
	}
	written, _ := strconv.Atoi(f[1])
	if f[0] != "ENOSPC" || written < 200 || written > 256 || f[2] != "256" {
		t.Errorf("disk filler: %q; want ENOSPC after 200 to 256 MiB on a 256 MiB root", r.Stdout)
	}
	// The full sandbox answers, and its other sandbox has room of its own.
	if r := d.exec(filler, "echo", "alive"); r.Stdout != "alive\n" {
		t.Errorf("full sandbox: %+v", r)
	}
	if r := d.exec(other, "sh", "-c", "head -c 50000000 /dev/zero > /var/mine && echo wrote"); r.Stdout != "wrote\n" {
		t.Errorf("the other sandbox could not write: %+v", r)
	}
	close(stop)
	checkBystander(t, <-report)
	// Freeing space inside makes room again.
	if r := d.exec(filler, "sh", "-c", "rm /var/fill && head -c 10000000 /dev/zero > /var/again && echo wrote"); r.Stdout != "wrote\n" {
		t.Errorf("write after freeing space: %+v", r)
	}
	// The layer's host file is unlinked: nothing big is visible in the
	// sandbox's bundle directory.
	var visible int64
	_ = filepath.WalkDir(filepath.Join(d.dataDir, "gvisor", "sandboxes", filler), func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			if fi, err := e.Info(); err == nil {
				visible += fi.Size()
			}
		}
		if err == nil && e.IsDir() && e.Name() == "rootfs" {
			return filepath.SkipDir // the read-only image
		}
		return nil
	})
	if visible > 8<<20 {
		t.Errorf("%d bytes visible in the bundle directory", visible)
	}
	if _, err := d.c.Stop(ctx, filler, true); err != nil {
		t.Fatal(err)
	}
	assertNoLeftovers(t, "", filler)
}

// forkAsManyUsers forks, for each of 20 uids, children that take that uid
// and fork until refused: RLIMIT_NPROC counts per user, so together they
// reach the host's pids limit.
const forkAsManyUsers = `
import os, time
for uid in range(1000, 1020):
    if os.fork() == 0:
        os.setuid(uid)
        while True:
            try:
                if os.fork() == 0:
                    time.sleep(120)
                    os._exit(0)
            except OSError:
                time.sleep(120)
                os._exit(0)
time.sleep(120)
`

func TestHostPidsLimitIsTheBackstop(t *testing.T) {
	d := startDaemon(t, baseConfig("pids_limit: 128\n"))
	ctx := context.Background()
	id := d.create(api.CreateRequest{Image: "python", MemoryMB: 1024})
	other := d.create(api.CreateRequest{Image: "python"})
	_, err := d.c.Exec(ctx, api.ExecRequest{SandboxID: id, Cmd: "python3", Args: []string{"-c", forkAsManyUsers}, TimeoutMs: 60_000})
	env := wantCode(t, err, "S004")
	t.Logf("sandbox ended: %s", env.Message)
	if !strings.Contains(env.Message, "process limit reached") {
		t.Errorf("S004 message %q does not say the process limit was reached", env.Message)
	}
	if r := d.exec(other, "echo", "ok"); r.Stdout != "ok\n" {
		t.Errorf("the other sandbox: %+v", r)
	}
	assertNoLeftovers(t, "", id)
}
