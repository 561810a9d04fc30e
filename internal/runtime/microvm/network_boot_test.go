package microvm

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	agentv1 "github.com/hutch-dev/hutch/api/agent/v1"
	"github.com/hutch-dev/hutch/internal/agentclient"
	"github.com/hutch-dev/hutch/internal/netsvc"
	"github.com/hutch-dev/hutch/internal/runtime"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// testNetworkPool is the pool of this package's network service (it skips
// subnets the host already uses).
const testNetworkPool = "10.233.0.0/16"

// TestBootNetwork boots a VM on a network service's attachment, as the
// daemon does: it reaches a forwarded host port at its gateway, and once
// it is destroyed the service tears its network down without a trace.
func TestBootNetwork(t *testing.T) {
	testutil.RequiresRuntime(t, "microvm")
	ctx := context.Background()
	r, err := newRuntime(runtime.Options{StateDir: t.TempDir()}, slog.Default())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	art, err := r.Prepare(ctx, busyboxImage(t))
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	port := testutil.ServeHTTP(t, "127.0.0.1:0", "hello from the host\n")
	svc, err := netsvc.New(netsvc.Options{Dir: t.TempDir(), Pool: testNetworkPool})
	if err != nil {
		t.Fatal(err)
	}
	id := uuid.NewString()
	nw, err := svc.Attach(ctx, id, []uint16{port}, netsvc.Egress{}, false)
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	t.Cleanup(func() { _, _ = svc.Reconcile(context.Background(), func(string) bool { return false }) })
	spec := runtime.Spec{ID: id, Image: art, AgentPath: testutil.BuildBinary(t, "./cmd/hutch-agent"), CPUs: 1, MemoryMB: 256, Network: nw}
	inst, err := r.Start(ctx, spec)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = inst.Destroy(context.Background()) })
	c, err := agentclient.Dial(inst.Conn(), agentclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	readyCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := c.WaitReady(readyCtx); err != nil {
		t.Fatalf("WaitReady: %v\nconsole:\n%s", err, inst.StderrTail())
	}
	// busybox's static wget crashes (NSS); nc speaks HTTP/1.0.
	script := fmt.Sprintf(`printf 'GET / HTTP/1.0\r\n\r\n' | busybox nc -w 10 %s %d`, nw.Gateway, port)
	resp, err := c.Exec(ctx, &agentv1.ExecRequest{Argv: []string{"sh", "-c", script}, Env: []string{"PATH=/bin"}, TimeoutMs: 60000})
	if err != nil || !strings.Contains(string(resp.GetStdout()), "hello from the host") {
		t.Errorf("fetching the host's forwarded port at the gateway: %q, stderr %q, %v\nconsole:\n%s", resp.GetStdout(), resp.GetStderr(), err, inst.StderrTail())
	}
	if err := inst.Destroy(ctx); err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	if err := svc.Detach(ctx, id); err != nil {
		t.Fatalf("Detach: %v", err)
	}
	if ids, err := svc.Reconcile(ctx, func(string) bool { return false }); err != nil || len(ids) != 0 {
		t.Errorf("networks left after Destroy and Detach: %v, %v", ids, err)
	}
	if _, err := os.Stat(r.sandboxDir(spec.ID)); !os.IsNotExist(err) {
		t.Errorf("sandbox directory left: %v", err)
	}
}
