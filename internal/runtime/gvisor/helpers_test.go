package gvisor

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// testAgentPkg is the stand-in agent the integration tests run as PID 1.
const testAgentPkg = "./internal/runtime/gvisor/testdata/testagent"

// newTestRuntime returns a Runtime over a fresh state directory. Its cleanup
// destroys whatever the test left and checks that nothing remains.
func newTestRuntime(t *testing.T) *Runtime {
	t.Helper()
	testutil.RequiresIntegration(t)
	return runtimeAt(t, t.TempDir())
}

// runtimeAt returns a Runtime over stateDir, cleaned up like newTestRuntime.
func runtimeAt(t *testing.T, stateDir string) *Runtime {
	t.Helper()
	r, err := newRuntime(runtime.Options{StateDir: stateDir, Settings: runscSettings(testutil.RunscPath())})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		ids, err := r.Reconcile(ctx, func(string) bool { return false })
		if err != nil {
			t.Errorf("cleanup Reconcile: %v", err)
		}
		for _, id := range ids {
			assertGone(t, r, id)
		}
		// With no sandbox left, not even runsc's shared mount remains.
		if mps, err := mountsUnder(stateDir); err != nil || len(mps) > 0 {
			t.Errorf("mounts left under the state directory: %v (%v)", mps, err)
		}
		if err := r.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return r
}

// runscSettings is a runtimes.gvisor block naming runsc at path.
func runscSettings(path string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"runsc_path": path})
	return b
}

// testRootfs builds a minimal image: busybox and the agent's mount point.
func testRootfs(t *testing.T, withMountPoint bool) string {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{"bin", "usr/bin", "etc", "tmp", "proc", "dev", "sys", ".hutch"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(testutil.RequiresBinary(t, "/bin/busybox"))
	if err != nil {
		t.Fatalf("busybox-static is needed for the test image: %v", err)
	}
	if err := os.WriteFile(filepath.Join(root, "bin/busybox"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"sh", "sleep", "cat", "ls", "echo"} {
		if err := os.Symlink("busybox", filepath.Join(root, "bin", a)); err != nil {
			t.Fatal(err)
		}
	}
	if withMountPoint {
		if err := os.WriteFile(filepath.Join(root, runtime.AgentPath), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// testSpec is a sandbox spec with the test agent and a fresh id.
func testSpec(t *testing.T, rootfs string) runtime.Spec {
	t.Helper()
	return runtime.Spec{
		ID:        uuid.NewString(),
		Image:     runtime.Artifact{Kind: runtime.ArtifactDir, Path: rootfs},
		AgentPath: testutil.BuildBinary(t, testAgentPkg),
		CPUs:      1,
		MemoryMB:  256,
		PidsLimit: 512,
		Hostname:  "hutch-test",
	}
}

// agent talks the test agent's line protocol over an instance's Conn.
type agent struct {
	t    *testing.T
	inst runtime.Instance
	rd   *bufio.Reader
}

// startAgent starts a sandbox, registers its Destroy as cleanup, and
// returns a client of its agent.
func startAgent(t *testing.T, r *Runtime, spec runtime.Spec) *agent {
	t.Helper()
	inst, err := r.Start(context.Background(), spec)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := inst.Destroy(context.Background()); err != nil {
			t.Errorf("Destroy: %v", err)
		}
		assertGone(t, r, spec.ID)
	})
	return &agent{t: t, inst: inst, rd: bufio.NewReader(inst.Conn())}
}

// ask sends one command and returns the answer line, or an error when the
// agent does not answer within timeout.
func (a *agent) ask(cmd string, timeout time.Duration) (string, error) {
	if _, err := fmt.Fprintln(a.inst.Conn(), cmd); err != nil {
		return "", fmt.Errorf("sending %q: %w", cmd, err)
	}
	type answer struct {
		line string
		err  error
	}
	ch := make(chan answer, 1)
	go func() {
		line, err := a.rd.ReadString('\n')
		ch <- answer{strings.TrimSuffix(line, "\n"), err}
	}()
	select {
	case ans := <-ch:
		return ans.line, ans.err
	case <-time.After(timeout):
		return "", fmt.Errorf("no answer to %q within %v", cmd, timeout)
	}
}

// must is ask that fails the test on error.
func (a *agent) must(cmd string) string {
	a.t.Helper()
	ans, err := a.ask(cmd, 10*time.Second)
	if err != nil {
		a.t.Fatal(err)
	}
	return ans
}

// assertGone checks that sandbox id left nothing of the runtime's on the
// host: no mount under its state directory, no bundle directory, no
// cgroup, no process naming it, no runsc state. (A network's namespace
// is the network service's, torn down after Destroy.)
func assertGone(t *testing.T, r *Runtime, id string) {
	t.Helper()
	mps, err := mountPoints("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, mp := range mps {
		if strings.Contains(mp, id) && strings.HasPrefix(mp, r.stateDir+"/") {
			t.Errorf("sandbox %s: mount %s left", id, mp)
		}
	}
	if _, err := os.Stat(r.sandboxDir(id)); !os.IsNotExist(err) {
		t.Errorf("sandbox %s: bundle directory left (%v)", id, err)
	}
	if dirs := r.cg.Dirs(cgroupRel(id)); len(dirs) > 0 {
		t.Errorf("sandbox %s: cgroups left: %v", id, dirs)
	}
	if pids := processesMentioning(id); len(pids) > 0 {
		t.Errorf("sandbox %s: processes left: %v", id, pids)
	}
	ids, err := r.runscList(context.Background())
	if err != nil {
		t.Errorf("runsc list: %v", err)
	}
	for _, known := range ids {
		if known == id {
			t.Errorf("sandbox %s: runsc still knows it", id)
		}
	}
}

// processesMentioning lists the processes whose command line contains s.
func processesMentioning(s string) []string {
	entries, _ := os.ReadDir("/proc")
	var found []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || e.Name() == "self" || e.Name() == "thread-self" {
			continue
		}
		if cmd := strings.ReplaceAll(string(b), "\x00", " "); strings.Contains(cmd, s) {
			found = append(found, e.Name()+": "+cmd)
		}
	}
	return found
}

// waitDone waits for inst to end.
func waitDone(t *testing.T, inst runtime.Instance, timeout time.Duration) {
	t.Helper()
	select {
	case <-inst.Done():
	case <-time.After(timeout):
		t.Fatalf("sandbox did not end within %v; stderr: %s", timeout, inst.StderrTail())
	}
}

// newLineReader reads the agent's answers from inst's Conn.
func newLineReader(inst runtime.Instance) *bufio.Reader { return bufio.NewReader(inst.Conn()) }

// killPid sends SIGKILL to pid.
func killPid(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}
