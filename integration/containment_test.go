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
	"github.com/hutch-dev/hutch/internal/testutil"
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

// checkBystander fails t unless every exec of rep succeeded. How fast is
// not asserted: a busy host decides that; an exec that hangs fails at the
// bystander's 30 s deadline.
// minBystanderRuns is how many execs a bystander runs at the least.
const minBystanderRuns = 5

func checkBystander(t *testing.T, rep bystanderReport) {
	t.Helper()
	t.Logf("bystander: %d execs, %d failed, slowest %v", rep.runs, rep.failures, rep.slowest)
	if rep.runs < minBystanderRuns || rep.failures > 0 {
		t.Errorf("the bystander suffered: %+v", rep)
	}
}

// holdEverySlot forks sleeping children until fork fails, writes
// "<errno name> <children>" to /tmp/held (through a rename: the file is
// whole once it is there), then sleeps too: until it is killed, no
// process slot of its user frees up. Children sleep rather than exit on a
// timer, so that the count does not depend on how long the forks take.
const holdEverySlot = `
import errno, os, time
kids, err = 0, None
while kids < 5000:
    try:
        pid = os.fork()
    except OSError as e:
        err = e
        break
    if pid == 0:
        while True:
            time.sleep(3600)
    kids += 1
with open("/tmp/held.tmp", "w") as f:
    f.write(f"{errno.errorcode.get(err.errno) if err else 'none'} {kids}\n")
os.rename("/tmp/held.tmp", "/tmp/held")
while True:
    time.sleep(3600)
`

// forkBomb is the classic shell fork bomb, started in a subshell whose
// input and output are /dev/null, so that its shell returns at once.
const forkBomb = `(f() { f | f & }; f) </dev/null >/dev/null 2>&1 &`

