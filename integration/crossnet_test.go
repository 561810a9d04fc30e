package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hutch-dev/hutch/api"
	"github.com/hutch-dev/hutch/internal/testutil"
)

// TestSandboxNetworkAcrossRuntimes: one sandbox network joins a gVisor and
// a microVM sandbox (the daemon's one network service holds both, in one
// firewall table), which reach each other by name both ways; a sandbox
// that is not on the network reaches neither. Needs
// HUTCH_TEST_RUNTIMES=gvisor,microvm.
func TestSandboxNetworkAcrossRuntimes(t *testing.T) {
	d := startRuntimesDaemon(t, []string{"gvisor", "microvm"}, "")
	ctx := context.Background()
	if _, err := d.c.CreateNetwork(ctx, "mix"); err != nil {
		t.Fatal(err)
	}
	members := map[string]string{} // runtime -> sandbox id
	for _, rt := range []string{"gvisor", "microvm"} {
		id := d.create(api.CreateRequest{Image: "bb", Runtime: rt, Network: true, Name: "in-" + rt})
		if _, err := d.c.ConnectNetwork(ctx, "mix", id); err != nil {
			t.Fatalf("connecting the %s sandbox: %v", rt, err)
		}
		d.uploadNetprobe(id)
		if _, err := d.c.StartProcess(ctx, api.ProcessStartRequest{SandboxID: id, Argv: []string{netprobePath, "serve", "8000", "from-" + rt}}); err != nil {
			t.Fatal(err)
		}
		members[rt] = id
	}
	outsider := d.create(api.CreateRequest{Image: "bb", Network: true, Name: "outsider"})
	d.uploadNetprobe(outsider)

	dial := func(from, to string) (string, bool) {
		r := d.exec(from, netprobePath, "dial", to)
		return strings.TrimSpace(r.Stdout), r.Success
	}
	for _, c := range []struct{ from, to, want string }{
		{"gvisor", "in-microvm:8000", "from-microvm"},
		{"microvm", "in-gvisor.mix:8000", "from-gvisor"},
		{"microvm", members["gvisor"] + ":8000", "from-gvisor"},
	} {
		var got string
		if !testutil.Poll(90*time.Second, func() bool { got, _ = dial(members[c.from], c.to); return got == c.want }) {
			t.Errorf("from the %s sandbox, %s gave %q, want %q", c.from, c.to, got, c.want)
		}
	}
	for rt, id := range members {
		addr := strings.TrimSpace(d.netprobe(id, "addr"))
		if got, ok := dial(outsider, addr+":8000"); ok {
			t.Errorf("an outsider reached the %s sandbox at %s: %q", rt, addr, got)
		}
		if got, ok := dial(outsider, "in-"+rt+":8000"); ok {
			t.Errorf("an outsider reached the %s sandbox by name: %q", rt, got)
		}
	}
}