// agentCapsScript prints whether CAP_SYS_RESOURCE is in this process's
// effective, permitted, bounding and inheritable sets, then in the
// effective, permitted and bounding sets of every thread of the agent (PID
// 1): 0 or 1 when all agree, "mixed" when they do not; then what becomes of
// reaching the agent's stream through /proc/1/fd, and of attaching to it
// with ptrace.
//
// Capabilities belong to a thread, and /proc/1/status shows only the
// agent's first thread. The agent's inheritable set is not printed: the
// thread that forks a process clears CAP_SYS_RESOURCE from it for good
// (agent/caps.go), so it depends on which threads the Go scheduler has run
// forks on so far.
const agentCapsScript = `
import ctypes, errno, os
def bit(status, key):
    caps = dict(l.split(":\t") for l in status.splitlines() if l.startswith("Cap"))
    return str(int(caps[key], 16) >> 24 & 1)
me = open("/proc/self/status").read()
print("self", *(bit(me, k) for k in ("CapEff", "CapPrm", "CapBnd", "CapInh")))
threads = []
for tid in os.listdir("/proc/1/task"):
    try:
        threads.append(open(f"/proc/1/task/{tid}/status").read())
    except FileNotFoundError:
        pass  # the thread ended meanwhile
def agreed(key):
    bits = {bit(s, key) for s in threads}
    return bits.pop() if len(bits) == 1 else "mixed"
print("1", *(agreed(k) for k in ("CapEff", "CapPrm", "CapBnd")))
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
	// from RLIMIT_NPROC: every thread of it, none of the processes it
	// starts. Holding more than they can also refuses them ptrace access
	// to the agent.
	caps := d.exec(bomb, "python3", "-c", agentCapsScript)
	if want := "self 0 0 0 0\n1 1 1 0\nfd EACCES\nptrace EPERM\n"; caps.Stdout != want {
		t.Fatalf("CAP_SYS_RESOURCE (effective, permitted, bounding[, inheritable]) of a process and of every agent thread, and its access to the agent:\n%s\nwant:\n%s\nstderr: %s", caps.Stdout, want, caps.Stderr)
	}

	stop := make(chan struct{})
	report := d.bystander(other, stop)

	// Forks are refused inside (RLIMIT_NPROC), well before the host's
	// pids limit would end the whole sandbox. While every process slot is
	// taken, the sandbox answers every exec with S400 (its agent cannot
	// start a process) and keeps serving file operations.
	start := time.Now()
	holder, err := d.c.StartProcess(ctx, api.ProcessStartRequest{SandboxID: bomb, Cmd: "python3", Args: []string{"-c", holdEverySlot}})
	if err != nil {
		t.Fatalf("counted fork: %v", err)
	}
	var held string
	if !testutil.Poll(setupTimeoutMs*time.Millisecond, func() bool {
		res, err := d.c.FsRead(ctx, api.FsReadRequest{SandboxID: bomb, Path: "/tmp/held"})
		if err == nil && res.Body != nil {
			held = *res.Body
		}
		return held != ""
	}) {
		t.Fatal("the process taking every slot never said how many it took")
	}
	fields := strings.Fields(held)
	n, _ := strconv.Atoi(fields[len(fields)-1])
	t.Logf("fork refused with %s after %d children (%v)", fields[0], n, time.Since(start))
	if fields[0] != "EAGAIN" || n < 100 || n > 1024 {
		t.Errorf("fork until refused: %q, want EAGAIN after 100 to 1024 children", held)
	}
	for range 5 {
		_, err := d.c.Exec(ctx, api.ExecRequest{SandboxID: bomb, Cmd: "echo", Args: []string{"alive"}, TimeoutMs: setupTimeoutMs})
		wantCode(t, err, "S400")
		if err := d.c.Call(ctx, api.FnFsStat, api.FsStatRequest{SandboxID: bomb, Path: "/tmp"}, nil); err != nil {
			t.Fatalf("file operation with every process slot taken: %v", err)
		}
	}
	// Killed, the holder and its children free their slots.
	if _, err := d.c.KillProcess(ctx, bomb, holder.Pid); err != nil {
		t.Fatal(err)
	}
	if !testutil.Poll(setupTimeoutMs*time.Millisecond, func() bool {
		r, err := d.c.Exec(ctx, api.ExecRequest{SandboxID: bomb, Cmd: "echo", Args: []string{"alive"}, TimeoutMs: setupTimeoutMs})
		return err == nil && r.Stdout == "alive\n"
	}) {
		t.Fatal("no exec ran once the slots were freed")
	}

	// A classic shell fork bomb, left running in the background: its
	// processes fork, fail and exit, endlessly. Its subshell writes
	// nowhere, so the exec ends as soon as its shell does and the bomb
	// runs on until the sandbox stops. (Were the bomb to hold the exec's
	// output, the exec would end only at its timeout, when the agent kills
	// its process group, bomb and all: whether anything after ran beside
	// the bomb would depend on how fast a loaded host got through it.)
	r, err := d.c.Exec(ctx, api.ExecRequest{SandboxID: bomb, Cmd: "sh", Args: []string{"-c", forkBomb}, TimeoutMs: setupTimeoutMs})
	if err != nil || !r.Success {
		t.Fatalf("fork bomb: %+v, %v", r, err)
	}
	// It is going once it holds a quarter of the slots the holder took
	// (a calm sandbox runs a handful of processes; a churning bomb's count
	// moves below its limit): the agent, which needs no process slot to
	// list /proc, counts them.
	var procs int
	bombing := func() bool {
		ls, err := d.c.FsLs(ctx, api.FsLsRequest{SandboxID: bomb, Path: "/proc"})
		if err != nil {
			t.Fatalf("listing /proc during the fork bomb: %v", err)
		}
		procs = 0
		for _, e := range ls.Entries {
			if _, err := strconv.Atoi(e.Name); err == nil {
				procs++
			}
		}
		return procs >= n/4
	}
	if !testutil.Poll(setupTimeoutMs*time.Millisecond, bombing) {
		t.Fatalf("the fork bomb did not get going: %d processes", procs)
	}
	before, err := d.c.Metrics(ctx, bomb)
	if err != nil {
		t.Fatal(err)
	}
	// While it churns, the agent keeps serving, the sandbox lives, and
	// its host tasks stay under its pids limit. (Whether an exec then
	// runs or is refused, and how long a process that got a slot takes
	// to run beside some 250 others on the sandbox's CPU, is the
	// scheduler's call: the answers above, with every slot held, are the
	// ones that do not depend on it.)
	for range 5 {
		if err := d.c.Call(ctx, api.FnFsStat, api.FsStatRequest{SandboxID: bomb, Path: "/tmp"}, nil); err != nil {
			t.Fatalf("file operation during the fork bomb: %v", err)
		}
	}
	m, err := d.c.Metrics(ctx, bomb)
	if err != nil {
		t.Fatalf("metrics during the fork bomb: %v", err)
	}
	t.Logf("during the bomb: %d processes, %d host tasks (limit %d), %d MiB, %.1f s of CPU", procs, m.Pids, m.PidsLimit, m.MemoryBytes>>20,
		m.CPUSeconds-before.CPUSeconds)
	if m.Pids > uint64(m.PidsLimit) {
		t.Errorf("host tasks %d over pids_limit %d", m.Pids, m.PidsLimit)
	}
	if !testutil.Poll(setupTimeoutMs*time.Millisecond, bombing) {
		t.Fatalf("the fork bomb died down by itself (%d processes): the checks above may not have run beside it", procs)
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
